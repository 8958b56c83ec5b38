//! What an `execute_request` asks for and what comes back: options, collected outputs
//! (bounded in size), the `execute_reply`, and the outcome (finished or timed out).
//! `clear_output` is applied as a notebook would; `update_display_data` is not (crane reads
//! outputs, it does not render them).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A MIME bundle: mime type to data, as in nbformat (`text/plain` to a string, ...).
pub type MimeBundle = Map<String, Value>;

/// Options of one `execute_request`. `allow_stdin` is always false: crane has no terminal
/// to answer `input()`, so `input()` raises in the kernel instead of hanging.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecuteOptions {
    /// Run without broadcasting outputs and without counting the execution.
    pub silent: bool,
    /// Record the code in the kernel's history (and count it).
    pub store_history: bool,
    /// Expressions the kernel evaluates after the code, returned in the reply.
    pub user_expressions: BTreeMap<String, String>,
    /// Interrupt the kernel when the code runs longer than this.
    pub timeout: Option<Duration>,
    /// How long to wait, after an interrupt, for the kernel to reply and go idle.
    pub interrupt_grace: Duration,
    /// Caps on the outputs kept in memory.
    pub limits: OutputLimits,
}

impl ExecuteOptions {
    /// A user cell: counted and stored in history, like running it in a notebook.
    pub fn cell() -> Self {
        ExecuteOptions {
            silent: false,
            store_history: true,
            user_expressions: BTreeMap::new(),
            timeout: None,
            interrupt_grace: Duration::from_secs(10),
            limits: OutputLimits::default(),
        }
    }

    /// crane's own code: not counted, not in history, no `Out`/`_` change.
    pub fn silent() -> Self {
        ExecuteOptions {
            silent: true,
            store_history: false,
            ..ExecuteOptions::cell()
        }
    }

    /// Interrupt the code when it runs longer than `timeout`.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Also evaluate `expr` after the code; its value comes back under `name`.
    pub fn with_user_expression(
        mut self,
        name: impl Into<String>,
        expr: impl Into<String>,
    ) -> Self {
        self.user_expressions.insert(name.into(), expr.into());
        self
    }
}

impl Default for ExecuteOptions {
    fn default() -> Self {
        ExecuteOptions::cell()
    }
}

/// Caps on what one execution may keep in memory; what goes over is dropped and counted in
/// [`Dropped`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputLimits {
    /// Bytes of text kept per stream (stdout, stderr).
    pub stream_bytes: usize,
    /// Bytes of one rich output (display data, result, error); larger ones are dropped.
    pub output_bytes: usize,
    /// Bytes of all rich outputs together.
    pub total_output_bytes: usize,
}

impl Default for OutputLimits {
    fn default() -> Self {
        OutputLimits {
            stream_bytes: 4 << 20,
            output_bytes: 4 << 20,
            total_output_bytes: 16 << 20,
        }
    }
}

impl OutputLimits {
    /// Everything is kept, as a notebook keeps it.
    pub const UNLIMITED: OutputLimits = OutputLimits {
        stream_bytes: usize::MAX,
        output_bytes: usize::MAX,
        total_output_bytes: usize::MAX,
    };

    /// At most `bytes` of one execution's outputs: each stream is cut there, and a rich
    /// output that would take the rich outputs together over it is left out.
    pub fn at_most(bytes: usize) -> OutputLimits {
        OutputLimits {
            stream_bytes: bytes,
            output_bytes: bytes,
            total_output_bytes: bytes,
        }
    }
}

/// Which stream a text output went to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StreamName {
    Stdout,
    Stderr,
}

/// An exception as the kernel reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorInfo {
    pub ename: String,
    pub evalue: String,
    /// Lines as the kernel formats them (IPython's contain ANSI colour codes).
    pub traceback: Vec<String>,
}

/// One output of an execution, in the order the kernel sent them (consecutive text on
/// the same stream is merged, as in nbformat).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "output_type", rename_all = "snake_case")]
pub enum Output {
    Stream {
        name: StreamName,
        text: String,
    },
    DisplayData {
        data: MimeBundle,
        metadata: Map<String, Value>,
    },
    ExecuteResult {
        execution_count: Option<u64>,
        data: MimeBundle,
        metadata: Map<String, Value>,
    },
    Error(ErrorInfo),
}

/// The value of one user expression.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum UserExpression {
    Value {
        data: MimeBundle,
        metadata: Map<String, Value>,
    },
    Error(ErrorInfo),
}

