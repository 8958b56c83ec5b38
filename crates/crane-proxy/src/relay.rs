//! The relay: the five sockets the frontend connects to, the real kernel behind them on private
//! ports (signed with the same key, so messages pass through byte for byte), and the one place
//! where crane steps in, a user cell's `execute_request` on shell.
//!
//! Shell requests keep their order: while a user cell waits for the cell before it or is being
//! checked, the requests behind it wait too. A cell that arrived while the cell before it was
//! still running is aborted when that cell fails or is held, as ipykernel aborts its queue, so
//! "Run All" stops at a held cell as it stops at a crash. Crane's own traffic with the kernel
//! (probe, dry run) is never shown to the frontend: iopub messages are forwarded only when they
//! answer a frontend's session or no one's.

use std::collections::{HashSet, VecDeque};
use std::ffi::OsString;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use bytes::Bytes;
use crane_kernel::{
    read_connection_file, ConnectionFileError, InterruptMode, KernelError, KernelLaunch,
    KernelSession, OwnedKernel, StartOptions,
};
use jupyter_protocol::{
    ConnectionInfo, DisplayData, ErrorOutput, ExecuteReply, ExecuteRequest, ExecutionCount, Header,
    InterruptRequest, IoPubWelcome, JupyterMessage, JupyterMessageContent, KernelInfoRequest,
    Media, MediaType, ReplyError, ReplyStatus, Status, StreamContent,
};
use jupyter_zmq_client::{Connection, RawMessage, RuntimeError, SubscriptionEvent};
use serde::Deserialize;
use serde_json::Value;
use zeromq::{SocketRecv, SocketSend, ZmqMessage};

use crate::check::{self, CheckRequest, Checked, Checker, Decision, Timings};
use crate::settings::{classify, CellKind, Magic, Settings};
use crate::snapshots::Snapshots;

/// How long the proxy waits for the real kernel's iopub to deliver before it serves.
const IOPUB_READY_TIMEOUT: Duration = Duration::from_secs(30);

/// How long the checker may prepare before the frontend is served (see [`Checker::prepare`]).
const PREPARE_TIMEOUT: Duration = Duration::from_secs(10);

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
}

/// How serving ended.
#[derive(Debug)]
pub enum ServeEnd {
    /// The frontend asked for a shutdown (or a restart, which its kernel manager does by
    /// starting a new proxy) and the kernel exited.
    Shutdown,
    /// The real kernel exited without being asked to.
    KernelDied {
        status: ExitStatus,
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

    let start = StartOptions {
        working_dir: options.working_dir.clone(),
        env: options.env.clone(),
        key: Some(front_info.key.clone()),
        ..StartOptions::default()
    };
    let kernel = OwnedKernel::start(&options.launch, &start).await?;
    let kernel_pid = kernel.pid();
    let back_info = read_connection_file(kernel.connection_file())?;
    let mut back = Back::connect(&back_info).await?;
    back.wait_for_iopub().await?;

    let mut signals = Signals::new().map_err(ProxyError::Signals)?;
    let mut session = KernelSession::Owned(kernel);
    let mut checker = checker;
    let prepared = tokio::time::timeout(PREPARE_TIMEOUT, checker.prepare(&mut session));
    tokio::select! {
        prepared = prepared => match prepared {
            Ok(Ok(())) => {}
            Ok(Err(reason)) => log(&format!("not prepared for checks: {reason}")),
            Err(_) => log("not prepared for checks: the kernel took too long"),
        },
        // An interrupt has no cell to stop yet; a stop ends here (dropping the session kills
        // the kernel's process group).
        Signal::Terminate = signals.next() => return Ok(ServeEnd::Terminated),
    }
    let mut proxy = Proxy {
        front,
        back,
        state: State::new(
            options.settings,
            options.launch.interrupt_mode,
            kernel_pid,
            options.timings,
        ),
    };
    let mut slot = Slot::Idle {
        session: Box::new(session),
        checker,
    };

    let end = loop {
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
                SlotEvent::Checked(outcome) => proxy.checked(outcome, &mut slot).await,
                SlotEvent::Exited(status, stderr_tail) => {
                    proxy.drain(EXIT_DRAIN).await;
                    break if proxy.state.shutdown_requested {
                        ServeEnd::Shutdown
                    } else {
                        ServeEnd::KernelDied { status, stderr_tail }
                    };
                }
            },
            signal = signals.next() => match signal {
                Signal::Interrupt => proxy.interrupt(&slot).await,
                Signal::Terminate => break ServeEnd::Terminated,
            },
        }
        proxy.pump(&mut slot).await;
    };
    // Dropping the slot drops the session, which kills the kernel's process group.
    drop(slot);
    Ok(end)
}

