//! The arguments of `crane kernel`: the checking Jupyter kernel, its install and its uninstall.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

use super::*;

#[derive(Debug, Subcommand)]
pub enum KernelCommand {
    /// Serve a Jupyter frontend as a kernel: relay to a real ipykernel, checking each cell first.
    /// Frontends start this through the kernelspec `crane kernel install` writes.
    Serve(ServeArgs),
    /// Write the kernelspec that makes "Python 3 (crane)" selectable in Jupyter.
    #[command(
        after_help = "Examples:\n  crane kernel install --sys-prefix          # into the active environment\n  crane kernel install --user --python ~/venvs/ml/bin/python"
    )]
    Install(InstallArgs),
    /// List the kernelspecs Jupyter would find, marking crane's.
    List,
    /// Remove a crane kernelspec.
    Uninstall(UninstallArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PolicyChoice {
    /// Hold cells that certainly crash (rule proofs, dry-run crashes); warn about LLM claims.
    Stop,
    /// Show every prediction and run the cell.
    Warn,
    /// Do not check cells.
    Off,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DryRunChoice {
    /// Dry-run a cell the rules are silent about when a fork of the kernel is safe; a cell
    /// the kernel can undo (it gets a snapshot) only when it looks long (loops, fit with
    /// epochs, searches), and then beside its real run, abridged, from its snapshot.
    Auto,
    /// Dry-run every cell the rules are silent about, and say in the cell's output when a
    /// dry run was refused.
    On,
    Off,
}

/// How the proxy checks cells (also the defaults a kernelspec passes).
#[derive(Debug, Clone, Args)]
pub struct ProxyArgs {
    /// What happens to a cell predicted to crash (change it in the notebook: %crane policy).
    #[arg(long, value_enum, default_value_t = PolicyChoice::Stop)]
    pub policy: PolicyChoice,

    /// Run cells in a fork of the kernel first (change it in the notebook: %crane dry-run).
    #[arg(long, value_enum, default_value_t = DryRunChoice::Auto)]
    pub dry_run: DryRunChoice,

    /// Seconds a dry run may run the cell in the fork before the cell runs for real.
    #[arg(long, value_name = "SECS", default_value_t = 2.0)]
    pub dry_run_budget: f64,

    /// Seconds a whole check may take; a longer one is abandoned and the cell runs.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    pub check_timeout: f64,

    /// Also ask this LLM (its claims alone only warn), e.g. openai:gpt-5.
    #[arg(long, value_name = "MODEL")]
    pub llm: Option<String>,

    /// Silence these rules (codes or names, comma-separated; change it in the notebook:
    /// %crane ignore), besides the `ignore` of the configuration file found from the kernel's
    /// folder up.
    #[arg(long, value_name = "CODES", value_delimiter = ',', value_parser = crate::config::parse_rule)]
    pub ignore: Vec<RuleCode>,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The connection file the frontend wrote.
    #[arg(short = 'f', long = "connection-file", value_name = "CONNECTION_FILE")]
    pub connection_file: PathBuf,

    /// Python interpreter of the real kernel (must have ipykernel). Default: as for `crane run`.
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,

    /// Log where each cell's time went (queue, analysis, probe, detectors, the kernel) to stderr.
    #[arg(long)]
    pub timings: bool,

    /// A private (0600) file holding the `user:password` of the --llm endpoint URL, as
    /// `crane kernel install` writes it: credentials never travel in a command line.
    #[arg(long, value_name = "FILE", requires = "llm")]
    pub llm_credentials: Option<PathBuf>,

    #[command(flatten)]
    pub proxy: ProxyArgs,
}

#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("place").args(["user", "sys_prefix", "prefix"]))]
pub struct InstallArgs {
    /// Install for this user (the default): ~/.local/share/jupyter/kernels.
    #[arg(long)]
    pub user: bool,

    /// Install into the Python environment of the kernel's interpreter (<sys.prefix>/share/jupyter).
    #[arg(long)]
    pub sys_prefix: bool,

    /// Install under DIR/share/jupyter/kernels.
    #[arg(long, value_name = "DIR")]
    pub prefix: Option<PathBuf>,

    /// Kernelspec name.
    #[arg(long, value_name = "NAME", default_value = "crane-python3")]
    pub name: String,

    /// The name frontends show.
    #[arg(long, value_name = "TEXT", default_value = "Python 3 (crane)")]
    pub display_name: String,

    /// Interpreter of the real kernel. Default: the active environment's ($VIRTUAL_ENV,
    /// $CONDA_PREFIX), else python3 on PATH.
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,

    /// Write --timings into the kernelspec: the kernel logs where each cell's time went.
    #[arg(long)]
    pub timings: bool,

    #[command(flatten)]
    pub proxy: ProxyArgs,
}

#[derive(Debug, Args)]
pub struct UninstallArgs {
    /// Kernelspec name.
    #[arg(value_name = "NAME")]
    pub name: String,

    /// Also look under DIR/share/jupyter/kernels.
    #[arg(long, value_name = "DIR")]
    pub prefix: Option<PathBuf>,
}
