//! What stops a check, sorted by whose fault it is: the caller maps each kind onto its own
//! answer (the command line onto an exit code, the checking kernel onto a note).

/// Whose fault a [`CheckError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The options or the input cannot work (a detector without a model, a bad prompt
    /// configuration).
    BadInput,
    /// The kernel failed or did not answer.
    Kernel,
    /// A detector could not judge the cell (an LLM client that could not be built, a kernel
    /// whose builtins the user replaced).
    Detector,
}

/// A check that could not run to its end.
#[derive(Debug)]
pub struct CheckError {
    pub kind: ErrorKind,
    pub error: anyhow::Error,
}

impl CheckError {
    pub fn bad_input(error: impl Into<anyhow::Error>) -> Self {
        Self {
            kind: ErrorKind::BadInput,
            error: error.into(),
        }
    }

    pub fn kernel(error: impl Into<anyhow::Error>) -> Self {
        Self {
            kind: ErrorKind::Kernel,
            error: error.into(),
        }
    }

    pub fn detector(error: impl Into<anyhow::Error>) -> Self {
        Self {
            kind: ErrorKind::Detector,
            error: error.into(),
        }
    }

    /// A probe call that failed: the kernel failed, except when crane refused a kernel whose
    /// builtins the user replaced, a check that could not run.
    pub fn probe(error: crane_probe::ProbeError) -> Self {
        match error {
            crane_probe::ProbeError::BuiltinsReplaced(_) => Self::detector(error),
            error => Self::kernel(error),
        }
    }

    /// The error and its causes on one line.
    pub fn message(&self) -> String {
        format!("{:#}", self.error)
    }
}
