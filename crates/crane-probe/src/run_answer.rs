//! The module's answers to a run of a cell (the kernel's fork's or the replica's), read into
//! the report's types ([`crate::run_report`]).

use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use crate::fork::{millis, Forked, ProcessEnd};
use crate::run_report::{
    Abridged, BlockedAttempt, DryRunError, DryRunException, DryRunOutcome, DryRunReport,
    DryRunResult, DryRunTimings, MemoryRequest, ReplicaReport, SealReport, Unsupported,
};

/// An abridged run's answer as its outcome; `None` when the cell had nothing to abridge.
pub(crate) fn read_abridgeable_run_answer(
    answer: Value,
) -> Result<Option<DryRunOutcome>, DryRunError> {
    if answer.get("status").and_then(Value::as_str) == Some("not_abridgeable") {
        return Ok(None);
    }
    read_run_answer(answer).map(Some)
}

/// A run's answer (of the kernel's fork or of the replica's) as its outcome.
pub(crate) fn read_run_answer(answer: Value) -> Result<DryRunOutcome, DryRunError> {
    let answer: RunAnswer = serde_json::from_value(answer).map_err(DryRunError::Malformed)?;
    Ok(answer.into_outcome())
}

#[derive(Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
enum RunAnswer {
    Unsupported {
        reasons: Vec<String>,
    },
    Completed {
        #[serde(flatten)]
        exception: Option<RawException>,
        duration_ms: f64,
        seal: Option<RawSeal>,
        abridged: Option<Box<Abridged>>,
        /// What the failing statement reads that is not the kernel's (a replica's run).
        #[serde(default)]
        depends_on: Vec<String>,
        replica: Option<Box<ReplicaReport>>,
        #[serde(flatten)]
        common: Forked,
    },
    MemoryLimit {
        #[serde(flatten)]
        exception: Option<RawException>,
        used_bytes: Option<u64>,
        request: Option<MemoryRequest>,
        duration_ms: Option<f64>,
        #[serde(flatten)]
        common: Forked,
    },
    TimedOut {
        timeout_ms: f64,
        #[serde(flatten)]
        common: Forked,
    },
    Died {
        signal: Option<i32>,
        exit_code: Option<i32>,
        #[serde(flatten)]
        common: Forked,
    },
}

#[derive(Deserialize)]
struct RawException {
    exception: String,
    message: String,
    traceback: Vec<String>,
    line: Option<u32>,
}

impl From<RawException> for DryRunException {
    fn from(raw: RawException) -> Self {
        DryRunException {
            exception: raw.exception,
            message: raw.message,
            traceback: raw.traceback,
            line: raw.line,
        }
    }
}

#[derive(Deserialize)]
struct RawSeal {
    attempts: Vec<BlockedAttempt>,
    trapped: u64,
    remapped: u32,
    landlock_abi: Option<u32>,
    ms: f64,
}

impl RawSeal {
    fn report(&self) -> SealReport {
        SealReport {
            remapped: self.remapped,
            landlock_abi: self.landlock_abi,
            trapped: self.trapped,
            cost: millis(self.ms),
        }
    }
}

