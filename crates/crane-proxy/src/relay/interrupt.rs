//! The frontend's interrupts (a SIGINT to the proxy, or an `interrupt_request` on control),
//! sent on to the kernel, and held back while a snapshot is forked before the cell they mean.

use std::time::{Duration, Instant};

use crane_kernel::InterruptMode;
use jupyter_protocol::{InterruptRequest, JupyterMessage};
use zeromq::ZmqMessage;

use super::wire::{forward, send};
use super::{log, Proxy, Slot};
use crate::check::Checker;

/// How long after a cell sent behind a snapshot's request began its code an interrupt deferred
/// meanwhile reaches the kernel: IPython's own steps before the code (history, transforms) are
/// not where a `KeyboardInterrupt` gets the cell an answer.
pub(super) const INTERRUPT_AFTER_INPUT: Duration = Duration::from_millis(50);

/// An interrupt that came while a snapshot was being taken, for the cell behind it: it goes
/// to the kernel once the fork is done, so that it interrupts the cell, not the fork.
pub(super) enum DeferredInterrupt {
    Signal { since: Instant },
    Control { message: ZmqMessage, since: Instant },
}

impl DeferredInterrupt {
    pub(super) fn since(&self) -> Instant {
        match self {
            DeferredInterrupt::Signal { since } | DeferredInterrupt::Control { since, .. } => {
                *since
            }
        }
    }
}

impl Proxy {
    /// The running cell was sent behind a snapshot's request and has not begun its code: an
    /// interrupt now would stop the fork (which answers it as interrupted) or land between two
    /// requests (where ipykernel ignores it) instead of stopping the cell.
    pub(super) fn fork_in_progress(&self) -> bool {
        self.state.shell.running.as_ref().is_some_and(|running| {
            running.behind_take
                && running
                    .input_at
                    .is_none_or(|at| at.elapsed() < INTERRUPT_AFTER_INPUT)
        })
    }

    /// An interrupt deferred while a snapshot was taken, once the fork is done (or took longer
    /// than a take may).
    pub(super) async fn deliver_deferred_interrupt(&mut self, slot: &Slot<impl Checker>) {
        if self.state.shell.running.is_none() {
            // The cell it meant ended first: nothing is left for it to interrupt.
            self.state.deferred_interrupt = None;
            return;
        }
        let due = self
            .state
            .deferred_interrupt
            .as_ref()
            .is_some_and(|deferred| {
                !self.fork_in_progress()
                    || deferred.since().elapsed() >= crane_probe::snapshot::TAKE_TIMEOUT
            });
        if !due {
            return;
        }
        match self.state.deferred_interrupt.take() {
            Some(DeferredInterrupt::Signal { .. }) => self.send_interrupt(slot).await,
            Some(DeferredInterrupt::Control { message, .. }) => {
                self.state.shell.interrupted();
                forward(&mut self.back.control, message, "kernel control").await;
            }
            None => {}
        }
    }

    /// Interrupt as the frontend asked (a SIGINT to the proxy): the kernel gets it too.
    pub(super) async fn interrupt(&mut self, slot: &Slot<impl Checker>) {
        if self.fork_in_progress() {
            self.state.deferred_interrupt = Some(DeferredInterrupt::Signal {
                since: Instant::now(),
            });
            return;
        }
        self.send_interrupt(slot).await;
    }

    pub(super) async fn send_interrupt(&mut self, slot: &Slot<impl Checker>) {
        if matches!(slot, Slot::Checking(_)) {
            self.state.interrupted_while_checking = true;
        }
        self.state.shell.interrupted();
        match self.state.interrupt_mode {
            InterruptMode::Signal => {
                let group = rustix::process::Pid::from_raw(self.state.kernel_pid as i32);
                if let Some(group) = group {
                    if let Err(error) =
                        rustix::process::kill_process_group(group, rustix::process::Signal::INT)
                    {
                        log(&format!("cannot interrupt the kernel: {error}"));
                    }
                }
            }
            InterruptMode::Message => {
                let request = JupyterMessage::new(InterruptRequest {}, None);
                self.back.own_requests.insert(request.header.msg_id.clone());
                send(&mut self.back.control, request, "kernel control").await;
            }
        }
    }
}
