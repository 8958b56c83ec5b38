//! Abridged dry runs in a real ipykernel: a cell still running at the first budget runs again
//! with its loops (and those of the notebook's functions, and library training loops) cut to
//! their first and last iteration; a crash is certain only when the failing statement reads
//! nothing the abridgement changed.

mod common;

use std::time::Duration;

use common::{
    abridged_options, abridged_raised, abridged_run, raised_abridged as raised, run_cell,
    start_kernel,
};

use crane_probe::dry_run::{dry_run, DryRunOptions, DryRunOutcome, DryRunReport, DryRunResult};

/// What the abridged run cut, as its report words each cut.
fn cuts(report: &DryRunReport) -> Vec<&str> {
    let abridged = report.abridged.as_ref().expect("abridged");
    abridged
        .calls
        .iter()
        .map(|call| call.what.as_str())
        .collect()
}

/// An abridged run of `code` whose last line asserts what the full run gives: it raises, on
/// values the abridgement changed (`changed`), so not for certain; the report, for more checks.
async fn asserts_on_changed(
    session: &mut crane_kernel::KernelSession,
    code: &str,
    changed: &str,
) -> DryRunReport {
    let report = abridged_run(session, code).await;
    let (exception, _, depends_on) = abridged_raised(&report);
    assert_eq!(
        (exception, depends_on),
        ("AssertionError", &[changed.to_owned()][..])
    );
    report
}

#[tokio::test]
async fn a_late_crash_after_a_long_loop_is_found_by_an_abridged_run_and_is_certain() {
    let mut session = start_kernel().await;
    run_cell(&mut session, "import time\nimport numpy as np").await;
    let code = "losses = []\nfor epoch in range(200):\n    time.sleep(0.05)\n    losses.append(epoch * 0.5)\n\
                X_test = np.zeros((5, 3))\nW = np.zeros((4, 2))\npredictions = X_test @ W\n";
    // Speed is a benchmark's question (scripts/bench-long-cells.py); here, that it was abridged.
    let report = abridged_run(&mut session, code).await;
    assert_eq!(abridged_raised(&report), ("ValueError", Some(7), &[][..]));
    let abridged = report.abridged.as_ref().expect("abridged");
    assert_eq!(abridged.loops.len(), 1, "{abridged:?}");
    assert_eq!(
        (
            abridged.loops[0].line,
            abridged.loops[0].ran,
            abridged.loops[0].of
        ),
        (2, 2, 200)
    );
    assert!(report.timings.full_run.is_some());
    session.close().await.expect("shutdown");
}

/// Over a `range`, an iteration whose `if` tests on the loop's variable come out otherwise than
/// in the first and the last runs too: a crash in an evaluation every 40th epoch of 45 (which
/// neither epoch 0 nor 44 makes, and the full run reaches only after the dry run's budget) is
/// found, and what the loop grows is still padded to the full run's lengths.
#[tokio::test]
async fn an_iteration_that_takes_a_branch_neither_end_takes_runs_too() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nimport numpy as np\nX_val = np.zeros((4, 3))\nW = np.zeros((5, 2))\nEVAL_EVERY = 40",
    )
    .await;
    let code =
        "losses = []\nfor epoch in range(45):\n    time.sleep(0.05)\n    losses.append(epoch)\n\
                \x20   if (epoch + 1) % EVAL_EVERY == 0:\n        scores = X_val @ W\n";
    let report = abridged_run(&mut session, code).await;
    assert_eq!(abridged_raised(&report), ("ValueError", Some(6), &[][..]));
    let abridged = report.abridged.as_ref().expect("abridged");
    let ran = |report: &DryRunReport| {
        let loops = &report.abridged.as_ref().expect("abridged").loops;
        (loops[0].line, loops[0].ran, loops[0].of)
    };
    assert_eq!(abridged.loops.len(), 1, "{abridged:?}");
    // It raised in the 2nd item it ran, epoch 39; the record counts all 45.
    assert_eq!(ran(&report), (2, 2, 45));
    // Runs cleanly for real: the evaluations appended every 40th epoch (1 of 45) and the
    // losses (45) have the full run's lengths after the abridged loop too.
    let code = "losses, evals = [], []\nfor epoch in range(45):\n    time.sleep(0.05)\n    losses.append(epoch)\n\
                \x20   if (epoch + 1) % EVAL_EVERY == 0:\n        evals.append(epoch)\n\
                assert (len(losses), len(evals)) == (45, 1), (len(losses), len(evals))\n";
    let report = abridged_run(&mut session, code).await;
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(ran(&report), (2, 3, 45));
    // Both ends take every branch there is: nothing more runs.
    let code =
        "for epoch in range(40):\n    time.sleep(0.05)\n    if epoch % 10 == 9:\n        pass\n";
    let report = abridged_run(&mut session, code).await;
    assert_eq!(ran(&report), (1, 2, 40));
    session.close().await.expect("shutdown");
}

