//! The checking kernel's check of one cell parses it once: the analysis, the imports handed to
//! the replica, whether it looks long, the rules and the dry run all take the one parse, which
//! the check hands on with its verdict; a cell the kernel ran comes back to the checker with
//! its parse, and reading it parses nothing. Alone in its test binary, against a real
//! ipykernel: the parser counter is the process's.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crane_analysis::bounds::parser_calls;
use crane_analysis::ParsedCell;
use crane_check::kernel::{CellRequest, KernelChecker, KernelEvent};
use crane_check::DryRunWhen;
use crane_kernel::{
    ExecuteOptions, KernelLaunch, KernelOrigin, KernelSession, OwnedKernel, StartOptions,
};

fn project_python() -> PathBuf {
    match std::env::var_os("CRANE_PYTHON").filter(|value| !value.is_empty()) {
        Some(python) => PathBuf::from(python),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_checked_cell_is_parsed_once() {
    let launch = KernelLaunch::python(project_python(), KernelOrigin::CranePythonEnv);
    let options = StartOptions {
        start_timeout: Duration::from_secs(120),
        ..StartOptions::default()
    };
    let mut session: KernelSession = OwnedKernel::start(&launch, &options)
        .await
        .expect("kernel starts")
        .into();
    let mut checker = KernelChecker::new(Box::new(|_| Ok(None)), BTreeSet::new(), None);
    checker.prepare(&mut session).await.expect("prepared");
    let ignore = BTreeSet::new();
    let request = |code| CellRequest {
        code,
        llm: None,
        ignore: &ignore,
        dry_run: DryRunWhen::On,
        dry_run_budget: Duration::from_secs(20),
        snapshots: false,
    };

    // A cell the kernel ran, handed over with its parse: its imports, its looping functions
    // and the history take that parse.
    let ran = "import json\nvalues = [1, 2]";
    let execution = session
        .execute(ran, &ExecuteOptions::cell())
        .await
        .expect("the cell runs");
    let count = |execution: &crane_kernel::Execution| {
        execution
            .reply()
            .and_then(|reply| reply.execution_count)
            .and_then(|count| usize::try_from(count).ok())
    };
    checker.executed(vec![KernelEvent::Ran {
        cell: Arc::new(ParsedCell::parse(ran)),
        execution_count: count(&execution),
        raised: false,
    }]);
    let before = parser_calls();
    assert_eq!(checker.prior("values"), crane_analysis::Prior::Bound);
    assert_eq!(parser_calls() - before, 0);

    // The check parses its cell once and hands that parse on; the cell, run and reported with
    // it, is read from it: one parse in all.
    let code = "import json\nparsed = json.loads('{')";
    let before = parser_calls();
    let checked = checker
        .check(&mut session, &request(code))
        .await
        .expect("checked");
    assert_eq!(parser_calls() - before, 1, "{:?}", checked.timings);
    assert!(checked.verdict.crash, "{:?}", checked.verdict);
    assert_eq!(checked.cell.source(), code);
    let execution = session
        .execute(code, &ExecuteOptions::cell())
        .await
        .expect("the cell runs");
    assert_eq!(checker.prior("parsed"), crane_analysis::Prior::NotBound);
    checker.executed(vec![KernelEvent::Ran {
        cell: Arc::clone(&checked.cell),
        execution_count: count(&execution),
        raised: true,
    }]);
    assert_eq!(checker.prior("parsed"), crane_analysis::Prior::Bound);
    assert_eq!(parser_calls() - before, 1);
    let _ = session.close().await;
}
