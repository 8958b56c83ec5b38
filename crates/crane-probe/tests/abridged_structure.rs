//! Structural crashes of abridged runs made certain by a second abridgement, in a real ipykernel
//! with real NumPy, pandas and torch: what a message quotes names something, shapes given in
//! numbers beside words of counts, an array stored into however many iterations there are, a
//! comprehension judged as the statement that holds it, a notebook function whose abridged run
//! leaves its arguments' structure alone, an index of floats, dtypes named by their width and
//! stores under a dictionary's own keys, a record kept under a condition the first
//! iteration met, and a torch layer looking up ids the abridgement did not change (certain
//! without a second run). Each buggy cell crashes for real as in the abridged run; each fixed
//! cell passes.

mod common;

use common::{abridged_run, raised_abridged as raised, run_cell, start_kernel};

use crane_probe::dry_run::{DryRunReport, DryRunResult};

/// Held by a second abridgement: raised at `line`, certain, and the finding says why.
fn held<'a>(report: &'a DryRunReport, exception: &str, line: u32) -> &'a str {
    let (raised_exception, raised_line, abridged) = raised(report);
    assert_eq!(
        (raised_exception, raised_line),
        (exception, Some(line)),
        "{abridged:?}"
    );
    assert!(abridged.depends_on.is_empty(), "{abridged:?}");
    abridged.confirmed.as_deref().expect("confirmed")
}

fn passed(report: &DryRunReport) {
    assert!(
        matches!(report.result, DryRunResult::Passed),
        "{:?}\n{}",
        report.result,
        report.stdout_tail
    );
}

/// pandas' "got an instance of 'Index'" quotes a class: the word is a name, not a count. A
/// frame of text timestamps concatenated from chunks refuses to resample.
#[tokio::test]
async fn a_quoted_class_name_is_no_count() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nimport numpy as np\nimport pandas as pd\n\
         stamps = pd.date_range('2026-01-01', periods=20_000, freq='min')\n\
         frame = pd.DataFrame({'ts': stamps.astype(str), 'v': np.arange(20_000.0)})",
    )
    .await;
    let chunks = "parts = []\nfor start in range(0, len(frame), 200):\n    time.sleep(0.03)\n    \
                  parts.append(frame.iloc[start:start + 200].copy())\nscored = pd.concat(parts)\n";
    let report = abridged_run(
        &mut session,
        &format!("{chunks}hourly = scored.set_index('ts')['v'].resample('h').mean()\n"),
    )
    .await;
    let confirmed = held(&report, "TypeError", 6);
    assert!(confirmed.contains("It reads scored"), "{confirmed}");
    let report = abridged_run(
        &mut session,
        &format!(
            "{chunks}hourly = scored.set_index(pd.to_datetime(scored['ts']))['v'].resample('h').mean()\n"
        ),
    )
    .await;
    passed(&report);
    session.close().await.expect("shutdown");
}

/// A chain of 250,000 draws stored into a preallocated array keeps its shape whatever the
/// number of draws (no evaluation per skipped draw), and pandas' "Shape of passed values is
/// (3, 3), indices imply (2, 3)" speaks of indices beside its shapes: certain because the second
/// run gives the same numbers.
#[tokio::test]
async fn shapes_given_in_numbers_beside_words_of_counts_hold_when_both_runs_agree() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nimport numpy as np\nimport pandas as pd",
    )
    .await;
    // A draw is kept under a condition, so its value is the abridged run's; stored into the
    // chain, it changes none of the chain's shape.
    let chain = "N = 250_000\nchain = np.empty((N, 3))\nbeta = np.zeros(3)\nfor i in range(N):\n    \
                 proposal = beta + 0.001\n    if i % 3 != 2:\n        beta = proposal\n    chain[i] = beta\n    \
                 if i % 5000 == 0:\n        time.sleep(0.05)\n\
                 ci = np.percentile(chain[N // 4::10], [2.5, 50, 97.5], axis=0)\n";
    let report = abridged_run(
        &mut session,
        &format!(
            "{chain}summary = pd.DataFrame(ci.T, index=['a', 'b'], columns=['lo', 'mid', 'hi'])\n"
        ),
    )
    .await;
    let confirmed = held(&report, "ValueError", 12);
    assert!(confirmed.contains("It reads ci"), "{confirmed}");
    assert!(confirmed.contains("to the number"), "{confirmed}");
    let report = abridged_run(
        &mut session,
        &format!(
            "{chain}summary = pd.DataFrame(ci.T, index=['a', 'b', 'c'], columns=['lo', 'mid', 'hi'])\n"
        ),
    )
    .await;
    passed(&report);
    session.close().await.expect("shutdown");
}

