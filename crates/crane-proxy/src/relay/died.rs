//! The relay's answer to a kernel that died without being asked to: the return to the
//! snapshot before the running cell (or a fresh kernel), and crane's error for that cell,
//! signed as the kernel's. The words and the hold of that cell run again are `crate::death`'s.

use std::process::ExitStatus;

use jupyter_protocol::{
    ErrorOutput, ExecuteReply, ExecutionCount, Header, JupyterMessage, ReplyError, ReplyStatus,
    Status,
};

use super::beside::Beside;
use super::queue::Running;
use super::wire::send;
use super::{log, Proxy, ServeEnd, Slot, EXIT_DRAIN};
use crate::check::Checker;
use crate::death::{self, Killer, Recovered};
use crate::snapshots::SnapshotId;

impl Proxy {
    /// The kernel died without being asked to: the cell it ran returns to the snapshot taken
    /// before it, or the kernel starts afresh, and the cell gets crane's error saying which
    /// (`death`); a death while no cell ran is logged and said by the next cell. `Some`: the
    /// proxy ends (a shutdown asked for, or no fresh kernel started).
    pub(super) async fn kernel_died<C: Checker>(
        &mut self,
        status: ExitStatus,
        stderr_tail: String,
        slot: &mut Slot<C>,
    ) -> Option<ServeEnd> {
        self.drain(EXIT_DRAIN).await;
        if self.state.shutdown_requested {
            return Some(ServeEnd::Shutdown);
        }
        let death = match &self.state.watch {
            Some(watch) => watch.death(status),
            None => crane_kernel::Death::from_status(status),
        };
        if !stderr_tail.trim().is_empty() {
            log(&format!(
                "the kernel's last lines on stderr:\n{stderr_tail}"
            ));
        }
        if let Some(due) = self.state.rollback_due.take() {
            // The cell had raised and waited for its rollback: it has it.
            self.auto_rollback(due, slot).await;
            return None;
        }
        if let Some(pending) = self.state.pending_take.take() {
            self.back.own_requests.remove(&pending.msg_id);
            self.took_unanswered(pending).await;
        }
        let running = self.state.shell.died();
        let count = self.state.execution_count + 1;
        let recovered = match running.as_ref().map(|running| running.snapshot) {
            Some(Some(snapshot)) => match self.take_over(snapshot, slot).await {
                Ok(_) if snapshot == SnapshotId::FreshStart => Recovered::FreshStart,
                Ok(_) => Recovered::Snapshot,
                Err(reason) => self.afresh(reason, slot).await,
            },
            Some(None) => {
                let why = match self.state.snapshot_note.as_deref() {
                    Some(note) => note
                        .strip_prefix("no snapshot before the last cell: ")
                        .unwrap_or(note),
                    None => "no snapshot was taken before it",
                }
                .to_owned();
                self.afresh(why, slot).await
            }
            None => self.afresh("no cell ran".into(), slot).await,
        };
        let words = death::words(&death, &recovered);
        match running {
            Some(running) => {
                if let Beside::Started(cancel) = &running.beside {
                    cancel.cancel();
                }
                if matches!(recovered, Recovered::Snapshot | Recovered::FreshStart) {
                    self.state.killer = Some(Killer {
                        code: running.code().to_owned(),
                        death: death.to_string(),
                    });
                }
                self.answer_died(&running, count, &words, &recovered).await;
            }
            None => {
                log(&words);
                self.state.restarted_note = Some(death::restarted_note(&death, &recovered));
            }
        }
        matches!(recovered, Recovered::Nothing(_))
            .then_some(ServeEnd::KernelDied { death, stderr_tail })
    }

    /// No state from before the cell was kept (`why`): a fresh kernel.
    async fn afresh<C: Checker>(&mut self, why: String, slot: &mut Slot<C>) -> Recovered {
        match self.start_afresh(slot).await {
            Ok(_) => Recovered::Afresh(why),
            Err(error) => Recovered::Nothing(error),
        }
    }

    /// crane's error for the cell the kernel died in (numbered `count`), signed as the
    /// kernel's: its output, its reply, its idle (the queue aborted the cells behind it).
    async fn answer_died(
        &mut self,
        running: &Running,
        count: usize,
        evalue: &str,
        recovered: &Recovered,
    ) {
        let mut parent = JupyterMessage::new(Status::idle(), None);
        if let Ok(header) = serde_json::from_slice::<Header>(&running.raw_header) {
            parent.header = header;
        }
        parent.zmq_identities = running.identities.clone();
        let traceback = death::traceback(evalue, recovered);
        let output = ErrorOutput {
            ename: death::DIED_ENAME.into(),
            evalue: evalue.into(),
            traceback: traceback.clone(),
        };
        self.publish(JupyterMessage::new(output, Some(&parent)))
            .await;
        let reply = ExecuteReply {
            status: ReplyStatus::Error,
            execution_count: ExecutionCount::new(count),
            payload: Vec::new(),
            user_expressions: Some(Default::default()),
            error: Some(Box::new(ReplyError {
                ename: death::DIED_ENAME.into(),
                evalue: evalue.into(),
                traceback,
            })),
        };
        let metadata = serde_json::json!({ "status": "error" });
        let reply = JupyterMessage::new(reply, Some(&parent)).with_metadata(metadata);
        send(&mut self.front.shell, reply, "frontend shell").await;
        self.publish(JupyterMessage::new(Status::idle(), Some(&parent)))
            .await;
    }
}
