//! Reports as text for the terminal and as Markdown.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::metrics::{format_delta, format_ratio, Metrics};
use crate::report::{DiagnosisMethod, Latency, Report, RunReport};

/// A table rendered either with aligned columns or as Markdown.
pub(crate) struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub(crate) fn new(header: &[&str]) -> Table {
        Table {
            header: header.iter().map(|h| (*h).to_owned()).collect(),
            rows: Vec::new(),
        }
    }

    pub(crate) fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub(crate) fn markdown(&self) -> String {
        let mut out = String::new();
        let line = |cells: &[String]| format!("| {} |\n", cells.join(" | "));
        out.push_str(&line(&self.header));
        let rule: Vec<String> = self
            .header
            .iter()
            .enumerate()
            .map(|(i, _)| if i == 0 { "---" } else { "---:" }.to_owned())
            .collect();
        out.push_str(&line(&rule));
        for row in &self.rows {
            out.push_str(&line(row));
        }
        out
    }

    pub(crate) fn text(&self) -> String {
        let columns = self.header.len();
        let widths: Vec<usize> = (0..columns)
            .map(|i| {
                std::iter::once(&self.header)
                    .chain(&self.rows)
                    .map(|row| row.get(i).map_or(0, |cell| cell.chars().count()))
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = String::new();
        for row in std::iter::once(&self.header).chain(&self.rows) {
            let cells: Vec<String> = row
                .iter()
                .enumerate()
                .map(|(i, cell)| {
                    if i == 0 {
                        format!("{cell:<width$}", width = widths[i])
                    } else {
                        format!("{cell:>width$}", width = widths[i])
                    }
                })
                .collect();
            out.push_str(cells.join("  ").trim_end());
            out.push('\n');
        }
        out
    }
}

const METRIC_HEADER: [&str; 11] = [
    "",
    "n",
    "TP",
    "FP",
    "FN",
    "TN",
    "precision",
    "recall",
    "F1",
    "accuracy",
    "errors",
];

fn metric_cells(name: &str, metrics: &Metrics) -> Vec<String> {
    let c = metrics.confusion;
    vec![
        name.to_owned(),
        metrics.n.to_string(),
        c.tp.to_string(),
        c.fp.to_string(),
        c.fn_.to_string(),
        c.tn.to_string(),
        format_ratio(metrics.precision),
        format_ratio(metrics.recall),
        format_ratio(metrics.f1),
        format_ratio(metrics.accuracy),
        metrics.errors.to_string(),
    ]
}

fn metric_table(first_column: &str, rows: &BTreeMap<String, Metrics>) -> Table {
    let mut header = METRIC_HEADER;
    header[0] = first_column;
    let mut table = Table::new(&header);
    for (name, metrics) in rows {
        table.row(metric_cells(name, metrics));
    }
    table
}

/// One table per configuration side by side: a column per configuration, one metric.
fn side_by_side(
    report: &Report,
    first_column: &str,
    groups: impl Fn(&RunReport) -> &BTreeMap<String, Metrics>,
    metric: impl Fn(&Metrics) -> Option<f64>,
) -> Table {
    let reports = report.reports();
    let mut header = vec![first_column];
    header.extend(reports.iter().map(|r| r.info.config.as_str()));
    let mut table = Table::new(&header);
    let mut names: Vec<&String> = reports.iter().flat_map(|r| groups(r).keys()).collect();
    names.sort();
    names.dedup();
    for name in names {
        let mut row = vec![name.clone()];
        row.extend(
            reports
                .iter()
                .map(|r| format_ratio(groups(r).get(name).and_then(&metric))),
        );
        table.row(row);
    }
    table
}

pub(crate) fn title(report: &Report) -> String {
    let first = &report.reports()[0].info;
    let model = first
        .model
        .as_deref()
        .map(|model| format!(" ({model})"))
        .unwrap_or_default();
    let configs: Vec<&str> = report
        .reports()
        .iter()
        .map(|r| r.info.config.as_str())
        .collect();
    format!(
        "{}{model} on {} [{}], {}",
        first.detector,
        first.dataset,
        first.dataset_kind,
        configs.join(", ")
    )
}

fn overall_table(report: &Report) -> Table {
    let mut header = METRIC_HEADER;
    header[0] = "config";
    let mut table = Table::new(&header);
    for run in report.reports() {
        table.row(metric_cells(&run.info.config, &run.overall));
    }
    table
}

/// Each reproduced figure beside the paper's, for the configurations the paper measured.
fn paper_table(report: &Report) -> Option<Table> {
    let mut table = Table::new(&[
        "config",
        "precision",
        "paper",
        "recall",
        "paper",
        "F1",
        "paper",
        "accuracy",
        "paper",
    ]);
    let mut any = false;
    for run in report.reports() {
        let Some(paper) = crate::paper::figures_for(&run.info) else {
            continue;
        };
        any = true;
        let m = &run.overall;
        table.row(vec![
            run.info.config.clone(),
            format_ratio(m.precision),
            format!("{:.3}", paper.precision),
            format_ratio(m.recall),
            format!("{:.3}", paper.recall),
            format_ratio(m.f1),
            format!("{:.3}", paper.f1),
            format_ratio(m.accuracy),
            format!("{:.3}", paper.accuracy),
        ]);
    }
    any.then_some(table)
}

/// F1 over the recorded answers one at a time, beside the majority the tables score.
fn spread_lines(report: &Report) -> Vec<String> {
    report
        .reports()
        .iter()
        .filter_map(|run| {
            let spread = run.f1_spread()?;
            Some(format!(
                "{}: F1 over the {} answers per case taken one at a time ranges {:.3} to {:.3} (mean {:.3}, sd {:.3}); the tables score their majority",
                run.info.config, spread.runs, spread.min, spread.max, spread.mean, spread.sd
            ))
        })
        .collect()
}

/// The command line and commit that produced the report.
fn provenance(report: &Report) -> Vec<String> {
    let info = &report.reports()[0].info;
    let mut lines = Vec::new();
    if let Some(command) = &info.command_line {
        lines.push(format!("command: `{command}`"));
    }
    lines.push(format!(
        "commit: {}",
        info.commit
            .as_deref()
            .map_or_else(|| "unknown".to_owned(), |commit| format!("`{commit}`"))
    ));
    lines
}

fn differences_table(report: &Report) -> Option<Table> {
    let differences = report.differences();
    if differences.is_empty() {
        return None;
    }
    let mut table = Table::new(&[
        "config vs baseline",
        "Δ precision",
        "Δ recall",
        "Δ F1",
        "Δ accuracy",
        "newly right",
        "newly wrong",
    ]);
    for difference in differences {
        table.row(vec![
            format!("{} vs {}", difference.config, difference.baseline),
            format_delta(difference.overall.precision),
            format_delta(difference.overall.recall),
            format_delta(difference.overall.f1),
            format_delta(difference.overall.accuracy),
            difference.fixed.len().to_string(),
            difference.broken.len().to_string(),
        ]);
    }
    Some(table)
}

fn diagnosis_lines(run: &RunReport) -> String {
    let summary = &run.diagnosis;
    let grades: Vec<String> = summary
        .grades
        .iter()
        .map(|(grade, count)| format!("{grade} {count}"))
        .collect();
    let share = match summary.method {
        DiagnosisMethod::Judge { .. } => "correct",
        DiagnosisMethod::ExceptionClass => "matching",
    };
    format!(
        "{}: {} correctly detected crashes graded: {}; share {share} {}",
        summary.method,
        summary.graded,
        grades.join(", "),
        format_ratio(summary.correct_rate)
    )
}

fn latency(latency: Option<Latency>) -> String {
    latency.map_or_else(
        || "n/a".to_owned(),
        |l| {
            format!(
                "p50 {:.1} ms, p95 {:.1} ms, total {:.1} s",
                l.p50,
                l.p95,
                l.total / 1000.0
            )
        },
    )
}

fn cost_table(report: &Report) -> Table {
    let mut table = Table::new(&[
        "config",
        "tokens in",
        "tokens out",
        "LLM latency",
        "USD",
        "runtime extraction",
    ]);
    for run in report.reports() {
        let cost = &run.cost;
        table.row(vec![
            run.info.config.clone(),
            cost.tokens_in.to_string(),
            cost.tokens_out.to_string(),
            latency(cost.llm_latency_ms),
            cost.usd
                .map_or_else(|| "n/a".to_owned(), |usd| format!("{usd:.4}")),
            latency(cost.runtime_extraction_ms),
        ]);
    }
    table
}

/// The report for a terminal.
pub fn text(report: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}\n", title(report));
    out.push_str(&overall_table(report).text());
    for line in spread_lines(report) {
        let _ = writeln!(out, "{line}");
    }
    if let Some(table) = paper_table(report) {
        out.push_str("\nAgainst the paper (JunoBench development cases)\n");
        out.push_str(&table.text());
    }
    if let Some(table) = differences_table(report) {
        out.push('\n');
        out.push_str(&table.text());
    }
    let single = report.reports().len() == 1;
    if single {
        let run = &report.reports()[0];
        out.push('\n');
        out.push_str(&metric_table("group", &run.by_group).text());
        out.push('\n');
        out.push_str(&metric_table("root cause", &run.by_root_cause).text());
    } else {
        out.push_str("\nF1 per group\n");
        out.push_str(&side_by_side(report, "group", |r| &r.by_group, |m| m.f1).text());
        out.push_str("\nF1 per root cause\n");
        out.push_str(&side_by_side(report, "root cause", |r| &r.by_root_cause, |m| m.f1).text());
    }
    out.push_str("\nDiagnosis\n");
    for run in report.reports() {
        let _ = writeln!(out, "  {}: {}", run.info.config, diagnosis_lines(run));
    }
    for (heading, table) in silence_tables(report) {
        let _ = writeln!(out, "\n{heading}");
        out.push_str(&table.text());
    }
    out.push_str("\nCost\n");
    out.push_str(&cost_table(report).text());
    for run in report.reports() {
        for case in run.cases.iter().filter(|case| case.error.is_some()) {
            let _ = writeln!(
                out,
                "error: {} [{}]: {}",
                case.id,
                run.info.config,
                case.error.as_deref().unwrap_or_default()
            );
        }
    }
    out
}

