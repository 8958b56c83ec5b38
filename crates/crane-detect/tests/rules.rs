//! Each rule on cells written for it: a positive fixture (the rule fires, with the expected
//! line) and a negative one (a close variant that does not crash, or lacks the facts).

mod common;

use crane_detect::rules::{self, CheckContext, ExecutedCells, RuleCode};
use crane_detect::{Finding, FindingStatus};
use crane_runtime::RuntimeInfo;
use serde_json::{json, Value};

fn run(cell: &str, variables: Value, executed: &[&str]) -> Vec<Finding> {
    common::check(cell, json!({ "variables": variables }), executed)
}

#[track_caller]
fn fires(code: &str, line: u32, cell: &str, variables: Value, executed: &[&str]) -> Finding {
    let findings = run(cell, variables, executed);
    let finding = findings
        .first()
        .unwrap_or_else(|| panic!("{code} did not fire on:\n{cell}"));
    assert_eq!(
        finding.rule,
        Some(code.parse::<RuleCode>().unwrap()),
        "{finding:#?}"
    );
    assert_eq!(finding.line, Some(line), "{finding:#?}");
    assert_eq!(finding.status, FindingStatus::Proven);
    assert!(finding.crash);
    assert!(!finding.evidence.is_empty(), "{finding:#?}");
    finding.clone()
}

#[track_caller]
fn silent(cell: &str, variables: Value, executed: &[&str]) {
    common::assert_silent(cell, json!({ "variables": variables }), executed);
}

use common::{array, frame};

fn module(name: &str) -> Value {
    json!({"type": "builtins.module", "kind": "pymodule", "R": {"module": name}})
}

fn estimator(class: &str, fitted: bool, n_features: Option<u64>) -> Value {
    let mut facts = json!({
        "type": format!("sklearn.linear_model.{class}"),
        "kind": "estimator",
        "S": {},
        "R": {"estimator": class},
        "V": {"fitted": fitted}
    });
    if let Some(n) = n_features {
        facts["S"]["n_features_in"] = json!(n);
    }
    facts
}

const IMPORTS: &str = "import numpy as np\nimport pandas as pd\nimport matplotlib.pyplot as plt";

// NB001 undefined-name

#[test]
fn undefined_name_fires_when_no_cell_binds_it() {
    fires(
        "NB001",
        2,
        "x = 1\nprint(scaler.mean_)",
        json!({}),
        &["import numpy as np"],
    );
}

#[test]
fn undefined_name_fires_after_del_in_the_cell() {
    fires(
        "NB001",
        2,
        "del data\nprint(data)",
        json!({"data": {"type": "builtins.list", "kind": "list"}}),
        &["data = [1]"],
    );
}

#[test]
fn undefined_name_silent_when_an_executed_cell_binds_it() {
    silent(
        "print(scaler)",
        json!({}),
        &["from sklearn.preprocessing import StandardScaler\nscaler = StandardScaler()"],
    );
}

#[test]
fn undefined_name_silent_after_a_star_import_or_in_a_branch() {
    silent("print(scaler)", json!({}), &["from helpers import *"]);
    silent("if False:\n    print(scaler)", json!({}), &[]);
    silent(
        "try:\n    print(scaler)\nexcept NameError:\n    pass",
        json!({}),
        &[],
    );
}

// NB002, NB003

#[test]
fn missing_module_attribute_fires_on_absent_fact() {
    let facts = json!({
        "np": module("numpy"),
        "np.matrixmul": {"type": "", "kind": "absent", "R": {"owner_type": "module"}}
    });
    fires(
        "NB002",
        1,
        "c = np.matrixmul(a, b)",
        facts,
        &["import numpy as np"],
    );
}

#[test]
fn missing_module_attribute_silent_when_present() {
    let facts =
        json!({"np": module("numpy"), "np.matmul": {"type": "numpy.ufunc", "kind": "builtin"}});
    silent(
        "c = np.matmul(a, b)",
        facts,
        &["import numpy as np\na = b = np.ones(2)"],
    );
}

#[test]
fn missing_attribute_fires_for_ndarray_method_that_does_not_exist() {
    fires(
        "NB003",
        2,
        "x = 1\narr.append(4)",
        json!({"arr": array(&[3], "int64")}),
        &["arr = np.ones(3)"],
    );
}

#[test]
fn missing_attribute_fires_for_series_reshape() {
    let facts = json!({"df": frame(&[("Amount", "float64")], 10)});
    fires(
        "NB003",
        1,
        "v = df['Amount'].reshape(-1, 1)",
        facts,
        &["df = pd.read_csv('x')"],
    );
}

#[test]
fn missing_attribute_silent_for_existing_methods() {
    let facts = json!({"df": frame(&[("Amount", "float64")], 10), "arr": array(&[3], "int64")});
    silent(
        "v = df['Amount'].values.reshape(-1, 1)\narr.tolist()",
        facts,
        &["df = 1\narr = 2"],
    );
}

// PD001-PD008

#[test]
fn missing_column_fires_for_subscripts() {
    let facts = json!({"df": frame(&[("a", "int64"), ("b", "object")], 5)});
    fires("PD001", 1, "df['c'].mean()", facts.clone(), &["df = 1"]);
    fires("PD001", 1, "df[['a', 'z']]", facts.clone(), &["df = 1"]);
    fires("PD001", 1, "df.loc[:, 'z']", facts, &["df = 1"]);
}

#[test]
fn missing_column_follows_drops_in_the_cell() {
    let facts = json!({"df": frame(&[("a", "int64"), ("b", "object")], 5)});
    fires(
        "PD001",
        2,
        "X = df.drop('a', axis=1)\nX['a']",
        facts,
        &["df = 1"],
    );
}

#[test]
fn missing_column_silent_when_the_cell_adds_it_or_in_a_branch() {
    let facts = json!({"df": frame(&[("a", "int64"), ("b", "object")], 5)});
    silent(
        "df['c'] = df['a'] * 2\nprint(df['c'])",
        facts.clone(),
        &["df = 1"],
    );
    silent(
        "if 'c' in df.columns:\n    df['c']",
        facts.clone(),
        &["df = 1"],
    );
    silent("df = load()\ndf['c']", facts, &["df = 1\ndef load(): pass"]);
}

#[test]
fn missing_column_lenient_with_integer_names() {
    let facts = json!({"df": frame(&[("0", "int64"), ("1", "int64")], 5)});
    silent("df[0]", facts, &["df = 1"]);
}

#[test]
fn missing_column_attribute_fires() {
    let facts = json!({"df": frame(&[("price", "float64")], 5)});
    fires("PD002", 1, "df.cost.mean()", facts, &["df = 1"]);
}

#[test]
fn missing_column_attribute_silent_for_columns_and_attributes() {
    let facts = json!({"df": frame(&[("price", "float64")], 5)});
    silent("df.price.mean()\ndf.shape", facts, &["df = 1"]);
}

#[test]
fn drop_missing_column_fires() {
    let facts = json!({"df": frame(&[("a", "int64"), ("b", "int64")], 5)});
    fires(
        "PD003",
        1,
        "df = df.drop(['c'], axis=1)",
        facts.clone(),
        &["df = 1"],
    );
    fires(
        "PD003",
        2,
        "df.drop(columns='a', inplace=True)\ndf.drop(columns='a')",
        facts,
        &["df = 1"],
    );
}

#[test]
fn drop_missing_column_silent_with_errors_ignore_or_rows() {
    let facts = json!({"df": frame(&[("a", "int64"), ("b", "int64")], 5)});
    silent(
        "df.drop(columns='c', errors='ignore')\ndf.drop(3)",
        facts,
        &["df = 1"],
    );
}

#[test]
fn missing_column_argument_fires() {
    let facts = json!({"df": frame(&[("region", "object"), ("emission", "float64")], 5)});
    fires(
        "PD004",
        1,
        "df.groupby('country').mean()",
        facts.clone(),
        &["df = pd.read_csv('x')"],
    );
    fires(
        "PD004",
        1,
        "df.sort_values(by='%percent emission')",
        facts.clone(),
        &["df = pd.read_csv('x')"],
    );
    fires(
        "PD004",
        1,
        "df.set_index('date')",
        facts.clone(),
        &["df = pd.read_csv('x')"],
    );
    fires(
        "PD004",
        1,
        "df.groupby('region').agg({'cost': 'sum'})",
        facts,
        &["df = pd.read_csv('x')"],
    );
}

#[test]
fn missing_column_argument_silent_when_the_label_may_be_an_index_level() {
    let mut facts = frame(&[("emission", "float64")], 5);
    facts["R"].as_object_mut().unwrap().remove("index");
    silent(
        "df.groupby('region').mean()",
        json!({"df": facts}),
        &["df = pd.read_csv('x', index_col='region')"],
    );
}

#[test]
fn missing_merge_key_fires() {
    let facts = json!({
        "left": frame(&[("id", "int64"), ("x", "int64")], 5),
        "right": frame(&[("key", "int64"), ("y", "int64")], 5)
    });
    fires(
        "PD005",
        1,
        "left.merge(right, on='id')",
        facts.clone(),
        &["left = right = 1"],
    );
    fires(
        "PD005",
        1,
        "pd.merge(left, right, left_on='id', right_on='id')",
        facts,
        &["import pandas as pd\nleft = right = 1"],
    );
}

