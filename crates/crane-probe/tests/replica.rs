//! The replica, with real kernels that cannot be forked: a Keras model built and fitted (a
//! started TensorFlow runtime), and torch in a kernel that refuses forks as one that touched a
//! GPU does (the `CRANE_TEST_REFUSE_FORK` seam: this machine has no GPU). The cell runs in the
//! replica on objects rebuilt from the kernel's, with the libraries' real exceptions.

mod common;

use std::time::Duration;

use common::{
    eval_silent, judged_in_replica, project_python, replica_options, run_cell, start_kernel,
};

use crane_probe::dry_run::{DryRunOutcome, DryRunReport, DryRunResult};
use crane_probe::replica::{Faithfulness, Replica, ReplicaState};

fn raised(report: &DryRunReport) -> (&str, Option<u32>) {
    match &report.result {
        DryRunResult::Raised(exception) => (exception.exception.as_str(), exception.line),
        other => panic!("{other:?}\n{}", report.stdout_tail),
    }
}

fn message(report: &DryRunReport) -> &str {
    match &report.result {
        DryRunResult::Raised(exception) => &exception.message,
        _ => "",
    }
}

fn faithfulness(report: &DryRunReport) -> Faithfulness {
    report.replica.as_ref().expect("replica").faithfulness()
}

const KERAS_SETUP: &str = "import numpy as np\nimport keras\nfrom keras import layers\n\
    rng = np.random.default_rng(0)\n\
    X = rng.random((200, 8)).astype('float32')\ny = rng.integers(0, 3, size=200)\n\
    model = keras.Sequential([keras.Input((8,)), layers.Dense(16, activation='relu'), layers.Dense(3, activation='softmax')])\n\
    model.compile(optimizer='adam', loss='sparse_categorical_crossentropy', metrics=['accuracy'])\n\
    history = model.fit(X, y, epochs=2, verbose=0)\n\
    X_test = rng.random((50, 7)).astype('float32')\ny_test = rng.integers(0, 3, size=50)\n\
    y_wide = rng.integers(0, 5, size=200)\nX_text = np.array([['a'] * 8] * 20)";

#[tokio::test]
async fn keras_cells_after_a_fit_are_judged_in_the_replica_with_tensorflows_exceptions() {
    let mut session = start_kernel().await;
    run_cell(&mut session, KERAS_SETUP).await;
    // The kernel cannot be forked: TensorFlow's runtime has started.
    let alone = crane_probe::dry_run::dry_run(&mut session, "model.predict(X)", &replica_options())
        .await
        .expect("dry run");
    assert!(
        matches!(alone, DryRunOutcome::Unsupported { .. }),
        "{alone:?}"
    );

    let mut replica = Replica::new(Some(project_python()));
    replica
        .warm(&["keras".to_owned(), "numpy".to_owned()])
        .await
        .expect("warm");

    // Shape: a test set one feature short, after more training.
    let report = judged_in_replica(
        &mut session,
        &mut replica,
        "model.fit(X, y, epochs=1, verbose=0)\nmodel.evaluate(X_test, y_test, verbose=0)",
    )
    .await;
    assert_eq!(raised(&report), ("ValueError", Some(2)), "{report:?}");
    assert!(
        message(&report).contains("incompatible"),
        "{}",
        message(&report)
    );
    assert_eq!(faithfulness(&report), Faithfulness::Exact);
    let rebuilt = report.replica.as_ref().expect("replica");
    assert!(rebuilt.exact.contains(&"model".to_owned()), "{rebuilt:?}");
    assert!(!rebuilt.fork_refused.is_empty(), "{rebuilt:?}");

    // Label range: five classes for a three-unit softmax.
    let report = judged_in_replica(
        &mut session,
        &mut replica,
        "model.fit(X, y_wide, epochs=1, verbose=0)",
    )
    .await;
    assert_eq!(
        raised(&report),
        ("InvalidArgumentError", Some(1)),
        "{report:?}"
    );
    assert_eq!(faithfulness(&report), Faithfulness::Exact);

    // Dtype: strings where the model takes floats.
    let report = judged_in_replica(
        &mut session,
        &mut replica,
        "model.predict(X_text, verbose=0)",
    )
    .await;
    assert_eq!(raised(&report).1, Some(1), "{report:?}");

    // The same cells fixed run to their end.
    let report = judged_in_replica(
        &mut session,
        &mut replica,
        "model.fit(X, y, epochs=1, verbose=0)\nmodel.evaluate(X_test[:, :7].repeat(2, axis=1)[:, :8], y_test, verbose=0)",
    )
    .await;
    assert!(matches!(report.result, DryRunResult::Passed), "{report:?}");

    // The kernel's model was not trained by any of this.
    let (epochs, _) = eval_silent(
        &mut session,
        "len(history.epoch), model.optimizer.iterations.numpy()",
    )
    .await;
    assert!(epochs.starts_with("(2, "), "{epochs}");
    assert!(matches!(replica.state(), ReplicaState::Ready { .. }));
    replica.shutdown().await;
    session.close().await.expect("shutdown");
}

