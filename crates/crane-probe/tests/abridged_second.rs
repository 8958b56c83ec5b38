//! Abridged runs made certain by a second abridgement, in a real ipykernel with real torch,
//! scikit-learn, pandas and matplotlib: a crash whose failing statement reads what an abridged
//! loop accumulated holds when it is about structure (shapes, types, a named key), what it
//! reads is grown the same way by every iteration, and a second run abridged otherwise raises
//! it again at the same line; a crash that rests on a count or on which iterations ran stays
//! uncertain, and a correct cell passes.

mod common;

use common::{abridged_run, raised_abridged as raised, run_cell, start_kernel};

use crane_kernel::KernelSession;
use crane_probe::dry_run::DryRunResult;

/// The abridged run of `code` raised `exception` at `line` (if given), and the verdict on it
/// stays uncertain: no second run confirmed it.
async fn stays_uncertain(
    session: &mut KernelSession,
    code: &str,
    exception: &str,
    line: Option<u32>,
) {
    let report = abridged_run(session, code).await;
    let (raised_exception, raised_line, abridged) = raised(&report);
    assert_eq!(raised_exception, exception, "{code}: {abridged:?}");
    if line.is_some() {
        assert_eq!(raised_line, line, "{code}: {abridged:?}");
    }
    assert!(!abridged.depends_on.is_empty(), "{code}: {abridged:?}");
    assert!(abridged.confirmed.is_none(), "{code}: {abridged:?}");
}

#[tokio::test]
async fn a_stack_of_a_last_smaller_batch_holds_and_a_plot_against_all_epochs_does_not() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nimport torch\nimport matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n\
         torch.manual_seed(0)\nX = torch.randn(1000, 4)\nmodel = torch.nn.Linear(4, 1)",
    )
    .await;
    // 1000 rows in batches of 64: the last holds 40, so stacking the epoch's outputs fails for
    // real after the 20th epoch, and in every abridgement that runs the last batch.
    let stack = "for epoch in range(20):\n    epoch_preds = []\n    for start in range(0, len(X), 64):\n        \
                 time.sleep(0.01)\n        with torch.no_grad():\n            \
                 epoch_preds.append(model(X[start:start + 64]).squeeze(1))\n\
                 preds = torch.stack(epoch_preds)\n";
    let report = abridged_run(&mut session, stack).await;
    let (exception, line, abridged) = raised(&report);
    assert_eq!((exception, line), ("RuntimeError", Some(7)), "{abridged:?}");
    assert!(abridged.depends_on.is_empty(), "{abridged:?}");
    let confirmed = abridged.confirmed.as_deref().expect("confirmed");
    assert!(confirmed.contains("It reads epoch_preds"), "{confirmed}");
    assert!(confirmed.contains("ran 3 of 20 iterations"), "{confirmed}");
    assert!(confirmed.contains("shapes"), "{confirmed}");

    // The fixed cell concatenates: it passes abridged, and nothing is claimed.
    let fixed = stack.replace("torch.stack", "torch.cat");
    let report = abridged_run(&mut session, &fixed).await;
    assert!(
        matches!(report.result, DryRunResult::Passed),
        "{}",
        report.stdout_tail
    );
    assert!(report.abridged.is_some());

    // Runs cleanly for real: 40 epochs, 40 losses. Grown by rebinding, which the padding does
    // not follow, the abridged history has 2 entries, then 3 in the second run: the message
    // carries the count, so it never holds.
    let plot = "EPOCHS = 40\nhistory = []\nfor epoch in range(EPOCHS):\n    time.sleep(0.05)\n    \
                history = history + [epoch * 0.1]\nplt.plot(range(EPOCHS), history)\n";
    let report = abridged_run(&mut session, plot).await;
    let (exception, line, abridged) = raised(&report);
    assert_eq!((exception, line), ("ValueError", Some(6)));
    assert_eq!(abridged.depends_on, ["history"]);
    assert_eq!(abridged.confirmed, None);
    // Grown by `append`, it is padded to 40 entries: the plot runs.
    let appended = plot.replace(
        "history = history + [epoch * 0.1]",
        "history.append(epoch * 0.1)",
    );
    let report = abridged_run(&mut session, &appended).await;
    assert!(
        matches!(report.result, DryRunResult::Passed),
        "{}",
        report.stdout_tail
    );
    session.close().await.expect("shutdown");
}

