//! The shell queue, where the frontend's shell requests wait their turn: a state machine
//! without I/O, whose [`ShellQueue::next`] says what leaves it next and which the relay
//! performs (`pump` in the relay's `mod.rs`). Its rules, each a test below:
//!
//! - requests leave in the order they came;
//! - a user cell (an `execute_request` that is not `silent`) leaves only once the cell the
//!   kernel runs has ended (its reply, the kernel's death, or a reply that will not come), so
//!   its check sees the state that cell left, and the requests behind it wait with it; other
//!   requests (completions, comms, silent executes) pass a running cell;
//! - nothing leaves while a user cell is being checked;
//! - a cell that ends in an error (the kernel's, crane's hold, the kernel's death) with
//!   `stop_on_error` aborts every execute request that has arrived by then, as ipykernel
//!   aborts its queue; those that arrive later run;
//! - a replayed request never gets here: `wire::accept` drops it.
//!
//! Where cells are held is not decided here: the queue hands a user cell its turn
//! ([`Next::Cell`]), and the relay's `cell` module checks it and holds, warns or relays it.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use crane_analysis::ParsedCell;
use zeromq::ZmqMessage;

use super::beside::Beside;
use super::log;
use super::wire::{ExecuteCell, Parsed};
use crate::check::{CraneError, Timings};
use crate::snapshots::SnapshotId;

/// How long the reply of a relayed cell is still awaited once the kernel went idle for it
/// without replying, or was interrupted before it began (its reply, sent on another socket,
/// may be a little behind).
pub(super) const REPLY_GRACE: Duration = Duration::from_secs(1);

/// What leaves the shell queue next.
pub(super) enum Next {
    /// Nothing, for now: the queue is empty, a cell is being checked, or the user cell at its
    /// head waits for the one the kernel runs (and the requests behind it wait too).
    Wait,
    /// An execute request that arrived before a cell ended in an error: answered `aborted`.
    Abort(Queued),
    /// A request that is not a user cell: relayed as it came.
    Relay(Queued),
    /// A user cell whose turn has come.
    Cell(Queued),
}

/// The frontend's shell requests in the order they came, the user cell being checked and the
/// one the kernel runs.
#[derive(Default)]
pub(super) struct ShellQueue {
    waiting: VecDeque<Queued>,
    next_seq: u64,
    /// Execute requests that arrived up to this one are aborted (a cell before them failed).
    abort_through: Option<u64>,
    /// The user cell being checked: nothing leaves until its check has ended.
    checking: Option<Queued>,
    /// The user cell relayed to the kernel whose reply has not come.
    pub(super) running: Option<Running>,
}

impl ShellQueue {
    /// A frontend's shell request, accepted (signed, not a replay), joins the queue.
    pub(super) fn arrived(&mut self, message: ZmqMessage, parsed: Parsed) {
        let execute = (parsed.header.msg_type == "execute_request")
            .then(|| ExecuteCell::read(&parsed.content))
            .flatten();
        let seq = self.next_seq;
        self.next_seq += 1;
        self.waiting.push_back(Queued {
            seq,
            arrived: Instant::now(),
            message,
            parsed,
            execute,
        });
    }

    /// What leaves the queue now; the relay performs it and asks again until [`Next::Wait`].
    pub(super) fn next(&mut self) -> Next {
        if self.checking.is_some() {
            return Next::Wait;
        }
        let Some(head) = self.waiting.front() else {
            return Next::Wait;
        };
        // Every execute request, one the proxy cannot read included: ipykernel aborts its
        // queue without reading the code either.
        let aborted = head.parsed.header.msg_type == "execute_request"
            && self
                .abort_through
                .is_some_and(|through| head.seq <= through);
        let user_cell = head.is_user_cell();
        if user_cell && !aborted && self.running.is_some() {
            // Its check must see the state the cell before leaves.
            return Next::Wait;
        }
        let Some(head) = self.waiting.pop_front() else {
            return Next::Wait;
        };
        match () {
            _ if aborted => Next::Abort(head),
            _ if user_cell => Next::Cell(head),
            _ => Next::Relay(head),
        }
    }

    /// A user cell is being checked; it comes back with [`ShellQueue::checked`].
    pub(super) fn check(&mut self, cell: Queued) {
        self.checking = Some(cell);
    }

    /// The cell whose check ended.
    pub(super) fn checked(&mut self) -> Option<Queued> {
        self.checking.take()
    }

    /// A user cell went to the kernel: the next one waits for its end.
    pub(super) fn relayed(&mut self, running: Running) {
        self.running = Some(running);
    }

