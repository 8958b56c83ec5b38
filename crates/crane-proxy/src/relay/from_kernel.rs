//! What the kernel sends, on its way to the frontend: replies and outputs of crane's own
//! requests kept back, a background thread's output reparented, a cell's idle held until
//! crane's line under it, and a relayed cell's end: its reply read, the requests behind it
//! aborted after its error, its state rolled back by itself or kept. The cell's readings here
//! (its effects, the checker's history) take the parse it was relayed with.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use jupyter_zmq_client::RawMessage;
use serde::Deserialize;
use serde_json::Value;
use zeromq::{SocketRecv, ZmqMessage};

use super::beside::Beside;
use super::queue::REPLY_GRACE;
use super::rollback::AutoRollback;
use super::wire::{forward, parse_trusted, signed, with_content, Parsed};
use super::{log, Proxy};
use crate::check::{CraneError, KernelEvent};
use crate::effects;
use crate::failed::Failure;
use crate::partial;
use crate::stopped;

impl Proxy {
    pub(super) async fn back_shell(&mut self, message: ZmqMessage) {
        let Some(parsed) = parse_trusted(&self.back.shell, &message) else {
            return;
        };
        let parent_id = parsed.parent.as_ref().map(|parent| parent.msg_id.as_str());
        if let Some(pending) = self
            .state
            .pending_take
            .take_if(|pending| Some(pending.msg_id.as_str()) == parent_id)
        {
            self.back.own_requests.remove(&pending.msg_id);
            let answer = serde_json::from_slice::<Value>(&parsed.content)
                .map_err(crane_probe::dry_run::DryRunError::Malformed)
                .and_then(|reply| crane_probe::snapshot::read_take_reply(&reply));
            self.took(pending, answer);
            return;
        }
        if parent_id.is_some_and(|id| self.back.own_requests.remove(id)) {
            return;
        }
        let finished = self
            .state
            .shell
            .running
            .as_ref()
            .is_some_and(|running| Some(running.msg_id.as_str()) == parent_id)
            && parsed.header.msg_type == "execute_reply";
        let mut message = message;
        let mut content = parsed.content;
        // A cell crane stopped ends with crane's error, not the interrupt's.
        if let Some(error) = self.stopped_error(parent_id).filter(|_| finished) {
            if let Some(replaced) = stopped::replaced(&content, error) {
                if let Some(resigned) = with_content(&self.front.shell.mac, &message, &replaced) {
                    message = resigned;
                    content = Bytes::from(replaced);
                }
            }
        }
        // A held cell whose first statements ran ends with crane's error, shown before its reply.
        let held_after = (self.state.shell.running.as_mut())
            .filter(|_| finished)
            .and_then(|running| {
                let error = running.held_after.take()?;
                let replaced = partial::as_error(&content, &error)?;
                let stop = running.stop_on_error;
                Some((error, running.raw_header.clone(), stop, replaced))
            });
        let held_idle = if finished {
            self.finished(&content)
        } else {
            None
        };
        if let Some((error, raw_header, stop_on_error, replaced)) = held_after {
            if let Some(resigned) = with_content(&self.front.shell.mac, &message, &replaced) {
                message = resigned;
            }
            self.publish_error_under(&raw_header, error).await;
            self.state.shell.failed(stop_on_error);
        }
        forward(&mut self.front.shell, message, "frontend shell").await;
        if let Some(idle) = held_idle {
            self.rollback_note().await;
            forward(&mut self.front.iopub, idle, "frontend iopub").await;
        }
    }

    /// crane's error for the request `parent_id`, when it is a cell crane stopped.
    pub(super) fn stopped_error(&self, parent_id: Option<&str>) -> Option<&CraneError> {
        self.state
            .stopped
            .as_ref()
            .filter(|(msg_id, _)| Some(msg_id.as_str()) == parent_id)
            .map(|(_, error)| error)
    }