#[tokio::test]
async fn items_drawn_once_that_take_a_new_branch_run_too() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nimport numpy as np\nimport torch\nfrom torch.utils.data import DataLoader, TensorDataset\n\
         loader = DataLoader(TensorDataset(torch.randn(1000, 4)), batch_size=64)\n\
         sizes = {'small': 10, 'medium': 20, 'odd': 30, 'large': 40, 'huge': 50}",
    )
    .await;
    // Over a dictionary's items: the third takes the branch that neither the first nor the
    // second took, and raises there, as it does for real.
    let code = "grids = {}\nfor name, size in sizes.items():\n    time.sleep(0.6)\n    \
                if name == 'odd':\n        grid = np.ones(size).reshape(7, -1)\n    \
                else:\n        grid = np.ones(size).reshape(10, -1)\n    grids[name] = grid\n";
    let report = abridged_run(&mut session, code).await;
    assert_eq!(abridged_raised(&report), ("ValueError", Some(5), &[][..]));
    let loops = &report.abridged.as_ref().expect("abridged").loops;
    assert_eq!((loops[0].ran, loops[0].of), (2, 5), "{loops:?}");

    // Over a DataLoader's batches counted by `enumerate`: every sixth batch is summarised,
    // and batch 5 (of 16) is the first to be, fetched and run.
    let code = "for i, (xb,) in enumerate(loader):\n    time.sleep(0.3)\n    \
                if i % 6 == 5:\n        summary = xb.reshape(-1, 5)\n";
    let report = abridged_run(&mut session, code).await;
    assert_eq!(abridged_raised(&report), ("RuntimeError", Some(4), &[][..]));
    let DryRunResult::Raised(exception) = &report.result else {
        unreachable!()
    };
    assert!(exception.message.contains("of size 256"), "{exception:?}");

    // Fixed, both run to their end, the branch items among the items run.
    let fixed = "grids = {}\nfor name, size in sizes.items():\n    time.sleep(0.6)\n    \
                 if name == 'odd':\n        grid = np.ones(size).reshape(5, -1)\n    \
                 else:\n        grid = np.ones(size).reshape(10, -1)\n    grids[name] = grid\n\
                 assert len(grids) == 5\n";
    let report = abridged_run(&mut session, fixed).await;
    assert!(report.is_ok(), "{report:?}");
    let loops = &report.abridged.as_ref().expect("abridged").loops;
    assert_eq!((loops[0].ran, loops[0].of), (3, 5), "{loops:?}");
    let fixed = "for i, (xb,) in enumerate(loader):\n    time.sleep(0.3)\n    \
                 if i % 6 == 5:\n        summary = xb.reshape(-1, 4)\n";
    let report = abridged_run(&mut session, fixed).await;
    assert!(report.is_ok(), "{report:?}");
    let loops = &report.abridged.as_ref().expect("abridged").loops;
    assert_eq!((loops[0].ran, loops[0].of), (3, 16), "{loops:?}");
    session.close().await.expect("shutdown");
}

#[tokio::test]
async fn a_crash_that_reads_what_the_loop_accumulated_may_be_an_artefact() {
    let mut session = start_kernel().await;
    run_cell(&mut session, "import time").await;
    // Runs cleanly for real: the abridged history has 100 entries (the padding's), but the
    // 98 between its first and last are copies of the first.
    let code = "epochs = 100\nhistory = []\ntotal = 0\nfor epoch in range(epochs):\n    time.sleep(0.03)\n\
                \x20   total += epoch\n    history.append(total)\nassert history[-2] == sum(range(99)), history[-2]\n";
    let report = abridged_run(&mut session, code).await;
    let (exception, line, depends_on) = abridged_raised(&report);
    assert_eq!((exception, line), ("AssertionError", Some(8)));
    assert_eq!(depends_on, ["history"]);
    session.close().await.expect("shutdown");
}

#[tokio::test]
async fn the_last_smaller_batch_is_run_and_its_crash_is_certain() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nimport numpy as np\nX = np.arange(1030 * 4.0).reshape(1030, 4)",
    )
    .await;
    let code = "bs = 32\nseen = 0\nfor start in range(0, len(X), bs):\n    time.sleep(0.05)\n\
                \x20   batch = X[start:start + bs]\n    flat = batch.reshape(bs, 2, 2)\n    seen += len(batch)\n";
    let report = abridged_run(&mut session, code).await;
    assert_eq!(abridged_raised(&report), ("ValueError", Some(6), &[][..]));
    session.close().await.expect("shutdown");
}

#[tokio::test]
async fn loops_of_functions_from_earlier_cells_are_abridged_and_judged_in_their_frame() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\n\ndef train(steps):\n    scores = []\n    for step in range(steps):\n        time.sleep(0.05)\n\
         \x20       scores = scores + [step]\n    return scores[steps - 1]\n\n\
         class Trainer:\n    def run(self, batches):\n        last = None\n        for b in batches:\n            time.sleep(0.05)\n\
         \x20           last = b\n        return {'a': 1}[last]\n",
    )
    .await;
    // A certain crash in a method: it reads the loop's own last item.
    let report = abridged_run(
        &mut session,
        "Trainer().run(list('abcdefghijklmnopqrstuvwxyz') * 4)",
    )
    .await;
    let (exception, line, depends_on) = abridged_raised(&report);
    assert_eq!(
        (exception, line, depends_on),
        ("KeyError", Some(1), &[][..])
    );
    let abridged = report.abridged.as_ref().expect("abridged");
    assert_eq!(
        abridged.loops[0].function.as_deref(),
        Some("run"),
        "{abridged:?}"
    );
    assert!(!abridged.loops[0].in_cell);
    // An artefact: the list (rebound, so not padded) has 2 entries, the index is the real
    // count's.
    let report = abridged_run(&mut session, "best = train(100)").await;
    let (exception, _, depends_on) = abridged_raised(&report);
    assert_eq!(exception, "IndexError");
    assert_eq!(depends_on, ["scores"]);
    session.close().await.expect("shutdown");
}

