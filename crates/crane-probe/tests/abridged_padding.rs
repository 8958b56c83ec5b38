//! The padding of abridged loops in a real ipykernel (`python/crane_padding.py`): the iterations
//! an abridged loop skips add what they would have added to the lists and dictionaries it
//! grows, with stand-in values, so that lengths and keys after the loop are the full run's; a
//! crash about those is then certain once a second run agrees to the number, and what the
//! padding cannot reach stays uncertain.

mod common;

use common::{abridged_run, run_cell, start_kernel};

use crane_probe::dry_run::{DryRunReport, DryRunResult};

/// The exception, its line and what it depends on, of an abridged run that raised.
fn raised(report: &DryRunReport) -> (&str, Option<u32>, Vec<String>) {
    let DryRunResult::Raised(exception) = &report.result else {
        panic!("{:?}\n{}", report.result, report.stdout_tail);
    };
    let abridged = report.abridged.as_ref().expect("abridged");
    (
        exception.exception.as_str(),
        exception.line,
        abridged.depends_on.clone(),
    )
}

/// What the cell's last line shows, raised as `SystemError(repr(...))` from the abridged run.
async fn shown(session: &mut crane_kernel::KernelSession, code: &str) -> String {
    let report = abridged_run(session, code).await;
    let DryRunResult::Raised(raised) = &report.result else {
        panic!("{:?}", report.result);
    };
    assert_eq!(raised.exception, "SystemError", "{raised:?}");
    raised.message.clone()
}

const HISTORY: &str = "EPOCHS = 100\ntrain_hist, val_hist = [], []\nfor epoch in range(EPOCHS):\n    \
                       time.sleep(0.05)\n    train_hist.append(epoch * 0.5)\n    if epoch % 5 == 4:\n        \
                       with contextlib.nullcontext():\n            val_hist.append(epoch * 0.1)\n";

#[tokio::test]
async fn a_history_plotted_against_every_epoch_is_certain_and_its_fix_runs() {
    let mut session = start_kernel().await;
    run_cell(&mut session, "import time, contextlib\nimport numpy as np").await;
    // Validation every fifth epoch: 100 training entries, 20 validation ones (the first
    // iteration validates none, so the last one's value stands in, put before it).
    let lengths = shown(
        &mut session,
        &format!(
            "{HISTORY}raise SystemError(repr((len(train_hist), len(val_hist), val_hist[-1])))"
        ),
    )
    .await;
    assert_eq!(lengths, "(100, 20, 9.9)");
    let buggy = format!("{HISTORY}np.stack([np.arange(EPOCHS), np.array(val_hist)])\n");
    let report = abridged_run(&mut session, &buggy).await;
    assert_eq!(raised(&report), ("ValueError", Some(9), vec![]));
    let abridged = report.abridged.as_ref().expect("abridged");
    let confirmed = abridged.confirmed.as_deref().expect("confirmed");
    assert!(
        confirmed.contains("keeping the full run's lengths and keys of train_hist, val_hist"),
        "{confirmed}"
    );
    assert!(
        abridged.summary().contains(
            "the loop at line 3 ran 2 of 100 iterations, keeping the full run's lengths and keys of train_hist, val_hist"
        ),
        "{}",
        abridged.summary()
    );
    let fixed = format!("{HISTORY}np.stack([np.arange(4, EPOCHS, 5), np.array(val_hist)])\n");
    let report = abridged_run(&mut session, &fixed).await;
    assert_eq!(report.result, DryRunResult::Passed, "{report:?}");
    session.close().await.expect("shutdown");
}

#[tokio::test]
async fn a_dictionary_keyed_by_fold_numbers_has_the_full_runs_keys_in_order() {
    let mut session = start_kernel().await;
    run_cell(&mut session, "import time").await;
    let folds = "scores = {'baseline': 0.5}\nfor fold, part in enumerate(range(0, 100, 20)):\n    \
                 time.sleep(0.8)\n    scores[f'fold{fold}'] = part * 0.5\n    scores[fold] = part\n";
    let keys = shown(
        &mut session,
        &format!("{folds}raise SystemError(repr(list(scores)))"),
    )
    .await;
    assert_eq!(
        keys,
        "['baseline', 'fold0', 0, 'fold1', 1, 'fold2', 2, 'fold3', 3, 'fold4', 4]"
    );
    // Counted from one: fold 5 was never stored, in the real run as in both abridged ones.
    let buggy = format!("{folds}for k in range(1, 6):\n    print(scores[k])\n");
    let report = abridged_run(&mut session, &buggy).await;
    assert_eq!(raised(&report), ("KeyError", Some(7), vec![]));
    let fixed = format!("{folds}for k in range(5):\n    print(scores[k])\n");
    let report = abridged_run(&mut session, &fixed).await;
    assert_eq!(report.result, DryRunResult::Passed, "{report:?}");
    session.close().await.expect("shutdown");
}

