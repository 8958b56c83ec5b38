//! NB005 call-signature-mismatch on facts without signatures: the compiled-in snapshot supplies
//! the library's signature for a callee known by its import path or its receiver's type, when
//! the facts record the library's version and it has the snapshot's major.minor.

mod common;

use common::{assert_silent as silent, check as run};
use crane_detect::rules::RuleCode;
use serde_json::{json, Value};

#[track_caller]
fn fires(cell: &str, facts: Value, executed: &[&str]) -> String {
    let findings = run(cell, facts, executed);
    let finding = findings
        .first()
        .unwrap_or_else(|| panic!("NB005 did not fire on:\n{cell}"));
    assert_eq!(
        finding.rule,
        Some(RuleCode::CallSignatureMismatch),
        "{finding:#?}"
    );
    assert_eq!(finding.exception.as_deref(), Some("TypeError"));
    finding.diagnosis.clone()
}

fn frame() -> Value {
    json!({"type": "pandas.core.frame.DataFrame", "kind": "dataframe", "S": {"shape": [3, 1]},
        "R": {"columns": [{"name": "a", "dtype": "int64"}]}, "V": {}})
}

/// The versions the snapshot was read from, as a case would record them.
fn snapshot_versions() -> Value {
    let snapshot = crane_detect::snapshot::snapshot().expect("the snapshot reads");
    let mut versions = serde_json::Map::new();
    for library in ["pandas", "sklearn", "numpy"] {
        versions.insert(library.into(), json!(snapshot.version(library).unwrap()));
    }
    Value::Object(versions)
}

fn pandas_facts(libraries: Value) -> Value {
    json!({
        "variables": {
            "pd": {"type": "builtins.module", "kind": "pymodule", "R": {"module": "pandas"}},
            "df": frame(),
            "other": frame(),
        },
        "libraries": libraries,
    })
}

const IMPORT_PANDAS: &[&str] =
    &["import pandas as pd\ndf = pd.DataFrame({'a': [1, 2, 3]})\nother = df"];

#[test]
fn a_misspelt_keyword_of_a_library_function_is_a_type_error() {
    let diagnosis = fires(
        "df2 = pd.read_csv('data.csv', sepp=';')",
        pandas_facts(snapshot_versions()),
        IMPORT_PANDAS,
    );
    assert_eq!(
        diagnosis,
        "`pd.read_csv(...)` raises TypeError: read_csv() got an unexpected keyword argument 'sepp'"
    );
    silent(
        "df2 = pd.read_csv('data.csv', sep=';')",
        pandas_facts(snapshot_versions()),
        IMPORT_PANDAS,
    );
}

#[test]
fn the_snapshot_is_used_only_for_the_same_major_and_minor_version() {
    let cell = "pd.read_csv('data.csv', sepp=';')";
    let ours = crane_detect::snapshot::snapshot()
        .unwrap()
        .version("pandas")
        .unwrap()
        .to_owned();
    let same = format!("{}.99", crane_detect::snapshot::major_minor(&ours));
    fires(cell, pandas_facts(json!({"pandas": same})), IMPORT_PANDAS);
    silent(
        cell,
        pandas_facts(json!({"pandas": "1.5.3"})),
        IMPORT_PANDAS,
    );
}

#[test]
fn calls_with_splats_or_of_rebound_names_are_not_judged() {
    let facts = || pandas_facts(snapshot_versions());
    silent(
        "args = ['x.csv']\npd.read_csv(*args, sepp=';')",
        facts(),
        IMPORT_PANDAS,
    );
    silent(
        "kw = {'sepp': ';'}\npd.read_csv('x.csv', **kw)",
        facts(),
        IMPORT_PANDAS,
    );
    let rebound = ["import pandas as pd\npd.read_csv = lambda *a, **k: None"];
    silent("pd.read_csv('x.csv', sepp=';')", facts(), &rebound);
    silent(
        "from pandas import *\nread_csv('x.csv', sepp=';')",
        facts(),
        IMPORT_PANDAS,
    );
}