#[tokio::test]
async fn a_cell_with_nothing_to_abridge_keeps_its_timeout_and_a_fast_cell_runs_in_full() {
    let mut session = start_kernel().await;
    // Nothing to abridge: after the first budget (1 s) the cell runs again with its whole
    // timeout (3 s), as it would without abridging.
    let whole = DryRunOptions {
        timeout: Duration::from_secs(3),
        ..abridged_options()
    };
    let code = "import time\nwhile True:\n    time.sleep(0.1)";
    let Ok(DryRunOutcome::Ran(report)) = dry_run(&mut session, code, &whole).await else {
        panic!("no run");
    };
    assert_eq!(
        report.result,
        DryRunResult::TimedOut {
            after: Duration::from_secs(3)
        }
    );
    assert!(report.abridged.is_none());
    let report = abridged_run(
        &mut session,
        "xs = []\nfor i in range(3):\n    xs.append(i)\nxs[5]",
    )
    .await;
    assert!(
        report.abridged.is_none(),
        "a cell that ends within the budget is not abridged"
    );
    assert!(matches!(&report.result, DryRunResult::Raised(e) if e.exception == "IndexError"));
    session.close().await.expect("shutdown");
}

#[tokio::test]
async fn torch_dataloaders_fetch_their_first_and_last_batch_and_enumerate_counts_right() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nimport torch\nfrom torch.utils.data import DataLoader, TensorDataset\n\
         torch.manual_seed(0)\ndata = TensorDataset(torch.randn(1000, 8), torch.randint(0, 3, (1000,)))\n\
         loader = DataLoader(data, batch_size=64, shuffle=True)\nmodel = torch.nn.Linear(8, 3)\n\
         opt = torch.optim.SGD(model.parameters(), lr=0.1)",
    )
    .await;
    // The last batch has 1000 - 15 * 64 = 40 rows; the last epoch's view assumes full ones.
    // `sizes` grows by rebinding, which the padding does not follow: it shows the batches run.
    let epochs = "sizes = []\nfor epoch in range(50):\n    for i, (xb, yb) in enumerate(loader):\n        time.sleep(0.01)\n\
                  \x20       loss = torch.nn.functional.cross_entropy(model(xb), yb)\n        opt.zero_grad()\n        loss.backward()\n\
                  \x20       opt.step()\n        sizes = sizes + [(epoch, i, len(xb))]\n";
    let report = abridged_run(
        &mut session,
        &format!("{epochs}        if epoch == 49:\n            logits = model(xb).view(64, 3)\n"),
    )
    .await;
    let (exception, line, depends_on) = abridged_raised(&report);
    assert_eq!(
        (exception, line, depends_on),
        ("RuntimeError", Some(11), &[][..])
    );
    let abridged = report.abridged.as_ref().expect("abridged");
    let inner = abridged
        .loops
        .iter()
        .find(|l| l.line == 3)
        .expect("inner loop");
    assert_eq!(
        (inner.ran, inner.of, inner.entered),
        (4, 32, 2),
        "{abridged:?}"
    );
    // Each epoch ran its real first and last batch, numbered as enumerate numbers them.
    let report = abridged_run(
        &mut session,
        &format!("{epochs}raise SystemError(repr(sizes))"),
    )
    .await;
    let DryRunResult::Raised(raised) = &report.result else {
        panic!("{:?}", report.result);
    };
    assert_eq!(
        raised.message,
        "[(0, 0, 64), (0, 15, 40), (49, 0, 64), (49, 15, 40)]"
    );
    session.close().await.expect("shutdown");
}

#[tokio::test]
async fn a_last_iteration_that_reads_carried_values_or_a_loop_that_may_break_is_uncertain() {
    let mut session = start_kernel().await;
    run_cell(&mut session, "import time").await;
    // Runs cleanly for real: at the last step `seen` is 99, not 1.
    let carried =
        "seen = 0\nfor step in range(100):\n    time.sleep(0.03)\n    if step == 99:\n        \
                   assert seen == 99, seen\n    seen += 1\n";
    let report = abridged_run(&mut session, carried).await;
    let (exception, line, depends_on) = abridged_raised(&report);
    assert_eq!((exception, line), ("AssertionError", Some(5)));
    assert_eq!(depends_on, ["seen"]);
    // Runs cleanly for real: the loop breaks at step 60 and never reaches step 99.
    let breaks =
        "for step in range(100):\n    time.sleep(0.03)\n    if step == 60:\n        break\n    \
                  if step == 99:\n        {}['never reached']\n";
    let report = abridged_run(&mut session, breaks).await;
    let (exception, _, depends_on) = abridged_raised(&report);
    assert_eq!(exception, "KeyError");
    assert_eq!(
        depends_on,
        ["<the loop at line 1 may end before its last iteration>"]
    );
    // A break leaves for the statements after the loop, which the real run reaches too: there
    // only what an iteration binds or stores differs. Runs cleanly for real (it stops at
    // epoch 80); the abridged run's last epoch is 99.
    let stops = "import numpy as np\nW = np.ones((4, 2))\nX_test = np.ones((10, 3))\n\
                 for epoch in range(100):\n    time.sleep(0.1)\n    loss = 1 / (epoch + 1)\n    \
                 if loss < 0.0125:\n        break\n";
    let report = abridged_run(
        &mut session,
        &format!("{stops}if epoch == 99:\n    {{}}['late']\n"),
    )
    .await;
    let (exception, line, depends_on) = abridged_raised(&report);
    assert_eq!((exception, line), ("KeyError", Some(10)));
    assert_eq!(depends_on, ["epoch"]);
    // Raises for real, after the early stop, as in the abridged run.
    let report = abridged_run(&mut session, &format!("{stops}X_test @ W\n")).await;
    assert_eq!(abridged_raised(&report), ("ValueError", Some(9), &[][..]));
    session.close().await.expect("shutdown");
}