/// `status` of an `execute_reply`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReplyStatus {
    Ok,
    Error(ErrorInfo),
    /// The request was not run (an earlier request failed with `stop_on_error`).
    Aborted,
}

/// The kernel's `execute_reply`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecuteReply {
    pub status: ReplyStatus,
    /// The kernel's counter after this request (unchanged by silent requests).
    pub execution_count: Option<u64>,
    pub user_expressions: BTreeMap<String, UserExpression>,
}

/// How an execution ended.
#[derive(Debug, Clone, PartialEq)]
pub enum ExecutionOutcome {
    /// The kernel replied and went idle.
    Finished(ExecuteReply),
    /// The timeout expired and crane interrupted the kernel.
    TimedOut {
        after: Duration,
        /// The reply that followed the interrupt (usually a KeyboardInterrupt error), when
        /// the kernel replied and went idle within the grace period. `None` means the kernel
        /// did not come back: it may still be busy.
        reply: Option<ExecuteReply>,
    },
    /// The timeout expired before crane's request began to run in someone else's kernel (the
    /// kernel was still busy with another client's request). crane interrupts only its own
    /// requests, so it left the kernel alone; the request may still run later.
    Abandoned { after: Duration },
}

/// What output limits made crane drop.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Dropped {
    /// Bytes of stdout text over [`OutputLimits::stream_bytes`].
    pub stdout_bytes: u64,
    /// Bytes of stderr text over [`OutputLimits::stream_bytes`].
    pub stderr_bytes: u64,
    /// Rich outputs over [`OutputLimits::output_bytes`] or the total.
    pub outputs: u64,
    /// Bytes of those rich outputs (their message content).
    pub output_bytes: u64,
}

impl Dropped {
    /// True when everything the kernel sent was kept.
    pub fn is_nothing(&self) -> bool {
        self.stream_bytes() == 0 && self.outputs == 0
    }

    /// Bytes of stream text dropped, both streams together.
    pub fn stream_bytes(&self) -> u64 {
        self.stdout_bytes + self.stderr_bytes
    }

    /// Bytes of one stream's text dropped.
    pub fn stream(&self, name: StreamName) -> u64 {
        match name {
            StreamName::Stdout => self.stdout_bytes,
            StreamName::Stderr => self.stderr_bytes,
        }
    }
}

/// The result of one `execute`.
#[derive(Debug, Clone, PartialEq)]
pub struct Execution {
    /// Finished with a reply, or timed out.
    pub outcome: ExecutionOutcome,
    /// Outputs in arrival order, within the limits.
    pub outputs: Vec<Output>,
    /// What the limits dropped.
    pub dropped: Dropped,
    /// From sending the request to the end of collection.
    pub elapsed: Duration,
}

impl Execution {
    /// The reply, when there was one.
    pub fn reply(&self) -> Option<&ExecuteReply> {
        match &self.outcome {
            ExecutionOutcome::Finished(reply) => Some(reply),
            ExecutionOutcome::TimedOut { reply, .. } => reply.as_ref(),
            ExecutionOutcome::Abandoned { .. } => None,
        }
    }

    /// True when the timeout expired (whether crane interrupted its request or abandoned it).
    pub fn timed_out(&self) -> bool {
        matches!(
            self.outcome,
            ExecutionOutcome::TimedOut { .. } | ExecutionOutcome::Abandoned { .. }
        )
    }

    /// The exception the code raised: from the reply, else from an error output.
    pub fn error(&self) -> Option<&ErrorInfo> {
        if let Some(ExecuteReply {
            status: ReplyStatus::Error(error),
            ..
        }) = self.reply()
        {
            return Some(error);
        }
        self.outputs.iter().find_map(|output| match output {
            Output::Error(error) => Some(error),
            _ => None,
        })
    }

