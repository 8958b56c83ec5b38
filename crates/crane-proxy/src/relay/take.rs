//! The snapshot taken before a cell that can change the kernel's state: asked for and waited
//! for, or asked for on the relay's shell connection with the cell sent right behind it, and
//! its answer recorded as the cell's snapshot. Whether a cell needs one is read from the parse
//! it is relayed with, which the snapshot keeps.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crane_analysis::ParsedCell;
use jupyter_protocol::{JupyterMessage, UnknownMessage};

use super::wire::send;

use super::{log, Proxy, Slot};
use crate::check::Checker;
use crate::snapshots::SnapshotId;

/// How long a snapshot whose take went unanswered may take to say it is there: a fork still
/// on its way to its wait answers when it gets there.
const FIND_TIMEOUT: Duration = Duration::from_secs(10);

/// A snapshot asked for on the relay's own shell connection, with the cell sent right behind
/// it: the kernel handles shell requests in order, so the fork happens before the cell runs,
/// and its reply comes before the cell's (on the same connection).
pub(super) struct PendingTake {
    pub(super) msg_id: String,
    /// Where the snapshot listens (named by the request): found there when the kernel dies
    /// before its reply comes.
    pub(super) socket: PathBuf,
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
            let socket = crane_probe::snapshot::take_socket();
            snapshots.named(&socket);
            let (msg_type, content) = crane_probe::snapshot::take_message(&drop, &socket);
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
                socket,
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
        let handled = session.handles(crane_probe::snapshot::TAKE_REQUEST);
        let note = match crane_probe::snapshot::take(session, &drop).await {
            Ok(answer) => {
                snapshots.forget(&drop);
                snapshots.forget(&answer.ended);
                // The module is in the kernel, and the kernel serves crane's call message.
                self.state.take_by_message =
                    handled || session.handles(crane_probe::snapshot::TAKE_REQUEST);
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
        let note = match answer {
            Ok(answer) => {
                self.state.snapshots.forget(&pending.drop);
                self.state.snapshots.forget(&answer.ended);
                match answer.taken {
                    crane_probe::snapshot::Taken::Snapshot {
                        pid, socket, fork, ..
                    } => match self.adopt_taken(&pending, pid, socket) {
                        Ok(()) => {
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
                        self.state.snapshots.refused(&pending.socket);
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

    /// The kernel died before the answer to a snapshot asked for without waiting came: the
    /// reply, sent just before the cell ran, can go down with the process before it leaves.
    /// The snapshot is looked for at the socket the request named; found, it is the cell's
    /// (the kernel forks before it runs the cell behind the request).
    pub(super) async fn took_unanswered(&mut self, pending: PendingTake) {
        let socket = pending.socket.clone();
        let found = tokio::task::spawn_blocking(move || {
            crane_probe::snapshot::snapshot_at(&socket, FIND_TIMEOUT)
        })
        .await;
        let note = match found {
            Ok(Ok(pid)) => {
                // The kernel ended those before it forked.
                self.state.snapshots.forget(&pending.drop);
                match self.adopt_taken(&pending, pid, pending.socket.clone()) {
                    Ok(()) => "the last cell has a snapshot from before it (found at its socket: the kernel died before its answer to crane's request left it)".to_owned(),
                    Err(error) => format!("the snapshot before the last cell ended at once: {error}"),
                }
            }
            Ok(Err(error)) => {
                // Nothing listens there (no fork was made): the path is the proxy's to remove.
                // A snapshot that is there but slow to answer keeps it.
                if let crane_probe::snapshot::TakeoverError::Unreachable(error) = &error {
                    if matches!(
                        error.kind(),
                        std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::NotFound
                    ) {
                        self.state.snapshots.nothing_at(&pending.socket);
                    }
                }
                format!("no snapshot before the last cell: the kernel died before it answered crane's request for one, and no snapshot is at the socket the request named ({error})")
            }
            Err(error) => format!("no snapshot before the last cell: {error}"),
        };
        log(&format!(
            "the kernel died before its answer to crane's request for a snapshot came: {note}"
        ));
        self.state.snapshot_note = Some(note);
    }

    /// The snapshot a take made (process `pid`, listening at `socket`) kept as the state before
    /// the cell `pending` was taken before.
    fn adopt_taken(
        &mut self,
        pending: &PendingTake,
        pid: u32,
        socket: PathBuf,
    ) -> std::io::Result<()> {
        (self.state.snapshots).add(pid, socket, pending.execution_count, &pending.cell)?;
        if let Some(running) = (self.state.shell.running.as_mut())
            .filter(|running| running.msg_id == pending.cell_msg_id)
        {
            running.snapshot = Some(SnapshotId::Fork(pid));
        }
        Ok(())
    }
}