/// Whether a statement runs at all, or which value a branch binds, can depend on a changed
/// value: the statement depends on it too. Each cell runs cleanly for real.
#[tokio::test]
async fn what_a_changed_test_decides_is_uncertain() {
    let mut session = start_kernel().await;
    run_cell(&mut session, "import time").await;
    let counts = "total = 0\nfor step in range(100):\n    time.sleep(0.03)\n    total += 1\n";
    // The notebook's own check, on a count the abridged run left at 2.
    let report = abridged_run(
        &mut session,
        &format!("{counts}if total < 100:\n    raise ValueError('too few steps')\n"),
    )
    .await;
    assert_eq!(
        abridged_raised(&report),
        ("ValueError", Some(6), &["total".to_owned()][..])
    );
    // A key a branch chose.
    let report = abridged_run(
        &mut session,
        &format!(
            "{counts}if total < 100:\n    key = 'few'\nelse:\n    key = 'all'\n{{'all': 1}}[key]\n"
        ),
    )
    .await;
    assert_eq!(
        abridged_raised(&report),
        ("KeyError", Some(9), &["key".to_owned()][..])
    );
    // A key chosen by a test on a list every iteration grows (by an inner loop: not padded).
    // The list's structure is the same whatever the count, its length is not: a second run
    // that chooses the same key must not make it certain.
    let grown = "hist = []\nfor epoch in range(100):\n    time.sleep(0.03)\n    for k in range(2):\n        \
                 hist.append(k)\nif len(hist) < 200:\n    key = 'few'\nelse:\n    key = 'all'\n{'all': 1}[key]\n";
    let report = abridged_run(&mut session, grown).await;
    assert_eq!(
        abridged_raised(&report),
        ("KeyError", Some(10), &["key".to_owned()][..])
    );
    // The last iteration reached a statement the real one skips.
    let report = abridged_run(
        &mut session,
        &format!("{counts}    if total > 2:\n        continue\n    if step == 99:\n        {{}}['late']\n"),
    )
    .await;
    assert_eq!(
        abridged_raised(&report),
        (
            "KeyError",
            Some(8),
            &["<the iterations decided by the test at line 5>".to_owned()][..]
        )
    );
    session.close().await.expect("shutdown");
}

