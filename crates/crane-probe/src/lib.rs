//! crane's probe: the Python module that summarizes live objects inside the user's kernel
//! (`python/probe/`, one file per library beside the core and the requests, standard library
//! only, shipped inside the binary) and the driver that injects it and asks it for runtime
//! facts.
//!
//! The module is injected through the `user_expressions` of a silent execute request (the kernel
//! evaluates them without running a cell, so the execution count, `_`, `Out` and the history
//! stay as they were, and nothing is printed), and from then on called through crane's own shell
//! message, which runs nothing of IPython's around it (`module.rs`). The module lives in
//! `sys.modules` under [`PROBE_MODULE`], never in the user namespace; it is injected on first use
//! and replaced when the kernel holds another version (checked by [`probe_digest`]).
//!
//! - [`summarize`]: runtime facts ([`RuntimeInfo`]) of the expressions a cell reads;
//! - [`RideAlong`]: the same facts, asked with the execute request of the cell before;
//! - [`api_docs`]: docstrings of the library functions and methods a cell calls;
//! - [`inject`]: make sure the current probe is in the kernel;
//! - [`dry_run`]: run a cell in a copy-on-write fork of the kernel (a second module, injected
//!   the same way);
//! - [`abridge`]: which cells look long (an abridged dry run could shorten them);
//! - [`training_time`]: an upper bound on a Keras fit's time, from the model's and data's facts;
//! - [`snapshot`]: keep idle copy-on-write forks of the kernel from before its cells, and make
//!   one of them the kernel (a role in the dry-run module).

pub mod abridge;
pub mod ahead;
mod bytecode;
mod cell_run;
pub mod dry_run;
mod expression;
pub mod fingerprint;
mod fork;
mod module;
pub mod replica;
mod run_answer;
mod run_module;
mod run_report;
pub mod snapshot;
pub mod training_time;

use std::sync::OnceLock;
use std::time::Duration;

use crane_kernel::{ExecuteOptions, Execution, KernelError, KernelSession};

use crate::expression::EvaluationError;
use crate::module::{KernelModule, ModuleError};
pub use crate::module::{ReplacedBuiltins, CRANE_BUILTINS};
use crane_runtime::RuntimeInfo;
use serde::Deserialize;
use serde_json::{json, Value};

/// The probe's Python source, behind the guard against user code and the call channel it
/// shares with the dry-run module: one file per library in `python/probe/`, joined in this
/// order (a file's module-level code reads only what the files before it define;
/// `tests/joined_modules.rs` checks it).
pub const PROBE_SOURCE: &str = concat!(
    include_str!("../python/crane_guard.py"),
    include_str!("../python/crane_channel.py"),
    include_str!("../python/probe/core.py"),
    include_str!("../python/probe/objects.py"),
    include_str!("../python/probe/numpy.py"),
    include_str!("../python/probe/pandas.py"),
    include_str!("../python/probe/sklearn.py"),
    include_str!("../python/probe/torch.py"),
    include_str!("../python/probe/keras.py"),
    include_str!("../python/probe/plots.py"),
    include_str!("../python/probe/dispatch.py"),
    include_str!("../python/probe/expressions.py"),
    include_str!("../python/probe/requests.py"),
    include_str!("../python/probe/signatures.py")
);

/// The private name of the probe module in the kernel's `sys.modules`.
pub const PROBE_MODULE: &str = "_crane_probe";

/// A digest of [`PROBE_SOURCE`] (FNV-1a, 64 bits), the version check between this binary and
/// the module a kernel holds.
pub fn probe_digest() -> String {
    PROBE.digest()
}

static PROBE_DIGEST: OnceLock<String> = OnceLock::new();

const PROBE: KernelModule = KernelModule {
    name: PROBE_MODULE,
    source: PROBE_SOURCE,
    digest: &PROBE_DIGEST,
    filename: "<crane-probe>",
    key: "crane_probe",
};

