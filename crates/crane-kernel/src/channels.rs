//! The client side of the Jupyter wire protocol: shell, iopub and control sockets, the
//! handshake (`handshake.rs`), and the execute loop. crane interrupts someone else's kernel only while its own
//! request is the one running there, as iopub's `status` messages for that request say.
//!
//! Messages are sent with jupyter-zmq-client's typed `Connection::send`, but received at the
//! raw level: its typed `Connection::read` fails on any message whose content does not fit
//! jupyter-protocol's types (an unusual MIME bundle would lose an output), and parses every
//! frame before crane can look at its size. Here the HMAC is still checked by
//! `RawMessage::from_multipart`, but the content is decoded as plain JSON, and only once its
//! size is known to be within the output limits.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use bytes::Bytes;
use jupyter_protocol::{
    ConnectionInfo, ExecuteRequest, InterruptRequest, JupyterMessage, ShutdownRequest,
    UnknownMessage,
};
use jupyter_zmq_client::{
    ClientControlConnection, ClientIoPubConnection, ClientShellConnection, Connection, RawMessage,
    RuntimeError,
};
use serde::Deserialize;
use serde_json::Value;
use zeromq::SocketRecv;

use crate::error::{DeathCause, KernelError};
use crate::execute::{
    parse_execute_reply, Dropped, ExecuteOptions, Execution, ExecutionOutcome, Output,
    OutputCollector, OutputLimits,
};
use crate::handshake::Handshake;

/// While an interrupted request has not replied, interrupt again this often: ipykernel
/// ignores SIGINT until it has begun running the request, so an interrupt that arrives
/// while the request is still queued (a slow or loaded kernel) is lost.
const REINTERRUPT_INTERVAL: Duration = Duration::from_secs(1);

/// How long to wait for an `interrupt_reply` or `shutdown_reply` on the control channel.
const CONTROL_REPLY_TIMEOUT: Duration = Duration::from_secs(2);

/// Facts from the kernel's `kernel_info_reply`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KernelInfo {
    pub protocol_version: String,
    pub implementation: String,
    pub implementation_version: String,
    pub language: String,
    pub language_version: String,
}

/// One verified message, content still undecoded.
pub(crate) struct Incoming {
    pub(crate) msg_type: String,
    pub(crate) parent_msg_id: Option<String>,
    content: Bytes,
}

impl Incoming {
    pub(crate) fn content_len(&self) -> usize {
        self.content.len()
    }

    pub(crate) fn content(&self) -> Result<Value, serde_json::Error> {
        serde_json::from_slice(&self.content)
    }

    pub(crate) fn is_reply_to(&self, msg_id: &str) -> bool {
        self.parent_msg_id.as_deref() == Some(msg_id)
    }

    pub(crate) fn protocol_error(
        &self,
        channel: &'static str,
        error: impl ToString,
    ) -> KernelError {
        KernelError::Protocol {
            channel,
            msg_type: self.msg_type.clone(),
            reason: error.to_string(),
        }
    }
}

/// The next message off a socket; `None` for one with a bad signature or framing, which is
/// dropped, as Jupyter clients do.
pub(crate) async fn receive<S: SocketRecv>(
    connection: &mut Connection<S>,
) -> Result<Option<Incoming>, RuntimeError> {
    let multipart = connection.socket.recv().await?;
    let Ok(mut raw) = RawMessage::from_multipart(multipart, &connection.mac) else {
        return Ok(None);
    };
    #[derive(Deserialize)]
    struct Header {
        msg_type: String,
    }
    #[derive(Deserialize)]
    struct ParentHeader {
        msg_id: Option<String>,
    }
    let Ok(header) = serde_json::from_slice::<Header>(&raw.jparts[0]) else {
        return Ok(None);
    };
    let parent_msg_id = serde_json::from_slice::<ParentHeader>(&raw.jparts[1])
        .ok()
        .and_then(|parent| parent.msg_id);
    Ok(Some(Incoming {
        msg_type: header.msg_type,
        parent_msg_id,
        content: raw.jparts.swap_remove(3),
    }))
}

/// How to interrupt the kernel on timeout.
#[derive(Debug, Clone, Copy)]
pub(crate) enum InterruptVia {
    /// SIGINT to this process group (a kernel crane started).
    Signal(i32),
    /// `interrupt_request` on control (a kernel crane started).
    Message,
    /// `interrupt_request` on control, sent only while crane's own request runs: someone
    /// else's kernel, where the running cell may be the user's.
    MessageWhileOwnRequestRuns,
}

