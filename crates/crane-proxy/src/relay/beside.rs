//! A long cell's dry run beside its real run, in a fork of the snapshot taken before it: started
//! once the cell has run for half a second, ended with the cell, and, when it crashes first
//! with a certain crash under the `stop` policy, the cell stopped (and then rolled back).

use std::time::Duration;

use super::{log, Proxy, Slot};
use crate::check::Checker;
use crate::snapshots::SnapshotId;
use crate::stopped;

/// How long a dry run beside a cell's real run may go on: it holds nothing up, and ends with
/// the cell.
pub(super) const BESIDE_TIMEOUT: Duration = Duration::from_secs(60);

/// For how long a dry run beside a cell's real run shares the processor with it at the
/// kernel's own priority: long enough for an abridged run and its second run to answer while
/// a stop still saves most of a long cell, short enough that a cell whose dry run takes longer
/// loses at most that share; after it the dry run gets only what the kernel leaves idle.
pub(super) const BESIDE_FULL_SHARE: Duration = Duration::from_secs(10);

const BESIDE_BUDGET: crane_probe::snapshot::BesideBudget = crane_probe::snapshot::BesideBudget {
    timeout: BESIDE_TIMEOUT,
    full_share: BESIDE_FULL_SHARE,
};

/// How long a cell runs before its dry run beside it starts: one that ends sooner never needed
/// it, and costs no fork.
pub(super) const BESIDE_DELAY: Duration = Duration::from_millis(500);

/// A cell's dry run beside its real run, from the snapshot taken before it (`Checked::beside`).
pub(super) enum Beside {
    None,
    /// Asked for by the check; it starts once the cell's snapshot is known.
    Wanted,
    /// Waiting out `BESIDE_DELAY`, then running in a fork of the snapshot.
    Started(std::sync::Arc<BesideCancel>),
}

/// Ends a dry run beside a cell: before it starts (it then never does) or while it runs (its
/// connection to the snapshot is shut down, and the snapshot ends its fork).
#[derive(Default)]
pub(super) struct BesideCancel(std::sync::Mutex<BesideLine>);

/// The run's connection once it has one; `Cancelled` once ended.
#[derive(Default)]
pub(super) enum BesideLine {
    #[default]
    NotYet,
    Open(std::os::unix::net::UnixStream),
    Cancelled,
}

impl BesideCancel {
    pub(super) fn line(&self) -> std::sync::MutexGuard<'_, BesideLine> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(super) fn cancel(&self) {
        if let BesideLine::Open(connection) =
            std::mem::replace(&mut *self.line(), BesideLine::Cancelled)
        {
            let _ = connection.shutdown(std::net::Shutdown::Both);
        }
    }

    pub(super) fn is_cancelled(&self) -> bool {
        matches!(*self.line(), BesideLine::Cancelled)
    }

    /// Keep the run's connection to end it by; `false` when it was cancelled already (and is
    /// now ended).
    pub(super) fn keep(&self, connection: std::os::unix::net::UnixStream) -> bool {
        let mut line = self.line();
        if matches!(*line, BesideLine::Cancelled) {
            let _ = connection.shutdown(std::net::Shutdown::Both);
            return false;
        }
        *line = BesideLine::Open(connection);
        true
    }
}

/// How a dry run beside a cell's real run ended.
pub(super) struct BesideDone {
    pub(super) msg_id: String,
    pub(super) outcome: Result<Option<crane_probe::dry_run::DryRunOutcome>, String>,
}