    /// The running cell's reply came: it has ended.
    pub(super) fn replied(&mut self) -> Option<Running> {
        self.running.take()
    }

    /// A cell ended in an error (the kernel's, or crane's for a cell it held): with
    /// `stop_on_error`, every execute request that has arrived so far is aborted.
    pub(super) fn failed(&mut self, stop_on_error: bool) {
        if stop_on_error {
            self.abort_through = self.next_seq.checked_sub(1);
        }
    }

    /// The kernel died: the cell it ran has ended in an error (crane's, for the death), and
    /// the requests that arrived behind it are aborted as after any error.
    pub(super) fn died(&mut self) -> Option<Running> {
        let running = self.running.take();
        if let Some(running) = &running {
            self.failed(running.stop_on_error);
        }
        running
    }

    /// The kernel went idle for the running cell, or was interrupted before it began it, and
    /// no reply came: it will not come (ipykernel answers nothing to a request it cannot read),
    /// so the requests behind it go on.
    pub(super) fn stop_waiting(&mut self) {
        if let Some(running) = self.running.take() {
            log(&format!(
                "the kernel did not answer cell {}; its requests behind it go on",
                running.msg_id
            ));
        }
    }

    /// An interrupt reached the kernel: a cell it had not begun will get no reply, and a cell
    /// it was running is never rolled back by itself.
    pub(super) fn interrupted(&mut self) {
        if let Some(running) = self.running.as_mut() {
            running.interrupted = true;
            if !running.started {
                running.give_up_soon();
            }
        }
    }
}

/// A frontend shell request waiting its turn.
pub(super) struct Queued {
    /// Its place in the order of arrival.
    seq: u64,
    pub(super) arrived: Instant,
    pub(super) message: ZmqMessage,
    pub(super) parsed: Parsed,
    /// Set for an `execute_request` the proxy could read.
    pub(super) execute: Option<ExecuteCell>,
}

impl Queued {
    /// The one test of whether a request is a user cell, which crane checks.
    pub(super) fn is_user_cell(&self) -> bool {
        self.execute.as_ref().is_some_and(|request| !request.silent)
    }
}

/// A user cell relayed to the kernel whose reply has not come yet.
pub(super) struct Running {
    pub(super) msg_id: String,
    /// The code the kernel runs, and its one parse (the check's, or the relay's of code no
    /// check read), which every reading of it takes: whether it may change the state, what it
    /// does outside the kernel, the checker's history once it ran.
    pub(super) cell: Arc<ParsedCell>,
    pub(super) stop_on_error: bool,
    pub(super) arrived: Instant,
    pub(super) relayed: Instant,
    /// How long its check took, and where the time went; `None` for a cell not checked.
    pub(super) check: Option<(Duration, Timings)>,
    /// The kernel said it was busy with it.
    pub(super) started: bool,
    /// When to stop waiting for its reply: set once the kernel went idle for it, or was
    /// interrupted before it began.
    pub(super) give_up_at: Option<Instant>,
    /// The snapshot taken before it.
    pub(super) snapshot: Option<SnapshotId>,
    /// Its request's header, for crane's line after its error.
    pub(super) raw_header: Bytes,
    /// Where its request came from, for crane's reply if the kernel dies in it.
    pub(super) identities: Vec<Bytes>,
    /// The kernel's idle for it, held until its reply says whether crane adds a line.
    pub(super) held_idle: Option<ZmqMessage>,
    /// An interrupt reached the kernel while it was relayed: it is never rolled back by itself.
    pub(super) interrupted: bool,
    /// What its dry run tried outside the kernel (blocked there, done in the real run).
    pub(super) outside_effects: Vec<String>,
    /// It was sent right behind a snapshot's request (`PendingTake`).
    pub(super) behind_take: bool,
    /// When the kernel said it began running its code (`execute_input`).
    pub(super) input_at: Option<Instant>,
    pub(super) beside: Beside,
    /// crane interrupted it for the crash its dry run beside it saw (that crash).
    pub(super) stopped_by: Option<String>,
    /// A held cell of which only the statements before its predicted crash were relayed
    /// (`partial`): crane's error, for its reply and outputs once they ran.
    pub(super) held_after: Option<CraneError>,
    /// Those statements read objects from before the cell: once they ran, the objects are
    /// compared with the snapshot before them, and rolled back unless unchanged.
    pub(super) compare_after: bool,
}

