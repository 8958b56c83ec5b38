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

use std::collections::{HashSet, VecDeque};
use std::ffi::OsString;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use bytes::Bytes;
use crane_kernel::{
    read_connection_file, AttachOptions, AttachedKernel, ConnectionFileError, InterruptMode,
    KernelError, KernelLaunch, KernelSession, OwnedKernel, StartOptions,
};
use jupyter_protocol::{
    CommInfoRequest, ConnectionInfo, DisplayData, ErrorOutput, ExecuteReply, ExecutionCount,
    Header, InterruptRequest, IoPubWelcome, JupyterMessage, JupyterMessageContent, Media,
    MediaType, ReplyError, ReplyStatus, Status, StreamContent, UnknownMessage,
};
use jupyter_zmq_client::{Connection, RawMessage, RuntimeError, SubscriptionEvent};
use serde::Deserialize;
use serde_json::Value;
use zeromq::{SocketRecv, SocketSend, ZmqMessage};

use crate::check::CraneError;
use crate::check::{self, CheckRequest, Checked, Checker, Decision, KernelEvent, Timings};
use crate::death::{self, KernelWatch, Killer};
use crate::effects;
use crate::failed::{self, Failure, PostMortem};
use crate::partial;
use crate::settings::{classify, CellKind, Magic, Settings};
use crate::snapshots::{Return, SnapshotId, Snapshots};
use crate::stopped;

mod died;

/// How long a snapshot may take to become the kernel.
const TAKEOVER_TIMEOUT: Duration = Duration::from_secs(60);

/// How often the proxy reaps the processes it adopted that ended (snapshots of a kernel a
/// takeover ended die with it, and come to the proxy as its child subreaper).
const REAP_INTERVAL: Duration = Duration::from_secs(1);

/// How long the proxy waits for the real kernel's iopub to deliver before it serves.
const IOPUB_READY_TIMEOUT: Duration = Duration::from_secs(30);

/// How long the checker may prepare before the frontend is served (see [`Checker::prepare`]).
const PREPARE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long messages the kernel sent just before it exited are still forwarded.
const EXIT_DRAIN: Duration = Duration::from_millis(300);

/// How long the reply of a relayed cell is still awaited once the kernel went idle for it
/// without replying, or was interrupted before it began (its reply, sent on another socket,
/// may be a little behind).
const REPLY_GRACE: Duration = Duration::from_secs(1);

/// How long a message to the kernel may wait to be taken: a kernel that takes nothing for
/// this long is gone, and the proxy must go on to see it exit.
const SEND_TIMEOUT: Duration = Duration::from_secs(5);

/// How long after a cell sent behind a snapshot's request began its code an interrupt deferred
/// meanwhile reaches the kernel: IPython's own steps before the code (history, transforms) are
/// not where a `KeyboardInterrupt` gets the cell an answer.
const INTERRUPT_AFTER_INPUT: Duration = Duration::from_millis(50);

/// How many signatures ipykernel's `Session` remembers (`digest_history_size`); when it holds
/// more, it forgets a tenth of them.
const DIGEST_HISTORY: usize = 1 << 16;

const DELIMITER: &[u8] = b"<IDS|MSG>";

/// Shell requests that leave the kernel's state as it was: a kernel that has served only these
/// (and crane's own calls) is still as a fresh start leaves it.
const READ_ONLY_REQUESTS: &[&str] = &[
    "kernel_info_request",
    "complete_request",
    "inspect_request",
    "is_complete_request",
    "history_request",
    "comm_info_request",
];

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
    // takeover made is the proxy's own child, killed and reaped here.
    drop(slot);
    if let Some(adopted) = proxy.state.adopted.take() {
        adopted.kill_and_reap();
    }
    proxy.state.snapshots.clear(None);
    proxy.state.reap_orphans();
    Ok(end)
}

/// The kernel `pid` is the one the OOM killer takes, not a snapshot ([`death::OOM_MARGIN`]).
fn raise_oom_score(pid: u32) {
    if let Err(error) = death::raise_oom_score(pid) {
        log(&format!(
            "the kernel's oom_score_adj was not raised: {error}"
        ));
    }
}

/// How the proxy starts the real kernel: at its own start, and again for a return to the fresh
/// start (the state before the kernel's first cell).
struct Launcher {
    launch: KernelLaunch,
    start: StartOptions,
}

impl Launcher {
    /// A real kernel, and the relay's connection to it once its iopub delivers.
    async fn start(&self) -> Result<(OwnedKernel, Back), ProxyError> {
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
async fn prepare_kernel<C: Checker>(
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

/// What the kernel is after a return to `snapshot`.
fn kernel_now(snapshot: SnapshotId) -> &'static str {
    match snapshot {
        SnapshotId::Fork(_) => "the kernel is the snapshot taken before it",
        SnapshotId::FreshStart => {
            "the kernel was started afresh behind crane, as it was before its first cell"
        }
    }
}

fn log(message: &str) {
    eprintln!("crane kernel: {message}");
}

/// A kernel a takeover made: the proxy's child once the kernel it replaced is gone.
struct Adopted {
    pid: u32,
    /// Signals reach this process and no other, even once its pid is free again.
    pidfd: std::os::fd::OwnedFd,
    /// Its connection file, in the snapshot's private directory: both go with the kernel (a
    /// killed kernel cannot remove them itself).
    connection_file: PathBuf,
}

/// How often the exit of a kernel a takeover made is looked for.
const ADOPTED_POLL: Duration = Duration::from_millis(100);

impl Adopted {
    fn new(pid: u32, connection_file: PathBuf) -> std::io::Result<Adopted> {
        let raw =
            rustix::process::Pid::from_raw(pid as i32).ok_or(std::io::ErrorKind::InvalidInput)?;
        let pidfd = rustix::process::pidfd_open(raw, rustix::process::PidfdFlags::empty())?;
        Ok(Adopted {
            pid,
            pidfd,
            connection_file,
        })
    }

    fn kill_and_reap(self) {
        if let Some(pid) = rustix::process::Pid::from_raw(self.pid as i32) {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
            let _ = rustix::process::pidfd_send_signal(&self.pidfd, rustix::process::Signal::KILL);
            let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty());
        }
    }
}

impl Drop for Adopted {
    fn drop(&mut self) {
        crate::snapshots::remove_private_file(&self.connection_file);
    }
}

/// The exit of the kernel a takeover made (pending without one).
async fn wait_adopted(adopted: &Option<Adopted>) -> ExitStatus {
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
fn children() -> Vec<u32> {
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

/// Wait until `deadline`, or for ever without one.
async fn until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline.into()).await,
        None => std::future::pending().await,
    }
}

/// The sockets the frontend connects to.
struct Front {
    shell: Connection<zeromq::RouterSocket>,
    control: Connection<zeromq::RouterSocket>,
    stdin: Connection<zeromq::RouterSocket>,
    iopub: Connection<zeromq::XPubSocket>,
}

