//! `crane run`: guarded execution. Every code cell is checked before it runs; a predicted
//! crash stops the run (or is skipped, or run anyway and scored), so the kernel state is never
//! corrupted by a crash crane saw coming. The written notebook follows papermill's
//! conventions (parameters injected, outputs of cells not reached cleared, figures kept, an
//! error banner when the run stops), so `crane run IN OUT -p ...` can stand in for papermill.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};
use crane_check::{AutoDryRun, Cell, CheckOptions, Detector, Judged, Target};
use crane_detect::rules::RuleCode;
use crane_detect::suppress::{Ignored, Silenced};
use crane_detect::Verdict;
use crane_detect::{DetectorKind, FindingStatus};
use crane_kernel::{Dropped, ExecuteOptions, Execution, OutputLimits, StreamName};
use crane_notebook::{CellKind, NewCell, Notebook};
use crane_probe::RideAlong;
use crane_runtime::RuntimeInfo;
use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::cli::{OnPredictedCrash, OutputFormat, RunArgs};
use crate::commands::kernel::{self, CellFailure};
use crate::exit::{Failure, Outcome};
use crate::formats;
use crate::parameters::Parameters;
use crate::settings;
use crate::signals::{Stop, StopSignal};
use crate::ui::{out, Ui};

use written::{
    add_banners, add_skipped_banner, cell_metadata, predicted_crash_output, remove_banners,
    store_outputs, StopPoint,
};

mod written;

/// What happened to one cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CellFate {
    /// Ran without error.
    Ran,
    /// Ran and raised.
    Crashed,
    /// Not run: a crash was predicted (stop or skip).
    Held,
    /// Not reached because the run stopped earlier.
    NotReached,
    /// Stopped by Ctrl-C while it ran.
    Interrupted,
    /// The kernel died while it ran (a segfault, an abort, an out-of-memory kill).
    KilledKernel,
}

impl CellFate {
    fn label(self) -> &'static str {
        match self {
            CellFate::Ran => "ran",
            CellFate::Crashed => "crashed",
            CellFate::Held => "held",
            CellFate::NotReached => "not reached",
            CellFate::Interrupted => "interrupted",
            CellFate::KilledKernel => "killed the kernel",
        }
    }
}

