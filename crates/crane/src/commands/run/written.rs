//! What `crane run` writes into the notebook beside the cells' own outputs, as papermill
//! does: the error banner where the run stopped (or a cell was skipped), each cell's crane
//! metadata, a held cell's predicted crash as its error output, and outputs cut to size.

use super::*;

/// Where a run ended early, for the banner at the top of the written notebook.
pub(super) enum StopPoint {
    Held(usize, Verdict),
    Crashed(usize, String),
}

/// The tag of the banner cells crane adds when a run stops (papermill's error-banner
/// convention, under crane's own tag); a later run removes them first.
const BANNER_TAG: &str = "crane-error-cell-tag";

const BANNER_STYLE: &str =
    "style=\"color:red; font-family:Helvetica Neue, Helvetica, Arial, sans-serif; font-size:2em;\"";

fn banner(source: String) -> NewCell {
    let mut metadata = Map::new();
    metadata.insert("tags".into(), json!([BANNER_TAG]));
    NewCell {
        kind: CellKind::Markdown,
        source,
        metadata,
    }
}

pub(super) fn remove_banners(notebook: &mut Notebook) -> Result<(), crane_notebook::NotebookError> {
    while let Some(position) = notebook.position_of_tagged(BANNER_TAG) {
        notebook.remove_cell(position)?;
    }
    Ok(())
}

/// A first markdown cell saying where and why the run stopped, linking to a marker cell just
/// above the cell in question.
pub(super) fn add_banners(
    notebook: &mut Notebook,
    point: &StopPoint,
) -> Result<(), crane_notebook::NotebookError> {
    let label = |index: usize| {
        notebook
            .code_cell(index)
            .map_or_else(|| format!("cell {index}"), |cell| cell.label())
    };
    let (index, headline, marker) = match point {
        StopPoint::Held(index, verdict) => (
            *index,
            format!(
                "crane predicted {} at '<a href=\"#crane-error-cell\">{}</a>' and stopped before it; the cells above it ran.",
                verdict.exception.as_deref().unwrap_or("a crash"),
                html_escape(&label(*index))
            ),
            format!(
                "crane stopped here, before a predicted crash: {}",
                verdict.diagnosis
            ),
        ),
        StopPoint::Crashed(index, summary) => (
            *index,
            format!(
                "An exception was encountered at '<a href=\"#crane-error-cell\">{}</a>': {summary}.",
                html_escape(&label(*index))
            ),
            "Execution using crane encountered an exception here and stopped:".to_owned(),
        ),
    };
    let Some(position) = notebook.code_cell(index).map(|cell| cell.position) else {
        return Ok(());
    };
    notebook.insert_cell(
        position,
        banner(format!(
            "<span id=\"crane-error-cell\" {BANNER_STYLE}>{}</span>",
            html_escape(&marker)
        )),
    )?;
    notebook.insert_cell(0, banner(format!("<span {BANNER_STYLE}>{headline}</span>")))
}

/// With `--on-predicted-crash skip` the run goes on past the cells it held back: a first
/// markdown cell lists them, so the output says at its top what did not run.
pub(super) fn add_skipped_banner(
    notebook: &mut Notebook,
    records: &[CellRecord],
) -> Result<(), crane_notebook::NotebookError> {
    let held: Vec<String> = records
        .iter()
        .filter(|record| record.fate == CellFate::Held)
        .map(|record| {
            let exception = record
                .verdict
                .as_ref()
                .and_then(|verdict| verdict.exception.as_deref())
                .unwrap_or("a crash");
            let label = notebook
                .code_cell(record.cell)
                .map_or_else(|| format!("cell {}", record.cell), |cell| cell.label());
            format!("{label} ({exception})")
        })
        .collect();
    if held.is_empty() {
        return Ok(());
    }
    notebook.insert_cell(
        0,
        banner(format!(
            "<span {BANNER_STYLE}>crane skipped {} predicted to crash: {}.</span>",
            if held.len() == 1 { "a cell" } else { "cells" },
            html_escape(&held.join(", "))
        )),
    )
}

fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A cell's `metadata.crane`: the verdict, what crane did with it, and the timings.
pub(super) fn cell_metadata(record: &CellRecord, args: &RunArgs) -> Value {
    let mut metadata = json!({
        "verdict": record.verdict,
        "fate": record.fate,
        "on_predicted_crash": format!("{:?}", args.on_predicted_crash).to_lowercase(),
        "check_ms": record.check_ms,
        "execute_ms": record.execute_ms,
    });
    if let (Some(rule), Some(verdict)) = (record.rule, &record.verdict) {
        metadata["rule"] = json!(rule.code());
        metadata["silence"] = json!(formats::silence_hint(rule, verdict.line));
    }
    if !record.silenced.is_empty() {
        metadata["silenced"] = json!(record.silenced);
    }
    if let Some(cut) = &record.outputs_cut {
        metadata["outputs_cut"] = json!(cut);
    }
    if let Some(dry_run) = &record.dry_run {
        metadata["dry_run"] = json!(dry_run);
    }
    metadata
}

/// A visible, clearly marked output on a cell crane did not run.
pub(super) fn predicted_crash_output(
    verdict: &Verdict,
    rule: Option<RuleCode>,
    policy: OnPredictedCrash,
) -> Value {
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
            "[crane] {action}: predicted {}{line}{}. {}{}\n",
            verdict.exception.as_deref().unwrap_or("crash"),
            rule.map(|rule| format!(" ({})", rule.code()))
                .unwrap_or_default(),
            verdict.diagnosis,
            rule.map(|rule| format!("\nTo run it, {}.", formats::silence_hint(rule, verdict.line)))
                .unwrap_or_default()
        ),
    })
}

/// Writes a cell's outputs; what the limits left out is marked where it was cut (at the end
/// of the cut stream, and after the outputs for rich outputs left out) and returned.
pub(super) fn store_outputs(
    notebook: &mut Notebook,
    index: usize,
    execution: &Execution,
    limits: OutputLimits,
) -> Option<OutputsCut> {
    let mut outputs: Vec<Value> = execution
        .outputs
        .iter()
        .filter_map(|output| serde_json::to_value(output).ok())
        .collect();
    let dropped = execution.dropped;
    let cut = (!dropped.is_nothing()).then(|| mark_cuts(&mut outputs, &dropped, limits));
    let count = execution.reply().and_then(|reply| reply.execution_count);
    let _ = notebook.set_execution(index, count, outputs);
    cut
}

fn mark_cuts(outputs: &mut Vec<Value>, dropped: &Dropped, limits: OutputLimits) -> OutputsCut {
    let limit = limits.stream_bytes as u64;
    for stream in [StreamName::Stdout, StreamName::Stderr] {
        let bytes = dropped.stream(stream);
        if bytes == 0 {
            continue;
        }
        let name = match stream {
            StreamName::Stdout => "stdout",
            StreamName::Stderr => "stderr",
        };
        let marker = format!(
            "[crane] {name} cut here: {bytes} more bytes were not kept (--max-output-bytes {limit})\n"
        );
        let last = outputs
            .iter_mut()
            .rev()
            .find(|output| output["output_type"] == "stream" && output["name"] == name)
            .and_then(|output| output.get_mut("text"));
        match last {
            Some(Value::String(text)) => {
                if !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str(&marker);
            }
            _ => outputs.push(json!({"output_type": "stream", "name": name, "text": marker})),
        }
    }
    if dropped.outputs > 0 {
        outputs.push(json!({
            "output_type": "stream",
            "name": "stderr",
            "text": format!(
                "[crane] {} rich output(s) of {} bytes not kept (--max-output-bytes {limit})\n",
                dropped.outputs, dropped.output_bytes
            ),
        }));
    }
    OutputsCut {
        limit,
        stdout_bytes: dropped.stdout_bytes,
        stderr_bytes: dropped.stderr_bytes,
        rich_outputs: dropped.outputs,
        rich_output_bytes: dropped.output_bytes,
    }
}