#[tokio::test]
async fn a_multi_metric_search_read_by_a_plain_rank_key_holds() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nimport numpy as np\nfrom sklearn.datasets import make_classification\n\
         from sklearn.linear_model import LogisticRegression\nfrom sklearn.model_selection import GridSearchCV\n\
         X, y = make_classification(n_samples=300, n_features=8, random_state=0)",
    )
    .await;
    // With several metrics, scikit-learn names the ranks `rank_test_<metric>`: the key is
    // missing whatever candidates and folds ran.
    let code = "time.sleep(1.5)\n\
                search = GridSearchCV(LogisticRegression(max_iter=500), {'C': [0.01, 0.1, 1.0, 10.0]},\n    \
                scoring=['accuracy', 'f1'], refit='f1', cv=5)\nsearch.fit(X, y)\nresults = search.cv_results_\n\
                best = results['params'][int(np.argmin(results['rank_test_score']))]\n";
    let report = abridged_run(&mut session, code).await;
    let (exception, line, abridged) = raised(&report);
    assert_eq!((exception, line), ("KeyError", Some(6)), "{abridged:?}");
    assert!(abridged.depends_on.is_empty(), "{abridged:?}");
    let confirmed = abridged.confirmed.as_deref().expect("confirmed");
    assert!(
        confirmed.contains("GridSearchCV ran 2 candidates of 4, 3 folds of 5"),
        "{confirmed}"
    );
    assert!(confirmed.contains("'rank_test_score'"), "{confirmed}");
    session.close().await.expect("shutdown");
}

#[tokio::test]
async fn a_column_created_for_some_groups_only_stays_uncertain() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nimport numpy as np\nimport pandas as pd\n\
         df = pd.DataFrame({'g': np.repeat(np.arange(30), 10), 'v': np.arange(300.0)})",
    )
    .await;
    // Runs cleanly for real: groups 10 to 19 create the column. The abridged runs see groups
    // 0, 1 and 29 only, and miss it: which keys exist depends on which iterations ran.
    let code = "for g, part in df.groupby('g'):\n    time.sleep(0.05)\n    \
                if 100 < part['v'].mean() < 200:\n        df.loc[part.index, 'mid'] = 1.0\n\
                total = df['mid'].sum()\n";
    let report = abridged_run(&mut session, code).await;
    let (exception, line, abridged) = raised(&report);
    assert_eq!((exception, line), ("KeyError", Some(5)));
    assert_eq!(abridged.depends_on, ["df"]);
    assert_eq!(abridged.confirmed, None);
    session.close().await.expect("shutdown");
}

