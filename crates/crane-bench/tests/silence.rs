//! `--explain-silence`: where the rules gave up, counted over the crashes they were silent on.
//! Hand-made silent cases are a real JunoBench case (its executed cells and recorded facts)
//! with the crashing subscript put where the interpreter must give up.

mod common;

use std::path::Path;

use crane_bench::{run, BenchOptions, Detector, Silent};
use serde_json::Value;

const CASE: &str = "pandas_9_reproduced";
/// The case's crash: `df` has no such column.
const CRASH: &str = "gross = df[\"Total Gross (millions)\"]";

/// A copy of the real case under `id` with `target` as its target cell.
fn variant(dir: &Path, id: &str, target: &str) {
    let text = std::fs::read_to_string(common::junobench_cases().join(format!("{CASE}.json")))
        .expect("the development case");
    let mut case: Value = serde_json::from_str(&text).unwrap();
    case["id"] = Value::from(format!("{id}_reproduced"));
    case["pair"] = Value::from(id);
    case["target_cell"] = Value::from(target);
    std::fs::write(
        dir.join(format!("{id}_reproduced.json")),
        serde_json::to_vec(&case).unwrap(),
    )
    .unwrap();
}

fn options(dataset: &Path) -> BenchOptions {
    let mut options = BenchOptions::new(dataset, Detector::Rules);
    options.explain_silence = true;
    options
}

#[tokio::test]
async fn each_silent_crash_counts_the_reasons_its_interpreter_gave_up_at() {
    let dir = tempfile::tempdir().unwrap();
    // The interpreter cannot know what the environment holds, nor what a folder lists.
    variant(
        dir.path(),
        "pandas_9_if",
        &format!("if df.shape[0] > int(os.environ.get('LIMIT', '0')):\n    {CRASH}"),
    );
    variant(
        dir.path(),
        "pandas_9_loop",
        &format!("for name in os.listdir('data'):\n    {CRASH}"),
    );
    variant(
        dir.path(),
        "pandas_9_both",
        &format!("while len(df) > 0:\n    {CRASH}\n    break\nfor name in os.listdir('data'):\n    {CRASH}"),
    );
    // Proven: not silent, not counted, even though it gave up in the comprehension first.
    variant(
        dir.path(),
        "pandas_9_proven",
        &format!("sizes = [len(n) for n in os.listdir('data')]\n{CRASH}"),
    );
    let report = run(&options(dir.path()), &Silent).await.unwrap();
    let run = &report.reports()[0];
    assert_eq!(run.overall.confusion.tp, 1);
    assert_eq!(run.overall.confusion.fn_, 3);
    let silence = run.silence.as_ref().expect("--explain-silence");
    assert_eq!(silence.total(), 3);
    assert_eq!(silence.silent_crashes["pandas"], 3);
    let rows: Vec<(&str, &str, u64)> = silence
        .rows
        .iter()
        .map(|row| (row.reason.as_str(), row.library.as_str(), row.crashes))
        .collect();
    assert_eq!(
        rows,
        [
            ("loop over unknown items", "pandas", 2),
            ("if test not decided", "pandas", 1),
            ("while loop", "pandas", 1),
        ]
    );
    let proven = run
        .cases
        .iter()
        .find(|case| case.id == "pandas_9_proven_reproduced")
        .unwrap();
    assert_eq!(proven.gave_up, None);

    // Silencing the rule that proved the fourth makes it a silent crash too, at no give-up.
    let mut ignoring = options(dir.path());
    ignoring.ignore = [crane_detect::rules::RuleCode::MissingColumn].into();
    let report = crane_bench::run(&ignoring, &Silent).await.unwrap();
    let silence = report.reports()[0].silence.clone().unwrap();
    assert_eq!(silence.total(), 4);
    assert!(silence
        .rows
        .iter()
        .any(|row| row.reason == "comprehension over unknown items" && row.crashes == 1));
    assert_eq!(report.reports()[0].info.ignore, ["PD001"]);
}

#[tokio::test]
async fn over_the_development_cases_every_missed_crash_is_explained() {
    let report = run(&options(&common::junobench_cases()), &Silent)
        .await
        .unwrap();
    let run = &report.reports()[0];
    let silence = run.silence.as_ref().unwrap();
    assert_eq!(silence.total(), run.overall.confusion.fn_);
    for (library, silent) in &silence.silent_crashes {
        let reasons: u64 = silence
            .rows
            .iter()
            .filter(|row| &row.library == library)
            .map(|row| row.crashes)
            .sum();
        assert!(reasons >= *silent, "{library}: {reasons} < {silent}");
    }
    let by_reason: u64 = silence.by_reason.iter().map(|(_, n)| n).sum();
    let rows: u64 = silence.rows.iter().map(|row| row.crashes).sum();
    assert_eq!(by_reason, rows);
    // The text report carries the table.
    let text = crane_bench::render::text(&report);
    assert!(
        text.contains("Where the rules gave up (with_runtime)"),
        "{text}"
    );
    // Without the flag, no table and no aggregate.
    let plain = crane_bench::run(
        &BenchOptions::new(common::junobench_cases(), Detector::Rules),
        &Silent,
    )
    .await
    .unwrap();
    assert!(plain.reports()[0].silence.is_none());
    assert!(!crane_bench::render::text(&plain).contains("Where the rules gave up"));
}
