//! The snapshot taken before a cell that can change the kernel's state: asked for and waited
//! for, or asked for on the relay's shell connection with the cell sent right behind it, and
//! its answer recorded as the cell's snapshot. Whether a cell needs one is read from the parse
//! it is relayed with, which the snapshot keeps.

use std::sync::Arc;

use crane_analysis::ParsedCell;
use jupyter_protocol::{JupyterMessage, UnknownMessage};

use super::wire::send;
use super::{log, Proxy, Slot};
use crate::check::Checker;
use crate::snapshots::SnapshotId;

/// A snapshot asked for on the relay's own shell connection, with the cell sent right behind
/// it: the kernel handles shell requests in order, so the fork happens before the cell runs,
/// and its reply comes before the cell's (on the same connection).
pub(super) struct PendingTake {
    pub(super) msg_id: String,
    /// The cell it was taken before.
    pub(super) cell_msg_id: String,
    pub(super) drop: Vec<u32>,
    pub(super) cell: Arc<ParsedCell>,
    pub(super) execution_count: usize,
}

impl Proxy {
    /// Before a cell that can change the kernel's state is relayed (`cell`, the parse of the
    /// code relayed): a snapshot of the kernel (dropping the oldest beyond the number kept), or
    /// the reason there is none.
    pub(super) async fn snapshot_before<C: Checker>(
        &mut self,
        cell: &Arc<ParsedCell>,
        slot: &mut Slot<C>,
    ) {
        self.state.pending_snapshot = None;
        let keep = self.state.settings.snapshot_keep;
        let snapshots = &self.state.snapshots;
        snapshots.set_budget(self.state.settings.snapshot_budget_bytes);
        let Slot::Idle { session, .. } = slot else {
            self.state.snapshot_note =
                Some("no snapshot before the last cell: the kernel was busy with a check".into());
            return;
        };
        if keep == 0 {
            let pids = snapshots.make_room(0);
            if !pids.is_empty() {
                match crane_probe::snapshot::drop_snapshots(session, &pids).await {
                    Ok(ended) => snapshots.forget(&ended),
                    Err(error) => log(&format!("cannot drop the snapshots: {error}")),
                }
            }
            self.state.snapshot_note =
                Some("no snapshot before the last cell: snapshot-keep is 0".into());
            return;
        }
        if crane_probe::snapshot::cannot_change_state_parsed(cell) {
            self.state.snapshot_note = Some(
                "no snapshot before the last cell: it cannot change the kernel's state (only expressions over names and displays)".into(),
            );
            return;
        }
        // A fresh kernel keeps no snapshot (a switch to a kernel forgets them all). A dry run
        // beside the cell runs in a fork of its snapshot: that cell needs a fork.
        if self.state.fresh && !self.state.beside_next && snapshots.count() == 0 {
            snapshots.add_fresh_start(cell);
            self.state.pending_snapshot = Some(SnapshotId::FreshStart);
            self.state.snapshot_note = Some(
                "the last cell was the kernel's first: the state before it is a fresh start, which a restart of the kernel behind crane returns to (no fork holds it)".into(),
            );
            return;
        }
        let drop = snapshots.make_room(keep);
        if self.state.take_by_message {
            // Not waited for: the cell goes right behind it (`PendingTake`).
            let (msg_type, content) = crane_probe::snapshot::take_message(&drop);
            let message = JupyterMessage::new(
                UnknownMessage {
                    msg_type: msg_type.into(),
                    content,
                },
                None,
            );
            let msg_id = message.header.msg_id.clone();
            // A reply that comes after the cell's (none should) stays with the proxy.
            self.back.own_requests.insert(msg_id.clone());
            send(&mut self.back.shell, message, "kernel shell").await;
            self.state.pending_take = Some(PendingTake {
                msg_id,
                cell_msg_id: String::new(),
                drop,
                cell: Arc::clone(cell),
                execution_count: self.state.execution_count + 1,
            });
            self.state.snapshot_note = Some(
                "the snapshot before the last cell was asked for; its answer has not come yet"
                    .into(),
            );
            return;
        }
        let handled = session.handles(crane_probe::snapshot::take_message(&[]).0);
        let note = match crane_probe::snapshot::take(session, &drop).await {
            Ok(answer) => {
                snapshots.forget(&drop);
                snapshots.forget(&answer.ended);
                // The module is in the kernel, and the kernel serves crane's call message.
                self.state.take_by_message =
                    handled || session.handles(crane_probe::snapshot::take_message(&[]).0);
                match answer.taken {
                    crane_probe::snapshot::Taken::Snapshot {
                        pid, socket, fork, ..
                    } => {
                        let count = self.state.execution_count + 1;
                        match snapshots.add(pid, socket, count, cell) {
                            Ok(()) => {
                                self.state.pending_snapshot = Some(SnapshotId::Fork(pid));
                                format!(
                                    "the last cell has a snapshot from before it (forked in {:.1} ms)",
                                    fork.as_secs_f64() * 1000.0
                                )
                            }
                            Err(error) => {
                                format!("the snapshot before the last cell ended at once: {error}")
                            }
                        }
                    }
                    crane_probe::snapshot::Taken::Refused { reasons } => {
                        format!("no snapshot before the last cell: {}", reasons.join("; "))
                    }
                }
            }
            Err(error) => format!("no snapshot before the last cell: {error}"),
        };
        self.state.snapshot_note = Some(note);
    }

    /// The answer to a snapshot asked for without waiting (`PendingTake`), which came before
    /// the cell's own reply: the snapshot is the cell's, or the cell has none.
    pub(super) fn took(
        &mut self,
        pending: PendingTake,
        answer: Result<crane_probe::snapshot::TakeAnswer, crane_probe::dry_run::DryRunError>,
    ) {
        let snapshots = &self.state.snapshots;
        let note = match answer {
            Ok(answer) => {
                snapshots.forget(&pending.drop);
                snapshots.forget(&answer.ended);
                match answer.taken {
                    crane_probe::snapshot::Taken::Snapshot {
                        pid, socket, fork, ..
                    } => match snapshots.add(pid, socket, pending.execution_count, &pending.cell) {
                        Ok(()) => {
                            if let Some(running) = self
                                .state
                                .shell
                                .running
                                .as_mut()
                                .filter(|running| running.msg_id == pending.cell_msg_id)
                            {
                                running.snapshot = Some(SnapshotId::Fork(pid));
                            }
                            self.start_beside();
                            format!(
                                "the last cell has a snapshot from before it (forked in {:.1} ms, the cell sent right behind the request)",
                                fork.as_secs_f64() * 1000.0
                            )
                        }
                        Err(error) => {
                            format!("the snapshot before the last cell ended at once: {error}")
                        }
                    },
                    crane_probe::snapshot::Taken::Refused { reasons } => {
                        format!("no snapshot before the last cell: {}", reasons.join("; "))
                    }
                }
            }
            Err(error) => {
                // The next one waits for its answer again (and injects the module if needed).
                self.state.take_by_message = false;
                format!("no snapshot before the last cell: {error}")
            }
        };
        self.state.snapshot_note = Some(note);
    }
}
