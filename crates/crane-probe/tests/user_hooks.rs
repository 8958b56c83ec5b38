//! The user's interpreter hooks (gc callbacks, profile and trace functions, audit hooks,
//! signal handlers) neither break the probe nor run inside it: they are suspended while
//! crane's code runs and put back exactly after, and a signal that arrives meanwhile reaches
//! the user's handler once, after the probe.

mod common;

use std::time::Duration;

use common::{eval_silent, facts, run_cell, start_kernel, var};
use crane_runtime::Kind;

/// The user's hooks count what they see while crane's code runs: a frame of crane's modules
/// other than its message handler's own (whose call and return any hook sees, as for any
/// function a library calls) is on the stack.
const HOOKS: &str = r#"
import gc, signal, sys, os, threading, time
import numpy as np, pandas as pd

df = pd.DataFrame({'a': np.arange(200.0), 'b': ['x', 'y'] * 100})
seen = {'gc': 0, 'profile': 0, 'trace': 0, 'audit': 0, 'alarm': 0, 'alarm_sent_in_crane': 0}
audit_events = []
_auditing = [False]

def _in_crane(frame):
    while frame is not None:
        if frame.f_code.co_filename.startswith('<crane') and frame.f_code.co_name != 'handle':
            return True
        frame = frame.f_back
    return False

def on_gc(phase, info):
    if _in_crane(sys._getframe(1)):
        seen['gc'] += 1

def on_gc_second(phase, info):
    pass

def on_profile(frame, event, arg):
    if _in_crane(frame):
        seen['profile'] += 1

def on_trace(frame, event, arg):
    if _in_crane(frame):
        seen['trace'] += 1
    return on_trace

def on_audit(event, args):
    if _auditing[0]:
        return
    _auditing[0] = True
    try:
        if _in_crane(sys._getframe(1)):
            seen['audit'] += 1
            audit_events.append(event)

    finally:
        _auditing[0] = False

def on_alarm(signum, frame):
    seen['alarm'] += 1

gc.callbacks.append(on_gc)
gc.callbacks.append(on_gc_second)
gc.set_threshold(50, 5, 5)
signal.signal(signal.SIGALRM, on_alarm)
sys.addaudithook(on_audit)
callbacks_list = gc.callbacks
"#;

const INSTALL_PROFILE_AND_TRACE: &str = "sys.setprofile(on_profile)\nsys.settrace(on_trace)";

const SEEN: &str = "__import__('json').dumps(seen)";

fn counts(text: &str) -> serde_json::Value {
    serde_json::from_str(text.trim_matches('\'')).expect("json counts")
}

/// A user gc callback with a low threshold used to kill the kernel (SIGSEGV) on an early
/// check: a collection inside CPython's call of crane's trace function ran the callback, the
/// guard stopped it, CPython dropped its only reference to the trace function and then called
/// it. The kernel survives every check and the facts are there.
#[tokio::test]
async fn a_user_gc_callback_with_a_low_threshold_does_not_crash_the_kernel() {
    let mut kernel = start_kernel().await;
    run_cell(&mut kernel, HOOKS).await;
    // The first call injects the probe: its module's top level runs as any import would.
    facts(&mut kernel, &["df"]).await;
    run_cell(&mut kernel, "seen['gc'] = 0").await;
    for round in 0..6 {
        let info = facts(&mut kernel, &["df", "df.a", "df.b"]).await;
        assert_eq!(
            var(&info, "df").kind,
            Kind::Dataframe,
            "round {round}: {info:#?}"
        );
    }
    let (gc, _) = eval_silent(
        &mut kernel,
        "(gc.callbacks is callbacks_list, gc.callbacks == [on_gc, on_gc_second], gc.isenabled(), gc.get_threshold())",
    )
    .await;
    assert_eq!(gc, "(True, True, True, (50, 5, 5))");
    let (seen, _) = eval_silent(&mut kernel, SEEN).await;
    assert_eq!(
        counts(&seen)["gc"],
        0,
        "gc callbacks ran inside crane: {seen}"
    );
}