/// crane's request in the kernel, as far as iopub has told.
#[derive(Debug, Clone)]
struct InFlight {
    msg_id: String,
    /// The kernel went busy for it: it is running (or ran).
    started: bool,
    /// The kernel went idle after it.
    finished: bool,
}

impl InFlight {
    fn running(&self) -> bool {
        self.started && !self.finished
    }
}

/// How long a request of crane's own type waits for its reply after the kernel went idle
/// before concluding that the kernel has no handler for it.
const UNANSWERED_GRACE: Duration = Duration::from_millis(100);

/// A request of a message type the kernel does not serve by itself, answered by a handler
/// crane installed in it.
#[derive(Debug, Clone)]
pub struct CustomRequest {
    /// Ends in `_request`; the reply's type ends in `_reply`.
    pub msg_type: String,
    pub content: Value,
    /// How long crane waits for the reply before interrupting its request, as an execute's
    /// timeout does.
    pub timeout: Duration,
    /// How long to wait, after an interrupt, for the reply.
    pub interrupt_grace: Duration,
}

impl CustomRequest {
    fn reply_type(&self) -> String {
        match self.msg_type.strip_suffix("_request") {
            Some(stem) => format!("{stem}_reply"),
            None => format!("{}_reply", self.msg_type),
        }
    }
}

/// How a [`CustomRequest`] ended.
#[derive(Debug, Clone, PartialEq)]
pub enum CustomOutcome {
    /// The handler's reply content.
    Replied(Value),
    /// The kernel went idle without replying: no handler for the type is installed there.
    Unhandled,
    /// The timeout expired and crane interrupted its request.
    TimedOut { after: Duration },
    /// The timeout expired before the request began in someone else's kernel; crane left
    /// the kernel alone (see [`ExecutionOutcome::Abandoned`]).
    Abandoned { after: Duration },
}

/// What [`Channels::exchange`] waits for.
struct Expect {
    reply_type: String,
    wait_for_idle: bool,
    timeout: Option<Duration>,
    interrupt_grace: Duration,
    limits: OutputLimits,
}

/// How an exchange ended.
enum Ended {
    Replied,
    /// Idle came and the reply did not (only when not waiting for idle).
    IdleWithoutReply,
    /// Timed out and interrupted; `settled` when the reply (and idle, when waited for) came
    /// within the grace.
    Interrupted {
        after: Duration,
        settled: bool,
    },
    /// Timed out before the request began in someone else's kernel.
    Abandoned(Duration),
}

/// What an exchange collected.
struct Exchanged {
    reply: Option<Value>,
    ended: Ended,
    outputs: Vec<Output>,
    dropped: Dropped,
    elapsed: Duration,
}

/// What tells the execute loop that the kernel is gone.
pub(crate) trait DeathWatch {
    /// Resolves when the kernel is dead; must be cancel-safe.
    async fn died(&mut self) -> DeathCause;
    /// Stderr the kernel left, for the error message.
    fn stderr_tail(&self) -> String;
}

/// Open sockets to one kernel.
pub(crate) struct Channels {
    shell: ClientShellConnection,
    iopub: ClientIoPubConnection,
    control: ClientControlConnection,
    /// The request an execute loop sent and has not seen finish; still set when the loop was
    /// cancelled (Ctrl-C), so that [`Channels::stop_own_request`] can stop it.
    in_flight: Option<InFlight>,
    /// Message types a handler crane installed in this kernel answers.
    pub(crate) handled: HashSet<String>,
    /// Message types this kernel was seen to leave unanswered since.
    pub(crate) unhandled: HashSet<String>,
}

