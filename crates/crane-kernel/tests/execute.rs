//! Executing code in a real ipykernel started by crane: outputs, errors, silent runs,
//! user expressions, output limits, timeouts with interrupt, and kernel death.

mod common;

use std::time::Duration;

use crane_kernel::{
    DeathCause, ExecuteOptions, ExecutionOutcome, KernelError, KernelLaunch, KernelOrigin, Output,
    OutputLimits, OwnedKernel, ReplyStatus, StartOptions, StreamName, UserExpression,
};

#[tokio::test]
async fn collects_streams_display_data_and_result() {
    let mut kernel = common::start_kernel().await;
    let pid = kernel.pid();
    assert_eq!(kernel.kernel_info().language, "python");
    assert!(kernel.kernel_info().protocol_version.starts_with('5'));

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
    assert!(execution.outputs.iter().any(|output| matches!(output,
        Output::DisplayData { data, .. }
            if data.get("text/html").and_then(|v| v.as_str()) == Some("<b>hi</b>"))));
    assert!(execution.outputs.iter().any(|output| matches!(
        output,
        Output::ExecuteResult {
            execution_count: Some(1),
            ..
        }
    )));
    assert_eq!(execution.result_text(), Some("42"));
    assert!(execution.dropped.is_nothing());

    kernel.shutdown().await.expect("shutdown");
    assert!(common::wait_gone(pid), "kernel {pid} still running");
}

