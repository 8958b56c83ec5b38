//! A scripted HTTP server on 127.0.0.1 for tests: it answers chat requests in the OpenAI
//! chat-completions, Gemini `generateContent` and Anthropic Messages shapes (chosen by the
//! request path), or with scripted failures (status codes with headers, delays, malformed
//! bodies), and records every request. It runs on its own thread and runtime, so sync and
//! async tests can use it, and stops when dropped.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinSet;

/// What the server does with one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A successful chat response whose answer text is `content`, in the protocol of the
    /// request; `usage` is (input, output) tokens, left out when `None`.
    Answer {
        content: String,
        usage: Option<(u64, u64)>,
    },
    /// An error status with extra headers (e.g. `retry-after`) and a body.
    Status {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// A 200 response with this body and content type, as is.
    Raw { content_type: String, body: String },
    /// Waits, then replies.
    Delayed { delay: Duration, reply: Box<Reply> },
    /// An error status whose body echoes what a careless server echoes: the request's URL, its
    /// `authorization`, `x-api-key` and `x-goog-api-key` headers, and the `user:password` of a
    /// basic `authorization`, decoded.
    Echo { status: u16 },
}

impl Reply {
    pub fn answer(content: impl Into<String>) -> Reply {
        Reply::Answer {
            content: content.into(),
            usage: Some((120, 30)),
        }
    }

    pub fn status(status: u16, body: impl Into<String>) -> Reply {
        Reply::Status {
            status,
            headers: Vec::new(),
            body: body.into(),
        }
    }

    pub fn with_header(self, name: &str, value: &str) -> Reply {
        match self {
            Reply::Status {
                status,
                mut headers,
                body,
            } => {
                headers.push((name.to_string(), value.to_string()));
                Reply::Status {
                    status,
                    headers,
                    body,
                }
            }
            other => other,
        }
    }