/// Before Python 3.12 a dictionary comprehension runs in a frame of its own: the statement
/// that holds it is judged instead (a key every fold's record lacks).
#[tokio::test]
async fn a_comprehension_is_judged_as_the_statement_that_holds_it() {
    let mut session = start_kernel().await;
    run_cell(&mut session, "import time").await;
    let folds = "folds = {}\nfor k in range(100):\n    time.sleep(0.03)\n    folds[k] = {'acc': k * 0.01}\n";
    let report = abridged_run(
        &mut session,
        &format!("{folds}means = {{k: f['accuracy'] for k, f in folds.items()}}\n"),
    )
    .await;
    let confirmed = held(&report, "KeyError", 5);
    assert!(confirmed.contains("'accuracy'"), "{confirmed}");
    let report = abridged_run(
        &mut session,
        &format!("{folds}means = {{k: f['acc'] for k, f in folds.items()}}\n"),
    )
    .await;
    passed(&report);
    session.close().await.expect("shutdown");
}

/// A `TypeError` is about types whatever words of counts its message has: a list of names
/// indexed by a mask of p-values from a permutation test says "scalar index", and holds. The
/// names as an array pass.
#[tokio::test]
async fn a_type_error_speaking_of_an_index_is_about_types() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nimport numpy as np\nrng = np.random.default_rng(3)\n\
         X = rng.normal(size=(40, 30))\nX[20:, :3] += 2.0\ngroups = np.repeat([0, 1], 20)\n\
         names = [f'feature_{i}' for i in range(30)]\n\
         def gap(x, g):\n    return x[g == 1].mean(axis=0) - x[g == 0].mean(axis=0)",
    )
    .await;
    let permutations = "observed = np.abs(gap(X, groups))\nnull = np.empty(400)\nfor b in range(400):\n    \
                        time.sleep(0.02)\n    null[b] = np.abs(gap(X, rng.permutation(groups))).max()\n\
                        p = (1 + (null[:, None] >= observed).sum(axis=0)) / 401\n";
    let report = abridged_run(
        &mut session,
        &format!("{permutations}hits = names[p < 0.05]\n"),
    )
    .await;
    let confirmed = held(&report, "TypeError", 7);
    assert!(confirmed.contains("the types of the values"), "{confirmed}");
    let report = abridged_run(
        &mut session,
        &format!("{permutations}hits = np.array(names)[p < 0.05]\n"),
    )
    .await;
    passed(&report);
    session.close().await.expect("shutdown");
}

const TRAIN_ONE: &str = "def train_one(model, X, optimizer):\n    for start in range(0, len(X), 32):\n        \
                         time.sleep(0.02)\n        optimizer.zero_grad()\n        loss = (model(X[start:start + 32]) ** 2).mean()\n        \
                         loss.backward()\n        optimizer.step()\n    return loss.item()\n";
const FILL: &str = "def fill(store, n):\n    for i in range(n):\n        time.sleep(0.01)\n        if i % 10 == 9:\n            \
                    store.setdefault(f'at{i}', i)\n";