#[test]
fn missing_merge_key_silent_when_keys_exist() {
    let facts = json!({
        "left": frame(&[("id", "int64"), ("x", "int64")], 5),
        "right": frame(&[("key", "int64"), ("y", "int64")], 5)
    });
    silent(
        "left.merge(right, left_on='id', right_on='key')",
        facts,
        &["left = right = 1"],
    );
}

#[test]
fn accessor_wrong_dtype_fires() {
    let facts = json!({"df": frame(&[("when", "int64"), ("name", "float64")], 5)});
    fires("PD006", 1, "df['when'].dt.year", facts.clone(), &["df = 1"]);
    fires("PD006", 1, "df['name'].str.lower()", facts, &["df = 1"]);
}

#[test]
fn accessor_wrong_dtype_silent_for_fitting_dtypes() {
    let facts = json!({"df": frame(&[("when", "datetime64[ns]"), ("name", "object")], 5)});
    silent(
        "df['when'].dt.year\ndf['name'].str.lower()",
        facts,
        &["df = 1"],
    );
}

#[test]
fn join_overlapping_columns_fires() {
    let facts = json!({
        "left": frame(&[("id", "int64"), ("x", "int64")], 5),
        "right": frame(&[("id", "int64"), ("y", "int64")], 5)
    });
    fires("PD007", 1, "left.join(right)", facts, &["left = right = 1"]);
}

#[test]
fn join_overlapping_columns_silent_with_suffixes() {
    let facts = json!({
        "left": frame(&[("id", "int64"), ("x", "int64")], 5),
        "right": frame(&[("id", "int64"), ("y", "int64")], 5)
    });
    silent(
        "left.join(right, rsuffix='_r')",
        facts,
        &["left = right = 1"],
    );
}

#[test]
fn iloc_out_of_bounds_fires() {
    let facts = json!({"df": frame(&[("a", "int64"), ("b", "int64")], 3)});
    fires("PD008", 1, "df.iloc[5]", facts.clone(), &["df = 1"]);
    fires("PD008", 1, "df.iloc[:, 2]", facts, &["df = 1"]);
}

#[test]
fn iloc_out_of_bounds_silent_inside_bounds_or_after_filtering() {
    let facts = json!({"df": frame(&[("a", "int64"), ("b", "int64")], 3)});
    silent(
        "df.iloc[-3]\ndf.iloc[:, 1]\ndf[df['a'] > 0].iloc[5]",
        facts,
        &["df = 1"],
    );
}

// NP001-NP007

#[test]
fn reshape_size_mismatch_fires() {
    fires(
        "NP001",
        1,
        "x.reshape(3, -1)",
        json!({"x": array(&[10], "float64")}),
        &["x = 1"],
    );
    fires(
        "NP001",
        1,
        "np.reshape(x, (4, 4))",
        json!({"x": array(&[10], "float64")}),
        &["import numpy as np\nx = 1"],
    );
}

#[test]
fn reshape_size_mismatch_silent_when_it_divides() {
    silent(
        "y = x.reshape(-1, 1)\ny.reshape(5, 2)",
        json!({"x": array(&[10], "float64")}),
        &["x = 1"],
    );
}

#[test]
fn matmul_dimension_mismatch_fires() {
    let facts = json!({"a": array(&[3, 4], "float64"), "b": array(&[3, 4], "float64")});
    fires("NP002", 1, "c = a @ b", facts.clone(), &["a = b = 1"]);
    fires(
        "NP002",
        1,
        "c = np.dot(a, b)",
        facts,
        &["import numpy as np\na = b = 1"],
    );
}

#[test]
fn matmul_dimension_mismatch_silent_after_transpose() {
    let facts = json!({"a": array(&[3, 4], "float64"), "b": array(&[3, 4], "float64")});
    silent("c = a @ b.T\nd = c @ a", facts, &["a = b = 1"]);
}

#[test]
fn concatenate_dimension_mismatch_fires() {
    let facts = json!({"a": array(&[3, 4], "float64"), "b": array(&[3, 5], "float64")});
    fires(
        "NP003",
        1,
        "np.vstack([a, b])",
        facts.clone(),
        &["import numpy as np\na = b = 1"],
    );
    fires(
        "NP003",
        1,
        "np.concatenate((a, b), axis=0)",
        facts,
        &["import numpy as np\na = b = 1"],
    );
}

#[test]
fn concatenate_dimension_mismatch_silent_on_the_matching_axis() {
    let facts = json!({"a": array(&[3, 4], "float64"), "b": array(&[3, 5], "float64")});
    silent(
        "np.hstack([a, b])\nnp.concatenate([a, b], axis=1)",
        facts,
        &["import numpy as np\na = b = 1"],
    );
}

#[test]
fn index_out_of_bounds_fires() {
    let facts = json!({"x": array(&[3, 4], "float64"), "y": array(&[6], "int64")});
    fires("NP004", 1, "x[:, 4]", facts.clone(), &["x = y = 1"]);
    fires("NP004", 1, "y[:, 1]", facts, &["x = y = 1"]);
}

#[test]
fn index_out_of_bounds_silent_inside_bounds() {
    let facts = json!({"x": array(&[3, 4], "float64")});
    silent("x[:, 3]\nx[-3, 0]\nx[None, :, 1]", facts, &["x = 1"]);
}

#[test]
fn index_out_of_bounds_fires_for_a_counter_of_every_pass() {
    let columns: Vec<(String, &str)> = (0..17).map(|i| (format!("c{i}"), "int64")).collect();
    let columns: Vec<(&str, &str)> = columns.iter().map(|(n, d)| (n.as_str(), *d)).collect();
    let facts = json!({"df": frame(&columns, 10)});
    let executed = &["import matplotlib.pyplot as plt\nimport seaborn as sns\ndf = 1"];
    fires(
        "NP004",
        5,
        "fig, ax = plt.subplots(ncols=7, nrows=2)\nindex = 0\nax = ax.flatten()\nfor col, value in df.items():\n    sns.boxplot(y=col, data=df, ax=ax[index])\n    index += 1",
        facts.clone(),
        executed,
    );
    fires(
        "NP004",
        4,
        "x = np.zeros((5, 2))\nk = 1\nfor name in ['a', 'b', 'c', 'd', 'e']:\n    print(x[k])\n    k += 1",
        json!({}),
        &["import numpy as np"],
    );
}

#[test]
fn index_out_of_bounds_silent_for_counters_that_fit_or_may_skip() {
    let columns: Vec<(String, &str)> = (0..14).map(|i| (format!("c{i}"), "int64")).collect();
    let columns: Vec<(&str, &str)> = columns.iter().map(|(n, d)| (n.as_str(), *d)).collect();
    let executed = &["import matplotlib.pyplot as plt\nimport seaborn as sns\ndf = 1"];
    silent(
        "fig, ax = plt.subplots(ncols=7, nrows=2)\nindex = 0\nax = ax.flatten()\nfor col, value in df.items():\n    sns.boxplot(y=col, data=df, ax=ax[index])\n    index += 1",
        json!({"df": frame(&columns, 10)}),
        executed,
    );
    for cell in [
        // The counter moves only on some passes, or the passes are not all known.
        "x = np.zeros((5, 2))\nk = 0\nfor name in ['a', 'b', 'c', 'd', 'e', 'f']:\n    if name == 'a':\n        continue\n    print(x[k])\n    k += 1",
        "x = np.zeros((5, 2))\nk = 0\nfor name in ['a', 'b', 'c', 'd', 'e', 'f']:\n    print(x[k])\n    k += 1\n    if name == 'c':\n        k = 0",
        "x = np.zeros((5, 2))\nk = 0\nfor name in ['a', 'b', 'c', 'd', 'e', 'f']:\n    print(x[k])\n    if name != 'c':\n        k += 1",
        "x = np.zeros((5, 2))\nk = 0\nfor name in ['a', 'b', 'c', 'd', 'e', *more]:\n    print(x[k])\n    k += 1",
    ] {
        silent(cell, json!({}), &["import numpy as np\nmore = []"]);
    }
}

#[test]
fn broadcast_mismatch_fires() {
    let facts = json!({"a": array(&[68], "float64"), "b": array(&[272], "float64")});
    fires("NP005", 1, "sse = sum((a - b) ** 2)", facts, &["a = b = 1"]);
}

#[test]
fn broadcast_mismatch_silent_for_broadcastable_shapes() {
    let facts = json!({"a": array(&[3, 4], "float64"), "b": array(&[4], "float64"), "c": array(&[3, 1], "float64")});
    silent("a + b\na * c\na - 1", facts, &["a = b = c = 1"]);
}

#[test]
fn axis_out_of_bounds_fires() {
    let facts = json!({"y": array(&[6], "int64")});
    fires(
        "NP006",
        1,
        "np.argmax(y, axis=1)",
        facts.clone(),
        &["import numpy as np\ny = 1"],
    );
    fires("NP006", 1, "y.sum(axis=1)", facts, &["y = 1"]);
}

#[test]
fn axis_out_of_bounds_silent_inside_dimensions() {
    let facts = json!({"y": array(&[6, 2], "int64")});
    silent(
        "np.argmax(y, axis=1)\ny.sum(axis=-2)\nnp.expand_dims(y, axis=2)",
        facts,
        &["import numpy as np\ny = 1"],
    );
}

#[test]
fn string_index_on_array_fires() {
    fires(
        "NP007",
        1,
        "t = train['price']",
        json!({"train": array(&[10, 1], "float64")}),
        &["train = 1"],
    );
}