#[derive(Debug, Serialize)]
pub struct CellRecord {
    pub cell: usize,
    pub fate: CellFate,
    pub predicted_crash: bool,
    /// For cells that ran: whether the prediction matched what happened.
    pub prediction_correct: Option<bool>,
    pub check_ms: u64,
    pub execute_ms: u64,
    /// For a cell predicted to crash: the rule that proved it, if one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<RuleCode>,
    /// For a cell predicted to crash: the full verdict (exception, line, diagnosis, ...).
    #[serde(skip_serializing_if = "skip_verdict")]
    pub verdict: Option<Verdict>,
    /// Rule findings silenced in this cell (not predictions; see `crane check`'s `silenced`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub silenced: Vec<Silenced>,
    /// What `--max-output-bytes` left out of this cell's outputs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outputs_cut: Option<OutputsCut>,
    /// How the cell's dry run ended, when it had one (or one was refused).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<DryRunRecord>,
    /// What the `warning:` lines said about this cell (a dry run that decided nothing, and
    /// why; a crash it may have).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// A cell's dry run in the summary: its finding's status (`observed`, `abridged`,
/// `abridged_uncertain`, or `unsupported` and `inconclusive` for one that decided nothing)
/// and what it says (for those two, why).
#[derive(Debug, Clone, Serialize)]
pub struct DryRunRecord {
    pub status: FindingStatus,
    pub diagnosis: String,
}

/// The part of a cell's outputs `--max-output-bytes` did not keep.
#[derive(Debug, Clone, Serialize)]
pub struct OutputsCut {
    pub limit: u64,
    pub stdout_bytes: u64,
    pub stderr_bytes: u64,
    pub rich_outputs: u64,
    pub rich_output_bytes: u64,
}

/// Only a predicted crash carries its verdict in the summary (every checked cell has it in
/// the written notebook's metadata).
fn skip_verdict(verdict: &Option<Verdict>) -> bool {
    !verdict.as_ref().is_some_and(|verdict| verdict.crash)
}

#[derive(Debug, Serialize)]
pub struct RunSummary {
    pub notebook: PathBuf,
    pub output: Option<PathBuf>,
    pub cells: Vec<CellRecord>,
    pub cells_run: usize,
    pub predicted_crashes: usize,
    pub actual_crashes: usize,
    pub check_ms: u64,
    pub execute_ms: u64,
    /// Why the run ended early, if it did.
    pub stopped: Option<String>,
    /// The cells whose outputs `--max-output-bytes` cut.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub outputs_cut: Vec<usize>,
}

/// Where the executed notebook goes.
enum Destination {
    File(PathBuf),
    Stdout,
}

pub async fn run(args: RunArgs, ui: &Ui, mut stop: Stop) -> Result<Outcome, Failure> {
    let from_stdin = args.notebook.as_os_str() == "-";
    let mut notebook = read_input(&args.notebook, from_stdin)?;
    let destination = args
        .output
        .clone()
        .or_else(|| args.output_path.clone())
        .map(|path| {
            if path.as_os_str() == "-" {
                Destination::Stdout
            } else {
                Destination::File(path)
            }
        });
    // Found out now, not after the last cell ran.
    if let Some(Destination::File(path)) = &destination {
        check_writable(path)?;
    }
    let timeout = kernel::timeout(&args.kernel)?;
    let output_limits = args
        .max_output_bytes
        .map_or(OutputLimits::UNLIMITED, |bytes| {
            OutputLimits::at_most(usize::try_from(bytes).unwrap_or(usize::MAX))
        });
    let detect = args.detect.detect_args();
    let notebook_dir = if from_stdin {
        PathBuf::from(".")
    } else {
        kernel::notebook_dir(&args.notebook)
    };
    let working_dir = match &args.cwd {
        Some(cwd) if !cwd.is_dir() => {
            return Err(Failure::bad_input(anyhow!(
                "--cwd {} is not a folder",
                cwd.display()
            )))
        }
        Some(cwd) => cwd.clone(),
        None => notebook_dir.clone(),
    };
    let (ignored, config_file) = crate::config::ignored(&args.suppress, &notebook_dir)?;
    let options = settings::check_options(&detect, &config_file)?;
    settings::check_setup(&options)?;
    if options.llm.is_none() && options.detector == Detector::Auto {
        ui.note(&settings::no_llm_note(&options, true));
    }
    let parameters = Parameters::from_cli(
        &args.parameters,
        &args.parameters_raw,
        &args.parameters_base64,
        &args.parameters_file,
        &args.parameters_yaml,
    )
    .map_err(Failure::bad_input)?;
    remove_banners(&mut notebook).map_err(Failure::bad_input)?;
    if !parameters.is_empty() {
        parameters
            .inject(&mut notebook)
            .map_err(Failure::bad_input)?;
    }
    if args.prepare_only {
        notebook.set_metadata("crane", json!({"parameters": parameters.to_json()}));
        match &destination {
            Some(Destination::File(path)) => notebook.write(path).map_err(Failure::bad_input)?,
            Some(Destination::Stdout) => {
                crate::ui::print_out(&String::from_utf8_lossy(&notebook.to_bytes()))
            }
            None => {
                return Err(Failure::bad_input(anyhow!(
                    "--prepare-only writes the parameterized notebook: give OUTPUT"
                )))
            }
        }
        return Ok(Outcome::Success);
    }
    kernel::warn_duplicate_ids(&notebook, &crane_notebook::TargetSelector::default(), ui);
    // The injected cell has no execution count, so a recorded order would run it after the
    // history; with parameters the default is papermill's top-to-bottom order.
    let order = match (args.order, parameters.is_empty()) {
        (None, false) => crane_notebook::ExecutionOrder::Visual,
        (choice, _) => kernel::order(choice, &notebook),
    };
    // The run clears the recorded counts, so the cells' labels show none.
    let plan: Vec<crane_notebook::CodeCell> = notebook
        .execution_plan(order)
        .into_iter()
        .map(|cell| crane_notebook::CodeCell {
            execution_count: None,
            ..cell.clone()
        })
        .collect();
    if plan.is_empty() {
        return Err(Failure::bad_input(
            crane_notebook::NotebookError::NoCodeCells,
        ));
    }
    // As papermill does: nothing stale survives in a cell this run does not reach.
    for cell in &plan {
        let _ = notebook.set_execution(cell.index, None, Vec::new());
    }

    let started = tokio::select! {
        started = kernel::start(&args.kernel, Some(&notebook), &working_dir, kernel::Plots::Inline, ui) => started,
        signal = stop.signalled() => return Err(Failure::stopped(signal)),
    };
    let mut session = started?;
    // Rides carry no injection: the probe goes in once, before the first cell (and that time
    // counts as the first cell's checking).
    let inject_started = Instant::now();
    if let Err(error) = crane_probe::inject(&mut session).await {
        let _ = session.close().await;
        return Err(Failure::probe(error));
    }
    let mut probe_setup = inject_started.elapsed();
    let mut records: Vec<CellRecord> = Vec::new();
    let mut prior = crane_detect::ExecutedCells::default();
    let mut prior_indices: Vec<usize> = Vec::new();
    let mut looping = std::collections::BTreeSet::new();
    let mut replica = crane_probe::replica::Replica::new(None);
    let mut stopped = None;
    let mut stopped_at: Option<StopPoint> = None;
    let mut outcome = Outcome::Success;
    let mut failure = None;
    let mut progress = ui.progress(plan.len() as u64, "running");
    let mut signalled = None;
    let mut prefetched: Option<Prefetched> = None;

    for (position, cell) in plan.iter().enumerate() {
        progress.start(&format!(
            "{} {}",
            cell.label(),
            kernel::first_line(&cell.source)
        ));
        let target = Target::from_cell(cell);
        let check_started = Instant::now();
        let (facts, probe_time) = match prefetched.take() {
            Some(ride) if ride.cell == cell.index => (Some(ride.facts), ride.probe_time),
            _ => (None, Duration::ZERO),
        };
        let checked = tokio::select! {
            checked = check_cell(
                &mut session,
                &options,
                &ignored,
                &target,
                &prior,
                &prior_indices,
                facts,
                crane_probe::abridge::looks_long(&cell.source, &looping),
                &mut replica,
            ) => checked,
            signal = stop.signalled() => {
                signalled = Some(signal);
                stopped = Some(format!("{} while checking {}", signal.describe(), cell.label()));
                break;
            }
        };
        let CellCheck {
            verdict,
            rule,
            silenced,
            warnings,
            dry_run,
        } = match checked {
            Ok(checked) => checked,
            Err(err) => {
                failure = Some(err);
                break;
            }
        };
        let check_time = check_started.elapsed() + probe_time + std::mem::take(&mut probe_setup);
        let mut record = CellRecord {
            cell: cell.index,
            fate: CellFate::NotReached,
            predicted_crash: verdict.crash,
            prediction_correct: None,
            check_ms: millis(check_time),
            execute_ms: 0,
            rule: rule.filter(|_| verdict.crash),
            verdict: Some(verdict.clone()),
            silenced,
            outputs_cut: None,
            dry_run,
            warnings,
        };
        for warning in &record.warnings {
            progress.println(&format!("warning: {warning}"));
        }

        if verdict.crash {
            progress.println(&format!(
                "{} predicted to raise {}{}: {}{}",
                cell.label(),
                verdict.exception.as_deref().unwrap_or("an exception"),
                rule.map(|rule| format!(" ({})", rule.code()))
                    .unwrap_or_default(),
                verdict.diagnosis,
                rule.map(|rule| format!("; {}", formats::silence_hint(rule, verdict.line)))
                    .unwrap_or_default()
            ));
            if args.on_predicted_crash != OnPredictedCrash::Warn {
                record.fate = CellFate::Held;
                let held = predicted_crash_output(&verdict, rule, args.on_predicted_crash);
                let _ = notebook.set_execution(cell.index, None, vec![held]);
                records.push(record);
                if args.on_predicted_crash == OnPredictedCrash::Stop {
                    stopped = Some(format!(
                        "stopped before {}: a crash is predicted; the kernel state before it is intact",
                        cell.label()
                    ));
                    stopped_at = Some(StopPoint::Held(cell.index, verdict));
                    outcome = Outcome::CrashPredicted;
                    break;
                }
                progress.advance();
                continue;
            }
        }

        let next = plan.get(position + 1);
        let ride_along = next.and_then(|next| ride_along(&next.source));
        let mut options = match &ride_along {
            Some(ride_along) => ride_along.attach(ExecuteOptions::cell()),
            None => ExecuteOptions::cell(),
        };
        options.limits = output_limits;
        let execute_started = Instant::now();
        let executed = tokio::select! {
            result = kernel::execute_cell_with(&mut session, cell, options, timeout) => Some(result),
            signal = stop.signalled() => {
                signalled = Some(signal);
                None
            }
        };
        let execute_time = execute_started.elapsed();
        record.execute_ms = millis(execute_time);
        let Some(result) = executed else {
            let signal = signalled.unwrap_or(StopSignal::Interrupt);
            record.fate = CellFate::Interrupted;
            records.push(record);
            let marker = json!({
                "output_type": "stream",
                "name": "stderr",
                "text": format!("[crane] {} while this cell ran; its outputs are not kept\n", signal.describe()),
            });
            let _ = notebook.set_execution(cell.index, None, vec![marker]);
            stopped = Some(format!(
                "{} while running {}",
                signal.describe(),
                cell.label()
            ));
            break;
        };
        match result {
            Ok(execution) => {
                if let (Some(next), Some(_)) = (next, &ride_along) {
                    prefetched =
                        RideAlong::read(&execution).map(|facts| Prefetched::new(next, facts));
                }
                if let Some(ride) = &prefetched {
                    record.execute_ms = millis(execute_time.saturating_sub(ride.probe_time));
                }
                record.fate = CellFate::Ran;
                record.prediction_correct = Some(!verdict.crash);
                record.outputs_cut =
                    store_outputs(&mut notebook, cell.index, &execution, output_limits);
                looping.extend(crane_probe::abridge::looping_functions(&cell.source));
                super::check::warm(&mut replica, &cell.source, ui).await;
                prior.push(cell.source.clone());
                prior_indices.push(cell.index);
                records.push(record);
            }
            Err(CellFailure::Raised {
                cell: failed,
                error,
                execution,
            }) => {
                record.fate = CellFate::Crashed;
                record.prediction_correct = Some(verdict.crash);
                record.outputs_cut =
                    store_outputs(&mut notebook, failed.index, &execution, output_limits);
                records.push(record);
                stopped = Some(format!("{} raised {}", failed.label(), error.summary()));
                stopped_at = Some(StopPoint::Crashed(failed.index, error.summary()));
                failure = Some(Failure::kernel(anyhow!(
                    "{} raised {}{}",
                    failed.label(),
                    error.summary(),
                    if verdict.crash { " (as predicted)" } else { "" }
                )));
                break;
            }
            Err(CellFailure::Kernel { cell: died, error }) if error.is_kernel_death() => {
                // Its outputs went with the kernel; the saved notebook says why there are none.
                record.fate = CellFate::KilledKernel;
                records.push(record);
                let marker = json!({
                    "output_type": "stream",
                    "name": "stderr",
                    "text": format!("[crane] {error}\n"),
                });
                let _ = notebook.set_execution(died.index, None, vec![marker]);
                stopped = Some(format!("{} killed the kernel", died.label()));
                failure = Some(CellFailure::Kernel { cell: died, error }.into_failure());
                break;
            }
            Err(other) => {
                records.push(record);
                failure = Some(other.into_failure());
                break;
            }
        }
        progress.advance();
    }
    progress.finish();
    let closed = match signalled {
        Some(_) => {
            kernel::close_after_stop(session).await;
            Ok(())
        }
        None => session.close().await,
    };
    if let Some(signal) = signalled {
        failure = Some(Failure::stopped(signal));
    }

    let reached: std::collections::HashSet<usize> = records.iter().map(|r| r.cell).collect();
    for cell in &plan {
        if !reached.contains(&cell.index) {
            records.push(CellRecord {
                cell: cell.index,
                fate: CellFate::NotReached,
                predicted_crash: false,
                prediction_correct: None,
                check_ms: 0,
                execute_ms: 0,
                rule: None,
                verdict: None,
                silenced: Vec::new(),
                outputs_cut: None,
                dry_run: None,
                warnings: Vec::new(),
            });
        }
    }
    for record in &records {
        let _ = notebook.set_cell_metadata(record.cell, "crane", cell_metadata(record, &args));
    }
    let summary = RunSummary {
        notebook: args.notebook.clone(),
        output: match &destination {
            Some(Destination::File(path)) => Some(path.clone()),
            Some(Destination::Stdout) => Some(PathBuf::from("-")),
            None => None,
        },
        cells_run: records
            .iter()
            .filter(|r| {
                matches!(
                    r.fate,
                    CellFate::Ran
                        | CellFate::Crashed
                        | CellFate::Interrupted
                        | CellFate::KilledKernel
                )
            })
            .count(),
        predicted_crashes: records.iter().filter(|r| r.predicted_crash).count(),
        actual_crashes: records
            .iter()
            .filter(|r| matches!(r.fate, CellFate::Crashed | CellFate::KilledKernel))
            .count(),
        check_ms: records.iter().map(|r| r.check_ms).sum(),
        execute_ms: records.iter().map(|r| r.execute_ms).sum(),
        outputs_cut: records
            .iter()
            .filter(|r| r.outputs_cut.is_some())
            .map(|r| r.cell)
            .collect(),
        cells: records,
        stopped,
    };
    notebook.set_metadata(
        "crane",
        json!({
            "version": env!("CARGO_PKG_VERSION"),
            "parameters": parameters.to_json(),
            "cells_run": summary.cells_run,
            "predicted_crashes": summary.predicted_crashes,
            "actual_crashes": summary.actual_crashes,
            "check_ms": summary.check_ms,
            "execute_ms": summary.execute_ms,
            "stopped": summary.stopped,
            "outputs_cut": summary.outputs_cut,
        }),
    );
    match &stopped_at {
        Some(point) => add_banners(&mut notebook, point).map_err(Failure::bad_input)?,
        None => add_skipped_banner(&mut notebook, &summary.cells).map_err(Failure::bad_input)?,
    }
    let to_stdout = matches!(destination, Some(Destination::Stdout));
    match &destination {
        Some(Destination::File(path)) => notebook.write(path).map_err(Failure::bad_input)?,
        Some(Destination::Stdout) => {
            crate::ui::print_out(&String::from_utf8_lossy(&notebook.to_bytes()))
        }
        None => {}
    }
    let rendered = match args.format {
        OutputFormat::Json => format!(
            "{}\n",
            serde_json::to_string_pretty(&summary).map_err(Failure::bad_input)?
        ),
        OutputFormat::Text => render_summary(&summary),
    };
    if to_stdout {
        eprint!("{rendered}");
    } else {
        out!("{rendered}");
    }
    if let Some(failure) = failure {
        return Err(failure);
    }
    closed.map_err(Failure::kernel)?;
    Ok(outcome)
}

/// The notebook to run, from a file or (`-`) standard input.
fn read_input(path: &Path, from_stdin: bool) -> Result<Notebook, Failure> {
    if !from_stdin {
        return Notebook::read(path).map_err(Failure::bad_input);
    }
    let mut bytes = Vec::new();
    std::io::stdin()
        .read_to_end(&mut bytes)
        .context("cannot read the notebook from standard input")
        .map_err(Failure::bad_input)?;
    Notebook::from_bytes("<stdin>", &bytes).map_err(Failure::bad_input)
}

/// Fails now when the output notebook could not be written at the end: a folder that does not
/// exist or cannot be written to, or a path that is a folder.
fn check_writable(path: &Path) -> Result<(), Failure> {
    let cannot = |reason: String| {
        Failure::bad_input(anyhow!(
            "cannot write the output notebook {}: {reason}",
            path.display()
        ))
    };
    if path.is_dir() {
        return Err(cannot("it is a folder".into()));
    }
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let probe = dir.join(format!(".crane-write-check-{}", std::process::id()));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(err) => Err(cannot(err.to_string())),
    }
}

