//! Command-line interface: every command, option and exit code, as `crane --help` shows them.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use crane_detect::rules::RuleCode;

pub use kernel::*;
pub use run::*;

mod kernel;
mod run;

pub const EXIT_CODES: &str = "\
Exit codes:
  0  success; for check: no crash predicted
  1  check: a crash is predicted (run: a predicted crash stopped the run)
  2  bad usage or bad input (unreadable notebook, unknown cell, bad connection file, ...)
  3  the kernel failed: it could not start, died, timed out, or an earlier cell raised
  4  a detector failed (LLM unreachable or answering unreadably after retries) and no other
     detector predicted a crash; the report of the others is still printed
  129 hung up (SIGHUP), 130 interrupted (Ctrl-C, SIGINT), 143 terminated (SIGTERM): what ran is
      still reported (and `run` writes its notebook); kernels crane started are shut down first";

#[derive(Debug, Parser)]
#[command(
    name = "crane",
    version,
    about = "Predicts, before a Jupyter notebook cell runs, whether it will crash, and explains why.",
    long_about = "Predicts, before a Jupyter notebook cell runs, whether it will crash, and explains why.\n\n\
crane runs the cells before the target in a real Jupyter kernel (or attaches to yours), reads a \
compact summary of the objects the target cell uses (shapes, dtypes, columns, NaNs, fitted state) \
without changing anything in the kernel, and judges the cell with deterministic rules, an LLM, or \
a dry run in a forked copy of the kernel.",
    after_help = EXIT_CODES,
    after_long_help = EXIT_CODES,
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,

    /// When to colour the output.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,

    /// Print only results: no progress, no notes.
    #[arg(long, short, global = true)]
    pub quiet: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Predict whether a notebook cell will crash, and explain why.
    #[command(
        after_help = "Examples:\n  crane check analysis.ipynb                 # the first cell that has not run yet\n  crane check analysis.ipynb --cell -1       # the last code cell\n  crane check notebooks/ --output-format github\n  crane check analysis.ipynb --cell 7 --format json\n  crane check analysis.ipynb --cell 7 --llm openai:gpt-5\n  crane check --existing kernel-1234.json --code \"df['price'].mean()\""
    )]
    Check(CheckArgs),
    /// Execute a notebook, checking each cell before it runs and stopping before a predicted crash.
    #[command(
        after_help = "Examples:\n  crane run analysis.ipynb -o analysis.checked.ipynb\n  crane run analysis.ipynb out.ipynb -p alpha 0.6 -p ratio 0.1   # as papermill IN OUT -p ...\n  crane run analysis.ipynb --on-predicted-crash warn\n  cat in.ipynb | crane run - - > out.ipynb"
    )]
    Run(RunArgs),
    /// Execute a notebook's cells in a fresh kernel and report the first error.
    #[command(
        after_help = "Examples:\n  crane exec analysis.ipynb\n  crane exec analysis.ipynb --order visual --timeout 60"
    )]
    Exec(ExecArgs),
    /// Show the runtime information (S/R/V facts) a check of a cell would use.
    #[command(
        after_help = "Examples:\n  crane inspect analysis.ipynb --cell 7\n  crane inspect analysis.ipynb --format text"
    )]
    Inspect(InspectArgs),
    /// Measure detectors on a benchmark dataset (JunoBench cases or runnable notebook pairs).
    #[command(
        after_help = "Examples:\n  crane bench ../junobench/cases --detector llm --llm replay:gpt_5 --config with_runtime\n  crane bench bench/notebooks --detector rules --out target/bench-report"
    )]
    Bench(BenchArgs),
    /// List the rules of the rules detector, or explain one (`crane rules PD001`).
    Rules(RulesArgs),
    /// Check an LLM configuration.
    #[command(subcommand)]
    Llm(LlmCommand),
    /// crane as a Jupyter kernel: every cell is checked before it runs (see docs/jupyter.md).
    #[command(subcommand)]
    Kernel(KernelCommand),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Text,
    Json,
}

/// `check --output-format`: for people, programs, and CI systems.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CheckFormat {
    Text,
    Json,
    /// SARIF 2.1.0 (code scanning).
    Sarif,
    /// GitHub Actions workflow commands (`::error file=...::...`), one per predicted crash.
    Github,
    /// JUnit XML, one test case per checked cell.
    Junit,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Order {
    /// Executed cells in ascending execution_count, as recorded; never-executed cells skipped.
    Recorded,
    /// All code cells top to bottom.
    Visual,
}

impl From<Order> for crane_notebook::ExecutionOrder {
    fn from(order: Order) -> Self {
        match order {
            Order::Recorded => Self::Recorded,
            Order::Visual => Self::Visual,
        }
    }
}