#[test]
fn methods_bind_with_their_instance_and_wrappers_are_left_alone() {
    let facts = || pandas_facts(snapshot_versions());
    let diagnosis = fires("df.merge(other, onn='a')", facts(), IMPORT_PANDAS);
    assert!(
        diagnosis.ends_with("DataFrame.merge() got an unexpected keyword argument 'onn'"),
        "{diagnosis}"
    );
    silent("df.merge(other, on='a')", facts(), IMPORT_PANDAS);
    // `self` counts among the positional arguments, as in Python's message.
    let too_many = fires("df.merge(other, 'inner', 'a', None, None, False, False, False, ('x', 'y'), True, False, None, 1)", facts(), IMPORT_PANDAS);
    assert!(
        too_many.contains("positional arguments but 14 were given"),
        "{too_many}"
    );
    // pandas' deprecate_nonkeyword_arguments accepts `df.mean(0)` with a warning.
    silent("df.mean(0, True)", facts(), IMPORT_PANDAS);
}

#[test]
fn constructors_and_signature_bind_wrappers_have_their_own_messages() {
    let facts = json!({"variables": {
        "X": {"type": "numpy.ndarray", "kind": "ndarray", "S": {"shape": [10, 2]}, "R": {"dtype": "float64"}},
        "y": {"type": "numpy.ndarray", "kind": "ndarray", "S": {"shape": [10]}, "R": {"dtype": "int64"}},
    }, "libraries": snapshot_versions()});
    let executed = ["import numpy as np\nfrom sklearn.model_selection import train_test_split\nfrom sklearn.linear_model import LogisticRegression\nX = np.zeros((10, 2)); y = np.zeros(10)"];
    let split = fires(
        "X_train, X_test, y_train, y_test = train_test_split(X, y, test_sizee=0.2)",
        facts.clone(),
        &executed,
    );
    assert_eq!(
        split,
        "`train_test_split(...)` raises TypeError: got an unexpected keyword argument 'test_sizee'"
    );
    silent(
        "parts = train_test_split(X, y, test_size=0.2)",
        facts.clone(),
        &executed,
    );
    let init = fires(
        "model = LogisticRegression('l2', 1.0)",
        facts.clone(),
        &executed,
    );
    assert!(
        init.ends_with(
            "LogisticRegression.__init__() takes from 1 to 2 positional arguments but 3 were given"
        ),
        "{init}"
    );
    silent("model = LogisticRegression(C=1.0)", facts, &executed);
}

#[test]
fn a_signature_the_probe_refused_keeps_the_rule_silent() {
    let mut facts = pandas_facts(snapshot_versions());
    facts["variables"]["pd.read_csv"] = json!({"type": "builtins.function", "kind": "function",
        "R": {"call_signature_unknown": "a wrapper (__wrapped__): it may accept what its signature does not show"}});
    silent("pd.read_csv('data.csv', sepp=';')", facts, IMPORT_PANDAS);
}

#[test]
fn a_function_reached_through_another_library_needs_both_versions() {
    let snapshot = crane_detect::snapshot::snapshot().unwrap();
    let executed = ["from statsmodels.datasets.utils import read_csv"];
    let cell = "frame = read_csv('data.csv', sepp=';')";
    let statsmodels = snapshot.version("statsmodels").unwrap();
    let pandas = snapshot.version("pandas").unwrap();
    silent(
        cell,
        json!({"variables": {}, "libraries": {"statsmodels": statsmodels}}),
        &executed,
    );
    fires(
        cell,
        json!({"variables": {}, "libraries": {"statsmodels": statsmodels, "pandas": pandas}}),
        &executed,
    );
}

#[test]
fn methods_of_objects_made_in_the_cell_are_not_judged_by_the_snapshot() {
    silent(
        "left = df.dropna()\nleft.merge(other, onn='a')",
        pandas_facts(snapshot_versions()),
        IMPORT_PANDAS,
    );
}
