//! A cell's run in a fork, as the dry run and the replica both drive it: the limits of one run
//! ([`DryRunOptions`]) and the stages of a cell that may be long ([`Abridging`]: a full run
//! within the first budget, then an abridged one), whichever process forks (the kernel, or the
//! replica). The Python side is `python/crane_cell_run.py`.

use std::time::Duration;

use crate::run_report::{DryRunError, DryRunOutcome, DryRunReport, DryRunResult};

/// Limits and permissions of one dry run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DryRunOptions {
    /// The fork is killed when the cell runs longer than this.
    pub timeout: Duration,
    /// A cell still running after `abridge.after` is stopped and run again, abridged (loops
    /// to their first and last iteration, library training loops shortened), within
    /// `abridge.timeout`; `None`: never abridged.
    pub abridge: Option<AbridgeOptions>,
    /// Memory the fork may make its own (new allocations and pages copied on write); `None`
    /// means half of the memory available when the dry run starts.
    pub memory_limit_bytes: Option<u64>,
    /// Run cells that write files, talk to the network or run programs. The fork shares the
    /// file system and the outside world with the kernel: these effects are real.
    pub allow_side_effects: bool,
    /// Refuse ([`crate::run_report::Unsupported::Unsealed`]) rather than run a fork that cannot be sealed: for
    /// dry runs nobody asked for by name (`--dry-run auto`).
    pub sealed_only: bool,
}

impl Default for DryRunOptions {
    fn default() -> Self {
        DryRunOptions {
            timeout: Duration::from_secs(30),
            abridge: Some(AbridgeOptions {
                after: Duration::from_secs(3),
                timeout: Duration::from_secs(30),
            }),
            memory_limit_bytes: None,
            allow_side_effects: false,
            sealed_only: false,
        }
    }
}

/// When a long cell's dry run gives way to an abridged one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbridgeOptions {
    /// The full run's time before crane stops it (at most the dry run's `timeout`).
    pub after: Duration,
    /// The abridged run's own timeout.
    pub timeout: Duration,
}

/// The runs of a cell that may be long (of the kernel's fork or of the replica's): a full run
/// within the first budget, then, if it was still going, an abridged one; a cell with nothing
/// to abridge (its run answers `None`) gets its whole timeout instead, from the start.
pub(crate) struct Abridging<'a> {
    options: &'a DryRunOptions,
    full_timeout: Duration,
    started: std::time::Instant,
    stage: Stage,
}

enum Stage {
    Full,
    Abridged {
        full: Box<DryRunOutcome>,
        full_run: Duration,
    },
    Whole,
}

/// What to do next: run the cell with this timeout (abridged or not), or report.
pub(crate) enum Next {
    Run { timeout: Duration, abridge: bool },
    Done(Box<DryRunOutcome>),
}

impl<'a> Abridging<'a> {
    pub(crate) fn start(options: &'a DryRunOptions) -> (Self, Next) {
        let full_timeout = match options.abridge {
            Some(abridge) => options.timeout.min(abridge.after),
            None => options.timeout,
        };
        let abridging = Abridging {
            options,
            full_timeout,
            started: std::time::Instant::now(),
            stage: Stage::Full,
        };
        let first = Next::Run {
            timeout: full_timeout,
            abridge: false,
        };
        (abridging, first)
    }

    /// The next step after a run that ended with `ran` (`None`: nothing to abridge).
    pub(crate) fn after(&mut self, ran: Option<DryRunOutcome>) -> Result<Next, DryRunError> {
        match std::mem::replace(&mut self.stage, Stage::Whole) {
            Stage::Full => {
                let full = ran.ok_or(DryRunError::NoAnswer)?;
                let timed_out = matches!(
                    &full,
                    DryRunOutcome::Ran(DryRunReport {
                        result: DryRunResult::TimedOut { .. },
                        ..
                    })
                );
                match self.options.abridge {
                    Some(abridge) if timed_out => {
                        let full_run = self.started.elapsed();
                        self.stage = Stage::Abridged {
                            full: Box::new(full),
                            full_run,
                        };
                        Ok(Next::Run {
                            timeout: abridge.timeout,
                            abridge: true,
                        })
                    }
                    _ => Ok(Next::Done(Box::new(full))),
                }
            }
            Stage::Abridged { full, full_run } => match ran {
                Some(mut abridged) => {
                    if let DryRunOutcome::Ran(report) = &mut abridged {
                        report.timings.full_run = Some(full_run);
                    }
                    Ok(Next::Done(Box::new(abridged)))
                }
                None if self.full_timeout >= self.options.timeout => Ok(Next::Done(full)),
                None => Ok(Next::Run {
                    timeout: self.options.timeout,
                    abridge: false,
                }),
            },
            Stage::Whole => ran
                .map(|ran| Next::Done(Box::new(ran)))
                .ok_or(DryRunError::NoAnswer),
        }
    }
}
