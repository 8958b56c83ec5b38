//! Exit codes and the failures that map onto them (documented in `crane --help`).

pub const CRASH_PREDICTED: u8 = 1;
pub const BAD_INPUT: u8 = 2;
pub const KERNEL_FAILED: u8 = 3;
pub const DETECTOR_FAILED: u8 = 4;

/// How a command that ran to its end came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Success,
    CrashPredicted,
}

impl Outcome {
    pub fn code(self) -> u8 {
        match self {
            Outcome::Success => 0,
            Outcome::CrashPredicted => CRASH_PREDICTED,
        }
    }
}

/// A command that could not do its job, with the exit code that says why.
#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    pub error: anyhow::Error,
}

impl Failure {
    pub fn bad_input(error: impl Into<anyhow::Error>) -> Self {
        Self {
            code: BAD_INPUT,
            error: error.into(),
        }
    }

    pub fn kernel(error: impl Into<anyhow::Error>) -> Self {
        Self {
            code: KERNEL_FAILED,
            error: error.into(),
        }
    }

    /// A probe call that failed: the kernel failed (exit 3), except when crane refused a
    /// kernel whose builtins the user replaced, a check that could not run (exit 4).
    pub fn probe(error: crane_probe::ProbeError) -> Self {
        match error {
            crane_probe::ProbeError::BuiltinsReplaced(_) => Self::detector(error),
            error => Self::kernel(error),
        }
    }

    pub fn detector(error: impl Into<anyhow::Error>) -> Self {
        Self {
            code: DETECTOR_FAILED,
            error: error.into(),
        }
    }

    /// A stop signal ended the command (exit 128 + its number).
    pub fn stopped(signal: crate::signals::StopSignal) -> Self {
        Self {
            code: signal.exit_code(),
            error: anyhow::anyhow!("{}", signal.describe()),
        }
    }

    /// The error and its causes on one line.
    pub fn message(&self) -> String {
        format!("{:#}", self.error)
    }
}

/// A check the engine could not make, with the exit code of its kind.
impl From<crane_check::CheckError> for Failure {
    fn from(error: crane_check::CheckError) -> Self {
        let code = match error.kind {
            crane_check::ErrorKind::BadInput => BAD_INPUT,
            crane_check::ErrorKind::Kernel => KERNEL_FAILED,
            crane_check::ErrorKind::Detector => DETECTOR_FAILED,
        };
        Self {
            code,
            error: error.error,
        }
    }
}