#[tokio::test]
async fn scikit_learn_searches_and_cross_validation_run_one_candidate_on_two_real_folds() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nimport numpy as np\nfrom sklearn.base import BaseEstimator, ClassifierMixin\n\
         from sklearn.datasets import make_classification\n\
         from sklearn.model_selection import GridSearchCV, KFold, cross_validate\n\
         X, y = make_classification(n_samples=200, n_features=6, random_state=0)\n\
         class Slow(ClassifierMixin, BaseEstimator):\n    def __init__(self, pause=0.05):\n        self.pause = pause\n\
         \x20   def fit(self, X, y):\n        time.sleep(self.pause)\n        self.classes_ = np.unique(y)\n        return self\n\
         \x20   def predict(self, X):\n        return np.full(len(X), self.classes_[0])\n",
    )
    .await;
    // 8 candidates x 5 folds of 0.05 s: longer than the first budget; the last line crashes
    // on its own data, whatever the search found.
    let search = "search = GridSearchCV(Slow(), {'pause': [0.05] * 8}, cv=KFold(5))\nsearch.fit(X, y)\n\
                  scores = search.cv_results_['mean_test_score']\nnp.zeros((5, 3)) @ np.zeros((4, 2))\n";
    let report = abridged_run(&mut session, search).await;
    assert_eq!(abridged_raised(&report), ("ValueError", Some(4), &[][..]));
    let abridged = report.abridged.as_ref().expect("abridged");
    assert_eq!(abridged.calls.len(), 1, "{abridged:?}");
    assert_eq!(
        (abridged.calls[0].what.as_str(), abridged.calls[0].line),
        ("GridSearchCV ran 1 candidate of 8, 2 folds of 5", 2)
    );
    // Runs cleanly for real: the results have 8 rows, the abridged search's 1.
    let reads_results =
        "search = GridSearchCV(Slow(), {'pause': [0.05] * 8}, cv=KFold(5))\nsearch.fit(X, y)\n\
                         assert len(search.cv_results_['params']) == 8\n";
    let report = abridged_run(&mut session, reads_results).await;
    let (exception, line, depends_on) = abridged_raised(&report);
    assert_eq!((exception, line), ("AssertionError", Some(3)));
    assert_eq!(depends_on, ["search"]);
    // cross_validate keeps the splitter's first two folds, each a real one, and pads its
    // results to one entry per fold: a cell that reads their length passes as for real.
    let folds = "result = cross_validate(Slow(pause=0.4), X, y, cv=KFold(5))\nassert len(result['test_score']) == 5\n\
                 assert len(result['fit_time']) == 5\n";
    let report = abridged_run(&mut session, folds).await;
    assert!(report.is_ok(), "{report:?}");
    let abridged = report.abridged.as_ref().expect("abridged");
    assert_eq!(
        abridged.calls[0].what,
        "cross-validation ran 2 folds of 5, its results padded to every fold",
        "{abridged:?}"
    );
    // A frame of 4 folds' labels beside the 5 scores fails for real, and in both abridged runs
    // with the same words: held, on the lengths the padding keeps.
    let labels =
        "import pandas as pd\nresult = cross_validate(Slow(pause=0.4), X, y, cv=KFold(5))\n\
                  frame = pd.DataFrame({'fold': range(1, 5), 'score': result['test_score']})\n";
    let report = abridged_run(&mut session, labels).await;
    assert_eq!(abridged_raised(&report), ("ValueError", Some(3), &[][..]));
    let confirmed = (report.abridged.as_ref()).and_then(|abridged| abridged.confirmed.as_deref());
    assert!(
        confirmed.is_some_and(|text| text.contains("It reads result")),
        "{report:?}"
    );
    // Where the folds' indices are asked for, nothing stands in for them: the abridged
    // results keep their two entries.
    let indices =
        "result = cross_validate(Slow(pause=0.4), X, y, cv=KFold(5), return_indices=True)\n\
                   assert len(result['test_score']) == 5\n";
    asserts_on_changed(&mut session, indices, "result").await;
    // A cross-validation cut and then failed (every fit raised) before its results were
    // gathered leaves nothing behind: the next one, of 2 folds, is not padded to 5.
    let failed_first = "import time\ntime.sleep(1.5)\n\
                        class Broken(Slow):\n    def fit(self, X, y):\n        raise RuntimeError('no fit')\n\
                        try:\n    cross_validate(Broken(), X, y, cv=KFold(5))\nexcept ValueError:\n    pass\n\
                        result = cross_validate(Slow(pause=0.01), X, y, cv=KFold(2))\n\
                        assert len(result['test_score']) == 2, len(result['test_score'])\n";
    let report = abridged_run(&mut session, failed_first).await;
    assert!(report.is_ok(), "{report:?}");
    // Raised inside the shortened search: the real search would make other calls, so it is
    // not certain, whatever the cause.
    let inside = "for _ in range(30):\n    time.sleep(0.05)\n\
                  search = GridSearchCV(Slow(), {'pause': ['x'] + [0.05] * 8}, cv=KFold(5), error_score='raise')\n\
                  search.fit(X, y)\n";
    let report = abridged_run(&mut session, inside).await;
    let (exception, line, depends_on) = abridged_raised(&report);
    assert_eq!((exception, line), ("TypeError", Some(4)), "{report:?}");
    assert_eq!(
        depends_on,
        ["<a call the abridged run shortened (shortened_fit)>"]
    );
    session.close().await.expect("shutdown");
}

