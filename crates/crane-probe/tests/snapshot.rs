//! Kernel snapshots in a real ipykernel: an idle fork, reaped when dropped, refused where a
//! fork is unsafe, and one that takes over serves the state from before the cells after it.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use common::{cell_stdout, start_with_pid};

use crane_kernel::{AttachOptions, AttachedKernel, KernelSession};
use crane_probe::snapshot::{drop_snapshots, remove_snapshot_directory, take, take_over, Taken};

/// `(state, parent, group, threads)` of a process, `None` once it is gone (reaped).
fn process(pid: u32) -> Option<(char, u32, u32, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let threads = status
        .lines()
        .find_map(|line| line.strip_prefix("Threads:"))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0);
    Some((
        fields[0].chars().next().unwrap_or('?'),
        fields[1].parse().ok()?,
        fields[2].parse().ok()?,
        threads,
    ))
}

/// User and system time of a process, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    fields
        .get(11)
        .and_then(|t| t.parse::<u64>().ok())
        .unwrap_or(0)
        + fields
            .get(12)
            .and_then(|t| t.parse::<u64>().ok())
            .unwrap_or(0)
}

async fn snapshot(
    session: &mut KernelSession,
    drop: &[u32],
) -> (u32, std::path::PathBuf, Vec<u32>) {
    let answer = take(session, drop).await.expect("take");
    match answer.taken {
        Taken::Snapshot { pid, socket, .. } => (pid, socket, answer.ended),
        Taken::Refused { reasons } => panic!("refused: {reasons:?}"),
    }
}

#[tokio::test]
async fn a_snapshot_is_idle_and_a_dropped_one_is_reaped() {
    let (mut session, kernel_pid) = start_with_pid().await;
    cell_stdout(&mut session, "import numpy as np\nx = np.ones(1000)").await;
    let (first, socket, ended) = snapshot(&mut session, &[]).await;
    assert!(ended.is_empty());
    // The kernel answered right after the fork; the child isolates itself, then sleeps.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while process(first).is_some_and(|(state, ..)| state != 'S')
        && std::time::Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (state, parent, group, threads) = process(first).expect("the snapshot lives");
    assert_eq!((parent, group, threads), (kernel_pid, first, 1));
    assert_eq!(state, 'S', "a snapshot sleeps");
    let ticks = cpu_ticks(first);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(cpu_ticks(first), ticks, "a sleeping snapshot uses no CPU");
    let directory = socket.parent().expect("a directory");
    let mode = std::fs::metadata(directory)
        .expect("dir")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o700, "{}", directory.display());
    // The kernel went on as before.
    assert_eq!(
        cell_stdout(&mut session, "x += 1\nprint(x.sum())").await,
        "2000.0\n"
    );
    let (second, _, ended) = snapshot(&mut session, &[first]).await;
    assert_eq!(ended, vec![first]);
    // Killed at once, reaped at the kernel's next call (its teardown is not waited for).
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while process(first).is_some_and(|(state, ..)| state != 'Z')
        && std::time::Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        process(first).is_none_or(|(state, ..)| state == 'Z'),
        "the dropped snapshot is dead"
    );
    assert_eq!(
        drop_snapshots(&mut session, &[second]).await.expect("drop"),
        vec![second]
    );
    assert!(
        process(first).is_none(),
        "the dropped snapshot is reaped, no zombie"
    );
    assert!(process(second).is_none());
    assert!(
        !directory.exists(),
        "the dropped snapshot's directory is removed"
    );
    // A worker pool: no fork, and why.
    cell_stdout(
        &mut session,
        "import multiprocessing\npool = multiprocessing.Pool(1)",
    )
    .await;
    match take(&mut session, &[]).await.expect("take").taken {
        Taken::Refused { reasons } => assert!(
            reasons.iter().any(|r| r.contains("multiprocessing pool")),
            "{reasons:?}"
        ),
        taken => panic!("a snapshot of a kernel with a pool: {taken:?}"),
    }
    cell_stdout(&mut session, "pool.terminate()").await;
    session.close().await.expect("shutdown");
}

#[tokio::test]
async fn a_snapshot_that_takes_over_serves_the_state_before() {
    let (mut session, kernel_pid) = start_with_pid().await;
    cell_stdout(
        &mut session,
        "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2]})\nn = 1",
    )
    .await;
    let (pid, socket, _) = snapshot(&mut session, &[]).await;
    cell_stdout(&mut session, "df['a'] *= 10\nn += 1").await;
    let took = tokio::task::spawn_blocking(move || take_over(&socket, Duration::from_secs(60)))
        .await
        .expect("join")
        .expect("takes over");
    assert_eq!(took.pid, pid);
    assert_eq!(
        took.execution_count,
        Some(2),
        "the count before the second cell"
    );
    let attached = AttachedKernel::attach_file(&took.connection_file, &AttachOptions::default())
        .await
        .expect("attach to the kernel the snapshot became");
    let mut new: KernelSession = attached.into();
    assert_eq!(
        cell_stdout(&mut new, "print(df['a'].tolist(), n)").await,
        "[1, 2] 1\n"
    );
    assert_eq!(cell_stdout(&mut new, "n += 5\nprint(n)").await, "6\n");
    // The kernel it was forked from is still there, unchanged by the takeover.
    assert_eq!(
        cell_stdout(&mut session, "print(df['a'].tolist(), n)").await,
        "[10, 20] 2\n"
    );
    // The new kernel outlives the one it replaces: it dies with the process that asked for
    // it (here this test; `tests/takeover.rs` kills that process).
    session.close().await.expect("the old kernel shuts down");
    assert!(process(kernel_pid).is_none_or(|(state, ..)| state == 'Z'));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        process(pid).is_some_and(|(state, ..)| state != 'Z'),
        "the new kernel died with the one it replaced"
    );
    new.close().await.expect("detached");
    end_taken_over(pid, &took.connection_file);
}