/// What the check of one cell found.
struct CellCheck {
    verdict: Verdict,
    /// The rule that proved the verdict's crash, if one did.
    rule: Option<RuleCode>,
    silenced: Vec<Silenced>,
    /// Problems with the cell's `# crane:` comments, a dry run that decided nothing, a crash
    /// the cell may have.
    warnings: Vec<String>,
    dry_run: Option<DryRunRecord>,
}

/// Judges one cell; `long`: it looks long, so `--dry-run auto` dry-runs it.
#[allow(clippy::too_many_arguments)]
async fn check_cell(
    session: &mut crane_kernel::KernelSession,
    options: &CheckOptions,
    ignored: &Ignored,
    target: &Target,
    prior: &crane_detect::ExecutedCells,
    prior_indices: &[usize],
    facts: Option<RuntimeInfo>,
    long: bool,
    replica: &mut crane_probe::replica::Replica,
) -> Result<CellCheck, Failure> {
    let want_api_docs = options.wants_api_docs();
    let gathered =
        crane_check::gather(session, target, prior, prior_indices, want_api_docs, facts).await?;
    let cell = Cell {
        target,
        prior,
        gathered: &gathered,
        ignored,
    };
    let judged = crane_check::judge(
        session,
        options,
        cell,
        AutoDryRun::IfLong(long),
        Some(replica),
    )
    .await?;
    let detection = match judged {
        Judged::Detection(detection) => detection,
        Judged::PromptShown(_) => {
            return Err(Failure::bad_input(anyhow!("--show-prompt is not for run")))
        }
    };
    let rule = detection
        .findings
        .iter()
        .filter(|finding| finding.crash == detection.verdict.crash)
        .find_map(|finding| finding.rule);
    let mut verdict = detection.verdict;
    let mut warnings = detection.directive_warnings;
    let dry_run_finding = detection
        .findings
        .iter()
        .find(|finding| finding.detector == DetectorKind::DryRun);
    // A dry run that decided nothing says why, as `check` does.
    if let Some(finding) = dry_run_finding.filter(|finding| finding.status.is_undecided()) {
        warnings.push(format!("{}: {}", target.label(), finding.diagnosis));
    }
    let dry_run_failure = detection
        .failures
        .iter()
        .find(|failure| failure.detector == DetectorKind::DryRun);
    if let (None, Some(failure)) = (dry_run_finding, dry_run_failure) {
        warnings.push(format!(
            "{}: the dry run could not complete: {}",
            target.label(),
            failure.error
        ));
    }
    let dry_run = match (dry_run_finding, dry_run_failure) {
        (Some(finding), _) => Some(DryRunRecord {
            status: finding.status,
            diagnosis: finding.diagnosis.clone(),
        }),
        (None, Some(failure)) => Some(DryRunRecord {
            status: FindingStatus::Unsupported,
            diagnosis: failure.error.clone(),
        }),
        (None, None) => None,
    };
    if let Some(diagnosis) = crane_check::uncertain_only(&mut verdict, &detection.findings) {
        warnings.push(format!("{} may crash: {diagnosis}", target.label()));
    }
    Ok(CellCheck {
        verdict,
        rule,
        silenced: detection.silenced,
        warnings,
        dry_run,
    })
}