#[tokio::test]
async fn captures_exceptions_with_name_value_and_traceback() {
    let mut kernel = common::start_kernel().await;
    let execution = kernel
        .execute("d = {'a': 1}\nd['missing']", &ExecuteOptions::cell())
        .await
        .expect("execute");
    let error = execution.error().expect("an error");
    assert_eq!(error.ename, "KeyError");
    assert_eq!(error.evalue, "'missing'");
    let traceback = error.plain_traceback();
    assert!(
        traceback.iter().any(|line| line == "----> 2 d['missing']"),
        "{traceback:?}"
    );
    assert_eq!(error.cell_line(), Some(2));
    assert!(matches!(
        &execution.reply().expect("reply").status,
        ReplyStatus::Error(reply_error) if reply_error.ename == "KeyError"
    ));
    assert!(execution
        .outputs
        .iter()
        .any(|output| matches!(output, Output::Error(e) if e.ename == "KeyError")));
    kernel.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn silent_execution_leaves_count_and_history_unchanged() {
    let mut kernel = common::start_kernel().await;
    let first = kernel
        .execute("x = 1", &ExecuteOptions::cell())
        .await
        .expect("cell");
    assert_eq!(first.reply().and_then(|r| r.execution_count), Some(1));

    let silent = kernel
        .execute("y = x + 1\ny", &ExecuteOptions::silent())
        .await
        .expect("silent");
    assert_eq!(silent.reply().map(|r| &r.status), Some(&ReplyStatus::Ok));
    assert_eq!(silent.result_text(), None, "silent code shows no result");

    let probe = ExecuteOptions::cell()
        .with_user_expression("history", "len(In)")
        .with_user_expression("y", "y");
    let next = kernel.execute("z = 3", &probe).await.expect("cell");
    let reply = next.reply().expect("reply");
    assert_eq!(
        reply.execution_count,
        Some(2),
        "the silent run was not counted"
    );
    assert_eq!(text_plain(&reply.user_expressions["y"]), "2");
    // `In` holds an empty entry 0, then one entry per counted cell.
    assert_eq!(text_plain(&reply.user_expressions["history"]), "3");
    kernel.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn returns_user_expressions_and_their_errors() {
    let mut kernel = common::start_kernel().await;
    let options = ExecuteOptions::silent()
        .with_user_expression("double", "a * 2")
        .with_user_expression("broken", "undefined_name + 1");
    let execution = kernel.execute("a = 21", &options).await.expect("execute");
    let reply = execution.reply().expect("reply");
    assert_eq!(text_plain(&reply.user_expressions["double"]), "42");
    assert!(matches!(
        &reply.user_expressions["broken"],
        UserExpression::Error(error) if error.ename == "NameError"
    ));
    kernel.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn bounds_collected_output() {
    let mut kernel = common::start_kernel().await;
    let mut options = ExecuteOptions::cell();
    options.limits = OutputLimits {
        stream_bytes: 100_000,
        output_bytes: 10_000,
        total_output_bytes: 100_000,
    };
    let execution = kernel
        .execute(
            "from IPython.display import display, HTML\n\
             for _ in range(10):\n    print('x' * 99_999)\n\
             display(HTML('y' * 20_000))\n\
             display(HTML('small'))",
            &options,
        )
        .await
        .expect("execute");
    let stdout = execution.stream_text(StreamName::Stdout);
    assert_eq!(stdout.len(), 100_000);
    assert_eq!(execution.dropped.stream_bytes(), 10 * 100_000 - 100_000);
    assert_eq!(execution.dropped.outputs, 1, "the large display is dropped");
    assert!(execution.outputs.iter().any(|output| matches!(output,
        Output::DisplayData { data, .. } if data.get("text/html").and_then(|v| v.as_str()) == Some("small"))));
    kernel.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn timeout_interrupts_by_signal_and_kernel_stays_usable() {
    let mut kernel = common::start_kernel().await;
    assert_timeout_then_usable(&mut kernel).await;
    kernel.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn timeout_interrupts_by_message_when_the_kernelspec_asks() {
    let specs = tempfile::tempdir().expect("tempdir");
    let spec_dir = specs.path().join("py-message");
    std::fs::create_dir_all(&spec_dir).expect("mkdir");
    let kernel_json = serde_json::json!({
        "argv": [common::project_python(), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python (message interrupt)",
        "language": "python",
        "interrupt_mode": "message",
    });
    std::fs::write(spec_dir.join("kernel.json"), kernel_json.to_string()).expect("write");
    let launch = KernelLaunch::from_kernelspec("py-message", &spec_dir, KernelOrigin::KernelFlag)
        .expect("kernelspec");
    assert_eq!(launch.interrupt_mode, crane_kernel::InterruptMode::Message);
    let mut kernel = OwnedKernel::start(&launch, &StartOptions::default())
        .await
        .expect("start");
    assert_timeout_then_usable(&mut kernel).await;
    kernel.shutdown().await.expect("shutdown");
}

async fn assert_timeout_then_usable(kernel: &mut OwnedKernel) {
    let options = ExecuteOptions::cell().with_timeout(Duration::from_millis(1500));
    let execution = kernel
        .execute("import time\nprint('before')\ntime.sleep(60)", &options)
        .await
        .expect("execute");
    let ExecutionOutcome::TimedOut { after, reply } = &execution.outcome else {
        panic!("expected a timeout: {execution:?}");
    };
    assert_eq!(*after, Duration::from_millis(1500));
    let reply = reply
        .as_ref()
        .expect("the kernel replied after the interrupt");
    assert!(matches!(&reply.status, ReplyStatus::Error(e) if e.ename == "KeyboardInterrupt"));
    assert_eq!(execution.stream_text(StreamName::Stdout), "before\n");

    let next = kernel
        .execute("1 + 1", &ExecuteOptions::cell())
        .await
        .expect("execute after timeout");
    assert_eq!(next.result_text(), Some("2"));
    assert!(matches!(next.outcome, ExecutionOutcome::Finished(_)));
}

#[tokio::test]
async fn timeout_fires_while_the_kernel_floods_output() {
    let mut kernel = common::start_kernel().await;
    let mut options = ExecuteOptions::cell().with_timeout(Duration::from_secs(2));
    options.limits.stream_bytes = 10_000;
    let execution = kernel
        .execute("while True:\n    print('x' * 1000)", &options)
        .await
        .expect("execute");
    assert!(execution.timed_out(), "{:?}", execution.outcome);
    assert_eq!(
        execution.error().map(|e| e.ename.as_str()),
        Some("KeyboardInterrupt")
    );
    assert_eq!(execution.stream_text(StreamName::Stdout).len(), 10_000);
    assert!(execution.dropped.stream_bytes() > 0);
    let next = kernel
        .execute("'ok'", &ExecuteOptions::cell())
        .await
        .expect("execute after the flood");
    assert_eq!(next.result_text(), Some("'ok'"));
    kernel.shutdown().await.expect("shutdown");
}

#[tokio::test]
async fn process_exit_during_execute_is_kernel_death() {
    let mut kernel = common::start_kernel().await;
    let pid = kernel.pid();
    let error = kernel
        .execute(
            "import os, sys\nsys.stderr.write('last words\\n'); sys.stderr.flush()\nos._exit(1)",
            &ExecuteOptions::cell(),
        )
        .await
        .expect_err("kernel death");
    let KernelError::KernelDied { cause, .. } = &error else {
        panic!("expected KernelDied, got {error}");
    };
    let DeathCause::Exited(death) = cause else {
        panic!("expected a process exit, got {cause}");
    };
    assert_eq!(death.status.code(), Some(1));
    assert!(error.is_kernel_death());
    assert!(error.to_string().contains("exited with code 1"), "{error}");
    assert!(error.to_string().contains("os._exit(1)"), "{error}");

    let again = kernel
        .execute("1", &ExecuteOptions::cell())
        .await
        .expect_err("still dead");
    assert!(again.is_kernel_death());
    drop(kernel);
    assert!(common::wait_gone(pid));
}

fn text_plain(expression: &UserExpression) -> &str {
    match expression {
        UserExpression::Value { data, .. } => data
            .get("text/plain")
            .and_then(|v| v.as_str())
            .expect("text/plain"),
        UserExpression::Error(error) => panic!("expression failed: {error:?}"),
    }
}

/// A request of a type ipykernel does not know comes back `Unhandled` once the kernel goes idle
/// (no reply ever comes, and crane must not wait for one); with a handler installed it comes
/// back with the handler's reply, and a handler that runs too long is interrupted like a cell.
#[tokio::test]
async fn custom_requests_are_answered_by_their_handler_or_seen_unhandled() {
    let mut kernel = common::start_kernel().await;
    let request = |timeout: Duration| crane_kernel::CustomRequest {
        msg_type: "echo_request".into(),
        content: serde_json::json!({"text": "hello", "sleep": 0}),
        timeout,
        interrupt_grace: Duration::from_secs(10),
    };
    let outcome = kernel
        .request(&request(Duration::from_secs(30)))
        .await
        .expect("request");
    assert_eq!(outcome, crane_kernel::CustomOutcome::Unhandled);

    let install = "import time\n\
        k = get_ipython().kernel\n\
        def echo(stream, ident, parent):\n    \
            time.sleep(parent['content']['sleep'])\n    \
            k.session.send(stream, 'echo_reply', {'text': parent['content']['text'].upper()}, parent, ident)\n\
        k.shell_handlers['echo_request'] = echo";
    let execution = kernel
        .execute(install, &ExecuteOptions::cell())
        .await
        .expect("execute");
    assert!(execution.error().is_none(), "{execution:?}");
    let outcome = kernel
        .request(&request(Duration::from_secs(30)))
        .await
        .expect("request");
    assert_eq!(
        outcome,
        crane_kernel::CustomOutcome::Replied(serde_json::json!({"text": "HELLO"}))
    );

    let mut slow = request(Duration::from_millis(500));
    slow.content["sleep"] = serde_json::json!(60);
    let outcome = kernel.request(&slow).await.expect("request");
    assert!(
        matches!(outcome, crane_kernel::CustomOutcome::TimedOut { .. }),
        "{outcome:?}"
    );
    // The interrupted handler left the kernel usable.
    let execution = kernel
        .execute("1 + 1", &ExecuteOptions::cell())
        .await
        .expect("execute");
    assert_eq!(execution.result_text(), Some("2"));
    kernel.shutdown().await.expect("shutdown");
}
