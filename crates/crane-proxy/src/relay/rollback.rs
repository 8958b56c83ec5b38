//! Returns to a snapshot: the takeover that makes a snapshot the kernel (or, for the fresh
//! start, a new kernel), the idle the kernel left owes the frontend, and `%crane rollback auto`
//! for a cell that raised, with crane's line under its error.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use crane_analysis::ParsedCell;
use crane_kernel::{read_connection_file, AttachOptions, AttachedKernel, KernelSession};
use jupyter_protocol::{Header, JupyterMessage, Status};
use zeromq::{SocketRecv, ZmqMessage};

use super::kernel::{raise_oom_score, Adopted};
use super::queue::REPLY_GRACE;
use super::wire::{forward, Back};
use super::{Proxy, Slot};
use crate::check::Checker;
use crate::death::KernelWatch;
use crate::effects;
use crate::failed::{self, AfterFailure};
use crate::snapshots::{Return, SnapshotId};

/// How long a snapshot may take to become the kernel.
pub(super) const TAKEOVER_TIMEOUT: Duration = Duration::from_secs(60);

/// What the kernel is after a return to `snapshot`.
pub(super) fn kernel_now(snapshot: SnapshotId) -> &'static str {
    match snapshot {
        SnapshotId::Fork(_) => "the kernel is the snapshot taken before it",
        SnapshotId::FreshStart => {
            "the kernel was started afresh behind crane, as it was before its first cell"
        }
    }
}

/// How long the kernel or a snapshot may take to fingerprint the objects a failed cell read.
const FINGERPRINT_TIMEOUT: Duration = Duration::from_secs(30);

/// What the comparison of a failed cell's objects with the snapshot before it found.
enum Compared {
    Unchanged,
    /// This object is not as it was.
    Changed(String),
    /// crane cannot tell (an object it cannot fingerprint, no snapshot to ask, no answer).
    Unsure,
}

/// A cell that raised with a snapshot before it, to be rolled back by itself (`%crane rollback
/// auto`) once the kernel's idle for it says all its outputs are shown.
pub(super) struct AutoRollback {
    pub(super) snapshot: SnapshotId,
    pub(super) msg_id: String,
    pub(super) raw_header: Bytes,
    /// How long it ran before it raised.
    pub(super) ran: Duration,
    /// What it did outside the kernel, as far as crane sees.
    pub(super) effects: Vec<String>,
    /// The kernel's idle for it, once it came.
    pub(super) idle: Option<ZmqMessage>,
    /// When to roll back without that idle (the kernel sends it just after the reply).
    pub(super) deadline: Instant,
    /// crane stopped it: the crash its dry run beside it saw.
    pub(super) stopped: Option<String>,
    /// It is a held cell's first statements, which read objects from before it: it did not
    /// raise, and is rolled back unless those objects are found unchanged.
    pub(super) held: bool,
    /// Its code (with the parse it was relayed with), and the line its traceback says it
    /// raised at: a cell whose part that ran only bound new names keeps its state.
    pub(super) cell: Arc<ParsedCell>,
    pub(super) line: Option<u32>,
}

impl Proxy {
    /// Under a cell that raised with a snapshot before it, once its error is shown: crane's
    /// line that the state before it is kept.
    pub(super) async fn rollback_note(&mut self) {
        let Some((_, raw_header, text)) = self.state.note_before_idle.take() else {
            return;
        };
        self.publish_under(&raw_header, &text).await;
    }

