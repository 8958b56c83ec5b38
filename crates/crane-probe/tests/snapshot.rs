//! Kernel snapshots in a real ipykernel: an idle fork, reaped when dropped, refused where a
//! fork is unsafe, and one that takes over serves the state from before the cells after it.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use common::project_python;

use crane_kernel::{
    AttachOptions, AttachedKernel, ExecuteOptions, KernelLaunch, KernelOrigin, KernelSession,
    Output, OwnedKernel, ReplyStatus, StartOptions,
};
use crane_probe::snapshot::{drop_snapshots, take, take_over, Taken};

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
    let (mut session, kernel_pid) = start().await;
    cell(&mut session, "import numpy as np\nx = np.ones(1000)").await;
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
        cell(&mut session, "x += 1\nprint(x.sum())").await,
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
    cell(
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
    cell(&mut session, "pool.terminate()").await;
    session.close().await.expect("shutdown");
}

#[tokio::test]
async fn a_snapshot_that_takes_over_serves_the_state_before() {
    let (mut session, kernel_pid) = start().await;
    cell(
        &mut session,
        "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2]})\nn = 1",
    )
    .await;
    let (pid, socket, _) = snapshot(&mut session, &[]).await;
    cell(&mut session, "df['a'] *= 10\nn += 1").await;
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
        cell(&mut new, "print(df['a'].tolist(), n)").await,
        "[1, 2] 1\n"
    );
    assert_eq!(cell(&mut new, "n += 5\nprint(n)").await, "6\n");
    // The kernel it was forked from is still there, unchanged by the takeover.
    assert_eq!(
        cell(&mut session, "print(df['a'].tolist(), n)").await,
        "[10, 20] 2\n"
    );
    // Without a subreaper to adopt it (the proxy is one), the new kernel ends when the old one
    // does: its parent poller sees it orphaned.
    session.close().await.expect("the old kernel shuts down");
    assert!(process(kernel_pid).is_none_or(|(state, ..)| state == 'Z'));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while process(pid).is_some_and(|(state, ..)| state != 'Z')
        && std::time::Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        process(pid).is_none_or(|(state, ..)| state == 'Z'),
        "an orphaned kernel lives on"
    );
}