#[tokio::test]
async fn an_array_stored_into_by_fold_keeps_its_shape_for_a_certain_length_crash() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nimport numpy as np\nimport pandas as pd\nids = pd.Series(np.arange(99))",
    )
    .await;
    // Out-of-fold predictions over 100 rows; the ids column has 99: pandas refuses the column
    // for real after the fifth fold, and in both abridged runs, whose array is 100 long too.
    let folds = "oof = np.zeros(100)\nfor fold in range(5):\n    time.sleep(0.8)\n    \
                 va = np.arange(fold * 20, fold * 20 + 20)\n    oof[va] = fold * 0.1\n";
    let buggy =
        format!("{folds}submission = pd.DataFrame({{'id': ids}})\nsubmission['target'] = oof\n");
    let report = abridged_run(&mut session, &buggy).await;
    assert_eq!(raised(&report), ("ValueError", Some(7), vec![]));
    let fixed = format!(
        "{folds}submission = pd.DataFrame({{'id': ids}})\nsubmission['target'] = oof[:99]\n"
    );
    let report = abridged_run(&mut session, &fixed).await;
    assert_eq!(report.result, DryRunResult::Passed, "{report:?}");
    // Its values are another matter: the skipped folds' are missing.
    let values = format!("{folds}assert (oof[20:80] > 0).all()\n");
    let report = abridged_run(&mut session, &values).await;
    assert_eq!(
        raised(&report),
        ("AssertionError", Some(6), vec!["oof".to_owned()])
    );
    session.close().await.expect("shutdown");
}

/// An array made and stored into before its loop (a sampler's initial state in row 0) is stored
/// into by each iteration: its shape is the full run's, and a store one row past its end in the
/// last iteration is certain once a second run agrees; with a row more, the loop runs.
#[tokio::test]
async fn an_array_stored_into_before_its_loop_keeps_its_shape() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nimport numpy as np\nrng = np.random.default_rng(0)",
    )
    .await;
    let sampler = |rows: &str| {
        format!(
            "N = 100\nsamples = np.empty(({rows}, 2))\ntheta = np.zeros(2)\nsamples[0] = theta\n\
             for i in range(N):\n    time.sleep(0.03)\n    proposal = theta + rng.normal(size=2)\n    \
             if proposal.sum() > theta.sum():\n        theta = proposal\n    samples[i + 1] = theta\n"
        )
    };
    let report = abridged_run(&mut session, &sampler("N")).await;
    assert_eq!(raised(&report), ("IndexError", Some(10), vec![]));
    assert!(
        report
            .abridged
            .as_ref()
            .is_some_and(|a| a.confirmed.is_some()),
        "{report:?}"
    );
    let report = abridged_run(&mut session, &sampler("N + 1")).await;
    assert_eq!(report.result, DryRunResult::Passed, "{report:?}");
    session.close().await.expect("shutdown");
}

