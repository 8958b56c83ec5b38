//! The relay: the five sockets the frontend connects to, the real kernel behind them on private
//! ports (signed with the same key, so messages pass through byte for byte), and the one place
//! where crane steps in, a user cell's `execute_request` on shell.
//!
//! Shell requests keep their order: while a user cell waits for the cell before it or is being
//! checked, the requests behind it wait too. A cell that arrived while the cell before it was
//! still running is aborted when that cell fails or is held, as ipykernel aborts its queue, so
//! "Run All" stops at a held cell as it stops at a crash. Crane's own traffic with the kernel
//! (probe, dry run) is never shown to the frontend: what the kernel publishes about crane's own
//! requests (their status, inputs, results, errors) stays with the proxy; everything else the
//! kernel publishes reaches the frontend, output a background thread writes while crane's
//! request was the kernel's latest under the frontend's latest request, as a kernel without
//! crane would have sent it.
//!
//! A frontend's message signed as one seen before is a replay: the proxy drops it, as
//! ipykernel's `Session` does with its digest history, so a replayed cell or magic is neither
//! answered nor waited for. A relayed cell is waited for until its reply, the kernel's death,
//! or a sign that no reply will come (the kernel idle for it, or interrupted before it began).
//!
//! This module is the glue: [`serve`], the proxy's state, and the event loop that selects over
//! the sockets, the check, the kernel's exit and the signals, and hands each event to the
//! module whose job it is:
//!
//! - `wire`: the frontend's and the kernel's sockets, parsing, signing, replays, and reading a
//!   request as ipykernel reads it;
//! - `queue`: where every shell request waits its turn, and the cell the kernel runs: a
//!   state machine without I/O (`ShellQueue::next`), whose order rules are its unit tests;
//! - `cell`: a user cell's turn: relayed, checked, and what the check's decision makes of it;
//! - `from_kernel`: what the kernel sends, filtered and forwarded, and a cell's end;
//! - `answers`: crane's own answers to the frontend, as a kernel sends them;
//! - `magics`: the `%crane` magics, and `%tb`/`%debug` after a rollback;
//! - `take`: the snapshot taken before a cell;
//! - `rollback`: a return to a snapshot (a takeover, or the fresh start), `rollback auto`;
//! - `beside`: a long cell's dry run beside its real run, which may stop it;
//! - `interrupt`: the frontend's interrupts, held while a snapshot is forked;
//! - `kernel`: starting, preparing, switching and reaping the kernels behind the relay, and
//!   the session lent to a check;
//! - `died`: a kernel that died without being asked to.

use std::collections::HashSet;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bytes::Bytes;
use crane_kernel::{
    read_connection_file, ConnectionFileError, InterruptMode, KernelError, KernelLaunch,
    KernelSession, StartOptions,
};
use jupyter_protocol::IoPubWelcome;
use jupyter_protocol::JupyterMessage;
use jupyter_zmq_client::{RuntimeError, SubscriptionEvent};
use zeromq::{SocketRecv, ZmqMessage};

use crate::check::{Checker, CraneError, KernelEvent, Timings};
use crate::death::{KernelWatch, Killer};
use crate::failed::Failure;
use crate::settings::Settings;
use crate::snapshots::{SnapshotId, Snapshots};

mod answers;
mod beside;
mod cell;
mod died;
mod from_kernel;
mod interrupt;
mod kernel;
mod magics;
mod queue;
mod rollback;
mod take;
mod wire;

use beside::BesideDone;
use interrupt::{DeferredInterrupt, INTERRUPT_AFTER_INPUT};
use kernel::{
    prepare_kernel, raise_oom_score, wait_adopted, Adopted, Launcher, Slot, SlotEvent,
    REAP_INTERVAL,
};
use magics::Explained;
use queue::{Next, ShellQueue};
use rollback::AutoRollback;
use take::PendingTake;
use wire::{accept, forward, send, Back, Digests, Front};

/// How long messages the kernel sent just before it exited are still forwarded.
const EXIT_DRAIN: Duration = Duration::from_millis(300);