    /// The kernel stopped waiting for a reply that does not come.
    pub(super) async fn stop_waiting(&mut self) {
        // The deadline that woke the proxy may be another one (a rollback's, an interrupt's).
        let overdue = self
            .state
            .shell
            .running
            .as_ref()
            .and_then(|running| running.give_up_at)
            .is_some_and(|at| at <= Instant::now());
        if !overdue {
            return;
        }
        let held = self
            .state
            .shell
            .running
            .as_mut()
            .and_then(|running| running.held_idle.take());
        self.state.shell.stop_waiting();
        if let Some(idle) = held {
            forward(&mut self.front.iopub, idle, "frontend iopub").await;
        }
    }

    /// The running cell's reply came: the idle held for it, if the kernel sent it first.
    pub(super) fn finished(&mut self, content: &[u8]) -> Option<ZmqMessage> {
        let mut running = self.state.shell.replied()?;
        if let Beside::Started(cancel) = &running.beside {
            cancel.cancel();
            self.state.beside_note = Some(
                "the last cell ended before its dry run beside it did (or before its first half second), which was then ended"
                    .into(),
            );
        }
        if let Some(pending) = self
            .state
            .pending_take
            .take_if(|pending| pending.cell_msg_id == running.msg_id)
        {
            // Its reply would have come first on this connection: the kernel did not answer.
            self.back.own_requests.remove(&pending.msg_id);
            self.state.take_by_message = false;
            self.state.snapshot_note = Some(
                "no snapshot before the last cell: the kernel did not answer crane's request for it"
                    .into(),
            );
        }
        let held_idle = running.held_idle.take();
        // Until its idle passes through, the proxy owes the frontend one: a switch of kernels
        // before it comes publishes it instead.
        self.state.idle_owed = held_idle
            .is_none()
            .then(|| (running.msg_id.clone(), running.raw_header.clone()));
        if self.state.timings {
            log(&format!("timings: {}", running.timeline()));
        }
        #[derive(Deserialize)]
        struct Reply {
            status: String,
            execution_count: Option<usize>,
            #[serde(default)]
            ename: Option<String>,
        }
        let Ok(reply) = serde_json::from_slice::<Reply>(content) else {
            return held_idle;
        };
        if let Some(count) = reply.execution_count {
            self.state.execution_count = count;
        }
        let cell = Arc::clone(&running.cell);
        if reply.status != "aborted" {
            self.state.new_cells.push(KernelEvent::Ran {
                cell: Arc::clone(&cell),
                execution_count: reply.execution_count,
                raised: reply.status == "error",
            });
        }
        let failure = (reply.status == "error")
            .then(|| serde_json::from_slice::<Failure>(content).unwrap_or_default());
        if let Some(failure) = &failure {
            self.state.last_failure = Some((failure.clone(), false));
        }
        if reply.status == "error" {
            self.state.shell.failed(running.stop_on_error);
        }
        if reply.status == "error" {
            if let Some(snapshot) = running.snapshot {
                if self.state.snapshots.get(snapshot).is_some() {
                    self.state.failed_snapshot = Some(snapshot);
                    let mut effects = std::mem::take(&mut running.outside_effects);
                    effects.extend(effects::in_parsed(&cell));
                    self.state.failed_effects = effects.clone();
                    let ran = running.relayed.elapsed();
                    let interrupted =
                        running.interrupted || reply.ename.as_deref() == Some("KeyboardInterrupt");
                    let stopped = running.stopped_by.take();
                    // Why it is not rolled back by itself; `None`: it is, now.
                    let not_auto = match self.state.settings.rollback_auto {
                        // A cell crane stopped is held after the fact: always rolled back.
                        _ if stopped.is_some() => None,
                        None => Some(String::new()),
                        Some(_) if interrupted => Some(" (not rolled back by itself: it was interrupted, and what it did until then may be wanted)".to_owned()),
                        Some(within) if ran > within => Some(format!(
                            " (not rolled back by itself: it ran {:.1} s, over the {} s of `%crane rollback auto`)",
                            ran.as_secs_f64(),
                            within.as_secs_f64()
                        )),
                        Some(_) => None,
                    };
                    let Some(not_auto) = not_auto else {
                        // The queue waits for the rollback; the idle goes after crane's line.
                        self.state.idle_owed = None;
                        self.state.rollback_due = Some(AutoRollback {
                            snapshot,
                            msg_id: running.msg_id,
                            raw_header: running.raw_header,
                            ran,
                            effects,
                            idle: held_idle,
                            deadline: Instant::now() + REPLY_GRACE,
                            stopped,
                            held: false,
                            cell,
                            line: failure.as_ref().and_then(Failure::line),
                        });
                        return None;
                    };
                    let text = format!(
                        "crane: the state before this cell is kept; `%crane rollback` returns to it.{not_auto}{}",
                        effects::sentence(&effects)
                    );
                    self.state.note_before_idle = Some((running.msg_id, running.raw_header, text));
                    // The idle comes after the note; if it came before the reply, now.
                    return held_idle;
                }
            }
        }
        if running.compare_after && reply.status == "ok" {
            if let Some(snapshot) = running
                .snapshot
                .filter(|snapshot| self.state.snapshots.get(*snapshot).is_some())
            {
                // The first statements of a held cell ran and read objects from before it:
                // compared with the snapshot, kept or rolled back as a failed cell's part.
                self.state.idle_owed = None;
                let lines = u32::try_from(cell.source().lines().count()).ok();
                self.state.rollback_due = Some(AutoRollback {
                    snapshot,
                    msg_id: running.msg_id,
                    raw_header: running.raw_header,
                    ran: running.relayed.elapsed(),
                    effects: effects::in_parsed(&cell),
                    idle: held_idle,
                    deadline: Instant::now() + REPLY_GRACE,
                    stopped: None,
                    held: true,
                    cell,
                    line: lines,
                });
                return None;
            }
        }
        if let Some(stopped) = running.stopped_by.take() {
            // Interrupted for its dry run's crash, but its snapshot went meanwhile (the memory
            // watch), or the cell ended without raising (it caught the interrupt).
            let kept = match reply.status.as_str() {
                "error" => "Its snapshot is gone, so it is not rolled back.",
                _ => "It ended without an error all the same, and is kept as it ended.",
            };
            let text = format!(
                "crane: interrupted this cell: its dry run beside it crashed first. {stopped} {kept}"
            );
            self.state.note_before_idle = Some((running.msg_id, running.raw_header, text));
            return held_idle;
        }
        // No note: the idle held for nothing goes on at once.
        held_idle
    }