/// A factor matrix each sweep updates row by row in an inner loop (skipping some rows), or
/// rebuilds from itself with the same shape, has the full run's shape after the sweeps: ids
/// past its end are a certain IndexError once a second run agrees, and the verdict says why.
/// One that gains rows with each sweep stays uncertain (the full run's has them); ids in range
/// run.
#[tokio::test]
async fn an_array_stored_into_by_an_inner_loop_or_rebuilt_keeps_its_shape() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nimport numpy as np\nrng = np.random.default_rng(0)\n\
         target = rng.normal(size=(300, 4))\nids = np.array([3, 10, 299, 305])",
    )
    .await;
    let sweeps = |update: &str| {
        format!(
            "U = np.zeros((300, 4))\nfor sweep in range(30):\n    time.sleep(0.1)\n{update}pred = U[ids]\n"
        )
    };
    let by_row = sweeps(
        "    for u in range(300):\n        if u % 7 == 3:\n            continue\n        \
         U[u] = 0.9 * U[u] + 0.1 * target[u]\n",
    );
    let rebuilt = sweeps("    U = 0.9 * U + 0.1 * target\n");
    for (code, line, why) in [
        (&by_row, 8, "keeping the shape of U (stored into in place"),
        (
            &rebuilt,
            5,
            "U, rebuilt from itself in each iteration, had the same class, shape and dtype",
        ),
    ] {
        let report = abridged_run(&mut session, code).await;
        assert_eq!(
            raised(&report),
            ("IndexError", Some(line), vec![]),
            "{code}"
        );
        let abridged = report.abridged.as_ref().expect("abridged");
        let text = format!(
            "{} {}",
            abridged.summary(),
            abridged.confirmed.as_deref().unwrap_or("")
        );
        assert!(abridged.confirmed.is_some() && text.contains(why), "{text}");
    }
    let growing = sweeps("    U = np.concatenate([U, target[:1]])\n")
        .replace("np.zeros((300, 4))", "np.zeros((280, 4))");
    let report = abridged_run(&mut session, &growing).await;
    assert_eq!(
        raised(&report),
        ("IndexError", Some(5), vec!["U".to_owned()])
    );
    let in_range = by_row.replace("U[ids]", "U[ids % 300]");
    let report = abridged_run(&mut session, &in_range).await;
    assert_eq!(report.result, DryRunResult::Passed, "{report:?}");
    session.close().await.expect("shutdown");
}

/// `rows.extend([a, b])` and `pairs += [p]` add the same number of entries each time: padded
/// as that many appends, so a reshape that assumes another width is a certain crash.
#[tokio::test]
async fn displays_extended_by_a_fixed_count_are_padded_like_appends() {
    let mut session = start_kernel().await;
    run_cell(&mut session, "import time\nimport numpy as np").await;
    let grow = "rows, pairs = [], []\nfor epoch in range(100):\n    time.sleep(0.03)\n    \
                rows.extend([epoch, epoch * 0.5])\n    pairs += [(epoch, 1)]\n";
    let lengths = shown(
        &mut session,
        &format!("{grow}raise SystemError(repr((len(rows), len(pairs), rows[-2:])))"),
    )
    .await;
    assert_eq!(lengths, "(200, 100, [99, 49.5])");
    let report = abridged_run(
        &mut session,
        &format!("{grow}np.array(rows).reshape(100, 3)\n"),
    )
    .await;
    assert_eq!(raised(&report), ("ValueError", Some(6), vec![]));
    let fixed = format!("{grow}np.array(rows).reshape(100, 2)\n");
    let report = abridged_run(&mut session, &fixed).await;
    assert_eq!(report.result, DryRunResult::Passed, "{report:?}");
    session.close().await.expect("shutdown");
}

/// `seen.extend(batch)` adds as many entries as each iteration measures: the skipped ones are
/// padded by the width the iterations run before them all grew it by (a loader's full batches;
/// the last, smaller one is real), and a second run that measures two uneven widths (groups of
/// other sizes) pads nothing, so a crash there stays uncertain.
#[tokio::test]
async fn lists_extended_by_a_measured_width_are_padded_when_it_is_even() {
    let mut session = start_kernel().await;
    run_cell(&mut session, "import time\nimport numpy as np").await;
    let batches = "seen = []\nfor start in range(0, 1000, 64):\n    time.sleep(0.1)\n    \
                   seen.extend(range(start, min(start + 64, 1000)))\n";
    let length = shown(
        &mut session,
        &format!("{batches}raise SystemError(repr((len(seen), seen[-1])))"),
    )
    .await;
    assert_eq!(length, "(1000, 999)");
    let report = abridged_run(
        &mut session,
        &format!("{batches}np.array(seen).reshape(-1, 64)\n"),
    )
    .await;
    assert_eq!(raised(&report), ("ValueError", Some(5), vec![]));
    let report = abridged_run(
        &mut session,
        &format!("{batches}np.array(seen).reshape(-1, 8)\n"),
    )
    .await;
    assert_eq!(report.result, DryRunResult::Passed, "{report:?}");
    // Runs cleanly for real (140 entries); the first run pads by 5 (104 entries), the second
    // measures 5 and 9 and pads nothing.
    let groups = "sizes = [5, 9] * 10\nparts = []\nfor size in sizes:\n    time.sleep(0.1)\n    \
                  parts += [0] * size\nnp.array(parts).reshape(-1, 7)\n";
    let report = abridged_run(&mut session, groups).await;
    assert_eq!(
        raised(&report),
        ("ValueError", Some(6), vec!["parts".to_owned()])
    );
    session.close().await.expect("shutdown");
}

