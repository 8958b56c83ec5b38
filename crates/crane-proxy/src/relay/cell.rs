//! A user cell's way to the kernel: relayed as sent or with its code changed, with the
//! bookkeeping of the cell the kernel runs, and what the check's decision makes of it (held,
//! run in part, warned about, or run).
//!
//! The code relayed travels with its one parse: the check's ([`Checked::cell`]), or, for code
//! no check read (policy off, a check abandoned, `%%crane run`'s cell, a held cell's first
//! statements), a parse made here when that code is decided. The snapshot before it, the
//! running cell's bookkeeping, its effects and the checker's history take that parse.

use std::sync::Arc;

use bytes::Bytes;
use crane_analysis::ParsedCell;
use jupyter_zmq_client::RawMessage;
use serde_json::Value;

use super::beside::Beside;
use super::magics::Explained;
use super::queue::{Queued, Running};
use super::wire::{forward, signed, ExecuteCell};
use super::{log, Proxy, Slot};
use crate::check::{self, CheckRequest, Checked, Checker, Decision, KernelEvent};
use crate::failed;
use crate::partial::{self, NotRun, Refused};
use crate::settings::{classify, CellKind};

/// Shell requests that leave the kernel's state as it was: a kernel that has served only these
/// (and crane's own calls) is still as a fresh start leaves it.
pub(super) const READ_ONLY_REQUESTS: &[&str] = &[
    "kernel_info_request",
    "complete_request",
    "inspect_request",
    "is_complete_request",
    "history_request",
    "comm_info_request",
];

impl Proxy {
    /// A user cell's turn, its cells before it done: `%tb`/`%debug` after a rollback, a `%crane`
    /// magic or a misuse answered by crane, `%%crane run` relayed unchecked, a cell that killed
    /// the kernel held again, or the cell checked (or relayed, when it cannot be).
    pub(super) async fn turn<C: Checker>(&mut self, head: Queued, slot: &mut Slot<C>) {
        let Some(code) = head.execute.as_ref().map(|request| request.code.as_str()) else {
            return;
        };
        let taken_away = self
            .state
            .last_failure
            .as_ref()
            .filter(|(_, taken_away)| *taken_away)
            .map(|(failure, _)| failure.clone());
        if let (Some(magic), Some(failure)) = (failed::post_mortem(code), taken_away) {
            self.answer_post_mortem(&head, magic, failure).await;
            return;
        }
        if let Some(note) = self.state.restarted_note.take() {
            self.display(&head, &note).await;
        }
        let killer = (self.state.killer.as_ref())
            .filter(|killer| killer.is(code))
            .map(|killer| (killer.evalue(), killer.traceback()));
        match classify(code) {
            CellKind::Magics(magics) => self.answer_magics(&head, &magics, slot).await,
            CellKind::Misused(message) => {
                self.answer_error(&head, "CraneUsageError", &message, vec![message.clone()])
                    .await;
            }
            CellKind::Bypass { code } => {
                let cell = check::parse_of(&code, None);
                self.snapshot_before(&cell, slot).await;
                self.relay_rewritten(head, cell).await;
            }
            CellKind::Code if self.state.settings.policy == crate::Policy::Off => {
                let cell = check::parse_of(code, None);
                self.snapshot_before(&cell, slot).await;
                self.relay(head, cell).await;
            }
            CellKind::Code if killer.is_some() => {
                let (evalue, traceback) = killer.unwrap_or_default();
                self.answer_error(&head, check::HELD_ENAME, &evalue, traceback)
                    .await;
            }
            CellKind::Code => {
                let check = CheckRequest {
                    code: code.to_owned(),
                    settings: self.state.settings.clone(),
                };
                if slot.start(check, &mut self.state.new_cells) {
                    self.state.interrupted_while_checking = false;
                    self.state.shell.check(head);
                    return;
                }
                let cell = check::parse_of(code, None);
                self.snapshot_before(&cell, slot).await;
                self.relay(head, cell).await;
            }
        }
    }

    /// Relay a frontend's shell request to the kernel.
    pub(super) async fn send_to_kernel(&mut self, head: Queued) {
        if !READ_ONLY_REQUESTS.contains(&head.parsed.header.msg_type.as_str()) {
            self.state.fresh = false;
        }
        // A copy, not a slice that would keep the whole request alive.
        self.state.front_parent = Some(Bytes::copy_from_slice(&head.parsed.raw_header));
        forward(&mut self.back.shell, head.message, "kernel shell").await;
    }

