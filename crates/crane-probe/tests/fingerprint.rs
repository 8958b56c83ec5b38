//! Fingerprints in a real kernel: which objects get one (so a failed or held cell that read
//! them can be kept), and that a change to one, through any path the notebook's code can take,
//! changes it.

mod common;

use std::time::Duration;

use common::{run_cell, start_kernel};
use crane_probe::fingerprint::{in_kernel, Fingerprints};

const TIMEOUT: Duration = Duration::from_secs(60);

async fn prints(kernel: &mut crane_kernel::KernelSession, names: &[&str]) -> Fingerprints {
    let names: Vec<String> = names.iter().map(|name| (*name).to_owned()).collect();
    in_kernel(kernel, &names, TIMEOUT)
        .await
        .expect("fingerprints answer")
}

fn has(prints: &Fingerprints, name: &str) -> bool {
    prints
        .get(name)
        .is_some_and(|print| print.as_deref().is_some_and(|print| print != "absent"))
}

/// The standard library's immutable values, and the notebook's code that reads attributes by
/// `getattr`/`hasattr` or sets them by `setattr`, have fingerprints; a subclass of a value class
/// the notebook defined, and code that reaches the namespace, have none.
#[tokio::test]
async fn values_and_attribute_builtins_have_fingerprints() {
    let mut kernel = start_kernel().await;
    run_cell(
        &mut kernel,
        r#"
import datetime, decimal, fractions, pathlib, uuid
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.linear_model import LinearRegression

IMAGES_PATH = pathlib.Path("images") / "end_to_end"
started = datetime.datetime(2026, 12, 6, 7, 30)
window = (datetime.date(2026, 1, 1), datetime.timedelta(days=3))
price = decimal.Decimal("1.10")
share = fractions.Fraction(1, 3)
key = uuid.UUID(int=7)
span = range(3, 30, 3)

class FromRegressor(TransformerMixin, BaseEstimator):
    def __init__(self, estimator):
        self.estimator = estimator
    def fit(self, X, y=None):
        self.estimator_ = clone(self.estimator).fit(X, y)
        if hasattr(self.estimator, "feature_names_in_"):
            self.feature_names_in_ = self.estimator.feature_names_in_
        return self
    def transform(self, X):
        outputs = getattr(self.estimator_, "n_outputs_", 1)
        return self.estimator_.predict(X).reshape(-1, outputs)

transformer = FromRegressor(LinearRegression())

class Tally:
    pass
tally = Tally()
def count(by):
    setattr(tally, "n", getattr(tally, "n", 0) + by)

class MyPath(type(pathlib.Path())):
    pass
mine = MyPath("x")

def peek():
    return globals()["span"]

from sklearn.metrics.pairwise import rbf_kernel
def similarity(X, Y):
    return rbf_kernel(X, Y, gamma=0.1)

seen = []
class Recorder(TransformerMixin, BaseEstimator):
    def fit(self, X, y=None):
        return self
    def transform(self, X):
        seen.append(len(X))
        return X
"#,
    )
    .await;
    let names = [
        "IMAGES_PATH",
        "started",
        "window",
        "price",
        "share",
        "key",
        "span",
        "FromRegressor",
        "transformer",
        "count",
        "tally",
        "mine",
        "peek",
    ];
    // scikit-learn wraps a transformer's `transform` in a function of its own: the notebook's
    // method in its closure is walked all the same, and the global it appends to with it.
    let recorder = prints(&mut kernel, &["Recorder"]).await;
    assert!(has(&recorder, "Recorder"), "{recorder:?}");
    assert!(has(&recorder, "seen"), "{recorder:?}");
    // A library's own wrapper (scikit-learn's parameter validation around `rbf_kernel`) holds
    // the library's state, read by identity: the function, and the notebook's code calling it,
    // have fingerprints.
    let library = prints(&mut kernel, &["similarity"]).await;
    assert!(has(&library, "similarity"), "{library:?}");
    assert!(has(&library, "rbf_kernel"), "{library:?}");
    let before = prints(&mut kernel, &names).await;
    for name in &names[..11] {
        assert!(has(&before, name), "{name} has no fingerprint: {before:?}");
    }
    assert_eq!(before.get("mine"), Some(&None), "{before:?}");
    assert_eq!(before.get("peek"), Some(&None), "{before:?}");

    // A call that sets an attribute by setattr changes the object it reaches: the global the
    // function's code names is fingerprinted with it, and its fingerprint changes.
    run_cell(&mut kernel, "count(2)").await;
    let after = prints(&mut kernel, &names).await;
    assert_ne!(before.get("tally"), after.get("tally"));
    for name in ["IMAGES_PATH", "started", "price", "transformer", "count"] {
        assert_eq!(before.get(name), after.get(name), "{name} changed");
    }
    run_cell(
        &mut kernel,
        "IMAGES_PATH = IMAGES_PATH / 'more'\nstarted = started.replace(hour=8)",
    )
    .await;
    let moved = prints(&mut kernel, &names).await;
    assert_ne!(after.get("IMAGES_PATH"), moved.get("IMAGES_PATH"));
    assert_ne!(after.get("started"), moved.get("started"));
    kernel.close().await.expect("closes");
}

