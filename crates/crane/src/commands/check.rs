//! `crane check`: predict whether a cell will crash, and explain why; for one notebook or
//! several (each in a kernel of its own), in the output formats of `--output-format`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::anyhow;
use console::Style;
use crane_check::{
    AutoDryRun, Cell, CheckOptions, CheckReport, Detector, Judged, ReportTimings, Target,
};
use crane_detect::suppress::{Ignored, SilencedBy};
use crane_detect::Finding;

use crate::cli::{CellSourceArgs, CheckArgs, CheckFormat};
use crate::commands::{kernel, prepare};
use crate::config;
use crate::exit::{Failure, Outcome};
use crate::formats;
use crate::settings;
use crate::signals::Stop;
use crate::ui::{out, outln, Ui};

/// One notebook's (or `--code`'s) check.
pub struct Checked {
    pub notebook: Option<PathBuf>,
    pub result: Result<CheckReport, Failure>,
}

pub async fn run(args: CheckArgs, ui: &Ui, mut stop: Stop) -> Result<Outcome, Failure> {
    let notebooks = collect_notebooks(&args.notebooks)?;
    if notebooks.len() > 1 && (args.source.existing.is_some() || args.source.code.is_some()) {
        return Err(Failure::bad_input(anyhow!(
            "--existing and --code judge one cell of one kernel; give one notebook"
        )));
    }
    let start_dir = notebooks
        .first()
        .map(|path| kernel::notebook_dir(path))
        .unwrap_or_else(|| PathBuf::from("."));
    let (_, config_file) = config::ignored(&args.suppress, &start_dir)?;
    let options = settings::check_options(&args.detect, &config_file)?;
    if !options.show_prompt {
        settings::check_setup(&options)?;
    }
    if options.llm.is_none()
        && options.detector == Detector::Auto
        && args.format == CheckFormat::Text
    {
        ui.note(&settings::no_llm_note(&options, args.every_unexecuted));
    }

    let several = notebooks.len() > 1 || args.every_unexecuted;
    let targets: Vec<Option<PathBuf>> = if notebooks.is_empty() {
        vec![None]
    } else {
        notebooks.into_iter().map(Some).collect()
    };
    // Each notebook's configuration is the closest to it; all are read before any kernel starts.
    let ignored: Vec<Ignored> = targets
        .iter()
        .map(|notebook| {
            let dir = notebook
                .as_deref()
                .map_or_else(|| PathBuf::from("."), kernel::notebook_dir);
            config::ignored(&args.suppress, &dir).map(|(ignored, _)| ignored)
        })
        .collect::<Result<_, _>>()?;
    let mut checked: Vec<Checked> = Vec::new();
    for (notebook, ignored) in targets.into_iter().zip(&ignored) {
        if several {
            ui.status(&format!("checking {}", display(notebook.as_deref())));
        }
        let mut source = args.source.clone();
        source.notebook = notebook.clone();
        if let (true, Some(path)) = (args.every_unexecuted, &notebook) {
            let results = check_every_unexecuted(
                &args,
                &source,
                path,
                Judging {
                    options: &options,
                    ignored,
                },
                ui,
                &mut stop,
            )
            .await;
            checked.extend(results.into_iter().map(|result| Checked {
                notebook: notebook.clone(),
                result,
            }));
            if let Some(signal) = stop.received() {
                report_all(&checked, args.format, several, ui)?;
                return Err(Failure::stopped(signal));
            }
            continue;
        }
        let result = check_one(
            &args,
            &source,
            Judging {
                options: &options,
                ignored,
            },
            ui,
            &mut stop,
        )
        .await;
        let result = match result {
            Ok(One::Prompt(prompt)) => {
                outln!("{prompt}");
                continue;
            }
            Ok(One::Report(report)) => Ok(*report),
            Err(failure) if several && nothing_to_check(&failure) => {
                ui.note(&format!(
                    "{}: every code cell has been executed; nothing to check",
                    display(notebook.as_deref())
                ));
                continue;
            }
            Err(failure) => Err(failure),
        };
        checked.push(Checked { notebook, result });
        if let Some(signal) = stop.received() {
            // What was checked is still reported, then crane exits as the signal asks.
            report_all(&checked, args.format, several, ui)?;
            return Err(Failure::stopped(signal));
        }
    }
    if !several && matches!(args.format, CheckFormat::Text | CheckFormat::Json) {
        let Some(one) = checked.pop() else {
            return Ok(Outcome::Success);
        };
        let report = one.result?;
        match args.format {
            CheckFormat::Json => {
                let json = serde_json::to_string_pretty(&report).map_err(Failure::bad_input)?;
                outln!("{json}");
            }
            _ => out!("{}", render_text(&report, ui)),
        }
        return outcome_of(&report);
    }
    report_all(&checked, args.format, several, ui)?;
    overall(&checked)
}