/// A training function, abridged, steps the optimizer its caller gave it: the model keeps its
/// structure, so scores taken outside `no_grad` that refuse `.numpy()` hold. A function that
/// stores into its argument under a condition leaves it changed. Defined in an earlier cell
/// (`in_cell` false) or in the checked cell itself.
async fn functions_leave_changed_only_what_they_store_by_iteration(in_cell: bool) {
    let mut session = start_kernel().await;
    let data = "import time\nimport torch\ntorch.manual_seed(0)\nX = torch.randn(640, 6)\nX_test = torch.randn(50, 6)\n";
    let (setup, defined) = if in_cell {
        (data.to_owned(), (TRAIN_ONE, FILL))
    } else {
        (format!("{data}{TRAIN_ONE}{FILL}"), ("", ""))
    };
    run_cell(&mut session, &setup).await;
    let offset = |code: &str| u32::try_from(code.lines().count()).expect("few lines");
    let train = format!(
        "{}model = torch.nn.Linear(6, 1)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.01)\n\
         losses = []\nfor epoch in range(8):\n    losses.append(train_one(model, X, optimizer))\n",
        defined.0
    );
    let report = abridged_run(
        &mut session,
        &format!("{train}scores = model(X_test).numpy()\n"),
    )
    .await;
    let confirmed = held(&report, "RuntimeError", 6 + offset(defined.0));
    assert!(confirmed.contains("gradient"), "{confirmed}");
    let report = abridged_run(
        &mut session,
        &format!("{train}with torch.no_grad():\n    scores = model(X_test).numpy()\n"),
    )
    .await;
    passed(&report);
    // Runs cleanly for real: every tenth key is there. The abridged run stores only some.
    let report = abridged_run(
        &mut session,
        &format!(
            "{}store = {{}}\nfill(store, 300)\nstore['at149']\n",
            defined.1
        ),
    )
    .await;
    let (exception, line, abridged) = raised(&report);
    assert_eq!(
        (exception, line),
        ("KeyError", Some(3 + offset(defined.1))),
        "{abridged:?}"
    );
    assert_eq!(abridged.depends_on, ["store"]);
    assert_eq!(abridged.confirmed, None);
    session.close().await.expect("shutdown");
}

#[tokio::test]
async fn a_function_of_an_earlier_cell_leaves_changed_only_what_it_stores_by_iteration() {
    functions_leave_changed_only_what_they_store_by_iteration(false).await;
}

#[tokio::test]
async fn a_function_of_the_cell_itself_leaves_changed_only_what_it_stores_by_iteration() {
    functions_leave_changed_only_what_they_store_by_iteration(true).await;
}

/// An `IndexError` about the index's type (NumPy's "arrays used as indices must be of integer
/// (or boolean) type") is about types, as a `TypeError` is, though other `IndexError`s are
/// positions: region codes read back as floats from a stacked table, counted against the
/// clusters a k-means loop assigned, hold; as integers they pass. Each iteration assigns afresh.
#[tokio::test]
async fn an_index_of_floats_is_about_types() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nimport numpy as np\nrng = np.random.default_rng(8)\n\
         points = rng.normal(size=(600, 2)) + np.repeat([[0, 0], [4, 4], [0, 5]], 200, axis=0)\n\
         table = np.column_stack([points, rng.integers(0, 3, 600)])",
    )
    .await;
    let kmeans = "K = 3\ncenters = table[:K, :2].copy()\nfor step in range(150):\n    time.sleep(0.03)\n    \
                  dist = ((table[:, None, :2] - centers[None]) ** 2).sum(axis=2)\n    \
                  assign = dist.argmin(axis=1)\n    \
                  centers = np.array([table[assign == k, :2].mean(axis=0) for k in range(K)])\n\
                  region = table[:, 2]\nper_region = np.zeros((3, K), dtype=int)\n";
    let report = abridged_run(
        &mut session,
        &format!("{kmeans}np.add.at(per_region, (region, assign), 1)\n"),
    )
    .await;
    let confirmed = held(&report, "IndexError", 10);
    assert!(confirmed.contains("the type of an index"), "{confirmed}");
    let report = abridged_run(
        &mut session,
        &format!("{kmeans}np.add.at(per_region, (region.astype(int), assign), 1)\n"),
    )
    .await;
    passed(&report);
    session.close().await.expect("shutdown");
}