#[test]
fn string_index_on_array_silent_for_structured_arrays() {
    silent(
        "t = rec['price']",
        json!({"rec": array(&[10], "[('price', '<f8')]")}),
        &["rec = 1"],
    );
}

#[test]
fn savetxt_dimensions_fires() {
    fires(
        "NP008",
        1,
        "np.savetxt('images.txt', images, delimiter=',', fmt='%d')",
        json!({"images": array(&[1, 20, 32, 32, 3], "float32")}),
        &["import numpy as np\nimages = 1"],
    );
    fires(
        "NP008",
        2,
        "flat = images.reshape(20, 32, -1)\nnp.savetxt(fname='a.txt', X=flat)",
        json!({"images": array(&[20, 32, 32, 3], "float32")}),
        &["import numpy as np\nimages = 1"],
    );
}

#[test]
fn savetxt_dimensions_silent_for_rows_and_tables() {
    let facts = json!({"images": array(&[1, 20, 32, 32, 3], "float32")});
    let executed = &["import numpy as np\nimages = 1"];
    silent(
        "np.savetxt('images.txt', images.reshape(20, -1), delimiter=',')",
        facts.clone(),
        executed,
    );
    silent("np.save('images.npy', images)", facts, executed);
    silent(
        "np.savetxt('v.txt', v)",
        json!({"v": array(&[20], "float64")}),
        &["import numpy as np\nv = 1"],
    );
}

#[test]
fn array_as_sequence_index_fires() {
    let facts = json!({"labels": array(&[50000, 1], "uint8")});
    fires(
        "NP009",
        3,
        "names = 'airplane automobile bird'.split()\nfor i in range(25):\n    print(names[labels[i]])",
        facts.clone(),
        &["labels = 1"],
    );
    fires(
        "NP009",
        1,
        "title = names[labels[0]]",
        json!({
            "labels": array(&[50000, 1], "uint8"),
            "names": {"type": "builtins.list", "kind": "list", "S": {"len": 10}, "R": {}, "V": {}}
        }),
        &["labels = names = 1"],
    );
}

#[test]
fn array_as_sequence_index_silent_for_scalars_and_labels() {
    let executed = &["labels = df = 1"];
    let facts = json!({
        "labels": array(&[50000], "uint8"),
        "df": frame(&[("a", "int64"), ("b", "int64")], 3)
    });
    silent(
        "names = 'airplane automobile bird'.split()\nfor i in range(25):\n    print(names[labels[i]])",
        facts.clone(),
        executed,
    );
    // A pandas Index takes arrays of positions.
    silent(
        "picked = df.columns[np.argsort(x)]\nfirst = df.columns[labels[0:2]]",
        facts,
        &["import numpy as np\nlabels = df = x = 1"],
    );
}

// SK001-SK010

#[test]
fn estimator_not_fitted_fires() {
    fires(
        "SK001",
        1,
        "model.predict(X)",
        json!({"model": estimator("LogisticRegression", false, None)}),
        &["model = X = 1"],
    );
    fires(
        "SK001",
        3,
        "from sklearn.linear_model import Ridge\nr = Ridge()\nr.predict([[1.0]])",
        json!({}),
        &[],
    );
}

#[test]
fn estimator_not_fitted_silent_after_fit_in_the_cell() {
    silent(
        "model.fit(X, y)\nmodel.predict(X)",
        json!({"model": estimator("LogisticRegression", false, None)}),
        &["model = X = y = 1"],
    );
}

#[test]
fn feature_count_mismatch_fires_after_a_dropped_column() {
    let facts = json!({
        "model": estimator("LinearRegression", true, Some(3)),
        "df": frame(&[("a", "int64"), ("b", "int64"), ("c", "int64")], 10)
    });
    fires(
        "SK002",
        2,
        "X = df.drop('c', axis=1)\nmodel.predict(X)",
        facts,
        &["model = df = 1"],
    );
}

#[test]
fn feature_count_mismatch_silent_when_widths_agree() {
    let facts = json!({
        "model": estimator("LinearRegression", true, Some(2)),
        "df": frame(&[("a", "int64"), ("b", "int64"), ("c", "int64")], 10)
    });
    silent(
        "X = df.drop('c', axis=1)\nmodel.predict(X)",
        facts,
        &["model = df = 1"],
    );
}

#[test]
fn feature_names_mismatch_fires() {
    let mut model = estimator("LinearRegression", true, Some(2));
    model["R"]["feature_names_in"] = json!(["a", "b"]);
    let facts = json!({"model": model, "test": frame(&[("a", "int64"), ("c", "int64")], 10)});
    fires(
        "SK003",
        1,
        "model.predict(test)",
        facts,
        &["model = test = 1"],
    );
}

#[test]
fn feature_names_mismatch_silent_for_arrays() {
    let mut model = estimator("LinearRegression", true, Some(2));
    model["R"]["feature_names_in"] = json!(["a", "b"]);
    let facts = json!({"model": model, "test": frame(&[("a", "int64"), ("c", "int64")], 10)});
    silent("model.predict(test.values)", facts, &["model = test = 1"]);
}

#[test]
fn nan_input_fires() {
    let mut x = frame(&[("a", "float64")], 10);
    x["V"]["has_nan"] = json!(true);
    fires(
        "SK004",
        2,
        "from sklearn.linear_model import LogisticRegression\nLogisticRegression().fit(X, y)",
        json!({"X": x}),
        &["X = y = 1"],
    );
}

#[test]
fn nan_input_silent_after_dropna_or_for_nan_tolerant_estimators() {
    let mut x = frame(&[("a", "float64")], 10);
    x["V"]["has_nan"] = json!(true);
    silent(
        "from sklearn.linear_model import LogisticRegression\nLogisticRegression().fit(X.dropna(), y)",
        json!({"X": x.clone()}),
        &["X = y = 1"],
    );
    silent(
        "from sklearn.ensemble import HistGradientBoostingClassifier\nHistGradientBoostingClassifier().fit(X, y)",
        json!({"X": x}),
        &["X = y = 1"],
    );
}

#[test]
fn non_numeric_input_fires() {
    let mut df = frame(&[("age", "int64"), ("sex", "object")], 10);
    df["V"]["columns"] = json!({"sex": {"examples": ["Male", "Female"]}});
    fires(
        "SK005",
        3,
        "from sklearn.ensemble import RandomForestRegressor\nX = df.drop(['age'], axis=1)\nRandomForestRegressor().fit(X, y)",
        json!({"df": df}),
        &["df = y = 1"],
    );
}

#[test]
fn non_numeric_input_silent_when_strings_hold_numbers_or_are_dropped() {
    let mut df = frame(&[("age", "int64"), ("sex", "object"), ("n", "object")], 10);
    df["V"]["columns"] = json!({"sex": {"examples": ["Male"]}, "n": {"examples": ["46.0", "3"]}});
    silent(
        "from sklearn.ensemble import RandomForestRegressor\nX = df.drop(['sex'], axis=1)\nRandomForestRegressor().fit(X, y)",
        json!({"df": df}),
        &["df = y = 1"],
    );
}

#[test]
fn unseen_labels_fires() {
    let facts = json!({"le": {
        "type": "sklearn.preprocessing._label.LabelEncoder", "kind": "estimator",
        "R": {"estimator": "LabelEncoder"}, "V": {"fitted": true, "classes": ["a", "b"], "n_classes": 2}
    }});
    fires("SK006", 1, "le.transform(['a', 'c'])", facts, &["le = 1"]);
}

#[test]
fn unseen_labels_silent_for_known_labels() {
    let facts = json!({"le": {
        "type": "sklearn.preprocessing._label.LabelEncoder", "kind": "estimator",
        "R": {"estimator": "LabelEncoder"}, "V": {"fitted": true, "classes": ["a", "b"], "n_classes": 2}
    }});
    silent("le.transform(['a', 'b', 'a'])", facts, &["le = 1"]);
}

#[test]
fn stratify_singleton_class_fires() {
    let y = json!({"type": "pandas.core.series.Series", "kind": "series", "S": {"shape": [10]}, "V": {"n_unique": 7}});
    fires(
        "SK007",
        2,
        "from sklearn.model_selection import train_test_split\na, b, c, d = train_test_split(X, y, stratify=y)",
        json!({"y": y}),
        &["X = y = 1"],
    );
}

#[test]
fn stratify_singleton_class_silent_with_few_classes_or_sampled_counts() {
    let y = json!({"type": "pandas.core.series.Series", "kind": "series", "S": {"shape": [10]}, "V": {"n_unique": 2}});
    let sampled = json!({"type": "pandas.core.series.Series", "kind": "series", "sampled": true, "S": {"shape": [10]}, "V": {"n_unique": 7}});
    silent(
        "from sklearn.model_selection import train_test_split\na, b, c, d = train_test_split(X, y, stratify=y)\ne, f = train_test_split(z, stratify=z)",
        json!({"y": y, "z": sampled}),
        &["X = y = z = 1"],
    );
}

#[test]
fn too_many_components_fires() {
    fires(
        "SK008",
        2,
        "from sklearn.cluster import KMeans\nKMeans(n_clusters=8).fit(X)",
        json!({"X": array(&[5, 2], "float64")}),
        &["X = 1"],
    );
    fires(
        "SK008",
        2,
        "from sklearn.decomposition import PCA\nPCA(n_components=5).fit(X)",
        json!({"X": array(&[100, 3], "float64")}),
        &["X = 1"],
    );
}

