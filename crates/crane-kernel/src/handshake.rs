//! The handshake: a harmless request repeated until the kernel answers it and the client's
//! iopub delivers (a SUB socket receives only once the kernel has seen its subscription, and
//! the first cell's outputs must not be lost). crane's own sessions meet every kernel this way,
//! and so does the relay of `crane kernel serve` (crane-proxy) for each kernel it relays to.

use std::time::{Duration, Instant};

use jupyter_protocol::{CommInfoRequest, JupyterMessage, KernelInfoRequest};
use jupyter_zmq_client::{
    ClientControlConnection, ClientIoPubConnection, ClientShellConnection, RuntimeError,
};
use serde_json::Value;

use crate::channels::{receive, Incoming, KernelInfo};
use crate::error::KernelError;

/// How often the handshake repeats its request until iopub delivers: a SUB socket only
/// receives once the kernel has seen its subscription, which takes an unknown while.
const HANDSHAKE_RETRY: Duration = Duration::from_millis(250);

/// How long the handshake waits for its reply before asking again.
const UNANSWERED_RETRY: Duration = Duration::from_secs(2);

/// What the handshake asks to learn that the kernel answers and iopub delivers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handshake {
    /// `kernel_info_request`, for a kernel crane started.
    KernelInfo,
    /// `comm_info_request`, for someone else's kernel and for every kernel the relay of
    /// `crane kernel serve` meets (a kernel a takeover made is the user's state): IPython
    /// builds its banner for `kernel_info`, and the banner draws a tip from the global
    /// `random`, which would change the user's random state. Listing comms changes nothing.
    CommInfo,
}

impl Handshake {
    fn request(self) -> JupyterMessage {
        match self {
            Handshake::KernelInfo => JupyterMessage::new(KernelInfoRequest {}, None),
            Handshake::CommInfo => JupyterMessage::new(CommInfoRequest { target_name: None }, None),
        }
    }

    fn reply_type(self) -> &'static str {
        match self {
            Handshake::KernelInfo => "kernel_info_reply",
            Handshake::CommInfo => "comm_info_reply",
        }
    }
}

/// A kernel met: its info when the handshake asked for it, and the ids of every request the
/// handshake sent, whose replies may still come after it (a client that forwards replies
/// drops those).
#[derive(Debug, Clone)]
pub struct Met {
    pub kernel_info: Option<KernelInfo>,
    pub request_ids: Vec<String>,
}

/// Ask with `handshake`'s request until the kernel answers and iopub delivers to us. The
/// request goes to shell and to control: a kernel busy with another client's cell answers on
/// control at once, while kernels that only serve it on shell still answer there.
pub async fn handshake(
    shell: &mut ClientShellConnection,
    control: &mut ClientControlConnection,
    iopub: &mut ClientIoPubConnection,
    handshake: Handshake,
) -> Result<Met, KernelError> {
    let mut request_ids: Vec<String> = Vec::new();
    let mut answer: Option<Option<KernelInfo>> = None;
    let mut iopub_ready = false;
    let mut retry = tokio::time::interval(HANDSHAKE_RETRY);
    let mut last_sent: Option<Instant> = None;
    loop {
        if let (Some(answer), true) = (&answer, iopub_ready) {
            return Ok(Met {
                kernel_info: answer.clone(),
                request_ids,
            });
        }
        tokio::select! {
            _ = retry.tick() => {
                // A kernel still starting answers later; only a missing iopub message
                // calls for quick repeats.
                let unanswered_for = last_sent.map(|sent| sent.elapsed());
                if answer.is_none() && unanswered_for.is_some_and(|t| t < UNANSWERED_RETRY) {
                    continue;
                }
                last_sent = Some(Instant::now());
                for (channel, connection) in [("shell", &mut *shell), ("control", &mut *control)] {
                    let request = handshake.request();
                    request_ids.push(request.header.msg_id.clone());
                    connection
                        .send(request)
                        .await
                        .map_err(|source| KernelError::Channel { channel, source })?;
                }
            }
            received = receive(iopub) => {
                let received = received.map_err(|source| KernelError::Channel {
                    channel: "iopub",
                    source,
                })?;
                iopub_ready |= received.is_some();
            }
            received = receive(shell) => {
                answer = answer.or(handshake_reply(handshake, "shell", received, &request_ids)?);
            }
            received = receive(control) => {
                answer = answer.or(handshake_reply(handshake, "control", received, &request_ids)?);
            }
        }
    }
}

/// `Some` when `received` is the handshake's reply to one of `request_ids`, with the kernel's
/// info when the handshake asked for it.
fn handshake_reply(
    handshake: Handshake,
    channel: &'static str,
    received: Result<Option<Incoming>, RuntimeError>,
    request_ids: &[String],
) -> Result<Option<Option<KernelInfo>>, KernelError> {
    let received = received.map_err(|source| KernelError::Channel { channel, source })?;
    let Some(message) = received.filter(|message| {
        message.msg_type == handshake.reply_type()
            && request_ids.iter().any(|id| message.is_reply_to(id))
    }) else {
        return Ok(None);
    };
    if handshake != Handshake::KernelInfo {
        return Ok(Some(None));
    }
    let content = message
        .content()
        .map_err(|e| message.protocol_error(channel, e))?;
    Ok(Some(Some(parse_kernel_info(content))))
}

fn parse_kernel_info(content: Value) -> KernelInfo {
    let text = |value: Option<&Value>| {
        value
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let language_info = content.get("language_info");
    KernelInfo {
        protocol_version: text(content.get("protocol_version")),
        implementation: text(content.get("implementation")),
        implementation_version: text(content.get("implementation_version")),
        language: text(language_info.and_then(|l| l.get("name"))),
        language_version: text(language_info.and_then(|l| l.get("version"))),
    }
}
