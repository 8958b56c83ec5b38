//! Live runs over a few runnable pairs of `bench/notebooks`: each notebook executed in a real
//! kernel up to its target, judged by the rules (with crane's probe) and by the dry run. Runs
//! that start kernels use a multi-threaded runtime, as the CLI does.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crane_bench::dataset::{self, DatasetKind};
use crane_bench::{run, BenchOptions, Detector, LiveOptions, Shard, Silent};
use crane_kernel::{KernelLaunch, KernelOrigin};
use crane_llm::test_server::{Reply, TestServer};
use crane_llm::{LlmConfig, ModelSpec};

const CASES: [&str; 3] = [
    "pandas_header_trailing_space",
    "pandas_str_accessor_on_int_zip",
    "nb_helper_cell_never_executed",
];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn python() -> PathBuf {
    if let Some(python) = std::env::var_os("CRANE_PYTHON").filter(|v| !v.is_empty()) {
        return PathBuf::from(python);
    }
    let python = repo().join(".venv/bin/python");
    assert!(
        python.exists(),
        "no project Python at {}; run `bash scripts/setup-python.sh` or set CRANE_PYTHON",
        python.display()
    );
    python
}

/// A runnable-pairs dataset holding a few cases of `bench/notebooks`.
fn small_dataset(into: &Path) {
    let source = repo().join("bench/notebooks");
    let manifest: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(source.join("manifest.json")).unwrap())
            .unwrap();
    let chosen: Vec<_> = manifest
        .into_iter()
        .filter(|entry| CASES.contains(&entry["case"].as_str().unwrap()))
        .collect();
    assert_eq!(chosen.len(), CASES.len());
    for case in CASES {
        let target = into.join(case);
        std::fs::create_dir_all(&target).unwrap();
        for file in std::fs::read_dir(source.join(case)).unwrap() {
            let file = file.unwrap().path();
            std::fs::copy(&file, target.join(file.file_name().unwrap())).unwrap();
        }
    }
    std::fs::write(
        into.join("manifest.json"),
        serde_json::to_string_pretty(&chosen).unwrap(),
    )
    .unwrap();
}