fn log(message: &str) {
    eprintln!("crane kernel: {message}");
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
                let request = JupyterMessage::new(KernelInfoRequest {}, None);
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
    header: MinimalHeader,
    parent: Option<MinimalHeader>,
    content: Bytes,
    raw_header: Bytes,
    metadata: Bytes,
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
    parsed(raw)
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
    let header: MinimalHeader = serde_json::from_slice(&raw.jparts[0]).ok()?;
    let parent = serde_json::from_slice::<MinimalHeader>(&raw.jparts[1]).ok();
    Some(Parsed {
        identities: raw.zmq_identities,
        header,
        parent,
        raw_header: raw.jparts[0].clone(),
        metadata: raw.jparts[2].clone(),
        content: raw.jparts[3].clone(),
    })
}

async fn forward<S: SocketSend>(to: &mut Connection<S>, message: ZmqMessage, name: &str) {
    if let Err(error) = to.socket.send(message).await {
        log(&format!("cannot forward to {name}: {error}"));
    }
}

/// A frontend shell request waiting its turn.
struct Queued {
    seq: u64,
    arrived: Instant,
    message: ZmqMessage,
    parsed: Parsed,
    /// Set for an `execute_request` the proxy could read.
    execute: Option<ExecuteRequest>,
}

impl Queued {
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
    /// Sessions of the frontend's clients, whose iopub traffic is forwarded.
    front_sessions: HashSet<String>,
    execution_count: usize,
    executed_cells: Vec<String>,
    last: Option<Explained>,
    /// How long the latest finished check took, and where the time went.
    last_check: Option<(Duration, Timings)>,
    timings: bool,
    shutdown_requested: bool,
    snapshots: Snapshots,
    /// Whether the latest cell relayed got a snapshot, or why not (`%crane status`).
    snapshot_note: Option<String>,
}

impl State {
    fn new(
        settings: Settings,
        interrupt_mode: InterruptMode,
        kernel_pid: u32,
        timings: bool,
    ) -> Self {
        State {
            snapshots: Snapshots::new(settings.snapshot_budget_bytes),
            snapshot_note: None,
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
            execution_count: 0,
            executed_cells: Vec::new(),
            last: None,
            last_check: None,
            timings,
            shutdown_requested: false,
        }
    }

    /// Abort every request that has arrived so far.
    fn abort_queued(&mut self) {
        self.abort_through = self.next_seq.checked_sub(1);
    }
}

struct Proxy {
    front: Front,
    back: Back,
    state: State,
}

impl Proxy {
    fn front_shell(&mut self, message: ZmqMessage) {
        // A message with a bad signature is dropped, as a kernel drops it.
        let Some(parsed) = parse(&self.front.shell, &message) else {
            return;
        };
        self.state
            .front_sessions
            .insert(parsed.header.session.clone());
        let execute = (parsed.header.msg_type == "execute_request")
            .then(|| serde_json::from_slice::<ExecuteRequest>(&parsed.content).ok())
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
        let Some(parsed) = parse(&self.front.control, &message) else {
            return;
        };
        self.state
            .front_sessions
            .insert(parsed.header.session.clone());
        match parsed.header.msg_type.as_str() {
            "shutdown_request" => self.state.shutdown_requested = true,
            "interrupt_request" if matches!(slot, Slot::Checking(_)) => {
                self.state.interrupted_while_checking = true;
            }
            _ => {}
        }
        forward(&mut self.back.control, message, "kernel control").await;
    }