#[tokio::test]
async fn an_axis_the_accumulated_array_lacks_holds() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nimport numpy as np\nimport torch\nrng = np.random.default_rng(0)\n\
         X = rng.normal(size=(200, 3))\ny = X @ np.array([1.0, -2.0, 0.5]) + rng.normal(size=200)",
    )
    .await;
    // One R² per bootstrap sample: a list of numbers makes a 1-D array however many samples
    // ran, so axis 1 is missing in the real run and in both abridged runs.
    let bootstrap = "r2s = []\nfor b in range(60):\n    time.sleep(0.05)\n    \
                     idx = rng.integers(0, len(X), len(X))\n    \
                     coef, *_ = np.linalg.lstsq(X[idx], y[idx], rcond=None)\n    \
                     resid = y[idx] - X[idx] @ coef\n    \
                     r2s.append(1 - resid.var() / y[idx].var())\n\
                     low, high = np.percentile(np.array(r2s), [2.5, 97.5], axis=1)\n";
    let report = abridged_run(&mut session, bootstrap).await;
    let (exception, line, abridged) = raised(&report);
    assert_eq!((exception, line), ("AxisError", Some(8)), "{abridged:?}");
    assert!(abridged.depends_on.is_empty(), "{abridged:?}");
    let confirmed = abridged.confirmed.as_deref().expect("confirmed");
    assert!(confirmed.contains("It reads r2s"), "{confirmed}");
    assert!(confirmed.contains("number of dimensions"), "{confirmed}");

    // The interval over the samples' axis passes, and nothing is claimed.
    let fixed = bootstrap.replace("axis=1", "axis=0");
    let report = abridged_run(&mut session, &fixed).await;
    assert!(
        matches!(report.result, DryRunResult::Passed),
        "{}",
        report.stdout_tail
    );

    // torch names a missing dimension with an IndexError: the same fact.
    let losses = "losses = []\nw = torch.zeros(3, requires_grad=True)\nXt, yt = torch.tensor(X), torch.tensor(y)\n\
                  for epoch in range(60):\n    time.sleep(0.05)\n    \
                  loss = ((Xt @ w.double() - yt) ** 2).mean()\n    losses.append(loss.item())\n\
                  per_epoch = torch.tensor(losses).mean(dim=1)\n";
    let report = abridged_run(&mut session, losses).await;
    let (exception, line, abridged) = raised(&report);
    assert_eq!((exception, line), ("IndexError", Some(8)), "{abridged:?}");
    assert!(abridged.depends_on.is_empty(), "{abridged:?}");
    assert!(
        abridged
            .confirmed
            .as_deref()
            .is_some_and(|text| text.contains("number of dimensions")),
        "{abridged:?}"
    );

    session.close().await.expect("shutdown");
}

#[tokio::test]
async fn a_schedule_that_runs_out_in_a_late_epoch_holds() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nimport torch\nfrom torch.utils.data import DataLoader, TensorDataset\n\
         torch.manual_seed(0)\nX = torch.randn(1000, 16)\ny = (X[:, 0] > 0).float()\n\
         loader = DataLoader(TensorDataset(X, y), batch_size=64)\nEPOCHS = 20",
    )
    .await;
    run_cell(
        &mut session,
        "def train_one_epoch(model, loader, optimizer, scheduler):\n    \
         for xb, yb in loader:\n        time.sleep(0.01)\n        optimizer.zero_grad()\n        \
         loss = torch.nn.functional.binary_cross_entropy_with_logits(model(xb).squeeze(1), yb)\n        \
         loss.backward()\n        optimizer.step()\n        scheduler.step()\n    return loss.item()",
    )
    .await;
    // 1000 rows in batches of 64 make 16 batches, the last of 40 rows: a schedule of 15 steps
    // per epoch runs out in epoch 19 of 20, where the real run raises after 18 epochs.
    let setup = |per_epoch: &str| {
        format!(
            "model = torch.nn.Linear(16, 1)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n\
             scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.1, epochs=EPOCHS, steps_per_epoch={per_epoch})\n\
             losses = []\nfor epoch in range(EPOCHS):\n    losses.append(train_one_epoch(model, loader, optimizer, scheduler))\n"
        )
    };
    let buggy = setup("len(X) // 64");
    let report = abridged_run(&mut session, &buggy).await;
    let (exception, line, abridged) = raised(&report);
    assert_eq!((exception, line), ("ValueError", Some(6)), "{abridged:?}");
    assert!(abridged.depends_on.is_empty(), "{abridged:?}");
    let confirmed = abridged.confirmed.as_deref().expect("confirmed");
    assert!(confirmed.contains("stepping OneCycleLR"), "{confirmed}");
    assert!(
        confirmed.contains("the steps OneCycleLR takes"),
        "{confirmed}"
    );
    let DryRunResult::Raised(raised) = &report.result else {
        unreachable!()
    };
    assert!(
        raised
            .message
            .contains("Tried to step 301 times. The specified number of total steps is 300"),
        "{raised:?}"
    );

    // A schedule as long as the loader: the full run's count, and no crash.
    let fixed = setup("len(loader)");
    let report = abridged_run(&mut session, &fixed).await;
    assert!(
        matches!(report.result, DryRunResult::Passed),
        "{}",
        report.stdout_tail
    );

    // Stepped every fifth epoch and in the last: 5 steps of 10 for real. Counted from the
    // first and last epochs alone, the skips would step it 18 times and the schedule would run
    // out; the epoch that takes neither branch runs too and steps it by none.
    let sparse = "model = torch.nn.Linear(16, 1)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n\
                  scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.1, total_steps=10)\n\
                  for epoch in range(EPOCHS):\n    time.sleep(0.05)\n    optimizer.step()\n    \
                  if epoch % 5 == 0 or epoch == EPOCHS - 1:\n        scheduler.step()\n";
    let report = abridged_run(&mut session, sparse).await;
    assert!(matches!(report.result, DryRunResult::Passed), "{report:?}");

    // The rate a closed-form schedule sets is the full run's after the loop: 0.1 decayed
    // tenfold every 5 of 20 epochs.
    let decayed = "model = torch.nn.Linear(16, 1)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n\
                   scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=5, gamma=0.1)\n\
                   for epoch in range(EPOCHS):\n    time.sleep(0.05)\n    optimizer.step()\n    scheduler.step()\n\
                   assert abs(scheduler.get_last_lr()[0] - 1e-5) < 1e-12, scheduler.get_last_lr()\n\
                   assert abs(optimizer.param_groups[0]['lr'] - 1e-5) < 1e-12\n";
    let report = abridged_run(&mut session, decayed).await;
    assert!(
        matches!(report.result, DryRunResult::Passed),
        "{}",
        report.stdout_tail
    );
    session.close().await.expect("shutdown");
}