impl Running {
    /// `request`, relayed with `cell`, the parse of the code it runs.
    pub(super) fn new(
        msg_id: String,
        request: ExecuteCell,
        cell: Arc<ParsedCell>,
        arrived: Instant,
    ) -> Running {
        Running {
            snapshot: None,
            raw_header: Bytes::new(),
            identities: Vec::new(),
            held_idle: None,
            interrupted: false,
            outside_effects: Vec::new(),
            behind_take: false,
            input_at: None,
            beside: Beside::None,
            stopped_by: None,
            held_after: None,
            compare_after: false,
            msg_id,
            cell,
            stop_on_error: request.stop_on_error,
            arrived,
            relayed: Instant::now(),
            check: None,
            started: false,
            give_up_at: None,
        }
    }

    /// The code the kernel runs.
    pub(super) fn code(&self) -> &str {
        self.cell.source()
    }

    pub(super) fn give_up_soon(&mut self) {
        self.give_up_at.get_or_insert(Instant::now() + REPLY_GRACE);
    }
}

impl Running {
    /// Where the cell's time went, from its arrival to the kernel's reply.
    pub(super) fn timeline(&self) -> String {
        let ms = |d: Duration| format!("{:.1}", d.as_secs_f64() * 1000.0);
        let waited = self.relayed.duration_since(self.arrived);
        let check = match &self.check {
            Some((took, timings)) => format!("check {} ms ({})", ms(*took), timings.describe()),
            None => "not checked".into(),
        };
        format!(
            "cell {}: {} ms in crane before the kernel got it, {check}; the kernel ran it in {} ms",
            self.msg_id,
            ms(waited),
            ms(self.relayed.elapsed())
        )
    }
}

#[cfg(test)]
mod tests {
    //! The queue's order, driven as the relay drives it, with real signed messages and no
    //! socket or kernel.

    use std::sync::Arc;

    use bytes::Bytes;
    use crane_analysis::ParsedCell;
    use serde_json::{json, Value};
    use zeromq::ZmqMessage;

    use super::{Next, Queued, Running, ShellQueue};
    use crate::relay::wire::{accept, signed, Digests};

    fn key() -> Option<ring::hmac::Key> {
        Some(ring::hmac::Key::new(ring::hmac::HMAC_SHA256, b"a-key"))
    }

    /// A frontend's request, signed with [`key`], as it comes off the shell socket.
    fn message(msg_id: &str, msg_type: &str, content: Value) -> ZmqMessage {
        let header = json!({
            "msg_id": msg_id, "msg_type": msg_type, "session": "frontend",
            "username": "user", "date": "2026-01-01T00:00:00Z", "version": "5.3",
        });
        let jparts: Vec<Bytes> = [header, json!({}), json!({}), content]
            .iter()
            .map(|part| Bytes::from(part.to_string()))
            .collect();
        signed(&key(), &[Bytes::from_static(b"client")], &jparts).expect("a message")
    }

    /// A queue and the signatures seen, fed as the relay feeds them.
    #[derive(Default)]
    struct Shell {
        queue: ShellQueue,
        digests: Digests,
    }

    impl Shell {
        /// `true` when the request was accepted into the queue.
        fn send(&mut self, message: &ZmqMessage) -> bool {
            match accept(&key(), &mut self.digests, message) {
                Some(parsed) => {
                    self.queue.arrived(message.clone(), parsed);
                    true
                }
                None => false,
            }
        }

        fn cell(&mut self, msg_id: &str, code: &str) {
            assert!(self.send(&message(msg_id, "execute_request", json!({ "code": code }))));
        }

        fn request(&mut self, msg_id: &str, msg_type: &str, content: Value) {
            assert!(self.send(&message(msg_id, msg_type, content)));
        }

        /// Everything that leaves now, as the relay's pump takes it: a user cell given its turn
        /// is relayed (the queue then waits for its reply).
        fn pump(&mut self) -> Vec<String> {
            let mut left = Vec::new();
            loop {
                match self.queue.next() {
                    Next::Wait => return left,
                    Next::Abort(head) => left.push(format!("abort {}", id(&head))),
                    Next::Relay(head) => left.push(format!("relay {}", id(&head))),
                    Next::Cell(mut head) => {
                        left.push(format!("cell {}", id(&head)));
                        let request = head.execute.take().expect("a user cell");
                        let cell = Arc::new(ParsedCell::parse(&request.code));
                        let running = Running::new(id(&head), request, cell, head.arrived);
                        self.queue.relayed(running);
                    }
                }
            }
        }

        /// The running cell's reply came, `ok` or an `error`.
        fn reply(&mut self, status: &str) -> String {
            let running = self.queue.replied().expect("a running cell");
            if status == "error" {
                self.queue.failed(running.stop_on_error);
            }
            running.msg_id
        }
    }