    /// `%crane rollback auto` for a cell that raised: the snapshot before it becomes the
    /// kernel, and crane says so under the cell's error, before the cell's idle.
    pub(super) async fn auto_rollback<C: Checker>(
        &mut self,
        due: AutoRollback,
        slot: &mut Slot<C>,
    ) {
        // A cell whose part that ran only bound new names keeps its state, as without crane.
        let after = match slot {
            Slot::Idle { checker, .. } if due.stopped.is_none() => {
                failed::after_failure(&due.cell, due.line, checker, &mut self.state.new_cells)
            }
            _ => AfterFailure::RolledBack { replay: None },
        };
        let mut changed = None;
        let after = match after {
            AfterFailure::KeptIfUnchanged {
                names,
                watched,
                otherwise,
            } => match self
                .compare_with_snapshot(due.snapshot, &watched, &names, slot)
                .await
            {
                Compared::Unchanged => AfterFailure::Kept {
                    names,
                    compared: watched,
                },
                Compared::Changed(name) => {
                    changed = Some(name);
                    AfterFailure::RolledBack { replay: otherwise }
                }
                Compared::Unsure => AfterFailure::RolledBack { replay: otherwise },
            },
            after => after,
        };
        let text = match after {
            AfterFailure::Kept { names, compared } => format!(
                "{}{}",
                failed::kept_line(&names, &compared),
                effects::sentence(&due.effects)
            ),
            // Compared above: never left here.
            AfterFailure::RolledBack { replay }
            | AfterFailure::KeptIfUnchanged {
                otherwise: replay, ..
            } => {
                let taken = self.take_over(due.snapshot, slot).await;
                let replayed = match (&taken, &mut *slot, replay) {
                    (Ok(_), Slot::Idle { session, .. }, Some(replay)) => {
                        failed::replay(session, &replay)
                            .await
                            .map(|event| (replay, event))
                    }
                    _ => None,
                };
                let rolled = taken.is_ok();
                let mut line = self.rollback_line(&due, taken);
                if let Some(name) = changed.filter(|_| rolled) {
                    line.push_str(&format!(
                        " The part of it that ran changed `{name}`, which existed before it."
                    ));
                }
                if let Some((replay, event)) = replayed {
                    // No longer the fresh start a restart returns to.
                    self.state.fresh = false;
                    self.state.new_cells.push(event);
                    line.push_str(&failed::replayed_sentence(&replay));
                }
                line
            }
        };
        self.publish_under(&due.raw_header, &text).await;
        match due.idle {
            // Signed by the kernel it replaced, with the same key.
            Some(idle) => forward(&mut self.front.iopub, idle, "frontend iopub").await,
            None => {
                let mut parent = JupyterMessage::new(Status::idle(), None);
                if let Ok(header) = serde_json::from_slice::<Header>(&due.raw_header) {
                    parent.header = header;
                }
                self.publish(JupyterMessage::new(Status::idle(), Some(&parent)))
                    .await;
            }
        }
    }

    /// Whether the objects `names` hold in the kernel, and the globals the notebook's code among
    /// them reads, are those `snapshot` holds: each side fingerprints them
    /// (`crane_probe::fingerprint`), the snapshot staying as it was. `bound`, the names the part of the cell that ran bound
    /// itself, are the cell's own and not compared (one the notebook's code reads is absent
    /// from the snapshot before the cell, and that is no change of what existed before it).
    async fn compare_with_snapshot<C: Checker>(
        &mut self,
        snapshot: SnapshotId,
        names: &[String],
        bound: &[String],
        slot: &mut Slot<C>,
    ) -> Compared {
        let Some((Return::TakeOver(socket), _)) = self.state.snapshots.get(snapshot) else {
            return Compared::Unsure;
        };
        let Slot::Idle { session, .. } = slot else {
            return Compared::Unsure;
        };
        let asked = names.to_vec();
        let before = tokio::task::spawn_blocking(move || {
            crane_probe::fingerprint::in_snapshot(&socket, &asked, FINGERPRINT_TIMEOUT)
        });
        let now = crane_probe::fingerprint::in_kernel(session, names, FINGERPRINT_TIMEOUT).await;
        let (Ok(mut now), Ok(Ok(mut before))) = (now, before.await) else {
            return Compared::Unsure;
        };
        for name in bound.iter().filter(|name| !names.contains(name)) {
            now.remove(name);
            before.remove(name);
        }
        match crane_probe::fingerprint::first_unsure(names, &now, &before) {
            None => Compared::Unchanged,
            Some((name, true)) => Compared::Changed(name.to_owned()),
            Some((_, false)) => Compared::Unsure,
        }
    }

    /// crane's line under a cell `%crane rollback auto` rolled back (or could not).
    pub(super) fn rollback_line(
        &self,
        due: &AutoRollback,
        taken: Result<(usize, String), String>,
    ) -> String {
        match taken {
            Ok((_, files)) if due.held => format!(
                "crane: rolled back to the state before this cell: the lines it ran before the predicted crash read objects from before it, which crane could not find unchanged.{}{files}",
                effects::sentence(&due.effects)
            ),
            Ok((_, files)) if due.stopped.is_some() => format!(
                "crane: stopped this cell after {:.1} s and rolled the kernel back to the state before it: its dry run beside it, in a fork of that state with its loops cut short, crashed first. {}{}{files}",
                due.ran.as_secs_f64(),
                due.stopped.as_deref().unwrap_or_default(),
                effects::sentence(&due.effects)
            ),
            Ok((_, files)) => format!(
                "crane: rolled back to the state before this cell (it raised after {:.1} s, within the {} s of `%crane rollback auto`): {}.{}{files}",
                due.ran.as_secs_f64(),
                self.state
                    .settings
                    .rollback_auto
                    .unwrap_or_default()
                    .as_secs_f64(),
                kernel_now(due.snapshot),
                effects::sentence(&due.effects)
            ),
            Err(reason) => format!("crane: not rolled back: {reason}."),
        }
    }