#[tokio::test]
async fn a_torch_training_step_with_a_shape_mismatch_is_found_in_the_replica() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import os\nimport torch\nfrom torch import nn\ntorch.manual_seed(0)\n\
         class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.body = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2))\n\
         \x20   def forward(self, x):\n        return self.body(x)\n\
         model = Net()\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\nloss_fn = nn.CrossEntropyLoss()\n\
         def train_step(batch, target):\n    optimizer.zero_grad()\n    loss = loss_fn(model(batch), target)\n    loss.backward()\n    optimizer.step()\n    return loss.item()\n\
         x_good, x_bad = torch.randn(16, 10), torch.randn(16, 12)\ntarget = torch.randint(0, 2, (16,))\n\
         os.environ['CRANE_TEST_REFUSE_FORK'] = 'torch on a device'",
    )
    .await;
    let mut replica = Replica::new(Some(project_python()));
    let report = judged_in_replica(
        &mut session,
        &mut replica,
        "first = train_step(x_good, target)\nsecond = train_step(x_bad, target)",
    )
    .await;
    assert_eq!(raised(&report), ("RuntimeError", Some(2)), "{report:?}");
    assert!(
        message(&report).contains("shapes cannot be multiplied"),
        "{}",
        message(&report)
    );
    assert_eq!(faithfulness(&report), Faithfulness::Exact);
    // The traceback goes through the notebook's own function, as in the kernel.
    let traceback = match &report.result {
        DryRunResult::Raised(exception) => exception.traceback.join("\n"),
        _ => String::new(),
    };
    assert!(traceback.contains("in train_step"), "{traceback}");
    let report = judged_in_replica(&mut session, &mut replica, "train_step(x_good, target)").await;
    assert!(matches!(report.result, DryRunResult::Passed), "{report:?}");
    // The kernel's model took no step.
    let (same, _) = eval_silent(&mut session, "float(model.body[0].weight.sum())").await;
    run_cell(&mut session, "before = float(model.body[0].weight.sum())").await;
    let (after, _) = eval_silent(&mut session, "float(model.body[0].weight.sum()) == before").await;
    assert_eq!(after, "True", "{same}");
    let pid = match replica.state() {
        ReplicaState::Ready { pid, .. } => pid,
        other => panic!("{other:?}"),
    };
    drop(replica);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists()
            || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|stat| stat.contains(") Z ")),
        "the replica outlived its owner"
    );
    session.close().await.expect("shutdown");
}

