//! A dry run that runs out of memory, judged against what the machine can still give: an
//! allocation the real run cannot get either is foreseen with its size (Linux's overcommit
//! check refuses it, or the operation writes every byte of it past what a real memory cgroup
//! the test makes can give), and each premise is checked by running the cell for real; an
//! allocation the real run may get (numpy's lazily zeroed arrays, pages copied on write) is
//! not, and the fixed cells run. No process of a dry run is left behind.

#[path = "../../crane-kernel/tests/support/cgroup.rs"]
mod cgroup;
mod common;

use std::time::Duration;

use cgroup::TestCgroup;
use common::{run_cell, start_with_pid};
use crane_kernel::{ExecuteOptions, KernelError, KernelSession};
use crane_probe::dry_run::{
    dry_run, DryRunOptions, DryRunOutcome, DryRunReport, DryRunResult, MemoryRequest,
};

fn options() -> DryRunOptions {
    DryRunOptions {
        timeout: Duration::from_secs(60),
        abridge: None,
        ..DryRunOptions::default()
    }
}

/// A dry run that ran, with nothing of it left: no process of its group, no zombie child of
/// the kernel.
async fn ran(session: &mut KernelSession, kernel: u32, code: &str) -> DryRunReport {
    let DryRunOutcome::Ran(report) = dry_run(session, code, &options()).await.expect("dry run")
    else {
        panic!("dry run refused: {code}");
    };
    let left: Vec<String> = std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter_map(|entry| std::fs::read_to_string(entry.path().join("stat")).ok())
        .filter(|stat| {
            let fields: Vec<&str> = stat
                .rsplit_once(')')
                .map(|(_, rest)| rest.split_whitespace().collect())
                .unwrap_or_default();
            let parent = fields.get(1).and_then(|f| f.parse::<u32>().ok());
            let group = fields.get(2).and_then(|f| f.parse::<u32>().ok());
            (parent == Some(kernel) && fields.first() == Some(&"Z"))
                || group == Some(report.child_pid)
        })
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    report
}

/// The allocation a run's `MemoryError` named.
fn request(report: &DryRunReport) -> &MemoryRequest {
    match &report.result {
        DryRunResult::MemoryLimit {
            request: Some(request),
            ..
        } => request,
        other => panic!("no failed allocation named: {other:?}"),
    }
}

fn overcommit_mode() -> u32 {
    std::fs::read_to_string("/proc/sys/vm/overcommit_memory")
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .expect("overcommit mode")
}

fn meminfo(field: &str) -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").expect("/proc/meminfo");
    text.lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.split_whitespace().next()?.parse::<u64>().ok())
        .expect("a /proc/meminfo field")
        * 1024
}