#[test]
fn too_many_components_silent_within_limits() {
    silent(
        "from sklearn.decomposition import PCA\nPCA(n_components=3).fit(X)",
        json!({"X": array(&[100, 3], "float64")}),
        &["X = 1"],
    );
}

#[test]
fn solver_penalty_mismatch_fires() {
    let executed = &["from sklearn.linear_model import LogisticRegression\nX = y = 1"];
    fires(
        "SK012",
        2,
        "model = LogisticRegression(max_iter=1000, solver='liblinear', penalty='elasticnet')\nmodel.fit(X, y)",
        json!({}),
        executed,
    );
    fires(
        "SK012",
        2,
        "model = LogisticRegression(penalty='l1', solver='lbfgs')\nmodel.fit(X, y)",
        json!({}),
        executed,
    );
    fires(
        "SK012",
        1,
        "LogisticRegression(penalty='elasticnet', l1_ratio=0.5).fit(X, y)",
        json!({}),
        executed,
    );
}

#[test]
fn solver_penalty_mismatch_silent_for_supported_or_unknown_pairs() {
    let executed = &["from sklearn.linear_model import LogisticRegression\nX = y = s = 1"];
    for cell in [
        "model = LogisticRegression(max_iter=10, solver='liblinear', penalty='l1')\nmodel.fit(X, y)",
        "model = LogisticRegression(solver='saga', penalty='elasticnet', l1_ratio=0.5)\nmodel.fit(X, y)",
        // The default solver accepted l1 before 0.22 (liblinear).
        "model = LogisticRegression(penalty='l1')\nmodel.fit(X, y)",
        "model = LogisticRegression(penalty='elasticnet', solver=s)\nmodel.fit(X, y)",
        "model = LogisticRegression(penalty='elasticnet')\nmodel.set_params(solver='saga')\nmodel.fit(X, y)",
    ] {
        silent(cell, json!({}), executed);
    }
}

fn svc(fitted: bool) -> Value {
    json!({
        "type": "sklearn.svm._classes.SVC",
        "kind": "estimator",
        "S": {"n_features_in": 10},
        "R": {"estimator": "SVC"},
        "V": {"fitted": fitted}
    })
}

#[test]
fn missing_estimator_attribute_fires() {
    fires(
        "SK013",
        1,
        "importances = model.feature_importances_",
        json!({"model": svc(true)}),
        &["model = 1"],
    );
    fires(
        "SK013",
        4,
        "from sklearn.ensemble import RandomForestClassifier\nforest = RandomForestClassifier()\nforest.fit(X, y)\nprint(forest.coef_)",
        json!({"X": array(&[10, 3], "float64")}),
        &["X = y = 1"],
    );
}

#[test]
fn missing_estimator_attribute_silent_where_the_attribute_exists() {
    silent(
        "from sklearn.ensemble import RandomForestClassifier\nforest = RandomForestClassifier()\nforest.fit(X, y)\nprint(forest.feature_importances_)",
        json!({"X": array(&[10, 3], "float64")}),
        &["X = y = 1"],
    );
    silent(
        "print(model.coef_)",
        json!({"model": estimator("LogisticRegression", true, Some(3))}),
        &["model = 1"],
    );
    let mut with_attribute = svc(true);
    with_attribute["R"]["attributes"] = json!({"feature_importances_": "attribute"});
    silent(
        "importances = model.feature_importances_",
        json!({"model": with_attribute}),
        &["model = 1"],
    );
    silent(
        "importances = model.feature_importances_",
        json!({"model": svc(true)}),
        &["model = 1\nmodel.feature_importances_ = [0.5]"],
    );
}

#[test]
fn empty_input_fires() {
    fires(
        "SK009",
        2,
        "from sklearn.model_selection import train_test_split\ntrain_test_split(x, y, test_size=0.2)",
        json!({"x": frame(&[("a", "int64")], 0)}),
        &["x = y = 1"],
    );
}

#[test]
fn empty_input_silent_with_rows() {
    silent(
        "from sklearn.model_selection import train_test_split\ntrain_test_split(x, y, test_size=0.2)",
        json!({"x": frame(&[("a", "int64")], 4)}),
        &["x = y = 1"],
    );
}

#[test]
fn one_dimensional_input_fires() {
    fires(
        "SK010",
        2,
        "from sklearn.linear_model import LinearRegression\nLinearRegression().fit(df['a'], df['b'])",
        json!({"df": frame(&[("a", "int64"), ("b", "int64")], 4)}),
        &["df = 1"],
    );
}

#[test]
fn one_dimensional_input_silent_for_2d_selection() {
    silent(
        "from sklearn.linear_model import LinearRegression\nLinearRegression().fit(df[['a']], df['b'])",
        json!({"df": frame(&[("a", "int64"), ("b", "int64")], 4)}),
        &["df = 1"],
    );
}

// TO001-TO004

fn sequential(first: Value, device: &str) -> Value {
    json!({"type": "torch.nn.modules.container.Sequential", "kind": "torch_module",
           "S": {"first_layer": first}, "R": {"device": device}})
}

fn tensor(shape: &[u64], dtype: &str, device: &str) -> Value {
    json!({"type": "torch.Tensor", "kind": "tensor", "S": {"shape": shape}, "R": {"dtype": dtype, "device": device}})
}

#[test]
fn linear_in_features_fires() {
    let facts = json!({
        "model": sequential(json!({"type": "Linear", "in_features": 10}), "cpu"),
        "x": tensor(&[32, 12], "torch.float32", "cpu")
    });
    fires("TO001", 1, "out = model(x)", facts, &["model = x = 1"]);
}

#[test]
fn linear_in_features_silent_when_it_matches_or_the_module_is_custom() {
    let facts = json!({
        "model": sequential(json!({"type": "Linear", "in_features": 12}), "cpu"),
        "net": {"type": "__main__.Net", "kind": "torch_module", "S": {"first_layer": {"type": "Linear", "in_features": 10}}},
        "x": tensor(&[32, 12], "torch.float32", "cpu")
    });
    silent("out = model(x)\nnet(x)", facts, &["model = net = x = 1"]);
}

#[test]
fn conv_in_channels_fires() {
    let facts = json!({
        "model": sequential(json!({"type": "Conv2d", "in_channels": 3}), "cpu"),
        "x": tensor(&[8, 28, 28, 3], "torch.float32", "cpu")
    });
    fires("TO002", 1, "model(x)", facts, &["model = x = 1"]);
}

#[test]
fn conv_in_channels_silent_when_channels_first() {
    let facts = json!({
        "model": sequential(json!({"type": "Conv2d", "in_channels": 3}), "cpu"),
        "x": tensor(&[8, 3, 28, 28], "torch.float32", "cpu")
    });
    silent("model(x)", facts, &["model = x = 1"]);
}

#[test]
fn device_mismatch_fires() {
    let facts = json!({
        "model": sequential(json!({"type": "Linear", "in_features": 12}), "cuda:0"),
        "x": tensor(&[32, 12], "torch.float32", "cpu"),
        "w": tensor(&[32, 12], "torch.float32", "cuda:0")
    });
    fires(
        "TO003",
        1,
        "model(x)",
        facts.clone(),
        &["model = x = w = 1"],
    );
    fires("TO003", 1, "y = x + w", facts, &["model = x = w = 1"]);
}

#[test]
fn device_mismatch_silent_after_moving_the_input() {
    let facts = json!({
        "model": sequential(json!({"type": "Linear", "in_features": 12}), "cuda:0"),
        "x": tensor(&[32, 12], "torch.float32", "cpu")
    });
    silent("x = x.to('cuda:0')\nmodel(x)", facts, &["model = x = 1"]);
}

#[test]
fn dtype_mismatch_fires() {
    let facts = json!({
        "model": sequential(json!({"type": "Linear", "in_features": 12}), "cpu"),
        "x": tensor(&[32, 12], "torch.int64", "cpu")
    });
    fires("TO004", 1, "model(x)", facts, &["model = x = 1"]);
}

#[test]
fn dtype_mismatch_silent_after_float() {
    let facts = json!({
        "model": sequential(json!({"type": "Linear", "in_features": 12}), "cpu"),
        "x": tensor(&[32, 12], "torch.int64", "cpu")
    });
    silent("model(x.float())", facts, &["model = x = 1"]);
}

// KS001-KS003

fn keras_model(input: Value, last_units: u64, loss: &str, compiled: bool) -> Value {
    json!({"type": "keras.src.models.sequential.Sequential", "kind": "keras_model",
           "S": {"input_shape": input, "last_layer": {"type": "Dense", "units": last_units}},
           "R": {"loss": loss}, "V": {"compiled": compiled}})
}

#[test]
fn keras_input_shape_fires() {
    let facts = json!({
        "model": keras_model(json!([null, 784]), 10, "categorical_crossentropy", true),
        "X": array(&[600, 28, 28], "float32")
    });
    fires("KS001", 1, "model.fit(X, y)", facts, &["model = X = y = 1"]);
}

#[test]
fn keras_input_shape_silent_after_reshape() {
    let facts = json!({
        "model": keras_model(json!([null, 784]), 10, "categorical_crossentropy", true),
        "X": array(&[600, 28, 28], "float32")
    });
    silent(
        "model.fit(X.reshape(-1, 784), y)",
        facts,
        &["model = X = y = 1"],
    );
}

