//! The cells crane answers itself: the `%crane` magics (settings, status, explain, snapshots,
//! rollback, undo), and `%tb`/`%debug` once a return to a snapshot took the failed cell's state
//! away.

use jupyter_protocol::{
    ErrorOutput, ExecuteReply, ExecutionCount, JupyterMessageContent, ReplyStatus, StreamContent,
};

use super::queue::Queued;
use super::rollback::kernel_now;
use super::{Proxy, Slot};
use crate::check::{self, Checked, Checker, Decision};
use crate::effects;
use crate::failed::{self, Failure, PostMortem};
use crate::settings::Magic;

/// The last cell crane spoke about, for `%crane explain`.
pub(super) struct Explained {
    pub(super) code: String,
    pub(super) checked: Checked,
    pub(super) decision: Decision,
}

impl Proxy {
    /// `%tb` or `%debug` after a return to a snapshot took the failed cell's state away: the
    /// traceback crane saw, or how to debug the cell.
    pub(super) async fn answer_post_mortem(
        &mut self,
        head: &Queued,
        magic: PostMortem,
        failure: Failure,
    ) {
        let during: Vec<JupyterMessageContent> = match magic {
            PostMortem::Traceback => vec![ErrorOutput {
                ename: failure.ename,
                evalue: failure.evalue,
                traceback: failure.traceback,
            }
            .into()],
            PostMortem::Debug => vec![StreamContent::stdout(failed::DEBUG_AFTER_ROLLBACK).into()],
        };
        let reply = ExecuteReply {
            status: ReplyStatus::Ok,
            execution_count: ExecutionCount::new(self.state.execution_count),
            payload: Vec::new(),
            user_expressions: Some(Default::default()),
            error: None,
        };
        self.answer(head, during, reply).await;
    }

    pub(super) async fn answer_magics<C: Checker>(
        &mut self,
        head: &Queued,
        magics: &[Magic],
        slot: &mut Slot<C>,
    ) {
        let mut lines = Vec::new();
        for magic in magics {
            match magic {
                Magic::Snapshots => lines.push(
                    self.state
                        .snapshots
                        .describe(self.state.settings.snapshot_keep),
                ),
                Magic::Rollback => lines.push(match self.state.failed_snapshot {
                    Some(snapshot) => match self.take_over(snapshot, slot).await {
                        Ok((count, files)) => format!(
                            "crane: rolled back to the state before cell [{count}]: {} (what the cells since did outside the kernel stays done).{}{files}",
                            kernel_now(snapshot),
                            effects::sentence(&std::mem::take(&mut self.state.failed_effects))
                        ),
                        Err(reason) => format!("crane: no rollback: {reason}"),
                    },
                    None => "crane: no rollback: no cell with a snapshot before it has raised since the last takeover".into(),
                }),
                Magic::Undo(back) => lines.push(match self.state.snapshots.nth_newest(*back) {
                    Some(snapshot) => {
                        let undone: Vec<String> = self
                            .state
                            .snapshots
                            .cells_from(snapshot)
                            .iter()
                            .flat_map(|cell| effects::in_parsed(cell))
                            .collect();
                        match self.take_over(snapshot, slot).await {
                        Ok((count, files)) => format!(
                            "crane: undone: the state before cell [{count}] ({}).{}{files}",
                            kernel_now(snapshot),
                            effects::sentence(&undone)
                        ),
                        Err(reason) => format!("crane: no undo: {reason}"),
                    }
                    }
                    None => format!(
                        "crane: no undo: {} snapshot(s) kept, fewer than {back} (`%crane snapshots`)",
                        self.state.snapshots.count()
                    ),
                }),
                Magic::Explain => lines.push(match &self.state.last {
                    Some(last) => check::explanation(&last.checked, &last.code, &last.decision),
                    None => "crane has held or warned about no cell in this kernel yet.".into(),
                }),
                Magic::Status => {
                    lines.push(self.state.settings.describe());
                    for note in [&self.state.snapshot_note, &self.state.beside_note].into_iter().flatten() {
                        lines.push(format!("crane: {note}"));
                    }
                    if let Some((took, timings)) = &self.state.last_check {
                        lines.push(format!(
                            "crane: the last check took {} ms: {}",
                            took.as_millis(),
                            timings.describe()
                        ));
                    }
                    if !self.state.last_check_notes.is_empty() {
                        lines.push(format!(
                            "crane: about the last check: {}",
                            self.state.last_check_notes.join("; ")
                        ));
                    }
                    if let Slot::Idle { checker, .. } = slot {
                        lines.extend(checker.status().into_iter().map(|line| format!("crane: {line}")));
                    }
                }
                other => lines.extend(self.state.settings.apply(other)),
            }
        }
        let mut text = lines.join("\n");
        text.push('\n');
        let reply = ExecuteReply {
            status: ReplyStatus::Ok,
            execution_count: ExecutionCount::new(self.state.execution_count),
            payload: Vec::new(),
            user_expressions: Some(Default::default()),
            error: None,
        };
        self.answer(head, vec![StreamContent::stdout(&text).into()], reply)
            .await;
    }
}