#[tokio::test]
async fn scikit_learn_ensembles_and_solvers_fit_two_rounds() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import os\nos.environ['LOKY_MAX_CPU_COUNT'] = '1'\n\
         import numpy as np\nfrom sklearn.datasets import make_classification\n\
         from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier\n\
         from sklearn.manifold import TSNE\n\
         X, y = make_classification(n_samples=3000, n_features=20, random_state=0)\n\
         X_test = np.zeros((10, 19))",
    )
    .await;
    // 600 boosting stages: longer than the first budget. The test set has 19 features, the
    // model 20: predicting fails whatever the fit did, so the crash is certain.
    let fit =
        "model = GradientBoostingClassifier(n_estimators=600, random_state=0)\nmodel.fit(X, y)\n";
    let report = abridged_run(&mut session, &format!("{fit}model.predict(X_test)\n")).await;
    let (exception, line, depends_on) = abridged_raised(&report);
    assert_eq!((exception, line), ("ValueError", Some(3)), "{report:?}");
    // The prediction reads the fitted model, whose values the cut changed: certain only
    // because a second run, abridged otherwise, raised the same about the features.
    assert!(depends_on.is_empty(), "{report:?}");
    let abridged = report.abridged.as_ref().expect("abridged");
    assert_eq!(
        (abridged.calls[0].what.as_str(), abridged.calls[0].line),
        (
            "GradientBoostingClassifier fit ran 2 of 600 n_estimators",
            2
        ),
        "{abridged:?}"
    );
    let confirmed = abridged.confirmed.as_deref().expect("confirmed");
    assert!(
        confirmed.contains("It reads model, which the abridgement changed")
            && confirmed.contains("GradientBoostingClassifier fit ran 3 of 600 n_estimators")
            && confirmed.contains("the features the data has"),
        "{confirmed}"
    );
    // The user's numbers stand after the fit: what the cell reads of them is theirs.
    asserts_on_changed(
        &mut session,
        &format!("{fit}assert model.n_estimators == 600 and len(model.estimators_) == 600\n"),
        "model",
    )
    .await;
    // A fit that refuses its input whatever its rounds raises its own error, run again in
    // full: certain, as without the cut.
    let refused = "import time\ntime.sleep(4)\nforest = RandomForestClassifier(n_estimators=500)\n\
                   forest.fit(X, y[:10])\n";
    let report = abridged_run(&mut session, refused).await;
    let DryRunResult::Raised(error) = &report.result else {
        panic!("{report:?}");
    };
    assert_eq!(
        (
            error.exception.as_str(),
            error.line,
            report.abridged.is_none()
        ),
        ("ValueError", Some(4), true),
        "{report:?}"
    );
    assert!(
        !error.traceback.join("\n").contains("During handling"),
        "{:?}",
        error.traceback
    );
    // A learner the cell itself imports is cut too, in a fold loop: the crash after it, on
    // the fold numbers, reads the keys the loop stored, which the skipped folds' padding made
    // the full run's (0 to 4), and a second run agrees: certain.
    let folds = "import sys\nassert 'sklearn.neural_network' not in sys.modules\n\
                 from sklearn.neural_network import MLPClassifier\nscores = {}\n\
                 for fold in range(5):\n    net = MLPClassifier(max_iter=300, early_stopping=True).fit(X, y)\n    \
                 scores[fold] = net.score(X, y)\nprint(scores[5])\n";
    let report = abridged_run(&mut session, folds).await;
    let (exception, line, depends_on) = abridged_raised(&report);
    assert_eq!(
        (exception, line, depends_on),
        ("KeyError", Some(8), &[][..])
    );
    assert!(
        cuts(&report).contains(&"MLPClassifier fit ran 2 of 300 max_iter"),
        "{report:?}"
    );
    // A forest set to start warm adds to an earlier fit's trees: not cut.
    let warm = "import time\ntime.sleep(2)\nwarm = RandomForestClassifier(n_estimators=8, warm_start=True)\n\
                warm.fit(X, y)\nassert len(warm.estimators_) == 8\nnp.zeros((2, 3)) @ np.zeros((2, 3))\n";
    let report = abridged_run(&mut session, warm).await;
    let DryRunResult::Raised(error) = &report.result else {
        panic!("{report:?}");
    };
    assert_eq!(
        (error.exception.as_str(), error.line),
        ("ValueError", Some(6)),
        "{report:?}"
    );
    assert!(
        report
            .abridged
            .as_ref()
            .is_none_or(|abridged| abridged.calls.is_empty()),
        "{report:?}"
    );
    // Bounds that refuse so few rounds (t-SNE's iterations): the fit runs with the user's.
    let report = abridged_run(
        &mut session,
        "import time\ntime.sleep(4)\nemb = TSNE(max_iter=250, init='random').fit_transform(X[:100])\n\
         print(emb.shape)\n",
    )
    .await;
    assert!(matches!(report.result, DryRunResult::Passed), "{report:?}");
    session.close().await.expect("shutdown");
}

#[tokio::test]
async fn a_pandas_group_apply_of_a_score_runs_its_first_and_last_group() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nimport numpy as np\nimport pandas as pd\n\
         events = pd.DataFrame({'user': np.repeat(np.arange(400), 5), 'v': np.arange(2000.0)})",
    )
    .await;
    // 400 groups of 10 ms: longer than the first budget. The score of every group is there (the
    // result has all 400 keys); reindexed on 500 users, the 100 without events are NaN, and the
    // cast to int fails as it would for real, but on values the cut changed: uncertain.
    let code = "def score(g):\n    time.sleep(0.01)\n    return g['v'].sum()\n\
                scores = events.groupby('user').apply(score)\nassert len(scores) == 400\n\
                scores.reindex(range(500)).astype(int)\n";
    let report = abridged_run(&mut session, code).await;
    let (exception, line, depends_on) = abridged_raised(&report);
    assert_eq!(
        (exception, line, depends_on),
        ("IntCastingNaNError", Some(6), &["scores".to_owned()][..]),
        "{report:?}"
    );
    assert_eq!(
        cuts(&report),
        ["groupby apply ran 2 of 400 groups"],
        "{report:?}"
    );
    // A frame per group, whose index pandas assembles from every group: run in full.
    let frames = "time.sleep(2)\nfirsts = events.groupby('user').apply(lambda g: g.head(1))\n\
                  assert len(firsts) == 400\nfirsts.loc[10**6]\n";
    let report = abridged_run(&mut session, frames).await;
    let DryRunResult::Raised(error) = &report.result else {
        panic!("{report:?}");
    };
    assert_eq!(
        (error.exception.as_str(), error.line),
        ("KeyError", Some(4))
    );
    assert!(
        report
            .abridged
            .as_ref()
            .is_none_or(|abridged| abridged.calls.is_empty()),
        "{report:?}"
    );
    session.close().await.expect("shutdown");
}