impl Channels {
    pub(crate) async fn connect(info: &ConnectionInfo) -> Result<Channels, KernelError> {
        let session_id = uuid::Uuid::new_v4().to_string();
        let channel_error = |channel| move |source| KernelError::Channel { channel, source };
        let identity = jupyter_zmq_client::peer_identity_for_session(&session_id)
            .map_err(channel_error("shell"))?;
        let shell = jupyter_zmq_client::create_client_shell_connection_with_identity(
            info,
            &session_id,
            identity,
        )
        .await
        .map_err(channel_error("shell"))?;
        let iopub = jupyter_zmq_client::create_client_iopub_connection(info, "", &session_id)
            .await
            .map_err(channel_error("iopub"))?;
        let control = jupyter_zmq_client::create_client_control_connection(info, &session_id)
            .await
            .map_err(channel_error("control"))?;
        Ok(Channels {
            shell,
            iopub,
            control,
            in_flight: None,
            handled: HashSet::new(),
            unhandled: HashSet::new(),
        })
    }

    /// Meet the kernel ([`handshake`]): its info when the handshake asked for it.
    pub(crate) async fn handshake(
        &mut self,
        handshake: Handshake,
    ) -> Result<Option<KernelInfo>, KernelError> {
        let met = crate::handshake::handshake(
            &mut self.shell,
            &mut self.control,
            &mut self.iopub,
            handshake,
        )
        .await?;
        Ok(met.kernel_info)
    }

    /// Run one `execute_request` and collect what it produced.
    pub(crate) async fn execute(
        &mut self,
        code: &str,
        options: &ExecuteOptions,
        interrupt: InterruptVia,
        watch: &mut impl DeathWatch,
    ) -> Result<Execution, KernelError> {
        let request = ExecuteRequest {
            code: code.to_string(),
            silent: options.silent,
            store_history: options.store_history,
            user_expressions: Some(options.user_expressions.clone().into_iter().collect()),
            allow_stdin: false,
            stop_on_error: true,
        };
        let expect = Expect {
            reply_type: "execute_reply".into(),
            wait_for_idle: true,
            timeout: options.timeout,
            interrupt_grace: options.interrupt_grace,
            limits: options.limits,
        };
        let exchanged = self
            .exchange(
                JupyterMessage::new(request, None),
                &expect,
                interrupt,
                watch,
            )
            .await?;
        let reply = match exchanged.reply {
            Some(content) => {
                Some(
                    parse_execute_reply(content).map_err(|e| KernelError::Protocol {
                        channel: "shell",
                        msg_type: "execute_reply".into(),
                        reason: e.to_string(),
                    })?,
                )
            }
            None => None,
        };
        let outcome = match exchanged.ended {
            Ended::Abandoned(after) => ExecutionOutcome::Abandoned { after },
            Ended::Interrupted { after, settled } => ExecutionOutcome::TimedOut {
                after,
                reply: reply.filter(|_| settled),
            },
            Ended::Replied | Ended::IdleWithoutReply => {
                ExecutionOutcome::Finished(reply.ok_or_else(|| KernelError::Protocol {
                    channel: "shell",
                    msg_type: "execute_reply".into(),
                    reason: "missing".into(),
                })?)
            }
        };
        Ok(Execution {
            outcome,
            outputs: exchanged.outputs,
            dropped: exchanged.dropped,
            elapsed: exchanged.elapsed,
        })
    }

    /// Send a request of a type only a handler crane installed in the kernel answers, and
    /// wait for its reply (not for the kernel's idle after it: the reply is all crane needs).
    pub(crate) async fn request(
        &mut self,
        request: &CustomRequest,
        interrupt: InterruptVia,
        watch: &mut impl DeathWatch,
    ) -> Result<CustomOutcome, KernelError> {
        let message = JupyterMessage::new(
            UnknownMessage {
                msg_type: request.msg_type.clone(),
                content: request.content.clone(),
            },
            None,
        );
        let expect = Expect {
            reply_type: request.reply_type(),
            wait_for_idle: false,
            timeout: Some(request.timeout),
            interrupt_grace: request.interrupt_grace,
            limits: OutputLimits::default(),
        };
        let exchanged = self.exchange(message, &expect, interrupt, watch).await?;
        Ok(match (exchanged.ended, exchanged.reply) {
            (Ended::Abandoned(after), _) => CustomOutcome::Abandoned { after },
            (Ended::Interrupted { after, .. }, _) => CustomOutcome::TimedOut { after },
            (_, Some(reply)) => CustomOutcome::Replied(reply),
            (_, None) => CustomOutcome::Unhandled,
        })
    }

