//! The steps `check`, `inspect` and `run` share: bring a kernel to the state before the target
//! (fresh or attached), read the target's runtime facts, and judge it with the detectors.

use std::io::Read;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};
use crane_analysis::{AnalysisError, CellAnalysis, SyntaxError};
use crane_detect::suppress::{Ignored, Silenced};
use crane_detect::{combine, DetectorKind, ExecutedCells, Finding, FindingStatus, Verdict};
use crane_kernel::KernelSession;
use crane_llm::{Client, LlmConfig, LlmSettings, PromptConfig, PromptInput, Redact};
use crane_notebook::{CodeCell, ExecutionOrder, Notebook};
use crane_runtime::RuntimeInfo;
use serde::Serialize;

use crate::cli::{CellSourceArgs, DetectArgs, DetectorChoice, DryRunWhen, RedactChoice};
use crate::commands::kernel;
use crate::exit::Failure;
use crate::signals::Stop;
use crate::ui::Ui;

/// The cell being judged.
#[derive(Debug, Clone, Serialize)]
pub struct Target {
    /// 0-based index among code cells; `None` for code given with `--code`.
    pub index: Option<usize>,
    pub id: Option<String>,
    pub source: String,
    /// 0-based place among all the notebook's cells, and the recorded execution count (for the
    /// label only).
    #[serde(skip)]
    pub position: Option<usize>,
    #[serde(skip)]
    pub execution_count: Option<u64>,
    /// The file line on which the cell's source starts, when known (for CI annotations).
    #[serde(skip)]
    pub source_line: Option<usize>,
}

impl Target {
    pub fn from_cell(cell: &CodeCell) -> Self {
        Self {
            index: Some(cell.index),
            id: cell.id.clone(),
            source: cell.source.clone(),
            position: Some(cell.position),
            execution_count: cell.execution_count,
            source_line: cell.source_line,
        }
    }

    pub fn label(&self) -> String {
        match self.index {
            Some(index) => crane_notebook::cell_label(
                index,
                self.position,
                self.execution_count,
                self.id.as_deref(),
            ),
            None => "the given code".into(),
        }
    }
}

/// A kernel in the state just before the target cell.
pub struct Prepared {
    pub session: KernelSession,
    pub notebook: Option<PathBuf>,
    pub target: Target,
    /// Sources of the cells that ran before the target, in order (for bindings and prompts).
    pub prior_cells: Vec<String>,
    /// Their 0-based code-cell indices, in the same order.
    pub prior_indices: Vec<usize>,
    pub execute_prior: Duration,
}

/// Reads the notebook and target, then starts a kernel and replays the cells before the
/// target (fresh mode) or attaches to the user's kernel and executes nothing (attached mode).
/// A stop signal ends it through the session's normal close path.
pub async fn prepare(
    source: &CellSourceArgs,
    ui: &Ui,
    stop: &mut Stop,
) -> Result<Prepared, Failure> {
    let timeout = kernel::timeout(&source.kernel)?;
    let notebook = source
        .notebook
        .as_deref()
        .map(Notebook::read)
        .transpose()
        .map_err(Failure::bad_input)?;
    let code = source.code.as_deref().map(read_code).transpose()?;

    let (target, prior): (Target, Vec<&CodeCell>) = match (&code, &notebook) {
        (Some(code), _) => (
            Target {
                index: None,
                id: None,
                position: None,
                execution_count: None,
                source: code.clone(),
                source_line: None,
            },
            notebook
                .as_ref()
                .map(|nb| {
                    nb.code_cells()
                        .iter()
                        .filter(|c| c.execution_count.is_some())
                        .collect()
                })
                .unwrap_or_default(),
        ),
        (None, Some(nb)) => {
            let selector = source.target.selector();
            kernel::warn_duplicate_ids(nb, &selector, ui);
            let cell = nb.target(&selector).map_err(Failure::bad_input)?;
            let order = kernel::order(source.order, nb);
            if source.order.is_none()
                && order == ExecutionOrder::Visual
                && source.existing.is_none()
            {
                ui.note("no code cell records an execution count (a cleared notebook): the cells above the target run top to bottom, as with --order visual");
            }
            (Target::from_cell(cell), nb.cells_before(cell, order))
        }
        (None, None) => return Err(Failure::bad_input(anyhow!("give a NOTEBOOK or --code"))),
    };
    let prior_cells: Vec<String> = prior.iter().map(|cell| cell.source.clone()).collect();
    let prior_indices: Vec<usize> = prior.iter().map(|cell| cell.index).collect();

    if let Some(existing) = source.existing.as_deref() {
        let session = kernel::attach(existing).await?;
        ui.note(&format!(
            "attached to {}; nothing of the notebook is executed and the kernel is left as it is",
            session.connection_file().display()
        ));
        return Ok(Prepared {
            session,
            notebook: source.notebook.clone(),
            target,
            prior_cells,
            prior_indices,
            execute_prior: Duration::ZERO,
        });
    }

    let Some(notebook_path) = source.notebook.as_deref() else {
        return Err(Failure::bad_input(anyhow!("--code needs --existing")));
    };
    let working_dir = kernel::notebook_dir(notebook_path);
    let (session, executed) = kernel::start_and_execute(
        &source.kernel,
        notebook.as_ref(),
        &working_dir,
        &prior,
        timeout,
        ui,
        stop,
    )
    .await?;
    match executed {
        Ok(execute_prior) => Ok(Prepared {
            session,
            notebook: Some(notebook_path.to_path_buf()),
            target,
            prior_cells,
            prior_indices,
            execute_prior,
        }),
        Err(failure) => {
            let _ = session.close().await;
            let failure = failure.into_failure();
            Err(Failure::kernel(anyhow!(
                "{:#}; the cells before {} must run cleanly, so nothing was checked",
                failure.error,
                target.label()
            )))
        }
    }
}

