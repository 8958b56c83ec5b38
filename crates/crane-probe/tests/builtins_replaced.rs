//! Builtins the user replaced by functions of their own (`__import__`, `getattr`,
//! `isinstance`, `len`) are never called by crane: before the first check crane refuses with a
//! clear error and changes nothing; after it, crane's modules resolve builtins in the snapshot
//! of the originals the injection checked, and checks and dry runs still give the right facts.

mod common;

use std::process::Command;
use std::time::Duration;

use common::{eval_silent, project_python, roomy_budget, run_cell, start_kernel, var};
use crane_probe::dry_run::{dry_run, DryRunError, DryRunOptions, DryRunOutcome, DryRunResult};
use crane_probe::ProbeError;
use serde_json::json;

/// Counting wrappers of four builtins. `crane_calls` counts the calls made with crane's code
/// on the stack (its modules, or the expressions it evaluates, which run as `<string>`),
/// except inside the kernel's own messaging (jupyter_client, zmq), which every request of any
/// client goes through; `all_calls` counts every call, to show the wrappers are in place.
/// A call the guard stops before the wrapper's first instruction counts nowhere.
const WRAPPERS: &str = r#"
import builtins, sys
_wrapped_names = ('__import__', 'getattr', 'isinstance', 'len')
_originals = {name: vars(builtins)[name] for name in _wrapped_names}
crane_calls = dict.fromkeys(_wrapped_names, 0)
all_calls = dict.fromkeys(_wrapped_names, 0)
crane_callers = []

def _from_crane(frame):
    while frame is not None:
        code = frame.f_code
        file = code.co_filename
        if 'jupyter_client' in file or '/zmq/' in file:
            return False
        name = frame.f_globals.get('__name__')
        if file == '<string>' or file.startswith('<crane') or (type(name) is str and name.startswith('_crane_')):
            return True
        frame = frame.f_back
    return False

def counting(name):
    original = _originals[name]
    def wrapper(*args, **kwargs):
        all_calls[name] += 1
        caller = sys._getframe(1)
        if _from_crane(caller):
            crane_calls[name] += 1
            crane_callers.append((name, caller.f_code.co_filename, caller.f_code.co_name))
        return original(*args, **kwargs)
    wrapper.__qualname__ = 'counting_' + name.strip('_')
    return wrapper

for _name in _wrapped_names:
    setattr(builtins, _name, counting(_name))
del _name
"#;

const DATA: &str = "import numpy as np, pandas as pd\n\
                    df = pd.DataFrame({'a': [1.0, None, 3.0], 'b': ['x', 'y', 'x']})\n\
                    arr = np.arange(12.0).reshape(3, 4)\n\
                    names = ['ann', 'bob']";

/// What a user would notice, read without calling any of the wrapped builtins.
const USER_STATE: &str = "repr((sorted(k for k in globals() if not k.startswith('_')), \
     sorted((k, id(v)) for k, v in vars(builtins).items()), \
     sorted(k for k in sys.modules if k.startswith('_crane')), \
     get_ipython().execution_count))";

async fn crane_calls(session: &mut crane_kernel::KernelSession) -> String {
    eval_silent(session, "repr((crane_calls, crane_callers))")
        .await
        .0
}

const NO_CRANE_CALLS: &str = "\"({'__import__': 0, 'getattr': 0, 'isinstance': 0, 'len': 0}, [])\"";

fn dry_run_options() -> DryRunOptions {
    DryRunOptions {
        timeout: Duration::from_secs(60),
        ..DryRunOptions::default()
    }
}

#[tokio::test]
async fn builtins_replaced_before_the_first_check_are_refused_and_never_called() {
    let mut session = start_kernel().await;
    run_cell(&mut session, DATA).await;
    run_cell(&mut session, WRAPPERS).await;
    let before = eval_silent(&mut session, USER_STATE).await.0;

    let expressions = vec!["df".to_owned(), "arr".to_owned()];
    let error = crane_probe::summarize(&mut session, &expressions, &roomy_budget())
        .await
        .expect_err("the probe refuses");
    let ProbeError::BuiltinsReplaced(replaced) = &error else {
        panic!("not a refusal: {error:?}");
    };
    let names: Vec<&str> = replaced.0.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["__import__", "getattr", "isinstance", "len"]);
    let message = error.to_string();
    assert!(
        message.contains("`len` (the function __main__.counting_len)"),
        "{message}"
    );
    assert!(message.contains("cannot check in this kernel"), "{message}");

    assert!(matches!(
        crane_probe::inject(&mut session).await,
        Err(ProbeError::BuiltinsReplaced(_))
    ));
    match dry_run(&mut session, "y = len(names)", &dry_run_options()).await {
        Err(DryRunError::BuiltinsReplaced(replaced)) => assert_eq!(replaced.0.len(), 4),
        other => panic!("the dry run does not refuse: {other:?}"),
    }

    assert_eq!(crane_calls(&mut session).await, NO_CRANE_CALLS);
    assert_eq!(eval_silent(&mut session, USER_STATE).await.0, before);
    // The wrappers were in place all along: the user's own code reaches them.
    run_cell(&mut session, "n = len(names)").await;
    assert_eq!(
        eval_silent(&mut session, "repr((n, all_calls['len'] > 0))")
            .await
            .0,
        "'(2, True)'"
    );
    session.close().await.expect("shutdown");
}