    fn id(head: &Queued) -> String {
        head.parsed.header.msg_id.clone()
    }

    #[test]
    fn cells_leave_in_the_order_they_came_each_after_the_one_before_ended() {
        let mut shell = Shell::default();
        for (id, code) in [("a", "x = 1"), ("b", "y = 2"), ("c", "z = 3")] {
            shell.cell(id, code);
        }
        assert_eq!(shell.pump(), ["cell a"]);
        assert_eq!(shell.pump(), Vec::<String>::new(), "b waits for a");
        assert_eq!(shell.reply("ok"), "a");
        assert_eq!(shell.pump(), ["cell b"]);
        assert_eq!(shell.reply("ok"), "b");
        assert_eq!(shell.pump(), ["cell c"]);
        assert_eq!(shell.reply("ok"), "c");
        assert_eq!(shell.pump(), Vec::<String>::new());
    }

    #[test]
    fn other_requests_pass_a_running_cell_but_not_a_cell_that_waits() {
        let mut shell = Shell::default();
        shell.cell("a", "train()");
        assert_eq!(shell.pump(), ["cell a"]);
        shell.request(
            "complete",
            "complete_request",
            json!({"code": "df.", "cursor_pos": 3}),
        );
        shell.request(
            "silent",
            "execute_request",
            json!({"code": "1", "silent": true}),
        );
        shell.request("comm", "comm_msg", json!({"comm_id": "w", "data": {}}));
        // No `code`: ipykernel cannot read it either, so it is no cell to wait for.
        shell.request("unread", "execute_request", json!({"silent": false}));
        assert_eq!(
            shell.pump(),
            [
                "relay complete",
                "relay silent",
                "relay comm",
                "relay unread"
            ]
        );
        shell.cell("b", "evaluate()");
        shell.request(
            "inspect",
            "inspect_request",
            json!({"code": "df", "cursor_pos": 2}),
        );
        assert_eq!(
            shell.pump(),
            Vec::<String>::new(),
            "behind b, it waits with b"
        );
        shell.reply("ok");
        assert_eq!(shell.pump(), ["cell b", "relay inspect"]);
    }

    #[test]
    fn a_silent_value_is_read_for_its_python_truth() {
        let mut shell = Shell::default();
        shell.cell("a", "train()");
        shell.pump();
        shell.request("zero", "execute_request", json!({"code": "x", "silent": 0}));
        shell.request(
            "text",
            "execute_request",
            json!({"code": "x", "silent": "yes"}),
        );
        assert_eq!(
            shell.pump(),
            Vec::<String>::new(),
            "silent 0 is a user cell, it waits"
        );
        shell.reply("ok");
        assert_eq!(
            shell.pump(),
            ["cell zero", "relay text"],
            "silent \"yes\" is a silent request, which passes a running cell"
        );
    }

    #[test]
    fn nothing_leaves_while_a_cell_is_checked() {
        let mut shell = Shell::default();
        shell.cell("a", "df['price']");
        let Next::Cell(head) = shell.queue.next() else {
            panic!("a user cell's turn");
        };
        shell.queue.check(head);
        shell.request(
            "complete",
            "complete_request",
            json!({"code": "d", "cursor_pos": 1}),
        );
        assert_eq!(shell.pump(), Vec::<String>::new());
        assert_eq!(
            shell.queue.checked().map(|head| id(&head)).as_deref(),
            Some("a")
        );
        assert_eq!(shell.pump(), ["relay complete"]);
    }

    #[test]
    fn an_error_aborts_the_execute_requests_that_had_arrived_and_not_those_after() {
        let mut shell = Shell::default();
        shell.cell("a", "df.drop(columns='x', inplace=True); df['x']");
        shell.pump();
        shell.cell("b", "df.head()");
        shell.request(
            "complete",
            "complete_request",
            json!({"code": "d", "cursor_pos": 1}),
        );
        shell.request(
            "silent",
            "execute_request",
            json!({"code": "1", "silent": true}),
        );
        shell.request("unread", "execute_request", json!({"silent": false}));
        shell.reply("error");
        shell.cell("c", "df = load()");
        assert_eq!(
            shell.pump(),
            [
                "abort b",
                "relay complete",
                "abort silent",
                "abort unread",
                "cell c"
            ]
        );
        shell.reply("error");
        assert_eq!(
            shell.pump(),
            Vec::<String>::new(),
            "nothing had arrived behind c"
        );
        shell.cell("d", "df.head()");
        assert_eq!(shell.pump(), ["cell d"]);
    }