/// End the kernel `pid` a takeover made, as the proxy does: killed, it removes nothing itself,
/// so its directory (with its connection file, `connection_file`) is removed for it.
fn end_taken_over(pid: u32, connection_file: &std::path::Path) {
    if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }
    remove_snapshot_directory(connection_file.parent().expect("a directory"));
    assert!(!connection_file.exists(), "{}", connection_file.display());
}

/// The pids of `pid`'s children (its main thread's).
fn children(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|child| child.parse().ok())
        .collect()
}

#[tokio::test]
async fn a_snapshot_dry_runs_its_cell_beside_the_real_run_and_stays_a_snapshot() {
    use crane_probe::dry_run::{DryRunOutcome, DryRunResult};
    use crane_probe::snapshot::{BesideBudget, BesideRun};

    let (mut session, _) = start_with_pid().await;
    cell_stdout(&mut session, "import time\nlosses = [0.5]").await;
    let (pid, socket, _) = snapshot(&mut session, &[]).await;
    // The kernel runs the cell's first lines for real meanwhile: the snapshot's run starts
    // from the state before them, and changes nothing of the kernel's.
    cell_stdout(&mut session, "losses.append(0.25)").await;
    // The fork shares the processor with the kernel at its own priority for its first half
    // second, then runs on the processor time the kernel leaves idle (SCHED_IDLE is 5).
    let code = "import os\nfirst = os.sched_getscheduler(0)\n\
                for epoch in range(100):\n    time.sleep(0.2)\n    losses.append(epoch)\n\
                assert len(losses) == 101, len(losses)\ntime.sleep(1.5)\n\
                assert (first, os.sched_getscheduler(0)) == (0, 5), first\nlosses[0] / 0";
    let beside = {
        let socket = socket.clone();
        tokio::task::spawn_blocking(move || {
            let started = std::time::Instant::now();
            let budget = BesideBudget {
                timeout: Duration::from_secs(30),
                full_share: Duration::from_millis(500),
            };
            let run = BesideRun::start(&socket, code, budget)?;
            run.wait(Duration::from_secs(60))
                .map(|outcome| (outcome, started.elapsed()))
        })
        .await
        .expect("join")
    };
    let (outcome, took) = beside.expect("an answer");
    let Some(DryRunOutcome::Ran(report)) = outcome else {
        panic!("{outcome:?}");
    };
    // Abridged at once (2 of 100 iterations, well under the 20 s of the full loop, the 98
    // skipped ones padded), from the state before the kernel's own append: the assertion saw
    // 1 + 100 entries, not 102.
    let DryRunResult::Raised(raised) = &report.result else {
        panic!("{report:?}");
    };
    assert_eq!(
        (raised.exception.as_str(), raised.line),
        ("ZeroDivisionError", Some(9))
    );
    let abridged = report.abridged.as_ref().expect("abridged");
    assert_eq!((abridged.loops[0].ran, abridged.loops[0].of), (2, 100));
    assert!(took < Duration::from_secs(15), "{took:?}");
    assert_eq!(
        cell_stdout(&mut session, "print(losses)").await,
        "[0.5, 0.25]\n"
    );
    assert_eq!(
        cell_stdout(&mut session, "import os\nprint(os.sched_getscheduler(0))").await,
        "0\n"
    );
    // A run cancelled by hanging up ends its fork at once; the snapshot stays one.
    let socket_again = socket.clone();
    let cancelled = tokio::task::spawn_blocking(move || {
        let run = BesideRun::start(
            &socket_again,
            "for i in range(2):\n    time.sleep(60)",
            BesideBudget {
                timeout: Duration::from_secs(120),
                full_share: Duration::ZERO,
            },
        )
        .expect("start");
        let canceller = run.canceller().expect("a handle");
        let waiting = std::thread::spawn(move || run.wait(Duration::from_secs(120)));
        std::thread::sleep(Duration::from_millis(1500));
        canceller
            .shutdown(std::net::Shutdown::Both)
            .expect("hang up");
        waiting.join().expect("join")
    })
    .await
    .expect("join");
    assert!(cancelled.is_err(), "{cancelled:?}");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !children(pid).is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(children(pid).is_empty(), "the cancelled run's fork is gone");
    assert_eq!(
        process(pid).map(|(state, ..)| state),
        Some('S'),
        "still a sleeping snapshot"
    );
    // And it still becomes the kernel, as it was before the cell.
    let took = tokio::task::spawn_blocking(move || take_over(&socket, Duration::from_secs(60)))
        .await
        .expect("join")
        .expect("takes over");
    let attached = AttachedKernel::attach_file(&took.connection_file, &AttachOptions::default())
        .await
        .expect("attach");
    let mut new: KernelSession = attached.into();
    assert_eq!(cell_stdout(&mut new, "print(losses)").await, "[0.5]\n");
    new.close().await.expect("detached");
    end_taken_over(pid, &took.connection_file);
    session.close().await.expect("shutdown");
}
