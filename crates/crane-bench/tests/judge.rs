//! Diagnosis grading by an LLM judge with the paper's rubric, against a scripted local server
//! speaking the OpenAI-compatible protocol.

mod common;

use crane_bench::report::DiagnosisMethod;
use crane_bench::{run, Shard, Silent};
use crane_llm::test_server::{Reply, TestServer};
use crane_llm::{LlmConfig, ModelSpec};

#[tokio::test]
async fn the_judge_grades_every_detected_crash() {
    let server = TestServer::start([Reply::answer(
        r#"{"reasoning": "correct: same missing column", "detection": true}"#,
    )])
    .unwrap()
    .with_fallback(Reply::answer(
        r#"{"reasoning": "Partially correct - names the call, not the cause", "detection": true}"#,
    ));
    let mut judge = LlmConfig::new(
        ModelSpec::parse(&format!("openai-compat:judge-model@{}", server.base_url())).unwrap(),
    );
    judge.cache_dir = None;
    let mut options = common::llm_options("gpt_5", "with_runtime");
    options.shard = Some(Shard { index: 1, count: 6 });
    options.judge = Some(judge);
    let report = run(&options, &Silent).await.unwrap();
    let run = &report.reports()[0];

    let true_positives = run.overall.confusion.tp;
    assert!(true_positives >= 2, "the shard has detected crashes");
    let summary = &run.diagnosis;
    assert!(matches!(
        &summary.method,
        DiagnosisMethod::Judge { model } if model.contains("judge-model")
    ));
    assert_eq!(summary.graded, true_positives);
    assert_eq!(summary.grades["correct"], 1);
    assert_eq!(summary.grades["partially_correct"], true_positives - 1);
    assert_eq!(summary.correct_rate, Some(1.0 / true_positives as f64));

    let requests = server.requests();
    assert_eq!(
        requests.len() as u64,
        true_positives,
        "one judge call per detected crash"
    );
    let graded_case = run
        .cases
        .iter()
        .find(|case| case.expected && case.predicted == Some(true))
        .unwrap();
    let loaded = crane_bench::dataset::load(&common::junobench_cases()).unwrap();
    let ground_truth = loaded
        .cases
        .iter()
        .find(|case| case.id == graded_case.id)
        .and_then(|case| case.labels.diagnosis.clone())
        .unwrap();
    let sees_ground_truth = requests.iter().any(|request| {
        strings(&request.json().unwrap()).iter().any(|text| {
            text.contains("# Ground-truth diagnosis") && text.contains(ground_truth.trim())
        })
    });
    assert!(sees_ground_truth, "the judge sees the ground truth");
}

fn strings(value: &serde_json::Value) -> Vec<String> {
    match value {
        serde_json::Value::String(text) => vec![text.clone()],
        serde_json::Value::Array(items) => items.iter().flat_map(strings).collect(),
        serde_json::Value::Object(map) => map.values().flat_map(strings).collect(),
        _ => Vec::new(),
    }
}
