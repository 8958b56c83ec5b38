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
