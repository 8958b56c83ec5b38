//! What the replica keeps out: the replica's process imports nothing from the notebook's
//! folder (a `token.py`, `queue.py` or `platform.py` of the user's there, which its start
//! imports by those names, never runs), though its sealed child still runs the cell in that
//! folder; and the kernel's export for it calls nothing the user bound (a
//! `functools.partial(os.system, ...)` as a class's `__getstate__`, as an object's own
//! `__reduce_ex__`, as copyreg's reducer of a class), while plain objects of the notebook's
//! classes, a tuple of its own class, dataclasses and frames are still copied exactly.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{judged_in_replica, project_python, run_cell, start_kernel};

use crane_kernel::{KernelLaunch, KernelOrigin, KernelSession, OwnedKernel, StartOptions};
use crane_probe::replica::{Replica, ReplicaState};

/// A module of the user's named like one of the standard library's: it notes who ran it, then
/// puts the real module in its place so that nothing breaks.
fn shadowing_module(name: &str, marker: &Path) -> String {
    format!(
        "import os as _os, sys as _sys, importlib as _il\n\
         with open({marker:?}, 'a') as _mk:\n    _mk.write(f'{name} ran in {{_os.getpid()}}\\n')\n\
         _here = _os.path.dirname(_os.path.abspath(__file__))\n_saved = _sys.path[:]\n\
         _sys.path[:] = [p for p in _sys.path if _os.path.abspath(p or '.') != _here]\n\
         del _sys.modules[__name__]\n_real = _il.import_module(__name__)\n_sys.path[:] = _saved\n\
         _sys.modules[__name__] = _real\n",
        marker = marker.to_str().expect("UTF-8"),
    )
}

#[tokio::test]
async fn the_replica_runs_nothing_from_the_notebooks_folder() {
    let folder = tempfile::tempdir().expect("a notebook folder");
    let marker = folder.path().join("ran.txt");
    for name in ["token", "queue", "platform", "string"] {
        std::fs::write(
            folder.path().join(format!("{name}.py")),
            shadowing_module(name, &marker),
        )
        .expect("module");
    }
    std::fs::write(folder.path().join("helper.py"), "VALUE = 41\n").expect("helper");
    std::fs::write(folder.path().join("data.txt"), "1\n").expect("data");
    let launch = KernelLaunch::python(project_python(), KernelOrigin::CranePythonEnv);
    let start = StartOptions {
        working_dir: Some(folder.path().to_owned()),
        start_timeout: Duration::from_secs(120),
        ..StartOptions::default()
    };
    let mut session: KernelSession = OwnedKernel::start(&launch, &start)
        .await
        .expect("kernel starts")
        .into();
    run_cell(
        &mut session,
        "import os\nx = 1\nos.environ['CRANE_TEST_REFUSE_FORK'] = 'the replica is tested'",
    )
    .await;
    let before = std::fs::read_to_string(&marker).unwrap_or_default();
    let mut replica = Replica::new(Some(project_python()));
    // The sealed child still works in the kernel's folder: its files, its own modules.
    let report = judged_in_replica(
        &mut session,
        &mut replica,
        "import helper\nprint(x + helper.VALUE + int(open('data.txt').read()))",
    )
    .await;
    assert!(report.stdout_tail.contains("43"), "{report:?}");
    let ReplicaState::Ready { pid, .. } = replica.state() else {
        panic!("no replica: {:?}", replica.state());
    };
    let after = std::fs::read_to_string(&marker).unwrap_or_default();
    assert_eq!(
        after, before,
        "the notebook folder's modules ran in the replica's process"
    );
    let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).expect("its directory");
    assert_ne!(
        cwd.canonicalize().ok(),
        folder.path().canonicalize().ok(),
        "the replica works in the notebook's folder"
    );
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).expect("its command line");
    assert!(
        cmdline.split(|byte| *byte == 0).any(|arg| arg == b"-I"),
        "not isolated: {}",
        String::from_utf8_lossy(&cmdline)
    );
    replica.shutdown().await;
    session.close().await.expect("shutdown");
}

#[tokio::test]
async fn exporting_to_the_replica_calls_nothing_the_user_bound() {
    let folder = tempfile::tempdir().expect("a directory");
    let marker = folder.path().join("exported.txt");
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        &format!(
            "import copyreg, dataclasses, functools, os\nimport pandas as pd\n\
             bound = functools.partial(os.system, 'echo ran >> {marker}')\n\
             class Job:\n    __getstate__ = bound\n\
             job = Job()\n\
             class Plain:\n    def __init__(self):\n        self.rows = [1, 2]\n\
             plain = Plain()\nplain.__dict__['__reduce_ex__'] = bound\n\
             class Registered:\n    def describe(self):\n        return 'registered'\n\
             registered = Registered()\ncopyreg.pickle(Registered, bound)\n\
             class Pair(tuple):\n    def total(self):\n        return sum(self)\n\
             pair = Pair((1, 2))\n\
             @dataclasses.dataclass\nclass Run:\n    name: str\n    epochs: int\n    def left(self):\n        return self.epochs\n\
             run = Run('a', 3)\n\
             frame = pd.DataFrame({{'a': [1, 2]}})\n\
             hooked = pd.DataFrame({{'a': [1, 2]}})\nhooked.__dict__['__reduce_ex__'] = bound\n\
             os.environ['CRANE_TEST_REFUSE_FORK'] = 'the replica is tested'",
            marker = marker.display(),
        ),
    )
    .await;
    let mut replica = Replica::new(Some(project_python()));
    let report = judged_in_replica(
        &mut session,
        &mut replica,
        "print(job, plain.rows, registered.describe(), pair.total(), run.left(), frame.shape, hooked.shape)",
    )
    .await;
    let rebuilt = report.replica.as_ref().expect("rebuilt");
    assert!(
        !marker.exists(),
        "the export ran the user's os.system: {:?}",
        std::fs::read_to_string(&marker)
    );
    assert!(
        rebuilt
            .declined
            .get("job")
            .is_some_and(|why| why.contains("its class Job defines __getstate__")),
        "{rebuilt:?}"
    );
    assert!(
        rebuilt
            .declined
            .get("hooked")
            .is_some_and(|why| why.contains("set on the DataFrame object itself")),
        "{rebuilt:?}"
    );
    for name in ["plain", "registered", "pair", "run", "frame"] {
        assert!(
            rebuilt.exact.iter().any(|exact| exact == name),
            "{name} not copied exactly: {rebuilt:?}"
        );
    }
    replica.shutdown().await;
    session.close().await.expect("shutdown");
}