#[tokio::test]
async fn stand_ins_make_a_crash_approximate_and_names_not_rebuilt_decide_nothing() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import os\nimport numpy as np\nimport pandas as pd\n\
         big = pd.DataFrame({'a': np.arange(12_000_000, dtype=float), 'b': 1.0})\n\
         small = pd.DataFrame({'a': [1.0, 2.0]})\nstream = (i for i in range(3))\n\
         medium = np.arange(250_000, dtype=float).reshape(-1, 5)\n\
         os.environ['CRANE_TEST_REFUSE_FORK'] = 'stand-ins'",
    )
    .await;
    let mut replica = Replica::new(Some(project_python()));
    // Reads the stand-in: approximate, and says what was approximated.
    let report = judged_in_replica(
        &mut session,
        &mut replica,
        "total = small['a'].sum()\nbig['c']",
    )
    .await;
    assert_eq!(raised(&report), ("KeyError", Some(2)));
    match faithfulness(&report) {
        Faithfulness::Approximate(what) => {
            assert!(what[0].starts_with("big (a stand-in frame"), "{what:?}")
        }
        other => panic!("{other:?}"),
    }
    // Arrays of megabytes are copied exactly (pickle hands them over as buffers).
    let report = judged_in_replica(&mut session, &mut replica, "medium @ np.ones((4, 2))").await;
    assert_eq!(raised(&report), ("ValueError", Some(1)));
    assert_eq!(faithfulness(&report), Faithfulness::Exact);
    assert!(report
        .replica
        .as_ref()
        .expect("replica")
        .exact
        .contains(&"medium".to_owned()));
    // Reads only exact copies, though a stand-in is in the cell.
    let report = judged_in_replica(&mut session, &mut replica, "n = len(big)\nsmall['c']").await;
    assert_eq!(raised(&report), ("KeyError", Some(2)));
    assert_eq!(faithfulness(&report), Faithfulness::Exact);
    // A replica that dies is started again by the next check.
    let ReplicaState::Ready { pid, .. } = replica.state() else {
        panic!("{:?}", replica.state());
    };
    std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .expect("kill");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        matches!(replica.state(), ReplicaState::Failed(_)),
        "{:?}",
        replica.state()
    );
    let report = judged_in_replica(&mut session, &mut replica, "small['d']").await;
    assert_eq!(raised(&report), ("KeyError", Some(1)));
    assert_eq!(replica.starts, 2);
    // A generator cannot be copied: a crash reading it decides nothing.
    let report = judged_in_replica(&mut session, &mut replica, "next(stream) + 'x'").await;
    match faithfulness(&report) {
        Faithfulness::Undecided(what) => assert!(what[0].starts_with("stream ("), "{what:?}"),
        other => panic!("{other:?}"),
    }
    replica.shutdown().await;
    session.close().await.expect("shutdown");
}

#[tokio::test]
async fn exporting_to_the_replica_leaves_the_kernel_as_it_was() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import os, random, sys\nimport numpy as np\nimport pandas as pd\nimport torch\n\
         from sklearn.linear_model import LogisticRegression\n\
         X = np.random.rand(50, 3)\ny = (X[:, 0] > 0.5).astype(int)\nclf = LogisticRegression().fit(X, y)\n\
         frame = pd.DataFrame(X, columns=list('abc'))\nbig = np.random.rand(10_000_000)\nnet = torch.nn.Linear(3, 2)\n\
         os.environ['CRANE_TEST_REFUSE_FORK'] = 'invisibility'",
    )
    .await;
    let fingerprint = "(np.random.get_state()[1][:4].tolist(), random.getstate()[1][:4], \
                       int(torch.random.get_rng_state().sum()), sorted(m for m in sys.modules if not m.startswith('_crane_')), sorted(k for k in globals() if not k.startswith('_')), \
                       get_ipython().execution_count, len(Out), frame._mgr.nblocks)";
    let (before, _) = eval_silent(&mut session, fingerprint).await;
    let mut replica = Replica::new(Some(project_python()));
    let report = judged_in_replica(
        &mut session,
        &mut replica,
        "scores = clf.predict_proba(frame[['a', 'b']].to_numpy())\nnet(torch.tensor(X, dtype=torch.float32)) + big.sum()",
    )
    .await;
    assert_eq!(raised(&report), ("ValueError", Some(1)), "{report:?}");
    let (after, _) = eval_silent(&mut session, fingerprint).await;
    assert_eq!(before, after);
    replica.shutdown().await;
    session.close().await.expect("shutdown");
}