fn read_code(code: &str) -> Result<String, Failure> {
    if code != "-" {
        return Ok(code.to_owned());
    }
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .context("cannot read the code from standard input")
        .map_err(Failure::bad_input)?;
    Ok(text)
}

/// The target's analysis and runtime facts.
pub struct Gathered {
    pub analysis: Result<CellAnalysis, AnalysisError>,
    pub runtime: RuntimeInfo,
    /// Docstrings of the library callables the cell calls (for `with_api_docs` prompts).
    pub api_docs: Option<Vec<crane_llm::ApiDoc>>,
    pub extract: Duration,
    /// Of `extract`, the probe's round trip to the kernel; `None` when no probe was sent.
    pub probe: Option<Duration>,
}

/// Analyzes the target and reads the facts of what it reads from the kernel, invisibly;
/// `prefetched` facts, when the caller already has them for this kernel state, save the call.
/// The facts say where the `prior` cells (at `prior_indices` in the notebook) bound each name.
pub async fn gather(
    session: &mut KernelSession,
    target: &Target,
    prior: &ExecutedCells,
    prior_indices: &[usize],
    want_api_docs: bool,
    prefetched: Option<RuntimeInfo>,
) -> Result<Gathered, Failure> {
    let started = Instant::now();
    let analysis = crane_analysis::analyze_cell(&target.source);
    let mut gathered = gather_analysed(
        session,
        analysis,
        prior,
        prior_indices,
        want_api_docs,
        prefetched,
    )
    .await?;
    gathered.extract = started.elapsed();
    Ok(gathered)
}

/// [`gather`] for a target the caller has analysed; `extract` leaves that analysis out.
pub async fn gather_analysed(
    session: &mut KernelSession,
    analysis: Result<CellAnalysis, AnalysisError>,
    prior: &ExecutedCells,
    prior_indices: &[usize],
    want_api_docs: bool,
    prefetched: Option<RuntimeInfo>,
) -> Result<Gathered, Failure> {
    let started = Instant::now();
    let bindings = prior.bindings();
    let mut probe = None;
    let mut runtime = match (&analysis, prefetched) {
        (Ok(_), Some(runtime)) => runtime,
        (Ok(analysis), None) => {
            let expressions = crane_analysis::targets_for_probe(analysis);
            if expressions.is_empty() {
                RuntimeInfo::default()
            } else {
                let sent = Instant::now();
                let runtime =
                    crane_probe::summarize(session, &expressions, &crane_probe::Budget::default())
                        .await
                        .map_err(Failure::probe)?;
                probe = Some(sent.elapsed());
                runtime
            }
        }
        (Err(_), _) => RuntimeInfo::default(),
    };
    for (expression, variable) in runtime.variables.iter_mut() {
        let name = expression
            .split(['.', '['])
            .next()
            .unwrap_or(expression.as_str());
        if let Some(crane_analysis::NameState::Bound { at, .. }) = bindings.names.get(name) {
            variable.origin = Some(crane_runtime::Origin {
                cell: prior_indices.get(at.cell).copied().unwrap_or(at.cell) as u32,
                line: at.line,
            });
        }
    }
    let api_docs = match (&analysis, want_api_docs) {
        (Ok(analysis), true) => {
            let mut callees: Vec<String> = analysis
                .calls
                .iter()
                .map(|call| call.callee.clone())
                .collect();
            callees.dedup();
            let docs =
                crane_probe::api_docs(session, &callees, crane_llm::DEFAULT_API_DOCS_BUDGET * 4)
                    .await
                    .map_err(Failure::probe)?;
            Some(
                docs.into_iter()
                    .map(|doc| crane_llm::ApiDoc {
                        name: match doc.signature {
                            Some(signature) => format!("{}{signature}", doc.name),
                            None => doc.name,
                        },
                        doc: doc.doc,
                    })
                    .collect(),
            )
        }
        _ => None,
    };
    Ok(Gathered {
        analysis,
        runtime,
        api_docs,
        extract: started.elapsed(),
        probe,
    })
}