impl Proxy {
    /// The running cell's dry run beside it, once it is wanted and its snapshot known: after
    /// `BESIDE_DELAY`, asked of the snapshot, its end awaited on a thread of its own
    /// (`beside_ended`).
    pub(super) fn start_beside(&mut self) {
        let Some(running) = self.state.shell.running.as_mut() else {
            return;
        };
        let (Beside::Wanted, Some(SnapshotId::Fork(pid))) = (&running.beside, running.snapshot)
        else {
            return;
        };
        running.beside = Beside::None;
        let Some(socket) = self.state.snapshots.socket(pid) else {
            return;
        };
        let cancel = std::sync::Arc::new(BesideCancel::default());
        let sender = self.state.beside_sender.clone();
        let (msg_id, code) = (running.msg_id.clone(), running.code().to_owned());
        let cancelled = std::sync::Arc::clone(&cancel);
        let waiting = std::thread::Builder::new()
            .name("crane-beside".into())
            .spawn(move || {
                std::thread::sleep(BESIDE_DELAY);
                if cancelled.is_cancelled() {
                    return;
                }
                let outcome =
                    crane_probe::snapshot::BesideRun::start(&socket, &code, BESIDE_BUDGET)
                        .and_then(|run| {
                            let connection = run
                                .canceller()
                                .map_err(crane_probe::snapshot::BesideError::Unreachable)?;
                            if !cancelled.keep(connection) {
                                return Ok(None);
                            }
                            run.wait(
                                crane_probe::dry_run::abridged_run_limit(BESIDE_TIMEOUT)
                                    + crane_probe::snapshot::TAKE_TIMEOUT,
                            )
                        })
                        .map_err(|error| error.to_string());
                let _ = sender.send(BesideDone { msg_id, outcome });
            });
        match waiting {
            Ok(_) => {
                running.beside = Beside::Started(cancel);
                self.state.beside_note = Some(
                    "the last cell has a dry run beside it, from its snapshot, once it has run for half a second"
                        .into(),
                );
            }
            Err(error) => log(&format!("no dry run beside the cell: {error}")),
        }
    }

    /// A dry run beside the running cell ended: a certain crash stops the cell (under the
    /// `stop` policy), which is then rolled back; any other crash is shown as a warning.
    pub(super) async fn beside_ended(&mut self, done: BesideDone, slot: &Slot<impl Checker>) {
        let Some(running) = self
            .state
            .shell
            .running
            .as_mut()
            .filter(|running| running.msg_id == done.msg_id && running.stopped_by.is_none())
        else {
            return;
        };
        running.beside = Beside::None;
        let note = |text: String| Some(format!("the last cell's dry run beside it {text}"));
        let outcome = match done.outcome {
            Ok(Some(outcome)) => outcome,
            Ok(None) => {
                self.state.beside_note =
                    note("had nothing to cut short: the real run is the whole check".into());
                return;
            }
            Err(error) => {
                self.state.beside_note = note(format!("ended without an answer: {error}"));
                return;
            }
        };
        let finding = crane_detect::dry_run_finding(&outcome);
        if !finding.crash || outcome.reads_closed_stdin() {
            self.state.beside_note = note(match finding.status.is_undecided() {
                true => format!("decided nothing: {}", finding.diagnosis),
                false => "ended without a crash".into(),
            });
            return;
        }
        let prediction = format!(
            "{} predicted: {}",
            finding.exception.as_deref().unwrap_or("a crash"),
            finding.diagnosis
        );
        if finding.status.is_certain() && self.state.settings.policy == crate::Policy::Stop {
            self.state.beside_note = note(format!(
                "crashed first, and crane stopped the cell: {prediction}"
            ));
            let rolled_back = running
                .snapshot
                .is_some_and(|snapshot| self.state.snapshots.get(snapshot).is_some());
            self.state.stopped = Some((
                running.msg_id.clone(),
                stopped::stopped_error(
                    &finding,
                    running.code(),
                    running.relayed.elapsed(),
                    rolled_back,
                ),
            ));
            running.stopped_by = Some(prediction);
            self.interrupt(slot).await;
            return;
        }
        self.state.beside_note = note(format!("crashed; the cell went on: {prediction}"));
        let raw_header = running.raw_header.clone();
        let text = stopped::likely_crash_warning(&finding, running.relayed.elapsed());
        self.publish_under(&raw_header, &text).await;
    }
}
