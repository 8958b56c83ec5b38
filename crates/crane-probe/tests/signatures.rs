//! The call signatures the probe reads, against the real libraries: each hazard is a callable
//! whose shown signature is not what a call binds to, shown so in the kernel, and the probe
//! gives no signature for it; plain library functions, methods and classes get theirs.

mod common;

use common::{eval_silent, facts, run_cell, start_kernel, var};
use crane_runtime::{Binder, ParameterKind};

const SETUP: &str = r#"
import fractions, functools, http, inspect, warnings
import numpy as np, pandas as pd
from sklearn.model_selection import train_test_split
from sklearn.linear_model import LogisticRegression
df = pd.DataFrame({'a': [1.0, 2.0]})
to_number = functools.partial(pd.to_numeric, errors='coerce')

def refused_by_shown_signature(function, *args, **kwargs):
    try:
        inspect.signature(function).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return True
    return False

def accepted(call):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        call()
    return True

hazards = {
    # pandas' deprecate_nonkeyword_arguments shows keyword-only parameters, takes positional ones.
    'df.mean': refused_by_shown_signature(df.mean, 0) and accepted(lambda: df.mean(0)),
    # A partial's keywords can be given again.
    'to_number': accepted(lambda: to_number(['1'], errors='raise')),
    # A ufunc takes out= and where= whatever its text signature shows.
    'np.add': accepted(lambda: np.add(1, 2, out=None, where=True)),
    # Fraction's arguments go to its __new__ (its __init__ is object's).
    'fractions.Fraction': accepted(lambda: fractions.Fraction('1/2')),
    # An enum's metaclass __call__ looks the value up.
    'http.HTTPStatus': accepted(lambda: http.HTTPStatus(200)),
}
"#;

#[tokio::test]
async fn signatures_are_given_only_where_they_are_what_a_call_binds_to() {
    let mut kernel = start_kernel().await;
    run_cell(&mut kernel, SETUP).await;
    let (hazards, _) = eval_silent(&mut kernel, "all(hazards.values())").await;
    assert_eq!(hazards, "True", "a hazard did not show in the kernel");

    let info = facts(
        &mut kernel,
        &[
            "df.mean",
            "to_number",
            "np.add",
            "np.concatenate",
            "fractions.Fraction",
            "http.HTTPStatus",
            "df.merge",
            "pd.DataFrame.merge",
            "pd.DataFrame.from_dict",
            "pd.read_csv",
            "train_test_split",
            "LogisticRegression",
        ],
    )
    .await;
    for (expression, reason) in [
        ("df.mean", "wrapper"),
        ("to_number", "partial"),
        ("np.add", "not a Python function"),
        ("np.concatenate", "not a Python function"),
        ("fractions.Fraction", "__new__"),
        ("http.HTTPStatus", "metaclass"),
    ] {
        let variable = var(&info, expression);
        assert!(variable.call_signature().is_none(), "{expression}");
        let unknown = variable.call_signature_unknown().unwrap_or_default();
        assert!(unknown.contains(reason), "{expression}: {unknown:?}");
    }

    // Bound and unbound: the same function, `self` filled or not.
    let bound = var(&info, "df.merge").call_signature().expect("df.merge");
    let unbound = var(&info, "pd.DataFrame.merge")
        .call_signature()
        .expect("DataFrame.merge");
    assert!(bound.bound && !unbound.bound);
    assert_eq!(bound.parameters, unbound.parameters);
    assert_eq!(bound.parameters.parameters()[0].name, "self");
    assert_eq!(bound.name, "DataFrame.merge");
    // A classmethod is bound to its class.
    let from_dict = var(&info, "pd.DataFrame.from_dict")
        .call_signature()
        .expect("from_dict");
    assert!(from_dict.bound);
    assert_eq!(from_dict.parameters.parameters()[0].name, "cls");

    let read_csv = var(&info, "pd.read_csv")
        .call_signature()
        .expect("read_csv");
    assert_eq!(read_csv.binder, Binder::Interpreter);
    let sep = read_csv
        .parameters
        .parameters()
        .iter()
        .find(|p| p.name == "sep")
        .expect("sep");
    assert!(sep.default);
    let split = var(&info, "train_test_split")
        .call_signature()
        .expect("train_test_split");
    assert_eq!(split.binder, Binder::SignatureBind);
    assert_eq!(
        split.parameters.parameters()[0].kind,
        ParameterKind::VarPositional
    );
    let init = var(&info, "LogisticRegression")
        .call_signature()
        .expect("LogisticRegression");
    assert_eq!(init.name, "LogisticRegression.__init__");
    assert!(init.bound);
    kernel.close().await.expect("closes");
}