#[tokio::test]
async fn builtins_replaced_after_a_check_reach_none_of_crane_and_facts_stay_right() {
    let mut session = start_kernel().await;
    run_cell(&mut session, DATA).await;
    let expressions: Vec<String> = ["df", "arr", "df['a']", "names"]
        .iter()
        .map(|e| e.to_string())
        .collect();
    let first = crane_probe::summarize(&mut session, &expressions, &roomy_budget())
        .await
        .expect("the first check");
    let first_dry = dry_run(&mut session, "y = len(names)\nprint(y)", &dry_run_options())
        .await
        .expect("the first dry run");
    assert!(matches!(first_dry, DryRunOutcome::Ran(_)), "{first_dry:?}");

    run_cell(&mut session, WRAPPERS).await;

    let info = crane_probe::summarize(&mut session, &expressions, &roomy_budget())
        .await
        .expect("a check after the replacement");
    // crane's own code finds the originals: facts it reads itself are the same as before.
    // Library code the probe calls (pandas, numpy) finds the kernel's builtins, so where it
    // would call a wrapper the guard stops it first: that object's facts are unknown, with
    // the reason, never different.
    assert_eq!(info.missing, first.missing);
    assert_eq!(info.variables["names"], first.variables["names"]);
    assert_eq!(var(&info, "names").value(), Some(&json!(["ann", "bob"])));
    for (expression, variable) in &info.variables {
        if variable != &first.variables[expression] {
            let error = variable.error.as_deref().unwrap_or_default();
            assert!(
                error.ends_with("would run user code")
                    && variable.s.is_empty()
                    && variable.r.is_empty()
                    && variable.v.is_empty(),
                "{expression}: {variable:?}"
            );
        }
    }
    assert_eq!(first_df_shape(&first), Some(vec![Some(3), Some(2)]));

    // The cell itself runs with the user's builtins in the fork: its `len` is the wrapper.
    let outcome = dry_run(
        &mut session,
        "y = len(names) + 1\nprint(y, len.__qualname__)",
        &dry_run_options(),
    )
    .await
    .expect("a dry run after the replacement");
    let DryRunOutcome::Ran(report) = outcome else {
        panic!("not run: {outcome:?}");
    };
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(report.stdout_tail, "3 counting_len\n");
    let outcome = dry_run(&mut session, "df['missing']", &dry_run_options())
        .await
        .expect("a crashing dry run");
    let DryRunOutcome::Ran(report) = outcome else {
        panic!("not run: {outcome:?}");
    };
    let DryRunResult::Raised(exception) = &report.result else {
        panic!("did not raise: {report:?}");
    };
    assert_eq!(exception.exception, "KeyError");
    assert_eq!(exception.line, Some(1));

    assert_eq!(crane_calls(&mut session).await, NO_CRANE_CALLS);
    session.close().await.expect("shutdown");
}

fn first_df_shape(info: &crane_runtime::RuntimeInfo) -> Option<Vec<Option<u64>>> {
    var(info, "df").shape()
}

/// Every builtin name crane's modules look up is in the list the injection checks (a name
/// missing there would be missing from the modules' private builtins), and every other global
/// they look up is bound in them.
#[test]
fn the_checked_builtins_cover_every_name_the_modules_use() {
    let script = r#"
import builtins, dis, json, sys, types
sources = json.load(sys.stdin)
used, unbound = set(), set()
for source in sources:
    loaded, bound = set(), set()
    def walk(code):
        for ins in dis.get_instructions(code):
            if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
                loaded.add(ins.argval)
            elif ins.opname in ("STORE_NAME", "STORE_GLOBAL", "DELETE_NAME", "DELETE_GLOBAL", "IMPORT_NAME"):
                bound.add(ins.argval)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                walk(const)
    walk(compile(source, "<crane>", "exec"))
    used |= {name for name in loaded - bound if name in vars(builtins) and name != "__name__"}
    unbound |= {name for name in loaded - bound if name not in vars(builtins)}
print(json.dumps({"used": sorted(used), "unbound": sorted(unbound)}))
"#;
    let mut child = Command::new(project_python())
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python starts");
    let sources = json!([
        crane_probe::PROBE_SOURCE,
        crane_probe::dry_run::DRY_RUN_SOURCE
    ]);
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin
            .write_all(sources.to_string().as_bytes())
            .expect("sources written");
    }
    let output = child.wait_with_output().expect("python ends");
    assert!(output.status.success());
    let names: serde_json::Value = serde_json::from_slice(&output.stdout).expect("names");
    // A name neither bound in the module nor a builtin is a NameError waiting for its path.
    assert_eq!(
        names["unbound"],
        json!([]),
        "unbound names in crane's modules"
    );
    let used: Vec<String> = serde_json::from_value(names["used"].clone()).expect("names");
    let missing: Vec<&String> = used
        .iter()
        .filter(|name| !crane_probe::CRANE_BUILTINS.contains(&name.as_str()))
        .collect();
    assert!(missing.is_empty(), "not checked at injection: {missing:?}");
    assert!(used.len() > 40, "{used:?}");
}
