//! What a user reads for each rule: every rule of the catalogue runs on its own catalogue
//! example (the cell `crane rules` and `docs/rules.md` show), given the runtime facts its
//! comment states, and the finding is rendered as text: the rule, the exception and line with
//! the source around it, the diagnosis, the evidence, the status, and the verdict the findings
//! combine into. Each rule's text is a snapshot in `tests/snapshots/`
//! (`catalogue_examples__<CODE>.snap`); a changed message fails the test until the snapshot is
//! reviewed and accepted (CONTRIBUTING.md, "Snapshots").

// Shared with the rule tests; the examples use only `check`.
#[allow(dead_code)]
mod common;

use crane_detect::rules::{self, RuleCode, RuleInfo};
use crane_detect::{combine, Finding};
use serde_json::{json, Value};

use common::{array, frame};

fn series(len: u64, dtype: &str) -> Value {
    json!({"type": "pandas.core.series.Series", "kind": "series", "S": {"shape": [len]}, "R": {"dtype": dtype}, "V": {}})
}

fn module(name: &str) -> Value {
    json!({"type": "builtins.module", "kind": "pymodule", "R": {"module": name}})
}

fn estimator(path: &str, fitted: bool) -> Value {
    let class = path.rsplit('.').next().unwrap_or(path);
    json!({"type": path, "kind": "estimator", "S": {}, "R": {"estimator": class}, "V": {"fitted": fitted}})
}

fn tensor(shape: &[u64], dtype: &str, device: &str) -> Value {
    json!({"type": "torch.Tensor", "kind": "tensor", "S": {"shape": shape}, "R": {"dtype": dtype, "device": device}})
}

fn sequential(first: Value, device: &str) -> Value {
    json!({"type": "torch.nn.modules.container.Sequential", "kind": "torch_module",
           "S": {"first_layer": first, "layers": [first]}, "R": {"device": device}})
}

fn keras_model(input: Value, last_units: u64, loss: &str, compiled: bool) -> Value {
    json!({"type": "keras.src.models.sequential.Sequential", "kind": "keras_model",
           "S": {"input_shape": input, "last_layer": {"type": "Dense", "units": last_units}},
           "R": {"loss": loss}, "V": {"compiled": compiled}})
}

/// The library versions the compiled-in signature snapshot was read from, as a case records
/// them (NB005 applies the snapshot only to a case whose versions it matches).
fn snapshot_versions() -> Value {
    let snapshot = crane_detect::snapshot::snapshot().expect("the signature snapshot reads");
    json!({"pandas": snapshot.version("pandas").expect("the snapshot has pandas")})
}

const PANDAS: &str = "import pandas as pd\ndf = pd.read_csv('data.csv')";
const NUMPY: &str = "import numpy as np";
const PLOTS: &str = "import numpy as np\nimport pandas as pd\nimport matplotlib.pyplot as plt";