impl Front {
    async fn bind(info: &ConnectionInfo, session_id: &str) -> Result<Front, ProxyError> {
        let error = |channel| move |source| ProxyError::Channel { channel, source };
        let shell = jupyter_zmq_client::create_kernel_shell_connection(info, session_id)
            .await
            .map_err(error("shell"))?;
        let control = jupyter_zmq_client::create_kernel_control_connection(info, session_id)
            .await
            .map_err(error("control"))?;
        let stdin = jupyter_zmq_client::create_kernel_stdin_connection(info, session_id)
            .await
            .map_err(error("stdin"))?;
        let iopub = jupyter_zmq_client::create_kernel_iopub_xpub_connection(info, session_id)
            .await
            .map_err(error("iopub"))?;
        let mut heartbeat = jupyter_zmq_client::create_kernel_heartbeat_connection(info)
            .await
            .map_err(error("heartbeat"))?;
        // The proxy answers the heartbeat itself: it lives exactly as long as the kernel.
        tokio::spawn(async move {
            while let Ok(ping) = heartbeat.socket.recv().await {
                if heartbeat.socket.send(ping).await.is_err() {
                    return;
                }
            }
        });
        Ok(Front {
            shell,
            control,
            stdin,
            iopub,
        })
    }
}

/// The proxy's own client connections to the real kernel. Shell and stdin share one identity,
/// so the kernel's `input_request` for a relayed cell comes back to the proxy's stdin.
struct Back {
    shell: Connection<zeromq::DealerSocket>,
    control: Connection<zeromq::DealerSocket>,
    stdin: Connection<zeromq::DealerSocket>,
    iopub: Connection<zeromq::SubSocket>,
    /// Requests the proxy sent on its own account, whose replies stay with it.
    own_requests: HashSet<String>,
}

impl Back {
    async fn connect(info: &ConnectionInfo) -> Result<Back, ProxyError> {
        let session_id = uuid::Uuid::new_v4().to_string();
        let error = |channel| move |source| ProxyError::Channel { channel, source };
        let identity =
            jupyter_zmq_client::peer_identity_for_session(&session_id).map_err(error("shell"))?;
        let shell = jupyter_zmq_client::create_client_shell_connection_with_identity(
            info,
            &session_id,
            identity.clone(),
        )
        .await
        .map_err(error("shell"))?;
        let stdin = jupyter_zmq_client::create_client_stdin_connection_with_identity(
            info,
            &session_id,
            identity,
        )
        .await
        .map_err(error("stdin"))?;
        let control = jupyter_zmq_client::create_client_control_connection(info, &session_id)
            .await
            .map_err(error("control"))?;
        let iopub = jupyter_zmq_client::create_client_iopub_connection(info, "", &session_id)
            .await
            .map_err(error("iopub"))?;
        Ok(Back {
            shell,
            control,
            stdin,
            iopub,
            own_requests: HashSet::new(),
        })
    }

    /// Ask for `kernel_info` until iopub delivers: a SUB socket receives only once the kernel
    /// has seen its subscription, and the first cell's outputs must not be lost.
    async fn wait_for_iopub(&mut self) -> Result<(), ProxyError> {
        let ready = async {
            loop {
                // Not `kernel_info`: IPython builds its banner for it, and the banner draws a
                // tip from the global `random`, so a kernel a takeover made would serve the
                // cell after a rollback one draw past the state it came back to.
                let request = JupyterMessage::new(CommInfoRequest { target_name: None }, None);
                self.own_requests.insert(request.header.msg_id.clone());
                self.shell
                    .send(request)
                    .await
                    .map_err(|source| ProxyError::Channel {
                        channel: "shell",
                        source,
                    })?;
                let waited = tokio::time::timeout(Duration::from_millis(250), async {
                    loop {
                        tokio::select! {
                            received = self.iopub.socket.recv() => return received.is_ok(),
                            // Replies to these requests are the proxy's own; drop them.
                            _ = self.shell.socket.recv() => {}
                        }
                    }
                })
                .await;
                if waited == Ok(true) {
                    return Ok(());
                }
            }
        };
        tokio::time::timeout(IOPUB_READY_TIMEOUT, ready)
            .await
            .map_err(|_| ProxyError::IopubSilent(IOPUB_READY_TIMEOUT))?
    }
}

/// A verified message: routing identities and the four JSON parts.
struct Parsed {
    identities: Vec<Bytes>,
    /// The message's HMAC as sent (empty without a key).
    signature: Bytes,
    header: MinimalHeader,
    parent: Option<MinimalHeader>,
    content: Bytes,
    raw_header: Bytes,
}

#[derive(Deserialize)]
struct MinimalHeader {
    msg_id: String,
    #[serde(default)]
    msg_type: String,
    #[serde(default)]
    session: String,
}

/// Parse a message from the frontend, checking its signature.
fn parse<S>(connection: &Connection<S>, message: &ZmqMessage) -> Option<Parsed> {
    let raw = RawMessage::from_multipart(message.clone(), &connection.mac).ok()?;
    let mut parsed = parsed(raw)?;
    // A copy: the part may share its buffer with the whole message, which would stay alive.
    parsed.signature = Bytes::copy_from_slice(signature(message)?);
    Some(parsed)
}

/// Parse a message from the frontend as the kernel would take it: with a valid signature, and
/// not a replay of one seen before (ipykernel drops those without a word).
fn accept<S>(
    connection: &Connection<S>,
    digests: &mut Digests,
    message: &ZmqMessage,
) -> Option<Parsed> {
    let parsed = parse(connection, message)?;
    if connection.mac.is_some() && !digests.first_seen(&parsed.signature) {
        log(&format!(
            "dropped a replayed {} (its signature was seen before)",
            parsed.header.msg_type
        ));
        return None;
    }
    Some(parsed)
}

/// The HMAC part of a message.
fn signature(message: &ZmqMessage) -> Option<&Bytes> {
    let delimiter = message.iter().position(|part| &part[..] == DELIMITER)?;
    message.get(delimiter + 1)
}

/// A message of these identities and parts (header, parent header, metadata, content,
/// buffers), signed with `mac` as the kernel signs.
fn signed(
    mac: &Option<ring::hmac::Key>,
    identities: &[Bytes],
    jparts: &[Bytes],
) -> Option<ZmqMessage> {
    let signature = match mac {
        Some(key) => {
            let mut context = ring::hmac::Context::with_key(key);
            for part in jparts.iter().take(4) {
                context.update(part);
            }
            hex::encode(context.sign().as_ref())
        }
        None => String::new(),
    };
    let mut parts = identities.to_vec();
    parts.push(Bytes::from_static(DELIMITER));
    parts.push(Bytes::from(signature));
    parts.extend(jparts.iter().cloned());
    ZmqMessage::try_from(parts).ok()
}

/// `message` with its content replaced by `content`, signed again with `mac`.
fn with_content(
    mac: &Option<ring::hmac::Key>,
    message: &ZmqMessage,
    content: &[u8],
) -> Option<ZmqMessage> {
    let raw = RawMessage::from_multipart(message.clone(), &None).ok()?;
    let mut jparts = raw.jparts;
    *jparts.get_mut(3)? = Bytes::copy_from_slice(content);
    signed(mac, &raw.zmq_identities, &jparts)
}

/// The signatures of the frontend's messages, remembered as ipykernel's `Session` remembers
/// them (its `digest_history`), so the proxy drops exactly the replays the kernel would drop.
#[derive(Default)]
struct Digests {
    seen: HashSet<Bytes>,
    order: VecDeque<Bytes>,
}

impl Digests {
    /// Whether `signature` is new; it is remembered from now on.
    fn first_seen(&mut self, signature: &Bytes) -> bool {
        if !self.seen.insert(signature.clone()) {
            return false;
        }
        self.order.push_back(signature.clone());
        if self.order.len() > DIGEST_HISTORY {
            // ipykernel forgets a random tenth; the oldest tenth is the least likely replayed.
            for old in self.order.drain(..DIGEST_HISTORY / 10) {
                self.seen.remove(&old);
            }
        }
        true
    }
}