/// How to run the proxy.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The connection file the frontend wrote (ports, key, transport).
    pub connection_file: PathBuf,
    /// The real kernel.
    pub launch: KernelLaunch,
    pub working_dir: Option<PathBuf>,
    pub env: Vec<(OsString, OsString)>,
    pub settings: Settings,
    /// Log where each user cell's time went (the kernel's stderr).
    pub timings: bool,
    /// Serve only as long as the process that started the proxy lives (a Jupyter kernel
    /// manager says so with `JPY_PARENT_PID`, as ipykernel heeds): once the proxy's parent is
    /// another, the frontend is gone and serving ends, the kernel with it.
    pub die_with_parent: bool,
}

/// How serving ended.
#[derive(Debug)]
pub enum ServeEnd {
    /// The frontend asked for a shutdown (or a restart, which its kernel manager does by
    /// starting a new proxy) and the kernel exited.
    Shutdown,
    /// The real kernel exited without being asked to, and not even a fresh kernel started in
    /// its place.
    KernelDied {
        death: crane_kernel::Death,
        stderr_tail: String,
    },
    /// The proxy was told to stop (SIGTERM, SIGHUP); the kernel was killed.
    Terminated,
    /// The process that started the proxy is gone (`die_with_parent`); the kernel was killed.
    ParentGone,
}