/// A message that names dtypes by their width speaks of dtypes without the word: monthly
/// aggregates keep the integer customer ids, the customer table holds them as text, and
/// pandas refuses the merge ("You are trying to merge on int64 and ... columns"). Converted,
/// it passes.
#[tokio::test]
async fn a_message_naming_dtypes_by_width_is_about_types() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nimport numpy as np\nimport pandas as pd\nrng = np.random.default_rng(2)\n\
         sales = pd.DataFrame({'customer': rng.integers(500, 800, 6000),\n\
         'month': rng.integers(1, 13, 6000), 'amount': rng.gamma(2.0, 30.0, 6000)})\n\
         customers = pd.DataFrame({'customer': np.arange(500, 800).astype(str),\n\
         'segment': rng.choice(['retail', 'pro'], 300)})",
    )
    .await;
    let months =
        "monthly = []\nfor month, rows in sales.groupby('month'):\n    time.sleep(0.3)\n    \
                  spent = rows.groupby('customer')['amount'].agg(['sum', 'count'])\n    \
                  monthly.append(spent.assign(month=month))\n\
                  totals = pd.concat(monthly).groupby(level='customer').sum()\n";
    let report = abridged_run(
        &mut session,
        &format!("{months}joined = totals.reset_index().merge(customers, on='customer')\n"),
    )
    .await;
    let confirmed = held(&report, "ValueError", 7);
    assert!(confirmed.contains("dtypes"), "{confirmed}");
    let report = abridged_run(
        &mut session,
        &format!(
            "{months}joined = totals.reset_index().merge(customers.astype({{'customer': 'int64'}}), on='customer')\n"
        ),
    )
    .await;
    passed(&report);
    session.close().await.expect("shutdown");
}

/// A loop over a dictionary's own keys that stores under them (`for name in params:
/// params[name] -= lr * grads[name]`) replaces entries and adds no key, whichever iterations
/// ran: a from-scratch regression's weights, updated so in every step, keep their shapes, and
/// scoring a table one column wider than the training data after the epochs holds. The table of
/// the training width passes.
#[tokio::test]
async fn stores_under_a_dictionarys_own_keys_add_no_key() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nimport numpy as np\nrng = np.random.default_rng(5)\n\
         X = rng.normal(size=(512, 5))\ny = X @ np.arange(1.0, 6.0) + rng.normal(0, 0.1, 512)\n\
         X_new = rng.normal(size=(50, 6))\n\
         def grads_of(params, xb, yb):\n    err = xb @ params['w'] + params['b'] - yb\n    \
         return {'w': xb.T @ err / len(xb), 'b': err.mean()}",
    )
    .await;
    let train = "params = {'w': np.zeros(5), 'b': 0.0}\nfor epoch in range(120):\n    time.sleep(0.03)\n    \
                 for start in range(0, 512, 64):\n        \
                 grads = grads_of(params, X[start:start + 64], y[start:start + 64])\n        \
                 for name in params:\n            params[name] -= 0.05 * grads[name]\n";
    let report = abridged_run(
        &mut session,
        &format!("{train}scores = X_new @ params['w'] + params['b']\n"),
    )
    .await;
    let confirmed = held(&report, "ValueError", 8);
    assert!(confirmed.contains("It reads params"), "{confirmed}");
    let report = abridged_run(
        &mut session,
        &format!("{train}scores = X_new[:, :5] @ params['w'] + params['b']\n"),
    )
    .await;
    passed(&report);
    session.close().await.expect("shutdown");
}

