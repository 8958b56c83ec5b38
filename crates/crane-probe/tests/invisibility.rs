//! The probe must be invisible: no names, no output, no history, no random-state change, no
//! import, no user code; hostile objects get bounded summaries and never an exception.

mod common;

use std::time::Duration;

use common::{eval_silent, fact, facts, run_cell, start_kernel, var};
use crane_kernel::ExecuteOptions;
use crane_probe::{Budget, RideAlong, PROBE_MODULE};
use crane_runtime::{Kind, Section};
use serde_json::{json, Value};

/// Everything of the user's state the probe could disturb, read by a silent user expression
/// (which itself changes none of it). The kernel's own messaging may import `zmq` helpers when
/// it sends large messages such as the probe's source: those are not the probe's doing.
const STATE: &str = r#"(lambda sys: repr((
    sorted((k, id(v)) for k, v in globals().items()),
    get_ipython().execution_count,
    len(get_ipython().history_manager.input_hist_raw),
    repr(globals().get('_')),
    sorted(Out),
    sorted(m for m in sys.modules if m != '_crane_probe' and not m.startswith('zmq.')),
    sys.modules['numpy'].random.get_state()[1].tolist() if 'numpy' in sys.modules else None,
    sys.modules['random'].getstate(),
    sys.modules['torch'].random.get_rng_state().tolist() if 'torch' in sys.modules else None,
    calls,
)))(__import__('sys'))"#;

const HOSTILE: &str = r#"
import os, random, sys, tempfile
import numpy as np, pandas as pd, torch
random.seed(1); np.random.seed(2); torch.manual_seed(3)
calls = []

class Loud:
    def __repr__(self):
        calls.append('repr'); raise RuntimeError('repr')
    def __len__(self):
        calls.append('len'); raise RuntimeError('len')
    def __getattr__(self, name):
        calls.append('getattr'); raise RuntimeError('getattr')
    def __getitem__(self, key):
        calls.append('getitem'); raise RuntimeError('getitem')
    def __eq__(self, other):
        calls.append('eq'); return False
    __hash__ = object.__hash__
    @property
    def slow(self):
        calls.append('property')
        while True:
            pass

loud = Loud()
holder = {'loud': loud, 'n': 1}
path = os.path.join(tempfile.mkdtemp(), 'huge.dat')
with open(path, 'wb') as fh:
    fh.truncate(10 * 1024 ** 3)