/// How each cell is judged: the options, and the rules silenced from outside the cell.
#[derive(Clone, Copy)]
struct Judging<'a> {
    options: &'a CheckOptions,
    ignored: &'a Ignored,
}

enum One {
    Report(Box<CheckReport>),
    Prompt(String),
}

async fn check_one(
    args: &CheckArgs,
    source: &CellSourceArgs,
    judging: Judging<'_>,
    ui: &Ui,
    stop: &mut Stop,
) -> Result<One, Failure> {
    let started = Instant::now();
    let mut prepared = prepare::prepare(source, ui, stop).await?;
    let prior = crane_detect::ExecutedCells::new(&prepared.prior_cells);
    let mut replica = crane_probe::replica::Replica::new(None);
    let work = async {
        let gathered = crane_check::gather(
            &mut prepared.session,
            &prepared.target,
            &prior,
            &prepared.prior_indices,
            judging.options.wants_api_docs(),
            None,
        )
        .await?;
        let cell = Cell {
            target: &prepared.target,
            prior: &prior,
            gathered: &gathered,
            ignored: judging.ignored,
        };
        let judged = crane_check::judge(
            &mut prepared.session,
            judging.options,
            cell,
            AutoDryRun::Target,
            Some(&mut replica),
        )
        .await?;
        Ok::<_, Failure>((gathered, judged))
    };
    let result = tokio::select! {
        result = work => result,
        signal = stop.signalled() => {
            kernel::close_after_stop(prepared.session).await;
            return Err(Failure::stopped(signal));
        }
    };
    let closed = prepared.session.close().await;
    let (gathered, judged) = result?;
    closed.map_err(Failure::kernel)?;

    let mut detection = match judged {
        Judged::PromptShown(prompt) => return Ok(One::Prompt(prompt)),
        Judged::Detection(detection) => *detection,
    };
    for warning in &detection.directive_warnings {
        ui.warning(warning);
    }
    for warning in &detection.warnings {
        ui.note(warning);
    }
    if let Some(diagnosis) =
        crane_check::uncertain_only(&mut detection.verdict, &detection.findings)
    {
        ui.warning(&format!("the cell may crash: {diagnosis}"));
    }
    Ok(One::Report(Box::new(CheckReport {
        notebook: prepared.notebook,
        target_cell: prepared.target,
        verdict: detection.verdict,
        findings: detection.findings,
        silenced: detection.silenced,
        gave_up: args.explain_silence.then_some(detection.gave_up),
        runtime_info: gathered.runtime,
        timings_ms: ReportTimings {
            execute_prior: prepared.execute_prior.as_millis() as u64,
            extract: gathered.extract.as_millis() as u64,
            detect: detection.detect.as_millis() as u64,
            total: started.elapsed().as_millis() as u64,
        },
        llm: detection.llm,
        detector_failures: detection.failures,
    })))
}