/// A hidden state carried from batch to batch (`out, h = gru(xb, h)`) is rebuilt from itself,
/// which can give it any shape the number of iterations decides; where it had the same class,
/// shape and dtype before every iteration both runs ran after the first (before which it holds
/// its initial value, zeros or `None`), the last smaller batch's refusal of it holds. A state
/// that grows stays uncertain; a cell that cuts the state to the batch passes.
#[tokio::test]
async fn a_hidden_state_carried_with_the_same_shape_to_the_last_batch_holds() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nimport torch\nfrom torch.utils.data import DataLoader, TensorDataset\n\
         torch.manual_seed(0)\ngru = torch.nn.GRU(3, 8, batch_first=True)\n\
         loader = DataLoader(TensorDataset(torch.randn(396, 5, 3)), batch_size=16)",
    )
    .await;
    // 24 batches of 16, then 12 rows: the last refuses a state of 16 rows, for real too.
    let carried = "h = torch.zeros(1, 16, 8)\nfor (xb,) in loader:\n    time.sleep(0.2)\n    \
                   out, h = gru(xb, h)\n    h = h.detach()\n";
    let report = abridged_run(&mut session, carried).await;
    let (exception, line, abridged) = raised(&report);
    assert_eq!((exception, line), ("RuntimeError", Some(4)), "{abridged:?}");
    assert!(abridged.depends_on.is_empty(), "{abridged:?}");
    let confirmed = abridged.confirmed.as_deref().expect("confirmed");
    assert!(
        confirmed.contains("h, rebuilt from itself in each iteration, had the same class"),
        "{confirmed}"
    );

    // Started from nothing: the first batch makes it what every later one finds.
    let from_none = carried.replace("h = torch.zeros(1, 16, 8)", "h = None");
    let report = abridged_run(&mut session, &from_none).await;
    let (exception, line, abridged) = raised(&report);
    assert_eq!((exception, line), ("RuntimeError", Some(4)), "{abridged:?}");
    let confirmed = abridged.confirmed.as_deref().expect("confirmed");
    assert!(
        confirmed.contains("before every iteration the loop ran after the first"),
        "{confirmed}"
    );

    // A state that gains a layer with each batch is not steady: its shape is the count's.
    let growing = "h = None
for (xb,) in loader:
    time.sleep(0.2)
    \
                   out, last = gru(xb, None if h is None else h[-1:].contiguous())
    \
                   h = last.detach() if h is None else torch.cat([h, last.detach()])
\
                   gru(xb, h)