    pub(super) async fn checked<C: Checker>(
        &mut self,
        outcome: Result<Checked, String>,
        slot: &mut Slot<C>,
    ) {
        let Some(head) = self.state.shell.checked() else {
            return;
        };
        let Some(code) = head.execute.as_ref().map(|request| request.code.clone()) else {
            return;
        };
        if self.state.interrupted_while_checking {
            // The interrupt meant this cell: it ends as an interrupted cell ends, unrun.
            let text = "KeyboardInterrupt: interrupted before it ran (crane was checking it)";
            self.answer_error(&head, "KeyboardInterrupt", "", vec![text.into()])
                .await;
            return;
        }
        let checked = match outcome {
            Ok(checked) => {
                self.state.last_check = Some((checked.elapsed, checked.timings.clone()));
                self.state.last_check_notes = checked.notes.clone();
                checked
            }
            Err(reason) => {
                self.state.last_check_notes.clear();
                log(&format!("check abandoned, the cell runs: {reason}"));
                let cell = check::parse_of(&code, None);
                self.snapshot_before(&cell, slot).await;
                self.relay(head, cell).await;
                return;
            }
        };
        let cell = check::parse_of(&code, Some(&checked));
        let decision = check::decide(&checked, self.state.settings.policy);
        self.state.beside_next = checked.beside && decision != Decision::Hold;
        match decision {
            Decision::Hold => {
                // Objects the first statements read are compared with the snapshot before
                // them and rolled back unless unchanged: only where that rollback happens.
                let compare = self.state.settings.snapshot_keep > 0
                    && self.state.settings.rollback_auto.is_some();
                // The first statements that bind only new names and read nothing from before
                // the cell that they could change: what runs when the others cannot.
                let mut strict = None;
                // First statements that read objects from before the cell and do not run, and
                // why: the held cell's message says so.
                let mut refused = None;
                // Statements past ones that do not run, where they bind more than `strict`.
                let mut further = None;
                // What the kernel said of the names the cell reads, for the message.
                let mut alone_priors = None;
                let mut first = match slot {
                    Slot::Idle {
                        checker, session, ..
                    } => {
                        let priors = partial::priors(&cell, checker, session).await;
                        strict = partial::run_first(&cell, &checked, &priors);
                        further = partial::out_of_order(&cell, &checked, &priors, strict.as_ref());
                        let watched =
                            partial::watched_first(&cell, &checked, &priors, strict.as_ref());
                        alone_priors = Some(priors);
                        let why = match &watched {
                            None => None,
                            Some(_) if !compare => Some(NotRun::NoRollback),
                            Some(first) if first.long() => Some(NotRun::Long),
                            // Only objects crane can compare: an object it cannot read, code
                            // that reaches the namespace, is not run ahead of the hold.
                            Some(first) => Some(partial::unreadable(session, &first.watched).await)
                                .filter(|names| !names.is_empty())
                                .map(NotRun::Unreadable),
                        };
                        match (watched, why) {
                            (Some(watched), None) => Some(watched),
                            (watched, why) => {
                                refused =
                                    watched.zip(why).map(|(first, why)| Refused { first, why });
                                strict.take()
                            }
                        }
                    }
                    _ => None,
                };
                // Statements whose objects are compared after them need the snapshot before
                // them for sure: it is taken now, waited for; where the kernel refuses one
                // (it cannot fork), only what needs no comparison runs.
                let mut snapshot_taken = false;
                if let Some(watched) = first.as_ref().filter(|first| !first.watched.is_empty()) {
                    let first_cell = check::parse_of(&watched.code, None);
                    let by_message = std::mem::replace(&mut self.state.take_by_message, false);
                    self.snapshot_before(&first_cell, slot).await;
                    self.state.take_by_message = by_message || self.state.take_by_message;
                    snapshot_taken = true;
                    if self.state.pending_snapshot.is_none() {
                        snapshot_taken = false;
                        refused = first.take().map(|first| Refused {
                            first,
                            why: NotRun::NoSnapshot,
                        });
                        first = strict;
                    }
                }
                // Where nothing read from before the cell is compared, statements past those
                // that do not run can run too, when they bind more.
                if let Some(further) = further.filter(|further| {
                    first.as_ref().is_none_or(|first| {
                        first.watched.is_empty() && further.names.len() > first.names.len()
                    })
                }) {
                    first = Some(further);
                    refused = None;
                }
                // Why the slices past a statement left out did not run, for the message.
                let not_run_alone = alone_priors
                    .map(|priors| partial::not_run_alone(&cell, &checked, &priors, first.as_ref()))
                    .unwrap_or_default();
                // What the held part would have bound stays unbound: a later hold on such a
                // name says where it would have come from.
                self.state.new_cells.push(KernelEvent::Held {
                    cell: Arc::clone(&cell),
                });
                match first {
                    Some(first) => {
                        let mut error = partial::error(&checked, &code, &first, refused.as_ref());
                        let after = 1 + usize::from(refused.is_some());
                        error.traceback.splice(after..after, not_run_alone);
                        // The statements that run: parsed once, now they are decided.
                        let first_cell = check::parse_of(&first.code, None);
                        if !snapshot_taken {
                            self.snapshot_before(&first_cell, slot).await;
                        }
                        self.relay_rewritten(head, first_cell).await;
                        if let Some(running) = self.state.shell.running.as_mut() {
                            running.held_after = Some(error);
                            running.compare_after = !first.watched.is_empty();
                        }
                    }
                    None => {
                        let mut traceback = check::held_traceback(&checked, &code);
                        if let Some(refused) = &refused {
                            traceback.insert(1, refused.line(None));
                        }
                        let after = 1 + usize::from(refused.is_some());
                        traceback.splice(after..after, not_run_alone);
                        let evalue = check::held_evalue(&checked);
                        self.answer_error(&head, check::HELD_ENAME, &evalue, traceback)
                            .await;
                    }
                }
            }
            Decision::Warn => {
                let text = check::warning_text(&checked, &code);
                self.display(&head, &text).await;
                self.snapshot_before(&cell, slot).await;
                self.relay(head, cell).await;
            }
            Decision::Run => {
                if !checked.notes.is_empty() && self.state.settings.dry_run == crate::DryRunMode::On
                {
                    let text = format!("crane: {}", checked.notes.join("; "));
                    self.display(&head, &text).await;
                }
                self.snapshot_before(&cell, slot).await;
                self.relay(head, cell).await;
            }
        }
        if let Some(running) = &mut self.state.shell.running {
            running.check = self.state.last_check.clone();
            running.outside_effects = checked.outside_effects.clone();
        }
        if decision != Decision::Run {
            self.state.last = Some(Explained {
                code,
                checked,
                decision,
            });
        }
    }