/// Keras 3 on TensorFlow checks the input width when TensorFlow first traces the step a call
/// runs (`ValueError`); a step traced before for the model's own width is retraced with the
/// width relaxed, and TensorFlow's kernel refuses the product (`InvalidArgumentError`).
#[test]
fn keras_input_shape_after_a_traced_step_is_tensorflows_error() {
    let exception = |cell: &str, variables: Value, tensorflow: bool| {
        let libraries = if tensorflow {
            json!({"tensorflow": "2.19.0", "keras": "3.10.0"})
        } else {
            json!({"keras": "3.10.0"})
        };
        let findings = common::check(
            cell,
            json!({"variables": variables, "libraries": libraries}),
            &["X = y = X_test = y_test = model = 1"],
        );
        let finding = findings
            .first()
            .unwrap_or_else(|| panic!("nothing fired on:\n{cell}"));
        assert_eq!(
            finding.rule,
            Some(RuleCode::KerasInputShape),
            "{finding:#?}"
        );
        (finding.line, finding.exception.clone().unwrap_or_default())
    };
    let data = json!({
        "X": array(&[600, 14], "float32"), "y": array(&[600], "float32"),
        "X_test": array(&[200, 13], "float32"), "y_test": array(&[200], "float32")
    });
    let built = |fit: &str| {
        format!(
            "import keras\nmodel = keras.Sequential([keras.Input(shape=(14,)), keras.layers.Dense(8), keras.layers.Dense(1)])\n\
             model.compile(optimizer='adam', loss='binary_crossentropy')\nmodel.fit({fit})\nmodel.evaluate(X_test, y_test)"
        )
    };
    // Validated while fitting: the test step was traced for 14 columns.
    assert_eq!(
        exception(&built("X, y, validation_split=0.2"), data.clone(), true),
        (Some(5), "InvalidArgumentError".to_owned())
    );
    assert_eq!(
        exception(&built("X, y, validation_data=(X, y)"), data.clone(), true),
        (Some(5), "InvalidArgumentError".to_owned())
    );
    // Not validated: evaluate traces the test step first.
    assert_eq!(
        exception(&built("X, y"), data.clone(), true),
        (Some(5), "ValueError".to_owned())
    );
    assert_eq!(
        exception(&built("X, y, validation_split=0.0"), data.clone(), true),
        (Some(5), "ValueError".to_owned())
    );
    // No TensorFlow in the kernel: another backend, whose check runs every time.
    assert_eq!(
        exception(&built("X, y, validation_split=0.2"), data.clone(), false),
        (Some(5), "ValueError".to_owned())
    );
    // A kernel's model: what the probe found traced, until a compile drops it.
    let mut variables = data.clone();
    variables["model"] = keras_model(json!([null, 14]), 1, "binary_crossentropy", true);
    variables["model"]["R"]["backend"] = json!("tensorflow");
    variables["model"]["R"]["traced"] = json!(["test", "train"]);
    assert_eq!(
        exception("model.evaluate(X_test, y_test)", variables.clone(), false),
        (Some(1), "InvalidArgumentError".to_owned())
    );
    assert_eq!(
        exception("model.predict(X_test)", variables.clone(), false),
        (Some(1), "ValueError".to_owned())
    );
    assert_eq!(
        exception(
            "model.compile(optimizer='adam', loss='binary_crossentropy')\nmodel.evaluate(X_test, y_test)",
            variables,
            false
        ),
        (Some(2), "ValueError".to_owned())
    );
}

#[test]
fn keras_output_units_fires() {
    let facts = json!({
        "model": keras_model(json!([null, 4]), 1, "categorical_crossentropy", true),
        "X": array(&[100, 4], "float32"),
        "y": array(&[100, 10], "float32")
    });
    fires("KS002", 1, "model.fit(X, y)", facts, &["model = X = y = 1"]);
}

#[test]
fn keras_output_units_fires_for_a_model_built_in_the_cell() {
    let facts = json!({"X": array(&[100, 4], "float32"), "y": array(&[100, 2], "float32")});
    fires(
        "KS002",
        5,
        "from tensorflow.keras import Sequential\nfrom tensorflow.keras.layers import Dense\nmodel = Sequential([Dense(8, input_shape=(4,)), Dense(5, activation='softmax')])\nmodel.compile(optimizer='adam', loss='categorical_crossentropy')\nmodel.fit(X, y)",
        facts,
        &["X = y = 1"],
    );
}

#[test]
fn keras_output_units_silent_when_units_match() {
    let facts = json!({
        "model": keras_model(json!([null, 4]), 10, "categorical_crossentropy", true),
        "X": array(&[100, 4], "float32"),
        "y": array(&[100, 10], "float32"),
        "labels": array(&[100], "int64")
    });
    silent(
        "model.fit(X, y)\nmodel.fit(X, labels)",
        facts,
        &["model = X = y = labels = 1"],
    );
}

#[test]
fn keras_not_compiled_fires() {
    // The exception class follows the Keras version the model's class belongs to.
    for (type_name, exception) in [
        ("keras.src.models.sequential.Sequential", "ValueError"),
        ("keras.engine.sequential.Sequential", "RuntimeError"),
    ] {
        let facts = json!({
            "X": array(&[100, 4], "float32"),
            "model": {"type": type_name, "kind": "keras_model", "S": {}, "R": {}, "V": {"compiled": false}}
        });
        let finding = fires("KS003", 1, "model.fit(X, y)", facts, &["X = y = model = 1"]);
        assert_eq!(finding.exception.as_deref(), Some(exception));
    }
    // A model built in the cell: the version is not known.
    silent(
        "from keras.models import Sequential\nfrom keras.layers import Dense\nmodel = Sequential([Dense(1, input_shape=(4,))])\nmodel.fit(X, y)",
        json!({"X": array(&[100, 4], "float32")}),
        &["X = y = 1"],
    );
}

#[test]
fn keras_not_compiled_silent_after_compile() {
    let facts = json!({"X": array(&[100, 4], "float32")});
    silent(
        "from keras.models import Sequential\nfrom keras.layers import Dense\nmodel = Sequential([Dense(1, input_shape=(4,))])\nmodel.compile(loss='mse')\nmodel.fit(X, y)",
        facts,
        &["X = y = 1"],
    );
}

// PL001-PL003

#[test]
fn plot_length_mismatch_fires() {
    let facts = json!({"a": array(&[10], "float64"), "b": array(&[12], "float64"), "plt": module("matplotlib.pyplot")});
    fires(
        "PL001",
        1,
        "plt.plot(a, b)",
        facts.clone(),
        &[IMPORTS, "a = b = 1"],
    );
    fires(
        "PL001",
        1,
        "plt.scatter(a, b[:11])",
        facts,
        &[IMPORTS, "a = b = 1"],
    );
}

#[test]
fn plot_length_mismatch_silent_for_equal_lengths() {
    let facts = json!({"a": array(&[10], "float64"), "b": array(&[12], "float64"), "plt": module("matplotlib.pyplot")});
    silent(
        "plt.plot(a, b[:10])\nplt.plot(b, 'r-')",
        facts,
        &[IMPORTS, "a = b = 1"],
    );
}

#[test]
fn plot_missing_column_fires() {
    let facts = json!({"df": frame(&[("a", "int64"), ("b", "int64")], 5)});
    fires(
        "PL002",
        2,
        "import seaborn as sns\nsns.scatterplot(data=df, x='a', y='c')",
        facts.clone(),
        &["df = 1"],
    );
    fires("PL002", 1, "df.plot(x='a', y='z')", facts, &["df = 1"]);
}

#[test]
fn plot_missing_column_silent_for_present_columns() {
    let facts = json!({"df": frame(&[("a", "int64"), ("b", "int64")], 5)});
    silent(
        "import seaborn as sns\nsns.scatterplot(data=df, x='a', y='b')",
        facts,
        &["df = 1"],
    );
}

#[test]
fn acf_too_many_lags_fires() {
    let residuals =
        json!({"type": "pandas.core.series.Series", "kind": "series", "S": {"shape": [92]}});
    fires(
        "PL003",
        2,
        "from statsmodels.graphics.tsaplots import plot_acf, plot_pacf\nplot_acf(residuals, lags=180)",
        json!({"residuals": residuals.clone()}),
        &["residuals = 1"],
    );
    fires(
        "PL003",
        2,
        "from statsmodels.graphics.tsaplots import plot_pacf\nplot_pacf(residuals, lags=47)",
        json!({"residuals": residuals}),
        &["residuals = 1"],
    );
}

#[test]
fn acf_too_many_lags_silent_within_limits() {
    let residuals =
        json!({"type": "pandas.core.series.Series", "kind": "series", "S": {"shape": [92]}});
    silent(
        "from statsmodels.graphics.tsaplots import plot_acf, plot_pacf\nplot_acf(residuals, lags=91)\nplot_pacf(residuals, lags=46)",
        json!({"residuals": residuals}),
        &["residuals = 1"],
    );
}

// The catalogue

#[test]
fn every_rule_has_a_unique_code_and_name_and_an_example() {
    let catalogue = rules::catalogue();
    let mut codes: Vec<&str> = catalogue.iter().map(|r| r.code).collect();
    codes.sort();
    codes.dedup();
    assert_eq!(codes.len(), catalogue.len());
    for rule in catalogue {
        assert!(
            !rule.example.is_empty() && !rule.explanation.is_empty() && !rule.summary.is_empty()
        );
        assert_eq!(rule.code.parse::<RuleCode>().unwrap().code(), rule.code);
        assert_eq!(rule.name.parse::<RuleCode>().unwrap().code(), rule.code);
    }
}

