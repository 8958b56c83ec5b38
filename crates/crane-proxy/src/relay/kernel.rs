//! The kernels behind the relay: the real kernel started (at the proxy's start, and again for a
//! return to the fresh start) and prepared before it serves, its `oom_score_adj` raised, the
//! switch of the relay to another kernel (the one a takeover made, or a fresh one), the kernel
//! a takeover made adopted and reaped with every other process the proxy adopts, and the
//! session and checker, idle or lent to a running check.

use std::future::Future;
use std::pin::Pin;
use std::process::ExitStatus;
use std::time::Duration;

use crane_kernel::{read_connection_file, KernelLaunch, KernelSession, OwnedKernel, StartOptions};

use super::wire::Back;
use super::{log, Proxy, ProxyError, State};
use crate::check::{CheckRequest, Checked, Checker, KernelEvent};
use crate::death::{self, KernelWatch};

/// How often the proxy reaps the processes it adopted that ended (snapshots of a kernel a
/// takeover ended die with it, and come to the proxy as its child subreaper).
pub(super) const REAP_INTERVAL: Duration = Duration::from_secs(1);

/// How long the checker may prepare before the frontend is served (see [`Checker::prepare`]).
pub(super) const PREPARE_TIMEOUT: Duration = Duration::from_secs(10);

/// The kernel `pid` is the one the OOM killer takes, not a snapshot ([`death::OOM_MARGIN`]).
pub(super) fn raise_oom_score(pid: u32) {
    if let Err(error) = death::raise_oom_score(pid) {
        log(&format!(
            "the kernel's oom_score_adj was not raised: {error}"
        ));
    }
}

/// How the proxy starts the real kernel: at its own start, and again for a return to the fresh
/// start (the state before the kernel's first cell).
pub(super) struct Launcher {
    pub(super) launch: KernelLaunch,
    pub(super) start: StartOptions,
}

impl Launcher {
    /// A real kernel, and the relay's connection to it once its iopub delivers.
    pub(super) async fn start(&self) -> Result<(OwnedKernel, Back), ProxyError> {
        let kernel = OwnedKernel::start(&self.launch, &self.start).await?;
        let info = read_connection_file(kernel.connection_file())?;
        let mut back = Back::connect(&info).await?;
        back.wait_for_iopub().await?;
        Ok((kernel, back))
    }
}

/// Ready a kernel before it serves the frontend, within [`PREPARE_TIMEOUT`]: what every check
/// needs, the snapshot module (true: the first take can be sent unwaited, as the others are)
/// and a settled collector. A failure only means the first check or take does it instead.
pub(super) async fn prepare_kernel<C: Checker>(
    session: &mut KernelSession,
    checker: &mut C,
    snapshots_on: bool,
) -> bool {
    let prepared = tokio::time::timeout(PREPARE_TIMEOUT, async {
        if let Err(reason) = checker.prepare(session).await {
            log(&format!("not prepared for checks: {reason}"));
        }
        let take_by_message = snapshots_on
            && crane_probe::snapshot::prepare(session)
                .await
                .unwrap_or_else(|error| {
                    log(&format!(
                        "not prepared for snapshots, the first take waits: {error}"
                    ));
                    false
                });
        if let Err(error) = crane_probe::settle_collector(session).await {
            log(&format!("the kernel's collector was not settled: {error}"));
        }
        take_by_message
    });
    prepared.await.unwrap_or_else(|_| {
        log("not prepared for checks: the kernel took too long");
        false
    })
}

/// A kernel a takeover made: the proxy's child once the kernel it replaced is gone. Its
/// connection file is in the snapshot's private directory, which the snapshots' list removes
/// once this process is gone (a killed kernel cannot remove it itself).
pub(super) struct Adopted {
    pub(super) pid: u32,
    /// Signals reach this process and no other, even once its pid is free again.
    pub(super) pidfd: std::os::fd::OwnedFd,
}

/// How often the exit of a kernel a takeover made is looked for.
pub(super) const ADOPTED_POLL: Duration = Duration::from_millis(100);

impl Adopted {
    pub(super) fn new(pid: u32) -> std::io::Result<Adopted> {
        let raw =
            rustix::process::Pid::from_raw(pid as i32).ok_or(std::io::ErrorKind::InvalidInput)?;
        let pidfd = rustix::process::pidfd_open(raw, rustix::process::PidfdFlags::empty())?;
        Ok(Adopted { pid, pidfd })
    }

    pub(super) fn kill_and_reap(self) {
        if let Some(pid) = rustix::process::Pid::from_raw(self.pid as i32) {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
            let _ = rustix::process::pidfd_send_signal(&self.pidfd, rustix::process::Signal::KILL);
            let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty());
        }
    }
}

/// The exit of the kernel a takeover made (pending without one).
pub(super) async fn wait_adopted(adopted: &Option<Adopted>) -> ExitStatus {
    use std::os::unix::process::ExitStatusExt;
    let Some(pid) = adopted
        .as_ref()
        .and_then(|adopted| rustix::process::Pid::from_raw(adopted.pid as i32))
    else {
        return std::future::pending().await;
    };
    // Looked at first, then after each pause: the select that polls this makes it anew after
    // every event, and a busy relay must not keep the look from happening.
    loop {
        match rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::NOHANG) {
            Ok(Some((_, status))) => return ExitStatus::from_raw(status.as_raw()),
            Ok(None) => {}
            // Not the proxy's child yet (the kernel it replaced is still dying), or gone.
            Err(_) if std::path::Path::new(&format!("/proc/{}", pid.as_raw_pid())).exists() => {}
            Err(_) => return ExitStatus::from_raw(0),
        }
        tokio::time::sleep(ADOPTED_POLL).await;
    }
}

