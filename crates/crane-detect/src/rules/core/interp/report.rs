//! Reporting what the code certainly does: a proven crash becomes a finding, an exception
//! certainly raised ends the path, and both only in code that certainly runs and outside a `try`
//! whose handlers may catch it (`catches`: the exception classes a handler covers). One place
//! decides when the interpreter speaks, so every rule's finding passes the same test.

use super::Interp;
use crate::rules::{proven, RuleCode};

impl<'a> Interp<'a> {
    /// Report a proven crash, when the code certainly runs.
    pub(crate) fn report(
        &mut self,
        rule: RuleCode,
        line: u32,
        diagnosis: String,
        evidence: Vec<String>,
    ) {
        self.report_raising(rule, rule.info().exception, line, diagnosis, evidence);
    }

    /// Report a proven crash whose exception class is the caller's (a contract row's, or one
    /// that depends on the library version) rather than the catalogue's.
    pub(crate) fn report_raising(
        &mut self,
        rule: RuleCode,
        exception: &str,
        line: u32,
        diagnosis: String,
        evidence: Vec<String>,
    ) {
        if !self.certain || self.crashed {
            return;
        }
        let catalogued = rule.info().exception;
        if self.catching.iter().any(|(handlers, unknowns)| {
            self.unknowns > *unknowns
                || handlers
                    .iter()
                    .any(|h| catches(h.as_deref(), exception) || catches(h.as_deref(), catalogued))
        }) {
            // Caught, or maybe never reached: the rest of the `try` body may not run.
            self.give_up("crash in a try body");
            self.certain = false;
            return;
        }
        let (line, diagnosis) = match &self.foreign {
            Some((call, function)) => (
                *call,
                format!("{diagnosis} (inside `{function}`, defined in an executed cell, called on line {call})"),
            ),
            None => (line, diagnosis),
        };
        let mut finding = proven(rule, line, diagnosis, evidence);
        finding.exception = Some(exception.to_owned());
        self.findings.push(finding);
        self.crashed = true;
    }

    /// The code being run certainly raises `exception` (`None`: a class crane does not name):
    /// nothing after it runs on this path. A handler of a `try` being run may catch it, so the
    /// rest of that body is no longer certain; uncaught, the cell ends here, without a finding
    /// of its own (no rule proves it), and nothing after it is reported.
    pub(crate) fn raises(&mut self, exception: Option<&str>) {
        if !self.certain || self.crashed {
            return;
        }
        if self.catching.iter().any(|(handlers, unknowns)| {
            self.unknowns > *unknowns
                || handlers
                    .iter()
                    .any(|h| exception.is_none_or(|exception| catches(h.as_deref(), exception)))
        }) {
            self.give_up("raise in a try body");
            self.certain = false;
            return;
        }
        self.crashed = true;
        // Something unknown run before it in the statement may have raised first.
        let first = self.unknowns + self.unresolved == self.statement_unknowns;
        self.raised = Some(exception.filter(|_| first).map(str::to_owned));
    }

    /// A call into code that may change any kernel object: forget what came from the kernel.
    pub(super) fn give_up(&mut self, reason: &'static str) {
        *self.gave_up.entry(reason).or_default() += 1;
    }
}

/// Whether a handler for `handler` catches an `exception` a rule proves: the handler names the
/// class or one of its bases, or a class crane does not know (which might be a base).
fn catches(handler: Option<&str>, exception: &str) -> bool {
    const BASES: &[(&str, &[&str])] = &[
        ("KeyError", &["LookupError"]),
        ("IndexError", &["LookupError"]),
        ("NotFittedError", &["ValueError", "AttributeError"]),
        ("AxisError", &["ValueError", "IndexError", "LookupError"]),
        ("InvalidParameterError", &["ValueError", "TypeError"]),
        ("LinAlgError", &["ValueError"]),
    ];
    /// Builtin exception classes that are none of the bases of the classes rules prove.
    const OTHERS: &[&str] = &[
        "ArithmeticError",
        "ZeroDivisionError",
        "OverflowError",
        "FloatingPointError",
        "AssertionError",
        "ImportError",
        "ModuleNotFoundError",
        "OSError",
        "IOError",
        "EnvironmentError",
        "FileNotFoundError",
        "FileExistsError",
        "PermissionError",
        "IsADirectoryError",
        "NotADirectoryError",
        "TimeoutError",
        "ConnectionError",
        "EOFError",
        "StopIteration",
        "StopAsyncIteration",
        "KeyboardInterrupt",
        "SystemExit",
        "GeneratorExit",
        "MemoryError",
        "RecursionError",
        "NotImplementedError",
        "UnicodeError",
        "UnicodeDecodeError",
        "UnicodeEncodeError",
        "SyntaxError",
        "UnboundLocalError",
        "NameError",
        "AttributeError",
        "KeyError",
        "IndexError",
        "ValueError",
        "TypeError",
        "RuntimeError",
        "LookupError",
        "Warning",
        "UserWarning",
        "NotFittedError",
        "AxisError",
        "InvalidParameterError",
        "LinAlgError",
    ];
    let Some(handler) = handler else {
        return true;
    };
    if handler == exception || matches!(handler, "Exception" | "BaseException") {
        return true;
    }
    let bases = BASES
        .iter()
        .find(|(name, _)| *name == exception)
        .map_or(&[][..], |(_, bases)| bases);
    bases.contains(&handler) || !OTHERS.contains(&handler)
}