#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error(transparent)]
    ConnectionFile(#[from] ConnectionFileError),
    #[error("cannot open the {channel} channel: {source}")]
    Channel {
        channel: &'static str,
        source: RuntimeError,
    },
    #[error("the real kernel did not start: {0}")]
    Kernel(#[from] KernelError),
    #[error("the real kernel's iopub delivered nothing within {0:?}")]
    IopubSilent(Duration),
    #[error("the kernel's channels failed while the proxy met it: {0}")]
    Handshake(KernelError),
    #[error("cannot listen for signals: {0}")]
    Signals(std::io::Error),
}

/// Serve the frontend of `options.connection_file` until it shuts the kernel down, the kernel
/// dies, or the proxy is terminated. Each user cell is checked by `checker` before it runs.
pub async fn serve<C: Checker>(options: ServeOptions, checker: C) -> Result<ServeEnd, ProxyError> {
    let front_info = read_connection_file(&options.connection_file)?;
    let session_id = uuid::Uuid::new_v4().to_string();
    let front = Front::bind(&front_info, &session_id).await?;

    let launcher = Launcher {
        launch: options.launch.clone(),
        start: StartOptions {
            working_dir: options.working_dir.clone(),
            env: options.env.clone(),
            key: Some(front_info.key.clone()),
            ..StartOptions::default()
        },
    };
    let (mut kernel, back) = launcher.start().await?;
    let kernel_pid = kernel.pid();
    let watch = KernelWatch::owned(kernel.memory_watch().clone());
    raise_oom_score(kernel_pid);

    // A takeover orphans the new kernel when it ends the old one: the proxy adopts it (and the
    // old kernel's other snapshots, which die with it) to reap them.
    if let Err(error) = rustix::process::set_child_subreaper(Some(rustix::process::getpid())) {
        log(&format!("not a child subreaper, so no takeover: {error}"));
    }
    let parent = options.die_with_parent.then(rustix::process::getppid);
    let mut signals = Signals::new().map_err(ProxyError::Signals)?;
    let mut session = KernelSession::Owned(kernel);
    let mut checker = checker;
    let snapshots_on = options.settings.snapshot_keep > 0;
    let prepared = prepare_kernel(&mut session, &mut checker, snapshots_on);
    let take_by_message = tokio::select! {
        prepared = prepared => prepared,
        // An interrupt has no cell to stop yet; a stop ends here (dropping the session kills
        // the kernel's process group).
        Signal::Terminate = signals.next() => return Ok(ServeEnd::Terminated),
    };
    let mut proxy = Proxy {
        front,
        back,
        launcher,
        state: State::new(
            options.settings,
            options.launch.interrupt_mode,
            kernel_pid,
            options.timings,
        ),
    };
    proxy.state.take_by_message = take_by_message;
    proxy.state.watch = Some(watch);
    let mut slot = Slot::Idle {
        session: Box::new(session),
        checker,
    };
    let mut reap_tick = tokio::time::interval(REAP_INTERVAL);

    let end = loop {
        let give_up_at = proxy.state.give_up_at();
        tokio::select! {
            received = proxy.front.shell.socket.recv() => match received {
                Ok(message) => proxy.front_shell(message),
                Err(error) => log(&format!("frontend shell: {error}")),
            },
            received = proxy.front.control.socket.recv() => match received {
                Ok(message) => proxy.front_control(message, &slot).await,
                Err(error) => log(&format!("frontend control: {error}")),
            },
            received = proxy.front.stdin.socket.recv() => match received {
                Ok(message) => proxy.front_stdin(message).await,
                Err(error) => log(&format!("frontend stdin: {error}")),
            },
            received = proxy.front.iopub.recv_subscription() => {
                if let Ok(SubscriptionEvent::Subscribe(topic)) = received {
                    proxy.welcome(topic).await;
                }
            }
            received = proxy.back.shell.socket.recv() => match received {
                Ok(message) => proxy.back_shell(message).await,
                Err(error) => log(&format!("kernel shell: {error}")),
            },
            received = proxy.back.control.socket.recv() => match received {
                Ok(message) => proxy.back_control(message).await,
                Err(error) => log(&format!("kernel control: {error}")),
            },
            received = proxy.back.stdin.socket.recv() => match received {
                Ok(message) => forward(&mut proxy.front.stdin, message, "frontend stdin").await,
                Err(error) => log(&format!("kernel stdin: {error}")),
            },
            received = proxy.back.iopub.socket.recv() => match received {
                Ok(message) => proxy.back_iopub(message).await,
                Err(error) => log(&format!("kernel iopub: {error}")),
            },
            event = slot.next_event() => match event {
                SlotEvent::Checked(outcome) => proxy.checked(*outcome, &mut slot).await,
                SlotEvent::Exited(status, stderr_tail) => {
                    if let Some(end) = proxy.kernel_died(status, stderr_tail, &mut slot).await {
                        break end;
                    }
                }
            },
            // Once a check that may be using the dead kernel has ended.
            status = wait_adopted(&proxy.state.adopted), if matches!(slot, Slot::Idle { .. }) => {
                proxy.state.adopted = None;
                if let Some(end) = proxy.kernel_died(status, String::new(), &mut slot).await {
                    break end;
                }
            }
            _ = reap_tick.tick() => {
                if parent.is_some_and(|parent| rustix::process::getppid() != parent) {
                    log("the process that started this kernel is gone: shutting down");
                    break ServeEnd::ParentGone;
                }
                proxy.state.reap_orphans();
                if let Some(watch) = &proxy.state.watch {
                    watch.sample();
                }
            }
            Some(done) = proxy.state.beside_done.recv() => proxy.beside_ended(done, &slot).await,
            signal = signals.next() => match signal {
                Signal::Interrupt => proxy.interrupt(&slot).await,
                Signal::Terminate => break ServeEnd::Terminated,
            },
            () = until(give_up_at) => proxy.stop_waiting().await,
        }
        proxy.pump(&mut slot).await;
    };
    // Dropping the slot drops the session, which kills the kernel's process group; a kernel a
    // takeover made is the proxy's own child, killed and reaped here. The snapshots go, and
    // every snapshot directory with them (that of a kernel a takeover made too).
    drop(slot);
    if let Some(adopted) = proxy.state.adopted.take() {
        adopted.kill_and_reap();
    }
    proxy.state.reap_orphans();
    proxy.state.snapshots.end();
    Ok(end)
}

fn log(message: &str) {
    eprintln!("crane kernel: {message}");
}

/// Wait until `deadline`, or for ever without one.
async fn until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline.into()).await,
        None => std::future::pending().await,
    }
}