// The interpreter

#[test]
fn a_time_cell_magic_body_is_judged_at_its_lines() {
    let facts = json!({"df": frame(&[("a", "int64")], 5)});
    fires("PD001", 3, "%%time\nx = 1\ndf['b']", facts, &["df = 1"]);
}

#[test]
fn mutated_list_literals_are_forgotten() {
    let facts = json!({
        "model": estimator("LinearRegression", true, Some(2)),
        "df": frame(&[("a", "int64"), ("b", "int64"), ("target", "int64")], 10)
    });
    silent(
        "cols = list(df.columns)\ncols.remove('target')\nmodel.predict(df[cols])",
        facts.clone(),
        &["model = df = 1"],
    );
    fires(
        "SK002",
        2,
        "cols = list(df.columns)\nmodel.predict(df[cols])",
        facts,
        &["model = df = 1"],
    );
}

#[test]
fn a_column_changed_in_place_is_not_judged_by_old_values() {
    let mut df = frame(&[("n", "object")], 5);
    df["V"]["columns"] = json!({"n": {"examples": ["1,000", "2,000"]}});
    let facts = json!({"df": df});
    fires(
        "PD009",
        1,
        "df['n'].astype(int)",
        facts.clone(),
        &["df = 1"],
    );
    silent(
        "df['n'].replace(',', '', regex=True, inplace=True)\ndf['n'].astype(int)",
        facts.clone(),
        &["df = 1"],
    );
    silent(
        "df['n'] = df['n'].str.replace(',', '')\ndf['n'].astype(int)",
        facts,
        &["df = 1"],
    );
}

#[test]
fn series_labels_read_as_attributes_are_not_missing_methods() {
    let series =
        json!({"type": "pandas.core.series.Series", "kind": "series", "S": {"shape": [3]}});
    silent(
        "counts.male",
        json!({"counts": series.clone()}),
        &["counts = 1"],
    );
    fires(
        "NB003",
        1,
        "counts.reshape(-1, 1)",
        json!({"counts": series}),
        &["counts = 1"],
    );
}

#[test]
fn frames_from_transformers_set_to_pandas_output_are_not_arrays() {
    let facts = json!({"X": frame(&[("a", "float64")], 5)});
    silent(
        "from sklearn.preprocessing import StandardScaler\nZ = StandardScaler().fit_transform(X)\nZ.values",
        facts,
        &["from sklearn import set_config\nset_config(transform_output='pandas')\nX = 1"],
    );
}

#[test]
fn a_loop_index_is_checked_over_every_pass_only_without_early_exits() {
    let facts = json!({"df": frame(&[("a", "int64"), ("b", "int64"), ("c", "int64")], 5)});
    fires(
        "NP004",
        3,
        "fig, ax = plt.subplots(2, 1)\nfor i, col in enumerate(df.columns):\n    ax[i].set_title(col)",
        facts.clone(),
        &[IMPORTS, "df = 1"],
    );
    silent(
        "fig, ax = plt.subplots(2, 1)\nfor i, col in enumerate(df.columns):\n    if i >= 2:\n        break\n    ax[i].set_title(col)",
        facts.clone(),
        &[IMPORTS, "df = 1"],
    );
    silent(
        "fig, ax = plt.subplots(3, 1)\nfor i, col in enumerate(df.columns):\n    ax[i].set_title(col)",
        facts,
        &[IMPORTS, "df = 1"],
    );
}

#[test]
fn user_functions_that_change_globals_end_what_is_known() {
    let facts = json!({"df": frame(&[("a", "int64")], 5), "prepare": {"type": "builtins.function", "kind": "function"}});
    silent(
        "prepare()\ndf['b']",
        facts.clone(),
        &["df = 1\ndef prepare():\n    df['b'] = df['a'] * 2"],
    );
    fires(
        "PD001",
        2,
        "prepare()\ndf['b']",
        facts,
        &["df = 1\ndef prepare():\n    return 1"],
    );
}

#[test]
fn kernel_aliases_of_a_changed_frame_are_no_longer_trusted() {
    let facts = json!({
        "df": frame(&[("a", "int64"), ("b", "int64")], 5),
        "data": frame(&[("a", "int64"), ("b", "int64")], 5)
    });
    // `data` and `df` are one object: after `data` gains column 'c', so has `df`.
    silent("data['c'] = 1\ndf['c']", facts, &["df = 1\ndata = df"]);
}

#[test]
fn docs_list_every_rule_of_the_catalogue() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/rules.md"))
        .expect("docs/rules.md");
    for rule in rules::catalogue() {
        assert!(
            doc.contains(&format!("| {} | `{}` |", rule.code, rule.name))
                && doc.contains(&format!("### {} `{}`", rule.code, rule.name)),
            "docs/rules.md lacks {} {}: regenerate it with the catalogue_markdown example",
            rule.code,
            rule.name
        );
    }
}

#[test]
fn with_probe_facts_only_the_kernel_decides_what_is_undefined() {
    let probe = |missing: &[&str]| -> RuntimeInfo {
        serde_json::from_value(json!({
            "variables": {},
            "missing": missing,
            "cost": {"ms": 1.0, "bytes": 10, "sampled": false}
        }))
        .unwrap()
    };
    let check = |runtime: &RuntimeInfo| {
        let cell = "print(scaler)";
        let parsed_target = crane_analysis::ParsedCell::parse(cell);
        let analysis = crane_analysis::analyze_parsed(&parsed_target);
        rules::check(&CheckContext {
            target: &parsed_target,
            analysis: analysis.as_ref(),
            runtime,
            executed_cells: &ExecutedCells::default(),
        })
    };
    assert!(
        check(&probe(&[])).is_empty(),
        "the kernel may hold names no cell shows"
    );
    let findings = check(&probe(&["scaler"]));
    assert_eq!(findings[0].rule.map(|r| r.code()), Some("NB001"));
    assert!(findings[0].evidence[0].contains("kernel"));
}

#[test]
fn shortened_names_and_values_prove_nothing() {
    let long =
        "Total Gross (millions of US dollars, adjusted for inflation in 2020 prices, all regions)";
    let shortened: String = long.chars().take(79).chain(['\u{2026}']).collect();
    let facts = json!({"df": frame(&[(shortened.as_str(), "float64")], 5)});
    silent(&format!("df['{long}']"), facts, &["df = 1"]);

    let mut df = frame(&[("n", "object"), ("d", "object")], 5);
    df["V"]["columns"] = json!({
        "n": {"examples": ["12345678901234567\u{2026}"]},
        "d": {"examples": ["<decimal.Decimal>"], "element_types": ["decimal.Decimal"]}
    });
    silent(
        "df['n'].astype(int)\nfrom sklearn.linear_model import LinearRegression\nLinearRegression().fit(df[['d']], y)",
        json!({"df": df}),
        &["df = y = 1"],
    );
}

#[test]
fn a_linear_layer_after_a_possible_flatten_is_judged_only_on_2d_input() {
    let facts = json!({
        "model": sequential(json!({"type": "Linear", "in_features": 784}), "cpu"),
        "images": tensor(&[32, 1, 28, 28], "torch.float32", "cpu"),
        "rows": tensor(&[32, 100], "torch.float32", "cpu")
    });
    silent(
        "model(images)",
        facts.clone(),
        &["model = images = rows = 1"],
    );
    fires(
        "TO001",
        1,
        "model(rows)",
        facts,
        &["model = images = rows = 1"],
    );
}

#[test]
fn inconsistent_samples_fires() {
    let facts = json!({
        "model": estimator("LogisticRegression", false, None),
        "X_train": array(&[800, 5], "float64"),
        "y_test": array(&[200], "int64"),
        "y_true": array(&[200], "int64"),
        "X_test": array(&[150, 5], "float64"),
        "clf": estimator("LogisticRegression", true, Some(5))
    });
    fires(
        "SK011",
        1,
        "model.fit(X_train, y_test)",
        facts.clone(),
        &["model = X_train = y_test = 1"],
    );
    fires(
        "SK011",
        3,
        "from sklearn.metrics import accuracy_score\ny_pred = clf.predict(X_test)\naccuracy_score(y_true, y_pred)",
        facts,
        &["clf = X_test = y_true = 1"],
    );
}

#[test]
fn inconsistent_samples_silent_for_matching_rows_or_transformers() {
    let facts = json!({
        "X": array(&[800, 5], "float64"),
        "y": array(&[800], "int64"),
        "other": array(&[10], "int64"),
        "model": estimator("LogisticRegression", false, None)
    });
    silent(
        "from sklearn.preprocessing import StandardScaler\nmodel.fit(X, y)\nStandardScaler().fit(X, other)",
        facts,
        &["model = X = y = other = 1"],
    );
}

#[test]
fn keras_sample_mismatch_fires() {
    let facts = json!({
        "model": keras_model(json!([null, 4]), 1, "mse", true),
        "X": array(&[100, 4], "float32"),
        "y": array(&[90], "float32")
    });
    fires("KS004", 1, "model.fit(X, y)", facts, &["model = X = y = 1"]);
}

