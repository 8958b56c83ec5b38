//! The shell queue: the frontend's shell requests waiting their turn, in the order they came,
//! and the user cell the kernel runs, whose reply the next user cell waits for.

use std::time::{Duration, Instant};

use bytes::Bytes;
use zeromq::ZmqMessage;

use super::beside::Beside;
use super::wire::{ExecuteCell, Parsed};
use crate::check::{CraneError, Timings};
use crate::snapshots::SnapshotId;

/// How long the reply of a relayed cell is still awaited once the kernel went idle for it
/// without replying, or was interrupted before it began (its reply, sent on another socket,
/// may be a little behind).
pub(super) const REPLY_GRACE: Duration = Duration::from_secs(1);

/// A frontend shell request waiting its turn.
pub(super) struct Queued {
    pub(super) seq: u64,
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
    pub(super) code: String,
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
}

impl Running {
    pub(super) fn new(msg_id: String, cell: ExecuteCell, arrived: Instant) -> Running {
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
            msg_id,
            code: cell.code,
            stop_on_error: cell.stop_on_error,
            arrived,
            relayed: Instant::now(),
            check: None,
            started: false,
            give_up_at: None,
        }
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