/// How crane finds a kernel to start.
#[derive(Debug, Clone, Args)]
pub struct KernelArgs {
    /// Python interpreter to start the kernel with (must have ipykernel). Default: --kernel,
    /// then the notebook's kernelspec, then the active environment ($VIRTUAL_ENV,
    /// $CONDA_PREFIX), then python3 on PATH ($CRANE_PYTHON overrides all defaults).
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,

    /// Kernelspec name to start (found in the standard Jupyter data directories); overrides
    /// the notebook's kernelspec.
    #[arg(long, short = 'k', value_name = "NAME", conflicts_with = "python")]
    pub kernel: Option<String>,

    /// Per-cell time limit in seconds; a cell running longer is interrupted and reported
    /// (papermill's `--execution-timeout` is the same option).
    #[arg(
        long,
        alias = "execution-timeout",
        value_name = "SECS",
        default_value_t = 600.0
    )]
    pub timeout: f64,
}

#[derive(Debug, Clone, Args)]
pub struct TargetArgs {
    /// Target cell: 0-based index among code cells, or counted from the end (-1 is the last).
    /// Default: the first cell with no execution count.
    #[arg(
        long,
        value_name = "N",
        conflicts_with = "cell_id",
        allow_negative_numbers = true
    )]
    pub cell: Option<i64>,

    /// Target cell by its nbformat cell id.
    #[arg(long, value_name = "ID")]
    pub cell_id: Option<String>,
}

impl TargetArgs {
    pub fn selector(&self) -> crane_notebook::TargetSelector {
        match (&self.cell, &self.cell_id) {
            (Some(index), _) if *index < 0 => crane_notebook::TargetSelector::FromEnd(
                usize::try_from(index.unsigned_abs()).unwrap_or(usize::MAX),
            ),
            (Some(index), _) => {
                crane_notebook::TargetSelector::Index(usize::try_from(*index).unwrap_or(usize::MAX))
            }
            (None, Some(id)) => crane_notebook::TargetSelector::Id(id.clone()),
            (None, None) => crane_notebook::TargetSelector::FirstUnexecuted,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DetectorChoice {
    /// Rules; plus the LLM (hybrid) when one is configured; plus a dry run as --dry-run says.
    Auto,
    /// Deterministic rules over the code and the runtime facts (offline, milliseconds).
    Rules,
    /// The LLM alone (CRANE-LLM).
    Llm,
    /// Rules and LLM combined: proven rule crashes stand, contradicted LLM claims are refuted.
    Hybrid,
    /// Run the cell in a forked copy of the kernel and report what really happens.
    DryRun,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RedactChoice {
    /// Example values and strings may be sent.
    None,
    /// String values are replaced by `<str>`.
    Strings,
    /// No data values at all: only structure and types (column names stay).
    Values,
}

#[derive(Debug, Clone, Args)]
pub struct DetectArgs {
    /// Which detector judges the cell.
    #[arg(long, value_enum, default_value_t = DetectorChoice::Auto)]
    pub detector: DetectorChoice,

    /// LLM to use, e.g. openai:gpt-5, gemini:gemini-2.5-flash, anthropic:MODEL,
    /// ollama:qwen2.5-coder:32b, openai-compat:MODEL@http://host:port/v1. Also from crane.toml.
    #[arg(long, value_name = "MODEL", env = "CRANE_LLM")]
    pub llm: Option<String>,

    /// Prompt configuration: with_runtime (default), code_only, with_api_docs, or ablations
    /// removing runtime sections such as -S, -R, -V, -S-R.
    #[arg(long, value_name = "CONFIG", allow_hyphen_values = true)]
    pub config: Option<String>,

    /// Ask the LLM N times and take the majority verdict (ties count as no crash).
    #[arg(long, value_name = "N")]
    pub runs: Option<u32>,

    /// Do not read or write the LLM answer cache.
    #[arg(long)]
    pub no_cache: bool,

    /// What data values may appear in a prompt sent to an LLM.
    #[arg(long, value_enum)]
    pub redact: Option<RedactChoice>,

    /// Print the exact prompt that would be sent to the LLM, and send nothing.
    #[arg(long)]
    pub show_prompt: bool,

    #[command(flatten)]
    pub dry: DryRunArgs,
}

/// The dry-run options `check` and `run` share.
#[derive(Debug, Clone, Copy, Args)]
pub struct DryRunArgs {
    /// With --detector auto: also run cells in a forked copy of the kernel (or a replica of it)
    /// before they run. auto (the default): when no rule proved a crash and the fork can be
    /// sealed, for one target cell always, when every cell runs only for cells that look long
    /// (loops, fit with epochs, searches); on: every cell judged (a bare --dry-run is on);
    /// off: none.
    #[arg(
        long,
        value_enum,
        value_name = "WHEN",
        num_args = 0..=1,
        default_value_t = DryRunWhen::DEFAULT,
        default_missing_value = "on",
        hide_possible_values = true
    )]
    pub dry_run: DryRunWhen,

    /// Let a dry run execute cells that write files or use the network (unsealed: the effects
    /// are real). Needs --dry-run on (or check's --detector dry-run).
    #[arg(long)]
    pub allow_side_effects: bool,
}

/// When `check` and `run` dry-run a cell (docs/cli.md, "Dry runs: auto, on, off").
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DryRunWhen {
    /// Where a dry run is worth its cost and its fork can be sealed.
    Auto,
    /// Every cell judged (sealed where the platform allows, else behind the side-effect checks).
    On,
    /// No dry run.
    Off,
}

impl DryRunWhen {
    /// What `check` and `run` do without `--dry-run`.
    pub const DEFAULT: DryRunWhen = DryRunWhen::Auto;
}

/// Arguments as the user wrote them, except that a bare `--dry-run` of `check` or `run`
/// followed by something other than auto/on/off (a notebook) becomes `--dry-run=on`: before
/// the option took a value, `crane check --dry-run NOTEBOOK` meant that.
pub fn with_bare_dry_run(
    args: impl IntoIterator<Item = std::ffi::OsString>,
) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = args.into_iter().collect();
    let command = args
        .iter()
        .skip(1)
        .scan(false, |value_next, arg| {
            let this_is_value = std::mem::take(value_next);
            *value_next = arg == "--color";
            Some((this_is_value, arg))
        })
        .find(|(is_value, arg)| !is_value && !arg.to_string_lossy().starts_with('-'))
        .map(|(_, arg)| arg.to_string_lossy().into_owned());
    if !matches!(command.as_deref(), Some("check" | "run")) {
        return args;
    }
    let values = ["auto", "on", "off"];
    for index in 0..args.len() {
        if args[index] == "--" {
            break;
        }
        let bare = args[index] == "--dry-run"
            && args
                .get(index + 1)
                .is_some_and(|next| !values.iter().any(|value| next == value));
        if bare {
            args[index] = "--dry-run=on".into();
        }
    }
    args
}

/// Which rule findings are silenced (docs/rules.md, "Silencing a finding").
#[derive(Debug, Clone, Args)]
pub struct SuppressArgs {
    /// Silence these rules: codes or names, comma-separated, repeatable (`--ignore PD001,NB004`);
    /// added to the `ignore` of the configuration file.
    #[arg(long, value_name = "CODES", value_delimiter = ',', value_parser = crate::config::parse_rule)]
    pub ignore: Vec<RuleCode>,