huge = np.memmap(path, dtype=np.float32, mode='r', shape=(10 * 1024 ** 3 // 4 // 1000, 1000))
def numbers():
    calls.append('generator')
    yield 1
gen = numbers()
wide = pd.DataFrame(np.zeros((3, 100_000)))
loop = [1, 2]
loop.append(loop)
json = 'not the json module'
sys = 'not the sys module'
"#;

/// Equal states, or a panic that shows where they differ (the whole state is long).
fn assert_same_state(before: &str, after: &str) {
    let first_difference = before
        .char_indices()
        .zip(after.chars())
        .find(|((_, a), b)| a != b)
        .map(|((i, _), _)| i)
        .unwrap_or(before.len().min(after.len()));
    if before != after {
        let start = before[..first_difference]
            .char_indices()
            .rev()
            .nth(120)
            .map_or(0, |(i, _)| i);
        let end = |s: &str| (first_difference + 200).min(s.len());
        panic!(
            "the probe changed the user's state:\n before: ...{}\n after:  ...{}",
            &before[start..end(before)],
            &after[start..end(after)]
        );
    }
}

#[tokio::test]
async fn probe_changes_nothing_and_survives_hostile_objects() {
    let mut kernel = start_kernel().await;
    run_cell(&mut kernel, HOSTILE).await;
    run_cell(&mut kernel, "loud_len = 3\nloud_len").await;

    let (before, _) = eval_silent(&mut kernel, STATE).await;
    let budget = Budget {
        time: Duration::from_millis(150),
        max_bytes: 12_000,
        ..Budget::default()
    };
    let expressions: Vec<String> = [
        "loud",
        "loud.slow",
        "loud.anything",
        "loud[0]",
        "holder",
        "huge",
        "huge[0]",
        "gen",
        "wide",
        "loop",
        "json",
        "sys",
        "np",
        "torch",
        "random",
        "pd.read_csv",
        "pd.DataFrame",
        "np.concatenate",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let info = crane_probe::summarize(&mut kernel, &expressions, &budget)
        .await
        .expect("probe answers");
    let (after, _) = eval_silent(&mut kernel, STATE).await;
    assert_same_state(&before, &after);
    let (calls, _) = eval_silent(&mut kernel, "calls").await;
    assert_eq!(calls, "[]", "no user code ran");

    let cost = info.cost.expect("cost");
    assert!(
        cost.bytes <= 12_000,
        "answer within the size budget: {cost:?}"
    );
    for expression in &expressions {
        assert!(info.get(expression).is_some(), "a summary for {expression}");
    }
    assert_eq!(var(&info, "loud").type_name, "__main__.Loud");
    for refused in ["loud.slow", "loud.anything", "loud[0]"] {
        let entry = var(&info, refused);
        assert_eq!(entry.kind, Kind::Other);
        assert!(entry.error.as_deref().unwrap().starts_with("not evaluated"));
    }
    assert_eq!(fact(&info, "holder", Section::S, "len"), &json!(2));
    assert_eq!(
        var(&info, "huge").shape(),
        Some(vec![Some(2_684_354), Some(1000)])
    );
    assert_eq!(fact(&info, "huge", Section::R, "memmap"), &json!(true));
    assert_eq!(
        fact(&info, "gen", Section::R, "state"),
        &json!("GEN_CREATED")
    );
    let wide = var(&info, "wide");
    assert_eq!(wide.shape(), Some(vec![Some(3), Some(100_000)]));
    assert_eq!(
        wide.has_column("999"),
        None,
        "truncated columns are unknown"
    );
    assert_eq!(fact(&info, "loop", Section::S, "len"), &json!(3));
    assert_eq!(
        var(&info, "json").value(),
        Some(&json!("not the json module"))
    );
    assert_eq!(var(&info, "sys").kind, Kind::Str);

    kernel.close().await.expect("kernel shuts down");
}

#[tokio::test]
async fn probe_prints_nothing_imports_nothing_and_reinjects_itself() {
    let mut kernel = start_kernel().await;
    run_cell(&mut kernel, "import math\nvalues = [1.5, 2.5]").await;
    let (modules_before, _) = eval_silent(&mut kernel, "sorted(__import__('sys').modules)").await;

    let info = facts(&mut kernel, &["values", "math", "math.pi", "math.nope"]).await;
    assert_eq!(var(&info, "values").value(), Some(&json!([1.5, 2.5])));
    assert_eq!(var(&info, "math.pi").kind, Kind::Float);
    assert_eq!(var(&info, "math.nope").kind, Kind::Absent);

    let (modules_after, _) = eval_silent(
        &mut kernel,
        &format!("sorted(m for m in __import__('sys').modules if m != '{PROBE_MODULE}')"),
    )
    .await;
    assert_eq!(modules_before, modules_after, "no module was imported");
    assert!(!modules_after.contains("'pandas'"));

    // A direct call of the injected module, to see every output of the request.
    let request = Value::String(json!({"expressions": ["values", "math"]}).to_string());
    let (answer, execution) = eval_silent(
        &mut kernel,
        &format!("__import__('sys').modules['{PROBE_MODULE}'].summarize({request})"),
    )
    .await;
    assert!(execution.outputs.is_empty(), "{:?}", execution.outputs);
    assert!(answer.starts_with("{\"variables\""));

    // A user who deletes the module gets it back on the next call.
    kernel
        .execute(
            &format!("__import__('sys').modules.pop('{PROBE_MODULE}')"),
            &ExecuteOptions::silent(),
        )
        .await
        .expect("executes");
    let info = facts(&mut kernel, &["values"]).await;
    assert_eq!(var(&info, "values").kind, Kind::List);
    crane_probe::inject(&mut kernel).await.expect("idempotent");

    // A stale version in the kernel is replaced.
    kernel
        .execute(
            &format!("__import__('sys').modules['{PROBE_MODULE}'].DIGEST = 'old'"),
            &ExecuteOptions::silent(),
        )
        .await
        .expect("executes");
    let info = facts(&mut kernel, &["values"]).await;
    assert_eq!(var(&info, "values").kind, Kind::List);
    let (digest, _) = eval_silent(
        &mut kernel,
        &format!("__import__('sys').modules['{PROBE_MODULE}'].DIGEST"),
    )
    .await;
    assert_eq!(digest, format!("'{}'", crane_probe::probe_digest()));

    kernel.close().await.expect("kernel shuts down");
}

#[tokio::test]
async fn a_ride_along_summary_reads_the_state_the_next_cell_sees() {
    let mut kernel = start_kernel().await;
    let along = |expressions: &[&str]| {
        let expressions: Vec<String> = expressions.iter().map(|e| e.to_string()).collect();
        RideAlong::summarize(&expressions, &common::roomy_budget())
    };
    let cell = |along: &RideAlong| {
        along.attach(ExecuteOptions::cell().with_timeout(Duration::from_secs(60)))
    };

    // No probe in the kernel yet: the ride gives nothing, and the caller asks directly.
    let execution = kernel
        .execute("values = [1, 2, 3]", &cell(&along(&["values"])))
        .await
        .expect("executes");
    assert!(execution.error().is_none());
    assert!(RideAlong::read(&execution).is_none());
    crane_probe::inject(&mut kernel).await.expect("injects");
    let execution = kernel
        .execute("values.pop()", &cell(&along(&["values"])))
        .await
        .expect("executes");
    let ridden = RideAlong::read(&execution).expect("the probe answered");
    assert_eq!(var(&ridden, "values").value(), Some(&json!([1, 2])));
    run_cell(&mut kernel, "values.append(3)").await;

    let (count_before, _) = eval_silent(&mut kernel, "get_ipython().execution_count").await;
    let (out_before, _) = eval_silent(&mut kernel, "sorted(Out)").await;
    let execution = kernel
        .execute(
            "values.append(4)\nlabel = 'four'",
            &cell(&along(&["values", "label", "nowhere"])),
        )
        .await
        .expect("executes");
    let ridden = RideAlong::read(&execution).expect("the kernel answered the ride");
    assert_eq!(var(&ridden, "values").value(), Some(&json!([1, 2, 3, 4])));
    assert_eq!(var(&ridden, "label").value(), Some(&json!("four")));
    assert_eq!(ridden.missing, vec!["nowhere".to_string()]);
    assert!(execution.outputs.is_empty(), "{:?}", execution.outputs);

    let asked = facts(&mut kernel, &["values", "label", "nowhere"]).await;
    assert_eq!(ridden.variables, asked.variables);
    let (count_after, _) = eval_silent(&mut kernel, "get_ipython().execution_count").await;
    let (out_after, _) = eval_silent(&mut kernel, "sorted(Out)").await;
    assert_eq!(
        count_after.parse::<u64>().expect("a count"),
        count_before.parse::<u64>().expect("a count") + 1,
        "only the cell itself is counted"
    );
    assert_eq!(out_before, out_after);

    // A cell that raises gets no user expressions evaluated: nothing rides back.
    let execution = kernel
        .execute("1 / 0", &cell(&along(&["values"])))
        .await
        .expect("executes");
    assert!(execution.error().is_some());
    assert!(RideAlong::read(&execution).is_none());

    kernel.close().await.expect("kernel shuts down");
}

/// Once injected, crane calls its modules through its own shell message: none of IPython's
/// machinery around an execute request runs (the user's input transformers and
/// `pre_execute`/`post_execute` callbacks, which are user code), and the shell's record of the
/// last execution stays the user's.
#[tokio::test]
async fn calls_run_none_of_the_machinery_around_a_cell() {
    let mut kernel = start_kernel().await;
    run_cell(
        &mut kernel,
        r#"
import numpy as np
seen = []
def note_transform(lines):
    seen.append('transform')
    return lines
get_ipython().input_transformers_post.append(note_transform)
get_ipython().events.register('pre_execute', lambda: seen.append('pre_execute'))
get_ipython().events.register('post_execute', lambda: seen.append('post_execute'))
values = np.arange(6.0)
"#,
    )
    .await;
    crane_probe::inject(&mut kernel).await.expect("injects");
    assert!(
        kernel.handles("crane_call_request"),
        "an ipykernel serves crane's calls once the probe is in it"
    );
    // What the kernel records between two cells, with crane's calls between them and without.
    const RECORD: &str = "(get_ipython().last_execution_result.info.raw_cell, list(seen))";
    run_cell(&mut kernel, "seen.clear()").await;
    for _ in 0..3 {
        let info = facts(&mut kernel, &["values", "np.arange"]).await;
        assert_eq!(var(&info, "values").shape(), Some(vec![Some(6)]));
    }
    let with_calls = run_cell(&mut kernel, RECORD).await;
    run_cell(&mut kernel, "seen.clear()").await;
    let without = run_cell(&mut kernel, RECORD).await;
    assert_eq!(with_calls.result_text(), without.result_text());
    assert!(
        with_calls
            .result_text()
            .is_some_and(|text| text.starts_with("('seen.clear()', [")),
        "{:?}",
        with_calls.result_text()
    );

    // A kernel that no longer serves the message (its handler gone, as after a restart into an
    // older probe) is asked by user expression again, which installs the handler anew.
    run_cell(
        &mut kernel,
        "get_ipython().kernel.shell_handlers.pop('crane_call_request')",
    )
    .await;
    let info = facts(&mut kernel, &["values"]).await;
    assert_eq!(var(&info, "values").shape(), Some(vec![Some(6)]));
    assert!(kernel.handles("crane_call_request"));
    let (served, _) = eval_silent(
        &mut kernel,
        "'crane_call_request' in get_ipython().kernel.shell_handlers",
    )
    .await;
    assert_eq!(served, "True");

    kernel.close().await.expect("kernel shuts down");
}