/// How an LLM was used for a check.
#[derive(Debug, Clone, Serialize)]
pub struct LlmUse {
    pub model: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub tokens_estimated: bool,
    pub latency_ms: u64,
    pub cost_usd: Option<f64>,
    pub cached: bool,
}

pub struct Detection {
    pub findings: Vec<Finding>,
    /// Rule findings silenced by the cell's comments, `--ignore` or the configuration: they
    /// do not count towards the verdict.
    pub silenced: Vec<Silenced>,
    /// Problems with the cell's `# crane:` comments, naming the cell and line.
    pub directive_warnings: Vec<String>,
    /// Where the rules' interpreter gave up on the cell, by reason (empty when the rules did
    /// not run).
    pub gave_up: std::collections::BTreeMap<&'static str, usize>,
    pub verdict: Verdict,
    pub llm: Option<LlmUse>,
    /// Problems that did not stop the check (e.g. an LLM answer that could not be cached).
    pub warnings: Vec<String>,
    /// Detectors that failed; the verdict comes from the others.
    pub failures: Vec<DetectorFailure>,
    pub detect: Duration,
}

/// A detector that could not judge the cell (an LLM unreachable or answering unreadably after
/// retries, a dry run the kernel could not complete).
#[derive(Debug, Clone, Serialize)]
pub struct DetectorFailure {
    pub detector: DetectorKind,
    pub error: String,
}

/// What `--show-prompt` stops at.
pub enum Judged {
    Detection(Box<Detection>),
    PromptShown(String),
}

/// Resolves the LLM configuration from flags, environment and the configuration file's
/// `[llm]`; `None` when no model is configured anywhere.
pub fn llm_config(
    args: &DetectArgs,
    file: &crate::config::ConfigFile,
) -> Result<Option<LlmConfig>, Failure> {
    let flags = LlmSettings {
        model: args.llm.clone(),
        runs: args.runs,
        cache: args.no_cache.then_some(false),
        ..LlmSettings::default()
    };
    let from_file = crate::config::llm_settings(file)?;
    match LlmConfig::resolve(flags, |name| std::env::var(name).ok(), from_file) {
        Ok(config) => Ok(Some(config)),
        Err(crane_llm::ConfigError::NoModel) => Ok(None),
        Err(err) => Err(Failure::bad_input(err)),
    }
}

fn redact(choice: RedactChoice) -> Redact {
    match choice {
        RedactChoice::None => Redact::None,
        RedactChoice::Strings => Redact::Strings,
        RedactChoice::Values => Redact::Values,
    }
}

/// The `--config` prompt configuration (default: crane.toml's, else with_runtime).
pub fn prompt_config(args: &DetectArgs) -> Result<PromptConfig, Failure> {
    match &args.config {
        Some(text) => text.parse::<PromptConfig>().map_err(Failure::bad_input),
        None => Ok(PromptConfig::default()),
    }
}