/// The runtime facts of `code`'s catalogue example, as its comment states them, and the cells
/// executed before it (which bind the names the example reads).
fn facts_of(code: &str) -> (Value, Vec<&'static str>) {
    let (variables, executed): (Value, Vec<&str>) = match code {
        "NB001" => (json!({}), vec![NUMPY, "X = np.ones((4, 2))"]),
        "NB002" => (
            json!({"np": module("numpy"),
                   "np.matrixmul": {"type": "", "kind": "absent", "R": {"owner_type": "module"}}}),
            vec![NUMPY, "a = b = np.ones((2, 2))"],
        ),
        "NB003" => (
            json!({"df": frame(&[("a", "int64"), ("b", "int64")], 5)}),
            vec![PANDAS],
        ),
        "NB004" => (
            json!({"history": {"type": "keras.src.callbacks.history.History", "kind": "history"},
                   "history.history": {"type": "builtins.dict", "kind": "dict", "S": {"len": 4},
                       "R": {"keys": ["loss", "accuracy", "val_loss", "val_accuracy"]}, "V": {}}}),
            vec!["history = model.fit(X, y, epochs=5)"],
        ),
        "NB005" => {
            let facts =
                json!({"variables": {"pd": module("pandas")}, "libraries": snapshot_versions()});
            return (facts, vec!["import pandas as pd"]);
        }
        "PD001" | "PD002" | "PD003" | "PD004" => (
            json!({"df": frame(&[("a", "int64"), ("b", "int64")], 5)}),
            vec![PANDAS],
        ),
        "PD005" => (
            json!({"left": frame(&[("id", "int64"), ("x", "int64")], 5),
                   "right": frame(&[("key", "int64"), ("y", "int64")], 5)}),
            vec!["left = right = 1"],
        ),
        "PD006" => (json!({"df": frame(&[("date", "int64")], 5)}), vec![PANDAS]),
        "PD007" => (
            json!({"left": frame(&[("id", "int64"), ("x", "int64")], 5),
                   "right": frame(&[("id", "int64"), ("y", "int64")], 5)}),
            vec!["left = right = 1"],
        ),
        "PD008" => (
            json!({"df": frame(&[("a", "int64"), ("b", "int64")], 3)}),
            vec![PANDAS],
        ),
        "PD009" => {
            let mut df = frame(&[("Installs", "object")], 5);
            df["V"]["columns"] = json!({"Installs": {"examples": ["10,000+", "500+"]}});
            (json!({"df": df}), vec![PANDAS])
        }
        "NP001" => (json!({"x": array(&[10], "float64")}), vec!["x = 1"]),
        "NP002" => (
            json!({"a": array(&[3, 4], "float64"), "b": array(&[3, 4], "float64")}),
            vec!["a = b = 1"],
        ),
        "NP003" => (
            json!({"a": array(&[3, 4], "float64"), "b": array(&[3, 5], "float64")}),
            vec![NUMPY, "a = b = 1"],
        ),
        "NP004" => (json!({"x": array(&[3, 4], "float64")}), vec!["x = 1"]),
        "NP005" => (
            json!({"a": array(&[3, 4], "float64"), "b": array(&[3], "float64")}),
            vec!["a = b = 1"],
        ),
        "NP006" => (json!({"y": array(&[6], "int64")}), vec![NUMPY, "y = 1"]),
        "NP007" => (
            json!({"train": array(&[10, 3], "float64")}),
            vec!["train = 1"],
        ),
        "NP008" => (
            json!({"images": array(&[20, 32, 32, 3], "float32")}),
            vec![NUMPY, "images = 1"],
        ),
        "NP009" => (
            json!({"labels": array(&[50000, 1], "uint8")}),
            vec!["labels = 1"],
        ),
        "SK001" => (
            json!({"model": estimator("sklearn.linear_model._logistic.LogisticRegression", false)}),
            vec!["model = X_test = 1"],
        ),
        "SK002" => {
            let mut model = estimator("sklearn.linear_model._base.LinearRegression", true);
            model["S"]["n_features_in"] = json!(4);
            (
                json!({"model": model, "X": array(&[100, 3], "float64")}),
                vec!["model = X = 1"],
            )
        }
        "SK003" => {
            let mut model = estimator("sklearn.linear_model._base.LinearRegression", true);
            model["S"]["n_features_in"] = json!(2);
            model["R"]["feature_names_in"] = json!(["a", "b"]);
            (
                json!({"model": model, "X": frame(&[("a", "int64"), ("c", "int64")], 10)}),
                vec!["model = X = 1"],
            )
        }
        "SK004" => {
            let mut x = frame(&[("a", "float64")], 10);
            x["V"]["has_nan"] = json!(true);
            (
                json!({"X": x,
                       "model": estimator("sklearn.linear_model._logistic.LogisticRegression", false)}),
                vec!["model = X = y = 1"],
            )
        }
        "SK005" => {
            let mut x = frame(&[("age", "int64"), ("city", "object")], 10);
            x["V"]["columns"] = json!({"city": {"examples": ["Paris", "Lima"]}});
            (
                json!({"X": x}),
                vec!["from sklearn.linear_model import LinearRegression\nX = y = 1"],
            )
        }
        "SK006" => (
            json!({"le": {"type": "sklearn.preprocessing._label.LabelEncoder", "kind": "estimator",
                          "R": {"estimator": "LabelEncoder"},
                          "V": {"fitted": true, "classes": ["a", "b"], "n_classes": 2}}}),
            vec!["le = 1"],
        ),
        "SK007" => {
            let mut y = series(5, "int64");
            y["V"]["n_unique"] = json!(3);
            (
                json!({"y": y, "X": array(&[5, 3], "float64")}),
                vec!["from sklearn.model_selection import train_test_split\nX = y = 1"],
            )
        }
        "SK008" => (
            json!({"X": array(&[100, 3], "float64")}),
            vec!["from sklearn.decomposition import PCA\nX = 1"],
        ),
        "SK009" => (
            json!({"X": array(&[0, 4], "float64")}),
            vec!["from sklearn.model_selection import train_test_split\nX = y = 1"],
        ),
        "SK010" => (
            json!({"df": frame(&[("age", "int64"), ("price", "float64")], 10)}),
            vec!["from sklearn.linear_model import LinearRegression\ndf = y = 1"],
        ),
        "SK011" => (
            json!({"model": estimator("sklearn.linear_model._logistic.LogisticRegression", false),
                   "X_train": array(&[800, 5], "float64"),
                   "y_test": array(&[200], "int64")}),
            vec!["model = X_train = y_test = 1"],
        ),
        "SK012" => (
            json!({"X": array(&[100, 3], "float64"), "y": array(&[100], "int64")}),
            vec!["from sklearn.linear_model import LogisticRegression\nX = y = 1"],
        ),
        "SK013" => {
            let mut model = estimator("sklearn.svm._classes.SVC", true);
            model["S"]["n_features_in"] = json!(10);
            (json!({"model": model}), vec!["model = 1"])
        }
        "SK014" => (
            json!({"y_test": array(&[200], "int64"), "y_prob": array(&[200, 2], "float64")}),
            vec!["from sklearn.metrics import accuracy_score\ny_test = y_prob = 1"],
        ),
        "TO001" => (
            json!({"model": sequential(json!({"type": "Linear", "in_features": 10}), "cpu"),
                   "x": tensor(&[32, 12], "torch.float32", "cpu")}),
            vec!["model = x = 1"],
        ),
        "TO002" => (
            json!({"model": sequential(json!({"type": "Conv2d", "in_channels": 3}), "cpu"),
                   "x": tensor(&[8, 1, 28, 28], "torch.float32", "cpu")}),
            vec!["model = x = 1"],
        ),
        "TO003" => (
            json!({"model": sequential(json!({"type": "Linear", "in_features": 12}), "cuda:0"),
                   "x": tensor(&[32, 12], "torch.float32", "cpu")}),
            vec!["model = x = 1"],
        ),
        "TO004" => (
            json!({"model": sequential(json!({"type": "Linear", "in_features": 12}), "cpu"),
                   "x": tensor(&[32, 12], "torch.int64", "cpu")}),
            vec!["model = x = 1"],
        ),
        "TO005" => (
            json!({"criterion": {"type": "torch.nn.modules.loss.CrossEntropyLoss",
                                 "kind": "torch_module", "S": {"n_layers": 0, "n_params": 0},
                                 "R": {"training": true}},
                   "logits": tensor(&[4, 3], "torch.float32", "cpu"),
                   "y": tensor(&[4], "torch.float32", "cpu")}),
            vec!["criterion = logits = y = 1"],
        ),
        "TO006" => (
            json!({"bn": {"type": "torch.nn.modules.batchnorm.BatchNorm1d", "kind": "torch_module",
                          "S": {"layer": {"type": "BatchNorm1d", "num_features": 3}},
                          "R": {"device": "cpu"}},
                   "x": tensor(&[4, 5], "torch.float32", "cpu")}),
            vec!["bn = x = 1"],
        ),
        "TO007" => (
            json!({"x": tensor(&[4, 10], "torch.float32", "cpu")}),
            vec!["x = 1"],
        ),
        "KS001" => (
            json!({"model": keras_model(json!([null, 784]), 10, "categorical_crossentropy", true),
                   "X": array(&[60000, 28, 28], "float32"),
                   "y": array(&[60000, 10], "float32")}),
            vec!["model = X = y = 1"],
        ),
        "KS002" => (
            json!({"model": keras_model(json!([null, 4]), 1, "categorical_crossentropy", true),
                   "X": array(&[100, 4], "float32"),
                   "y": array(&[100, 10], "float32")}),
            vec!["model = X = y = 1"],
        ),
        "KS003" => (
            json!({"model": {"type": "keras.src.models.sequential.Sequential", "kind": "keras_model",
                             "S": {}, "R": {}, "V": {"compiled": false}},
                   "X": array(&[100, 4], "float32")}),
            vec!["model = X = y = 1"],
        ),
        "KS004" => (
            json!({"model": keras_model(json!([null, 4]), 1, "mse", true),
                   "X": array(&[100, 4], "float32"),
                   "y": array(&[90], "float32")}),
            vec!["model = X = y = 1"],
        ),
        "CT001" => (
            json!({"df": frame(&[("id", "int64"), ("x", "int64")], 5),
                   "other": frame(&[("id", "int64"), ("y", "int64")], 5)}),
            vec![PANDAS, "other = df"],
        ),
        "CT002" => (
            json!({"X": array(&[100, 3], "float64")}),
            vec!["import pandas as pd\nX = 1"],
        ),
        "CT003" => (json!({"v": array(&[4], "float64")}), vec![NUMPY, "v = 1"]),
        "PL001" => (
            json!({"a": array(&[10], "float64"), "b": array(&[12], "float64"),
                   "plt": module("matplotlib.pyplot")}),
            vec![PLOTS, "a = b = 1"],
        ),
        "PL002" => (
            json!({"df": frame(&[("a", "int64"), ("b", "int64")], 5)}),
            vec![PANDAS, "import seaborn as sns"],
        ),
        "PL003" => (
            json!({"s": series(40, "float64")}),
            vec!["from statsmodels.graphics.tsaplots import plot_pacf\ns = 1"],
        ),
        "PL004" => (json!({}), vec![PLOTS]),
        other => panic!(
            "{other} has no facts for its catalogue example here: add them to `facts_of`, then \
             the snapshot (CONTRIBUTING.md, \"Snapshots\")"
        ),
    };
    (json!({"variables": variables}), executed)
}

