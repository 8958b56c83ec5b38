//! Offline runs over the JunoBench cases: dataset detection, sharding and merging, the result
//! cache, the rules and hybrid detectors, reports on disk.

mod common;

use crane_bench::dataset::{self, DatasetKind};
use crane_bench::{
    merge, merge_files, run, write_outputs, BenchError, BenchOptions, Detector, Report, Shard,
    Silent,
};

#[test]
fn the_case_directory_is_detected_as_offline_cases() {
    let cases = common::junobench_cases();
    assert_eq!(dataset::detect(&cases).unwrap(), DatasetKind::OfflineCases);
    let loaded = dataset::load(&cases).unwrap();
    assert_eq!(loaded.cases.len(), 148);
    let ids: Vec<&str> = loaded.cases.iter().map(|case| case.id.as_str()).collect();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted);
    let crashing = loaded.cases.iter().filter(|case| case.labels.crash).count();
    assert_eq!(crashing, 74);
    let case = loaded
        .cases
        .iter()
        .find(|case| case.id == "sklearn_1_fixed")
        .unwrap();
    assert_eq!(case.labels.library, "sklearn");
    assert_eq!(case.labels.root_cause, "API misuse");
    assert_eq!(case.labels.exception, None, "fixed cases have no exception");
}

#[test]
fn other_directories_are_refused() {
    let empty = tempfile::tempdir().unwrap();
    assert!(matches!(
        dataset::detect(empty.path()),
        Err(dataset::DatasetError::Unrecognized(_))
    ));
    assert!(matches!(
        dataset::detect(&empty.path().join("absent")),
        Err(dataset::DatasetError::NotFound(_))
    ));
}

#[tokio::test]
async fn shards_merge_into_the_unsharded_report() {
    let whole = run(
        &common::llm_options("gemini_2_5_flash", "with_runtime,-RT"),
        &Silent,
    )
    .await
    .unwrap();
    let out = tempfile::tempdir().unwrap();
    let mut paths = Vec::new();
    let mut sizes = Vec::new();
    for index in [3, 1, 2] {
        let mut options = common::llm_options("gemini_2_5_flash", "with_runtime,-RT");
        options.shard = Some(Shard { index, count: 3 });
        options.out = Some(out.path().to_owned());
        let part = run(&options, &Silent).await.unwrap();
        write_outputs(&part, out.path()).unwrap();
        sizes.push(part.reports()[0].cases.len());
        paths.push(out.path().join(format!("report.shard-{index}-of-3.json")));
        assert!(out
            .path()
            .join(format!("report.shard-{index}-of-3.md"))
            .is_file());
    }
    assert_eq!(sizes.iter().sum::<usize>(), 148);
    assert!(
        sizes.iter().all(|size| (49..=50).contains(size)),
        "{sizes:?}"
    );
    let merged = merge_files(&paths).unwrap();
    assert_eq!(strip_timings(merged), strip_timings(whole));
    assert!(
        merge_files(&paths[..2]).is_err(),
        "a missing shard is refused"
    );
}

/// Wall times differ from run to run; everything else must be equal.
fn strip_timings(report: Report) -> Vec<serde_json::Value> {
    report
        .into_reports()
        .into_iter()
        .map(|mut run| {
            for case in &mut run.cases {
                case.cost.total_ms = 0.0;
                case.cost.llm_ms = None;
            }
            let mut json = serde_json::to_value(run).unwrap();
            json["cost"]["llm_latency_ms"] = serde_json::Value::Null;
            json["cost"]["case_ms"] = serde_json::Value::Null;
            json
        })
        .collect()
}