/// Checks, before any kernel starts or cell runs, that the detectors asked for can answer (and
/// that the dry-run options agree): a model for `--detector llm|hybrid`, a readable `--config`, an LLM client that can be built
/// (provider known, key present, endpoint given), and a model that answers live prompts
/// (recorded replay answers exist only for `crane bench` on JunoBench cases).
pub fn check_setup(args: &DetectArgs, llm: Option<&LlmConfig>) -> Result<(), Failure> {
    check_dry_run_options(args)?;
    let asks_llm = match args.detector {
        DetectorChoice::Llm | DetectorChoice::Hybrid => true,
        DetectorChoice::Auto => llm.is_some(),
        DetectorChoice::Rules | DetectorChoice::DryRun => false,
    };
    if args.config.is_some() {
        prompt_config(args)?;
    }
    if !asks_llm {
        return Ok(());
    }
    let Some(config) = llm else {
        return Err(Failure::bad_input(anyhow!(
            "--detector {} needs a model: pass --llm MODEL (e.g. openai:gpt-5), set CRANE_LLM, or add [llm] model to crane.toml",
            if args.detector == DetectorChoice::Llm { "llm" } else { "hybrid" }
        )));
    };
    if matches!(config.model, crane_llm::ModelSpec::Replay(_)) {
        return Err(Failure::bad_input(anyhow!(
            "{} answers only the recorded JunoBench cases (`crane bench`); give a live model with --llm",
            config.model
        )));
    }
    Client::new(config.clone())
        .map(drop)
        .map_err(Failure::bad_input)
}

/// Whether the check needs API docstrings from the kernel: an LLM will be asked with the
/// `with_api_docs` configuration.
pub fn wants_api_docs(args: &DetectArgs, llm: Option<&LlmConfig>) -> Result<bool, Failure> {
    let asks_llm = match args.detector {
        DetectorChoice::Llm | DetectorChoice::Hybrid => true,
        DetectorChoice::Auto => llm.is_some(),
        DetectorChoice::Rules | DetectorChoice::DryRun => false,
    };
    let configured = match (&args.config, llm) {
        (None, Some(config)) => config.prompt.config,
        _ => prompt_config(args)?,
    };
    Ok(asks_llm && matches!(configured, PromptConfig::WithApiDocs(_)))
}

/// Which cells `--dry-run auto` dry-runs, by the cost model of the command (docs/cli.md, "Dry
/// runs: auto, on, off"); never a cell whose crash a rule proved, nor an unsealed fork.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AutoDryRun {
    /// `check` of one target: its dry run costs at most the budget (and an abridged run), once.
    Target,
    /// A walk that executes every cell (`run`, `check --every-unexecuted`), where a dry run of
    /// every cell doubles the walk: only a cell that looks long
    /// ([`crane_probe::abridge::looks_long`], as the caller read it).
    IfLong(bool),
}

/// The note saying that no LLM judges the cells, and what does: `walk` for a command that
/// executes every cell (`run`, `check --every-unexecuted`).
pub fn no_llm_note(args: &DetectArgs, walk: bool) -> String {
    let detectors = match args.dry.dry_run {
        DryRunWhen::Off => "rules only",
        DryRunWhen::On if walk => "rules, and a dry run of every cell",
        DryRunWhen::On => "rules and a dry run",
        DryRunWhen::Auto if walk => "rules, and dry runs of the cells that look long",
        DryRunWhen::Auto => "rules and a dry run",
    };
    format!("LLM detector off ({detectors}); add one with --llm MODEL, CRANE_LLM or crane.toml")
}

/// Whether `args` dry-run a cell by name (`--dry-run on`, `--detector dry-run`), as opposed
/// to `--dry-run auto`'s choice.
pub fn dry_run_asked(args: &DetectArgs) -> bool {
    args.detector == DetectorChoice::DryRun
        || (args.detector == DetectorChoice::Auto && args.dry.dry_run == DryRunWhen::On)
}

/// `--allow-side-effects` runs dry runs unsealed: only dry runs asked for by name may be.
pub fn check_dry_run_options(args: &DetectArgs) -> Result<(), Failure> {
    if args.dry.allow_side_effects && !dry_run_asked(args) {
        return Err(Failure::bad_input(anyhow!(
            "--allow-side-effects lets a dry run's effects out of its fork, and only a dry run asked for by name may do that: add --dry-run on"
        )));
    }
    Ok(())
}