    /// All text sent to one stream.
    pub fn stream_text(&self, stream: StreamName) -> String {
        self.outputs
            .iter()
            .filter_map(|output| match output {
                Output::Stream { name, text } if *name == stream => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// `text/plain` of the `execute_result`, if any.
    pub fn result_text(&self) -> Option<&str> {
        self.outputs.iter().find_map(|output| match output {
            Output::ExecuteResult { data, .. } => data.get("text/plain").and_then(Value::as_str),
            _ => None,
        })
    }
}

/// Collects the iopub outputs of one request, within [`OutputLimits`].
pub(crate) struct OutputCollector {
    limits: OutputLimits,
    outputs: Vec<Output>,
    stream_bytes: [usize; 2],
    rich_bytes: usize,
    dropped: Dropped,
    clear_on_next_output: bool,
}

impl OutputCollector {
    pub(crate) fn new(limits: OutputLimits) -> Self {
        OutputCollector {
            limits,
            outputs: Vec::new(),
            stream_bytes: [0, 0],
            rich_bytes: 0,
            dropped: Dropped::default(),
            clear_on_next_output: false,
        }
    }

    /// Handle one iopub message whose parent is our request. `content_len` is the size of
    /// the raw content frame, checked before a large rich output is parsed at all.
    pub(crate) fn accept(
        &mut self,
        msg_type: &str,
        content_len: usize,
        parse: impl FnOnce() -> Result<Value, serde_json::Error>,
    ) -> Result<(), serde_json::Error> {
        match msg_type {
            "stream" => {
                let content: StreamContent = serde_json::from_value(parse()?)?;
                self.push_stream(content.name, content.text);
            }
            "display_data" | "execute_result" | "error" => {
                if content_len > self.limits.output_bytes
                    || self.rich_bytes.saturating_add(content_len) > self.limits.total_output_bytes
                {
                    self.dropped.outputs += 1;
                    self.dropped.output_bytes += content_len as u64;
                    return Ok(());
                }
                let output = match msg_type {
                    "display_data" => {
                        let content: RichContent = serde_json::from_value(parse()?)?;
                        Output::DisplayData {
                            data: content.data,
                            metadata: content.metadata,
                        }
                    }
                    "execute_result" => {
                        let content: RichContent = serde_json::from_value(parse()?)?;
                        Output::ExecuteResult {
                            execution_count: content.execution_count,
                            data: content.data,
                            metadata: content.metadata,
                        }
                    }
                    _ => Output::Error(serde_json::from_value(parse()?)?),
                };
                self.rich_bytes += content_len;
                self.push(output);
            }
            "clear_output" => {
                let content: ClearOutputContent = serde_json::from_value(parse()?)?;
                if content.wait {
                    self.clear_on_next_output = true;
                } else {
                    self.clear();
                }
            }
            _ => {}
        }
        Ok(())
    }

    pub(crate) fn finish(self) -> (Vec<Output>, Dropped) {
        (self.outputs, self.dropped)
    }

    fn clear(&mut self) {
        self.outputs.clear();
        self.stream_bytes = [0, 0];
        self.rich_bytes = 0;
        self.clear_on_next_output = false;
    }

    fn push(&mut self, output: Output) {
        if self.clear_on_next_output {
            self.clear();
        }
        self.outputs.push(output);
    }

    fn push_stream(&mut self, name: StreamName, text: String) {
        let used = &mut self.stream_bytes[name as usize];
        let room = self.limits.stream_bytes.saturating_sub(*used);
        let kept = floor_char_boundary(&text, room);
        let cut = (text.len() - kept) as u64;
        match name {
            StreamName::Stdout => self.dropped.stdout_bytes += cut,
            StreamName::Stderr => self.dropped.stderr_bytes += cut,
        }
        if kept == 0 {
            return;
        }
        *used += kept;
        // A cut text is copied, so the dropped part's memory is not kept alive as capacity.
        let text = if kept < text.len() {
            text[..kept].to_owned()
        } else {
            text
        };
        if self.clear_on_next_output {
            self.clear();
        }
        match self.outputs.last_mut() {
            Some(Output::Stream {
                name: last,
                text: previous,
            }) if *last == name => previous.push_str(&text),
            _ => self.outputs.push(Output::Stream { name, text }),
        }
    }
}

fn floor_char_boundary(text: &str, max: usize) -> usize {
    if max >= text.len() {
        return text.len();
    }
    (0..=max)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0)
}

#[derive(Deserialize)]
struct StreamContent {
    name: StreamName,
    text: String,
}

#[derive(Deserialize)]
struct RichContent {
    #[serde(default)]
    data: MimeBundle,
    #[serde(default)]
    metadata: Map<String, Value>,
    #[serde(default)]
    execution_count: Option<u64>,
}

#[derive(Deserialize)]
struct ClearOutputContent {
    #[serde(default)]
    wait: bool,
}

/// Parse the content of an `execute_reply`.
pub(crate) fn parse_execute_reply(content: Value) -> Result<ExecuteReply, serde_json::Error> {
    #[derive(Deserialize)]
    struct RawReply {
        status: String,
        #[serde(default)]
        execution_count: Option<u64>,
        #[serde(default)]
        ename: Option<String>,
        #[serde(default)]
        evalue: Option<String>,
        #[serde(default)]
        traceback: Option<Vec<String>>,
        #[serde(default)]
        user_expressions: Option<BTreeMap<String, RawExpression>>,
    }
    #[derive(Deserialize)]
    struct RawExpression {
        status: String,
        #[serde(default)]
        data: MimeBundle,
        #[serde(default)]
        metadata: Map<String, Value>,
        #[serde(default)]
        ename: String,
        #[serde(default)]
        evalue: String,
        #[serde(default)]
        traceback: Vec<String>,
    }
    let raw: RawReply = serde_json::from_value(content)?;
    let status = match raw.status.as_str() {
        "ok" => ReplyStatus::Ok,
        "aborted" => ReplyStatus::Aborted,
        _ => ReplyStatus::Error(ErrorInfo {
            ename: raw.ename.unwrap_or_default(),
            evalue: raw.evalue.unwrap_or_default(),
            traceback: raw.traceback.unwrap_or_default(),
        }),
    };
    let user_expressions = raw
        .user_expressions
        .unwrap_or_default()
        .into_iter()
        .map(|(name, expr)| {
            let value = if expr.status == "ok" {
                UserExpression::Value {
                    data: expr.data,
                    metadata: expr.metadata,
                }
            } else {
                UserExpression::Error(ErrorInfo {
                    ename: expr.ename,
                    evalue: expr.evalue,
                    traceback: expr.traceback,
                })
            };
            (name, value)
        })
        .collect();
    Ok(ExecuteReply {
        status,
        execution_count: raw.execution_count,
        user_expressions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stream(collector: &mut OutputCollector, name: &str, text: &str) {
        let content = json!({"name": name, "text": text});
        let len = content.to_string().len();
        collector
            .accept("stream", len, || Ok(content))
            .expect("valid stream");
    }

    #[test]
    fn merges_consecutive_stream_text_and_caps_each_stream() {
        let mut collector = OutputCollector::new(OutputLimits {
            stream_bytes: 10,
            ..OutputLimits::default()
        });
        stream(&mut collector, "stdout", "hello ");
        stream(&mut collector, "stdout", "world, again");
        stream(&mut collector, "stderr", "é".repeat(6).as_str());
        let (outputs, dropped) = collector.finish();
        assert_eq!(
            outputs,
            vec![
                Output::Stream {
                    name: StreamName::Stdout,
                    text: "hello worl".into()
                },
                Output::Stream {
                    name: StreamName::Stderr,
                    text: "ééééé".into()
                },
            ]
        );
        assert_eq!((dropped.stdout_bytes, dropped.stderr_bytes), (8, 2));
        assert_eq!(dropped.stream_bytes(), 8 + 2);
    }

    #[test]
    fn oversized_rich_output_is_dropped_without_parsing() {
        let mut collector = OutputCollector::new(OutputLimits {
            output_bytes: 100,
            ..OutputLimits::default()
        });
        collector
            .accept("display_data", 1_000, || panic!("must not parse"))
            .expect("dropped");
        let (outputs, dropped) = collector.finish();
        assert!(outputs.is_empty());
        assert_eq!((dropped.outputs, dropped.output_bytes), (1, 1_000));
    }

    #[test]
    fn clear_output_wait_clears_on_next_output() {
        let mut collector = OutputCollector::new(OutputLimits::default());
        stream(&mut collector, "stdout", "old");
        collector
            .accept("clear_output", 13, || Ok(json!({"wait": true})))
            .expect("valid");
        stream(&mut collector, "stdout", "new");
        let (outputs, _) = collector.finish();
        assert_eq!(
            outputs,
            vec![Output::Stream {
                name: StreamName::Stdout,
                text: "new".into()
            }]
        );
    }

    #[test]
    fn parses_error_reply_and_user_expressions() {
        let reply = parse_execute_reply(json!({
            "status": "error", "execution_count": 3,
            "ename": "KeyError", "evalue": "'x'", "traceback": ["tb"],
            "user_expressions": {
                "a": {"status": "ok", "data": {"text/plain": "1"}, "metadata": {}},
                "b": {"status": "error", "ename": "NameError", "evalue": "nope", "traceback": []}
            }
        }))
        .expect("valid reply");
        assert_eq!(reply.execution_count, Some(3));
        assert!(matches!(&reply.status, ReplyStatus::Error(e) if e.ename == "KeyError"));
        assert!(matches!(
            &reply.user_expressions["b"],
            UserExpression::Error(e) if e.ename == "NameError"
        ));
    }
}
