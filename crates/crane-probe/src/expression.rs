//! How crane talks to the modules it keeps in the kernel (the probe and the dry-run module):
//! one Python expression, evaluated as the user expression of a silent, empty execute request,
//! so the execution count, history, `_` and outputs stay as they were; and the small pieces of
//! Python source both need.

use std::time::Duration;

use crane_kernel::{
    ExecuteOptions, Execution, ExecutionOutcome, KernelError, KernelSession, UserExpression,
};
use serde_json::Value;

/// Why an expression gave no text.
pub(crate) enum EvaluationError {
    Kernel(KernelError),
    TimedOut(Duration),
    /// The request never began: someone else's cell held the kernel for the whole timeout.
    Busy(Duration),
    Raised {
        ename: String,
        evalue: String,
    },
    NoAnswer,
}

/// Evaluate `expression` under the user-expression name `key` and return its `text/plain`.
pub(crate) async fn evaluate(
    session: &mut KernelSession,
    key: &str,
    expression: &str,
    timeout: Duration,
) -> Result<String, EvaluationError> {
    let execution = evaluate_all(session, &[(key, expression)], timeout).await?;
    answer(&execution, key)
}

/// Evaluate each `(key, expression)` as a user expression of one silent, empty execute request;
/// the kernel evaluates them in the order of their keys. Read each with [`answer`].
pub(crate) async fn evaluate_all(
    session: &mut KernelSession,
    expressions: &[(&str, &str)],
    timeout: Duration,
) -> Result<Execution, EvaluationError> {
    let options = expressions.iter().fold(
        ExecuteOptions::silent().with_timeout(timeout),
        |options, (key, expression)| options.with_user_expression(*key, *expression),
    );
    let execution = session
        .execute("", &options)
        .await
        .map_err(EvaluationError::Kernel)?;
    match execution.outcome {
        ExecutionOutcome::Abandoned { .. } => Err(EvaluationError::Busy(timeout)),
        ExecutionOutcome::TimedOut { .. } => Err(EvaluationError::TimedOut(timeout)),
        ExecutionOutcome::Finished(_) => Ok(execution),
    }
}

/// The `text/plain` of the user expression `key` in an execution's reply.
pub(crate) fn answer(execution: &Execution, key: &str) -> Result<String, EvaluationError> {
    let reply = execution.reply().ok_or(EvaluationError::NoAnswer)?;
    match reply.user_expressions.get(key) {
        Some(UserExpression::Value { data, .. }) => data
            .get("text/plain")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or(EvaluationError::NoAnswer),
        Some(UserExpression::Error(error)) => Err(EvaluationError::Raised {
            ename: error.ename.clone(),
            evalue: error.evalue.clone(),
        }),
        None => Err(EvaluationError::NoAnswer),
    }
}

/// A Python string literal of `text`: a JSON string is one (serde_json escapes quotes,
/// backslashes and control characters the way Python reads them).
pub(crate) fn py_str(text: &str) -> String {
    Value::String(text.to_owned()).to_string()
}

/// FNV-1a, 64 bits: the version digest of a module's source.
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(0x0100_0000_01b3);
        i += 1;
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_literal_round_trips_awkward_text() {
        let text = "a'b\"c\\d\ne\u{7}f\u{e9}";
        assert_eq!(py_str(text), "\"a'b\\\"c\\\\d\\ne\\u0007f\u{e9}\"");
    }

    #[test]
    fn digest_depends_on_every_byte() {
        assert_ne!(fnv1a(b"probe"), fnv1a(b"probf"));
    }
}