/// The proxy's children, from `/proc`.
pub(super) fn children() -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    let mut pids = Vec::new();
    for task in tasks.flatten() {
        if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
            pids.extend(
                text.split_whitespace()
                    .filter_map(|pid| pid.parse::<u32>().ok()),
            );
        }
    }
    pids
}

/// A running check; it hands the session and the checker back when it ends.
pub(super) type CheckFuture<C> =
    Pin<Box<dyn Future<Output = (Box<KernelSession>, C, Result<Checked, String>)>>>;

/// The kernel session and the checker, idle or lent to a running check.
pub(super) enum Slot<C> {
    Idle {
        session: Box<KernelSession>,
        checker: C,
    },
    Checking(CheckFuture<C>),
    Gone,
}

pub(super) enum SlotEvent {
    Checked(Box<Result<Checked, String>>),
    Exited(ExitStatus, String),
}

impl<C: Checker> Slot<C> {
    /// Start checking, first handing the checker the cells run since the last check;
    /// `false` when a check is already running or the kernel is gone.
    pub(super) fn start(
        &mut self,
        request: CheckRequest,
        new_cells: &mut Vec<KernelEvent>,
    ) -> bool {
        if !matches!(self, Slot::Idle { .. }) {
            return false;
        }
        let Slot::Idle {
            mut session,
            mut checker,
        } = std::mem::replace(self, Slot::Gone)
        else {
            return false;
        };
        checker.executed(std::mem::take(new_cells));
        *self = Slot::Checking(Box::pin(async move {
            let timeout = request.settings.check_timeout;
            let outcome =
                match tokio::time::timeout(timeout, checker.check(&mut session, &request)).await {
                    Ok(outcome) => outcome,
                    Err(_) => Err(format!(
                        "the check took longer than {} s",
                        timeout.as_secs_f64()
                    )),
                };
            (session, checker, outcome)
        }));
        true
    }

    /// The next thing the kernel side has to say; cancel-safe.
    pub(super) async fn next_event(&mut self) -> SlotEvent {
        match self {
            Slot::Idle { session, .. } => match session.as_mut() {
                KernelSession::Owned(kernel) => {
                    let status = kernel.wait_exit().await;
                    SlotEvent::Exited(status, kernel.stderr_tail())
                }
                KernelSession::Attached(_) => std::future::pending().await,
            },
            Slot::Checking(check) => {
                let (session, checker, outcome) = check.as_mut().await;
                *self = Slot::Idle { session, checker };
                SlotEvent::Checked(Box::new(outcome))
            }
            Slot::Gone => std::future::pending().await,
        }
    }
}

impl State {
    /// Reap the processes the proxy adopted that ended (never the kernel it started, which its
    /// session reaps, nor the kernel a takeover made, whose exit ends the proxy), and remove
    /// the snapshot directories whose process is gone.
    pub(super) fn reap_orphans(&mut self) {
        let current = self.adopted.as_ref().map(|adopted| adopted.pid);
        for pid in children() {
            if pid == self.started_pid || Some(pid) == current {
                continue;
            }
            if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
                let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::NOHANG);
            }
        }
        self.snapshots.remove_unused_directories();
    }

    /// The relay switched to the kernel `pid`, whose next cell is `next_count`: the snapshots
    /// of the kernel it replaced died with it.
    pub(super) fn switched_to(&mut self, pid: u32, next_count: usize, fresh: bool) {
        self.kernel_pid = pid;
        self.take_by_message = false;
        self.pending_take = None;
        self.killer = None;
        self.snapshots.clear(Some(pid));
        self.failed_snapshot = None;
        self.note_before_idle = None;
        self.execution_count = next_count.saturating_sub(1);
        self.fresh = fresh;
        self.new_cells.push(KernelEvent::Returned { next_count });
        if let Some((_, taken_away)) = self.last_failure.as_mut() {
            *taken_away = true;
        }
        self.reap_orphans();
    }
}

impl Proxy {
    /// Switch the relay to `kernel`, reached through `back`; `adopted`: the process a takeover
    /// made. The kernel it replaces is ended: an owned one is killed with its process group and
    /// reaped as it is dropped, one a takeover made is killed and reaped here.
    pub(super) fn switch_kernel(
        &mut self,
        session: &mut KernelSession,
        kernel: KernelSession,
        back: Back,
        adopted: Option<Adopted>,
    ) {
        self.back = back;
        drop(std::mem::replace(session, kernel));
        if let Some(previous) = std::mem::replace(&mut self.state.adopted, adopted) {
            previous.kill_and_reap();
        }
    }

    /// Return to the fresh start: a new kernel, started and prepared as the first one was,
    /// replaces the kernel (which is ended, with its snapshots).
    pub(super) async fn start_afresh<C: Checker>(
        &mut self,
        slot: &mut Slot<C>,
    ) -> Result<usize, String> {
        let Slot::Idle { session, checker } = slot else {
            return Err("crane is checking a cell".into());
        };
        let (mut kernel, back) = self
            .launcher
            .start()
            .await
            .map_err(|error| format!("a fresh kernel did not start: {error}"))?;
        let pid = kernel.pid();
        raise_oom_score(pid);
        self.state.watch = Some(KernelWatch::owned(kernel.memory_watch().clone()));
        let mut fresh = KernelSession::Owned(kernel);
        let snapshots_on = self.state.settings.snapshot_keep > 0;
        let take_by_message = prepare_kernel(&mut fresh, checker, snapshots_on).await;
        self.pay_owed_idle().await;
        self.switch_kernel(session, fresh, back, None);
        self.state.started_pid = pid;
        self.state.switched_to(pid, 1, true);
        self.state.take_by_message = take_by_message;
        Ok(1)
    }
}