    /// Send `request` on shell and follow it to its reply of `expect.reply_type` (and, when
    /// asked, the kernel's idle after it), collecting the outputs iopub attributes to it.
    async fn exchange(
        &mut self,
        request: JupyterMessage,
        expect: &Expect,
        interrupt: InterruptVia,
        watch: &mut impl DeathWatch,
    ) -> Result<Exchanged, KernelError> {
        let msg_id = request.header.msg_id.clone();
        self.in_flight = Some(InFlight {
            msg_id: msg_id.clone(),
            started: false,
            finished: false,
        });
        self.shell
            .send(request)
            .await
            .map_err(|source| KernelError::Channel {
                channel: "shell",
                source,
            })?;
        let started_at = Instant::now();
        let mut collector = OutputCollector::new(expect.limits);
        let mut reply: Option<Value> = None;
        let mut idle = false;
        let mut deadline = expect.timeout.map(|timeout| started_at + timeout);
        let mut interrupted_after: Option<Duration> = None;
        let mut reinterrupt_at: Option<Instant> = None;
        // A kernel with no handler for the request goes idle without replying; the reply,
        // which travels on another socket, may still be on its way for a moment.
        let mut unanswered_at: Option<Instant> = None;
        let mut started = false;
        let only_while_running = matches!(interrupt, InterruptVia::MessageWhileOwnRequestRuns);

        let ended = loop {
            if reply.is_some() && (idle || !expect.wait_for_idle) {
                break match interrupted_after {
                    Some(after) => Ended::Interrupted {
                        after,
                        settled: true,
                    },
                    None => Ended::Replied,
                };
            }
            // Timers first: a kernel flooding iopub must not starve the timeout.
            tokio::select! {
                biased;
                _ = sleep_until(deadline) => {
                    if let Some(after) = interrupted_after {
                        break Ended::Interrupted { after, settled: false };
                    }
                    if only_while_running && !started {
                        break Ended::Abandoned(expect.timeout.unwrap_or_default());
                    }
                    interrupted_after = expect.timeout;
                    if !(only_while_running && idle) {
                        self.interrupt(interrupt).await?;
                    }
                    deadline = Some(Instant::now() + expect.interrupt_grace);
                    reinterrupt_at = Some(Instant::now() + REINTERRUPT_INTERVAL);
                }
                _ = sleep_until(reinterrupt_at.filter(|_| reply.is_none() && !idle)) => {
                    self.interrupt(interrupt).await?;
                    reinterrupt_at = Some(Instant::now() + REINTERRUPT_INTERVAL);
                }
                _ = sleep_until(unanswered_at) => break match interrupted_after {
                    // The interrupt ended the handler before it replied.
                    Some(after) => Ended::Interrupted { after, settled: false },
                    None => Ended::IdleWithoutReply,
                },
                cause = watch.died() => {
                    return Err(KernelError::KernelDied { cause, stderr_tail: watch.stderr_tail() });
                }
                received = receive(&mut self.iopub) => {
                    let received = match received {
                        Ok(received) => received,
                        Err(source) => return Err(channel_failure("iopub", source, watch).await),
                    };
                    let Some(message) = received.filter(|m| m.is_reply_to(&msg_id)) else {
                        continue;
                    };
                    if message.msg_type == "status" {
                        let content = message.content().map_err(|e| message.protocol_error("iopub", e))?;
                        match content.get("execution_state").and_then(Value::as_str) {
                            Some("busy") => started = true,
                            Some("idle") => {
                                idle = true;
                                if !expect.wait_for_idle && reply.is_none() {
                                    unanswered_at = Some(Instant::now() + UNANSWERED_GRACE);
                                }
                            }
                            _ => {}
                        }
                        self.note_status(started, idle);
                    } else {
                        started = true;
                        self.note_status(started, idle);
                        collector
                            .accept(&message.msg_type, message.content_len(), || message.content())
                            .map_err(|e| message.protocol_error("iopub", e))?;
                    }
                }
                received = receive(&mut self.shell) => {
                    let received = match received {
                        Ok(received) => received,
                        Err(source) => return Err(channel_failure("shell", source, watch).await),
                    };
                    match received {
                        Some(message)
                            if message.msg_type == expect.reply_type && message.is_reply_to(&msg_id) =>
                        {
                            reply = Some(message.content().map_err(|e| message.protocol_error("shell", e))?);
                        }
                        _ => {}
                    }
                }
            }
        };

        self.in_flight = None;
        let (outputs, dropped) = collector.finish();
        Ok(Exchanged {
            reply,
            ended,
            outputs,
            dropped,
            elapsed: started_at.elapsed(),
        })
    }