    async fn front_stdin(&mut self, message: ZmqMessage) {
        let Some(parsed) = parse(&self.front.stdin, &message) else {
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
        if let Err(error) = self.front.iopub.send(welcome).await {
            log(&format!("cannot welcome an iopub subscriber: {error}"));
        }
    }

    async fn back_shell(&mut self, message: ZmqMessage) {
        let Some(parsed) = parse_trusted(&self.back.shell, &message) else {
            return;
        };
        let parent_id = parsed.parent.as_ref().map(|parent| parent.msg_id.as_str());
        if parent_id.is_some_and(|id| self.back.own_requests.remove(id)) {
            return;
        }
        let finished = self
            .state
            .running
            .as_ref()
            .is_some_and(|running| Some(running.msg_id.as_str()) == parent_id)
            && parsed.header.msg_type == "execute_reply";
        if finished {
            self.finished(&parsed.content);
        }
        forward(&mut self.front.shell, message, "frontend shell").await;
    }

    fn finished(&mut self, content: &[u8]) {
        let Some(running) = self.state.running.take() else {
            return;
        };
        if self.state.timings {
            log(&format!("timings: {}", running.timeline()));
        }
        #[derive(Deserialize)]
        struct Reply {
            status: String,
            execution_count: Option<usize>,
        }
        let Ok(reply) = serde_json::from_slice::<Reply>(content) else {
            return;
        };
        if let Some(count) = reply.execution_count {
            self.state.execution_count = count;
        }
        if reply.status != "aborted" {
            self.state.executed_cells.push(running.code);
        }
        if reply.status == "error" && running.stop_on_error {
            self.state.abort_queued();
        }
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
        let for_frontend = match &parsed.parent {
            Some(parent) => self.state.front_sessions.contains(&parent.session),
            // The kernel's welcome answers the proxy's own subscription.
            None => parsed.header.msg_type != "iopub_welcome",
        };
        if !for_frontend {
            return;
        }
        if parsed.header.msg_type == "execute_input" {
            #[derive(Deserialize)]
            struct Input {
                execution_count: usize,
            }
            if let Ok(input) = serde_json::from_slice::<Input>(&parsed.content) {
                self.state.execution_count = input.execution_count;
            }
        }
        forward(&mut self.front.iopub, message, "frontend iopub").await;
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

    /// Interrupt as the frontend asked (a SIGINT to the proxy): the kernel gets it too.
    async fn interrupt(&mut self, slot: &Slot<impl Checker>) {
        if matches!(slot, Slot::Checking(_)) {
            self.state.interrupted_while_checking = true;
        }
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
                if let Err(error) = self.back.control.send(request).await {
                    log(&format!("cannot interrupt the kernel: {error}"));
                }
            }
        }
    }