/// Which arrays only the notebook's namespace reaches (`python/crane_alone.py`): an array and
/// its views bound in the namespace are alone together, with all their names; one a list, a
/// dict or a view nobody named holds is not; nor is any once a function the kernel ran names
/// it, or a way to the namespace.
#[tokio::test]
async fn arrays_only_the_namespace_reaches_are_alone_with_their_names() {
    let mut kernel = start_kernel().await;
    run_cell(
        &mut kernel,
        "import numpy as np\nX = np.arange(20.).reshape(4, 5)\nfull = np.zeros((6, 2))\nXt, Xv = full[:4], full[4:]\nheld = np.ones(3)\nholder = [held]\nkeyed = np.ones(3)\nby_key = {'k': keyed}\nhidden = np.ones(4)\n_view = hidden[1:]\ndel _view\nsecret = np.ones(4)\nstash = secret[1:]\ndel stash\nsaved = np.ones(2)\ndef reads_saved():\n    return saved.sum()",
    )
    .await;
    // `X` last: the answer's own walk over the names holds none of them when it counts.
    let names: Vec<String> = [
        "Xt", "full", "held", "keyed", "hidden", "saved", "holder", "X",
    ]
    .map(str::to_owned)
    .to_vec();
    let answer = crane_probe::fingerprint::data_names(&mut kernel, &names, TIMEOUT)
        .await
        .expect("data names answer");
    let alone = |name: &str| answer.alone.get(name).cloned();
    assert_eq!(alone("X"), Some(vec!["X".to_owned()]));
    let family = Some(["Xt", "Xv", "full"].map(str::to_owned).to_vec());
    assert_eq!((alone("Xt"), alone("full")), (family.clone(), family));
    // A view deleted again holds nothing; the array is alone once more.
    assert_eq!(alone("hidden"), Some(vec!["hidden".to_owned()]));
    for name in ["held", "keyed", "saved", "holder"] {
        assert_eq!(alone(name), None, "{name}: {answer:?}");
    }
    run_cell(
        &mut kernel,
        "kept_view = X[1:]\nlost = [kept_view]\ndel kept_view",
    )
    .await;
    let answer = crane_probe::fingerprint::data_names(&mut kernel, &names, TIMEOUT)
        .await
        .expect("data names answer");
    assert_eq!(answer.alone.get("X"), None, "a view in a list: {answer:?}");
    run_cell(&mut kernel, "del lost\ndef sneak():\n    return globals()").await;
    let answer = crane_probe::fingerprint::data_names(&mut kernel, &names, TIMEOUT)
        .await
        .expect("data names answer");
    assert!(
        answer.alone.is_empty(),
        "code reaches the namespace: {answer:?}"
    );
    kernel.close().await.expect("closes");
}

/// Reading an array for the check's runtime facts leaves no reference to it behind, even where
/// the collector does not run: the array is still alone once the facts are answered.
#[tokio::test]
async fn the_facts_read_of_an_array_leave_it_alone() {
    let mut kernel = start_kernel().await;
    run_cell(
        &mut kernel,
        "import gc\nimport numpy as np\nX = np.arange(20.).reshape(4, 5)\ngc.disable()",
    )
    .await;
    let expressions = ["X".to_owned(), "X.shape".to_owned()];
    let facts = crane_probe::summarize(&mut kernel, &expressions, &Default::default())
        .await
        .expect("facts answer");
    assert!(facts.variables.contains_key("X"), "{facts:?}");
    let answer = crane_probe::fingerprint::data_names(&mut kernel, &["X".to_owned()], TIMEOUT)
        .await
        .expect("data names answer");
    assert_eq!(
        answer.alone.get("X"),
        Some(&vec!["X".to_owned()]),
        "{answer:?}"
    );
    kernel.close().await.expect("closes");
}