/// `--every-unexecuted` on one notebook: one kernel walks the notebook's plan; a cell with an
/// execution count just runs, a cell without one is checked and then runs. The walk ends at
/// the first predicted crash (reported), at a cell that raises (a failure), or at a signal.
async fn check_every_unexecuted(
    args: &CheckArgs,
    source: &CellSourceArgs,
    path: &Path,
    judging: Judging<'_>,
    ui: &Ui,
    stop: &mut Stop,
) -> Vec<Result<CheckReport, Failure>> {
    let mut results = Vec::new();
    let setup = async {
        let notebook = crane_notebook::Notebook::read(path).map_err(Failure::bad_input)?;
        kernel::warn_duplicate_ids(&notebook, &crane_notebook::TargetSelector::default(), ui);
        let timeout = kernel::timeout(&source.kernel)?;
        Ok::<_, Failure>((notebook, timeout))
    };
    let (notebook, timeout) = match setup.await {
        Ok(setup) => setup,
        Err(failure) => return vec![Err(failure)],
    };
    let order = kernel::order(source.order, &notebook);
    let plan = notebook.execution_plan(order);
    let working_dir = kernel::notebook_dir(path);
    let started = tokio::select! {
        started = kernel::start(&source.kernel, Some(&notebook), &working_dir, kernel::Plots::Discarded, ui) => started,
        signal = stop.signalled() => return vec![Err(Failure::stopped(signal))],
    };
    let mut session = match started {
        Ok(session) => session,
        Err(failure) => return vec![Err(failure)],
    };
    let mut prior = crane_detect::ExecutedCells::default();
    let mut prior_indices: Vec<usize> = Vec::new();
    let mut looping = std::collections::BTreeSet::new();
    let mut replica = crane_probe::replica::Replica::new(None);
    let mut executing = std::time::Duration::ZERO;
    for (position, cell) in plan.iter().copied().enumerate() {
        if cell.execution_count.is_none() {
            let started = Instant::now();
            let target = Target::from_cell(cell);
            let long = crane_probe::abridge::looks_long(&cell.source, &looping);
            let work = async {
                let gathered = crane_check::gather(
                    &mut session,
                    &target,
                    &prior,
                    &prior_indices,
                    judging.options.wants_api_docs(),
                    None,
                )
                .await?;
                let cell = Cell {
                    target: &target,
                    prior: &prior,
                    gathered: &gathered,
                    ignored: judging.ignored,
                };
                let judged = crane_check::judge(
                    &mut session,
                    judging.options,
                    cell,
                    AutoDryRun::IfLong(long),
                    Some(&mut replica),
                )
                .await?;
                Ok::<_, Failure>((gathered, judged))
            };
            let judged = tokio::select! {
                judged = work => judged,
                signal = stop.signalled() => {
                    results.push(Err(Failure::stopped(signal)));
                    break;
                }
            };
            let (gathered, mut detection) = match judged {
                Ok((gathered, Judged::Detection(detection))) => (gathered, *detection),
                Ok((_, Judged::PromptShown(_))) => break,
                Err(failure) => {
                    results.push(Err(failure));
                    break;
                }
            };
            for warning in &detection.directive_warnings {
                ui.warning(warning);
            }
            for warning in &detection.warnings {
                ui.note(warning);
            }
            if let Some(diagnosis) =
                crane_check::uncertain_only(&mut detection.verdict, &detection.findings)
            {
                ui.warning(&format!("{} may crash: {diagnosis}", target.label()));
            }
            let crash = detection.verdict.crash;
            results.push(Ok(CheckReport {
                notebook: Some(path.to_path_buf()),
                target_cell: target,
                verdict: detection.verdict,
                findings: detection.findings,
                silenced: detection.silenced,
                gave_up: args.explain_silence.then_some(detection.gave_up),
                runtime_info: gathered.runtime,
                timings_ms: ReportTimings {
                    execute_prior: executing.as_millis() as u64,
                    extract: gathered.extract.as_millis() as u64,
                    detect: detection.detect.as_millis() as u64,
                    total: started.elapsed().as_millis() as u64,
                },
                llm: detection.llm,
                detector_failures: detection.failures,
            }));
            let unchecked_after = plan[position + 1..]
                .iter()
                .any(|later| later.execution_count.is_none());
            if crash && !unchecked_after {
                break;
            }
            if crash {
                ui.note(&format!(
                    "{}: stopped at the predicted crash of {}; the cells after it are not checked",
                    path.display(),
                    cell.label()
                ));
                break;
            }
        }
        let started = Instant::now();
        let executed = tokio::select! {
            executed = kernel::execute_cell(&mut session, cell, timeout) => executed,
            signal = stop.signalled() => {
                results.push(Err(Failure::stopped(signal)));
                break;
            }
        };
        executing += started.elapsed();
        if let Err(failure) = executed {
            results.push(Err(failure.into_failure()));
            break;
        }
        looping.extend(crane_probe::abridge::looping_functions(&cell.source));
        warm(&mut replica, &cell.source, ui).await;
        prior.push(cell.source.clone());
        prior_indices.push(cell.index);
    }
    replica.shutdown().await;
    if stop.received().is_some() {
        kernel::close_after_stop(session).await;
    } else if let Err(error) = session.close().await {
        results.push(Err(Failure::kernel(error)));
    }
    results
}