#[tokio::test]
async fn a_keras_fit_runs_two_epochs_of_one_step_and_a_crash_after_it_on_other_data_is_certain() {
    let mut session = start_kernel().await;
    // Keras is imported but no model is built: TensorFlow's runtime has not started, so the
    // kernel can fork; the model is built and trained in the checked cell.
    run_cell(
        &mut session,
        "import os\nos.environ['KERAS_BACKEND'] = 'tensorflow'\nimport numpy as np\nimport keras\n\
         rng = np.random.default_rng(0)\nX = rng.normal(size=(4096, 16)).astype('float32')\n\
         y = (X[:, 0] > 0).astype('int32')\nX_test = rng.normal(size=(64, 8)).astype('float32')",
    )
    .await;
    let fit = "model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(32, activation='relu'), keras.layers.Dense(1, activation='sigmoid')])\n\
               model.compile(optimizer='adam', loss='binary_crossentropy')\n\
               history = model.fit(X, y, epochs=400, batch_size=16, verbose=0)\n";
    // The test set has 8 features, the model 16: evaluating fails whatever the training did.
    let report = abridged_run(
        &mut session,
        &format!("{fit}model.predict(X_test, verbose=0)\n"),
    )
    .await;
    let (exception, line, depends_on) = abridged_raised(&report);
    assert_eq!(
        (exception, line, depends_on),
        ("ValueError", Some(4), &[][..])
    );
    let abridged = report.abridged.as_ref().expect("abridged");
    assert_eq!(
        (abridged.calls[0].what.as_str(), abridged.calls[0].line),
        (
            "Keras fit ran 2 epochs of 400, 1 step per epoch, its history padded to every epoch",
            3
        ),
        "{abridged:?}"
    );
    // Runs cleanly for real: 400 epochs give 400 losses; the padded history has 400 entries,
    // copies of 2.
    asserts_on_changed(
        &mut session,
        &format!("{fit}assert len(set(history.history['loss'])) > 10\n"),
        "history",
    )
    .await;
    // The padded history has an entry per epoch, and a validation entry per epoch the user's
    // `validation_freq` validates (the abridged fit validates every epoch, to have one).
    let validated = fit.replace(
        "verbose=0)",
        "verbose=0, validation_data=(X[:64], y[:64]), validation_freq=50)",
    );
    let report = abridged_run(
        &mut session,
        &format!(
            "{validated}raise SystemError(repr({{k: len(v) for k, v in history.history.items()}}))"
        ),
    )
    .await;
    let DryRunResult::Raised(raised) = &report.result else {
        panic!("{:?}", report.result);
    };
    assert_eq!(raised.message, "{'loss': 400, 'val_loss': 8}");
    session.close().await.expect("shutdown");
}

/// The abridged fit's last epoch is the full fit's last for the user's callbacks, as an
/// abridged loop runs its last iteration: a schedule table one entry short fails there, for
/// certain (a list another callback grows stays uncertain), a callback sees the first and the
/// last epoch numbers, and is itself again after the fit.
#[tokio::test]
async fn a_keras_fits_callbacks_see_its_last_epoch() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import os\nos.environ['KERAS_BACKEND'] = 'tensorflow'\nimport numpy as np\nimport keras\n\
         rng = np.random.default_rng(0)\nX = rng.normal(size=(512, 8)).astype('float32')\n\
         y = (X[:, 0] > 0).astype('int32')\n\
         class Seen(keras.callbacks.Callback):\n    def __init__(self):\n        super().__init__()\n        self.epochs = []\n\
         \n    def on_epoch_end(self, epoch, logs=None):\n        self.epochs.append(epoch)",
    )
    .await;
    let fit = "EPOCHS = 300\ntable = np.linspace(1e-3, 1e-4, EPOCHS - 1)\nseen = Seen()\n\
               model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1, activation='sigmoid')])\n\
               model.compile(optimizer='adam', loss='binary_crossentropy')\n\
               model.fit(X, y, epochs=EPOCHS, batch_size=16, verbose=0,\n    \
               callbacks=[seen, keras.callbacks.LearningRateScheduler(lambda epoch: float(table[epoch]))])\n";
    let report = abridged_run(&mut session, fit).await;
    let (exception, line, abridged) = raised(&report);
    assert_eq!((exception, line), ("IndexError", Some(6)), "{abridged:?}");
    assert!(
        abridged.calls[0]
            .what
            .contains("its callbacks told its last epoch is epoch 300"),
        "{abridged:?}"
    );
    let DryRunResult::Raised(raised) = &report.result else {
        panic!("{:?}", report.result);
    };
    assert!(
        raised.message.contains("index 299 is out of bounds"),
        "{raised:?}"
    );
    // The schedule read the epoch's number, which is the full fit's, and a table the epochs
    // left alone: certain, and the finding says why.
    assert!(abridged.depends_on.is_empty(), "{abridged:?}");
    let grounds = abridged.grounds.as_deref().unwrap_or_default();
    assert!(
        grounds.contains("LearningRateScheduler called with epoch 299"),
        "{grounds}"
    );
    assert!(grounds.contains("(table)"), "{grounds}");
    // A schedule of the notebook's reading a list another callback grows each epoch: the
    // list is not what it was when the fit began, so the same IndexError stays uncertain.
    let grown = "EPOCHS = 300\nrates = [1e-3]\ndef schedule(epoch, lr):\n    return float(rates[epoch])\n\
                 grow = keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: rates.append(rates[-1] * 0.99))\n\
                 model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1, activation='sigmoid')])\n\
                 model.compile(optimizer='adam', loss='binary_crossentropy')\n\
                 model.fit(X, y, epochs=EPOCHS, batch_size=16, verbose=0,\n    \
                 callbacks=[grow, keras.callbacks.LearningRateScheduler(schedule)])\n";
    let report = abridged_run(&mut session, grown).await;
    let (exception, _, depends_on) = abridged_raised(&report);
    assert_eq!(exception, "IndexError", "{depends_on:?}");
    assert!(!depends_on.is_empty(), "{depends_on:?}");
    // The same table read through a closure's cell, which no fingerprint covers: uncertain.
    let closure = fit
        .replace(
            "seen = Seen()\n",
            "seen = Seen()\ndef make(rates):\n    return lambda epoch: float(rates[epoch])\n",
        )
        .replace(
            "LearningRateScheduler(lambda epoch: float(table[epoch]))",
            "LearningRateScheduler(make(table))",
        );
    let report = abridged_run(&mut session, &closure).await;
    let (exception, _, depends_on) = abridged_raised(&report);
    assert_eq!(exception, "IndexError", "{depends_on:?}");
    assert!(!depends_on.is_empty(), "{depends_on:?}");
    // A table with an entry per epoch: the callback saw epochs 0 and 299, and is its own again.
    let fixed = fit.replace("EPOCHS - 1)", "EPOCHS)");
    let report = abridged_run(
        &mut session,
        &format!("{fixed}raise SystemError(repr((seen.epochs, 'on_epoch_end' in vars(seen))))"),
    )
    .await;
    let DryRunResult::Raised(raised) = &report.result else {
        panic!("{:?}", report.result);
    };
    assert_eq!(raised.message, "([0, 299], False)");
    session.close().await.expect("shutdown");
}