    /// Move the shell queue along as far as it can go now.
    async fn pump<C: Checker>(&mut self, slot: &mut Slot<C>) {
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
                forward(&mut self.back.shell, head.message, "kernel shell").await;
                continue;
            }
            let Some(request) = head.execute.clone() else {
                continue;
            };
            match classify(&request.code) {
                CellKind::Magics(magics) => self.answer_magics(&head, &magics).await,
                CellKind::Misused(message) => {
                    self.answer_error(&head, "CraneUsageError", &message, vec![message.clone()])
                        .await;
                }
                CellKind::Bypass { code } => {
                    self.snapshot_before(&code, slot).await;
                    self.relay_rewritten(head, request, code).await;
                }
                CellKind::Code if self.state.settings.policy == crate::Policy::Off => {
                    self.snapshot_before(&request.code, slot).await;
                    self.relay(head, request).await;
                }
                CellKind::Code => {
                    let check = CheckRequest {
                        code: request.code.clone(),
                        executed_cells: self.state.executed_cells.clone(),
                        settings: self.state.settings.clone(),
                    };
                    if slot.start(check) {
                        self.state.interrupted_while_checking = false;
                        self.state.checking = Some(head);
                        return;
                    }
                    self.snapshot_before(&request.code, slot).await;
                    self.relay(head, request).await;
                }
            }
        }
    }

    async fn checked<C: Checker>(&mut self, outcome: Result<Checked, String>, slot: &mut Slot<C>) {
        let Some(head) = self.state.checking.take() else {
            return;
        };
        let Some(request) = head.execute.clone() else {
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
                checked
            }
            Err(reason) => {
                log(&format!("check abandoned, the cell runs: {reason}"));
                self.snapshot_before(&request.code, slot).await;
                self.relay(head, request).await;
                return;
            }
        };
        let decision = check::decide(&checked, self.state.settings.policy);
        match decision {
            Decision::Hold => {
                let traceback = check::held_traceback(&checked, &request.code);
                let evalue = check::held_evalue(&checked);
                self.answer_error(&head, check::HELD_ENAME, &evalue, traceback)
                    .await;
            }
            Decision::Warn => {
                let text = check::warning_text(&checked, &request.code);
                self.display(&head, &text).await;
                self.snapshot_before(&request.code, slot).await;
                self.relay(head, request.clone()).await;
            }
            Decision::Run => {
                if !checked.notes.is_empty() && self.state.settings.dry_run == crate::DryRunMode::On
                {
                    let text = format!("crane: {}", checked.notes.join("; "));
                    self.display(&head, &text).await;
                }
                self.snapshot_before(&request.code, slot).await;
                self.relay(head, request.clone()).await;
            }
        }
        if let Some(running) = &mut self.state.running {
            running.check = self.state.last_check.clone();
        }
        if decision != Decision::Run {
            self.state.last = Some(Explained {
                code: request.code,
                checked,
                decision,
            });
        }
    }

    /// Before a cell that can change the kernel's state is relayed: a snapshot of the kernel
    /// (dropping the oldest beyond the number kept), or the reason there is none.
    async fn snapshot_before<C: Checker>(&mut self, code: &str, slot: &mut Slot<C>) {
        let keep = self.state.settings.snapshot_keep;
        let snapshots = &self.state.snapshots;
        snapshots.set_budget(self.state.settings.snapshot_budget_bytes);
        let Slot::Idle { session, .. } = slot else {
            self.state.snapshot_note =
                Some("no snapshot before the last cell: the kernel was busy with a check".into());
            return;
        };
        if keep == 0 {
            let pids = snapshots.pids();
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
        let drop = snapshots.beyond(keep);
        let note = match crane_probe::snapshot::take(session, &drop).await {
            Ok(answer) => {
                snapshots.forget(&drop);
                snapshots.forget(&answer.reaped);
                match answer.taken {
                    crane_probe::snapshot::Taken::Snapshot { pid, fork } => {
                        let count = self.state.execution_count + 1;
                        match snapshots.add(pid, count, code) {
                            Ok(()) => format!(
                                "the last cell has a snapshot from before it (forked in {:.1} ms)",
                                fork.as_secs_f64() * 1000.0
                            ),
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

    async fn relay(&mut self, head: Queued, request: ExecuteRequest) {
        self.state.running = Some(Running {
            msg_id: head.parsed.header.msg_id.clone(),
            code: request.code,
            stop_on_error: request.stop_on_error,
            arrived: head.arrived,
            relayed: Instant::now(),
            check: None,
        });
        forward(&mut self.back.shell, head.message, "kernel shell").await;
    }

    /// Relay a cell with its code changed (the `%%crane run` line removed), under the same
    /// header, so the frontend's replies and outputs still belong to its request.
    async fn relay_rewritten(&mut self, head: Queued, mut request: ExecuteRequest, code: String) {
        let Ok(header) = serde_json::from_slice::<Header>(&head.parsed.raw_header) else {
            return;
        };
        request.code = code;
        self.state.running = Some(Running {
            msg_id: header.msg_id.clone(),
            code: request.code.clone(),
            stop_on_error: request.stop_on_error,
            arrived: head.arrived,
            relayed: Instant::now(),
            check: None,
        });
        let metadata = serde_json::from_slice(&head.parsed.metadata).unwrap_or(Value::Null);
        let mut message = JupyterMessage::new(request, None);
        let session = std::mem::replace(&mut self.back.shell.session_id, header.session.clone());
        message.header = header;
        message.metadata = metadata;
        message.zmq_identities = head.parsed.identities.clone();
        if let Err(error) = self.back.shell.send(message).await {
            log(&format!("cannot forward to kernel shell: {error}"));
        }
        self.back.shell.session_id = session;
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
        if let Err(error) = self.front.iopub.send(message).await {
            log(&format!("cannot publish to the frontend: {error}"));
        }
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
        if let Err(error) = self.front.shell.send(reply).await {
            log(&format!("cannot reply to the frontend: {error}"));
        }
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

    async fn answer_magics(&mut self, head: &Queued, magics: &[Magic]) {
        let mut lines = Vec::new();
        for magic in magics {
            match magic {
                Magic::Explain => lines.push(match &self.state.last {
                    Some(last) => check::explanation(&last.checked, &last.code, &last.decision),
                    None => "crane has held or warned about no cell in this kernel yet.".into(),
                }),
                Magic::Snapshots => lines.push(
                    self.state
                        .snapshots
                        .describe(self.state.settings.snapshot_keep),
                ),
                Magic::Status => {
                    lines.push(self.state.settings.describe());
                    if let Some(note) = &self.state.snapshot_note {
                        lines.push(format!("crane: {note}"));
                    }
                    if let Some((took, timings)) = &self.state.last_check {
                        lines.push(format!(
                            "crane: the last check took {} ms: {}",
                            took.as_millis(),
                            timings.describe()
                        ));
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
    Checked(Result<Checked, String>),
    Exited(ExitStatus, String),
}

impl<C: Checker> Slot<C> {
    /// Start checking; `false` when a check is already running or the kernel is gone.
    fn start(&mut self, request: CheckRequest) -> bool {
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
                SlotEvent::Checked(outcome)
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