/// 1 when a crash is predicted, else a detector failure (4) when a detector could not judge
/// the cell, else 0.
fn outcome_of(report: &CheckReport) -> Result<Outcome, Failure> {
    if report.verdict.crash {
        Ok(Outcome::CrashPredicted)
    } else if !report.detector_failures.is_empty() {
        Err(Failure::detector(anyhow!(
            "no crash predicted, but not every detector could judge the cell (see the warnings)"
        )))
    } else {
        Ok(Outcome::Success)
    }
}

/// A notebook whose cells have all run has no default target; among several it is skipped.
fn nothing_to_check(failure: &Failure) -> bool {
    matches!(
        failure
            .error
            .downcast_ref::<crane_notebook::NotebookError>(),
        Some(crane_notebook::NotebookError::NoUnexecutedCell)
    )
}

/// The exit code over several checks: the most serious failure, else 1 when any crash is
/// predicted, else 0.
fn overall(checked: &[Checked]) -> Result<Outcome, Failure> {
    let failed: Vec<&Failure> = checked
        .iter()
        .filter_map(|one| one.result.as_ref().err())
        .collect();
    if let Some(worst) = failed.iter().map(|failure| failure.code).max() {
        return Err(Failure {
            code: worst,
            error: anyhow!(
                "{} of {} notebooks could not be checked",
                failed.len(),
                checked.len()
            ),
        });
    }
    let reports = || checked.iter().filter_map(|one| one.result.as_ref().ok());
    if let Some(report) = reports().find(|report| report.verdict.crash) {
        return outcome_of(report);
    }
    reports()
        .map(outcome_of)
        .find(Result::is_err)
        .unwrap_or(Ok(Outcome::Success))
}

/// Prints every check in `format`; errors of single notebooks go to stderr in text form.
fn report_all(
    checked: &[Checked],
    format: CheckFormat,
    several: bool,
    ui: &Ui,
) -> Result<(), Failure> {
    match format {
        CheckFormat::Text => {
            for one in checked {
                match &one.result {
                    Ok(report) => {
                        if several {
                            outln!(
                                "{}",
                                ui.paint(&Style::new().bold(), &display(one.notebook.as_deref()))
                            );
                        }
                        out!("{}", render_text(report, ui));
                    }
                    Err(failure) => ui.error(&format!(
                        "{}: {}",
                        display(one.notebook.as_deref()),
                        failure.message()
                    )),
                }
            }
        }
        CheckFormat::Json => {
            let items: Vec<serde_json::Value> = checked.iter().map(formats::json_item).collect();
            let json = serde_json::to_string_pretty(&items).map_err(Failure::bad_input)?;
            outln!("{json}");
        }
        CheckFormat::Sarif => {
            let json = serde_json::to_string_pretty(&formats::sarif(checked))
                .map_err(Failure::bad_input)?;
            outln!("{json}");
        }
        CheckFormat::Github => out!("{}", formats::github(checked)),
        CheckFormat::Junit => out!("{}", formats::junit(checked)?),
    }
    Ok(())
}

