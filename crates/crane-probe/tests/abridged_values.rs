//! Crashes about values after an abridged run, in a real ipykernel with real torch and
//! scikit-learn: a model trained fewer steps keeps its structure but not its weights, so an
//! assertion or a check on what it computes is never certain, while a crash about structure
//! on the same model still is.

mod common;

use common::{abridged_raised, abridged_run, run_cell, start_kernel};

#[tokio::test]
async fn a_check_on_what_a_model_trained_fewer_steps_computes_is_uncertain() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nimport numpy as np\nimport torch\nfrom sklearn.linear_model import SGDClassifier\n\
         torch.manual_seed(0)\nX = torch.randn(400, 5)\ny = (X[:, 0] + X[:, 1] > 0).float()\n\
         model = torch.nn.Linear(5, 1)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.5)\n\
         loss_fn = torch.nn.BCEWithLogitsLoss()\nwith torch.no_grad():\n    model.weight.zero_()\n    model.bias.fill_(-3.0)",
    )
    .await;
    // Runs cleanly for real: 80 epochs reach well over 90% accuracy. After 2 epochs the model
    // still predicts one class, and the assertion fails in the abridged run only.
    let torch_cell = "for epoch in range(80):\n    time.sleep(0.04)\n    optimizer.zero_grad()\n    \
                      loss = loss_fn(model(X).squeeze(1), y)\n    loss.backward()\n    optimizer.step()\n\
                      with torch.no_grad():\n    accuracy = ((model(X).squeeze(1) > 0).float() == y).float().mean().item()\n\
                      assert accuracy > 0.9, accuracy\n";
    let report = abridged_run(&mut session, torch_cell).await;
    let (exception, line, depends_on) = abridged_raised(&report);
    assert_eq!((exception, line), ("AssertionError", Some(9)));
    // What it reads was computed from the model the loop trained.
    assert_eq!(depends_on, ["accuracy"]);
    // For real it passes (the model is trained anew for the later checks).
    run_cell(&mut session, torch_cell).await;

    // The same model given a test set of the wrong width fails for real too: structure.
    let structure = torch_cell.replace(
        "assert accuracy > 0.9, accuracy\n",
        "    wide = model(torch.randn(10, 6))\n",
    );
    let report = abridged_run(&mut session, &structure).await;
    let (exception, line, depends_on) = abridged_raised(&report);
    assert_eq!((exception, line), ("RuntimeError", Some(9)));
    assert!(depends_on.is_empty(), "{depends_on:?}");

    // scikit-learn's incremental fits: the same. The samples an SGD classifier has seen
    // count every call; a check of the user's on them fails in the abridged run only.
    run_cell(
        &mut session,
        "Xn, yn = X.numpy(), y.numpy().astype(int)\nclf = SGDClassifier(random_state=0)",
    )
    .await;
    let partial = "for chunk in range(60):\n    time.sleep(0.04)\n    clf.partial_fit(Xn, yn, classes=[0, 1])\n\
                   if clf.t_ < 60 * len(Xn):\n    raise RuntimeError(f'only {clf.t_} samples seen')\n";
    let report = abridged_run(&mut session, partial).await;
    let (exception, line, depends_on) = abridged_raised(&report);
    assert_eq!((exception, line), ("RuntimeError", Some(5)));
    // The raise reads `clf`; the test that lets it run reads `Xn` too, which `partial_fit` was
    // given but left with the content it had when the loop was first entered.
    assert_eq!(depends_on, ["clf"]);
    run_cell(&mut session, partial).await;
    session.close().await.expect("shutdown");
}