fn live_options(dataset: &Path, detector: Detector) -> BenchOptions {
    let mut options = BenchOptions::new(dataset, detector);
    options.kernel = Some(LiveOptions {
        launch: KernelLaunch::python(python(), KernelOrigin::CranePythonEnv),
        cell_timeout: Duration::from_secs(120),
    });
    options.jobs = 2;
    options
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runnable_pairs_are_executed_and_judged_live() {
    let dir = tempfile::tempdir().unwrap();
    small_dataset(dir.path());
    assert_eq!(
        dataset::detect(dir.path()).unwrap(),
        DatasetKind::RunnablePairs
    );

    // The dry run executes the target in a fork: it observes every labelled outcome.
    let report = run(&live_options(dir.path(), Detector::DryRun), &Silent)
        .await
        .unwrap();
    let dry = &report.reports()[0];
    assert_eq!(dry.overall.errors, 0, "{:#?}", dry.cases);
    assert_eq!(dry.overall.n, 6);
    assert_eq!(dry.overall.accuracy, Some(1.0), "{:#?}", dry.cases);
    for case in dry.cases.iter().filter(|case| case.expected) {
        assert_eq!(case.predicted_exception, case.exception, "{}", case.id);
        assert!(case.cost.runtime_ms.is_some());
    }
    assert_eq!(dry.diagnosis.grades["match"], 3);

    // The rules see the runtime facts the probe extracted from the live kernel.
    let report = run(&live_options(dir.path(), Detector::Rules), &Silent)
        .await
        .unwrap();
    let rules = &report.reports()[0];
    assert_eq!(rules.overall.errors, 0, "{:#?}", rules.cases);
    assert_eq!(rules.overall.n, 6);
    assert_eq!(rules.overall.confusion.fp, 0, "{:#?}", rules.cases);
    let header = rules
        .cases
        .iter()
        .find(|case| case.id == "pandas_header_trailing_space_buggy")
        .unwrap();
    assert_eq!(header.predicted, Some(true), "{header:#?}");
    assert_eq!(header.predicted_exception.as_deref(), Some("KeyError"));
    assert_eq!(rules.by_group["pandas"].n, 4);
    assert_eq!(rules.by_root_cause["NB specific"].n, 2);
}

#[tokio::test]
async fn replay_needs_recorded_cases() {
    let dir = tempfile::tempdir().unwrap();
    small_dataset(dir.path());
    let mut options = live_options(dir.path(), Detector::Llm);
    options.llm = Some(crane_llm::LlmConfig::new(
        crane_llm::ModelSpec::parse("replay:gpt_5").unwrap(),
    ));
    assert!(matches!(
        run(&options, &Silent).await,
        Err(crane_bench::BenchError::ReplayNeedsCases(_))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_prompts_carry_the_kernels_facts_and_api_docs() {
    let dir = tempfile::tempdir().unwrap();
    small_dataset(dir.path());
    let server = TestServer::start([]).unwrap().with_fallback(Reply::answer(
        r#"{"reasoning": "df has no column 'SalePrice': KeyError", "detection": true,
            "exception": "KeyError", "line": 1, "confidence": 0.9, "evidence": []}"#,
    ));
    let mut llm = LlmConfig::new(
        ModelSpec::parse(&format!("openai-compat:m@{}", server.base_url())).unwrap(),
    );
    llm.cache_dir = None;
    let mut options = live_options(dir.path(), Detector::Llm);
    options.llm = Some(llm);
    options.runs = Some(1);
    options.configs = crane_bench::parse_configs("code_only,with_api_docs").unwrap();
    // The middle third of the sorted ids: pandas_header_trailing_space, both variants; its
    // target calls np.log1p and DataFrame.drop.
    options.shard = Some(Shard { index: 2, count: 3 });
    let report = run(&options, &Silent).await.unwrap();
    for run in report.reports() {
        assert_eq!(run.overall.errors, 0, "{:#?}", run.cases);
        assert_eq!(run.overall.n, 2);
        assert_eq!(run.overall.confusion.tp, 1);
        assert_eq!(
            run.overall.confusion.fp, 1,
            "the scripted model always says crash"
        );
        assert_eq!(run.diagnosis.grades["match"], 1);
    }
    let prompts: Vec<String> = server
        .requests()
        .iter()
        .map(|request| request.json().unwrap().to_string())
        .collect();
    assert_eq!(prompts.len(), 4, "2 notebooks x 2 configurations");
    let with_docs: Vec<&String> = prompts
        .iter()
        .filter(|prompt| prompt.contains("# Relevant API documentation"))
        .collect();
    assert_eq!(with_docs.len(), 2);
    for prompt in with_docs {
        assert!(prompt.contains("# Current relevant runtime information"));
        assert!(
            prompt.contains("SalePrice "),
            "the probe listed the columns"
        );
        assert!(prompt.contains("log1p"), "numpy's documentation is shown");
    }
}

/// A run that fails part-way (here: a result cannot be cached) stops its other cases, and none
/// of their kernels outlives it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_run_leaves_no_kernel_running() {
    let dir = tempfile::tempdir().unwrap();
    small_dataset(dir.path());
    let cache = tempfile::tempdir().unwrap();
    let mut options = live_options(dir.path(), Detector::Rules);
    options.cache_dir = Some(cache.path().to_owned());
    // The first third of the sorted ids: nb_helper_cell_never_executed, both variants.
    options.shard = Some(Shard { index: 1, count: 3 });
    let first = run(&options, &Silent).await.unwrap();
    let ids: Vec<&str> = first.reports()[0]
        .cases
        .iter()
        .map(|case| case.id.as_str())
        .collect();
    assert_eq!(ids.len(), 2);
    let setups: Vec<PathBuf> = std::fs::read_dir(cache.path())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    let [setup] = setups.as_slice() else {
        panic!("one cache directory per setup: {setups:?}")
    };
    // The second case is judged again, and its result cannot be stored: a directory stands
    // where the cache puts it. The first case is cached, so later cases are running then.
    let entry = setup.join(format!("{}.json", ids[1]));
    std::fs::remove_file(&entry).unwrap();
    std::fs::create_dir(&entry).unwrap();
    std::fs::write(entry.join("keep"), "").unwrap();

    options.shard = None;
    let failed = run(&options, &Silent).await;
    assert!(
        matches!(failed, Err(crane_bench::BenchError::Cache(_))),
        "{failed:?}"
    );
    assert_eq!(kernels_working_in(dir.path()), Vec::<u32>::new());
}

/// Processes whose working directory is under `dir` (kernels start in their case's folder).
fn kernels_working_in(dir: &Path) -> Vec<u32> {
    let dir = dir.canonicalize().unwrap();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let cwd = std::fs::read_link(entry.path().join("cwd")).ok()?;
            cwd.starts_with(&dir).then_some(pid)
        })
        .collect()
}