/// Limits of one probe call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    /// Work the probe may spend on value facts, in elements scanned (an element of object or
    /// string data counts ten): the bound that decides which facts an answer has, the same on
    /// a fast machine and a loaded one.
    pub work: u64,
    /// Wall-clock time for value facts, checked between objects and columns; structure facts
    /// may take up to twice as long. A safety net for objects slower than their size says; with
    /// the default, ordinary data never reaches it.
    pub time: Duration,
    /// Size of the JSON answer; larger answers are shrunk (examples first, then value facts).
    pub max_bytes: usize,
    /// How long crane waits for the kernel's reply before interrupting it.
    pub timeout: Duration,
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            work: 20_000_000,
            time: Duration::from_secs(1),
            max_bytes: 24_000,
            timeout: Duration::from_secs(30),
        }
    }
}

/// The docstring and signature of one library callable a cell uses.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ApiDoc {
    /// The callee as the cell spells it (`df.merge`, `pd.read_csv`).
    pub callee: String,
    /// Its qualified name (`pandas.read_csv`, `DataFrame.merge`).
    pub name: String,
    /// Its signature without annotations, when Python can tell it.
    #[serde(default)]
    pub signature: Option<String>,
    /// The docstring, cut to the caller's share of the character budget.
    pub doc: String,
    /// The docstring was cut.
    #[serde(default)]
    pub truncated: bool,
}

