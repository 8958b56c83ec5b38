//! A snapshot that takes over, seen from outside the kernel: the kernel it made dies with the
//! process that asked for it when that one is killed outright, though a child subreaper (as
//! systemd --user is) adopted it.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::project_python;

use crane_kernel::{
    ExecuteOptions, KernelLaunch, KernelOrigin, KernelSession, Output, OwnedKernel, ReplyStatus,
    StartOptions,
};
use crane_probe::snapshot::{take, Taken};
use rustix::process::{kill_process, set_child_subreaper, Pid, Signal};

async fn start() -> (KernelSession, u32) {
    let launch = KernelLaunch::python(project_python(), KernelOrigin::PythonFlag);
    let kernel = OwnedKernel::start(&launch, &StartOptions::default())
        .await
        .expect("kernel starts");
    let pid = kernel.pid();
    (kernel.into(), pid)
}

/// Run a cell; it must succeed; its stdout.
async fn cell(session: &mut KernelSession, code: &str) -> String {
    let execution = session
        .execute(
            code,
            &ExecuteOptions::cell().with_timeout(Duration::from_secs(120)),
        )
        .await
        .expect("execute");
    let reply = execution.reply().expect("reply");
    assert_eq!(reply.status, ReplyStatus::Ok, "{code}: {execution:?}");
    execution
        .outputs
        .iter()
        .filter_map(|output| match output {
            Output::Stream { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

async fn snapshot(session: &mut KernelSession) -> (u32, std::path::PathBuf) {
    match take(session, &[]).await.expect("take").taken {
        Taken::Snapshot { pid, socket, .. } => (pid, socket),
        Taken::Refused { reasons } => panic!("refused: {reasons:?}"),
    }
}

/// `(state, parent)` of a process; `None` once it is reaped.
fn process(pid: u32) -> Option<(char, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some((fields[0].chars().next()?, fields[1].parse().ok()?))
}

fn alive(pid: u32) -> bool {
    process(pid).is_some_and(|(state, _)| state != 'Z')
}

fn kill(pid: u32) {
    if let Some(pid) = Pid::from_raw(pid as i32) {
        let _ = kill_process(pid, Signal::KILL);
    }
}

/// A stand-in for the proxy: asks the snapshot at `argv[1]` to take over, prints its answer,
/// and waits to be killed.
const ASKER: &str = "import socket, sys, time\n\
s = socket.socket(socket.AF_UNIX)\ns.connect(sys.argv[1])\ns.sendall(b'takeover\\n')\n\
sys.stdout.write(s.makefile().readline())\nsys.stdout.flush()\ntime.sleep(600)\n";

#[tokio::test]
async fn a_kernel_a_takeover_made_dies_with_the_process_that_asked_under_a_subreaper() {
    // As systemd --user or a supervisor is: orphans below this process come to it, not init.
    set_child_subreaper(Some(rustix::process::getpid())).expect("a child subreaper");
    let (mut session, kernel_pid) = start().await;
    cell(&mut session, "x = 1").await;
    let (pid, socket) = snapshot(&mut session).await;
    let mut asker = Command::new(project_python())
        .args(["-c", ASKER])
        .arg(&socket)
        .stdout(Stdio::piped())
        .spawn()
        .expect("the asker starts");
    let mut answer = String::new();
    BufReader::new(asker.stdout.take().expect("its stdout"))
        .read_line(&mut answer)
        .expect("an answer");
    let answer: serde_json::Value = serde_json::from_str(&answer).expect("JSON");
    assert_eq!(answer["status"], "serving", "{answer}");
    let connection_file = answer["connection_file"]
        .as_str()
        .expect("a connection file")
        .to_owned();
    // The kernel it replaces goes, as the proxy ends it: the new one lives on, adopted.
    kill(kernel_pid);
    drop(session);
    let deadline = Instant::now() + Duration::from_secs(10);
    while process(pid).is_some_and(|(_, parent)| parent == kernel_pid) && Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        alive(pid),
        "the new kernel died with the kernel it replaced"
    );
    assert_eq!(
        process(pid).map(|(_, parent)| parent),
        Some(std::process::id()),
        "adopted by the subreaper"
    );
    // The asker is killed outright: the new kernel follows, and removes its files.
    asker.kill().expect("killed");
    asker.wait().expect("reaped");
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(pid) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        !alive(pid),
        "the new kernel outlived the process that asked for it"
    );
    if let Some(pid) = Pid::from_raw(pid as i32) {
        let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty());
    }
    assert!(
        !Path::new(&connection_file).exists(),
        "{connection_file} is left"
    );
}