/// The Markdown report; `charts` are image files beside it, with their captions.
pub fn markdown(report: &Report, charts: &[(String, String)]) -> String {
    let mut out = String::new();
    let first = &report.reports()[0].info;
    let _ = writeln!(out, "# crane bench: {}\n", title(report));
    let _ = writeln!(
        out,
        "Dataset `{}` ({}), detector `{}`{}, {} LLM answer(s) per case (majority vote), \
         crane {}.\n",
        first.dataset,
        first.dataset_kind,
        first.detector,
        first
            .model
            .as_deref()
            .map(|model| format!(" with `{model}`"))
            .unwrap_or_default(),
        first.runs,
        first.crane_version
    );
    for line in provenance(report) {
        let _ = writeln!(out, "- {line}");
    }
    out.push_str(
        "\nPositive = the cell crashes. A ratio whose denominator is 0 is shown as n/a. \
         Cases the detector could not judge are counted as errors, outside the confusion \
         matrix.\n\n## Overall\n\n",
    );
    out.push_str(&overall_table(report).markdown());
    let spread = spread_lines(report);
    if !spread.is_empty() {
        out.push('\n');
        for line in spread {
            let _ = writeln!(out, "{line}.");
        }
    }
    if let Some(table) = paper_table(report) {
        out.push_str(
            "\n## Against the paper\n\nThe paper's figures on the same 148 JunoBench \
             development cases (the majority of its five recorded answers per case).\n\n",
        );
        out.push_str(&table.markdown());
    }
    if let Some(table) = differences_table(report) {
        out.push_str("\n## Differences against the first configuration\n\n");
        out.push_str(&table.markdown());
        for difference in report.differences() {
            if !difference.fixed.is_empty() || !difference.broken.is_empty() {
                let _ = writeln!(
                    out,
                    "\n{} vs {}: newly right: {}; newly wrong: {}.",
                    difference.config,
                    difference.baseline,
                    list(&difference.fixed),
                    list(&difference.broken)
                );
            }
        }
    }
    for (file, caption) in charts {
        let _ = writeln!(out, "\n![{caption}]({file})");
    }
    for run in report.reports() {
        let _ = writeln!(out, "\n## Configuration `{}`\n", run.info.config);
        out.push_str("### Per group\n\n");
        out.push_str(&metric_table("group", &run.by_group).markdown());
        out.push_str("\n### Per library\n\n");
        out.push_str(&metric_table("library", &run.by_library).markdown());
        out.push_str("\n### Per root cause\n\n");
        out.push_str(&metric_table("root cause", &run.by_root_cause).markdown());
        let _ = writeln!(out, "\n### Diagnosis\n\n{}.", diagnosis_lines(run));
        let wrong: Vec<String> = run
            .cases
            .iter()
            .filter(|case| case.is_correct() == Some(false))
            .map(|case| {
                format!(
                    "`{}` ({})",
                    case.id,
                    if case.expected {
                        "missed crash"
                    } else {
                        "false alarm"
                    }
                )
            })
            .collect();
        if !wrong.is_empty() {
            let _ = writeln!(out, "\n### Wrong verdicts\n\n{}.", wrong.join(", "));
        }
        let errors: Vec<String> = run
            .cases
            .iter()
            .filter_map(|case| Some(format!("- `{}`: {}", case.id, case.error.as_deref()?)))
            .collect();
        if !errors.is_empty() {
            let _ = writeln!(out, "\n### Errors\n\n{}", errors.join("\n"));
        }
    }
    for (heading, table) in silence_tables(report) {
        let _ = writeln!(out, "\n## {heading}\n");
        out.push_str(&table.markdown());
    }
    out.push_str("\n## Cost\n\n");
    out.push_str(&cost_table(report).markdown());
    if first
        .model
        .as_deref()
        .is_some_and(|model| model.starts_with("replay:"))
    {
        out.push_str(
            "\nReplayed answers: tokens are o200k estimates of the paper's prompts and of the \
             recorded answers, priced at the recorded model's list price (its reasoning tokens \
             are not counted); latencies are those of replaying, not of the model.\n",
        );
    }
    out
}