    /// Relay a user cell as it was sent; `cell` is the parse of its code.
    pub(super) async fn relay(&mut self, mut head: Queued, cell: Arc<ParsedCell>) {
        let Some(request) = head.execute.take() else {
            return;
        };
        let msg_id = head.parsed.header.msg_id.clone();
        let running = self.running(msg_id, request, cell, &head);
        self.state.shell.relayed(running);
        self.send_to_kernel(head).await;
        self.start_beside();
    }

    pub(super) fn running(
        &mut self,
        msg_id: String,
        request: ExecuteCell,
        cell: Arc<ParsedCell>,
        head: &Queued,
    ) -> Running {
        let mut behind_take = false;
        if let Some(pending) = self
            .state
            .pending_take
            .as_mut()
            .filter(|pending| pending.cell_msg_id.is_empty())
        {
            pending.cell_msg_id = msg_id.clone();
            behind_take = true;
        }
        self.state.stopped = None;
        let mut running = Running::new(msg_id, request, cell, head.arrived);
        running.behind_take = behind_take;
        running.snapshot = self.state.pending_snapshot.take();
        running.raw_header = head.parsed.raw_header.clone();
        running.identities = head.parsed.identities.clone();
        // A cell that may change the state the cell that killed the kernel ran against.
        if !crane_probe::snapshot::cannot_change_state_parsed(&running.cell) {
            self.state.killer = None;
        }
        if let Some(watch) = self.state.watch.as_mut() {
            watch.mark();
        }
        self.state.beside_note = None;
        if std::mem::take(&mut self.state.beside_next) {
            running.beside = Beside::Wanted;
        }
        running
    }

    /// Relay a cell with its code changed to `cell`'s (the `%%crane run` line removed, a held
    /// cell's first statements), under the same header and with the rest of its content as
    /// sent, so the frontend's replies and outputs still belong to its request.
    pub(super) async fn relay_rewritten(&mut self, mut head: Queued, cell: Arc<ParsedCell>) {
        let Some(request) = head.execute.take() else {
            return;
        };
        let Ok(Value::Object(mut content)) = serde_json::from_slice(&head.parsed.content) else {
            return;
        };
        content.insert("code".into(), Value::String(cell.source().to_owned()));
        let Ok(content) = serde_json::to_vec(&content) else {
            return;
        };
        let Ok(raw) = RawMessage::from_multipart(head.message.clone(), &None) else {
            return;
        };
        let mut jparts = raw.jparts;
        jparts[3] = Bytes::from(content);
        let Some(message) = signed(&self.back.shell.mac, &raw.zmq_identities, &jparts) else {
            return;
        };
        let msg_id = head.parsed.header.msg_id.clone();
        let running = self.running(msg_id, request, cell, &head);
        self.state.shell.relayed(running);
        head.message = message;
        self.send_to_kernel(head).await;
    }
}