#[tokio::test]
async fn results_are_cached_per_case_and_reused() {
    let out = tempfile::tempdir().unwrap();
    let mut options = common::llm_options("Qwen_2_5_32B_Instruct", "with_runtime");
    options.shard = Some(Shard { index: 1, count: 8 });
    options.out = Some(out.path().to_owned());
    let first = run(&options, &Silent).await.unwrap();
    let cache_dirs: Vec<_> = std::fs::read_dir(out.path().join("cache"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    assert_eq!(cache_dirs.len(), 1);
    let entries = std::fs::read_dir(&cache_dirs[0]).unwrap().count();
    assert_eq!(entries, first.reports()[0].cases.len());

    // A cached result is what the next run reports, even where the detector would now say
    // otherwise: tamper with one entry to see it come back.
    let entry_path = std::fs::read_dir(&cache_dirs[0])
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut entry: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&entry_path).unwrap()).unwrap();
    let id = entry["result"]["id"].as_str().unwrap().to_owned();
    let flipped = !entry["result"]["predicted"].as_bool().unwrap();
    entry["result"]["predicted"] = flipped.into();
    std::fs::write(&entry_path, entry.to_string()).unwrap();
    let second = run(&options, &Silent).await.unwrap();
    let case = second.reports()[0]
        .cases
        .iter()
        .find(|case| case.id == id)
        .unwrap();
    assert_eq!(case.predicted, Some(flipped));

    // Another configuration has its own cache.
    options.configs = crane_bench::parse_configs("code_only").unwrap();
    run(&options, &Silent).await.unwrap();
    assert_eq!(
        std::fs::read_dir(out.path().join("cache")).unwrap().count(),
        2
    );
}

#[tokio::test]
async fn rules_and_hybrid_run_offline_and_write_reports() {
    let out = tempfile::tempdir().unwrap();
    let mut options = BenchOptions::new(common::junobench_cases(), Detector::Rules);
    options.configs = crane_bench::parse_configs("code_only,with_runtime,-S,-R,-V").unwrap();
    options.out = Some(out.path().to_owned());
    options.jobs = 2;
    let report = run(&options, &Silent).await.unwrap();
    write_outputs(&report, out.path()).unwrap();
    let configs: Vec<&str> = report
        .reports()
        .iter()
        .map(|r| r.info.config.as_str())
        .collect();
    assert_eq!(
        configs,
        [
            "code_only",
            "with_runtime",
            "with_runtime-S",
            "with_runtime-R",
            "with_runtime-V"
        ]
    );
    assert_eq!(report.differences().len(), 4);
    for run in report.reports() {
        assert_eq!(run.overall.n + run.overall.errors, 148);
        assert_eq!(run.cost.tokens_in, 0, "rules use no LLM");
    }
    for file in [
        "report.md",
        "report.json",
        "metrics-by-group.svg",
        "confusion.svg",
    ] {
        assert!(out.path().join(file).is_file(), "{file} missing");
    }
    let markdown = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    assert!(markdown.contains("## Differences against the first configuration"));
    let json: Report =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("report.json")).unwrap())
            .unwrap();
    assert_eq!(json.reports().len(), 5);

    let mut hybrid = BenchOptions::new(common::junobench_cases(), Detector::Hybrid);
    assert!(matches!(
        run(&hybrid, &Silent).await,
        Err(BenchError::NeedsModel(Detector::Hybrid))
    ));
    hybrid.llm = Some(common::replay("gpt_5"));
    let hybrid = run(&hybrid, &Silent).await.unwrap();
    let hybrid = &hybrid.reports()[0];
    assert_eq!(hybrid.overall.n, 148);
    let rules = &report.reports()[1];
    // A rule can only turn an LLM "no crash" into "crash": hybrid flags at least what the LLM
    // flags where the rules proved something.
    for (case, rule_case) in hybrid.cases.iter().zip(&rules.cases) {
        if rule_case.predicted == Some(true) {
            assert_eq!(case.predicted, Some(true), "{}", case.id);
        }
    }
}

#[tokio::test]
async fn replay_votes_over_at_most_the_recorded_answers() {
    let mut options = common::llm_options("gpt_5", "with_runtime");
    options.runs = Some(6);
    assert!(matches!(
        run(&options, &Silent).await,
        Err(BenchError::TooManyRuns(6))
    ));
    options.runs = Some(1);
    options.shard = Some(Shard {
        index: 1,
        count: 10,
    });
    let report = run(&options, &Silent).await.unwrap();
    let run = &report.reports()[0];
    assert_eq!(run.info.runs, 1);
    assert!(run.cases.iter().all(|case| case.votes.len() == 1));
}

#[tokio::test]
async fn dry_run_cannot_judge_recorded_cases() {
    let options = BenchOptions::new(common::junobench_cases(), Detector::DryRun);
    assert!(matches!(
        run(&options, &Silent).await,
        Err(BenchError::DryRunOffline)
    ));
}

#[test]
fn merge_needs_parts() {
    assert!(merge(Vec::new()).is_err());
}