";
    let report = abridged_run(&mut session, growing).await;
    let (exception, line, abridged) = raised(&report);
    assert_eq!((exception, line), ("RuntimeError", Some(4)), "{abridged:?}");
    assert_eq!(abridged.depends_on, ["h"]);
    assert!(abridged.confirmed.is_none(), "{abridged:?}");

    let cut = carried.replace("gru(xb, h)", "gru(xb, h[:, : len(xb)].contiguous())");
    let report = abridged_run(&mut session, &cut).await;
    assert!(
        matches!(report.result, DryRunResult::Passed),
        "{}",
        report.stdout_tail
    );
    session.close().await.expect("shutdown");
}

/// A validation curve runs its first folds, its scores padded to every fold (a block of every
/// parameter value per fold): averaged over the fold axis and plotted against the parameter
/// values, it holds; averaged over the value axis, it passes.
#[tokio::test]
async fn a_validation_curve_averaged_over_the_wrong_axis_holds() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nimport numpy as np\nimport matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n\
         from sklearn.datasets import make_classification\nfrom sklearn.linear_model import LogisticRegression\n\
         from sklearn.model_selection import KFold, validation_curve\n\
         X, y = make_classification(n_samples=400, n_features=10, random_state=0)\n\
         class Slow(LogisticRegression):\n    def fit(self, X, y):\n        time.sleep(0.05)\n        return super().fit(X, y)",
    )
    .await;
    let curve = "values = np.logspace(-3, 2, 12)\n\
                 train, valid = validation_curve(Slow(max_iter=500), X, y, param_name='C', param_range=values, cv=KFold(8))\n";
    let report = abridged_run(
        &mut session,
        &format!("{curve}plt.semilogx(values, valid.mean(axis=0))\n"),
    )
    .await;
    let (exception, line, abridged) = raised(&report);
    assert_eq!((exception, line), ("ValueError", Some(3)), "{abridged:?}");
    assert!(abridged.depends_on.is_empty(), "{abridged:?}");
    assert!(
        abridged.calls[0].what.contains("ran 2 folds of 8"),
        "{abridged:?}"
    );
    // The same, plotted in a loop over both curves: the loop's iterable reads the scores.
    let report = abridged_run(
        &mut session,
        &format!(
            "{curve}for name, scores in (('train', train), ('valid', valid)):\n    \
             plt.semilogx(values, scores.mean(axis=0), label=name)\n"
        ),
    )
    .await;
    let (exception, line, abridged) = raised(&report);
    assert_eq!((exception, line), ("ValueError", Some(4)), "{abridged:?}");
    assert!(abridged.depends_on.is_empty(), "{abridged:?}");
    let report = abridged_run(
        &mut session,
        &format!(
            "{curve}plt.semilogx(values, valid.mean(axis=1))\nassert valid.shape == (12, 8)\n"
        ),
    )
    .await;
    assert!(
        matches!(report.result, DryRunResult::Passed),
        "{:?} {}",
        report.result,
        report.stdout_tail
    );
    session.close().await.expect("shutdown");
}