/// The text a user reads of the findings on `cell`: each finding's fields, plainly, then the
/// verdict they combine into.
fn render(cell: &str, findings: &[Finding]) -> String {
    let mut out = String::new();
    if findings.is_empty() {
        out.push_str("no finding\n");
    }
    for finding in findings {
        let rule = finding
            .rule
            .map(|rule| format!("{} {}", rule.code(), rule.info().name))
            .unwrap_or_else(|| "no rule".to_owned());
        out.push_str(&format!(
            "{rule}: {:?}, {} (confidence {:.2})\n",
            finding.status,
            if finding.crash { "crash" } else { "no crash" },
            finding.confidence
        ));
        let exception = finding.exception.as_deref().unwrap_or("an exception");
        match finding.line {
            Some(line) => out.push_str(&format!("  raises {exception} at line {line}\n")),
            None => out.push_str(&format!("  raises {exception}\n")),
        }
        if let Some(line) = finding.line {
            out.push_str(&source_context(cell, line));
        }
        out.push_str(&format!("  why: {}\n", finding.diagnosis));
        if !finding.evidence.is_empty() {
            out.push_str("  evidence:\n");
            for fact in &finding.evidence {
                out.push_str(&format!("    - {fact}\n"));
            }
        }
    }
    let verdict = combine(findings);
    out.push_str(&format!(
        "verdict: {}{}{} (confidence {:.2})\n",
        if verdict.crash { "crash" } else { "no crash" },
        verdict
            .exception
            .as_deref()
            .map(|exception| format!(", {exception}"))
            .unwrap_or_default(),
        verdict
            .line
            .map(|line| format!(" at line {line}"))
            .unwrap_or_default(),
        verdict.confidence
    ));
    out.push_str(&format!("  why: {}\n", verdict.diagnosis));
    out
}

