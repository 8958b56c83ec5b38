//! A snapshot that takes over, seen from outside the kernel: the files the kernel holds open get
//! the offsets they had when the snapshot was taken and no output twice (real files, written
//! in `w` and `a` modes, read through a descriptor), the return names what it cannot give back,
//! and the kernel it made dies with the process that asked for it when that one is killed
//! outright, though a child subreaper (as systemd --user is) adopted it. A snapshot asked for
//! at a socket the caller named is found there after its kernel died.

mod common;

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{cell_stdout, project_python, start_with_pid};

use crane_kernel::{AttachOptions, AttachedKernel, CustomOutcome, CustomRequest, KernelSession};
use crane_probe::snapshot::{
    prepare, read_take_reply, remove_snapshot_directory, snapshot_at, take, take_message,
    take_over, take_socket, Taken, TakeoverError,
};
use rustix::process::{kill_process, set_child_subreaper, Pid, Signal};

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

/// End the kernel `pid` a takeover made, as the proxy does: killed, it removes nothing itself,
/// so its directory (with its connection file, `connection_file`) is removed for it.
fn end_taken_over(pid: u32, connection_file: &Path) {
    kill(pid);
    remove_snapshot_directory(connection_file.parent().expect("a directory"));
    assert!(!connection_file.exists(), "{}", connection_file.display());
}

fn python_str(path: &Path) -> String {
    format!("{:?}", path.to_str().expect("a UTF-8 path"))
}

