//! `crane check`: predict whether a cell will crash, and explain why.

use std::path::PathBuf;
use std::time::Instant;

use console::Style;
use crane_detect::{Finding, Verdict};
use crane_runtime::RuntimeInfo;
use serde::Serialize;

use crate::cli::{CheckArgs, DetectorChoice, OutputFormat};
use crate::commands::pipeline::{self, DetectorFailure, Judged, LlmUse, Target};
use crate::exit::{Failure, Outcome};
use crate::ui::{out, outln, Ui};

/// `crane check --format json`: documented in docs/cli.md; fields are only ever added.
#[derive(Debug, Serialize)]
pub struct CheckReport {
    pub notebook: Option<PathBuf>,
    pub target_cell: Target,
    pub verdict: Verdict,
    pub findings: Vec<Finding>,
    pub runtime_info: RuntimeInfo,
    pub timings_ms: Timings,
    pub llm: Option<LlmUse>,
    /// Detectors that failed; the verdict comes from the others.
    pub detector_failures: Vec<DetectorFailure>,
}

#[derive(Debug, Serialize)]
pub struct Timings {
    pub execute_prior: u64,
    pub extract: u64,
    pub detect: u64,
    /// Everything, including starting the kernel and executing earlier cells.
    pub total: u64,
}

pub async fn run(args: CheckArgs, ui: &Ui) -> Result<Outcome, Failure> {
    let started = Instant::now();
    let start_dir = args
        .source
        .notebook
        .as_deref()
        .map(crate::commands::kernel::notebook_dir)
        .unwrap_or_else(|| PathBuf::from("."));
    let llm = pipeline::llm_config(&args.detect, &start_dir)?;
    if llm.is_none()
        && args.detect.detector == DetectorChoice::Auto
        && args.format == OutputFormat::Text
    {
        ui.note("LLM detector off (rules only); add one with --llm MODEL, CRANE_LLM or crane.toml");
    }

    let want_api_docs = pipeline::wants_api_docs(&args.detect, llm.as_ref())?;
    let mut prepared = pipeline::prepare(&args.source, ui).await?;
    let result = async {
        let gathered = pipeline::gather(
            &mut prepared.session,
            &prepared.target,
            &prepared.prior_cells,
            &prepared.prior_indices,
            want_api_docs,
            None,
        )
        .await?;
        let judged = pipeline::judge(
            &mut prepared.session,
            &args.detect,
            llm.as_ref(),
            &prepared.target,
            &prepared.prior_cells,
            &gathered,
        )
        .await?;
        Ok::<_, Failure>((gathered, judged))
    }
    .await;
    let closed = prepared.session.close().await;
    let (gathered, judged) = result?;
    closed.map_err(Failure::kernel)?;

    let detection = match judged {
        Judged::PromptShown(prompt) => {
            outln!("{prompt}");
            return Ok(Outcome::Success);
        }
        Judged::Detection(detection) => detection,
    };
    for warning in &detection.warnings {
        ui.note(warning);
    }
    let report = CheckReport {
        notebook: prepared.notebook,
        target_cell: prepared.target,
        verdict: detection.verdict,
        findings: detection.findings,
        runtime_info: gathered.runtime,
        timings_ms: Timings {
            execute_prior: prepared.execute_prior.as_millis() as u64,
            extract: gathered.extract.as_millis() as u64,
            detect: detection.detect.as_millis() as u64,
            total: started.elapsed().as_millis() as u64,
        },
        llm: detection.llm,
        detector_failures: detection.failures,
    };
    match args.format {
        OutputFormat::Json => {
            let json = serde_json::to_string_pretty(&report).map_err(Failure::bad_input)?;
            outln!("{json}");
        }
        OutputFormat::Text => out!("{}", render_text(&report, ui)),
    }
    if report.verdict.crash {
        Ok(Outcome::CrashPredicted)
    } else if !report.detector_failures.is_empty() {
        Err(Failure::detector(anyhow::anyhow!(
            "no crash predicted, but not every detector could judge the cell (see the warnings)"
        )))
    } else {
        Ok(Outcome::Success)
    }
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
    let evidence: Vec<&String> = report
        .findings
        .iter()
        .filter(|f| f.crash == verdict.crash)
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
        .filter(|f| f.rule.is_some() || f.crash != verdict.crash)
    {
        let rule = finding
            .rule
            .map(|rule| format!("{} ", rule.code()))
            .unwrap_or_default();
        out.push_str(&format!(
            "  {}: {rule}{:?}, {} (confidence {:.2})\n",
            serde_json::to_value(finding.detector)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            finding.status,
            if finding.crash { "crash" } else { "no crash" },
            finding.confidence
        ));
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
