//! The expression strings are what Python's `ast.unparse` prints, and evaluate to the same
//! objects as the source they were taken from (checked by the project's Python interpreter).

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use crane_analysis::analyze_cell;

fn python() -> PathBuf {
    std::env::var_os("CRANE_PYTHON").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python"),
        PathBuf::from,
    )
}

const CHECK: &str = r#"
import ast, json, sys, types
import numpy as np
import pandas as pd

df = pd.DataFrame({"a": [1, 2], "b": [3, 4], "price": [5.0, 6.0], "it's": [7, 8], "Price": [1, 1]})
X = np.arange(20).reshape(4, 5)
d = {"k": {"j": 42}}
s = {1.5: "f", 16: "h", None: "n", True: "t", b"x": "b", (1, 2): "t2", 1e16: "big",
     1e-05: "small", 0.0001: "m", 123456789.125: "p", "tab\there": 1, "new\nline": 2,
     "uni é": 3, '"dq"': 4, "mixed ' and \"": 5, -2: "neg", "\xa0nbsp": 6, b"q'uote": 7}
a = types.SimpleNamespace(b=types.SimpleNamespace(c=1))

def same(x, y):
    if isinstance(x, (pd.DataFrame, pd.Series)):
        return x.equals(y)
    if isinstance(x, np.ndarray):
        return np.array_equal(x, y)
    return x is y or x == y

results = []
for source, canonical in json.load(sys.stdin):
    unparsed = ast.unparse(ast.parse(source, mode="eval"))
    results.append({"unparse": unparsed, "same": bool(same(eval(source), eval(canonical)))})
print(json.dumps(results))
"#;

#[test]
fn expression_strings_match_python() {
    let sources = [
        "df['price']",
        "df[['a','b']]",
        "df[\"it's\"]",
        "df.Price",
        "df.loc[:, 'a']",
        "df.iloc[0, 1:]",
        "df.loc[ : , [ 'a' , 'b' ] ]",
        "X[3]",
        "X[:, 0]",
        "X[1:3]",
        "X[::2]",
        "X[-1]",
        "X[1,]",
        "X[(1, 2)]",
        "X[1:3, ::-1]",
        "d[\"k\"][\"j\"]",
        "a.b.c",
        "s[1.50]",
        "s[0x10]",
        "s[None]",
        "s[True]",
        "s[b'x']",
        "s[b\"q'uote\"]",
        "s[1e16]",
        "s[1E-5]",
        "s[0.0001]",
        "s[123456789.125]",
        "s[-2]",
        "s['tab\\there']",
        "s['new\\nline']",
        "s['uni é']",
        "s['\"dq\"']",
        "s['mixed \\' and \"']",
        "s['\\xa0nbsp']",
        "s[1_6]",
    ];
    let pairs: Vec<(String, String)> = sources
        .iter()
        .map(|source| {
            let analysis = analyze_cell(&format!("print({source})"))
                .unwrap_or_else(|error| panic!("{source}: {error}"));
            let canonical = analysis.calls[0].args[0]
                .expr
                .clone()
                .unwrap_or_else(|| panic!("{source} should be a reference"));
            (source.to_string(), canonical)
        })
        .collect();

    let mut child = Command::new(python())
        .args(["-c", CHECK])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the project's Python (set CRANE_PYTHON or run scripts/setup-python.sh)");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(serde_json::to_string(&pairs).expect("json").as_bytes())
        .expect("write to Python");
    let output = child.wait_with_output().expect("Python runs");
    assert!(output.status.success(), "the Python check failed");
    let results: Vec<serde_json::Value> =
        serde_json::from_slice(&output.stdout).expect("JSON from Python");

    for ((source, canonical), result) in pairs.iter().zip(&results) {
        assert_eq!(
            canonical,
            result["unparse"].as_str().expect("unparse"),
            "expression string of {source}"
        );
        assert_eq!(result["same"], true, "{canonical} evaluates like {source}");
    }
    assert_eq!(results.len(), pairs.len());
}

#[test]
fn callee_and_receiver_strings_match_python() {
    let analysis = analyze_cell("df.groupby( 'a' ).agg(x = ('b','sum'), **opts).reset_index()")
        .expect("parses");
    let callees: Vec<&str> = analysis
        .calls
        .iter()
        .map(|call| call.callee.as_str())
        .collect();
    assert_eq!(
        callees,
        [
            "df.groupby('a').agg(x=('b', 'sum'), **opts).reset_index",
            "df.groupby('a').agg",
            "df.groupby",
        ]
    );
}
