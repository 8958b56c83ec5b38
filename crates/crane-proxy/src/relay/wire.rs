//! The wire: the sockets the frontend connects to and the proxy's own connections to the real
//! kernel, messages parsed and signed as the kernel parses and signs them, the replays a
//! kernel drops, and a request read as ipykernel reads it (`json.loads`, Python's truth of its
//! fields). Nothing here knows what a cell is for.

use std::collections::{HashSet, VecDeque};
use std::time::Duration;

use bytes::Bytes;
use crane_kernel::Handshake;
use jupyter_protocol::{ConnectionInfo, JupyterMessage};
use jupyter_zmq_client::{Connection, RawMessage};
use serde::Deserialize;
use serde_json::Value;
use zeromq::{SocketRecv, SocketSend, ZmqMessage};

use super::{log, ProxyError};

/// How long the proxy waits for the real kernel's iopub to deliver before it serves.
pub(super) const IOPUB_READY_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a message to the kernel may wait to be taken: a kernel that takes nothing for
/// this long is gone, and the proxy must go on to see it exit.
pub(super) const SEND_TIMEOUT: Duration = Duration::from_secs(5);

/// How many signatures ipykernel's `Session` remembers (`digest_history_size`); when it holds
/// more, it forgets a tenth of them.
pub(super) const DIGEST_HISTORY: usize = 1 << 16;

pub(super) const DELIMITER: &[u8] = b"<IDS|MSG>";

/// The sockets the frontend connects to.
pub(super) struct Front {
    pub(super) shell: Connection<zeromq::RouterSocket>,
    pub(super) control: Connection<zeromq::RouterSocket>,
    pub(super) stdin: Connection<zeromq::RouterSocket>,
    pub(super) iopub: Connection<zeromq::XPubSocket>,
}