    #[test]
    fn an_error_without_stop_on_error_aborts_nothing() {
        let mut shell = Shell::default();
        shell.request(
            "a",
            "execute_request",
            json!({"code": "1 / 0", "stop_on_error": false}),
        );
        shell.pump();
        shell.cell("b", "x = 1");
        shell.reply("error");
        assert_eq!(shell.pump(), ["cell b"]);
    }

    #[test]
    fn a_held_cell_aborts_what_arrived_while_it_was_checked() {
        let mut shell = Shell::default();
        shell.cell("a", "df['nope']");
        let Next::Cell(head) = shell.queue.next() else {
            panic!("a user cell's turn");
        };
        shell.queue.check(head);
        shell.cell("b", "df.head()");
        // crane answers the held cell with its error (`answer_error`), as a failed cell.
        let held = shell.queue.checked().expect("the cell checked");
        let stop_on_error = held.execute.as_ref().is_none_or(|cell| cell.stop_on_error);
        shell.queue.failed(stop_on_error);
        shell.cell("c", "df.tail()");
        assert_eq!(shell.pump(), ["abort b", "cell c"]);
    }

    #[test]
    fn a_replayed_request_is_dropped_before_the_queue() {
        let mut shell = Shell::default();
        let cell = message("a", "execute_request", json!({"code": "x += 1"}));
        assert!(shell.send(&cell));
        assert!(!shell.send(&cell), "the same signature again is a replay");
        assert_eq!(shell.pump(), ["cell a"]);
        shell.reply("ok");
        assert_eq!(shell.pump(), Vec::<String>::new(), "x += 1 ran once");
        // A message whose signature does not match is dropped too.
        let mut forged: Vec<Bytes> =
            message("f", "execute_request", json!({"code": "1"})).into_vec();
        let last = forged.len() - 1;
        forged[last] = Bytes::from(json!({"code": "import os"}).to_string());
        let forged = ZmqMessage::try_from(forged).expect("a message");
        assert!(!shell.send(&forged));
    }

    #[test]
    fn a_death_ends_the_running_cell_and_aborts_what_arrived_behind_it() {
        let mut shell = Shell::default();
        shell.cell("a", "segfault()");
        shell.pump();
        shell.cell("b", "df.head()");
        let died = shell.queue.died().expect("the cell the kernel ran");
        assert_eq!(died.msg_id, "a");
        // The relay then returns to the snapshot before `a` (or a fresh kernel) and answers
        // `a` with the death; the queue goes on with what arrives next.
        shell.cell("c", "df = load()");
        assert_eq!(shell.pump(), ["abort b", "cell c"]);
        // A death while no cell runs aborts nothing.
        shell.reply("ok");
        shell.cell("d", "x = 1");
        assert!(shell.queue.died().is_none());
        assert_eq!(shell.pump(), ["cell d"]);
    }

    #[test]
    fn a_death_in_a_cell_without_stop_on_error_aborts_nothing() {
        let mut shell = Shell::default();
        shell.request(
            "a",
            "execute_request",
            json!({"code": "segfault()", "stop_on_error": false}),
        );
        shell.pump();
        shell.cell("b", "df.head()");
        assert!(shell.queue.died().is_some());
        assert_eq!(shell.pump(), ["cell b"]);
    }

    #[test]
    fn a_cell_interrupted_before_it_began_is_given_up_and_the_queue_goes_on() {
        let mut shell = Shell::default();
        shell.cell("a", "train()");
        shell.pump();
        shell.cell("b", "evaluate()");
        shell.queue.interrupted();
        let running = shell.queue.running.as_ref().expect("a runs");
        assert!(running.interrupted);
        assert!(
            running.give_up_at.is_some(),
            "no reply will come for a cell not begun"
        );
        shell.queue.stop_waiting();
        assert_eq!(shell.pump(), ["cell b"], "an interrupt is no error: b runs");
    }

    #[test]
    fn a_cell_interrupted_while_it_runs_is_still_waited_for() {
        let mut shell = Shell::default();
        shell.cell("a", "train()");
        shell.pump();
        shell.cell("b", "evaluate()");
        shell.queue.running.as_mut().expect("a runs").started = true;
        shell.queue.interrupted();
        assert!(shell
            .queue
            .running
            .as_ref()
            .is_some_and(|r| r.give_up_at.is_none()));
        assert_eq!(shell.pump(), Vec::<String>::new());
        // Its reply (a KeyboardInterrupt error) aborts b, as ipykernel does.
        shell.reply("error");
        assert_eq!(shell.pump(), ["abort b"]);
    }
}