    pub fn delayed(self, delay: Duration) -> Reply {
        Reply::Delayed {
            delay,
            reply: Box::new(self),
        }
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: String,
    pub received: Instant,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    pub fn json(&self) -> Option<Value> {
        serde_json::from_str(&self.body).ok()
    }
}

#[derive(Default)]
struct State {
    script: VecDeque<Reply>,
    fallback: Option<Reply>,
    requests: Vec<RecordedRequest>,
}

/// The running server.
pub struct TestServer {
    address: SocketAddr,
    state: Arc<Mutex<State>>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

#[derive(Debug, thiserror::Error)]
#[error("test server: {0}")]
pub struct TestServerError(String);

impl TestServer {
    /// Starts a server that gives the scripted replies in order, then `500 script exhausted`.
    pub fn start(script: impl IntoIterator<Item = Reply>) -> Result<TestServer, TestServerError> {
        let state = Arc::new(Mutex::new(State {
            script: script.into_iter().collect(),
            ..State::default()
        }));
        let (address_tx, address_rx) = std::sync::mpsc::channel();
        let (shutdown_tx, shutdown_rx) = oneshot::channel();
        let thread_state = state.clone();
        let thread = std::thread::Builder::new()
            .name("crane-llm-test-server".into())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(err) => {
                        let _ = address_tx.send(Err(err.to_string()));
                        return;
                    }
                };
                runtime.block_on(serve(thread_state, address_tx, shutdown_rx));
            })
            .map_err(|err| TestServerError(err.to_string()))?;
        let address = address_rx
            .recv()
            .map_err(|err| TestServerError(err.to_string()))?
            .map_err(TestServerError)?;
        Ok(TestServer {
            address,
            state,
            shutdown: Some(shutdown_tx),
            thread: Some(thread),
        })
    }

    /// Answers every request not covered by the script with `reply`.
    pub fn with_fallback(self, reply: Reply) -> TestServer {
        if let Ok(mut state) = self.state.lock() {
            state.fallback = Some(reply);
        }
        self
    }

    /// `http://127.0.0.1:<port>/v1` (OpenAI-compatible base URL).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.address)
    }

    /// `http://127.0.0.1:<port>/` (base URL for the Gemini and Anthropic shapes).
    pub fn root_url(&self) -> String {
        format!("http://{}/", self.address)
    }

    pub fn push(&self, reply: Reply) {
        if let Ok(mut state) = self.state.lock() {
            state.script.push_back(reply);
        }
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.state
            .lock()
            .map(|state| state.requests.clone())
            .unwrap_or_default()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn serve(
    state: Arc<Mutex<State>>,
    address_tx: std::sync::mpsc::Sender<Result<SocketAddr, String>>,
    mut shutdown: oneshot::Receiver<()>,
) {
    let listener = match TcpListener::bind("127.0.0.1:0").await {
        Ok(listener) => listener,
        Err(err) => {
            let _ = address_tx.send(Err(err.to_string()));
            return;
        }
    };
    let address = match listener.local_addr() {
        Ok(address) => address,
        Err(err) => {
            let _ = address_tx.send(Err(err.to_string()));
            return;
        }
    };
    let _ = address_tx.send(Ok(address));
    // Dropping the set at shutdown aborts connections still open.
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let state = state.clone();
                connections.spawn(async move {
                    let service = service_fn(move |request| handle(state.clone(), request));
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        }
    }
}

async fn handle(
    state: Arc<Mutex<State>>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let received = Instant::now();
    let method = request.method().to_string();
    let path = request
        .uri()
        .path_and_query()
        .map(|p| p.to_string())
        .unwrap_or_default();
    let host = request
        .headers()
        .get("host")
        .and_then(|host| host.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let headers: Vec<(String, String)> = request
        .headers()
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_ascii_lowercase(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect();
    let body = match request.into_body().collect().await {
        Ok(collected) => String::from_utf8_lossy(&collected.to_bytes()).into_owned(),
        Err(_) => String::new(),
    };
    let model = serde_json::from_str::<Value>(&body)
        .ok()
        .and_then(|body| {
            body.get("model")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .unwrap_or_else(|| "test-model".to_string());
    let echo = echo_body(&host, &path, &headers);
    let reply = match state.lock() {
        Ok(mut state) => {
            state.requests.push(RecordedRequest {
                method,
                path: path.clone(),
                headers,
                body,
                received,
            });
            state.script.pop_front().or_else(|| state.fallback.clone())
        }
        Err(_) => None,
    };
    let reply = match reply {
        Some(Reply::Echo { status }) => Reply::status(status, echo),
        Some(reply) => reply,
        None => Reply::status(500, "{\"error\": \"script exhausted\"}"),
    };
    Ok(respond(reply, &path, &model).await)
}

async fn respond(mut reply: Reply, path: &str, model: &str) -> Response<Full<Bytes>> {
    while let Reply::Delayed { delay, reply: next } = reply {
        tokio::time::sleep(delay).await;
        reply = *next;
    }
    let (status, headers, content_type, body) = match reply {
        Reply::Answer { content, usage } => (
            200,
            Vec::new(),
            "application/json".to_string(),
            chat_response(path, model, &content, usage).to_string(),
        ),
        Reply::Status {
            status,
            headers,
            body,
        } => (status, headers, "application/json".to_string(), body),
        Reply::Raw { content_type, body } => (200, Vec::new(), content_type, body),
        Reply::Delayed { .. } | Reply::Echo { .. } => {
            (500, Vec::new(), "text/plain".to_string(), String::new())
        }
    };
    let mut response = Response::builder()
        .status(status)
        .header("content-type", content_type);
    for (name, value) in headers {
        response = response.header(name, value);
    }
    response
        .body(Full::new(Bytes::from(body)))
        .unwrap_or_else(|_| Response::new(Full::new(Bytes::from_static(b"bad scripted reply"))))
}

/// The error body of [`Reply::Echo`].
fn echo_body(host: &str, path: &str, headers: &[(String, String)]) -> String {
    use base64::Engine;
    let mut echoed = vec![format!("url http://{host}{path}")];
    for (name, value) in headers {
        if matches!(
            name.as_str(),
            "authorization" | "x-api-key" | "x-goog-api-key"
        ) {
            echoed.push(format!("{name}: {value}"));
        }
        if let Some(encoded) = value.strip_prefix("Basic ") {
            if let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(encoded.trim()) {
                echoed.push(format!("credentials {}", String::from_utf8_lossy(&decoded)));
            }
        }
    }
    json!({"error": {"message": format!("denied: {}", echoed.join("; "))}}).to_string()
}

/// A successful chat response in the protocol the request path belongs to.
fn chat_response(path: &str, model: &str, content: &str, usage: Option<(u64, u64)>) -> Value {
    if path.contains(":generateContent") {
        let mut response = json!({
            "candidates": [{
                "content": {"parts": [{"text": content}], "role": "model"},
                "finishReason": "STOP",
                "index": 0
            }],
            "modelVersion": model
        });
        if let Some((input, output)) = usage {
            response["usageMetadata"] = json!({
                "promptTokenCount": input,
                "candidatesTokenCount": output,
                "totalTokenCount": input + output
            });
        }
        response
    } else if path.ends_with("/messages") {
        let mut response = json!({
            "id": "msg_test",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": content}],
            "stop_reason": "end_turn",
            "stop_sequence": null
        });
        if let Some((input, output)) = usage {
            response["usage"] = json!({"input_tokens": input, "output_tokens": output});
        }
        response
    } else {
        let mut response = json!({
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop"
            }]
        });
        if let Some((input, output)) = usage {
            response["usage"] = json!({
                "prompt_tokens": input,
                "completion_tokens": output,
                "total_tokens": input + output
            });
        }
        response
    }
}
