//! Shared helpers: a real ipykernel from the project's Python, cells, silent evaluation, and
//! typed access to the facts the probe returns.

#![allow(dead_code)]

use std::path::PathBuf;
use std::time::Duration;

use crane_kernel::{
    ExecuteOptions, Execution, KernelLaunch, KernelOrigin, KernelSession, OwnedKernel,
    StartOptions, UserExpression,
};
use crane_probe::Budget;
use crane_runtime::{RuntimeInfo, Section, Variable};
use serde_json::Value;

/// The project's Python with ipykernel: `$CRANE_PYTHON`, else `<repo>/.venv/bin/python`.
pub fn project_python() -> PathBuf {
    if let Some(python) = std::env::var_os("CRANE_PYTHON").filter(|v| !v.is_empty()) {
        return PathBuf::from(python);
    }
    let python = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python");
    assert!(
        python.exists(),
        "no project Python at {}; run `bash scripts/setup-python.sh` or set CRANE_PYTHON",
        python.display()
    );
    python
}

pub async fn start_kernel() -> KernelSession {
    let launch = KernelLaunch::python(project_python(), KernelOrigin::CranePythonEnv);
    let options = StartOptions {
        start_timeout: Duration::from_secs(120),
        ..StartOptions::default()
    };
    OwnedKernel::start(&launch, &options)
        .await
        .expect("kernel starts")
        .into()
}

/// A kernel from the project's Python, and its pid (for what is looked for outside it).
pub async fn start_with_pid() -> (KernelSession, u32) {
    let launch = KernelLaunch::python(project_python(), KernelOrigin::PythonFlag);
    let kernel = OwnedKernel::start(&launch, &StartOptions::default())
        .await
        .expect("kernel starts");
    let pid = kernel.pid();
    (kernel.into(), pid)
}