/// Parse a message from the real kernel: its private ports are only the proxy's, so its
/// signature (made with the same key) is left for the frontend to check.
fn parse_trusted<S>(connection: &Connection<S>, message: &ZmqMessage) -> Option<Parsed> {
    let mut unsigned = connection.mac.clone();
    unsigned.take();
    let raw = RawMessage::from_multipart(message.clone(), &unsigned).ok()?;
    parsed(raw)
}

fn parsed(raw: RawMessage) -> Option<Parsed> {
    let header: MinimalHeader = read_as_python(&raw.jparts[0])?;
    let parent = read_as_python::<MinimalHeader>(&raw.jparts[1]);
    Some(Parsed {
        identities: raw.zmq_identities,
        signature: Bytes::new(),
        header,
        parent,
        raw_header: raw.jparts[0].clone(),
        content: raw.jparts[3].clone(),
    })
}

async fn forward<S: SocketSend>(to: &mut Connection<S>, message: ZmqMessage, name: &str) {
    match tokio::time::timeout(SEND_TIMEOUT, to.socket.send(message)).await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => log(&format!("cannot forward to {name}: {error}")),
        Err(_) => log(&format!(
            "cannot forward to {name}: not taken within {SEND_TIMEOUT:?}"
        )),
    }
}

/// Send a message the proxy makes, within the time [`forward`] allows.
async fn send<S: SocketSend>(to: &mut Connection<S>, message: JupyterMessage, name: &str) {
    match tokio::time::timeout(SEND_TIMEOUT, to.send(message)).await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => log(&format!("cannot send to {name}: {error}")),
        Err(_) => log(&format!(
            "cannot send to {name}: not taken within {SEND_TIMEOUT:?}"
        )),
    }
}

/// What the proxy reads of an `execute_request`, with the defaults ipykernel gives the fields
/// the protocol leaves optional (`silent` false, `stop_on_error` true) and Python's truth of
/// the values it is sent; `code` is required, as ipykernel requires it.
#[derive(Debug)]
struct ExecuteCell {
    code: String,
    silent: bool,
    stop_on_error: bool,
}

impl ExecuteCell {
    fn read(content: &[u8]) -> Option<ExecuteCell> {
        #[derive(Deserialize)]
        struct Fields {
            code: String,
            #[serde(default)]
            silent: Value,
            #[serde(default = "yes")]
            stop_on_error: Value,
        }
        fn yes() -> Value {
            Value::Bool(true)
        }
        let fields: Fields = read_as_python(content)?;
        Some(ExecuteCell {
            code: fields.code,
            silent: truthy(&fields.silent),
            stop_on_error: truthy(&fields.stop_on_error),
        })
    }
}

/// A JSON object read as ipykernel reads it (`json.loads`): of keys given twice the last one
/// wins, where serde refuses a struct's duplicate field. A request the kernel would read must
/// not be one the proxy cannot read, or it would pass unchecked.
fn read_as_python<T: serde::de::DeserializeOwned>(json: &[u8]) -> Option<T> {
    serde_json::from_slice::<Value>(json)
        .and_then(serde_json::from_value)
        .ok()
}

/// Python's truth value of a JSON value, as ipykernel tests the fields it reads.
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(value) => *value,
        Value::Number(number) => number.as_f64().is_some_and(|n| n != 0.0),
        Value::String(text) => !text.is_empty(),
        Value::Array(items) => !items.is_empty(),
        Value::Object(fields) => !fields.is_empty(),
    }
}

/// A frontend shell request waiting its turn.
struct Queued {
    seq: u64,
    arrived: Instant,
    message: ZmqMessage,
    parsed: Parsed,
    /// Set for an `execute_request` the proxy could read.
    execute: Option<ExecuteCell>,
}

impl Queued {
    /// The one test of whether a request is a user cell, which crane checks.
    fn is_user_cell(&self) -> bool {
        self.execute.as_ref().is_some_and(|request| !request.silent)
    }
}

/// A user cell relayed to the kernel whose reply has not come yet.
struct Running {
    msg_id: String,
    code: String,
    stop_on_error: bool,
    arrived: Instant,
    relayed: Instant,
    /// How long its check took, and where the time went; `None` for a cell not checked.
    check: Option<(Duration, Timings)>,
    /// The kernel said it was busy with it.
    started: bool,
    /// When to stop waiting for its reply: set once the kernel went idle for it, or was
    /// interrupted before it began.
    give_up_at: Option<Instant>,
    /// The snapshot taken before it.
    snapshot: Option<SnapshotId>,
    /// Its request's header, for crane's line after its error.
    raw_header: Bytes,
    /// Where its request came from, for crane's reply if the kernel dies in it.
    identities: Vec<Bytes>,
    /// The kernel's idle for it, held until its reply says whether crane adds a line.
    held_idle: Option<ZmqMessage>,
    /// An interrupt reached the kernel while it was relayed: it is never rolled back by itself.
    interrupted: bool,
    /// What its dry run tried outside the kernel (blocked there, done in the real run).
    outside_effects: Vec<String>,
    /// It was sent right behind a snapshot's request (`PendingTake`).
    behind_take: bool,
    /// When the kernel said it began running its code (`execute_input`).
    input_at: Option<Instant>,
    beside: Beside,
    /// crane interrupted it for the crash its dry run beside it saw (that crash).
    stopped_by: Option<String>,
    /// A held cell of which only the statements before its predicted crash were relayed
    /// (`partial`): crane's error, for its reply and outputs once they ran.
    held_after: Option<CraneError>,
}

