//! Dry runs in a real ipykernel: the fork reports the real outcome, and the kernel (its
//! namespace, its outputs, its process table) is left as it was.

mod common;

use std::time::Duration;

use common::project_python;

use crane_kernel::{
    ExecuteOptions, KernelLaunch, KernelOrigin, KernelSession, OwnedKernel, ReplyStatus,
    StartOptions, UserExpression,
};
use crane_probe::dry_run::{
    dry_run, DryRunOptions, DryRunOutcome, DryRunReport, DryRunResult, ProcessEnd, Unsupported,
};

struct Kernel {
    session: KernelSession,
    pid: u32,
}

impl Kernel {
    async fn start() -> Kernel {
        let launch = KernelLaunch::python(project_python(), KernelOrigin::PythonFlag);
        let kernel = OwnedKernel::start(&launch, &StartOptions::default())
            .await
            .expect("kernel starts");
        let pid = kernel.pid();
        Kernel {
            session: kernel.into(),
            pid,
        }
    }

    /// Run a cell as a notebook would; it must succeed.
    async fn cell(&mut self, code: &str) {
        let execution = self
            .session
            .execute(
                code,
                &ExecuteOptions::cell().with_timeout(Duration::from_secs(300)),
            )
            .await
            .expect("execute");
        let reply = execution.reply().expect("reply");
        assert_eq!(
            reply.status,
            ReplyStatus::Ok,
            "cell failed: {code}\n{execution:?}"
        );
    }

    /// `text/plain` of an expression evaluated silently in the kernel.
    async fn eval(&mut self, expression: &str) -> String {
        let options = ExecuteOptions::silent()
            .with_timeout(Duration::from_secs(60))
            .with_user_expression("value", expression);
        let execution = self.session.execute("", &options).await.expect("execute");
        assert!(execution.outputs.is_empty(), "{:?}", execution.outputs);
        match &execution.reply().expect("reply").user_expressions["value"] {
            UserExpression::Value { data, .. } => {
                data["text/plain"].as_str().expect("text").to_owned()
            }
            UserExpression::Error(error) => panic!("{expression}: {error:?}"),
        }
    }

    async fn dry_run(&mut self, code: &str, options: &DryRunOptions) -> DryRunOutcome {
        dry_run(&mut self.session, code, options)
            .await
            .expect("dry run")
    }

    /// A dry run that ran, with no process of it left behind.
    async fn ran(&mut self, code: &str, options: &DryRunOptions) -> DryRunReport {
        match self.dry_run(code, options).await {
            DryRunOutcome::Ran(report) => {
                assert_no_leftovers(self.pid, report.child_pid);
                report
            }
            DryRunOutcome::Unsupported { reasons } => panic!("unsupported: {reasons:?}"),
        }
    }

    async fn unsupported(&mut self, code: &str, options: &DryRunOptions) -> Vec<Unsupported> {
        match self.dry_run(code, options).await {
            DryRunOutcome::Unsupported { reasons } => reasons,
            DryRunOutcome::Ran(report) => panic!("ran: {report:?}"),
        }
    }

    /// What a user would notice: names, the DataFrame's content, the counter, the history.
    async fn user_state(&mut self) -> String {
        self.eval(
            "repr((sorted(k for k in globals() if not k.startswith('_')), df.to_json(), x, \
             get_ipython().execution_count, len(get_ipython().history_manager.input_hist_raw), \
             len(Out)))",
        )
        .await
    }

    async fn close(self) {
        self.session.close().await.expect("shutdown");
    }
}

fn options() -> DryRunOptions {
    DryRunOptions {
        timeout: Duration::from_secs(60),
        ..DryRunOptions::default()
    }
}

struct Process {
    pid: u32,
    state: char,
    parent: u32,
    group: u32,
}

fn processes() -> Vec<Process> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        found.push(Process {
            pid,
            state: fields[0].chars().next().unwrap_or('?'),
            parent: fields[1].parse().unwrap_or(0),
            group: fields[2].parse().unwrap_or(0),
        });
    }
    found
}

/// No zombie child of the kernel, and nothing left of the fork's process group.
fn assert_no_leftovers(kernel_pid: u32, child_pid: u32) {
    let left: Vec<String> = processes()
        .into_iter()
        .filter(|p| (p.parent == kernel_pid && p.state == 'Z') || p.group == child_pid)
        .map(|p| format!("pid {} state {} parent {}", p.pid, p.state, p.parent))
        .collect();
    assert!(left.is_empty(), "left behind by the dry run: {left:?}");
}

