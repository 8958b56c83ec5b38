//! `crane run`: guarded execution. Every code cell is checked before it runs; a predicted
//! crash stops the run (or is skipped, or run anyway and scored), so the kernel state is never
//! corrupted by a crash crane saw coming.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::anyhow;
use crane_detect::Verdict;
use crane_kernel::{ExecuteOptions, Execution};
use crane_notebook::Notebook;
use crane_probe::RideAlong;
use crane_runtime::RuntimeInfo;
use serde::Serialize;
use serde_json::{json, Value};

use crate::cli::{DetectorChoice, OnPredictedCrash, OutputFormat, RunArgs};
use crate::commands::kernel::{self, CellFailure};
use crate::commands::pipeline::{self, Judged, Target};
use crate::exit::{Failure, Outcome};
use crate::ui::{out, outln, Ui};

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
}

impl CellFate {
    fn label(self) -> &'static str {
        match self {
            CellFate::Ran => "ran",
            CellFate::Crashed => "crashed",
            CellFate::Held => "held",
            CellFate::NotReached => "not reached",
            CellFate::Interrupted => "interrupted",
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
}

pub async fn run(args: RunArgs, ui: &Ui) -> Result<Outcome, Failure> {
    let mut notebook = Notebook::read(&args.notebook).map_err(Failure::bad_input)?;
    let timeout = kernel::timeout(&args.kernel)?;
    if args.detect.detector == DetectorChoice::DryRun || args.detect.dry_run {
        return Err(Failure::bad_input(anyhow!(
            "crane run checks cells with rules and the LLM; a dry run of every cell would execute each twice"
        )));
    }
    if args.detect.show_prompt {
        return Err(Failure::bad_input(anyhow!(
            "--show-prompt belongs to `crane check`, which judges one cell"
        )));
    }
    let notebook_dir = kernel::notebook_dir(&args.notebook);
    let llm = pipeline::llm_config(&args.detect, &notebook_dir)?;
    if llm.is_none() && args.detect.detector == DetectorChoice::Auto {
        ui.note("LLM detector off (rules only); add one with --llm MODEL, CRANE_LLM or crane.toml");
    }
    let plan: Vec<crane_notebook::CodeCell> = notebook
        .execution_plan(args.order.into())
        .into_iter()
        .cloned()
        .collect();
    if plan.is_empty() {
        return Err(Failure::bad_input(
            crane_notebook::NotebookError::NoCodeCells,
        ));
    }

    let mut session = kernel::start(&args.kernel, &notebook_dir, ui).await?;
    // Rides carry no injection: the probe goes in once, before the first cell (and that time
    // counts as the first cell's checking).
    let inject_started = Instant::now();
    if let Err(error) = crane_probe::inject(&mut session).await {
        let _ = session.close().await;
        return Err(Failure::kernel(error));
    }
    let mut probe_setup = inject_started.elapsed();
    let mut records: Vec<CellRecord> = Vec::new();
    let mut prior_cells: Vec<String> = Vec::new();
    let mut prior_indices: Vec<usize> = Vec::new();
    let mut stopped = None;
    let mut outcome = Outcome::Success;
    let mut failure = None;
    let mut progress = ui.progress(plan.len() as u64, "running");
    // Ctrl-C ends the run here rather than in `main`, so that what ran is still written out.
    let interrupt = tokio::signal::ctrl_c();
    tokio::pin!(interrupt);
    let mut interrupted = false;
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
                &args,
                llm.as_ref(),
                &target,
                &prior_cells,
                &prior_indices,
                facts,
            ) => Some(checked),
            Ok(()) = &mut interrupt => None,
        };
        let verdict = match checked {
            Some(Ok(verdict)) => verdict,
            Some(Err(err)) => {
                failure = Some(err);
                break;
            }
            None => {
                interrupted = true;
                stopped = Some(format!("interrupted while checking {}", cell.label()));
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
        };
        let annotation = annotation(&verdict, &args);
        if let Err(err) = notebook.set_cell_metadata(cell.index, "crane", annotation) {
            failure = Some(Failure::bad_input(err));
            break;
        }

        if verdict.crash {
            progress.println(&format!(
                "{} predicted to raise {}: {}",
                cell.label(),
                verdict.exception.as_deref().unwrap_or("an exception"),
                verdict.diagnosis
            ));
            if args.on_predicted_crash != OnPredictedCrash::Warn {
                record.fate = CellFate::Held;
                let held = predicted_crash_output(&verdict, args.on_predicted_crash);
                let _ = notebook.set_execution(cell.index, None, vec![held]);
                records.push(record);
                if args.on_predicted_crash == OnPredictedCrash::Stop {
                    stopped = Some(format!(
                        "stopped before {}: a crash is predicted; the kernel state before it is intact",
                        cell.label()
                    ));
                    outcome = Outcome::CrashPredicted;
                    break;
                }
                progress.advance();
                continue;
            }
        }

        let next = plan.get(position + 1);
        let ride_along = next.and_then(|next| ride_along(&next.source));
        let options = match &ride_along {
            Some(ride_along) => ride_along.attach(ExecuteOptions::cell()),
            None => ExecuteOptions::cell(),
        };
        let execute_started = Instant::now();
        let executed = tokio::select! {
            result = kernel::execute_cell_with(&mut session, cell, options, timeout) => Some(result),
            Ok(()) = &mut interrupt => None,
        };
        let execute_time = execute_started.elapsed();
        record.execute_ms = millis(execute_time);
        let Some(result) = executed else {
            interrupted = true;
            record.fate = CellFate::Interrupted;
            records.push(record);
            let marker = json!({
                "output_type": "stream",
                "name": "stderr",
                "text": "[crane] interrupted (Ctrl-C) while this cell ran; its outputs are not kept\n",
            });
            let _ = notebook.set_execution(cell.index, None, vec![marker]);
            stopped = Some(format!("interrupted while running {}", cell.label()));
            // The kernel is still running the cell: stop it before shutting it down.
            let _ = session.interrupt().await;
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
                store_outputs(&mut notebook, cell.index, &execution);
                prior_cells.push(cell.source.clone());
                prior_indices.push(cell.index);
                records.push(record);
            }
            Err(CellFailure::Raised {
                cell: failed,
                error,
            }) => {
                record.fate = CellFate::Crashed;
                record.prediction_correct = Some(verdict.crash);
                let _ = notebook.set_execution(
                    failed.index,
                    None,
                    vec![
                        serde_json::to_value(crane_kernel::Output::Error(error.clone()))
                            .unwrap_or(Value::Null),
                    ],
                );
                records.push(record);
                stopped = Some(format!("{} raised {}", failed.label(), error.summary()));
                failure = Some(Failure::kernel(anyhow!(
                    "{} raised {}{}",
                    failed.label(),
                    error.summary(),
                    if verdict.crash { " (as predicted)" } else { "" }
                )));
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
    let closed = session.close().await;
    if interrupted {
        failure = Some(Failure::interrupted());
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
            });
        }
    }
    if let Some(output) = &args.output {
        notebook.write(output).map_err(Failure::bad_input)?;
    }
    let summary = RunSummary {
        notebook: args.notebook.clone(),
        output: args.output.clone(),
        cells_run: records
            .iter()
            .filter(|r| {
                matches!(
                    r.fate,
                    CellFate::Ran | CellFate::Crashed | CellFate::Interrupted
                )
            })
            .count(),
        predicted_crashes: records.iter().filter(|r| r.predicted_crash).count(),
        actual_crashes: records
            .iter()
            .filter(|r| r.fate == CellFate::Crashed)
            .count(),
        check_ms: records.iter().map(|r| r.check_ms).sum(),
        execute_ms: records.iter().map(|r| r.execute_ms).sum(),
        cells: records,
        stopped,
    };
    match args.format {
        OutputFormat::Json => outln!(
            "{}",
            serde_json::to_string_pretty(&summary).map_err(Failure::bad_input)?
        ),
        OutputFormat::Text => out!("{}", render_summary(&summary)),
    }
    if let Some(failure) = failure {
        return Err(failure);
    }
    closed.map_err(Failure::kernel)?;
    Ok(outcome)
}