impl Running {
    fn new(msg_id: String, cell: ExecuteCell, arrived: Instant) -> Running {
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

    fn give_up_soon(&mut self) {
        self.give_up_at.get_or_insert(Instant::now() + REPLY_GRACE);
    }
}

impl Running {
    /// Where the cell's time went, from its arrival to the kernel's reply.
    fn timeline(&self) -> String {
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

/// How long a dry run beside a cell's real run may go on: it holds nothing up, and ends with
/// the cell.
const BESIDE_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a cell runs before its dry run beside it starts: one that ends sooner never needed
/// it, and costs no fork.
const BESIDE_DELAY: Duration = Duration::from_millis(500);

/// A cell's dry run beside its real run, from the snapshot taken before it (`Checked::beside`).
enum Beside {
    None,
    /// Asked for by the check; it starts once the cell's snapshot is known.
    Wanted,
    /// Waiting out `BESIDE_DELAY`, then running in a fork of the snapshot.
    Started(std::sync::Arc<BesideCancel>),
}

/// Ends a dry run beside a cell: before it starts (it then never does) or while it runs (its
/// connection to the snapshot is shut down, and the snapshot ends its fork).
#[derive(Default)]
struct BesideCancel(std::sync::Mutex<BesideLine>);

/// The run's connection once it has one; `Cancelled` once ended.
#[derive(Default)]
enum BesideLine {
    #[default]
    NotYet,
    Open(std::os::unix::net::UnixStream),
    Cancelled,
}

impl BesideCancel {
    fn line(&self) -> std::sync::MutexGuard<'_, BesideLine> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn cancel(&self) {
        if let BesideLine::Open(connection) =
            std::mem::replace(&mut *self.line(), BesideLine::Cancelled)
        {
            let _ = connection.shutdown(std::net::Shutdown::Both);
        }
    }

    fn is_cancelled(&self) -> bool {
        matches!(*self.line(), BesideLine::Cancelled)
    }

    /// Keep the run's connection to end it by; `false` when it was cancelled already (and is
    /// now ended).
    fn keep(&self, connection: std::os::unix::net::UnixStream) -> bool {
        let mut line = self.line();
        if matches!(*line, BesideLine::Cancelled) {
            let _ = connection.shutdown(std::net::Shutdown::Both);
            return false;
        }
        *line = BesideLine::Open(connection);
        true
    }
}

/// How a dry run beside a cell's real run ended.
struct BesideDone {
    msg_id: String,
    outcome: Result<Option<crane_probe::dry_run::DryRunOutcome>, String>,
}

/// A cell that raised with a snapshot before it, to be rolled back by itself (`%crane rollback
/// auto`) once the kernel's idle for it says all its outputs are shown.
struct AutoRollback {
    snapshot: SnapshotId,
    msg_id: String,
    raw_header: Bytes,
    /// How long it ran before it raised.
    ran: Duration,
    /// What it did outside the kernel, as far as crane sees.
    effects: Vec<String>,
    /// The kernel's idle for it, once it came.
    idle: Option<ZmqMessage>,
    /// When to roll back without that idle (the kernel sends it just after the reply).
    deadline: Instant,
    /// crane stopped it: the crash its dry run beside it saw.
    stopped: Option<String>,
    /// Its code, and the line its traceback says it raised at: a cell whose part that ran
    /// only bound new names keeps its state.
    code: String,
    line: Option<u32>,
}

/// A snapshot asked for on the relay's own shell connection, with the cell sent right behind
/// it: the kernel handles shell requests in order, so the fork happens before the cell runs,
/// and its reply comes before the cell's (on the same connection).
struct PendingTake {
    msg_id: String,
    /// The cell it was taken before.
    cell_msg_id: String,
    drop: Vec<u32>,
    code: String,
    execution_count: usize,
}

/// An interrupt that came while a snapshot was being taken, for the cell behind it: it goes
/// to the kernel once the fork is done, so that it interrupts the cell, not the fork.
enum DeferredInterrupt {
    Signal { since: Instant },
    Control { message: ZmqMessage, since: Instant },
}

impl DeferredInterrupt {
    fn since(&self) -> Instant {
        match self {
            DeferredInterrupt::Signal { since } | DeferredInterrupt::Control { since, .. } => {
                *since
            }
        }
    }
}

/// The last cell crane spoke about, for `%crane explain`.
struct Explained {
    code: String,
    checked: Checked,
    decision: Decision,
}

struct State {
    settings: Settings,
    interrupt_mode: InterruptMode,
    kernel_pid: u32,
    queue: VecDeque<Queued>,
    next_seq: u64,
    /// Execute requests that arrived up to this one are aborted (the cell before them failed).
    abort_through: Option<u64>,
    running: Option<Running>,
    checking: Option<Queued>,
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
            queue: VecDeque::new(),
            next_seq: 0,
            abort_through: None,
            running: None,
            checking: None,
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

    /// Reap the processes the proxy adopted that ended (never the kernel it started, which its
    /// session reaps, nor the kernel a takeover made, whose exit ends the proxy).
    fn reap_orphans(&mut self) {
        let current = self.adopted.as_ref().map(|adopted| adopted.pid);
        for pid in children() {
            if pid == self.started_pid || Some(pid) == current {
                continue;
            }
            if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
                let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::NOHANG);
            }
        }
    }

    /// The relay switched to the kernel `pid`, whose next cell is `next_count`: the snapshots
    /// of the kernel it replaced died with it.
    fn switched_to(&mut self, pid: u32, next_count: usize, fresh: bool) {
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

    /// Abort every request that has arrived so far.
    fn abort_queued(&mut self) {
        self.abort_through = self.next_seq.checked_sub(1);
    }

    fn give_up_at(&self) -> Option<Instant> {
        let reply = self.running.as_ref().and_then(|running| running.give_up_at);
        let rollback = self.rollback_due.as_ref().map(|due| due.deadline);
        let interrupt = self.deferred_interrupt.as_ref().map(|deferred| {
            let input = self
                .running
                .as_ref()
                .and_then(|running| running.input_at)
                .map(|at| at + INTERRUPT_AFTER_INPUT);
            let latest = deferred.since() + crane_probe::snapshot::TAKE_TIMEOUT;
            input.map_or(latest, |input| input.min(latest))
        });
        reply.into_iter().chain(rollback).chain(interrupt).min()
    }

    /// The kernel went idle for the running cell, or was interrupted before it began it, and
    /// no reply came: it will not come (ipykernel answers nothing to a request it cannot read),
    /// so the requests behind it go on.
    fn stop_waiting(&mut self) {
        if let Some(running) = self.running.take() {
            log(&format!(
                "the kernel did not answer cell {}; its requests behind it go on",
                running.msg_id
            ));
        }
    }

    /// An interrupt reached the kernel: a cell it had not begun will get no reply, and a cell
    /// it was running is never rolled back by itself.
    fn interrupted(&mut self) {
        if let Some(running) = self.running.as_mut() {
            running.interrupted = true;
            if !running.started {
                running.give_up_soon();
            }
        }
    }
}

struct Proxy {
    front: Front,
    launcher: Launcher,
    back: Back,
    state: State,
}

impl Proxy {
    fn front_shell(&mut self, message: ZmqMessage) {
        // A message with a bad signature, or a replay, is dropped, as a kernel drops it.
        let Some(parsed) = accept(&self.front.shell, &mut self.state.digests, &message) else {
            return;
        };
        self.state
            .front_sessions
            .insert(parsed.header.session.clone());
        let execute = (parsed.header.msg_type == "execute_request")
            .then(|| ExecuteCell::read(&parsed.content))
            .flatten();
        let seq = self.state.next_seq;
        self.state.next_seq += 1;
        self.state.queue.push_back(Queued {
            seq,
            arrived: Instant::now(),
            message,
            parsed,
            execute,
        });
    }

    async fn front_control(&mut self, message: ZmqMessage, slot: &Slot<impl Checker>) {
        let Some(parsed) = accept(&self.front.control, &mut self.state.digests, &message) else {
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
                self.state.interrupted();
            }
            _ => {}
        }
        forward(&mut self.back.control, message, "kernel control").await;
    }