/// Why a probe call failed.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error(transparent)]
    Kernel(#[from] KernelError),
    #[error("the kernel did not answer the probe within {0:?}")]
    TimedOut(Duration),
    #[error("the kernel was busy with another client's cell for {0:?}; crane did not interrupt it and checked nothing (run the check again when the cell has finished)")]
    Busy(Duration),
    #[error("the probe raised {ename} in the kernel: {evalue}")]
    Raised { ename: String, evalue: String },
    #[error("the kernel's reply to the probe had no text answer")]
    NoAnswer,
    #[error("the probe's answer is not valid JSON of the expected shape: {0}")]
    Malformed(#[source] serde_json::Error),
    #[error("the probe failed inside the kernel: {0}")]
    Failed(String),
    #[error("the kernel still lacks probe {expected} after injecting it")]
    NotInjected { expected: String },
    /// The user replaced builtins crane needs: crane refused, and the kernel is as it was.
    #[error("{0}")]
    BuiltinsReplaced(ReplacedBuiltins),
}

/// Make sure the kernel holds this version of the probe: injects it when absent or different.
/// Idempotent, and invisible to the user's program.
pub async fn inject(session: &mut KernelSession) -> Result<(), ProbeError> {
    Ok(PROBE.inject(session, Budget::default().timeout).await?)
}

/// One full collection in the kernel, just after this call is answered: the end of crane's
/// start-up work there, which would otherwise move a full collection into the user's first
/// cell (see `settle` in `python/probe/requests.py`). Only through crane's own message, whose
/// handler makes the collection: in a kernel that does not serve it (the probe was refused)
/// nothing is sent, not the injection again nor an execute request.
pub async fn settle_collector(session: &mut KernelSession) -> Result<(), ProbeError> {
    if session.handles(crate::module::CALL_REQUEST) {
        call(session, "settle", &json!({}), Budget::default().timeout).await?;
    }
    Ok(())
}

/// Runtime facts of `expressions` (names, attribute chains, constant subscripts, spelled as
/// crane's analysis prints them). Names bound nowhere come back in `missing`.
pub async fn summarize(
    session: &mut KernelSession,
    expressions: &[String],
    budget: &Budget,
) -> Result<RuntimeInfo, ProbeError> {
    let request = summarize_request(expressions, budget);
    let answer = call(session, "summarize", &request, budget.timeout).await?;
    serde_json::from_value(answer).map_err(ProbeError::Malformed)
}

fn summarize_request(expressions: &[String], budget: &Budget) -> Value {
    json!({
        "expressions": expressions,
        "work": budget.work,
        "budget_ms": budget.time.as_secs_f64() * 1000.0,
        "max_bytes": budget.max_bytes,
    })
}

/// Docstrings of the library functions, methods and classes `callees` denote (user-defined
/// ones are skipped), sharing `budget_chars` characters between them.
pub async fn api_docs(
    session: &mut KernelSession,
    callees: &[String],
    budget_chars: usize,
) -> Result<Vec<ApiDoc>, ProbeError> {
    #[derive(Deserialize)]
    struct Docs {
        docs: Vec<ApiDoc>,
    }
    let request = json!({ "callees": callees, "budget_chars": budget_chars });
    let answer = call(session, "api_docs", &request, Budget::default().timeout).await?;
    let docs: Docs = serde_json::from_value(answer).map_err(ProbeError::Malformed)?;
    Ok(docs.docs)
}

/// Call `function(request)` of the probe, injecting the probe first when the kernel lacks it.
async fn call(
    session: &mut KernelSession,
    function: &str,
    request: &Value,
    timeout: Duration,
) -> Result<Value, ProbeError> {
    let text = PROBE.call(session, function, request, timeout).await?;
    parse_answer(&text)
}

fn parse_answer(text: &str) -> Result<Value, ProbeError> {
    let answer: Value = serde_json::from_str(text).map_err(ProbeError::Malformed)?;
    if let Some(error) = answer.get("error").and_then(Value::as_str) {
        return Err(ProbeError::Failed(error.to_owned()));
    }
    Ok(answer)
}

/// A summary that rides on another execute request, typically the cell that runs just before
/// the one whose facts are wanted: the kernel evaluates it after that cell's code, in the state
/// the next cell will see, and the facts cost no round trip of their own.
///
/// Attach it with [`RideAlong::attach`], then read it from the execution with
/// [`RideAlong::read`]. Evaluated as a user expression, it is as invisible as [`summarize`].
#[derive(Debug, Clone)]
pub struct RideAlong {
    expression: String,
}

/// The user-expression name of a ride-along summary (distinct from crane's own silent calls).
const RIDE_ALONG_KEY: &str = "crane_probe_next";

impl RideAlong {
    pub fn summarize(expressions: &[String], budget: &Budget) -> Self {
        RideAlong {
            expression: PROBE.call_expression("summarize", &summarize_request(expressions, budget)),
        }
    }

    /// `options` with this summary added to its user expressions.
    pub fn attach(&self, options: ExecuteOptions) -> ExecuteOptions {
        options.with_user_expression(RIDE_ALONG_KEY, self.expression.as_str())
    }

    /// The facts the kernel computed, or `None` when it gave none (the cell raised, the probe
    /// was not injected, or the answer did not read); the caller then asks with [`summarize`],
    /// which also reports why.
    pub fn read(execution: &Execution) -> Option<RuntimeInfo> {
        let text = expression::answer(execution, RIDE_ALONG_KEY).ok()?;
        let answer = parse_answer(&text).ok()?;
        serde_json::from_value(answer).ok()
    }
}

impl From<ModuleError> for ProbeError {
    fn from(error: ModuleError) -> Self {
        match error {
            ModuleError::Evaluation(error) => error.into(),
            ModuleError::NotInjected => ProbeError::NotInjected {
                expected: probe_digest(),
            },
            ModuleError::BuiltinsReplaced(names) => ProbeError::BuiltinsReplaced(names),
        }
    }
}

impl From<EvaluationError> for ProbeError {
    fn from(error: EvaluationError) -> Self {
        match error {
            EvaluationError::Kernel(error) => ProbeError::Kernel(error),
            EvaluationError::TimedOut(after) => ProbeError::TimedOut(after),
            EvaluationError::Busy(after) => ProbeError::Busy(after),
            EvaluationError::Raised { ename, evalue } => ProbeError::Raised { ename, evalue },
            EvaluationError::NoAnswer => ProbeError::NoAnswer,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_is_sixteen_hex_digits() {
        assert_eq!(probe_digest().len(), 16);
    }
}