/// Up to two lines before `line` and one after, the line itself marked, as `crane check`
/// shows them.
fn source_context(source: &str, line: u32) -> String {
    let line = line as usize;
    let lines: Vec<&str> = source.lines().collect();
    if line == 0 || line > lines.len() {
        return String::new();
    }
    let first = line.saturating_sub(2).max(1);
    let last = (line + 1).min(lines.len());
    let width = last.to_string().len();
    let mut out = String::new();
    for number in first..=last {
        let marker = if number == line { ">" } else { " " };
        out.push_str(&format!(
            "  {marker} {number:>width$} | {}\n",
            lines[number - 1]
        ));
    }
    out
}

/// Runs `code`'s rule on its catalogue example and checks the text against its snapshot.
fn check_example(code: &str) {
    let rule: &RuleInfo = code
        .parse::<RuleCode>()
        .unwrap_or_else(|_| panic!("{code} is not in the catalogue"))
        .info();
    let (facts, executed) = facts_of(code);
    let findings = common::check(rule.example, facts, &executed);
    assert!(
        findings
            .iter()
            .any(|finding| finding.rule.map(RuleCode::code) == Some(code) && finding.crash),
        "{code} does not fire on its own catalogue example:\n{}\n{findings:#?}",
        rule.example
    );
    insta::with_settings!({
        description => format!("{code} {} on its catalogue example:\n{}", rule.name, rule.example),
        omit_expression => true,
    }, {
        insta::assert_snapshot!(code, render(rule.example, &findings));
    });
}

