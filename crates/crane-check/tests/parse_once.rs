//! The checking kernel's check of one cell parses it once: the analysis, the imports handed to
//! the replica, whether it looks long, the rules and the dry run all take the one parse; and a
//! cell the kernel ran is parsed once when the checker reads it. Alone in its test
//! binary, against a real ipykernel: the parser counter is the process's.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use crane_analysis::bounds::parser_calls;
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
        undoable: false,
    };

    // A cell the kernel ran is read once too: its imports, its looping functions, the history.
    let ran = "import json\nvalues = [1, 2]";
    let execution = session
        .execute(ran, &ExecuteOptions::cell())
        .await
        .expect("the cell runs");
    checker.executed(vec![KernelEvent::Ran {
        code: ran.to_owned(),
        execution_count: execution
            .reply()
            .and_then(|reply| reply.execution_count)
            .and_then(|count| usize::try_from(count).ok()),
        raised: false,
    }]);
    let before = parser_calls();
    assert_eq!(checker.prior("values"), crane_analysis::Prior::Bound);
    assert_eq!(parser_calls() - before, 1);

    let before = parser_calls();
    let checked = checker
        .check(
            &mut session,
            &request("import json\nvalues = json.loads('{')"),
        )
        .await
        .expect("checked");
    let calls = parser_calls() - before;
    assert!(checked.verdict.crash, "{:?}", checked.verdict);
    assert_eq!(calls, 1, "{:?}", checked.timings);
    let _ = session.close().await;
}