impl Front {
    pub(super) async fn bind(info: &ConnectionInfo, session_id: &str) -> Result<Front, ProxyError> {
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
pub(super) struct Back {
    pub(super) shell: Connection<zeromq::DealerSocket>,
    pub(super) control: Connection<zeromq::DealerSocket>,
    pub(super) stdin: Connection<zeromq::DealerSocket>,
    pub(super) iopub: Connection<zeromq::SubSocket>,
    /// Requests the proxy sent on its own account, whose replies stay with it.
    pub(super) own_requests: HashSet<String>,
}

impl Back {
    pub(super) async fn connect(info: &ConnectionInfo) -> Result<Back, ProxyError> {
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

    /// Meet the kernel as crane's sessions meet theirs ([`crane_kernel::handshake`]), so that
    /// iopub delivers before the first cell's outputs, with `comm_info_request`, never
    /// `kernel_info`: IPython builds its banner for `kernel_info`, and the banner draws a tip
    /// from the global `random`, so a kernel a takeover made would serve the cell after a
    /// rollback one draw past the state it came back to. Replies to the handshake that come
    /// after it are the proxy's own.
    pub(super) async fn wait_for_iopub(&mut self) -> Result<(), ProxyError> {
        let met = crane_kernel::handshake(
            &mut self.shell,
            &mut self.control,
            &mut self.iopub,
            Handshake::CommInfo,
        );
        let met = tokio::time::timeout(IOPUB_READY_TIMEOUT, met)
            .await
            .map_err(|_| ProxyError::IopubSilent(IOPUB_READY_TIMEOUT))?
            .map_err(ProxyError::Handshake)?;
        self.own_requests.extend(met.request_ids);
        Ok(())
    }
}

/// A verified message: routing identities and the four JSON parts.
pub(super) struct Parsed {
    pub(super) identities: Vec<Bytes>,
    /// The message's HMAC as sent (empty without a key).
    pub(super) signature: Bytes,
    pub(super) header: MinimalHeader,
    pub(super) parent: Option<MinimalHeader>,
    pub(super) content: Bytes,
    pub(super) raw_header: Bytes,
}

#[derive(Deserialize)]
pub(super) struct MinimalHeader {
    pub(super) msg_id: String,
    #[serde(default)]
    pub(super) msg_type: String,
    #[serde(default)]
    pub(super) session: String,
}

/// Parse a message from the frontend, checking its signature with the connection's `mac`.
fn parse(mac: &Option<ring::hmac::Key>, message: &ZmqMessage) -> Option<Parsed> {
    let raw = RawMessage::from_multipart(message.clone(), mac).ok()?;
    let mut parsed = parsed(raw)?;
    // A copy: the part may share its buffer with the whole message, which would stay alive.
    parsed.signature = Bytes::copy_from_slice(signature(message)?);
    Some(parsed)
}

/// Parse a message from the frontend as the kernel would take it: with a valid signature, and
/// not a replay of one seen before (ipykernel drops those without a word).
pub(super) fn accept(
    mac: &Option<ring::hmac::Key>,
    digests: &mut Digests,
    message: &ZmqMessage,
) -> Option<Parsed> {
    let parsed = parse(mac, message)?;
    if mac.is_some() && !digests.first_seen(&parsed.signature) {
        log(&format!(
            "dropped a replayed {} (its signature was seen before)",
            parsed.header.msg_type
        ));
        return None;
    }
    Some(parsed)
}

/// The HMAC part of a message.
pub(super) fn signature(message: &ZmqMessage) -> Option<&Bytes> {
    let delimiter = message.iter().position(|part| &part[..] == DELIMITER)?;
    message.get(delimiter + 1)
}

/// A message of these identities and parts (header, parent header, metadata, content,
/// buffers), signed with `mac` as the kernel signs.
pub(super) fn signed(
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
pub(super) fn with_content(
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
pub(super) struct Digests {
    pub(super) seen: HashSet<Bytes>,
    pub(super) order: VecDeque<Bytes>,
}

impl Digests {
    /// Whether `signature` is new; it is remembered from now on.
    pub(super) fn first_seen(&mut self, signature: &Bytes) -> bool {
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
pub(super) fn parse_trusted<S>(connection: &Connection<S>, message: &ZmqMessage) -> Option<Parsed> {
    let mut unsigned = connection.mac.clone();
    unsigned.take();
    let raw = RawMessage::from_multipart(message.clone(), &unsigned).ok()?;
    parsed(raw)
}

pub(super) fn parsed(raw: RawMessage) -> Option<Parsed> {
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

pub(super) async fn forward<S: SocketSend>(
    to: &mut Connection<S>,
    message: ZmqMessage,
    name: &str,
) {
    match tokio::time::timeout(SEND_TIMEOUT, to.socket.send(message)).await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => log(&format!("cannot forward to {name}: {error}")),
        Err(_) => log(&format!(
            "cannot forward to {name}: not taken within {SEND_TIMEOUT:?}"
        )),
    }
}

/// Send a message the proxy makes, within the time [`forward`] allows.
pub(super) async fn send<S: SocketSend>(
    to: &mut Connection<S>,
    message: JupyterMessage,
    name: &str,
) {
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
pub(super) struct ExecuteCell {
    pub(super) code: String,
    pub(super) silent: bool,
    pub(super) stop_on_error: bool,
}

impl ExecuteCell {
    pub(super) fn read(content: &[u8]) -> Option<ExecuteCell> {
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
pub(super) fn read_as_python<T: serde::de::DeserializeOwned>(json: &[u8]) -> Option<T> {
    serde_json::from_slice::<Value>(json)
        .and_then(serde_json::from_value)
        .ok()
}

/// Python's truth value of a JSON value, as ipykernel tests the fields it reads.
pub(super) fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(value) => *value,
        Value::Number(number) => number.as_f64().is_some_and(|n| n != 0.0),
        Value::String(text) => !text.is_empty(),
        Value::Array(items) => !items.is_empty(),
        Value::Object(fields) => !fields.is_empty(),
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