const SETUP: &str = "import pandas as pd\n\
                     df = pd.DataFrame({'a': [1, 2, 3], 'b': [4.0, 5.0, 6.0]})\n\
                     x = 1";

#[tokio::test]
async fn a_crashing_cell_reports_its_exception_and_line_and_changes_nothing() {
    let mut kernel = Kernel::start().await;
    kernel.cell(SETUP).await;
    let before = kernel.user_state().await;

    let code = "df['a'] = 0\n\
                df.drop(columns=['b'], inplace=True)\n\
                x += 1\n\
                y = 5\n\
                total = df['a'].sum() + df['price'].sum()";
    let report = kernel.ran(code, &options()).await;
    let exception = report.exception().expect("raised");
    assert_eq!(exception.exception, "KeyError");
    assert_eq!(exception.message, "'price'");
    assert_eq!(exception.line, Some(5));
    assert!(
        exception
            .traceback
            .iter()
            .any(|line| line.contains("<crane-dry-run>") && line.contains("line 5")),
        "{:?}",
        exception.traceback
    );
    assert!(exception
        .traceback
        .iter()
        .any(|line| line.contains("df['price']")));

    assert_eq!(kernel.user_state().await, before);
    assert_eq!(
        kernel.eval("list(df.columns), list(df['a'])").await,
        "(['a', 'b'], [1, 2, 3])"
    );
    kernel.close().await;
}

#[tokio::test]
async fn a_passing_cell_reports_ok_and_its_assignments_stay_in_the_fork() {
    let mut kernel = Kernel::start().await;
    kernel.cell(SETUP).await;
    let before = kernel.user_state().await;

    let report = kernel
        .ran("y = x + 41\ndf['c'] = df['a'] * 2\nprint(y)\ny", &options())
        .await;
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(report.stdout_tail, "42\n42\n");
    assert!(report.timings.run.is_some());

    assert_eq!(kernel.user_state().await, before);
    assert_eq!(
        kernel.eval("'y' in globals(), 'c' in df").await,
        "(False, False)"
    );
    // The fork, not the kernel, is what the OOM killer takes first.
    let read = "open('/proc/self/oom_score_adj').read().strip()";
    let kernels = kernel.eval(read).await;
    let report = kernel.ran(&format!("print({read})"), &options()).await;
    assert_eq!(report.stdout_tail, "1000\n");
    assert_eq!(kernel.eval(read).await, kernels);
    kernel.close().await;
}

#[tokio::test]
async fn an_endless_loop_is_killed_at_the_timeout_and_the_kernel_answers_after() {
    let mut kernel = Kernel::start().await;
    let options = DryRunOptions {
        timeout: Duration::from_secs(2),
        allow_side_effects: true,
        ..DryRunOptions::default()
    };
    // The loop starts a program of its own, which must go with it.
    let code = "import subprocess\nsleeper = subprocess.Popen(['sleep', '300'])\n\
                print(sleeper.pid, flush=True)\nwhile True:\n    pass";
    let report = kernel.ran(code, &options).await;
    assert_eq!(
        report.result,
        DryRunResult::TimedOut {
            after: Duration::from_secs(2)
        }
    );
    let sleeper: u32 = report.stdout_tail.trim().parse().expect("sleeper pid");
    assert!(!processes().iter().any(|p| p.pid == sleeper));

    assert_eq!(kernel.eval("6 * 7").await, "42");
    kernel.close().await;
}

#[tokio::test]
async fn a_program_the_cell_leaves_running_is_killed_with_the_fork() {
    let mut kernel = Kernel::start().await;
    let options = DryRunOptions {
        allow_side_effects: true,
        ..options()
    };
    let code =
        "import subprocess\nsleeper = subprocess.Popen(['sleep', '300'])\nprint(sleeper.pid)";
    let report = kernel.ran(code, &options).await;
    assert!(report.is_ok(), "{report:?}");
    let sleeper: u32 = report.stdout_tail.trim().parse().expect("sleeper pid");
    assert!(!processes().iter().any(|p| p.pid == sleeper));
    kernel.close().await;
}