pub fn display(path: Option<&Path>) -> String {
    path.map_or_else(|| "<code>".to_owned(), |path| path.display().to_string())
}

/// The notebooks named: files as they are, folders searched for `*.ipynb` (hidden folders
/// such as `.ipynb_checkpoints` skipped), in name order.
fn collect_notebooks(paths: &[PathBuf]) -> Result<Vec<PathBuf>, Failure> {
    let mut notebooks = Vec::new();
    for path in paths {
        if !path.is_dir() {
            notebooks.push(path.clone());
            continue;
        }
        let before = notebooks.len();
        walk(path, &mut notebooks).map_err(|err| {
            Failure::bad_input(anyhow!("cannot read folder {}: {err}", path.display()))
        })?;
        if notebooks.len() == before {
            return Err(Failure::bad_input(anyhow!(
                "{} holds no notebooks (*.ipynb)",
                path.display()
            )));
        }
        notebooks[before..].sort();
    }
    Ok(notebooks)
}

fn walk(dir: &Path, found: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let hidden = path
            .file_name()
            .is_some_and(|name| name.to_string_lossy().starts_with('.'));
        if hidden {
            continue;
        }
        if path.is_dir() {
            walk(&path, found)?;
        } else if path.extension().is_some_and(|ext| ext == "ipynb") {
            found.push(path);
        }
    }
    Ok(())
}

