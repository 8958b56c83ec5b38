//! crane's own messages to the frontend, as a kernel sends them: a reply with its busy,
//! outputs and idle, an error, an abort, and crane's lines under a request.

use bytes::Bytes;
use jupyter_protocol::{
    DisplayData, ErrorOutput, ExecuteReply, ExecutionCount, Header, JupyterMessage,
    JupyterMessageContent, Media, MediaType, ReplyError, ReplyStatus, Status,
};

use super::queue::Queued;
use super::wire::send;
use super::Proxy;
use crate::check::CraneError;

impl Proxy {
    /// crane's error as the output of the cell whose header is `raw_header`.
    pub(super) async fn publish_error_under(&mut self, raw_header: &Bytes, error: CraneError) {
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

    /// A line of crane's under the request whose header is `raw_header`.
    pub(super) async fn publish_under(&mut self, raw_header: &Bytes, text: &str) {
        let mut parent = JupyterMessage::new(Status::idle(), None);
        if let Ok(header) = serde_json::from_slice::<Header>(raw_header) {
            parent.header = header;
        }
        let data = Media::new(vec![MediaType::Plain(text.to_owned())]);
        self.publish(JupyterMessage::new(DisplayData::new(data), Some(&parent)))
            .await;
    }

    /// A message to the frontend, as the kernel would send it, answering `head`.
    pub(super) fn reply_to(
        &self,
        head: &Queued,
        content: impl Into<JupyterMessageContent>,
    ) -> JupyterMessage {
        let mut parent = JupyterMessage::new(Status::idle(), None);
        if let Ok(header) = serde_json::from_slice::<Header>(&head.parsed.raw_header) {
            parent.header = header;
        }
        parent.zmq_identities = head.parsed.identities.clone();
        JupyterMessage::new(content, Some(&parent))
    }

    pub(super) async fn publish(&mut self, message: JupyterMessage) {
        let mut message = message;
        message.zmq_identities = Vec::new();
        send(&mut self.front.iopub, message, "frontend iopub").await;
    }

    /// Busy, then `during`, the reply, idle: what a kernel sends for a request it handled.
    pub(super) async fn answer(
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

    pub(super) async fn answer_error(
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
        let stop_on_error = head.execute.as_ref().is_none_or(|e| e.stop_on_error);
        self.state.shell.failed(stop_on_error);
    }

    pub(super) async fn answer_aborted(&mut self, head: &Queued) {
        let reply = ExecuteReply {
            status: ReplyStatus::Aborted,
            execution_count: ExecutionCount::new(self.state.execution_count),
            payload: Vec::new(),
            user_expressions: None,
            error: None,
        };
        self.answer(head, Vec::new(), reply).await;
    }

    pub(super) async fn display(&mut self, head: &Queued, text: &str) {
        let data = Media::new(vec![MediaType::Plain(text.to_owned())]);
        self.publish(self.reply_to(head, DisplayData::new(data)))
            .await;
    }
}