#[tokio::test]
async fn unbounded_allocation_stops_at_the_memory_limit() {
    let mut kernel = Kernel::start().await;
    kernel
        .cell("import numpy as np\nbig = np.ones(32 * 2**20)")
        .await;
    let options = DryRunOptions {
        memory_limit_bytes: Some(128 << 20),
        ..options()
    };

    // One allocation beyond the limit fails at once: the address space is limited.
    let report = kernel
        .ran("a = 1\nb = bytearray(512 * 2**20)", &options)
        .await;
    let DryRunResult::MemoryLimit {
        exception: Some(exception),
        request: None,
        ..
    } = &report.result
    else {
        panic!("not stopped by the limit, or a size named: {report:?}");
    };
    assert_eq!(
        (exception.exception.as_str(), exception.line),
        ("MemoryError", Some(2))
    );
    assert_eq!(report.memory_limit_bytes, 128 << 20);

    // Growing without bound stops at the limit (whichever of the address-space limit and
    // crane's watch of the fork's own memory comes first).
    let report = kernel
        .ran(
            "blocks = []\nwhile True:\n    blocks.append(bytearray(16 * 2**20))",
            &options,
        )
        .await;
    match &report.result {
        DryRunResult::MemoryLimit {
            exception: Some(exception),
            ..
        } => assert_eq!(
            (exception.exception.as_str(), exception.line),
            ("MemoryError", Some(3))
        ),
        DryRunResult::MemoryLimit {
            exception: None,
            used_bytes: Some(used),
            ..
        } => assert!(*used > 128 << 20),
        _ => panic!("not stopped by the limit: {report:?}"),
    }

    // Writing into the kernel's 256 MB array copies its pages: crane's watch kills the fork.
    let report = kernel
        .ran("for _ in range(10_000):\n    big += 1", &options)
        .await;
    let DryRunResult::MemoryLimit {
        exception: None,
        used_bytes: Some(used),
        request: None,
    } = report.result
    else {
        panic!("not stopped by the watch: {report:?}");
    };
    assert!(used > 128 << 20);
    assert_eq!(
        kernel.eval("float(big.min()), float(big.max())").await,
        "(1.0, 1.0)"
    );
    kernel.close().await;
}

#[tokio::test]
async fn output_of_the_fork_never_reaches_the_notebook() {
    let mut kernel = Kernel::start().await;
    // Record every message the kernel publishes on IOPub, including those ipykernel forwards
    // from forked processes.
    kernel
        .eval(
            "(lambda sys, thread: (setattr(sys, '_recorded_iopub', []), setattr(thread, \
             '_really_send', (lambda send: lambda msg, *a, **k: (sys._recorded_iopub.append(\
             repr(msg)), send(msg, *a, **k))[1])(thread._really_send))))(__import__('sys'), \
             get_ipython().kernel.iopub_thread) is None",
        )
        .await;

    let code = "import os, sys\nfrom IPython.display import display, HTML\n\
                tag = 'dry' + '-run'\n\
                print(tag + '-stdout')\n\
                print(tag + '-stderr', file=sys.stderr)\n\
                display(HTML('<b>' + tag + '-html</b>'), tag + '-display')\n\
                os.write(1, (tag + '-fd\\n').encode())\n\
                tag + '-result'";
    let report = kernel.ran(code, &options()).await;
    assert!(report.is_ok(), "{report:?}");
    assert!(report
        .stdout_tail
        .contains("<IPython.core.display.HTML object>"));
    for marker in ["stdout", "stderr", "display", "fd", "result"] {
        assert!(
            report.stdout_tail.contains(&format!("dry-run-{marker}")),
            "{marker} missing from {:?}",
            report.stdout_tail
        );
    }

    tokio::time::sleep(Duration::from_millis(500)).await;
    kernel.cell("pass").await;
    let recorded = kernel
        .eval("'\\n'.join(__import__('sys')._recorded_iopub)")
        .await;
    assert!(
        recorded.contains("status"),
        "the recorder saw nothing: {recorded}"
    );
    assert!(
        !recorded.contains("dry-run-"),
        "leaked to IOPub: {recorded}"
    );
    kernel.close().await;
}

