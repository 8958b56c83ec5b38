//! The contract tables against the real libraries: every row has fixtures (`tests/contracts/`),
//! a cell that breaks the contract and one close to it that keeps it. Each fixture runs in
//! CPython for its truth, with crane's probe collecting the facts, so a fixture that does not
//! crash as it says fails the test as surely as a rule that misses it or fires on the clean one.
//! The fixture format is `kernel_fixtures`'.

mod kernel_fixtures;

use crane_detect::rules;

#[test]
fn every_contract_has_a_breaking_and_a_keeping_fixture() {
    let fixtures = kernel_fixtures::fixtures("contracts");
    let ids = rules::contract_ids();
    for id in &ids {
        let of = |crash: bool| {
            fixtures
                .iter()
                .any(|f| f.id == *id && f.crash.is_some() == crash)
        };
        assert!(
            of(true) && of(false),
            "contract {id} needs a crash and a clean fixture"
        );
    }
    for fixture in &fixtures {
        assert!(
            ids.contains(&fixture.id.as_str()),
            "{}: no contract {}",
            fixture.origin,
            fixture.id
        );
    }
}

#[test]
fn contracts_hold_in_the_real_libraries_and_the_rules_prove_them() {
    let fixtures = kernel_fixtures::fixtures("contracts");
    let truths = kernel_fixtures::truths(&fixtures, "torch,keras,sklearn,seaborn,statsmodels.api");
    let problems = kernel_fixtures::problems(&fixtures, &truths);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Every estimator method the table says raises `NotFittedError` unfitted does so in the real
/// library, and the rules prove it; fitted, the same call runs.
#[test]
fn methods_said_to_need_a_fit_raise_unfitted_in_the_real_library() {
    let data = "import numpy as np\nX = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 1.0], [3.0, 0.0], [4.0, 1.0], [5.0, 0.0], [6.0, 1.0], [7.0, 0.0]])\ny = np.array([0, 1, 0, 1, 0, 1, 0, 1])\n";
    let mut fixtures = Vec::new();
    for (module, class, method) in rules::raise_unfitted() {
        let call = match method {
            "score" => "est.score(X, y)",
            "inverse_transform" => "est.inverse_transform(est.transform(X))",
            _ => &format!("est.{method}(X)"),
        };
        let construct = format!("from {module} import {class}\nest = {class}()\n");
        for fitted in [false, true] {
            let setup = if fitted {
                format!("{construct}est.fit(X, y)\n")
            } else {
                construct.clone()
            };
            fixtures.push(kernel_fixtures::Fixture {
                id: format!("sklearn.{class}.{method}"),
                crash: (!fitted).then(|| "NotFittedError".to_owned()),
                proven: true,
                setup: vec![data.to_owned(), setup],
                target: call.to_owned(),
                origin: format!(
                    "{class}.{method} ({})",
                    if fitted { "fitted" } else { "unfitted" }
                ),
            });
        }
    }
    let truths = kernel_fixtures::truths(&fixtures, "sklearn");
    let problems = kernel_fixtures::problems(&fixtures, &truths);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
