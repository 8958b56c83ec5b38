//! `crane bench` reports: provenance, the paper's figures beside crane's, the spread over the
//! recorded answers, and the charts.

mod common;

use common::{crane, stderr};

#[test]
fn a_bench_report_records_its_command_commit_paper_figures_and_charts() {
    let cases = crane_runtime::junobench::default_cases_dir()
        .display()
        .to_string();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let output = crane(&[
        "bench",
        &cases,
        "--detector",
        "llm",
        "--llm",
        "replay:gpt_5",
        "--config",
        "code_only,with_runtime",
        "--out",
        out,
        "--quiet",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let markdown = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(
        markdown.contains("- command: `crane bench ")
            && markdown.contains("--config code_only,with_runtime --out"),
        "{markdown}"
    );
    assert!(markdown.contains("- commit: "), "{markdown}");
    assert!(
        markdown.contains(
            "| with_runtime | 0.779 | 0.779 | 0.811 | 0.811 | 0.795 | 0.795 | 0.791 | 0.791 |"
        ),
        "reproduced figures beside the paper's: {markdown}"
    );
    assert!(
        markdown
            .contains("with_runtime: F1 over the 5 answers per case taken one at a time ranges"),
        "{markdown}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("report.json")).unwrap())
            .unwrap();
    assert!(json["reports"][0]["command_line"]
        .as_str()
        .unwrap()
        .starts_with("crane bench"));
    for chart in [
        "metrics-by-group.svg",
        "metrics-by-root-cause.svg",
        "confusion.svg",
    ] {
        let svg = std::fs::read_to_string(dir.path().join(chart)).unwrap();
        assert!(
            svg.contains("llm (replay:gpt_5) on "),
            "{chart} has no title"
        );
        assert!(markdown.contains(chart), "{chart} is not in the report");
    }
}

#[test]
fn a_replayed_configuration_without_recorded_answers_is_refused_at_once() {
    let cases = crane_runtime::junobench::default_cases_dir()
        .display()
        .to_string();
    let output = crane(&[
        "bench",
        &cases,
        "--detector",
        "llm",
        "--llm",
        "replay:gpt_5",
        "--config",
        "with_runtime-S",
    ]);
    assert_eq!(output.status.code(), Some(2));
    let err = stderr(&output);
    assert!(err.contains("code_only and with_runtime only"), "{err}");
    assert_eq!(
        err.lines().count(),
        1,
        "one message, not one per case: {err}"
    );
}