    async fn front_stdin(&mut self, message: ZmqMessage) {
        let Some(parsed) = accept(&self.front.stdin, &mut self.state.digests, &message) else {
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

    async fn back_shell(&mut self, message: ZmqMessage) {
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
        let held_after = (self.state.running.as_mut())
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
            if stop_on_error {
                self.state.abort_queued();
            }
        }
        forward(&mut self.front.shell, message, "frontend shell").await;
        if let Some(idle) = held_idle {
            self.rollback_note().await;
            forward(&mut self.front.iopub, idle, "frontend iopub").await;
        }
    }

    /// crane's error for the request `parent_id`, when it is a cell crane stopped.
    fn stopped_error(&self, parent_id: Option<&str>) -> Option<&CraneError> {
        self.state
            .stopped
            .as_ref()
            .filter(|(msg_id, _)| Some(msg_id.as_str()) == parent_id)
            .map(|(_, error)| error)
    }

    /// crane's error as the output of the cell whose header is `raw_header`.
    async fn publish_error_under(&mut self, raw_header: &Bytes, error: CraneError) {
        let mut parent = JupyterMessage::new(Status::idle(), None);
        if let Ok(header) = serde_json::from_slice::<Header>(raw_header) {
            parent.header = header;
        }
        let output = ErrorOutput {
            ename: error.ename,
            evalue: error.evalue,
            traceback: error.traceback,
        };
        self.publish(JupyterMessage::new(output, Some(&parent)))
            .await;
    }

    /// Under a cell that raised with a snapshot before it, once its error is shown: crane's
    /// line that the state before it is kept.
    async fn rollback_note(&mut self) {
        let Some((_, raw_header, text)) = self.state.note_before_idle.take() else {
            return;
        };
        self.publish_under(&raw_header, &text).await;
    }

    /// A line of crane's under the request whose header is `raw_header`.
    async fn publish_under(&mut self, raw_header: &Bytes, text: &str) {
        let mut parent = JupyterMessage::new(Status::idle(), None);
        if let Ok(header) = serde_json::from_slice::<Header>(raw_header) {
            parent.header = header;
        }
        let data = Media::new(vec![MediaType::Plain(text.to_owned())]);
        self.publish(JupyterMessage::new(DisplayData::new(data), Some(&parent)))
            .await;
    }

    /// `%crane rollback auto` for a cell that raised: the snapshot before it becomes the
    /// kernel, and crane says so under the cell's error, before the cell's idle.
    async fn auto_rollback<C: Checker>(&mut self, due: AutoRollback, slot: &mut Slot<C>) {
        // A cell whose part that ran only bound new names keeps its state, as without crane.
        let kept = match slot {
            Slot::Idle { checker, .. } if due.stopped.is_none() => {
                failed::kept_names(&due.code, due.line, checker, &mut self.state.new_cells)
            }
            _ => None,
        };
        let text = match kept {
            Some(names) => format!(
                "{}{}",
                failed::kept_line(&names),
                effects::sentence(&due.effects)
            ),
            None => {
                let taken = self.take_over(due.snapshot, slot).await;
                let replayed = match (&taken, &mut *slot) {
                    (Ok(_), Slot::Idle { session, .. }) if due.stopped.is_none() => {
                        failed::replay_imports(session, &due.code, due.line).await
                    }
                    _ => None,
                };
                let mut line = self.rollback_line(&due, taken);
                if let Some((names, event)) = replayed {
                    // No longer the fresh start a restart returns to.
                    self.state.fresh = false;
                    self.state.new_cells.push(event);
                    line.push_str(&failed::replayed_sentence(&names));
                }
                line
            }
        };
        self.publish_under(&due.raw_header, &text).await;
        match due.idle {
            // Signed by the kernel it replaced, with the same key.
            Some(idle) => forward(&mut self.front.iopub, idle, "frontend iopub").await,
            None => {
                let mut parent = JupyterMessage::new(Status::idle(), None);
                if let Ok(header) = serde_json::from_slice::<Header>(&due.raw_header) {
                    parent.header = header;
                }
                self.publish(JupyterMessage::new(Status::idle(), Some(&parent)))
                    .await;
            }
        }
    }

    /// crane's line under a cell `%crane rollback auto` rolled back (or could not).
    fn rollback_line(&self, due: &AutoRollback, taken: Result<(usize, String), String>) -> String {
        match taken {
            Ok((_, files)) if due.stopped.is_some() => format!(
                "crane: stopped this cell after {:.1} s and rolled the kernel back to the state before it: its dry run beside it, in a fork of that state with its loops cut short, crashed first. {}{}{files}",
                due.ran.as_secs_f64(),
                due.stopped.as_deref().unwrap_or_default(),
                effects::sentence(&due.effects)
            ),
            Ok((_, files)) => format!(
                "crane: rolled back to the state before this cell (it raised after {:.1} s, within the {} s of `%crane rollback auto`): {}.{}{files}",
                due.ran.as_secs_f64(),
                self.state
                    .settings
                    .rollback_auto
                    .unwrap_or_default()
                    .as_secs_f64(),
                kernel_now(due.snapshot),
                effects::sentence(&due.effects)
            ),
            Err(reason) => format!("crane: not rolled back: {reason}."),
        }
    }

    /// The kernel stopped waiting for a reply that does not come.
    async fn stop_waiting(&mut self) {
        // The deadline that woke the proxy may be another one (a rollback's, an interrupt's).
        let overdue = self
            .state
            .running
            .as_ref()
            .and_then(|running| running.give_up_at)
            .is_some_and(|at| at <= Instant::now());
        if !overdue {
            return;
        }
        let held = self
            .state
            .running
            .as_mut()
            .and_then(|running| running.held_idle.take());
        self.state.stop_waiting();
        if let Some(idle) = held {
            forward(&mut self.front.iopub, idle, "frontend iopub").await;
        }
    }

    /// The running cell's reply came: the idle held for it, if the kernel sent it first.
    fn finished(&mut self, content: &[u8]) -> Option<ZmqMessage> {
        let mut running = self.state.running.take()?;
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
        let code = running.code.clone();
        if reply.status != "aborted" {
            self.state.new_cells.push(KernelEvent::Ran {
                code: running.code,
                execution_count: reply.execution_count,
                raised: reply.status == "error",
            });
        }
        let failure = (reply.status == "error")
            .then(|| serde_json::from_slice::<Failure>(content).unwrap_or_default());
        if let Some(failure) = &failure {
            self.state.last_failure = Some((failure.clone(), false));
        }
        if reply.status == "error" && running.stop_on_error {
            self.state.abort_queued();
        }
        if reply.status == "error" {
            if let Some(snapshot) = running.snapshot {
                if self.state.snapshots.get(snapshot).is_some() {
                    self.state.failed_snapshot = Some(snapshot);
                    let mut effects = std::mem::take(&mut running.outside_effects);
                    effects.extend(effects::in_code(&code));
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
                            code,
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

    async fn back_control(&mut self, message: ZmqMessage) {
        let Some(parsed) = parse_trusted(&self.back.control, &message) else {
            return;
        };
        let parent_id = parsed.parent.as_ref().map(|parent| parent.msg_id.as_str());
        if parent_id.is_some_and(|id| self.back.own_requests.remove(id)) {
            return;
        }
        forward(&mut self.front.control, message, "frontend control").await;
    }

    async fn back_iopub(&mut self, message: ZmqMessage) {
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
                if let Some(running) = self.state.running.as_mut().filter(|running| {
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
                .running
                .as_mut()
                .filter(|running| Some(running.msg_id.as_str()) == parent_id)
            {
                running.input_at.get_or_insert_with(Instant::now);
            }
        }
        forward(&mut self.front.iopub, message, "frontend iopub").await;
    }

    fn is_idle_for(&self, parsed: &Parsed) -> bool {
        #[derive(Deserialize)]
        struct State {
            execution_state: String,
        }
        parsed.parent.is_some()
            && serde_json::from_slice::<State>(&parsed.content)
                .is_ok_and(|state| state.execution_state == "idle")
    }

    /// Follow the running cell's busy and idle.
    fn status(&mut self, parsed: &Parsed) {
        let Some(running) = self.state.running.as_mut() else {
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
    async fn forward_reparented(&mut self, message: &ZmqMessage) {
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

    /// Relay a frontend's shell request to the kernel.
    async fn send_to_kernel(&mut self, head: Queued) {
        if !READ_ONLY_REQUESTS.contains(&head.parsed.header.msg_type.as_str()) {
            self.state.fresh = false;
        }
        // A copy, not a slice that would keep the whole request alive.
        self.state.front_parent = Some(Bytes::copy_from_slice(&head.parsed.raw_header));
        forward(&mut self.back.shell, head.message, "kernel shell").await;
    }

    /// Forward what the kernel sent before it exited.
    async fn drain(&mut self, within: Duration) {
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

    /// The running cell was sent behind a snapshot's request and has not begun its code: an
    /// interrupt now would stop the fork (which answers it as interrupted) or land between two
    /// requests (where ipykernel ignores it) instead of stopping the cell.
    fn fork_in_progress(&self) -> bool {
        self.state.running.as_ref().is_some_and(|running| {
            running.behind_take
                && running
                    .input_at
                    .is_none_or(|at| at.elapsed() < INTERRUPT_AFTER_INPUT)
        })
    }

    /// An interrupt deferred while a snapshot was taken, once the fork is done (or took longer
    /// than a take may).
    async fn deliver_deferred_interrupt(&mut self, slot: &Slot<impl Checker>) {
        if self.state.running.is_none() {
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
                self.state.interrupted();
                forward(&mut self.back.control, message, "kernel control").await;
            }
            None => {}
        }
    }

    /// Interrupt as the frontend asked (a SIGINT to the proxy): the kernel gets it too.
    async fn interrupt(&mut self, slot: &Slot<impl Checker>) {
        if self.fork_in_progress() {
            self.state.deferred_interrupt = Some(DeferredInterrupt::Signal {
                since: Instant::now(),
            });
            return;
        }
        self.send_interrupt(slot).await;
    }

    async fn send_interrupt(&mut self, slot: &Slot<impl Checker>) {
        if matches!(slot, Slot::Checking(_)) {
            self.state.interrupted_while_checking = true;
        }
        self.state.interrupted();
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
            if self.state.checking.is_some() {
                return;
            }
            let Some(head) = self.state.queue.front() else {
                return;
            };
            let aborted = head.execute.is_some()
                && self
                    .state
                    .abort_through
                    .is_some_and(|through| head.seq <= through);
            let user_cell = head.is_user_cell();
            if user_cell && !aborted && self.state.running.is_some() {
                // Its check must see the state the cell before leaves.
                return;
            }
            let Some(head) = self.state.queue.pop_front() else {
                return;
            };
            if aborted {
                self.answer_aborted(&head).await;
                continue;
            }
            if !user_cell {
                self.send_to_kernel(head).await;
                continue;
            }
            let Some(code) = head.execute.as_ref().map(|request| request.code.as_str()) else {
                continue;
            };
            let taken_away = self
                .state
                .last_failure
                .as_ref()
                .filter(|(_, taken_away)| *taken_away)
                .map(|(failure, _)| failure.clone());
            if let (Some(magic), Some(failure)) = (failed::post_mortem(code), taken_away) {
                self.answer_post_mortem(&head, magic, failure).await;
                continue;
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
                    self.snapshot_before(&code, slot).await;
                    self.relay_rewritten(head, code).await;
                }
                CellKind::Code if self.state.settings.policy == crate::Policy::Off => {
                    let code = code.to_owned();
                    self.snapshot_before(&code, slot).await;
                    self.relay(head).await;
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
                        undoable: self.state.settings.snapshot_keep > 0
                            || crane_probe::snapshot::cannot_change_state(code),
                    };
                    if slot.start(check, &mut self.state.new_cells) {
                        self.state.interrupted_while_checking = false;
                        self.state.checking = Some(head);
                        return;
                    }
                    let code = code.to_owned();
                    self.snapshot_before(&code, slot).await;
                    self.relay(head).await;
                }
            }
        }
    }

    async fn checked<C: Checker>(&mut self, outcome: Result<Checked, String>, slot: &mut Slot<C>) {
        let Some(head) = self.state.checking.take() else {
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
                self.snapshot_before(&code, slot).await;
                self.relay(head).await;
                return;
            }
        };
        let decision = check::decide(&checked, self.state.settings.policy);
        self.state.beside_next = checked.beside && decision != Decision::Hold;
        match decision {
            Decision::Hold => {
                let first = match slot {
                    Slot::Idle { checker, .. } => partial::run_first(&code, &checked, checker),
                    _ => None,
                };
                match first {
                    Some(first) => {
                        let error = partial::error(&checked, &code, &first);
                        self.snapshot_before(&first.code, slot).await;
                        self.relay_rewritten(head, first.code).await;
                        if let Some(running) = self.state.running.as_mut() {
                            running.held_after = Some(error);
                        }
                    }
                    None => {
                        let traceback = check::held_traceback(&checked, &code);
                        let evalue = check::held_evalue(&checked);
                        self.answer_error(&head, check::HELD_ENAME, &evalue, traceback)
                            .await;
                    }
                }
            }
            Decision::Warn => {
                let text = check::warning_text(&checked, &code);
                self.display(&head, &text).await;
                self.snapshot_before(&code, slot).await;
                self.relay(head).await;
            }
            Decision::Run => {
                if !checked.notes.is_empty() && self.state.settings.dry_run == crate::DryRunMode::On
                {
                    let text = format!("crane: {}", checked.notes.join("; "));
                    self.display(&head, &text).await;
                }
                self.snapshot_before(&code, slot).await;
                self.relay(head).await;
            }
        }
        if let Some(running) = &mut self.state.running {
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

    /// Before a cell that can change the kernel's state is relayed: a snapshot of the kernel
    /// (dropping the oldest beyond the number kept), or the reason there is none.
    async fn snapshot_before<C: Checker>(&mut self, code: &str, slot: &mut Slot<C>) {
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
        if crane_probe::snapshot::cannot_change_state(code) {
            self.state.snapshot_note = Some(
                "no snapshot before the last cell: it cannot change the kernel's state (only expressions over names and displays)".into(),
            );
            return;
        }
        // A fresh kernel keeps no snapshot (a switch to a kernel forgets them all). A dry run
        // beside the cell runs in a fork of its snapshot: that cell needs a fork.
        if self.state.fresh && !self.state.beside_next && snapshots.count() == 0 {
            snapshots.add_fresh_start(code);
            self.state.pending_snapshot = Some(SnapshotId::FreshStart);
            self.state.snapshot_note = Some(
                "the last cell was the kernel's first: the state before it is a fresh start, which a restart of the kernel behind crane returns to (no fork holds it)".into(),
            );
            return;
        }
        let drop = snapshots.make_room(keep);
        if self.state.take_by_message {
            // Not waited for: the cell goes right behind it (`PendingTake`).
            let (msg_type, content) = crane_probe::snapshot::take_message(&drop);
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
                cell_msg_id: String::new(),
                drop,
                code: code.to_owned(),
                execution_count: self.state.execution_count + 1,
            });
            self.state.snapshot_note = Some(
                "the snapshot before the last cell was asked for; its answer has not come yet"
                    .into(),
            );
            return;
        }
        let handled = session.handles(crane_probe::snapshot::take_message(&[]).0);
        let note = match crane_probe::snapshot::take(session, &drop).await {
            Ok(answer) => {
                snapshots.forget(&drop);
                snapshots.forget(&answer.ended);
                // The module is in the kernel, and the kernel serves crane's call message.
                self.state.take_by_message =
                    handled || session.handles(crane_probe::snapshot::take_message(&[]).0);
                match answer.taken {
                    crane_probe::snapshot::Taken::Snapshot {
                        pid, socket, fork, ..
                    } => {
                        let count = self.state.execution_count + 1;
                        match snapshots.add(pid, socket, count, code) {
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
    fn took(
        &mut self,
        pending: PendingTake,
        answer: Result<crane_probe::snapshot::TakeAnswer, crane_probe::dry_run::DryRunError>,
    ) {
        let snapshots = &self.state.snapshots;
        let note = match answer {
            Ok(answer) => {
                snapshots.forget(&pending.drop);
                snapshots.forget(&answer.ended);
                match answer.taken {
                    crane_probe::snapshot::Taken::Snapshot {
                        pid, socket, fork, ..
                    } => match snapshots.add(pid, socket, pending.execution_count, &pending.code) {
                        Ok(()) => {
                            if let Some(running) = self
                                .state
                                .running
                                .as_mut()
                                .filter(|running| running.msg_id == pending.cell_msg_id)
                            {
                                running.snapshot = Some(SnapshotId::Fork(pid));
                            }
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

    /// Return to `snapshot`: a fork builds a kernel on new ports, the relay switches to it, and
    /// the kernel it replaces is ended (its other snapshots die with it); the fresh start is a
    /// new kernel the proxy starts. The execution count of the cell the snapshot was taken
    /// before and the sentence on what the return cannot give back of the files the kernel
    /// holds open, or why there was no return (the kernel then stays as it was).
    async fn take_over<C: Checker>(
        &mut self,
        snapshot: SnapshotId,
        slot: &mut Slot<C>,
    ) -> Result<(usize, String), String> {
        let Some((how, count)) = self.state.snapshots.get(snapshot) else {
            return Err(match self.state.snapshots.dropped_for_memory(snapshot) {
                Some(reason) => format!("its snapshot was dropped: {reason}"),
                None => "its snapshot is gone".into(),
            });
        };
        let socket = match how {
            Return::TakeOver(socket) => socket,
            Return::Restart => {
                return self
                    .start_afresh(slot)
                    .await
                    .map(|count| (count, String::new()))
            }
        };
        let Slot::Idle { session, .. } = slot else {
            return Err("crane is checking a cell".into());
        };
        let took = tokio::task::spawn_blocking(move || {
            crane_probe::snapshot::take_over(&socket, TAKEOVER_TIMEOUT)
        })
        .await
        .map_err(|error| error.to_string())?
        .map_err(|error| error.to_string())?;
        let adopted =
            Adopted::new(took.pid, took.connection_file.clone()).map_err(|error| error.to_string());
        let connected = async {
            let info = read_connection_file(&took.connection_file).map_err(|e| e.to_string())?;
            let mut back = Back::connect(&info).await.map_err(|e| e.to_string())?;
            back.wait_for_iopub().await.map_err(|e| e.to_string())?;
            let attached =
                AttachedKernel::attach_file(&took.connection_file, &AttachOptions::default())
                    .await
                    .map_err(|e| e.to_string())?;
            Ok::<_, String>((back, attached))
        };
        let (back, attached, adopted) = match (connected.await, adopted) {
            (Ok((back, attached)), Ok(adopted)) => (back, attached, adopted),
            (Err(reason), _) | (Ok(_), Err(reason)) => {
                // The new kernel goes; the kernel it was forked from reaps it.
                if let Some(pid) = rustix::process::Pid::from_raw(took.pid as i32) {
                    let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
                }
                return Err(format!(
                    "the snapshot's kernel could not be reached: {reason}"
                ));
            }
        };
        self.pay_owed_idle().await;
        self.switch_kernel(
            session,
            KernelSession::Attached(attached),
            back,
            Some(adopted),
        );
        let count = took.execution_count.unwrap_or(count);
        self.state.switched_to(took.pid, count, false);
        raise_oom_score(took.pid);
        self.state.watch = Some(KernelWatch::adopted(took.pid));
        Ok((count, took.sentence()))
    }

    /// Before the relay leaves a kernel: the idle of the last relayed cell, which the kernel
    /// sends just after its reply, is awaited for a moment and forwarded, or published by the
    /// proxy. A client that waits for each cell's idle (`execute_interactive`, nbclient) would
    /// otherwise wait for ever once the kernel that owed it is gone.
    async fn pay_owed_idle(&mut self) {
        let deadline = Instant::now() + REPLY_GRACE;
        while self.state.idle_owed.is_some() {
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, self.back.iopub.socket.recv()).await {
                Ok(Ok(message)) => self.back_iopub(message).await,
                Ok(Err(_)) | Err(_) => break,
            }
        }
        if let Some((_, raw_header)) = self.state.idle_owed.take() {
            let mut parent = JupyterMessage::new(Status::idle(), None);
            if let Ok(header) = serde_json::from_slice::<Header>(&raw_header) {
                parent.header = header;
            }
            self.publish(JupyterMessage::new(Status::idle(), Some(&parent)))
                .await;
        }
    }

    /// Switch the relay to `kernel`, reached through `back`; `adopted`: the process a takeover
    /// made. The kernel it replaces is ended: an owned one is killed with its process group and
    /// reaped as it is dropped, one a takeover made is killed and reaped here.
    fn switch_kernel(
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
    async fn start_afresh<C: Checker>(&mut self, slot: &mut Slot<C>) -> Result<usize, String> {
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

    async fn relay(&mut self, mut head: Queued) {
        let Some(cell) = head.execute.take() else {
            return;
        };
        let msg_id = head.parsed.header.msg_id.clone();
        self.state.running = Some(self.running(msg_id, cell, &head));
        self.send_to_kernel(head).await;
        self.start_beside();
    }

    fn running(&mut self, msg_id: String, cell: ExecuteCell, head: &Queued) -> Running {
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
        let mut running = Running::new(msg_id, cell, head.arrived);
        running.behind_take = behind_take;
        running.snapshot = self.state.pending_snapshot.take();
        running.raw_header = head.parsed.raw_header.clone();
        running.identities = head.parsed.identities.clone();
        // A cell that may change the state the cell that killed the kernel ran against.
        if !crane_probe::snapshot::cannot_change_state(&running.code) {
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

    /// The running cell's dry run beside it, once it is wanted and its snapshot known: after
    /// `BESIDE_DELAY`, asked of the snapshot, its end awaited on a thread of its own
    /// (`beside_ended`).
    fn start_beside(&mut self) {
        let Some(running) = self.state.running.as_mut() else {
            return;
        };
        let (Beside::Wanted, Some(SnapshotId::Fork(pid))) = (&running.beside, running.snapshot)
        else {
            return;
        };
        running.beside = Beside::None;
        let Some(socket) = self.state.snapshots.socket(pid) else {
            return;
        };
        let cancel = std::sync::Arc::new(BesideCancel::default());
        let sender = self.state.beside_sender.clone();
        let (msg_id, code) = (running.msg_id.clone(), running.code.clone());
        let cancelled = std::sync::Arc::clone(&cancel);
        let waiting = std::thread::Builder::new()
            .name("crane-beside".into())
            .spawn(move || {
                std::thread::sleep(BESIDE_DELAY);
                if cancelled.is_cancelled() {
                    return;
                }
                let outcome =
                    crane_probe::snapshot::BesideRun::start(&socket, &code, BESIDE_TIMEOUT)
                        .and_then(|run| {
                            let connection = run
                                .canceller()
                                .map_err(crane_probe::snapshot::BesideError::Unreachable)?;
                            if !cancelled.keep(connection) {
                                return Ok(None);
                            }
                            run.wait(BESIDE_TIMEOUT + crane_probe::snapshot::TAKE_TIMEOUT)
                        })
                        .map_err(|error| error.to_string());
                let _ = sender.send(BesideDone { msg_id, outcome });
            });
        match waiting {
            Ok(_) => {
                running.beside = Beside::Started(cancel);
                self.state.beside_note = Some(
                    "the last cell has a dry run beside it, from its snapshot, once it has run for half a second"
                        .into(),
                );
            }
            Err(error) => log(&format!("no dry run beside the cell: {error}")),
        }
    }

    /// A dry run beside the running cell ended: a certain crash stops the cell (under the
    /// `stop` policy), which is then rolled back; any other crash is shown as a warning.
    async fn beside_ended(&mut self, done: BesideDone, slot: &Slot<impl Checker>) {
        let Some(running) = self
            .state
            .running
            .as_mut()
            .filter(|running| running.msg_id == done.msg_id && running.stopped_by.is_none())
        else {
            return;
        };
        running.beside = Beside::None;
        let note = |text: String| Some(format!("the last cell's dry run beside it {text}"));
        let outcome = match done.outcome {
            Ok(Some(outcome)) => outcome,
            Ok(None) => {
                self.state.beside_note =
                    note("had nothing to cut short: the real run is the whole check".into());
                return;
            }
            Err(error) => {
                self.state.beside_note = note(format!("ended without an answer: {error}"));
                return;
            }
        };
        let finding = crane_detect::dry_run_finding(&outcome);
        if !finding.crash || outcome.reads_closed_stdin() {
            self.state.beside_note = note(match finding.status.is_undecided() {
                true => format!("decided nothing: {}", finding.diagnosis),
                false => "ended without a crash".into(),
            });
            return;
        }
        let prediction = format!(
            "{} predicted: {}",
            finding.exception.as_deref().unwrap_or("a crash"),
            finding.diagnosis
        );
        if finding.status.is_certain() && self.state.settings.policy == crate::Policy::Stop {
            self.state.beside_note = note(format!(
                "crashed first, and crane stopped the cell: {prediction}"
            ));
            let rolled_back = running
                .snapshot
                .is_some_and(|snapshot| self.state.snapshots.get(snapshot).is_some());
            self.state.stopped = Some((
                running.msg_id.clone(),
                stopped::stopped_error(
                    &finding,
                    &running.code,
                    running.relayed.elapsed(),
                    rolled_back,
                ),
            ));
            running.stopped_by = Some(prediction);
            self.interrupt(slot).await;
            return;
        }
        self.state.beside_note = note(format!("crashed; the cell went on: {prediction}"));
        let raw_header = running.raw_header.clone();
        let text = format!(
            "crane warning: this cell's dry run beside it, in a fork with its loops cut short, crashed; the cell goes on. {prediction}"
        );
        self.publish_under(&raw_header, &text).await;
    }

    /// Relay a cell with its code changed (the `%%crane run` line removed), under the same
    /// header and with the rest of its content as sent, so the frontend's replies and outputs
    /// still belong to its request.
    async fn relay_rewritten(&mut self, mut head: Queued, code: String) {
        let Some(mut cell) = head.execute.take() else {
            return;
        };
        let Ok(Value::Object(mut content)) = serde_json::from_slice(&head.parsed.content) else {
            return;
        };
        content.insert("code".into(), Value::String(code.clone()));
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
        cell.code = code;
        let msg_id = head.parsed.header.msg_id.clone();
        self.state.running = Some(self.running(msg_id, cell, &head));
        head.message = message;
        self.send_to_kernel(head).await;
    }

    /// A message to the frontend, as the kernel would send it, answering `head`.
    fn reply_to(&self, head: &Queued, content: impl Into<JupyterMessageContent>) -> JupyterMessage {
        let mut parent = JupyterMessage::new(Status::idle(), None);
        if let Ok(header) = serde_json::from_slice::<Header>(&head.parsed.raw_header) {
            parent.header = header;
        }
        parent.zmq_identities = head.parsed.identities.clone();
        JupyterMessage::new(content, Some(&parent))
    }

    async fn publish(&mut self, message: JupyterMessage) {
        let mut message = message;
        message.zmq_identities = Vec::new();
        send(&mut self.front.iopub, message, "frontend iopub").await;
    }

    /// Busy, then `during`, the reply, idle: what a kernel sends for a request it handled.
    async fn answer(
        &mut self,
        head: &Queued,
        during: Vec<JupyterMessageContent>,
        reply: ExecuteReply,
    ) {
        let status = reply.status.clone();
        self.publish(self.reply_to(head, Status::busy())).await;
        for content in during {
            self.publish(self.reply_to(head, content)).await;
        }
        let metadata = serde_json::json!({ "status": status });
        let reply = self.reply_to(head, reply).with_metadata(metadata);
        send(&mut self.front.shell, reply, "frontend shell").await;
        self.publish(self.reply_to(head, Status::idle())).await;
    }

    async fn answer_error(
        &mut self,
        head: &Queued,
        ename: &str,
        evalue: &str,
        traceback: Vec<String>,
    ) {
        let error = ReplyError {
            ename: ename.into(),
            evalue: evalue.into(),
            traceback: traceback.clone(),
        };
        let output = ErrorOutput {
            ename: ename.into(),
            evalue: evalue.into(),
            traceback,
        };
        let reply = ExecuteReply {
            status: ReplyStatus::Error,
            execution_count: ExecutionCount::new(self.state.execution_count),
            payload: Vec::new(),
            user_expressions: Some(Default::default()),
            error: Some(Box::new(error)),
        };
        self.answer(head, vec![output.into()], reply).await;
        if head.execute.as_ref().is_none_or(|e| e.stop_on_error) {
            self.state.abort_queued();
        }
    }

    /// `%tb` or `%debug` after a return to a snapshot took the failed cell's state away: the
    /// traceback crane saw, or how to debug the cell.
    async fn answer_post_mortem(&mut self, head: &Queued, magic: PostMortem, failure: Failure) {
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

    async fn answer_aborted(&mut self, head: &Queued) {
        let reply = ExecuteReply {
            status: ReplyStatus::Aborted,
            execution_count: ExecutionCount::new(self.state.execution_count),
            payload: Vec::new(),
            user_expressions: None,
            error: None,
        };
        self.answer(head, Vec::new(), reply).await;
    }

    async fn answer_magics<C: Checker>(
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
                            .flat_map(|code| effects::in_code(code))
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

    async fn display(&mut self, head: &Queued, text: &str) {
        let data = Media::new(vec![MediaType::Plain(text.to_owned())]);
        self.publish(self.reply_to(head, DisplayData::new(data)))
            .await;
    }
}

/// A running check; it hands the session and the checker back when it ends.
type CheckFuture<C> =
    Pin<Box<dyn Future<Output = (Box<KernelSession>, C, Result<Checked, String>)>>>;

/// The kernel session and the checker, idle or lent to a running check.
enum Slot<C> {
    Idle {
        session: Box<KernelSession>,
        checker: C,
    },
    Checking(CheckFuture<C>),
    Gone,
}

enum SlotEvent {
    Checked(Box<Result<Checked, String>>),
    Exited(ExitStatus, String),
}

impl<C: Checker> Slot<C> {
    /// Start checking, first handing the checker the cells run since the last check;
    /// `false` when a check is already running or the kernel is gone.
    fn start(&mut self, request: CheckRequest, new_cells: &mut Vec<KernelEvent>) -> bool {
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
    async fn next_event(&mut self) -> SlotEvent {
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

#[cfg(test)]
mod reading_tests {
    use super::ExecuteCell;

    #[test]
    fn a_key_given_twice_is_read_as_ipykernel_reads_it() {
        let cell =
            ExecuteCell::read(br#"{"code": "x = 1", "code": "df['nope']", "silent": false}"#)
                .expect("ipykernel reads it, so the proxy must");
        assert_eq!(cell.code, "df['nope']");
        assert!(!cell.silent);
        assert!(cell.stop_on_error);
    }
}