/// A crash about values in the last iteration reads the real state where what it reads was
/// bound afresh in that iteration (the loop's own group, a copy made of it and the columns
/// stored into that copy) or is plain data that every iteration that ran left as it was (a
/// list of feature names handed to pandas): a region whose promotions never vary makes a
/// singular system in the last group only, certain, and solved by least squares it passes. A
/// list that a library shuffles in place in each iteration is not left alone, and a check of
/// the user's on it in the last iteration stays uncertain, and so does one on an array a call
/// handed back (a notebook function's buffer every iteration adds to), while a copy is certain.
#[tokio::test]
async fn a_last_group_refused_for_its_own_values_is_certain() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nimport numpy as np\nimport pandas as pd\nrng = np.random.default_rng(4)\n\
         weeks = pd.DataFrame({'region': np.repeat([f'r{i:02d}' for i in range(40)], 52),\n\
         'week': np.tile(np.arange(52), 40), 'price': rng.uniform(2, 5, 2080),\n\
         'promo': rng.integers(0, 2, 2080).astype(float)})\n\
         weeks.loc[weeks['region'] == 'r39', 'promo'] = 0.0\n\
         weeks['units'] = 100 - 8 * weeks['price'] + 15 * weeks['promo'] + rng.normal(0, 3, 2080)\n\
         FEATURES = ['price', 'promo']",
    )
    .await;
    let fit = |solve: &str| {
        format!(
            "coefs = []\nfor region, g in weeks.groupby('region'):\n    time.sleep(0.05)\n    \
             g = g.sort_values('week').copy()\n    g['lag'] = g['units'].shift(1).fillna(g['units'].mean())\n    \
             X = np.column_stack([np.ones(len(g)), g[FEATURES].to_numpy(), g['lag'].to_numpy()])\n    \
             beta = {solve}\n    coefs.append(beta)\ntable = np.array(coefs)\n"
        )
    };
    let report = abridged_run(
        &mut session,
        &fit("np.linalg.solve(X[:, :3].T @ X[:, :3], X[:, :3].T @ g['units'].to_numpy())"),
    )
    .await;
    let (exception, line, depends_on) = abridged_raised(&report);
    assert_eq!((exception, line), ("LinAlgError", Some(7)));
    assert!(depends_on.is_empty(), "{depends_on:?}");
    let report = abridged_run(
        &mut session,
        &fit("np.linalg.lstsq(X[:, :3], g['units'].to_numpy(), rcond=None)[0]"),
    )
    .await;
    assert!(
        matches!(report.result, crane_probe::dry_run::DryRunResult::Passed),
        "{:?}",
        report.result
    );

    let shuffled = "order = list(range(30))\nfor epoch in range(100):\n    time.sleep(0.03)\n    \
                    np.random.default_rng(epoch).shuffle(order)\n    if epoch == 99:\n        \
                    raise ValueError(f'first in order: {order[0]}')\n";
    let report = abridged_run(&mut session, shuffled).await;
    let (exception, line, depends_on) = abridged_raised(&report);
    assert_eq!((exception, line), ("ValueError", Some(6)));
    assert_eq!(depends_on, ["order"]);

    // What a call hands back may be an object every iteration adds to (a notebook function
    // handing out its buffer): only a copy counts as the iteration's own.
    run_cell(
        &mut session,
        "ACC = np.zeros(3)\ndef buffer():\n    return ACC",
    )
    .await;
    let aliased = "for step in range(100):\n    time.sleep(0.03)\n    view = buffer()\n    \
                   view += 1.0\n    if step == 99:\n        raise ValueError(f'total {view.sum()}')\n";
    let report = abridged_run(&mut session, aliased).await;
    let (exception, line, depends_on) = abridged_raised(&report);
    assert_eq!((exception, line), ("ValueError", Some(6)));
    assert_eq!(depends_on, ["view"]);
    let copied = aliased.replace("buffer()", "buffer().copy()");
    let report = abridged_run(&mut session, &copied).await;
    let (exception, line, depends_on) = abridged_raised(&report);
    assert_eq!((exception, line), ("ValueError", Some(6)));
    assert!(depends_on.is_empty(), "{depends_on:?}");
    session.close().await.expect("shutdown");
}