impl RunAnswer {
    fn into_outcome(self) -> DryRunOutcome {
        let mut seal_report = None;
        let mut abridged = None;
        let mut replica = None;
        let (result, run_ms, common) = match self {
            RunAnswer::Unsupported { reasons } => {
                return DryRunOutcome::Unsupported {
                    reasons: reasons.into_iter().map(Unsupported::Kernel).collect(),
                }
            }
            RunAnswer::Completed {
                exception,
                duration_ms,
                seal,
                abridged: shortened,
                depends_on,
                replica: rebuilt,
                common,
            } => {
                abridged = shortened;
                replica = rebuilt.map(|mut rebuilt| {
                    rebuilt.depends_on = match &abridged {
                        Some(abridged) => abridged.depends_on.clone(),
                        None => depends_on,
                    };
                    rebuilt
                });
                seal_report = seal.as_ref().map(|seal| Box::new(seal.report()));
                let mut attempts = seal.map(|seal| seal.attempts).unwrap_or_default();
                // A call trapped in native code is noted when Python next runs a handler; if
                // the cell's frame was unwound by then, the call failed in the statement the
                // exception came out of.
                let raised_at = exception.as_ref().and_then(|raw| raw.line);
                for attempt in &mut attempts {
                    attempt.line = attempt.line.or(raised_at);
                }
                let result = match exception {
                    // Nothing that ran after an attempt is what the cell would do for real.
                    exception if !attempts.is_empty() => DryRunResult::Blocked {
                        attempts,
                        exception: exception.map(Into::into),
                    },
                    Some(raw) => DryRunResult::Raised(raw.into()),
                    None => DryRunResult::Passed,
                };
                (result, Some(duration_ms), common)
            }
            RunAnswer::MemoryLimit {
                exception,
                used_bytes,
                request,
                duration_ms,
                common,
            } => {
                let result = DryRunResult::MemoryLimit {
                    exception: exception.map(Into::into),
                    used_bytes,
                    request,
                };
                (result, duration_ms, common)
            }
            RunAnswer::TimedOut { timeout_ms, common } => {
                let after = Duration::from_secs_f64(timeout_ms / 1000.0);
                (DryRunResult::TimedOut { after }, None, common)
            }
            RunAnswer::Died {
                signal,
                exit_code,
                common,
            } => {
                let end = ProcessEnd::from_status(signal, exit_code);
                (DryRunResult::Died(end), None, common)
            }
        };
        DryRunOutcome::Ran(DryRunReport {
            result,
            timings: DryRunTimings {
                fork: common.fork_time(),
                run: run_ms.map(millis),
                teardown: common.teardown_time(),
                full_run: None,
            },
            stdout_tail: common.stdout_tail,
            memory_limit_bytes: common.memory_limit_bytes,
            child_pid: common.pid,
            seal: seal_report,
            abridged,
            replica,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_of_each_kind_parse() {
        let common = json!({"protocol": 1, "pid": 42, "fork_ms": 1.5, "teardown_ms": 2.0,
                            "stdout_tail": "hi\n", "memory_limit_bytes": 1024});
        let with = |extra: Value| {
            let mut answer = common.clone();
            answer
                .as_object_mut()
                .expect("object")
                .extend(extra.as_object().expect("object").clone());
            serde_json::from_value::<RunAnswer>(answer)
                .expect("parses")
                .into_outcome()
        };
        let DryRunOutcome::Ran(passed) =
            with(json!({"status": "completed", "ok": true, "duration_ms": 3.0}))
        else {
            panic!("not a run")
        };
        assert!(passed.is_ok());
        assert_eq!(passed.timings.run, Some(Duration::from_millis(3)));
        assert_eq!(passed.child_pid, 42);
        let DryRunOutcome::Ran(raised) = with(json!({"status": "completed", "ok": false,
            "exception": "KeyError", "message": "'a'", "traceback": ["t"], "line": 2, "duration_ms": 1.0}))
        else {
            panic!("not a run")
        };
        assert_eq!(
            raised.exception().map(|e| (e.exception.as_str(), e.line)),
            Some(("KeyError", Some(2)))
        );
        let DryRunOutcome::Ran(killed) = with(json!({"status": "died", "signal": 11})) else {
            panic!("not a run")
        };
        assert_eq!(killed.result, DryRunResult::Died(ProcessEnd::Signal(11)));
        let DryRunOutcome::Ran(watched) =
            with(json!({"status": "memory_limit", "limit_bytes": 1024, "used_bytes": 2048}))
        else {
            panic!("not a run")
        };
        assert_eq!(
            watched.result,
            DryRunResult::MemoryLimit {
                exception: None,
                used_bytes: Some(2048),
                request: None,
            }
        );
        let DryRunOutcome::Ran(refused) = with(json!({"status": "memory_limit",
            "exception": "MemoryError", "message": "Unable to allocate", "traceback": [], "line": 1,
            "request": {"bytes": 8_000_000_000_000u64, "what": "an array", "available_bytes": 23_456_789_012u64,
                        "available_in": "the machine", "certain": "refused"}}))
        else {
            panic!("not a run")
        };
        let DryRunResult::MemoryLimit {
            request: Some(request),
            exception: Some(_),
            ..
        } = &refused.result
        else {
            panic!("no request: {refused:?}")
        };
        assert_eq!(request.needs(), "needs more than 8000 GB; 23 GB available");
    }
}