#[tokio::test]
async fn a_cell_writing_over_a_file_is_sealed_and_writes_only_with_side_effects_allowed() {
    let mut kernel = Kernel::start().await;
    kernel.cell(SETUP).await;
    let target = std::env::temp_dir().join(format!("crane-dry-run-{}.csv", std::process::id()));
    std::fs::write(&target, "old").expect("write the file");
    let code = format!(
        "x = 1\ndf.to_csv({:?})",
        target.to_str().expect("utf-8 path")
    );

    let report = kernel.ran(&code, &options()).await;
    let DryRunResult::Blocked { attempts, .. } = &report.result else {
        panic!("{report:?}");
    };
    assert_eq!(attempts[0].line, Some(2), "{attempts:?}");
    assert!(attempts[0].what.contains("for writing"), "{attempts:?}");
    assert_eq!(std::fs::read_to_string(&target).expect("read"), "old");

    let allowed = DryRunOptions {
        allow_side_effects: true,
        ..options()
    };
    assert!(kernel.ran(&code, &allowed).await.is_ok());
    assert_ne!(
        std::fs::read_to_string(&target).expect("read"),
        "old",
        "the fork shares the file system"
    );
    std::fs::remove_file(&target).expect("remove the file");
    kernel.close().await;
}

#[tokio::test]
async fn making_a_directory_that_exists_is_no_attempt_and_a_new_one_stays_in_memory() {
    let mut kernel = Kernel::start().await;
    let dir = tempfile::tempdir().expect("temporary directory");
    let existing = dir.path().join("cache");
    std::fs::create_dir(&existing).expect("make the directory");
    let fresh = dir.path().join("fresh");
    let report = kernel
        .ran(
            &format!(
                "import os, pathlib\n\
                 os.makedirs({existing:?}, exist_ok=True)\n\
                 pathlib.Path({existing:?}).mkdir(parents=True, exist_ok=True)\n\
                 try:\n    os.mkdir({existing:?})\nexcept FileExistsError as error:\n    print(error.errno)"
            ),
            &options(),
        )
        .await;
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(report.stdout_tail, "17\n");

    // A new one is made in the fork's memory (`crane_overlay.py`), never on the disk.
    let report = kernel
        .ran(
            &format!("import os\nos.mkdir({fresh:?})\nprint(os.path.isdir({fresh:?}))"),
            &options(),
        )
        .await;
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(report.stdout_tail, "True\n");
    assert!(!fresh.exists());
    kernel.close().await;
}

#[tokio::test]
async fn native_code_naming_its_threads_is_no_attempt_and_a_native_write_is_named_by_its_path() {
    let mut kernel = Kernel::start().await;
    // glibc names another thread through /proc/self/task/TID/comm, opened for writing, as
    // native runtimes (TensorFlow's pools) do: the process's own threads, nothing outside.
    let names = "import ctypes, threading\nlibc = ctypes.CDLL(None)\nready, done = threading.Event(), threading.Event()\n\
                 worker = threading.Thread(target=lambda: (ready.set(), done.wait()))\nworker.start()\nready.wait()\n\
                 codes = [libc.pthread_setname_np(ctypes.c_ulong(worker.ident), f'pool-{i}'.encode()) for i in range(20)]\n\
                 done.set()\nworker.join()\nprint(len(codes))";
    let report = kernel.ran(names, &options()).await;
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(report.stdout_tail, "20\n");
    let dir = tempfile::tempdir().expect("temporary directory");
    let target = dir.path().join("native.bin");
    let write = format!(
        "import ctypes, os\nfd = ctypes.CDLL(None).open({:?}.encode(), os.O_WRONLY | os.O_CREAT, 0o600)",
        target.to_str().expect("utf-8 path")
    );
    let report = kernel.ran(&write, &options()).await;
    let DryRunResult::Blocked { attempts, .. } = &report.result else {
        panic!("{report:?}");
    };
    assert_eq!(
        (attempts[0].what.as_str(), attempts[0].line),
        (format!("openat '{}'", target.display()).as_str(), Some(2))
    );
    assert!(!target.exists());
    kernel.close().await;
}