/// The same for a table of 600,000 rows with a column of text, read a chunk at a time: its
/// strings are fingerprinted as text, not one object at a time past the budget of objects, so
/// the table is found left alone and the crash in the last chunk is certain. Text written into
/// it by a function of the notebook's leaves it changed.
#[tokio::test]
async fn a_large_table_of_text_the_loop_only_reads_is_left_alone() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nimport numpy as np\nimport pandas as pd\nfrom scipy.stats import boxcox\n\
         rng = np.random.default_rng(2)\nn = 600_000\n\
         big = pd.DataFrame({'site': rng.choice(['north', 'south', 'east'], n), 'flow': rng.uniform(10, 20, n)})\n\
         big.loc[n - 10, 'flow'] = 0.0\n\
         def rename_site(frame, row):\n    frame.iloc[row, 0] = 'west'",
    )
    .await;
    let chunks = |write: &str| {
        format!(
            "lams = []\nfor start in range(0, n, 50_000):\n    time.sleep(0.15)\n{write}    \
             part = big.iloc[start:start + 50_000]\n    lams.append(boxcox(part['flow'].to_numpy())[1])\n"
        )
    };
    let report = abridged_run(&mut session, &chunks("")).await;
    let (exception, line, depends_on) = abridged_raised(&report);
    assert_eq!((exception, line), ("ValueError", Some(5)));
    assert!(depends_on.is_empty(), "{depends_on:?}");
    let grounds = report.abridged.as_ref().and_then(|a| a.grounds.as_deref());
    assert!(
        grounds.is_some_and(|text| text.contains("big, which the loop reads")),
        "{grounds:?}"
    );
    let report = abridged_run(&mut session, &chunks("    rename_site(big, start)\n")).await;
    let (exception, _, depends_on) = abridged_raised(&report);
    assert_eq!(exception, "ValueError");
    assert!(!depends_on.is_empty(), "{depends_on:?}");
    session.close().await.expect("shutdown");
}

/// A crash about values in the last iteration of a backtest reads a table the loop only reads
/// (each cutoff's history is a slice of it): the table's fingerprint at the crash is the one it
/// had when the loop was first entered, so the iterations that ran left it alone and the crash,
/// on the real last cutoff's history, is certain, also where the slice reads a horizon bound
/// before the loop; its fix runs. A loop that writes into the
/// table as it goes (through a function, unseen by the loop's syntax) leaves it changed, and
/// the same crash stays uncertain.
#[tokio::test]
async fn a_table_the_loop_only_reads_is_left_alone() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nimport numpy as np\nimport pandas as pd\nfrom scipy.stats import boxcox\n\
         rng = np.random.default_rng(2)\n\
         sales = pd.DataFrame({f's{i}': rng.uniform(10, 20, 300) for i in range(3)},\n\
         index=pd.date_range('2024-01-01', periods=300))\nsales.iloc[290, 0] = 0.0",
    )
    .await;
    let backtest = |transform: &str, write: &str| {
        format!(
            "lambdas = []\nfor cutoff in range(100, 300, 5):\n    time.sleep(0.05)\n{write}    \
             for store in sales.columns:\n        history = sales.iloc[:cutoff][store].to_numpy()\n        \
             lambdas.append(boxcox({transform})[1])\n"
        )
    };
    let report = abridged_run(&mut session, &backtest("history", "")).await;
    let (exception, line, depends_on) = abridged_raised(&report);
    assert_eq!((exception, line), ("ValueError", Some(6)));
    assert!(depends_on.is_empty(), "{depends_on:?}");
    // The verdict names what its certainty rests on.
    let grounds = report.abridged.as_ref().and_then(|a| a.grounds.as_deref());
    assert!(
        grounds.is_some_and(|text| text.contains("sales, which the loop reads")),
        "{grounds:?}"
    );
    // A horizon bound before the loop: an int, which no call it is handed can change.
    let horizon = format!("H = 5\n{}", backtest("history", ""))
        .replace("sales.iloc[:cutoff]", "sales.iloc[:cutoff + H]");
    let report = abridged_run(&mut session, &horizon).await;
    let (exception, line, depends_on) = abridged_raised(&report);
    assert_eq!((exception, line), ("ValueError", Some(7)));
    assert!(depends_on.is_empty(), "{depends_on:?}");
    let report = abridged_run(&mut session, &backtest("history + 1.0", "")).await;
    assert!(
        matches!(report.result, crane_probe::dry_run::DryRunResult::Passed),
        "{:?}",
        report.result
    );
    // Written through a function of the notebook's, which no syntax of the loop shows.
    run_cell(
        &mut session,
        "def bump(frame, row):\n    frame.iloc[row, 2] += 1.0",
    )
    .await;
    let written = backtest("history", "    bump(sales, cutoff)\n");
    let report = abridged_run(&mut session, &written).await;
    let (exception, line, depends_on) = abridged_raised(&report);
    assert_eq!((exception, line), ("ValueError", Some(7)));
    assert!(depends_on.contains(&"history".to_owned()), "{depends_on:?}");
    session.close().await.expect("shutdown");
}