/// The user's profile and trace functions see at most the entry of crane's message handler
/// (its call, its first line and the C calls that suspend them), the audit hook only a
/// bounded set of events, and all of them are put back as they were.
#[tokio::test]
async fn the_users_profile_trace_and_audit_hooks_stay_out_of_the_probe() {
    let mut kernel = start_kernel().await;
    run_cell(&mut kernel, HOOKS).await;
    // The first call injects the probe (an execute request the user's hooks see as any
    // client's); what follows goes through crane's own message.
    facts(&mut kernel, &["df"]).await;
    run_cell(&mut kernel, INSTALL_PROFILE_AND_TRACE).await;
    run_cell(&mut kernel, "audit_events.clear()").await;
    let (before, _) = eval_silent(&mut kernel, SEEN).await;
    for _ in 0..3 {
        let info = facts(&mut kernel, &["df", "df.a", "df.b", "df.a.mean"]).await;
        assert_eq!(var(&info, "df").kind, Kind::Dataframe);
    }
    let (after, _) = eval_silent(&mut kernel, SEEN).await;
    let (before, after) = (counts(&before), counts(&after));
    let (events, _) = eval_silent(
        &mut kernel,
        "sorted(__import__('collections').Counter(audit_events).items())",
    )
    .await;
    let grew = |key: &str| after[key].as_i64().unwrap() - before[key].as_i64().unwrap();
    assert_eq!(
        grew("profile"),
        0,
        "profile events in crane: {after} {before}"
    );
    assert_eq!(grew("trace"), 0, "trace events in crane: {after} {before}");
    assert_eq!(grew("gc"), 0, "gc callbacks in crane: {after} {before}");
    // What an audit hook still sees (docs/promises.md): one `compile` for each expression
    // parsed, `sys.settrace` around the guard and each stretch of plain data read without
    // it, and `object.__getattr__` for a function's `__code__` read for its signature.
    assert!(grew("audit") <= 3 * 40, "audit events in crane: {events}");
    let expected = ["compile", "object.__getattr__", "sys.settrace"];
    let (unexpected, _) = eval_silent(
        &mut kernel,
        &format!("sorted(set(audit_events) - set({expected:?}))"),
    )
    .await;
    assert_eq!(unexpected, "[]", "{events}");
    let (hooks, _) = eval_silent(
        &mut kernel,
        "(sys.getprofile() is on_profile, sys.gettrace() is on_trace, signal.getsignal(signal.SIGALRM) is on_alarm)",
    )
    .await;
    assert_eq!(hooks, "(True, True, True)");
    run_cell(&mut kernel, "sys.setprofile(None)\nsys.settrace(None)").await;
}

/// A SIGALRM sent while the probe runs used to reach the user's handler under the guard,
/// which stopped it: the signal was lost and the probe failed. It is held until crane's work
/// is done and then delivered: the handler runs exactly once and the probe answers.
#[tokio::test]
async fn a_signal_during_the_probe_reaches_the_users_handler_once_after_it() {
    let mut kernel = start_kernel().await;
    run_cell(&mut kernel, HOOKS).await;
    facts(&mut kernel, &["df"]).await;
    // A thread of the user's sends the signal as soon as it sees the probe at work on the main
    // thread.
    run_cell(
        &mut kernel,
        r#"
big = pd.DataFrame({f'c{i}': np.arange(20000.0) for i in range(40)})
main_id = threading.main_thread().ident
def send_during_crane():
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        frame = sys._current_frames().get(main_id)
        while frame is not None and frame.f_code.co_name != '_summarize_request':
            frame = frame.f_back
        if frame is not None:
            os.kill(os.getpid(), signal.SIGALRM)
            seen['alarm_sent_in_crane'] += 1
            return
        time.sleep(0.0005)
threading.Thread(target=send_during_crane, daemon=True).start()
"#,
    )
    .await;
    let mut sent = false;
    for _ in 0..40 {
        let info = facts(&mut kernel, &["big", "df", "df.b"]).await;
        assert_eq!(var(&info, "big").kind, Kind::Dataframe, "{info:#?}");
        let (seen, _) = eval_silent(&mut kernel, SEEN).await;
        if counts(&seen)["alarm_sent_in_crane"] == 1 {
            sent = true;
            break;
        }
    }
    assert!(sent, "the signal never came while crane ran");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (seen, _) = eval_silent(&mut kernel, SEEN).await;
    assert_eq!(counts(&seen)["alarm"], 1, "{seen}");
    let (handler, _) =
        eval_silent(&mut kernel, "signal.getsignal(signal.SIGALRM) is on_alarm").await;
    assert_eq!(handler, "True");
}