    /// The configuration file (a crane.toml, or a pyproject.toml's [tool.crane]) instead of the
    /// closest one found from the notebook's folder up. (`--config` is the prompt configuration.)
    #[arg(long, value_name = "PATH", conflicts_with = "isolated")]
    pub config_file: Option<PathBuf>,

    /// Read no configuration file (crane.toml, pyproject.toml).
    #[arg(long)]
    pub isolated: bool,
}

/// The cell to judge and the kernel state to judge it against (`check` and `inspect`).
#[derive(Debug, Clone, Args)]
pub struct CellSourceArgs {
    /// The notebook, filled in by the command from its positional arguments.
    #[arg(skip)]
    pub notebook: Option<PathBuf>,

    #[command(flatten)]
    pub target: TargetArgs,

    /// Judge this code instead of a notebook cell (`-` reads it from standard input).
    #[arg(long, value_name = "CODE", requires = "existing")]
    pub code: Option<String>,

    /// Attach to a running kernel (connection file path or its kernel-*.json name) instead of
    /// starting one; nothing of the notebook is executed and the kernel is left as it was.
    #[arg(long, value_name = "FILE")]
    pub existing: Option<String>,

    /// Order in which earlier cells are executed. Default: recorded when the notebook records
    /// execution counts, else visual (a cleared notebook).
    #[arg(long, value_enum)]
    pub order: Option<Order>,

    #[command(flatten)]
    pub kernel: KernelArgs,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Notebooks (.ipynb) or folders of them; each notebook's target cell is checked in a
    /// kernel of its own. Optional with --existing and --code.
    #[arg(value_name = "NOTEBOOK", required_unless_present = "code")]
    pub notebooks: Vec<PathBuf>,

    #[command(flatten)]
    pub source: CellSourceArgs,