macro_rules! examples {
    ($($test:ident => $code:literal,)+) => {
        $(
            #[test]
            fn $test() {
                check_example($code);
            }
        )+

        /// The codes given a test above.
        const CODES: &[&str] = &[$($code),+];
    };
}

examples! {
    nb001 => "NB001", nb002 => "NB002", nb003 => "NB003", nb004 => "NB004", nb005 => "NB005",
    pd001 => "PD001", pd002 => "PD002", pd003 => "PD003", pd004 => "PD004", pd005 => "PD005",
    pd006 => "PD006", pd007 => "PD007", pd008 => "PD008", pd009 => "PD009",
    np001 => "NP001", np002 => "NP002", np003 => "NP003", np004 => "NP004", np005 => "NP005",
    np006 => "NP006", np007 => "NP007", np008 => "NP008", np009 => "NP009",
    sk001 => "SK001", sk002 => "SK002", sk003 => "SK003", sk004 => "SK004", sk005 => "SK005",
    sk006 => "SK006", sk007 => "SK007", sk008 => "SK008", sk009 => "SK009", sk010 => "SK010",
    sk011 => "SK011", sk012 => "SK012", sk013 => "SK013", sk014 => "SK014",
    to001 => "TO001", to002 => "TO002", to003 => "TO003", to004 => "TO004", to005 => "TO005",
    to006 => "TO006", to007 => "TO007",
    ks001 => "KS001", ks002 => "KS002", ks003 => "KS003", ks004 => "KS004",
    ct001 => "CT001", ct002 => "CT002", ct003 => "CT003",
    pl001 => "PL001", pl002 => "PL002", pl003 => "PL003", pl004 => "PL004",
}

#[test]
fn every_rule_of_the_catalogue_has_its_example_snapshotted() {
    let missing: Vec<&str> = rules::catalogue()
        .iter()
        .map(|rule| rule.code)
        .filter(|code| !CODES.contains(code))
        .collect();
    assert!(
        missing.is_empty(),
        "rules without a snapshot of their catalogue example: {missing:?}; add each to \
         `examples!` and `facts_of`"
    );
}