#[tokio::test]
async fn magics_run_with_the_kernels_transformations_and_shell_escapes_are_blocked() {
    let mut kernel = Kernel::start().await;
    let report = kernel.ran("\n\n%time w = 6 * 7\nw", &options()).await;
    assert!(report.is_ok(), "{report:?}");
    assert!(report.stdout_tail.contains("Wall time"), "{report:?}");
    assert!(report.stdout_tail.ends_with("42\n"), "{report:?}");
    assert_eq!(kernel.eval("'w' in globals()").await, "False");

    let report = kernel
        .ran("\n\ndef f(d):\n    return d['k']\n\nf({})", &options())
        .await;
    let exception = report.exception().expect("raised");
    assert_eq!(
        (exception.exception.as_str(), exception.line),
        ("KeyError", Some(6))
    );

    let report = kernel.ran("!echo hi", &options()).await;
    assert!(
        matches!(&report.result, DryRunResult::Blocked { attempts, .. }
            if attempts.iter().all(|attempt| attempt.line == Some(1))),
        "{report:?}"
    );
    assert!(!report.stdout_tail.contains("hi"), "{report:?}");
    kernel.close().await;
}

#[tokio::test]
async fn syntax_errors_exits_and_native_crashes_are_reported() {
    let mut kernel = Kernel::start().await;
    let report = kernel.ran("a = 1\nb = (", &options()).await;
    let exception = report.exception().expect("raised");
    assert_eq!(
        (exception.exception.as_str(), exception.line),
        ("SyntaxError", Some(2))
    );

    let report = kernel.ran("import os\nos._exit(3)", &options()).await;
    assert_eq!(report.result, DryRunResult::Died(ProcessEnd::ExitCode(3)));

    let report = kernel
        .ran("import ctypes\nctypes.string_at(0)", &options())
        .await;
    assert_eq!(report.result, DryRunResult::Died(ProcessEnd::Signal(11)));

    let report = kernel.ran("raise SystemExit(2)", &options()).await;
    assert_eq!(
        report.exception().map(|e| e.exception.as_str()),
        Some("SystemExit")
    );
    assert_eq!(kernel.eval("1 + 1").await, "2");
    kernel.close().await;
}

#[tokio::test]
async fn torch_cpu_ops_run_in_the_fork_after_the_kernel_used_its_thread_pool() {
    let mut kernel = Kernel::start().await;
    if kernel
        .eval("__import__('importlib.util').util.find_spec('torch') is not None")
        .await
        != "True"
    {
        eprintln!("torch is not installed; skipped");
        return kernel.close().await;
    }
    kernel
        .cell("import torch\na = torch.ones(1000, 1000)\nb = a @ a\nc = torch.ones(10**6).add(1)")
        .await;
    let report = kernel
        .ran(
            "print(float((a @ a).sum()), float(torch.ones(10**6).add(1).sum()))",
            &options(),
        )
        .await;
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(report.stdout_tail, "1000000000.0 2000000.0\n");
    assert_eq!(kernel.eval("torch.get_num_threads() > 0").await, "True");
    kernel.close().await;
}

#[tokio::test]
async fn the_probe_and_the_dry_run_answer_through_one_call_channel_in_either_order() {
    // Each of crane's modules installs the kernel's handler of crane's call message when it is
    // injected; the handler the last one installed then calls the other's functions.
    let mut kernel = Kernel::start().await;
    kernel
        .cell("import pandas as pd\ndf = pd.DataFrame({'a': [1, 2]})\ndef double(v):\n    return 2 * v")
        .await;
    let budget = crane_probe::Budget::default();
    let cell = "print(double(df['a'].sum()))";
    // The dry run first: the probe, injected next, then takes crane's messages, the dry run's
    // too, so the fork is made under the probe's guard as well as the dry run's own.
    let report = kernel.ran(cell, &options()).await;
    assert_eq!(report.stdout_tail, "6\n", "{report:?}");
    for _ in 0..2 {
        let facts = crane_probe::summarize(&mut kernel.session, &["df".to_owned()], &budget)
            .await
            .expect("facts");
        let facts = serde_json::to_string(&facts).expect("facts as JSON");
        assert!(facts.contains("DataFrame"), "{facts}");
        let report = kernel.ran(cell, &options()).await;
        assert_eq!(report.stdout_tail, "6\n", "{report:?}");
    }
    kernel.close().await;
}