    pub(super) async fn back_control(&mut self, message: ZmqMessage) {
        let Some(parsed) = parse_trusted(&self.back.control, &message) else {
            return;
        };
        let parent_id = parsed.parent.as_ref().map(|parent| parent.msg_id.as_str());
        if parent_id.is_some_and(|id| self.back.own_requests.remove(id)) {
            return;
        }
        forward(&mut self.front.control, message, "frontend control").await;
    }

    pub(super) async fn back_iopub(&mut self, message: ZmqMessage) {
        let Some(parsed) = parse_trusted(&self.back.iopub, &message) else {
            return;
        };
        let msg_type = parsed.header.msg_type.as_str();
        let crane_own = parsed
            .parent
            .as_ref()
            .is_some_and(|parent| !self.state.front_sessions.contains(&parent.session));
        if crane_own {
            // What answers crane's request is crane's; anything else (a background thread's
            // output, a comm) only happened while crane's request was the kernel's latest.
            if matches!(
                msg_type,
                "status" | "execute_input" | "execute_result" | "error" | "iopub_welcome"
            ) {
                return;
            }
            self.forward_reparented(&message).await;
            return;
        }
        // The kernel's welcome answers the proxy's own subscription.
        if msg_type == "iopub_welcome" {
            return;
        }
        let parent_id = parsed.parent.as_ref().map(|parent| parent.msg_id.as_str());
        if let Some(error) = self.stopped_error(parent_id) {
            // crane's error stands for the interrupt crane caused: none of the kernel's words
            // about it reach the frontend.
            if msg_type == "stream" && stopped::is_interrupt_stream(&parsed.content) {
                return;
            }
            if msg_type == "error" {
                if let Some(resigned) = stopped::replaced(&parsed.content, error)
                    .and_then(|replaced| with_content(&self.front.iopub.mac, &message, &replaced))
                {
                    forward(&mut self.front.iopub, resigned, "frontend iopub").await;
                    return;
                }
            }
        }
        if msg_type == "status" && parsed.parent.is_none() {
            // A kernel a takeover made says `starting` as any kernel does: the frontend's
            // kernel did not start again.
            return;
        }
        if msg_type == "status" {
            self.status(&parsed);
            if self.is_idle_for(&parsed) {
                let parent_id = parsed.parent.as_ref().map(|parent| parent.msg_id.clone());
                if self.state.idle_owed.as_ref().map(|(id, _)| id) == parent_id.as_ref() {
                    self.state.idle_owed = None;
                }
                let pending_for = self
                    .state
                    .pending_take
                    .as_ref()
                    .map(|pending| pending.cell_msg_id.clone());
                if let Some(running) = self.state.shell.running.as_mut().filter(|running| {
                    (running.snapshot.is_some()
                        || running.held_after.is_some()
                        || pending_for.as_ref() == Some(&running.msg_id))
                        && Some(&running.msg_id) == parent_id.as_ref()
                }) {
                    running.held_idle = Some(message);
                    return;
                }
                if let Some(due) = self
                    .state
                    .rollback_due
                    .as_mut()
                    .filter(|due| due.idle.is_none() && Some(&due.msg_id) == parent_id.as_ref())
                {
                    due.idle = Some(message);
                    return;
                }
                if self
                    .state
                    .note_before_idle
                    .as_ref()
                    .is_some_and(|(id, _, _)| Some(id) == parent_id.as_ref())
                {
                    self.rollback_note().await;
                }
            }
        }
        if parsed.header.msg_type == "execute_input" {
            #[derive(Deserialize)]
            struct Input {
                execution_count: usize,
            }
            if let Ok(input) = serde_json::from_slice::<Input>(&parsed.content) {
                self.state.execution_count = input.execution_count;
            }
            let parent_id = parsed.parent.as_ref().map(|parent| parent.msg_id.as_str());
            if let Some(running) = self
                .state
                .shell
                .running
                .as_mut()
                .filter(|running| Some(running.msg_id.as_str()) == parent_id)
            {
                running.input_at.get_or_insert_with(Instant::now);
            }
        }
        forward(&mut self.front.iopub, message, "frontend iopub").await;
    }