struct State {
    settings: Settings,
    interrupt_mode: InterruptMode,
    kernel_pid: u32,
    /// The frontend's shell requests in their order, the cell being checked, the cell the
    /// kernel runs.
    shell: ShellQueue,
    interrupted_while_checking: bool,
    /// Sessions of the frontend's clients; iopub traffic about other sessions' requests is
    /// crane's own.
    front_sessions: HashSet<String>,
    /// The header of the frontend's latest shell request relayed to the kernel: what the
    /// kernel would take as the parent of a background thread's output without crane.
    front_parent: Option<Bytes>,
    /// Signatures of the frontend's messages.
    digests: Digests,
    execution_count: usize,
    /// The cells the kernel ran and the returns to snapshots since the last check began,
    /// handed to the checker with the next one (the checker keeps what it needs of them; the
    /// proxy keeps none).
    new_cells: Vec<KernelEvent>,
    /// The error of the last cell that raised, and whether a return to a snapshot has taken
    /// its state (`sys.last_traceback`) away since: crane then answers `%tb` and `%debug`.
    last_failure: Option<(Failure, bool)>,
    /// The cell crane stopped for its dry run's crash (its msg_id), and the error the frontend
    /// sees for it in place of the kernel's interrupt: kept past its reply, since its iopub
    /// messages (read on another socket) may come after it.
    stopped: Option<(String, CraneError)>,
    last: Option<Explained>,
    /// How long the latest finished check took, and where the time went.
    last_check: Option<(Duration, Timings)>,
    /// What the last check could not do, or chose not to (`%crane status`).
    last_check_notes: Vec<String>,
    timings: bool,
    shutdown_requested: bool,
    snapshots: Snapshots,
    /// The snapshot to record for the cell about to be relayed.
    pending_snapshot: Option<SnapshotId>,
    /// Whether the latest cell relayed got a snapshot, or why not (`%crane status`).
    snapshot_note: Option<String>,
    /// The cell about to be relayed gets a dry run beside its real run.
    beside_next: bool,
    /// How the latest cell's dry run beside it went, when it had one (`%crane status`).
    beside_note: Option<String>,
    beside_sender: tokio::sync::mpsc::UnboundedSender<BesideDone>,
    beside_done: tokio::sync::mpsc::UnboundedReceiver<BesideDone>,
    /// The snapshot from before the last cell that raised, for `%crane rollback`.
    failed_snapshot: Option<SnapshotId>,
    /// What that cell did outside the kernel, as far as crane sees.
    failed_effects: Vec<String>,
    /// The cell whose idle crane's rollback line must precede: its msg_id, header and the line.
    note_before_idle: Option<(String, Bytes, String)>,
    /// The cell that raised to be rolled back by itself; the queue waits for it.
    rollback_due: Option<AutoRollback>,
    /// The relayed cell whose reply came but whose idle has not passed yet (its msg_id and
    /// header): a kernel switched before that idle comes must not swallow it.
    idle_owed: Option<(String, Bytes)>,
    /// Snapshots are asked for without waiting (`PendingTake`): the snapshot module answered
    /// crane's call message in this kernel before (prepared at the start, or a take).
    take_by_message: bool,
    pending_take: Option<PendingTake>,
    deferred_interrupt: Option<DeferredInterrupt>,
    /// The kernel a takeover made, once there was one.
    adopted: Option<Adopted>,
    /// The process the proxy started (its own child, reaped by its session).
    started_pid: u32,
    /// The kernel has served no request that can change its state: it is as a fresh start
    /// leaves it, and a restart returns to it.
    fresh: bool,
    /// The watch of the kernel's memory, to word its death.
    watch: Option<KernelWatch>,
    /// The cell that killed the kernel, held if run again unchanged against the state it
    /// returned to.
    killer: Option<Killer>,
    /// The kernel died while no cell ran: the next cell says so.
    restarted_note: Option<String>,
}

struct Proxy {
    front: Front,
    launcher: Launcher,
    back: Back,
    state: State,
}

enum Signal {
    Interrupt,
    Terminate,
}

struct Signals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
    hangup: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> std::io::Result<Signals> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Signals {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
            hangup: signal(SignalKind::hangup())?,
        })
    }

    async fn next(&mut self) -> Signal {
        tokio::select! {
            _ = self.interrupt.recv() => Signal::Interrupt,
            _ = self.terminate.recv() => Signal::Terminate,
            _ = self.hangup.recv() => Signal::Terminate,
        }
    }
}