    /// Check every code cell that has no execution count, in order, each against the state the
    /// cells before it leave (they run as they are checked), stopping at a notebook's first
    /// predicted crash. For CI over cleared notebooks, where every cell is unexecuted.
    #[arg(long, conflicts_with_all = ["cell", "cell_id", "existing", "code", "show_prompt"])]
    pub every_unexecuted: bool,

    #[command(flatten)]
    pub detect: DetectArgs,

    #[command(flatten)]
    pub suppress: SuppressArgs,

    /// Also show where the rules' interpreter gave up on the cell (what kept them silent).
    #[arg(long)]
    pub explain_silence: bool,

    /// Output format.
    #[arg(long = "output-format", visible_alias = "format", value_enum, default_value_t = CheckFormat::Text)]
    pub format: CheckFormat,
}
#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The notebook (.ipynb).
    #[arg(value_name = "NOTEBOOK")]
    pub notebook: PathBuf,

    /// Order in which cells are executed (recorded: the executed cells as recorded, then the
    /// never-executed ones top to bottom). Default: recorded when the notebook records
    /// execution counts, else visual.
    #[arg(long, value_enum)]
    pub order: Option<Order>,

    #[command(flatten)]
    pub kernel: KernelArgs,
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The notebook (.ipynb). Optional with --existing and --code.
    #[arg(value_name = "NOTEBOOK", required_unless_present = "code")]
    pub notebook: Option<PathBuf>,

    #[command(flatten)]
    pub source: CellSourceArgs,

    /// Output format (text is the compact rendering an LLM prompt would contain).
    #[arg(long, value_enum, default_value_t = OutputFormat::Json)]
    pub format: OutputFormat,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// A directory of JunoBench case files, or of runnable notebook pairs with manifest.json.
    /// `crane bench merge PART.json...` joins the results of sharded runs.
    #[arg(value_name = "DATASET")]
    pub dataset: PathBuf,

    /// Extra inputs: the shard result files when DATASET is `merge`.
    #[arg(value_name = "PART", hide = true)]
    pub parts: Vec<PathBuf>,

    /// Detector to measure.
    #[arg(long, value_enum, default_value_t = BenchDetector::Rules)]
    pub detector: BenchDetector,

    /// LLM for llm/hybrid (replay:gpt_5, replay:gemini_2_5_flash, replay:Qwen_2_5_32B_Instruct
    /// answer from the recorded outputs; any live model string works too).
    #[arg(long, value_name = "MODEL")]
    pub llm: Option<String>,

    /// Configurations, comma-separated, measured side by side: code_only, with_runtime, -S, -R,
    /// -V (and combinations), with_api_docs.
    #[arg(long, value_name = "CONFIG", allow_hyphen_values = true)]
    pub config: Option<String>,

    /// LLM answers per case, majority vote.
    #[arg(long, value_name = "N")]
    pub runs: Option<u32>,

    /// With a live --llm on JunoBench cases: send each case's recorded CRANE-LLM prompt text
    /// byte for byte, to compare with the paper like for like (replay always does).
    #[arg(long)]
    pub paper_prompt: bool,

    /// Judge diagnoses with this LLM using the paper's rubric (default: exception-class check).
    #[arg(long, value_name = "MODEL")]
    pub judge: Option<String>,

    /// Cases judged in parallel.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub jobs: usize,

    /// Run only shard I of N (e.g. 2/4); join the parts with `crane bench merge`.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,

    /// Write the Markdown report, JSON and charts here (also the per-case resume cache).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Silence these rules in every case: codes or names, comma-separated, repeatable (what
    /// the detector would find without them).
    #[arg(long, value_name = "CODES", value_delimiter = ',', value_parser = crate::config::parse_rule)]
    pub ignore: Vec<RuleCode>,

    /// Also count, over the crashes the rules were silent on, where their interpreter gave up,
    /// per library (a table in the report and `silence` in its JSON).
    #[arg(long)]
    pub explain_silence: bool,

    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,

    #[command(flatten)]
    pub kernel: KernelArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BenchDetector {
    Rules,
    Llm,
    Hybrid,
    DryRun,
}

#[derive(Debug, Args)]
pub struct RulesArgs {
    /// A rule code (e.g. PD001): show that rule's explanation and example.
    #[arg(value_name = "CODE")]
    pub code: Option<String>,

    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,
}

#[derive(Debug, Subcommand)]
pub enum LlmCommand {
    /// Send one tiny request to the configured model and explain any failure.
    Test {
        /// The model string (default: from --llm env CRANE_LLM or crane.toml).
        #[arg(long, value_name = "MODEL", env = "CRANE_LLM")]
        llm: Option<String>,
    },
}