    pub(super) fn is_idle_for(&self, parsed: &Parsed) -> bool {
        #[derive(Deserialize)]
        struct State {
            execution_state: String,
        }
        parsed.parent.is_some()
            && serde_json::from_slice::<State>(&parsed.content)
                .is_ok_and(|state| state.execution_state == "idle")
    }

    /// Follow the running cell's busy and idle.
    pub(super) fn status(&mut self, parsed: &Parsed) {
        let Some(running) = self.state.shell.running.as_mut() else {
            return;
        };
        if parsed.parent.as_ref().map(|parent| parent.msg_id.as_str()) != Some(&running.msg_id) {
            return;
        }
        #[derive(Deserialize)]
        struct State {
            execution_state: String,
        }
        match serde_json::from_slice::<State>(&parsed.content) {
            Ok(state) if state.execution_state == "busy" => running.started = true,
            Ok(state) if state.execution_state == "idle" => running.give_up_soon(),
            _ => {}
        }
    }

    /// Forward a message the kernel sent under crane's request as the kernel would have sent
    /// it without crane: under the frontend's latest request, signed again.
    pub(super) async fn forward_reparented(&mut self, message: &ZmqMessage) {
        let Ok(raw) = RawMessage::from_multipart(message.clone(), &None) else {
            return;
        };
        let mut jparts = raw.jparts;
        jparts[1] = self
            .state
            .front_parent
            .clone()
            .unwrap_or_else(|| Bytes::from_static(b"{}"));
        if let Some(message) = signed(&self.front.iopub.mac, &raw.zmq_identities, &jparts) {
            forward(&mut self.front.iopub, message, "frontend iopub").await;
        }
    }

    /// Forward what the kernel sent before it exited.
    pub(super) async fn drain(&mut self, within: Duration) {
        let _ = tokio::time::timeout(within, async {
            loop {
                tokio::select! {
                    Ok(message) = self.back.shell.socket.recv() => self.back_shell(message).await,
                    Ok(message) = self.back.control.socket.recv() => self.back_control(message).await,
                    Ok(message) = self.back.iopub.socket.recv() => self.back_iopub(message).await,
                    else => return,
                }
            }
        })
        .await;
    }
}