/// Run a cell; it must succeed; its stdout.
pub async fn cell_stdout(session: &mut KernelSession, code: &str) -> String {
    let execution = session
        .execute(
            code,
            &ExecuteOptions::cell().with_timeout(Duration::from_secs(120)),
        )
        .await
        .expect("execute");
    let reply = execution.reply().expect("reply");
    assert_eq!(
        reply.status,
        crane_kernel::ReplyStatus::Ok,
        "{code}: {execution:?}"
    );
    execution
        .outputs
        .iter()
        .filter_map(|output| match output {
            crane_kernel::Output::Stream { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// Dry-run options for the replica's tests: a roomy time, no abridgement.
pub fn replica_options() -> crane_probe::dry_run::DryRunOptions {
    crane_probe::dry_run::DryRunOptions {
        timeout: Duration::from_secs(120),
        abridge: None,
        ..crane_probe::dry_run::DryRunOptions::default()
    }
}

/// A cell judged in the replica, which must run it.
pub async fn judged_in_replica(
    session: &mut KernelSession,
    replica: &mut crane_probe::replica::Replica,
    code: &str,
) -> crane_probe::dry_run::DryRunReport {
    use crane_probe::dry_run::DryRunOutcome;
    match crane_probe::ahead::execute_ahead(session, Some(replica), code, &replica_options())
        .await
        .expect("judged")
    {
        DryRunOutcome::Ran(report) if report.replica.is_some() => report,
        other => panic!("not run in the replica: {other:?}"),
    }
}

/// A dry run of `code` with a timeout of `seconds`, which must run (not be refused).
pub async fn ran_within(
    session: &mut KernelSession,
    code: &str,
    seconds: u64,
) -> crane_probe::dry_run::DryRunReport {
    let options = crane_probe::dry_run::DryRunOptions {
        timeout: Duration::from_secs(seconds),
        ..crane_probe::dry_run::DryRunOptions::default()
    };
    match crane_probe::dry_run::dry_run(session, code, &options)
        .await
        .expect("dry run")
    {
        crane_probe::dry_run::DryRunOutcome::Ran(report) => report,
        crane_probe::dry_run::DryRunOutcome::Unsupported { reasons } => {
            panic!("{code}: unsupported: {reasons:?}")
        }
    }
}

/// Dry-run options for abridged runs: a full run of 1 s, then abridged runs of up to 60 s.
pub fn abridged_options() -> crane_probe::dry_run::DryRunOptions {
    crane_probe::dry_run::DryRunOptions {
        timeout: Duration::from_secs(60),
        abridge: Some(crane_probe::dry_run::AbridgeOptions {
            after: Duration::from_secs(1),
            timeout: Duration::from_secs(60),
        }),
        ..crane_probe::dry_run::DryRunOptions::default()
    }
}

/// A cell dry-run with [`abridged_options`], which must run.
pub async fn abridged_run(
    session: &mut KernelSession,
    code: &str,
) -> crane_probe::dry_run::DryRunReport {
    match crane_probe::dry_run::dry_run(session, code, &abridged_options())
        .await
        .expect("dry run")
    {
        crane_probe::dry_run::DryRunOutcome::Ran(report) => report,
        other => panic!("{other:?}"),
    }
}

/// The exception and line of an abridged run that raised, and its abridgement.
pub fn raised_abridged(
    report: &crane_probe::dry_run::DryRunReport,
) -> (&str, Option<u32>, &crane_probe::dry_run::Abridged) {
    let crane_probe::dry_run::DryRunResult::Raised(exception) = &report.result else {
        panic!("{:?}\n{}", report.result, report.stdout_tail);
    };
    let Some(abridged) = report.abridged.as_deref() else {
        panic!("not abridged: {report:?}");
    };
    (exception.exception.as_str(), exception.line, abridged)
}

/// The exception, its line, and what it depends on, of an abridged run that raised.
pub fn abridged_raised(
    report: &crane_probe::dry_run::DryRunReport,
) -> (&str, Option<u32>, &[String]) {
    let crane_probe::dry_run::DryRunResult::Raised(exception) = &report.result else {
        panic!("{:?}\n{}", report.result, report.stdout_tail);
    };
    let Some(abridged) = report.abridged.as_ref() else {
        panic!("not abridged: {report:?}");
    };
    (
        exception.exception.as_str(),
        exception.line,
        abridged.depends_on.as_slice(),
    )
}

/// Run a cell as a notebook would (counted, in history) and insist that it succeeded.
pub async fn run_cell(session: &mut KernelSession, code: &str) -> Execution {
    let execution = session
        .execute(
            code,
            &ExecuteOptions::cell().with_timeout(Duration::from_secs(300)),
        )
        .await
        .expect("cell executes");
    if let Some(error) = execution.error() {
        panic!("cell failed: {}: {}\n{code}", error.ename, error.evalue);
    }
    execution
}

/// Evaluate an expression without a trace (silent execute, user expression).
pub async fn eval_silent(session: &mut KernelSession, expression: &str) -> (String, Execution) {
    let options = ExecuteOptions::silent()
        .with_timeout(Duration::from_secs(60))
        .with_user_expression("x", expression);
    let execution = session.execute("", &options).await.expect("executes");
    let reply = execution.reply().expect("a reply");
    let text = match reply.user_expressions.get("x") {
        Some(UserExpression::Value { data, .. }) => data
            .get("text/plain")
            .and_then(Value::as_str)
            .expect("text/plain")
            .to_owned(),
        other => panic!("expression failed: {other:?}"),
    };
    (text, execution)
}

/// A budget generous enough that a loaded machine does not change the facts under test.
pub fn roomy_budget() -> Budget {
    Budget {
        time: Duration::from_secs(20),
        ..Budget::default()
    }
}

pub async fn facts(session: &mut KernelSession, expressions: &[&str]) -> RuntimeInfo {
    let expressions: Vec<String> = expressions.iter().map(|e| e.to_string()).collect();
    crane_probe::summarize(session, &expressions, &roomy_budget())
        .await
        .expect("probe answers")
}

pub fn var<'a>(info: &'a RuntimeInfo, expression: &str) -> &'a Variable {
    info.get(expression)
        .unwrap_or_else(|| panic!("no facts for {expression}: {info:#?}"))
}

/// One fact, e.g. `fact(&info, "df", Section::S, "shape")`.
pub fn fact<'a>(info: &'a RuntimeInfo, expression: &str, section: Section, key: &str) -> &'a Value {
    var(info, expression).fact(section, key).unwrap_or_else(|| {
        panic!(
            "no {}.{key} for {expression}: {:#?}",
            section.letter(),
            var(info, expression)
        )
    })
}