/// The human-readable report: verdict, the line in context, diagnosis, evidence, cost.
pub fn render_text(report: &CheckReport, ui: &Ui) -> String {
    let mut out = String::new();
    let verdict = &report.verdict;
    let label = report.target_cell.label();
    if verdict.crash {
        let exception = verdict.exception.as_deref().unwrap_or("an exception");
        out.push_str(&format!(
            "{} {label} will raise {}\n",
            ui.paint(&Style::new().red().bold(), "crash predicted:"),
            ui.paint(&Style::new().bold(), exception)
        ));
    } else {
        out.push_str(&format!(
            "{} {label}\n",
            ui.paint(&Style::new().green().bold(), "no crash predicted:")
        ));
    }
    if let Some(line) = verdict.line {
        out.push_str(&source_context(&report.target_cell.source, line, ui));
    }
    out.push_str(&format!("  why: {}\n", verdict.diagnosis));
    if let Some(rule) = report
        .findings
        .iter()
        .filter(|finding| verdict.crash && finding.crash)
        .find_map(|finding| finding.rule)
    {
        out.push_str(&format!(
            "  rule: {}; {}\n",
            rule.code(),
            formats::silence_hint(rule, verdict.line)
        ));
    }
    for overridden in &verdict.overridden {
        let rule = overridden
            .rule
            .map(|rule| format!(" {}", rule.code()))
            .unwrap_or_default();
        let claim = match (&overridden.exception, overridden.crash) {
            (Some(exception), true) => format!("{exception} predicted"),
            (None, true) => "a crash predicted".to_owned(),
            (_, false) => "no crash predicted".to_owned(),
        };
        out.push_str(&format!(
            "  overridden: {}{rule} ({claim}): {}\n",
            overridden.detector.label(),
            overridden.reason
        ));
    }
    let undecided = |finding: &Finding| finding.status.is_undecided();
    let evidence: Vec<&String> = report
        .findings
        .iter()
        .filter(|f| f.crash == verdict.crash && !undecided(f))
        .flat_map(|f| &f.evidence)
        .collect();
    if !evidence.is_empty() {
        out.push_str("  evidence:\n");
        for fact in evidence {
            out.push_str(&format!("    - {fact}\n"));
        }
    }
    for finding in report
        .findings
        .iter()
        .filter(|f| f.rule.is_some() || f.crash != verdict.crash || undecided(f))
    {
        let rule = finding
            .rule
            .map(|rule| format!("{} ", rule.code()))
            .unwrap_or_default();
        let detector = serde_json::to_value(finding.detector)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        // A detector that decided nothing says why (a refused or inconclusive dry run).
        if undecided(finding) {
            out.push_str(&format!(
                "  {detector}: {rule}{:?}: {}\n",
                finding.status, finding.diagnosis
            ));
            continue;
        }
        out.push_str(&format!(
            "  {detector}: {rule}{:?}, {} (confidence {:.2})\n",
            finding.status,
            if finding.crash { "crash" } else { "no crash" },
            finding.confidence
        ));
    }
    for silenced in &report.silenced {
        let finding = &silenced.finding;
        let rule = finding.rule.map(|rule| rule.code()).unwrap_or_default();
        let by = match silenced.by {
            SilencedBy::Line => "a `# crane: ignore` comment on its line",
            SilencedBy::Cell => "a `# crane: ignore-cell` comment",
            SilencedBy::Flag => "--ignore",
            SilencedBy::Config => "the configuration file's `ignore`",
        };
        let line = finding
            .line
            .map(|line| format!(" line {line},"))
            .unwrap_or_default();
        out.push_str(&format!(
            "  silenced: {rule}{line} by {by}: {}\n",
            finding.diagnosis
        ));
    }
    if let Some(gave_up) = &report.gave_up {
        if gave_up.is_empty() {
            out.push_str("  the rules' interpreter gave up nowhere in this cell\n");
        } else {
            out.push_str("  the rules' interpreter gave up at:\n");
            for (reason, count) in gave_up {
                out.push_str(&format!("    - {reason} ({count}x)\n"));
            }
        }
    }
    let t = &report.timings_ms;
    let mut cost = format!(
        "  cost: {} ms checking (facts {} ms, detectors {} ms); earlier cells {:.1} s",
        t.extract + t.detect,
        t.extract,
        t.detect,
        t.execute_prior as f64 / 1000.0
    );
    if let Some(llm) = &report.llm {
        cost.push_str(&format!(
            "; {} {}{} in / {} out tokens, {} ms{}",
            llm.model,
            if llm.tokens_estimated { "~" } else { "" },
            llm.input_tokens,
            llm.output_tokens,
            llm.latency_ms,
            llm.cost_usd
                .map(|usd| format!(", ${usd:.4}"))
                .unwrap_or_default()
        ));
        if llm.cached {
            cost.push_str(" (cached)");
        }
    }
    out.push_str(&cost);
    out.push('\n');
    out
}

/// Up to two lines around `line`, the target marked.
fn source_context(source: &str, line: u32, ui: &Ui) -> String {
    let line = line as usize;
    let lines: Vec<&str> = source.lines().collect();
    if line == 0 || line > lines.len() {
        return String::new();
    }
    let first = line.saturating_sub(2).max(1);
    let last = (line + 1).min(lines.len());
    let width = last.to_string().len();
    let mut out = String::new();
    for number in first..=last {
        let text = lines[number - 1];
        if number == line {
            out.push_str(&ui.paint(
                &Style::new().bold(),
                &format!("  > {number:>width$} | {text}\n"),
            ));
        } else {
            out.push_str(&format!("    {number:>width$} | {text}\n"));
        }
    }
    out
}

/// Have the replica import what a cell the kernel ran imported, so that a later cell the
/// kernel cannot fork for is judged without waiting for the imports.
pub(crate) async fn warm(replica: &mut crane_probe::replica::Replica, cell: &str, ui: &Ui) {
    let modules = crane_probe::replica::imported_modules(cell);
    if let Err(error) = replica.warm(&modules).await {
        ui.warning(&format!(
            "the replica could not import what the kernel imported: {error}"
        ));
    }
}