/// A best checkpoint kept under a condition by one assignment (`if val < best['score']: best =
/// {...}`) that the first iteration made (the first score always improves on infinity) holds
/// the structure of that assignment whichever epoch made it last: handing the whole record to
/// `load_state_dict` holds, and its weights pass. Kept only from the tenth epoch on, the first
/// iteration made none, and the same crash stays uncertain.
#[tokio::test]
async fn a_record_kept_under_a_condition_the_first_iteration_met_holds() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import copy\nimport time\nimport torch\ntorch.manual_seed(0)\nX = torch.randn(256, 4)\n\
         y = X @ torch.tensor([1.0, -2.0, 0.5, 3.0])\nX_val, y_val = X[:64], y[:64]",
    )
    .await;
    let train = |keep: &str, load: &str| {
        format!(
            "model = torch.nn.Linear(4, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.05)\n\
             best = {{'score': float('inf')}}\nfor epoch in range(150):\n    time.sleep(0.03)\n    \
             opt.zero_grad()\n    loss = ((model(X).squeeze(1) - y) ** 2).mean()\n    loss.backward()\n    \
             opt.step()\n    with torch.no_grad():\n        \
             val = ((model(X_val).squeeze(1) - y_val) ** 2).mean().item()\n    \
             if {keep}val < best['score']:\n        \
             best = {{'epoch': epoch, 'score': val, 'weights': copy.deepcopy(model.state_dict())}}\n\
             model.load_state_dict({load})\n"
        )
    };
    let report = abridged_run(&mut session, &train("", "best")).await;
    let confirmed = held(&report, "RuntimeError", 14);
    assert!(confirmed.contains("It reads best"), "{confirmed}");
    assert!(confirmed.contains("the keys it names"), "{confirmed}");
    assert!(
        confirmed.contains("best, assigned under a condition by one statement, was assigned by the loop's first iteration"),
        "{confirmed}"
    );
    let report = abridged_run(&mut session, &train("", "best['weights']")).await;
    passed(&report);
    let report = abridged_run(&mut session, &train("epoch >= 10 and ", "best")).await;
    let (exception, line, abridged) = raised(&report);
    assert_eq!((exception, line), ("RuntimeError", Some(14)));
    assert!(
        abridged.depends_on.contains(&"best".to_owned()) && abridged.confirmed.is_none(),
        "{abridged:?}"
    );
    session.close().await.expect("shutdown");
}

/// A model trained fewer steps keeps its layers' sizes: an embedding sized from the training
/// ids, looked up after training with test ids beyond it through the notebook's `predict`
/// (which passes the model on as the module torch runs `forward` of, and the ids as they
/// were), raises the same `IndexError` for real, certain without a second run, and the
/// finding names the layer; ids the table holds run. Ids computed from a counter the loop
/// stepped (fewer steps in the abridged run) stay uncertain.
#[tokio::test]
async fn a_torch_layer_looking_up_unchanged_ids_is_certain() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nimport torch\nfrom torch import nn\ntorch.manual_seed(0)\n\
         class Net(nn.Module):\n    def __init__(self, n):\n        super().__init__()\n        \
         self.emb = nn.Embedding(n, 4)\n        self.head = nn.Linear(4, 1)\n    \
         def forward(self, ids):\n        return self.head(self.emb(ids)).squeeze(1)\n\
         def train_epoch(model, opt, ids, target):\n    for start in range(0, len(ids), 8):\n        \
         opt.zero_grad()\n        loss = ((model(ids[start:start + 8]) - target[start:start + 8]) ** 2).mean()\n        \
         loss.backward()\n        opt.step()\n    return loss.item()\n\
         def predict(model, ids):\n    with torch.no_grad():\n        return model(ids)\n\
         train_ids = torch.randint(0, 40, (64,))\ntarget = torch.randn(64)\n\
         model = Net(40)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)",
    )
    .await;
    let cell = |ids: &str| {
        format!(
            "EPOCHS = 60\nhistory = []\nsteps = 0\nfor epoch in range(EPOCHS):\n    time.sleep(0.05)\n    \
             history.append(train_epoch(model, opt, *(train_ids, target)))\n    steps += 1\n\
             pred = predict(model, {ids})\n"
        )
    };
    let report = abridged_run(&mut session, &cell("torch.arange(35, 45)")).await;
    let (exception, line, abridged) = raised(&report);
    assert_eq!((exception, line), ("IndexError", Some(8)), "{abridged:?}");
    assert!(abridged.depends_on.is_empty(), "{abridged:?}");
    let grounds = abridged.grounds.as_deref().unwrap_or_default();
    assert!(grounds.contains("self.emb (Embedding)"), "{grounds}");
    passed(&abridged_run(&mut session, &cell("torch.arange(30, 40)")).await);
    // 60 - 2 steps is past the table in the abridged run only (60 - 60 is not).
    let report = abridged_run(&mut session, &cell("torch.tensor([EPOCHS - steps])")).await;
    let (exception, line, abridged) = raised(&report);
    assert_eq!((exception, line), ("IndexError", Some(8)), "{abridged:?}");
    assert!(!abridged.depends_on.is_empty(), "{abridged:?}");
    session.close().await.expect("shutdown");
}