#[tokio::test]
async fn openmp_models_run_in_the_fork_after_the_kernel_used_their_thread_pool() {
    let mut kernel = Kernel::start().await;
    // scikit-learn's histogram boosting and k-means run OpenMP parallel regions (GNU libgomp in
    // its wheels): without one thread per runtime in the fork, the next region waits forever
    // for the kernel's pool workers.
    kernel
        .cell(
            "import numpy as np\n\
             from sklearn.ensemble import HistGradientBoostingRegressor\n\
             from sklearn.cluster import KMeans\n\
             X = np.random.RandomState(0).rand(3000, 8)\n\
             y = X.sum(axis=1)\n\
             HistGradientBoostingRegressor(max_iter=10).fit(X, y)\n\
             KMeans(3, n_init=2, random_state=0).fit(X)",
        )
        .await;
    let quick = DryRunOptions {
        timeout: Duration::from_secs(20),
        ..DryRunOptions::default()
    };
    let report = kernel
        .ran(
            "model = HistGradientBoostingRegressor(max_iter=10).fit(X, y)\n\
             labels = KMeans(3, n_init=2, random_state=0).fit_predict(X)\n\
             print(model.predict(X[:2]).shape, labels.shape)",
            &quick,
        )
        .await;
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(report.stdout_tail, "(2,) (3000,)\n");

    let report = kernel
        .ran(
            "model = HistGradientBoostingRegressor(max_iter=10).fit(X, y)\nmodel.predict(X[:, :3])",
            &quick,
        )
        .await;
    let exception = report.exception().expect("raised");
    assert_eq!(
        (exception.exception.as_str(), exception.line),
        ("ValueError", Some(2))
    );
    kernel.close().await;
}

#[tokio::test]
async fn a_started_tensorflow_runtime_or_a_worker_pool_makes_the_fork_unsafe() {
    let mut kernel = Kernel::start().await;
    kernel
        .cell("import multiprocessing\npool = multiprocessing.Pool(1)")
        .await;
    let reasons = kernel.unsupported("1 + 1", &options()).await;
    assert!(
        matches!(&reasons[..], [Unsupported::Kernel(reason)] if reason.contains("multiprocessing pool")),
        "{reasons:?}"
    );
    kernel.cell("pool.terminate()\npool.join()").await;

    // Imported but not started: the fork starts its own runtime.
    kernel.cell("import tensorflow as tf").await;
    let report = kernel
        .ran("print(int(tf.reduce_sum(tf.ones((4, 4)))))", &options())
        .await;
    assert_eq!(report.stdout_tail.lines().last(), Some("16"), "{report:?}");

    kernel.cell("t = tf.ones((4, 4)) @ tf.ones((4, 4))").await;
    let reasons = kernel.unsupported("t + 1", &options()).await;
    assert!(
        reasons.iter().any(|reason| matches!(reason, Unsupported::Kernel(text) if text.contains("TensorFlow runtime"))),
        "{reasons:?}"
    );
    kernel.close().await;
}

#[tokio::test]
async fn the_kernels_at_fork_hooks_do_not_run_for_the_fork_and_history_keeps_saving() {
    let mut kernel = Kernel::start().await;
    kernel
        .cell(
            "import os\nhook_calls = {'before': 0, 'after_in_parent': 0}\n\
             def count_before():\n    hook_calls['before'] += 1\n\
             def count_after_in_parent():\n    hook_calls['after_in_parent'] += 1\n\
             os.register_at_fork(before=count_before, after_in_parent=count_after_in_parent)",
        )
        .await;
    let history_thread_alive =
        "(lambda t: t is not None and t.is_alive())(get_ipython().history_manager.save_thread)";
    assert_eq!(kernel.eval(history_thread_alive).await, "True");

    let report = kernel
        .ran("pid = os.getpid()\nprint(hook_calls)", &options())
        .await;
    assert!(report.is_ok(), "{report:?}");
    // The child inherits the counters as they were: no hook ran before the fork either.
    assert_eq!(report.stdout_tail, "{'before': 0, 'after_in_parent': 0}\n");
    assert_eq!(
        kernel.eval("hook_calls").await,
        "{'before': 0, 'after_in_parent': 0}"
    );
    assert_eq!(kernel.eval(history_thread_alive).await, "True");

    // The kernel's own forks still run the hooks, exactly as registered.
    kernel
        .cell("child = os.fork()\nif child == 0:\n    os._exit(0)\nos.waitpid(child, 0)")
        .await;
    assert_eq!(
        kernel.eval("hook_calls").await,
        "{'before': 1, 'after_in_parent': 1}"
    );

    // The history thread saves the next cell (in the profile's database, which other kernels
    // share: the marker is this kernel's own).
    let marker = format!("crane-at-fork-{}", kernel.pid);
    kernel.cell(&format!("history_marker = '{marker}'")).await;
    let saved = format!(
        "get_ipython().history_manager.db.execute(\"select count(*) from history \
         where source like '%{marker}%'\").fetchone()[0]"
    );
    let mut count = String::new();
    for _ in 0..50 {
        count = kernel.eval(&saved).await;
        if count == "1" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(count, "1");
    kernel.close().await;
}

/// The files, database, log and listener a notebook set up in earlier cells.
const SEALED_SETUP: &str = r#"
import logging, socket, sqlite3
import numpy as np
mm = np.memmap(DIR + "/data.bin", dtype="uint8", mode="w+", shape=(1 << 16,))
mm[:] = 7
mm.flush()
db = sqlite3.connect(DIR + "/rows.db")
db.execute("create table t (x)")
db.execute("insert into t values (1)")
db.commit()
log = logging.getLogger("sealed")
log.addHandler(logging.FileHandler(DIR + "/run.log"))
log.warning("first")
out = open(DIR + "/out.txt", "w")
out.write("kept")
out.flush()
"#;

fn snapshot(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|entry| {
            let path = entry.expect("entry").path();
            let name = path
                .file_name()
                .expect("name")
                .to_string_lossy()
                .into_owned();
            (name, std::fs::read(&path).expect("read"))
        })
        .collect();
    files.sort();
    files
}