#[tokio::test]
async fn a_shortened_search_is_given_what_its_own_run_search_takes() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nfrom sklearn.datasets import make_classification\n\
         from sklearn.linear_model import LogisticRegression\n\
         from sklearn.model_selection import GridSearchCV, RandomizedSearchCV\n\
         X, y = make_classification(n_samples=120, random_state=0)",
    )
    .await;
    // Runs cleanly for real: scikit-learn reads `_run_search`'s signature and passes the
    // callback context to one that takes it; the abridged search must take it too.
    for search in [
        "GridSearchCV(LogisticRegression(), {'C': [0.1, 1.0, 10.0]}, cv=3)",
        "RandomizedSearchCV(LogisticRegression(), {'C': [0.1, 1.0, 10.0]}, n_iter=3, cv=3, random_state=0)",
    ] {
        let code = format!(
            "time.sleep(1.5)\nsearch = {search}\nsearch.fit(X, y)\nbest = search.best_params_['C']\n"
        );
        let report = abridged_run(&mut session, &code).await;
        assert!(
            matches!(report.result, DryRunResult::Passed),
            "{search}: {:?}\n{}",
            report.result,
            report.stdout_tail
        );
        let abridged = report.abridged.as_ref().expect("abridged");
        let name = search.split('(').next().unwrap_or_default();
        assert_eq!(
            abridged
                .calls
                .iter()
                .map(|call| call.what.as_str())
                .collect::<Vec<_>>(),
            [format!("{name} ran 1 candidate of 3, 2 folds of 3").as_str()],
            "{abridged:?}"
        );
    }
    session.close().await.expect("shutdown");
}

#[tokio::test]
async fn a_search_whose_refit_is_a_function_of_every_result_runs_in_full() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nfrom sklearn.datasets import make_classification\n\
         from sklearn.linear_model import LogisticRegression\n\
         from sklearn.model_selection import GridSearchCV\n\
         X, y = make_classification(n_samples=120, random_state=0)\n\
         def pick(results):\n    \
             folds = [key for key in results if key.startswith('split') and key.endswith('_test_score')]\n    \
             assert len(results['params']) == 3 and len(folds) == 5, (len(results['params']), folds)\n    \
             return 0",
    )
    .await;
    // Runs cleanly for real: `pick` reads the results of every candidate and fold.
    let code = "time.sleep(1.5)\nsearch = GridSearchCV(LogisticRegression(), {'C': [0.1, 1.0, 10.0]}, refit=pick)\n\
                search.fit(X, y)\nbest = search.best_params_['C']\n";
    let report = abridged_run(&mut session, code).await;
    assert!(
        matches!(report.result, DryRunResult::Passed),
        "{:?}\n{}",
        report.result,
        report.stdout_tail
    );
    session.close().await.expect("shutdown");
}

#[tokio::test]
async fn what_a_function_returns_from_an_abridged_loop_is_changed_where_it_is_used() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nimport numpy as np\n\ndef smooth(x, times):\n    for _ in range(times):\n        \
         time.sleep(0.05)\n        x = (x[:-1] + x[1:]) / 2.0\n    return x\n",
    )
    .await;
    // Run cleanly for real: 20 passes leave 10 values; the abridged loop ran 2 of them, and the
    // crash is in the cell, after the function returned.
    let report = abridged_run(
        &mut session,
        "a = smooth(np.arange(30.0), 20)\nb = np.zeros(10)\nc = a + b\n",
    )
    .await;
    let (exception, line, depends_on) = abridged_raised(&report);
    assert_eq!((exception, line), ("ValueError", Some(3)));
    assert_eq!(depends_on, ["a"]);
    // A function defined in the checked cell itself, its result read at the failing line.
    let report = abridged_run(
        &mut session,
        "def shrink(x, times):\n    for _ in range(times):\n        time.sleep(0.05)\n        x = x[1:]\n    \
         return x\n\nd = np.zeros(10) + shrink(np.arange(30.0), 20)\n",
    )
    .await;
    let (exception, line, depends_on) = abridged_raised(&report);
    assert_eq!((exception, line), ("ValueError", Some(7)));
    assert_eq!(
        depends_on,
        ["<what shrink() returned from an abridged run>"]
    );
    session.close().await.expect("shutdown");
}