impl State {
    fn new(
        settings: Settings,
        interrupt_mode: InterruptMode,
        kernel_pid: u32,
        timings: bool,
    ) -> Self {
        let (beside_sender, beside_done) = tokio::sync::mpsc::unbounded_channel();
        State {
            beside_next: false,
            beside_note: None,
            beside_sender,
            beside_done,
            snapshots: Snapshots::new(settings.snapshot_budget_bytes),
            pending_snapshot: None,
            snapshot_note: None,
            failed_snapshot: None,
            failed_effects: Vec::new(),
            note_before_idle: None,
            rollback_due: None,
            idle_owed: None,
            take_by_message: false,
            pending_take: None,
            deferred_interrupt: None,
            adopted: None,
            started_pid: kernel_pid,
            fresh: true,
            watch: None,
            killer: None,
            restarted_note: None,
            settings,
            interrupt_mode,
            kernel_pid,
            shell: ShellQueue::default(),
            interrupted_while_checking: false,
            front_sessions: HashSet::new(),
            front_parent: None,
            digests: Digests::default(),
            execution_count: 0,
            new_cells: Vec::new(),
            last_failure: None,
            stopped: None,
            last: None,
            last_check: None,
            last_check_notes: Vec::new(),
            timings,
            shutdown_requested: false,
        }
    }

    fn give_up_at(&self) -> Option<Instant> {
        let reply = (self.shell.running.as_ref()).and_then(|running| running.give_up_at);
        let rollback = self.rollback_due.as_ref().map(|due| due.deadline);
        let interrupt = self.deferred_interrupt.as_ref().map(|deferred| {
            let input = (self.shell.running.as_ref())
                .and_then(|running| running.input_at)
                .map(|at| at + INTERRUPT_AFTER_INPUT);
            let latest = deferred.since() + crane_probe::snapshot::TAKE_TIMEOUT;
            input.map_or(latest, |input| input.min(latest))
        });
        reply.into_iter().chain(rollback).chain(interrupt).min()
    }
}

impl Proxy {
    fn front_shell(&mut self, message: ZmqMessage) {
        // A message with a bad signature, or a replay, is dropped, as a kernel drops it.
        let Some(parsed) = accept(&self.front.shell.mac, &mut self.state.digests, &message) else {
            return;
        };
        self.state
            .front_sessions
            .insert(parsed.header.session.clone());
        self.state.shell.arrived(message, parsed);
    }

    async fn front_control(&mut self, message: ZmqMessage, slot: &Slot<impl Checker>) {
        let Some(parsed) = accept(&self.front.control.mac, &mut self.state.digests, &message)
        else {
            return;
        };
        self.state
            .front_sessions
            .insert(parsed.header.session.clone());
        match parsed.header.msg_type.as_str() {
            "shutdown_request" => self.state.shutdown_requested = true,
            "interrupt_request" => {
                if self.fork_in_progress() {
                    self.state.deferred_interrupt = Some(DeferredInterrupt::Control {
                        message,
                        since: Instant::now(),
                    });
                    return;
                }
                if matches!(slot, Slot::Checking(_)) {
                    self.state.interrupted_while_checking = true;
                }
                self.state.shell.interrupted();
            }
            _ => {}
        }
        forward(&mut self.back.control, message, "kernel control").await;
    }

    async fn front_stdin(&mut self, message: ZmqMessage) {
        let Some(parsed) = accept(&self.front.stdin.mac, &mut self.state.digests, &message) else {
            return;
        };
        self.state.front_sessions.insert(parsed.header.session);
        forward(&mut self.back.stdin, message, "kernel stdin").await;
    }

    async fn welcome(&mut self, topic: String) {
        let mut welcome = JupyterMessage::new(
            IoPubWelcome {
                subscription: topic.clone(),
            },
            None,
        );
        if !topic.is_empty() {
            welcome.zmq_identities = vec![Bytes::from(topic.into_bytes())];
        }
        send(&mut self.front.iopub, welcome, "a new iopub subscriber").await;
    }

    /// Move the shell queue along as far as it can go now.
    async fn pump<C: Checker>(&mut self, slot: &mut Slot<C>) {
        self.deliver_deferred_interrupt(slot).await;
        if let Some(due) = &self.state.rollback_due {
            if due.idle.is_none() && Instant::now() < due.deadline {
                return;
            }
            if let Some(due) = self.state.rollback_due.take() {
                self.auto_rollback(due, slot).await;
            }
        }
        loop {
            match self.state.shell.next() {
                Next::Wait => return,
                Next::Abort(head) => self.answer_aborted(&head).await,
                Next::Relay(head) => self.send_to_kernel(head).await,
                Next::Cell(head) => self.turn(head, slot).await,
            }
        }
    }
}