#[tokio::test]
async fn the_seal_leaves_memmaps_databases_logs_files_programs_and_sockets_as_they_were() {
    let dir = tempfile::tempdir().expect("temp dir");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
    listener.set_nonblocking(true).expect("nonblocking");
    let port = listener.local_addr().expect("address").port();
    let mut kernel = Kernel::start().await;
    kernel
        .cell(&format!(
            "DIR = {:?}\n{SEALED_SETUP}",
            dir.path().to_str().expect("utf-8")
        ))
        .await;
    let before = snapshot(dir.path());

    // Writes to the memmap stay in the fork: the cell passes, or raises where it really does.
    let report = kernel
        .ran("mm[:] = 0\nmm += 1\nassert mm[0] == 1", &options())
        .await;
    assert!(report.is_ok(), "{report:?}");
    assert!(
        report.seal.as_ref().is_some_and(|seal| seal.remapped >= 1),
        "{report:?}"
    );
    let report = kernel
        .ran("mm[:] = 0\nmm += 1\nmm[1 << 20]", &options())
        .await;
    let exception = report.exception().expect("raised");
    assert_eq!(
        (exception.exception.as_str(), exception.line),
        ("IndexError", Some(3))
    );
    assert_eq!(
        kernel.eval("int(mm.sum())").await,
        (7 * (1 << 16)).to_string()
    );

    let connect = format!("import socket\ns = socket.socket()\ntry:\n    s.connect(('127.0.0.1', {port}))\nexcept OSError:\n    pass");
    let held: [(&str, u32, &str); 6] = [
        (
            "x = 1\ndb.execute('insert into t values (2)')\ndb.commit()",
            2,
            "",
        ),
        ("log.warning('second')\nx = 1", 1, "run.log"),
        ("out.write('more')\nout.flush()\nout.close()", 2, "out.txt"),
        (
            "import subprocess\nsubprocess.run(['touch', DIR + '/made'])",
            2,
            "subprocess.Popen",
        ),
        (&connect, 4, "socket.connect"),
        (
            "import pandas as pd\npd.DataFrame({'a': [1]}).to_csv(DIR + '/out.txt')\n1 / 0",
            2,
            "out.txt",
        ),
    ];
    for (code, line, what) in held {
        let report = kernel.ran(code, &options()).await;
        let DryRunResult::Blocked { attempts, .. } = &report.result else {
            panic!("{code}: {report:?}");
        };
        assert_eq!(attempts[0].line, Some(line), "{code}: {attempts:?}");
        assert!(
            attempts.iter().any(|attempt| attempt.what.contains(what)),
            "{code}: {attempts:?}"
        );
        assert_eq!(snapshot(dir.path()), before, "{code}");
        assert!(
            listener.accept().is_err(),
            "{code}: the fork reached the listener"
        );
    }
    assert_eq!(
        kernel
            .eval("db.execute('select count(*) from t').fetchone()[0]")
            .await,
        "1"
    );
    kernel.close().await;
}