/// Runs the chosen detectors and combines their findings; rule findings that `ignored` or the
/// cell's `# crane:` comments silence are set apart before the verdict. `auto` says which
/// cells `--dry-run auto` dry-runs.
#[allow(clippy::too_many_arguments)]
pub async fn judge(
    session: &mut KernelSession,
    args: &DetectArgs,
    llm: Option<&LlmConfig>,
    target: &Target,
    prior: &ExecutedCells,
    gathered: &Gathered,
    ignored: &Ignored,
    auto: AutoDryRun,
    replica: Option<&mut crane_probe::replica::Replica>,
) -> Result<Judged, Failure> {
    let started = Instant::now();
    let use_rules = matches!(
        args.detector,
        DetectorChoice::Auto | DetectorChoice::Rules | DetectorChoice::Hybrid
    );
    let use_llm = match args.detector {
        DetectorChoice::Llm | DetectorChoice::Hybrid => {
            if llm.is_none() {
                return Err(Failure::bad_input(anyhow!(
                    "--detector {} needs a model: pass --llm MODEL (e.g. openai:gpt-5), set CRANE_LLM, or add [llm] model to crane.toml",
                    if args.detector == DetectorChoice::Llm { "llm" } else { "hybrid" }
                )));
            }
            true
        }
        DetectorChoice::Auto => llm.is_some(),
        DetectorChoice::Rules | DetectorChoice::DryRun => false,
    };

    let mut findings = Vec::new();
    let mut warnings = Vec::new();
    let mut failures = Vec::new();
    match &gathered.analysis {
        Err(AnalysisError::Syntax(error)) => findings.push(syntax_error_finding(error)),
        Err(AnalysisError::Unanalysable(reason)) => {
            warnings.push(format!("{reason}: the rules did not judge it"))
        }
        Ok(_) => {}
    }
    let context = crane_detect::CheckContext {
        target_source: &target.source,
        analysis: gathered.analysis.as_ref(),
        runtime: &gathered.runtime,
        executed_cells: prior,
    };
    let mut silenced = Vec::new();
    let mut directive_warnings = Vec::new();
    let mut gave_up = std::collections::BTreeMap::new();
    if use_rules {
        let interpretation =
            crane_analysis::bounds::with_deep_stack(|| crane_detect::rules::interpret(&context));
        gave_up = interpretation.gave_up;
        let suppressed =
            crane_detect::suppress::suppress(interpretation.findings, &target.source, ignored);
        findings.extend(suppressed.kept);
        silenced = suppressed.silenced;
        directive_warnings = suppressed
            .warnings
            .into_iter()
            .map(|warning| {
                format!(
                    "{}, line {}: {}",
                    target.label(),
                    warning.line,
                    warning.message
                )
            })
            .collect();
    }

    let mut llm_use = None;
    if let (true, Some(config)) = (use_llm, llm) {
        let mut builder = config.prompt;
        if args.config.is_some() {
            builder.config = prompt_config(args)?;
        }
        if let Some(choice) = args.redact {
            builder.redact = redact(choice);
        }
        let prompt = builder
            .build(&PromptInput {
                executed_cells: prior.sources(),
                target_cell: &target.source,
                runtime: Some(&gathered.runtime),
                api_docs: gathered.api_docs.as_deref(),
            })
            .map_err(Failure::bad_input)?;
        if args.show_prompt {
            return Ok(Judged::PromptShown(crane_llm::describe_request(
                config, &prompt,
            )));
        }
        let client = Client::new(config.clone()).map_err(Failure::detector)?;
        match client.ask(&prompt, config.runs).await {
            Ok(judgement) => {
                llm_use = Some(judge_with_llm(
                    &judgement,
                    config,
                    &mut findings,
                    &mut warnings,
                    use_rules,
                    &context,
                ));
            }
            Err(error) => failures.push(DetectorFailure {
                detector: DetectorKind::Llm,
                error: crane_llm::Secrets::of(config).scrub(&error.to_string()),
            }),
        }
    } else if args.show_prompt {
        return Err(Failure::bad_input(anyhow!(
            "--show-prompt needs an LLM: pass --llm MODEL"
        )));
    }

    let asked = dry_run_asked(args);
    // As in the crane kernel, a crash a rule proved needs no second opinion unasked; nor does
    // one the user silenced, which a dry run would only report again.
    let proven = findings
        .iter()
        .chain(silenced.iter().map(|silenced| &silenced.finding))
        .any(|finding| finding.crash && finding.status == FindingStatus::Proven);
    let chosen = args.detector == DetectorChoice::Auto
        && args.dry.dry_run == DryRunWhen::Auto
        && !proven
        && match auto {
            AutoDryRun::Target => true,
            AutoDryRun::IfLong(long) => long,
        };
    if asked || chosen {
        let options = crane_probe::dry_run::DryRunOptions {
            allow_side_effects: args.dry.allow_side_effects,
            sealed_only: !asked,
            ..Default::default()
        };
        // Where the kernel cannot be forked, the cell runs in the replica.
        match crane_probe::replica::execute_ahead(session, replica, &target.source, &options).await
        {
            Ok(outcome) => {
                // A fork stopped at its timeout is a check that could not complete (exit 4),
                // not a verdict that the cell runs; a dry run nobody asked for by name says so
                // in its finding and fails nothing.
                if let crane_probe::dry_run::DryRunOutcome::Ran(report) = &outcome {
                    if let crane_probe::dry_run::DryRunResult::TimedOut { after } = report.result {
                        if asked {
                            failures.push(DetectorFailure {
                                detector: DetectorKind::DryRun,
                                error: format!(
                                    "the dry run was still running after {:.0} s and was stopped",
                                    after.as_secs_f64()
                                ),
                            });
                        }
                    }
                }
                findings.push(crane_detect::dry_run_finding(&outcome));
            }
            Err(crane_probe::dry_run::DryRunError::Kernel(error)) => {
                return Err(Failure::kernel(error))
            }
            Err(error) if asked => failures.push(DetectorFailure {
                detector: DetectorKind::DryRun,
                error: error.to_string(),
            }),
            Err(error) => findings.push(Finding {
                detector: DetectorKind::DryRun,
                rule: None,
                crash: false,
                exception: None,
                line: None,
                diagnosis: format!("The dry run could not complete: {error}."),
                evidence: Vec::new(),
                confidence: 0.0,
                status: FindingStatus::Unsupported,
            }),
        }
    }
    for failure in &failures {
        warnings.push(format!(
            "the {} detector failed, so the verdict comes from the others: {}",
            failure.detector.label(),
            failure.error
        ));
    }

    let mut verdict = combine(&findings);
    if use_rules && llm_use.is_some() && verdict.detector != DetectorKind::DryRun {
        verdict.detector = DetectorKind::Hybrid;
    }
    Ok(Judged::Detection(Box::new(Detection {
        findings,
        silenced,
        directive_warnings,
        gave_up,
        verdict,
        llm: llm_use,
        warnings,
        failures,
        detect: started.elapsed(),
    })))
}