/// A search over a pipeline's model only: its best pipeline's encoder is fitted alike on the
/// same data whichever candidate wins, so a test set with a category the training data lacks is
/// a certain `ValueError` from that step, without a second run, and the finding names the step;
/// the encoder told to ignore unknown categories runs. A search that also tries the encoder's
/// handling of unknown categories stays uncertain: the winner may be the one that ignores them.
#[tokio::test]
async fn a_searched_pipelines_unsearched_step_refusing_test_data_holds() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nimport numpy as np\nimport pandas as pd\n\
         from sklearn.compose import ColumnTransformer\nfrom sklearn.linear_model import LogisticRegression\n\
         from sklearn.model_selection import GridSearchCV\nfrom sklearn.pipeline import Pipeline\n\
         from sklearn.preprocessing import OneHotEncoder\nrng = np.random.default_rng(0)\n\
         COLUMNS = ['plan', 'x']\n\
         train = pd.DataFrame({'plan': rng.choice(['basic', 'pro'], 300), 'x': rng.normal(size=300)})\n\
         y = (train['x'] + (train['plan'] == 'pro') > 0.5).astype(int)\n\
         test = pd.DataFrame({'plan': ['basic', 'family'], 'x': [0.1, 0.2]})",
    )
    .await;
    let cell = |unknown: &str, grid: &str| {
        format!(
            "time.sleep(1.5)\npre = ColumnTransformer([('cat', OneHotEncoder({unknown}), ['plan'])], remainder='passthrough')\n\
             pipe = Pipeline([('pre', pre), ('model', LogisticRegression())])\n\
             search = GridSearchCV(pipe, {{'model__C': [0.01, 0.1, 1.0, 10.0]{grid}}}, cv=5)\n\
             search.fit(train[COLUMNS], y)\nproba = search.predict_proba(test[COLUMNS])\n"
        )
    };
    let report = abridged_run(&mut session, &cell("", "")).await;
    let (exception, line, abridged) = raised(&report);
    assert_eq!((exception, line), ("ValueError", Some(6)), "{abridged:?}");
    assert!(abridged.depends_on.is_empty(), "{abridged:?}");
    let grounds = abridged.grounds.as_deref().unwrap_or_default();
    assert!(grounds.contains("whose step pre raised"), "{grounds}");
    let report = abridged_run(&mut session, &cell("handle_unknown='ignore'", "")).await;
    assert!(
        matches!(report.result, DryRunResult::Passed),
        "{:?}",
        report.result
    );
    let searched = cell("", ", 'pre__cat__handle_unknown': ['error', 'ignore']");
    let report = abridged_run(&mut session, &searched).await;
    let (exception, line, abridged) = raised(&report);
    assert_eq!((exception, line), ("ValueError", Some(6)), "{abridged:?}");
    assert!(!abridged.depends_on.is_empty(), "{abridged:?}");
    session.close().await.expect("shutdown");
}

/// Which rows a join leaves missing is a fact about values: an abridged loop that scored 2 of
/// 300 customers leaves 298 missing, where the full run leaves none. Filling them with a
/// category the column lacks, or sorting them among strings, raises in words of types in both
/// abridged runs, and the full run never does: a crash reading a changed value that holds a
/// missing value is not certain by the second run.
#[tokio::test]
async fn a_crash_on_rows_a_join_left_missing_stays_uncertain() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nimport numpy as np\nimport pandas as pd\n\
         customers = pd.DataFrame({'id': range(300), 'region': np.arange(300) % 4})",
    )
    .await;
    let scored = "rows = []\nfor cid in range(300):\n    time.sleep(0.01)\n    \
                  rows.append({'id': cid, 'score': cid % 7, 'band': 'low' if cid % 7 < 3 else 'high'})\n\
                  table = customers.merge(pd.DataFrame(rows), on='id', how='left')\n";
    let fill = format!(
        "{scored}table['tier'] = pd.cut(table['score'], bins=[-1, 2, 4, 7], labels=['b', 's', 'g'])\n\
         table['tier'] = table['tier'].fillna('unscored')\n"
    );
    stays_uncertain(&mut session, &fill, "TypeError", Some(7)).await;
    let sort = format!("{scored}bands = sorted(table['band'].unique())\n");
    stays_uncertain(&mut session, &sort, "TypeError", None).await;
    session.close().await.expect("shutdown");
}

/// A key the loops' values make is missing from the abridged run's containers and present in
/// the full run's: a dictionary of the names an abridged loop appended, a frame indexed by each
/// iteration's store. Both abridged runs miss the same key, which the code names; the keys
/// came from the values, not from the code, so the crash stays uncertain (a search's result
/// keys, which its settings make, still hold: `a_multi_metric_search_read_by_a_plain_rank_key_holds`).
#[tokio::test]
async fn a_key_the_loops_values_make_stays_uncertain() {
    let mut session = start_kernel().await;
    run_cell(&mut session, "import time\nimport pandas as pd").await;
    let names =
        "names = []\nfor i in range(300):\n    time.sleep(0.01)\n    names.append(f'S{i}')\n\
                 lookup = dict.fromkeys(names, 1.0)\nv = lookup['S150']\n";
    stays_uncertain(&mut session, names, "KeyError", Some(6)).await;
    let indexed = "rows = []\nfor i in range(300):\n    time.sleep(0.01)\n    \
                   rows.append({'store': f'S{i}', 'sales': i * 2.0})\n\
                   table = pd.DataFrame(rows).set_index('store')\nv = table.loc['S150', 'sales']\n";
    stays_uncertain(&mut session, indexed, "KeyError", None).await;
    session.close().await.expect("shutdown");
}