#[test]
fn keras_sample_mismatch_silent_for_matching_lengths() {
    let facts = json!({
        "model": keras_model(json!([null, 4]), 1, "mse", true),
        "X": array(&[100, 4], "float32"),
        "y": array(&[100], "float32")
    });
    silent("model.fit(X, y)", facts, &["model = X = y = 1"]);
}

#[test]
fn subplot_index_out_of_range_fires() {
    fires(
        "PL004",
        2,
        "for i in range(10):\n    plt.subplot(3, 3, i + 1)",
        json!({}),
        &[IMPORTS],
    );
    fires(
        "PL004",
        2,
        "fig = plt.figure()\nfig.add_subplot(2, 2, 0)",
        json!({}),
        &[IMPORTS],
    );
}

#[test]
fn subplot_index_out_of_range_silent_within_the_grid() {
    silent(
        "for i in range(9):\n    plt.subplot(3, 3, i + 1)\nfor i in range(12):\n    if i >= 9:\n        break\n    plt.subplot(3, 3, i + 1)",
        json!({}),
        &[IMPORTS],
    );
}

/// A grid sized by a ceiling division of a length (`-(-n // k)`, `-(n // -k)`): Python's floor
/// division rounds toward negative infinity, so both give 3 rows for 7 plots in 3 columns.
#[test]
fn subplot_grid_from_a_ceiling_division_is_evaluated_as_python_does() {
    let grid = "cols = ['a', 'b', 'c', 'd', 'e', 'f', 'g']\nncols = 3\n";
    for rows in ["-(-len(cols) // ncols)", "-(len(cols) // -ncols)"] {
        silent(
            &format!("{grid}nrows = {rows}\nfor i in range(len(cols)):\n    plt.subplot(nrows, ncols, i + 1)"),
            json!({}),
            &[IMPORTS],
        );
        // One row fewer than needed is a real crash.
        fires(
            "PL004",
            5,
            &format!("{grid}nrows = {rows} - 1\nfor i in range(len(cols)):\n    plt.subplot(nrows, ncols, i + 1)"),
            json!({}),
            &[IMPORTS],
        );
    }
}

fn history_dict() -> Value {
    json!({"type": "builtins.dict", "kind": "dict", "S": {"len": 4},
           "R": {"keys": ["loss", "accuracy", "val_loss", "val_accuracy"]}, "V": {}})
}

#[test]
fn missing_key_fires_on_a_dict_with_all_keys_known() {
    let facts = json!({"history": {"type": "keras.src.callbacks.history.History", "kind": "history"},
                       "history.history": history_dict()});
    fires(
        "NB004",
        1,
        "plt.plot(history.history['acc'])",
        facts,
        &[IMPORTS, "history = 1"],
    );
}

#[test]
fn missing_key_silent_for_present_keys_truncated_keys_or_added_keys() {
    let facts = json!({"h": history_dict()});
    silent("h['accuracy']", facts.clone(), &["h = 1"]);
    silent("h['acc'] = []\nh['acc']", facts, &["h = 1"]);
    let mut truncated = history_dict();
    truncated["R"]["keys_truncated"] = json!(10);
    silent("h['acc']", json!({"h": truncated}), &["h = 1"]);
}

#[test]
fn positions_of_recorded_columns_pick_only_a_count() {
    // Recorded facts list columns in their own order (`columns_ordered: false`): `iloc`
    // positions give a width, not names.
    let recorded = json!({
        "type": "pandas.core.frame.DataFrame", "kind": "dataframe", "S": {"shape": [10, 3]},
        "R": {"columns": [{"name": "a", "value_kind": "continuous"},
                          {"name": "b", "value_kind": "continuous"},
                          {"name": "target", "value_kind": "binary"}],
              "columns_ordered": false},
        "V": {}
    });
    let facts = json!({"df": recorded, "model": estimator("LinearRegression", true, Some(3))});
    silent(
        "X = df.iloc[:, :-1]\nX['target']",
        facts.clone(),
        &["df = model = 1"],
    );
    fires(
        "SK002",
        2,
        "X = df.iloc[:, :-1]\nmodel.predict(X)",
        facts,
        &["df = model = 1"],
    );
}

/// A starred item stands for any number of items: a list or tuple display holding one has an
/// unknown length, whatever else it holds.
#[test]
fn a_display_with_a_starred_item_has_an_unknown_length() {
    let numpy = json!({ "np": module("numpy") });
    for cell in [
        "import numpy as np\nparts = [*range(3), 4]\nnp.array(parts).reshape(2, 2)",
        "import numpy as np\nparts = (*range(3), 4)\nnp.zeros(len(parts)).reshape(2, 2)",
        "import numpy as np\nparts = [*range(3), 4]\nfor p in parts:\n    pass\nnp.zeros((2, 2))[len(parts) - 3]",
    ] {
        silent(cell, numpy.clone(), &[]);
    }
    fires(
        "NP001",
        3,
        "import numpy as np\nparts = (3, 4)\nnp.zeros(len(parts)).reshape(2, 2)",
        numpy,
        &[],
    );
}

// Functions defined in executed cells are followed into their bodies.

const PREPARE: &str = "def prepare(frame, target='c'):\n    features = frame.drop(target, axis=1)\n    return features";

#[test]
fn a_function_from_an_executed_cell_is_followed_with_its_return_value() {
    let facts = json!({
        "model": estimator("LinearRegression", true, Some(3)),
        "df": frame(&[("a", "int64"), ("b", "int64"), ("c", "int64")], 10)
    });
    // The value returned by `prepare` has two columns; the model was fitted on three.
    let finding = fires(
        "SK002",
        2,
        "X = prepare(df)\nmodel.predict(X)",
        facts.clone(),
        &["model = df = 1", PREPARE],
    );
    assert!(finding.diagnosis.contains("features"), "{finding:#?}");
    // A crash inside the body is reported at the call, in the target cell.
    let finding = fires(
        "PD003",
        3,
        "x = 1\ny = 2\nprepare(df, target='price')",
        facts.clone(),
        &["model = df = 1", PREPARE],
    );
    assert!(
        finding.diagnosis.contains("inside `prepare`"),
        "{finding:#?}"
    );
    // Keyword arguments bind by name.
    fires(
        "PD003",
        1,
        "prepare(target='d', frame=df)",
        facts,
        &["model = df = 1", PREPARE],
    );
}

#[test]
fn a_function_from_an_executed_cell_is_not_followed_when_rebound_or_unbindable() {
    let facts = json!({
        "model": estimator("LinearRegression", true, Some(3)),
        "df": frame(&[("a", "int64"), ("b", "int64"), ("c", "int64")], 10)
    });
    let executed = ["model = df = 1", PREPARE];
    // Python raises TypeError at the call (an unexpected keyword, too many arguments, none):
    // the body never runs.
    silent("prepare(df, column='price')", facts.clone(), &executed);
    silent("prepare(df, 'price', 3)", facts.clone(), &executed);
    silent("prepare()", facts.clone(), &executed);
    // A later cell rebinds the name; a generator function's body does not run when called.
    silent(
        "prepare(df, 'price')",
        facts.clone(),
        &["model = df = 1", PREPARE, "prepare = print"],
    );
    silent(
        "prepare(df, 'price')",
        facts.clone(),
        &[
            "model = df = 1",
            "def prepare(frame, target):\n    yield frame.drop(target, axis=1)",
        ],
    );
    // A crash under a condition the facts do not decide is not certain.
    silent(
        "prepare(df, 'price')",
        facts,
        &["model = df = 1", "def prepare(frame, target):\n    if target in frame:\n        return frame.drop(target, axis=1)\n    return frame"],
    );
}

#[test]
fn a_branch_decided_by_known_values_runs_alone() {
    let facts = json!({"df": frame(&[("a", "int64"), ("b", "int64")], 10)});
    fires(
        "PD001",
        5,
        "n = len(df.columns)\nif n > 5:\n    df['a']\nelse:\n    df['c']",
        facts.clone(),
        &["df = 1"],
    );
    silent(
        "n = len(df.columns)\nif n < 5:\n    df['a']\nelse:\n    df['c']",
        facts.clone(),
        &["df = 1"],
    );
    // A jump the facts rule out leaves what follows certain; one they do not, uncertain.
    fires(
        "PD001",
        3,
        "if len(df.columns) > 5:\n    raise ValueError('wide')\ndf['c']",
        facts.clone(),
        &["df = 1"],
    );
    silent(
        "if len(df) > 5:\n    raise ValueError('long')\ndf['c']",
        facts.clone(),
        &["df = 1"],
    );
    // Loop passes carry state: the third pass reads a column that is not there.
    fires(
        "PD001",
        3,
        "names = ['a', 'b', 'c']\nfor i, name in enumerate(names):\n    df[name]",
        facts,
        &["df = 1"],
    );
}

#[test]
fn a_crash_in_a_try_body_is_judged_against_its_handlers() {
    let facts = json!({"df": frame(&[("a", "int64"), ("b", "int64")], 10)});
    // No handler catches KeyError.
    fires(
        "PD001",
        2,
        "try:\n    df['c']\nexcept (FileNotFoundError, ValueError):\n    pass",
        facts.clone(),
        &["df = 1"],
    );
    // A handler that catches it (by class, base, Exception, bare, or a class crane does not
    // know), or something before it in the body that may raise and be caught.
    for handler in [
        "except KeyError:",
        "except LookupError as error:",
        "except Exception:",
        "except:",
        "except (ValueError, KeyError):",
        "except pd.errors.ParserError:",
        "except CustomError:",
    ] {
        silent(
            &format!("try:\n    df['c']\n{handler}\n    pass"),
            facts.clone(),
            &["df = 1", IMPORTS],
        );
    }
    silent(
        "try:\n    n = load_rows()\n    df['c']\nexcept ValueError:\n    pass",
        facts,
        &["df = 1", "from helpers import load_rows"],
    );
}