/// A crash seen only in an abridged run, through a value the abridgement changed, may be its
/// artefact: the verdict is no crash, as in the crane kernel, and the crash's diagnosis is
/// returned to be said.
pub fn uncertain_only(verdict: &mut Verdict, findings: &[Finding]) -> Option<String> {
    let crashes = || findings.iter().filter(|finding| finding.crash);
    let uncertain = verdict.crash
        && crashes().next().is_some()
        && crashes().all(|finding| finding.status.may_be_artefact());
    if !uncertain {
        return None;
    }
    verdict.crash = false;
    verdict.exception = None;
    verdict.line = None;
    Some(verdict.diagnosis.clone())
}

/// Adds the LLM's judgement to `findings` (through the hybrid policy when the rules ran too).
fn judge_with_llm(
    judgement: &crane_llm::Judgement,
    config: &LlmConfig,
    findings: &mut Vec<Finding>,
    warnings: &mut Vec<String>,
    use_rules: bool,
    context: &crane_detect::CheckContext,
) -> LlmUse {
    let llm_finding = crane_detect::llm_finding(judgement);
    warnings.extend(judgement.warnings.iter().cloned());
    warnings.extend(judgement.unreadable.iter().map(|unreadable| {
        format!(
            "an LLM answer could not be read and did not vote: {}",
            unreadable.kind
        )
    }));
    if use_rules {
        *findings = crane_detect::hybrid_in_context(findings, &llm_finding, context).findings;
    } else {
        findings.push(llm_finding);
    }
    LlmUse {
        model: config.model.to_string(),
        input_tokens: judgement.usage.input_tokens,
        output_tokens: judgement.usage.output_tokens,
        tokens_estimated: judgement.usage.estimated,
        latency_ms: judgement.latency.as_millis() as u64,
        cost_usd: judgement.cost,
        cached: judgement.cached,
    }
}

/// A cell that does not parse raises SyntaxError before any of it runs.
fn syntax_error_finding(error: &SyntaxError) -> Finding {
    Finding {
        detector: DetectorKind::Rules,
        rule: None,
        crash: true,
        exception: Some("SyntaxError".into()),
        line: Some(error.line),
        diagnosis: format!(
            "The cell does not parse ({}, line {} column {}), so Python raises SyntaxError before running any of it.",
            error.message, error.line, error.column
        ),
        evidence: Vec::new(),
        confidence: 1.0,
        status: FindingStatus::Proven,
    }
}
