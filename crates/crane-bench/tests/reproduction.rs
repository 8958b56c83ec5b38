//! The paper's figures, reproduced from the answers recorded in the JunoBench case files
//! (`shared/junobench/README.md`): majority of 5 answers, 148 cases.

mod common;

use crane_bench::{run, Report, Silent};

/// A row of the README's table, with the confusion counts behind it.
struct Expected {
    model: &'static str,
    config: &'static str,
    /// TP, FP, FN, TN.
    counts: (u64, u64, u64, u64),
    /// Precision, recall, F1, accuracy.
    metrics: [f64; 4],
}

const fn row(
    model: &'static str,
    config: &'static str,
    counts: (u64, u64, u64, u64),
    metrics: [f64; 4],
) -> Expected {
    Expected {
        model,
        config,
        counts,
        metrics,
    }
}

const EXPECTED: &[Expected] = &[
    row(
        "gpt_5",
        "code_only",
        (53, 12, 21, 62),
        [0.815, 0.716, 0.763, 0.777],
    ),
    row(
        "gpt_5",
        "with_runtime",
        (60, 17, 14, 57),
        [0.779, 0.811, 0.795, 0.791],
    ),
    row(
        "gemini_2_5_flash",
        "code_only",
        (59, 32, 15, 42),
        [0.648, 0.797, 0.715, 0.682],
    ),
    row(
        "gemini_2_5_flash",
        "with_runtime",
        (66, 30, 8, 44),
        [0.688, 0.892, 0.776, 0.743],
    ),
    row(
        "Qwen_2_5_32B_Instruct",
        "code_only",
        (46, 18, 28, 56),
        [0.719, 0.622, 0.667, 0.689],
    ),
    row(
        "Qwen_2_5_32B_Instruct",
        "with_runtime",
        (48, 8, 26, 66),
        [0.857, 0.649, 0.738, 0.770],
    ),
];

fn expected(model: &str, config: &str) -> &'static Expected {
    EXPECTED
        .iter()
        .find(|row| row.model == model && row.config == config)
        .unwrap()
}

fn assert_3_decimals(what: &str, actual: Option<f64>, expected: f64) {
    let actual = actual.unwrap_or_else(|| panic!("{what} is undefined"));
    assert_eq!(
        format!("{actual:.3}"),
        format!("{expected:.3}"),
        "{what}: {actual}"
    );
}

#[tokio::test]
async fn replayed_answers_give_the_papers_figures() {
    for model in ["gpt_5", "gemini_2_5_flash", "Qwen_2_5_32B_Instruct"] {
        let options = common::llm_options(model, "code_only,with_runtime");
        let report = run(&options, &Silent).await.unwrap();
        let Report::Comparison(comparison) = &report else {
            panic!("two configurations give a comparison");
        };
        assert_eq!(comparison.configs, ["code_only", "with_runtime"]);
        for run in &comparison.reports {
            let expected = expected(model, &run.info.config);
            let [precision, recall, f1, accuracy] = expected.metrics;
            let what = format!("{model} {}", run.info.config);
            let overall = &run.overall;
            assert_eq!(overall.n, 148, "{what}");
            assert_eq!(overall.errors, 0, "{what}");
            let c = overall.confusion;
            assert_eq!((c.tp, c.fp, c.fn_, c.tn), expected.counts, "{what}");
            assert_3_decimals(&format!("{what} precision"), overall.precision, precision);
            assert_3_decimals(&format!("{what} recall"), overall.recall, recall);
            assert_3_decimals(&format!("{what} F1"), overall.f1, f1);
            assert_3_decimals(&format!("{what} accuracy"), overall.accuracy, accuracy);
            assert_eq!(run.info.runs, 5);
            assert!(run.cases.iter().all(|case| case.votes.len() == 5), "{what}");
            assert!(run.cost.tokens_in > 0 && run.cost.tokens_out > 0, "{what}");
        }
        let difference = &comparison.differences[0];
        let delta_f1 = difference.overall.f1.unwrap();
        let f1 = |config: &str| expected(model, config).metrics[2];
        assert!(
            (delta_f1 - (f1("with_runtime") - f1("code_only"))).abs() < 0.002,
            "{model}: ΔF1 {delta_f1}"
        );
    }
}

#[tokio::test]
async fn the_issue_example_reproduces_gpt_5_with_runtime() {
    let options = common::llm_options("gpt_5", "with_runtime");
    let report = run(&options, &Silent).await.unwrap();
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["detector"], "llm");
    assert_eq!(json["config"], "with_runtime");
    assert_eq!(json["model"], "replay:gpt_5");
    let overall = &json["overall"];
    assert_eq!(overall["n"], 148);
    for (key, expected) in [
        ("precision", 0.779),
        ("recall", 0.811),
        ("f1", 0.795),
        ("accuracy", 0.791),
    ] {
        assert_3_decimals(key, overall[key].as_f64(), expected);
    }
    let cases = json["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 148);
    let case = cases
        .iter()
        .find(|case| case["id"] == "sklearn_1_reproduced")
        .unwrap();
    assert_eq!(case["expected"], true);
    assert_eq!(case["exception"], "TypeError");
    // Per group: the 7 JunoBench groups, 148 cases in all.
    let groups = json["by_group"].as_object().unwrap();
    assert_eq!(groups.len(), 7);
    let total: u64 = groups.values().map(|g| g["n"].as_u64().unwrap()).sum();
    assert_eq!(total, 148);
    assert_eq!(groups["NBspecific"]["n"], 26);
    let diagnosis = &json["diagnosis"];
    assert_eq!(diagnosis["method"]["kind"], "exception_class");
    assert_eq!(diagnosis["graded"], 60, "every true positive is graded");
}