    /// Return to `snapshot`: a fork builds a kernel on new ports, the relay switches to it, and
    /// the kernel it replaces is ended (its other snapshots die with it); the fresh start is a
    /// new kernel the proxy starts. The execution count of the cell the snapshot was taken
    /// before and the sentence on what the return cannot give back of the files the kernel
    /// holds open, or why there was no return (the kernel then stays as it was).
    pub(super) async fn take_over<C: Checker>(
        &mut self,
        snapshot: SnapshotId,
        slot: &mut Slot<C>,
    ) -> Result<(usize, String), String> {
        let Some((how, count)) = self.state.snapshots.get(snapshot) else {
            return Err(match self.state.snapshots.dropped_for_memory(snapshot) {
                Some(reason) => format!("its snapshot was dropped: {reason}"),
                None => "its snapshot is gone".into(),
            });
        };
        let socket = match how {
            Return::TakeOver(socket) => socket,
            Return::Restart => {
                return self
                    .start_afresh(slot)
                    .await
                    .map(|count| (count, String::new()))
            }
        };
        let Slot::Idle { session, .. } = slot else {
            return Err("crane is checking a cell".into());
        };
        let took = tokio::task::spawn_blocking(move || {
            crane_probe::snapshot::take_over(&socket, TAKEOVER_TIMEOUT)
        })
        .await
        .map_err(|error| error.to_string())?
        .map_err(|error| error.to_string())?;
        let adopted = Adopted::new(took.pid).map_err(|error| error.to_string());
        let connected = async {
            let info = read_connection_file(&took.connection_file).map_err(|e| e.to_string())?;
            let mut back = Back::connect(&info).await.map_err(|e| e.to_string())?;
            back.wait_for_iopub().await.map_err(|e| e.to_string())?;
            let attached =
                AttachedKernel::attach_file(&took.connection_file, &AttachOptions::default())
                    .await
                    .map_err(|e| e.to_string())?;
            Ok::<_, String>((back, attached))
        };
        let (back, attached, adopted) = match (connected.await, adopted) {
            (Ok((back, attached)), Ok(adopted)) => (back, attached, adopted),
            (Err(reason), _) | (Ok(_), Err(reason)) => {
                // The new kernel goes; the kernel it was forked from reaps it.
                if let Some(pid) = rustix::process::Pid::from_raw(took.pid as i32) {
                    let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
                }
                return Err(format!(
                    "the snapshot's kernel could not be reached: {reason}"
                ));
            }
        };
        self.pay_owed_idle().await;
        self.switch_kernel(
            session,
            KernelSession::Attached(attached),
            back,
            Some(adopted),
        );
        let count = took.execution_count.unwrap_or(count);
        self.state.switched_to(took.pid, count, false);
        raise_oom_score(took.pid);
        self.state.watch = Some(KernelWatch::adopted(took.pid));
        Ok((count, took.sentence()))
    }

    /// Before the relay leaves a kernel: the idle of the last relayed cell, which the kernel
    /// sends just after its reply, is awaited for a moment and forwarded, or published by the
    /// proxy. A client that waits for each cell's idle (`execute_interactive`, nbclient) would
    /// otherwise wait for ever once the kernel that owed it is gone.
    pub(super) async fn pay_owed_idle(&mut self) {
        let deadline = Instant::now() + REPLY_GRACE;
        while self.state.idle_owed.is_some() {
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, self.back.iopub.socket.recv()).await {
                Ok(Ok(message)) => self.back_iopub(message).await,
                Ok(Err(_)) | Err(_) => break,
            }
        }
        if let Some((_, raw_header)) = self.state.idle_owed.take() {
            let mut parent = JupyterMessage::new(Status::idle(), None);
            if let Ok(header) = serde_json::from_slice::<Header>(&raw_header) {
                parent.header = header;
            }
            self.publish(JupyterMessage::new(Status::idle(), Some(&parent)))
                .await;
        }
    }
}