async fn check_cell(
    session: &mut crane_kernel::KernelSession,
    args: &RunArgs,
    llm: Option<&crane_llm::LlmConfig>,
    target: &Target,
    prior_cells: &[String],
    prior_indices: &[usize],
    facts: Option<RuntimeInfo>,
) -> Result<Verdict, Failure> {
    let want_api_docs = pipeline::wants_api_docs(&args.detect, llm)?;
    let gathered = pipeline::gather(
        session,
        target,
        prior_cells,
        prior_indices,
        want_api_docs,
        facts,
    )
    .await?;
    match pipeline::judge(session, &args.detect, llm, target, prior_cells, &gathered).await? {
        Judged::Detection(detection) => Ok(detection.verdict),
        Judged::PromptShown(_) => Err(Failure::bad_input(anyhow!("--show-prompt is not for run"))),
    }
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

/// crane's judgement, kept in the cell's metadata under `crane`.
fn annotation(verdict: &Verdict, args: &RunArgs) -> Value {
    json!({
        "verdict": verdict,
        "on_predicted_crash": format!("{:?}", args.on_predicted_crash).to_lowercase(),
    })
}

/// A visible, clearly marked output on a cell crane did not run.
fn predicted_crash_output(verdict: &Verdict, policy: OnPredictedCrash) -> Value {
    let action = match policy {
        OnPredictedCrash::Skip => "skipped",
        _ => "not run",
    };
    let line = verdict
        .line
        .map(|l| format!(" at line {l}"))
        .unwrap_or_default();
    json!({
        "output_type": "stream",
        "name": "stderr",
        "text": format!(
            "[crane] {action}: predicted {}{line}. {}\n",
            verdict.exception.as_deref().unwrap_or("crash"),
            verdict.diagnosis
        ),
    })
}

fn store_outputs(notebook: &mut Notebook, index: usize, execution: &Execution) {
    let outputs = execution
        .outputs
        .iter()
        .filter_map(|output| serde_json::to_value(output).ok())
        .collect();
    let count = execution.reply().and_then(|reply| reply.execution_count);
    let _ = notebook.set_execution(index, count, outputs);
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
    if let Some(stopped) = &summary.stopped {
        out.push_str(&format!("{stopped}\n"));
    }
    if let Some(output) = &summary.output {
        out.push_str(&format!("wrote {}\n", output.display()));
    }
    out
}