const NET: &str = "import torch\nimport torch.nn as nn\n\nclass Net(nn.Module):\n    def __init__(self, n_in, n_out=2):\n        super().__init__()\n        self.fc = nn.Linear(n_in, n_out)\n\n    def forward(self, x):\n        return self.fc(x)\n\n    def width(self):\n        return self.fc";

#[test]
fn a_user_class_is_followed_through_init_methods_and_forward() {
    // `model(x)` calls `forward`, whose layer was built by `__init__` with in_features=10.
    fires(
        "TO001",
        3,
        "model = Net(10)\nx = torch.randn(4, 12)\nmodel(x)",
        json!({}),
        &[NET],
    );
    fires(
        "TO001",
        2,
        "model = Net(n_in=3)\nmodel.forward(torch.randn(4, 5))",
        json!({}),
        &[NET],
    );
    silent(
        "model = Net(12)\nx = torch.randn(4, 12)\nmodel(x)",
        json!({}),
        &[NET],
    );
    // Code not followed may change the instance: what it knew is forgotten.
    silent(
        "model = Net(10)\nreplace_layers(model)\nmodel(torch.randn(4, 12))",
        json!({}),
        &[NET, "from helpers import replace_layers"],
    );
    // A class with a base crane does not follow is not followed.
    silent(
        "model = Net(10)\nmodel(torch.randn(4, 12))",
        json!({}),
        &[&NET.replace("(nn.Module)", "(Base)"), "Base = object"],
    );
}

#[test]
fn functions_of_a_cell_nested_too_deeply_are_not_followed() {
    let facts = json!({"df": frame(&[("a", "int64"), ("b", "int64")], 10)});
    let deep = format!(
        "{PREPARE}\nnested = {}1{}",
        "[".repeat(250),
        "]".repeat(250)
    );
    silent(
        "prepare(df, target='price')",
        facts.clone(),
        &["df = 1", &deep],
    );
    fires(
        "PD003",
        1,
        "prepare(df, target='price')",
        facts,
        &["df = 1", PREPARE],
    );
}

#[test]
fn builtins_the_probe_describes_are_still_the_builtins() {
    // The probe summarizes every name the cell reads, builtins included.
    let facts = json!({
        "range": {"type": "builtins.type", "kind": "class", "R": {"name": "builtins.range", "library": true}},
        "len": {"type": "builtins.builtin_function_or_method", "kind": "builtin", "R": {"name": "len"}},
        "x": array(&[3, 2], "float64")
    });
    fires(
        "NP004",
        2,
        "for i in range(len(x) + 1):\n    x[i]",
        facts,
        &[IMPORTS, "x = 1"],
    );
    // A name bound over a builtin is not that builtin.
    let facts = json!({
        "len": {"type": "builtins.builtin_function_or_method", "kind": "builtin", "R": {"name": "max"}},
        "x": array(&[3, 2], "float64")
    });
    silent(
        "for i in range(len(x) + 1):\n    x[i]",
        facts,
        &[IMPORTS, "x = 1", "len = max"],
    );
}

#[test]
fn objects_the_executed_cells_built_are_rebuilt_when_the_facts_lack_them() {
    // Recorded facts that do not describe `df`: the executed cells built it and dropped `a`.
    let built = [
        "import pandas as pd",
        "df = pd.DataFrame({'a': [1, 2], 'b': [3, 4]})",
        "df = df.drop('a', axis=1)",
    ];
    fires("PD001", 1, "df['a'].sum()", json!({}), &built);
    silent("df['b'].sum()", json!({}), &built);
    // A step crane does not follow leaves the frame unknown.
    silent(
        "df['a'].sum()",
        json!({}),
        &[
            built[0],
            built[1],
            "from helpers import clean\ndf = clean(df)",
        ],
    );
    // A Keras model built with `add()`, known to the facts by its type only.
    let keras = [
        "from keras.models import Sequential\nfrom keras.layers import Dense",
        "model = Sequential()\nmodel.add(Dense(16, input_shape=(8,), activation='relu'))\nmodel.add(Dense(1))",
        "model.compile(loss='mse', optimizer='adam')",
    ];
    let thin = json!({
        "model": {"type": "keras.src.models.sequential.Sequential", "kind": "keras_model"},
        "X": array(&[100, 5], "float64"),
        "y": array(&[100], "float64")
    });
    fires(
        "KS001",
        1,
        "model.fit(X, y, epochs=2)",
        thin.clone(),
        &keras,
    );
    let fitting = json!({
        "model": {"type": "keras.src.models.sequential.Sequential", "kind": "keras_model"},
        "X": array(&[100, 8], "float64"),
        "y": array(&[100], "float64")
    });
    silent("model.fit(X, y, epochs=2)", fitting, &keras);
    // A torch module built in an earlier cell, which the facts do not describe.
    let torch = [
        "import torch\nimport torch.nn as nn",
        "net = nn.Sequential(nn.Linear(10, 4), nn.ReLU())",
    ];
    let inputs = json!({"x": tensor(&[8, 12], "torch.float32", "cpu")});
    fires("TO001", 1, "out = net(x)", inputs, &torch);
    let fitting = json!({"x": tensor(&[8, 10], "torch.float32", "cpu")});
    silent("out = net(x)", fitting, &torch);
}

#[test]
fn a_rebuilt_object_that_one_the_facts_describe_may_share_is_not_rebuilt() {
    // `view` and `df` are one frame; the facts say what `df` holds now (a column `c` that code
    // the executed cells do not show added), so `view` is not rebuilt from the cells.
    let facts = json!({"df": frame(&[("a", "int64"), ("c", "int64")], 2)});
    silent(
        "view['c']",
        facts,
        &[
            "import pandas as pd",
            "df = pd.DataFrame({'a': [1, 2]})\nview = df",
        ],
    );
}

#[test]
fn probe_facts_are_not_second_guessed_by_the_executed_cells() {
    // Facts from the live kernel carry their cost; the kernel may have run code no executed
    // cell shows, so nothing is rebuilt.
    let runtime: RuntimeInfo = serde_json::from_value(json!({
        "variables": {},
        "cost": {"ms": 1.0, "bytes": 10}
    }))
    .expect("facts parse");
    let cell = "df['a'].sum()";
    let parsed_target = crane_analysis::ParsedCell::parse(cell);
    let analysis = crane_analysis::analyze_parsed(&parsed_target);
    let executed = vec![
        "import pandas as pd".to_owned(),
        "df = pd.DataFrame({'b': [1]})".to_owned(),
    ];
    let findings = rules::check(&CheckContext {
        target: &parsed_target,
        analysis: analysis.as_ref(),
        runtime: &runtime,
        executed_cells: &ExecutedCells::new(&executed),
    });
    assert!(findings.is_empty(), "{findings:#?}");
}

#[test]
fn view_size_mismatch_fires_and_reshaped_tensors_keep_their_shape() {
    let facts = json!({
        "x": tensor(&[4, 10], "torch.float32", "cpu"),
        "images": tensor(&[64, 1, 28, 28], "torch.float32", "cpu"),
        "model": sequential(json!({"type": "Linear", "in_features": 784}), "cpu")
    });
    fires(
        "TO007",
        1,
        "x.view(-1, 12)",
        facts.clone(),
        &["x = images = model = 1"],
    );
    fires(
        "TO007",
        1,
        "x.reshape(3, 3)",
        facts.clone(),
        &["x = images = model = 1"],
    );
    silent(
        "x.view(-1, 5)\nx.view(8, 5)",
        facts.clone(),
        &["x = images = model = 1"],
    );
    // The flattened batch is what the Linear layer sees.
    silent(
        "out = model(images.reshape(images.size(0), -1))",
        facts.clone(),
        &["x = images = model = 1"],
    );
    fires(
        "TO001",
        1,
        "out = model(images.reshape(128, -1))",
        facts.clone(),
        &["x = images = model = 1"],
    );
    fires(
        "TO001",
        2,
        "flat = images.flatten().unsqueeze(0)\nout = model(flat)",
        facts,
        &["x = images = model = 1"],
    );
}

#[test]
fn a_selection_the_probe_did_not_evaluate_is_worked_out_from_its_frame() {
    // The probe refuses a selection that would copy too much (pandas before copy-on-write):
    // its entry carries only the reason, and the frame's own facts decide.
    let refused = json!({
        "type": "", "kind": "other", "S": {}, "R": {"owner_type": "pandas.core.frame.DataFrame"}, "V": {},
        "error": "not evaluated: the selection would copy about 76 MiB"
    });
    let facts = |selection: &str| {
        let mut variables =
            json!({ "df": frame(&[("a", "float64"), ("b", "float64")], 5_000_000) });
        variables[selection] = refused.clone();
        variables
    };
    fires(
        "PD001",
        1,
        "X = df[['a', 'zz']]",
        facts("df[['a', 'zz']]"),
        &[],
    );
    silent("X = df[['a', 'b']]", facts("df[['a', 'b']]"), &[]);
}