#[tokio::test]
async fn a_takeover_gives_open_files_their_offsets_back_and_writes_nothing_twice() {
    let dir = tempfile::tempdir().expect("a directory");
    let log = dir.path().join("train.log");
    let runs = dir.path().join("runs.log");
    let data = dir.path().join("data.txt");
    std::fs::write(&data, "0123456789").expect("data");
    let (mut session, kernel_pid) = start_with_pid().await;
    // The crane kernel prepares its kernel before the first cell: what is open then is the
    // kernel's own, and a rollback's line does not name it.
    prepare(&mut session).await.expect("prepared");
    cell_stdout(
        &mut session,
        &format!(
            "import os, subprocess\n\
             log = open({log}, 'w')\nruns = open({runs}, 'a')\nfd = os.open({data}, os.O_RDONLY)\n\
             feed = subprocess.Popen(['cat', {data}], stdout=subprocess.PIPE)\n\
             log.write('epoch 1 done\\n')\nruns.write('run 1\\n')\nprint(os.read(fd, 2))",
            log = python_str(&log),
            runs = python_str(&runs),
            data = python_str(&data),
        ),
    )
    .await;
    // Before the snapshot: both lines wait in their file objects' buffers, nothing on disk.
    assert_eq!(std::fs::read_to_string(&log).expect("log"), "");
    let (pid, socket) = snapshot(&mut session).await;
    // The cell the snapshot was taken for: it writes its own lines and flushes the earlier
    // ones, reads on, then fails.
    assert_eq!(
        cell_stdout(
            &mut session,
            "log.write('epoch 2 done\\n'); log.flush()\nruns.write('run 2\\n'); runs.flush()\n\
             print(os.read(fd, 3), feed.stdout.read(4))"
        )
        .await,
        "b'234' b'0123'\n"
    );
    assert_eq!(
        std::fs::read_to_string(&log).expect("log"),
        "epoch 1 done\nepoch 2 done\n"
    );
    let took = tokio::task::spawn_blocking(move || take_over(&socket, Duration::from_secs(60)))
        .await
        .expect("join")
        .expect("takes over");
    assert_eq!(took.pid, pid);
    let named = took.not_given_back.join("\n");
    assert!(
        named.contains(&format!(
            "the file {} keeps what was written to it since (26 bytes, 0 before; its position is back at byte 0)",
            log.display()
        )),
        "{named}"
    );
    assert!(
        named.contains(&format!("the file {}", runs.display()))
            && named.contains("writes to it go to its end"),
        "{named}"
    );
    assert!(
        named.contains("what was read since from the pipe"),
        "{named}"
    );
    assert!(
        !named.contains("data.txt"),
        "a file only read is given back: {named}"
    );
    assert!(took.sentence().contains("a rollback cannot give back"));
    // As the proxy does once it switched: the kernel it replaces is killed outright.
    kill(kernel_pid);
    drop(session);
    let attached = AttachedKernel::attach_file(&took.connection_file, &AttachOptions::default())
        .await
        .expect("attach");
    let mut new: KernelSession = attached.into();
    // The user's fixed cell: the descriptor reads on from where it was at the snapshot, the
    // file written in `w` mode gets 'epoch 1' where it was to go, the appended one gets
    // 'run 1' no second time.
    assert_eq!(
        cell_stdout(
            &mut new,
            "log.write('epoch 2 done (fixed)\\n'); log.flush()\n\
             runs.write('run 2 (fixed)\\n'); runs.flush()\nprint(os.read(fd, 3))"
        )
        .await,
        "b'234'\n"
    );
    assert_eq!(
        std::fs::read_to_string(&log).expect("log"),
        "epoch 1 done\nepoch 2 done (fixed)\n"
    );
    assert_eq!(
        std::fs::read_to_string(&runs).expect("runs"),
        "run 1\nrun 2\nrun 2 (fixed)\n"
    );
    // A second return, from a snapshot of the kernel the first made: what that kernel opened
    // for itself (its sockets, its history database's connection) is not named.
    let (second, socket) = snapshot(&mut new).await;
    cell_stdout(&mut new, "x = 2\nprint(x)").await;
    let again = tokio::task::spawn_blocking(move || take_over(&socket, Duration::from_secs(60)))
        .await
        .expect("join")
        .expect("takes over again");
    assert!(
        again
            .not_given_back
            .iter()
            .all(|phrase| phrase.contains("from the pipe")),
        "{:?}",
        again.not_given_back
    );
    new.close().await.expect("detached");
    end_taken_over(pid, &took.connection_file);
    end_taken_over(second, &again.connection_file);
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
    let (mut session, kernel_pid) = start_with_pid().await;
    cell_stdout(&mut session, "x = 1").await;
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

/// Ask for a snapshot at a socket this test names, as the crane kernel does for the cell it
/// sends right behind the request; the reply's take, or why there is none.
async fn take_at(session: &mut KernelSession, socket: &Path) -> Taken {
    let (msg_type, content) = take_message(&[], socket);
    let request = CustomRequest {
        msg_type: msg_type.into(),
        content,
        timeout: Duration::from_secs(30),
        interrupt_grace: Duration::from_secs(1),
    };
    match session.request(&request).await.expect("request") {
        CustomOutcome::Replied(reply) => read_take_reply(&reply).expect("an answer").taken,
        other => panic!("no reply: {other:?}"),
    }
}

/// A kernel can die in the cell sent right behind a take before the take's reply leaves it
/// (the reply waits in the kernel's send queue). The snapshot it forked is found at the socket
/// the request named, without that reply, and takes over with the state before the cell; a
/// name that is already there is refused and left as it was; where no snapshot listens, the
/// finder says it cannot reach one.
#[tokio::test]
async fn a_snapshot_at_a_named_socket_is_found_after_its_kernel_died() {
    let (mut session, kernel_pid) = start_with_pid().await;
    prepare(&mut session).await.expect("prepared");
    cell_stdout(&mut session, "x = 41").await;
    let socket = take_socket();
    let Taken::Snapshot {
        pid, socket: at, ..
    } = take_at(&mut session, &socket).await
    else {
        panic!("refused");
    };
    assert_eq!(at, socket, "the snapshot listens where the request said");
    let mode = std::fs::metadata(socket.parent().expect("a directory"))
        .expect("the directory")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700, "a private directory");
    cell_stdout(&mut session, "x += 1").await;
    kill(kernel_pid);
    let finding = socket.clone();
    let found = tokio::task::spawn_blocking(move || snapshot_at(&finding, Duration::from_secs(10)))
        .await
        .expect("join")
        .expect("the snapshot answers at its socket");
    assert_eq!(found, pid);
    let taking = socket.clone();
    let took = tokio::task::spawn_blocking(move || take_over(&taking, Duration::from_secs(60)))
        .await
        .expect("join")
        .expect("takes over");
    assert_eq!(took.pid, pid);
    let attached = AttachedKernel::attach_file(&took.connection_file, &AttachOptions::default())
        .await
        .expect("attach to the kernel the snapshot became");
    let mut new: KernelSession = attached.into();
    assert_eq!(cell_stdout(&mut new, "print(x)").await, "41\n");

    let taken = tempfile::tempdir().expect("a directory");
    std::fs::write(taken.path().join("kept"), "mine").expect("a file");
    let refused = take_at(&mut new, &taken.path().join("control")).await;
    let Taken::Refused { reasons } = refused else {
        panic!("a snapshot in a directory that was there: {refused:?}");
    };
    assert!(
        reasons.iter().any(|reason| reason.contains("File exists")),
        "{reasons:?}"
    );
    assert_eq!(
        std::fs::read_to_string(taken.path().join("kept")).expect("kept"),
        "mine"
    );
    assert!(!taken.path().join("control").exists());

    // A socket in a directory others may enter is not asked, whatever listens there.
    let open = tempfile::tempdir().expect("a directory");
    std::fs::set_permissions(open.path(), std::fs::Permissions::from_mode(0o755)).expect("mode");
    let listening = open.path().join("control");
    let _listener = std::os::unix::net::UnixListener::bind(&listening).expect("bind");
    let error =
        tokio::task::spawn_blocking(move || snapshot_at(&listening, Duration::from_secs(1)))
            .await
            .expect("join")
            .expect_err("not a private directory");
    assert!(
        error.to_string().contains("not a private directory"),
        "{error}"
    );

    let nowhere = take_socket();
    let error = tokio::task::spawn_blocking(move || snapshot_at(&nowhere, Duration::from_secs(1)))
        .await
        .expect("join")
        .expect_err("nothing listens there");
    assert!(matches!(error, TakeoverError::Unreachable(_)), "{error}");
    new.close().await.expect("detached");
    end_taken_over(pid, &took.connection_file);
}