/// Which candidate a loop's scores pick is a fact about the values: the abridged runs scored 2
/// and 3 of 300 candidates (the rest copies), picked a plain one and asked it for a method only
/// the full run's pick has. Selected in an earlier statement, in the failing one, by a mask
/// made from the scores first, or by position after an ordering by the scores (a sort, a key
/// function, a frame sorted by a column, a list of records sorted in place), it stays uncertain.
#[tokio::test]
async fn an_object_picked_by_the_loops_values_stays_uncertain() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nimport numpy as np\nimport pandas as pd\nclass Plain:\n    def __init__(self, k):\n        self.k = k\n\
         class Scored(Plain):\n    def proba(self):\n        return self.k\n\
         candidates = [Scored(i) if i == 150 else Plain(i) for i in range(300)]",
    )
    .await;
    let scores = "scores = []\nfor c in candidates:\n    time.sleep(0.01)\n    scores.append(-abs(c.k - 150))\n";
    for pick in [
        "best = candidates[int(np.argmax(scores))]\np = best.proba()\n",
        "p = candidates[int(np.argmax(scores))].proba()\n",
        "best = np.array(scores) == max(scores)\np = np.array(candidates, dtype=object)[best][0].proba()\n",
        // Ordered by the scores, then picked by position, by a key function or by unpacking.
        "best = sorted(zip(scores, range(300), candidates))[-1][2]\np = best.proba()\n",
        "best = max(zip(candidates, scores), key=lambda pair: pair[1])[0]\np = best.proba()\n",
        "top, i = max(zip(scores, range(300)))\np = candidates[i].proba()\n",
        "table = pd.DataFrame({'score': scores, 'model': candidates})\n\
         best = table.sort_values('score').iloc[-1]['model']\np = best.proba()\n",
    ] {
        stays_uncertain(&mut session, &format!("{scores}{pick}"), "AttributeError", None).await;
    }
    // A list of records sorted in place by a key that reads only the record.
    let sorted_in_place = "results = []\nfor c in candidates:\n    time.sleep(0.01)\n    \
                           results.append({'score': -abs(c.k - 150), 'model': c})\n\
                           results.sort(key=lambda r: r['score'])\np = results[-1]['model'].proba()\n";
    stays_uncertain(&mut session, sorted_in_place, "AttributeError", Some(6)).await;
    session.close().await.expect("shutdown");
}

/// Each iteration makes the same structure only from items alike: readings that are ints but
/// for one float in the middle make an int array in both abridged runs (the float is skipped),
/// which `np.sqrt(arr, out=arr)` refuses; the full run's array is of floats and passes, so the
/// crash stays uncertain. Readings all ints refuse it in the full run too: held.
#[tokio::test]
async fn an_item_of_a_kind_no_iteration_ran_keeps_a_type_crash_uncertain() {
    let mut session = start_kernel().await;
    run_cell(&mut session, "import time\nimport numpy as np").await;
    let cell = |readings: &str| {
        format!(
            "readings = {readings}\nvalues = []\nfor r in readings:\n    time.sleep(0.01)\n    \
             values.append(r)\narr = np.array(values)\nnp.sqrt(arr, out=arr)\n"
        )
    };
    let mixed = cell("[i + 0.5 if i == 150 else i for i in range(300)]");
    stays_uncertain(&mut session, &mixed, "UFuncTypeError", Some(7)).await;
    let report = abridged_run(&mut session, &cell("list(range(300))")).await;
    let (exception, line, abridged) = raised(&report);
    assert_eq!(
        (exception, line),
        ("UFuncTypeError", Some(7)),
        "{abridged:?}"
    );
    assert!(abridged.depends_on.is_empty(), "{abridged:?}");
    assert!(abridged.confirmed.is_some(), "{abridged:?}");
    session.close().await.expect("shutdown");
}