#[tokio::test]
async fn an_allocation_linux_refuses_is_foreseen_and_a_lazy_one_it_grants_is_not() {
    let (mut session, pid) = start_with_pid().await;
    run_cell(&mut session, "import numpy as np").await;
    let mode = overcommit_mode();

    // A million by a million float64: 8 TB, far past any machine's memory and swap.
    let cell = "n = 1_000_000\ngrid = np.zeros((n, n))";
    let report = ran(&mut session, pid, cell).await;
    let refused = request(&report);
    assert_eq!(refused.bytes, 8_000_000_000_000);
    assert!(refused.what.contains("(1000000, 1000000)"), "{refused:?}");
    assert!(
        refused.needs().starts_with("needs more than 8000 GB; "),
        "{}",
        refused.needs()
    );
    let DryRunResult::MemoryLimit {
        exception: Some(raised),
        ..
    } = &report.result
    else {
        panic!("{report:?}")
    };
    assert_eq!(
        (raised.exception.as_str(), raised.line),
        ("MemoryError", Some(2))
    );
    if mode == 1 {
        // "Always overcommit": the real kernel may be given it.
        assert_eq!(refused.certain, None, "{refused:?}");
    } else {
        let why = refused.certain.as_deref().expect("certain");
        assert!(why.contains("overcommit"), "{why}");
        // The premise, for real: the kernel raises MemoryError and lives on.
        let execution = session
            .execute(cell, &ExecuteOptions::cell())
            .await
            .expect("runs");
        let error = execution.error().expect("raised");
        assert_eq!(error.ename, "MemoryError", "{error:?}");
    }

    // A many-to-many merge: pandas asks numpy for the 40 billion rows' indexer (320 GB).
    run_cell(
        &mut session,
        "import pandas as pd\nleft = pd.DataFrame({'k': np.zeros(200_000, dtype=int), 'a': 1.0})\n\
         right = left.rename(columns={'a': 'b'})",
    )
    .await;
    let merge = "joined = left.merge(right, on='k')";
    let report = ran(&mut session, pid, merge).await;
    let indexer = request(&report);
    assert_eq!(indexer.bytes, 40_000_000_000 * 8, "{indexer:?}");
    if mode != 1 {
        assert!(indexer.certain.is_some(), "{indexer:?}");
        let execution = session
            .execute(merge, &ExecuteOptions::cell())
            .await
            .expect("runs");
        assert_eq!(
            execution.error().map(|error| error.ename.as_str()),
            Some("MemoryError"),
            "{execution:?}"
        );
    }

    // The same cell made to fit runs.
    let report = ran(&mut session, pid, "n = 1_000\ngrid = np.zeros((n, n))").await;
    assert_eq!(report.result, DryRunResult::Passed, "{report:?}");

    // Zeros of 60% of the machine: past the fork's budget, but numpy's zeroed memory
    // is only taken as it is written, and Linux's default check grants it. Not foreseen; and
    // the real kernel gets it.
    let most = meminfo("MemTotal") * 6 / 10 / 8;
    let lazy = format!("lazy = np.zeros({most})");
    let report = ran(&mut session, pid, &lazy).await;
    let granted = request(&report);
    assert_eq!(granted.bytes, most * 8);
    assert_eq!(granted.certain, None, "{granted:?}");
    if mode == 0 {
        run_cell(
            &mut session,
            &format!("{lazy}\nassert lazy.shape == ({most},)\ndel lazy"),
        )
        .await;
    }
    session.close().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_allocation_in_other_words_than_numpys_decides_nothing() {
    let (mut session, pid) = start_with_pid().await;
    run_cell(&mut session, "import torch").await;
    // torch words a refused allocation as a RuntimeError ("DefaultCPUAllocator: can't allocate
    // memory ... Error code 12"). 60% of the machine is past the fork's budget and within what
    // Linux grants the kernel (torch takes it as it is written): the run decides nothing.
    let most = meminfo("MemTotal") * 6 / 10;
    let cell = format!("t = torch.empty({most}, dtype=torch.uint8)");
    let report = ran(&mut session, pid, &cell).await;
    // A memory limit with no allocation judged certain, which crane-detect reads as
    // inconclusive (`observed.rs`), not the RuntimeError as the cell's crash.
    let DryRunResult::MemoryLimit {
        exception, request, ..
    } = &report.result
    else {
        panic!("{report:?}");
    };
    let exception = exception.as_ref().expect("the exception it raised");
    assert_eq!(exception.exception, "RuntimeError", "{exception:?}");
    assert!(request.is_none(), "{request:?}");
    if overcommit_mode() == 0 {
        run_cell(
            &mut session,
            &format!("{cell}\nassert t.shape == ({most},)\ndel t"),
        )
        .await;
    }
    session.close().await.expect("shutdown");
}

#[tokio::test]
async fn in_a_memory_cgroup_a_cell_that_writes_more_than_it_can_give_is_foreseen() {
    const LIMIT: u64 = 512 << 20;
    let Some(cgroup) = TestCgroup::new("memory", LIMIT) else {
        assert!(
            !rustix::process::geteuid().is_root(),
            "root could not make a memory cgroup"
        );
        eprintln!("skipped: only root can make the memory cgroup this test needs");
        return;
    };
    let (mut session, pid) = start_with_pid().await;
    cgroup.add(pid);
    // 200 MB of the cgroup's 512 MB held by the kernel.
    run_cell(
        &mut session,
        "import numpy as np\nbig = np.ones(25_000_000)",
    )
    .await;

    // numpy.ones writes the 400 MB it asks for: more than the cgroup can still give.
    let filling = "x = 1\nfilled = np.ones(50_000_000)";
    let report = ran(&mut session, pid, filling).await;
    let foreseen = request(&report);
    assert_eq!(foreseen.bytes, 400_000_000);
    assert!(foreseen.available_bytes < 400_000_000, "{foreseen:?}");
    assert!(
        foreseen
            .available_in
            .contains("memory cgroup (0.5 GB limit)"),
        "{foreseen:?}"
    );
    assert!(
        foreseen.needs().starts_with("needs more than 0.4 GB; 0."),
        "{}",
        foreseen.needs()
    );
    let why = foreseen.certain.as_deref().expect("certain");
    let foreseen_available = foreseen.available_bytes;
    assert!(why.starts_with("numpy.ones writes every byte"), "{why}");

    // The same cell made to fit runs.
    let report = ran(&mut session, pid, "x = 1\nfilled = np.ones(5_000_000)").await;
    assert_eq!(report.result, DryRunResult::Passed, "{report:?}");

    // An outer product by broadcasting: numpy computes every element of its 512 MB result.
    let report = ran(
        &mut session,
        pid,
        "v = np.ones(8_000)\nouter = v[:, None] * v[None, :]",
    )
    .await;
    let outer = request(&report);
    assert_eq!(outer.bytes, 512_000_000);
    assert_eq!(
        outer
            .certain
            .as_deref()
            .map(|why| why.starts_with("an array operator")),
        Some(true),
        "{outer:?}"
    );

    // Zeros past what the cgroup can give: numpy's zeroed memory is charged only as it is
    // written, so not foreseen; and the real kernel gets it.
    let lazy = "lazy = np.zeros(60_000_000)";
    let report = ran(&mut session, pid, lazy).await;
    assert_eq!(request(&report).certain, None, "{report:?}");
    run_cell(
        &mut session,
        &format!("{lazy}\nassert lazy.shape == (60_000_000,)\ndel lazy"),
    )
    .await;

    // Writing into the kernel's array in place copies its pages in the fork only: the fork
    // ends at its budget with no allocation named, and the real run is fine.
    let in_place = "for _ in range(20):\n    big += 1";
    let report = ran(&mut session, pid, in_place).await;
    match &report.result {
        DryRunResult::MemoryLimit { request: None, .. } | DryRunResult::Passed => {}
        other => panic!("{other:?}"),
    }
    run_cell(&mut session, in_place).await;

    // Freeing the kernel's array first gives its 200 MB back in the real run, which the fork
    // could not: not foreseen, and what is available counts it.
    let report = ran(&mut session, pid, "del big\nfilled = np.ones(50_000_000)").await;
    let after_freeing = request(&report);
    assert_eq!(after_freeing.certain, None, "{after_freeing:?}");
    assert!(
        after_freeing.available_bytes > foreseen_available + 150_000_000,
        "{after_freeing:?}"
    );

    // The premise of the first hold, for real: the kernel is killed for memory (or raises).
    match session
        .execute(
            filling,
            &ExecuteOptions::cell().with_timeout(Duration::from_secs(120)),
        )
        .await
    {
        Err(KernelError::KernelDied { .. }) => {}
        Ok(execution) => assert_eq!(
            execution.error().map(|error| error.ename.as_str()),
            Some("MemoryError"),
            "{execution:?}"
        ),
        Err(other) => panic!("{other}"),
    }
    drop(session);
    drop(cgroup);
}