    fn note_status(&mut self, started: bool, finished: bool) {
        if let Some(in_flight) = &mut self.in_flight {
            in_flight.started = started;
            in_flight.finished = finished;
        }
    }

    /// After an execute loop was cancelled (Ctrl-C, a signal): interrupts crane's request if
    /// it is the one running, after reading what iopub says of it for up to `settle`; a request
    /// still queued behind another client's is left alone. True when it interrupted.
    pub(crate) async fn stop_own_request(&mut self, settle: Duration) -> bool {
        let Some(mut in_flight) = self.in_flight.take() else {
            return false;
        };
        let watch = async {
            while !in_flight.finished {
                let Ok(Some(message)) = receive(&mut self.iopub).await else {
                    continue;
                };
                if message.msg_type != "status" || !message.is_reply_to(&in_flight.msg_id) {
                    continue;
                }
                match message
                    .content()
                    .ok()
                    .as_ref()
                    .and_then(|c| c.get("execution_state"))
                    .and_then(Value::as_str)
                {
                    Some("busy") => in_flight.started = true,
                    Some("idle") => in_flight.finished = true,
                    _ => {}
                }
            }
        };
        let _ = tokio::time::timeout(settle, watch).await;
        if !in_flight.running() {
            return false;
        }
        self.control_request(InterruptRequest {}.into(), "interrupt_reply")
            .await
            .is_ok()
    }

    /// Interrupt whatever the kernel is running.
    pub(crate) async fn interrupt(&mut self, via: InterruptVia) -> Result<(), KernelError> {
        match via {
            InterruptVia::Signal(process_group) => {
                signal_group(process_group, rustix::process::Signal::INT).map_err(|source| {
                    KernelError::Io {
                        context: format!(
                            "cannot send SIGINT to kernel process group {process_group}"
                        ),
                        source,
                    }
                })
            }
            InterruptVia::Message | InterruptVia::MessageWhileOwnRequestRuns => self
                .control_request(InterruptRequest {}.into(), "interrupt_reply")
                .await
                .map(drop),
        }
    }

    /// Ask the kernel to shut down; true when it acknowledged.
    pub(crate) async fn request_shutdown(&mut self) -> Result<bool, KernelError> {
        self.control_request(ShutdownRequest { restart: false }.into(), "shutdown_reply")
            .await
    }

    /// Send on control and wait briefly for the matching reply; false when none came.
    async fn control_request(
        &mut self,
        request: JupyterMessage,
        reply_type: &str,
    ) -> Result<bool, KernelError> {
        let msg_id = request.header.msg_id.clone();
        self.control
            .send(request)
            .await
            .map_err(|source| KernelError::Channel {
                channel: "control",
                source,
            })?;
        let wait_reply = async {
            loop {
                if let Some(message) = receive(&mut self.control).await? {
                    if message.msg_type == reply_type && message.is_reply_to(&msg_id) {
                        return Ok(());
                    }
                }
            }
        };
        match tokio::time::timeout(CONTROL_REPLY_TIMEOUT, wait_reply).await {
            Ok(Ok(())) => Ok(true),
            Ok(Err(source)) => Err(KernelError::Channel {
                channel: "control",
                source,
            }),
            Err(_) => Ok(false),
        }
    }
}

/// A socket failed mid-execute: if the kernel died, say that; else report the socket.
async fn channel_failure(
    channel: &'static str,
    source: RuntimeError,
    watch: &mut impl DeathWatch,
) -> KernelError {
    match tokio::time::timeout(Duration::from_secs(2), watch.died()).await {
        Ok(cause) => KernelError::KernelDied {
            cause,
            stderr_tail: watch.stderr_tail(),
        },
        Err(_) => KernelError::Channel { channel, source },
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline.into()).await,
        None => std::future::pending().await,
    }
}

pub(crate) fn signal_group(
    process_group: i32,
    signal: rustix::process::Signal,
) -> std::io::Result<()> {
    let pid = rustix::process::Pid::from_raw(process_group)
        .ok_or_else(|| std::io::Error::other("invalid process group id"))?;
    rustix::process::kill_process_group(pid, signal).map_err(std::io::Error::from)
}
