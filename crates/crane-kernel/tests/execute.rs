//! Executing code in a real ipykernel started by crane.

mod common;

use std::time::Duration;

use crane_kernel::{ExecuteOptions, ExecutionOutcome, Output, ReplyStatus, StreamName};

#[tokio::test]
async fn collects_streams_display_data_and_result() {
    let mut kernel = common::start_kernel().await;
    let pid = kernel.pid();
    assert_eq!(kernel.kernel_info().language, "python");

    let execution = kernel
        .execute(
            "import sys\nfrom IPython.display import display, HTML\n\
             print('out line')\nprint('err line', file=sys.stderr)\n\
             display(HTML('<b>hi</b>'))\n6 * 7",
            &ExecuteOptions::cell(),
        )
        .await
        .expect("execute");
    let ExecutionOutcome::Finished(reply) = &execution.outcome else {
        panic!("not finished: {execution:?}");
    };
    assert_eq!(reply.status, ReplyStatus::Ok);
    assert_eq!(reply.execution_count, Some(1));
    assert_eq!(execution.stream_text(StreamName::Stdout), "out line\n");
    assert_eq!(execution.stream_text(StreamName::Stderr), "err line\n");
    assert!(execution.outputs.iter().any(|o| matches!(o,
        Output::DisplayData { data, .. } if data.get("text/html").and_then(|v| v.as_str()) == Some("<b>hi</b>"))));
    assert_eq!(execution.result_text(), Some("42"));
    assert!(execution.dropped.is_nothing());

    kernel.shutdown().await.expect("shutdown");
    assert!(common::wait_gone(pid), "kernel {pid} still running");
}