/// `--explain-silence`: per configuration, where the rules gave up on the crashes they were
/// silent on, most crashes first.
fn silence_tables(report: &Report) -> Vec<(String, Table)> {
    report
        .reports()
        .iter()
        .filter_map(|run| {
            let silence = run.silence.as_ref()?;
            let mut table = Table::new(&["gave up at", "library", "silent crashes", "of"]);
            for row in &silence.rows {
                table.row(vec![
                    row.reason.clone(),
                    row.library.clone(),
                    row.crashes.to_string(),
                    silence
                        .silent_crashes
                        .get(&row.library)
                        .copied()
                        .unwrap_or_default()
                        .to_string(),
                ]);
            }
            let heading = format!(
                "Where the rules gave up ({}): {} crashes they were silent on; a crash counts once per reason",
                run.info.config,
                silence.total()
            );
            Some((heading, table))
        })
        .collect()
}

fn list(ids: &[String]) -> String {
    if ids.is_empty() {
        "none".to_owned()
    } else {
        ids.iter()
            .map(|id| format!("`{id}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::{case, info};

    #[test]
    fn text_and_markdown_show_metrics_and_differences() {
        let report = Report::from_reports(vec![
            RunReport::new(
                info("code_only"),
                vec![
                    case("a", "pandas", true, Some(false)),
                    case("b", "numpy", false, None),
                ],
            ),
            RunReport::new(
                info("with_runtime"),
                vec![
                    case("a", "pandas", true, Some(true)),
                    case("b", "numpy", false, Some(false)),
                ],
            ),
        ])
        .unwrap();
        let text = text(&report);
        assert!(text.contains("with_runtime vs code_only"), "{text}");
        assert!(text.contains("error: b [code_only]: failed"), "{text}");
        let markdown = markdown(&report, &[("f1.svg".to_owned(), "F1".to_owned())]);
        assert!(
            markdown.contains("| with_runtime | 2 | 1 | 0 | 0 | 1 | 1.000 |"),
            "{markdown}"
        );
        assert!(markdown.contains("![F1](f1.svg)"));
        assert!(markdown.contains("newly right: `a`"));
        assert!(markdown.contains("- commit: unknown"), "{markdown}");
        assert!(
            markdown.contains(
                "| with_runtime | 1.000 | 0.779 | 1.000 | 0.811 | 1.000 | 0.795 | 1.000 | 0.791 |"
            ),
            "the paper's figures beside crane's: {markdown}"
        );
    }

    #[test]
    fn reports_record_provenance_and_the_spread_over_answers() {
        let mut cases = vec![
            case("a", "pandas", true, Some(true)),
            case("b", "pandas", false, Some(false)),
            case("c", "numpy", true, Some(true)),
        ];
        // Answers one at a time: F1 1.0, then 0.667 (c missed), then 0.8 (b false alarm).
        cases[0].votes = vec![Some(true), Some(true), Some(true)];
        cases[1].votes = vec![Some(false), Some(false), Some(true)];
        cases[2].votes = vec![Some(true), Some(false), Some(true)];
        let mut report =
            Report::from_reports(vec![RunReport::new(info("with_runtime"), cases)]).unwrap();
        report.set_provenance("crane bench cases --detector llm", Some("abc123"));
        let markdown = markdown(&report, &[]);
        assert!(markdown.contains("- command: `crane bench cases --detector llm`"));
        assert!(markdown.contains("- commit: `abc123`"));
        assert!(
            markdown.contains("ranges 0.667 to 1.000 (mean 0.822, sd 0.137)"),
            "{markdown}"
        );
    }
}