/// Facts of the next cell, read by the probe riding on this cell's execute request, and the
/// kernel time they took: that time belongs to the next cell's check, not to this execution.
struct Prefetched {
    cell: usize,
    facts: RuntimeInfo,
    probe_time: Duration,
}

impl Prefetched {
    fn new(cell: &crane_notebook::CodeCell, facts: RuntimeInfo) -> Self {
        let probe_ms = facts.cost.map_or(0.0, |cost| cost.ms);
        Prefetched {
            cell: cell.index,
            probe_time: Duration::try_from_secs_f64(probe_ms / 1000.0).unwrap_or_default(),
            facts,
        }
    }
}

/// The probe call that reads the facts `next_source` needs, to ride on the execute request of
/// the cell before it; `None` when that cell reads nothing the probe summarizes (or does not
/// parse).
fn ride_along(next_source: &str) -> Option<RideAlong> {
    let analysis = crane_analysis::analyze_cell(next_source).ok()?;
    let expressions = crane_analysis::targets_for_probe(&analysis);
    (!expressions.is_empty())
        .then(|| RideAlong::summarize(&expressions, &crane_probe::Budget::default()))
}

fn millis(duration: Duration) -> u64 {
    duration.as_millis() as u64
}

fn render_summary(summary: &RunSummary) -> String {
    let mut out = String::from("cell  fate         predicted  correct  check ms  run ms\n");
    for record in &summary.cells {
        out.push_str(&format!(
            "{:>4}  {:<11}  {:<9}  {:<7}  {:>8}  {:>6}\n",
            record.cell,
            record.fate.label(),
            if record.predicted_crash { "crash" } else { "-" },
            match record.prediction_correct {
                Some(true) => "yes",
                Some(false) => "no",
                None => "-",
            },
            record.check_ms,
            record.execute_ms
        ));
    }
    out.push_str(&format!(
        "{} run; crashes: {} predicted, {} actual; checking {:.2} s, executing {:.2} s\n",
        match summary.cells_run {
            1 => "1 cell".to_owned(),
            n => format!("{n} cells"),
        },
        summary.predicted_crashes,
        summary.actual_crashes,
        summary.check_ms as f64 / 1000.0,
        summary.execute_ms as f64 / 1000.0
    ));
    if !summary.outputs_cut.is_empty() {
        let cells: Vec<String> = summary.outputs_cut.iter().map(usize::to_string).collect();
        out.push_str(&format!(
            "outputs cut by --max-output-bytes in cell(s) {} (marked `[crane]` in the notebook)\n",
            cells.join(", ")
        ));
    }
    if let Some(stopped) = &summary.stopped {
        out.push_str(&format!("{stopped}\n"));
    }
    if let Some(output) = &summary.output {
        out.push_str(&format!("wrote {}\n", output.display()));
    }
    out
}