/// `history["loss"].append(loss)`: a list under a constant key of a dictionary (a plain one, or
/// a `defaultdict` that makes the entry on the first append) is padded like a list of its own,
/// so stacking a validation history of every fifth epoch beside the loss of every epoch is a
/// certain crash, and the fix that takes every fifth loss runs.
#[tokio::test]
async fn lists_under_constant_keys_of_a_dictionary_are_padded() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nimport numpy as np\nfrom collections import defaultdict",
    )
    .await;
    for start in [
        "history = {'loss': [], 'val_loss': []}",
        "history = defaultdict(list)",
    ] {
        let grow = format!(
            "{start}\nfor epoch in range(100):\n    time.sleep(0.03)\n    history['loss'].append(epoch * 0.1)\n    \
             if epoch % 5 == 4:\n        history['val_loss'].append(epoch)\n"
        );
        let lengths = shown(
            &mut session,
            &format!(
                "{grow}raise SystemError(repr((len(history['loss']), len(history['val_loss']))))"
            ),
        )
        .await;
        assert_eq!(lengths, "(100, 20)", "{start}");
        let report = abridged_run(
            &mut session,
            &format!("{grow}np.column_stack([history['loss'], history['val_loss']])\n"),
        )
        .await;
        assert_eq!(raised(&report), ("ValueError", Some(7), vec![]), "{start}");
        let report = abridged_run(
            &mut session,
            &format!("{grow}np.column_stack([history['loss'][4::5], history['val_loss']])\n"),
        )
        .await;
        assert_eq!(report.result, DryRunResult::Passed, "{start}: {report:?}");
    }
    session.close().await.expect("shutdown");
}

#[tokio::test]
async fn what_the_padding_cannot_reach_stays_uncertain() {
    let mut session = start_kernel().await;
    run_cell(&mut session, "import time\nimport numpy as np").await;
    // Each of these runs cleanly for real: 100 entries.
    // A list grown across the iterations of an outer loop by an inner one: the outer loop's
    // skipped epochs add nothing.
    let nested = "seen = []\nfor epoch in range(50):\n    time.sleep(0.05)\n    for batch in range(2):\n        \
                  seen.append(batch)\nassert len(seen) == 100, len(seen)\n";
    let report = abridged_run(&mut session, nested).await;
    assert_eq!(
        raised(&report),
        ("AssertionError", Some(6), vec!["seen".to_owned()])
    );
    // A test on a value that is not one of Python's own (numpy's integers): not evaluated.
    let numpy_items = "kept = []\nfor step in np.arange(500):\n    time.sleep(0.01)\n    if step % 5 == 4:\n        \
                       kept.append(step)\nassert len(kept) == 100, len(kept)\n";
    let report = abridged_run(&mut session, numpy_items).await;
    assert_eq!(
        raised(&report),
        ("AssertionError", Some(6), vec!["kept".to_owned()])
    );
    // A loop that can break may end before its last item: nothing is padded.
    let breaks =
        "hist = []\nfor step in range(100):\n    time.sleep(0.03)\n    hist.append(step)\n    \
                  if step == 1000:\n        break\nhist[99]\n";
    let report = abridged_run(&mut session, breaks).await;
    assert_eq!(
        raised(&report),
        ("IndexError", Some(7), vec!["hist".to_owned()])
    );
    // A test on a global a function of the notebook rebinds (`global`) while the loop runs:
    // crane cannot evaluate it for the skipped items, so the list is not padded (it holds the
    // last iteration's entry only).
    run_cell(
        &mut session,
        "THRESH = 0\ndef bump():\n    global THRESH\n    THRESH += 1",
    )
    .await;
    let rebound = "THRESH = 0\nhist = []\nfor epoch in range(100):\n    time.sleep(0.03)\n    bump()\n    \
                   if epoch > THRESH:\n        hist.append(epoch)\nraise SystemError(repr(len(hist)))";
    assert_eq!(shown(&mut session, rebound).await, "1");
    // Grown by a varying number of entries per iteration: not padded.
    let extends = "parts = []\nfor step in range(100):\n    time.sleep(0.03)\n    parts.extend([step] * (step % 2))\n\
                   assert len(parts) == 50, len(parts)\n";
    let report = abridged_run(&mut session, extends).await;
    assert_eq!(
        raised(&report),
        ("AssertionError", Some(5), vec!["parts".to_owned()])
    );
    session.close().await.expect("shutdown");
}
