//! `crane check --existing`: judging a cell against a kernel someone else started leaves that
//! kernel running and its user state exactly as it was.

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{crane, python, run_python, stderr, stdout};

struct ForeignKernel(Child);

impl Drop for ForeignKernel {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A kernel started the way JupyterLab would start one, with its connection file in `dir`.
fn foreign_kernel(dir: &std::path::Path) -> (ForeignKernel, std::path::PathBuf) {
    let connection = dir.join("kernel-test.json");
    let child = Command::new(python())
        .args(["-m", "ipykernel_launcher", "-f"])
        .arg(&connection)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start a kernel");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !connection.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    (ForeignKernel(child), connection)
}

const CLIENT: &str = r#"
import json, sys
from jupyter_client import BlockingKernelClient
c = BlockingKernelClient()
c.load_connection_file(sys.argv[1])
c.start_channels()
c.wait_for_ready(timeout=60)
def ask(code, silent, expressions=None):
    msg_id = c.execute(code, silent=silent, store_history=not silent, user_expressions=expressions or {})
    while True:
        reply = c.get_shell_msg(timeout=120)
        if reply['parent_header'].get('msg_id') == msg_id:
            return reply['content']
if sys.argv[2] == 'setup':
    content = ask("import numpy as np\nimport pandas as pd\ndf = pd.DataFrame({'a': [1.0, 2.0, None]})\narr = np.arange(6)\nnp.random.seed(7)\ndf", False)
    assert content['status'] == 'ok', content
else:
    snapshot = ("__import__('json').dumps({"
        "'keys': sorted(k for k in get_ipython().user_ns if not k.startswith('_i')),"
        "'count': get_ipython().execution_count,"
        "'history': len(get_ipython().history_manager.input_hist_raw),"
        "'underscore': repr(get_ipython().user_ns.get('_')),"
        "'df': df.to_json(), 'arr': arr.tolist(),"
        "'rng': int(np.random.get_state()[2]), 'rng_key': int(np.random.get_state()[1][0]),"
        "'ids': [id(df), id(arr)]})")
    content = ask('', True, {'s': snapshot})
    print(content['user_expressions']['s']['data']['text/plain'])
"#;

#[test]
fn attached_check_leaves_the_kernel_running_and_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let (mut kernel, connection) = foreign_kernel(dir.path());
    let conn = connection.to_str().unwrap();
    run_python(CLIENT, &[conn, "setup"]);
    let before = run_python(CLIENT, &[conn, "snapshot"]);

    let output = crane(&[
        "check",
        "--existing",
        conn,
        "--code",
        "df['missing'].mean()",
        "--format",
        "json",
        "--quiet",
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["verdict"]["exception"], "KeyError");
    let passing = crane(&[
        "check",
        "--existing",
        conn,
        "--code",
        "arr.reshape(2, 3)",
        "--quiet",
    ]);
    assert_eq!(
        passing.status.code(),
        Some(0),
        "{}{}",
        stdout(&passing),
        stderr(&passing)
    );

    assert!(
        kernel.0.try_wait().unwrap().is_none(),
        "crane must not stop a kernel it did not start"
    );
    let after = run_python(CLIENT, &[conn, "snapshot"]);
    assert_eq!(before, after, "the user's kernel state changed");
    assert!(
        before.contains("\"arr\": [0, 1, 2, 3, 4, 5]"),
        "snapshot reads the state: {before}"
    );
}

/// SIGTERM (or Ctrl-C) to `crane check --existing` while crane's own dry run holds the user's
/// kernel: crane interrupts its request and exits, and the kernel is free again at once rather
/// than busy for the rest of the dry run.
#[test]
fn a_stopped_attached_check_frees_the_kernel_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let (_kernel, connection) = foreign_kernel(dir.path());
    let conn = connection.to_str().unwrap();
    run_python(CLIENT, &[conn, "setup"]);

    let check = common::crane_command(&[
        "check",
        "--existing",
        conn,
        "--code",
        // Stopped at the first budget, then run again abridged: both sleeps still run.
        "import time\nfor _ in range(2):\n    time.sleep(60)",
        "--dry-run",
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .expect("run crane");
    // Long enough for the dry run to have started in the kernel.
    std::thread::sleep(Duration::from_secs(6));
    let sent = Command::new("kill")
        .args(["-TERM", &check.id().to_string()])
        .status()
        .expect("kill");
    assert!(sent.success());
    let output = check.wait_with_output().expect("crane exits");
    assert_eq!(output.status.code(), Some(143), "{}", stderr(&output));

    let asked = Instant::now();
    run_python(CLIENT, &[conn, "snapshot"]);
    assert!(
        asked.elapsed() < Duration::from_secs(20),
        "the kernel stayed busy with crane's dry run for {:?}",
        asked.elapsed()
    );
}

const HOOKED_CLIENT: &str = r#"
import json, sys
from jupyter_client import BlockingKernelClient
c = BlockingKernelClient()
c.load_connection_file(sys.argv[1])
c.start_channels()
c.wait_for_ready(timeout=60)
def ask(code, silent, expressions=None):
    msg_id = c.execute(code, silent=silent, store_history=not silent, user_expressions=expressions or {})
    while True:
        reply = c.get_shell_msg(timeout=120)
        if reply['parent_header'].get('msg_id') == msg_id:
            return reply['content']
if sys.argv[2] == 'setup':
    content = ask('''
import numpy as np
arr = np.arange(6)
ip = get_ipython()
hooked = []
def _who():
    # crane's requests are the ones whose user expressions are crane's.
    try:
        return ' '.join(ip.kernel.get_parent()['content'].get('user_expressions', {}))
    except Exception:
        return '?'
def count_transform(lines):
    hooked.append(('transform', _who()))
    return lines
ip.input_transformers_cleanup.append(count_transform)
ip.events.register('pre_execute', lambda: hooked.append(('pre_execute', _who())))
ip.events.register('post_execute', lambda: hooked.append(('post_execute', _who())))
def count_format(obj, p, cycle):
    hooked.append(('format', _who()))
    p.text(repr(obj))
ip.display_formatter.formatters['text/plain'].for_type(str, count_format)
ip.display_formatter.formatters['text/plain'].for_type(object, count_format)
''', False)
    assert content['status'] == 'ok', content
else:
    content = ask('', True, {'s': "__import__('json').dumps(sorted(k for k, who in hooked if 'crane_' in who))"})
    print(content['user_expressions']['s']['data']['text/plain'])
"#;

/// Every `--existing` session used to open with silent execute requests, which run the user's
/// input transformers, `post_execute` callbacks and display formatters. crane's own message
/// goes first: only the first attach to a kernel crane never touched injects through execute
/// requests; every later attach runs none of the user's hooks.
#[test]
fn later_attaches_run_none_of_the_users_ipython_hooks() {
    let dir = tempfile::tempdir().unwrap();
    let (_kernel, connection) = foreign_kernel(dir.path());
    let conn = connection.to_str().unwrap();
    run_python(HOOKED_CLIENT, &[conn, "setup"]);
    let check = || {
        let output = crane(&[
            "check",
            "--existing",
            conn,
            "--code",
            "arr.reshape(2, 3)",
            "--quiet",
        ]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    };
    check();
    let first = run_python(HOOKED_CLIENT, &[conn, "count"]);
    check();
    check();
    let later = run_python(HOOKED_CLIENT, &[conn, "count"]);
    assert!(
        first.contains("transform"),
        "the injection is counted: {first}"
    );
    assert_eq!(first, later, "later attaches ran the user's hooks");
    assert!(
        !first.contains("pre_execute"),
        "the injection ran pre_execute: {first}"
    );
}
