//! A pandas column looked up by a name after an abridged loop, in a real ipykernel with real
//! pandas: where every column the frame could hold is a name the code writes out (the keys of
//! the records a loop appended, a grouped aggregation's spec), whichever iterations ran, a
//! missing one is missing from the full run's frame too, and the crash is certain with words
//! that say why. Where a column's name comes from the data (a key the loop computes, a pivot),
//! from a `**` unpacking, or the frame reaches code of the notebook's (given it, or naming it
//! as a global), `exec`, or a second name, the
//! skipped iterations could have added it: the crash stays uncertain. The corrected cells run.

mod common;

use common::{abridged_raised, abridged_run, raised_abridged as raised, run_cell, start_kernel};

use crane_kernel::KernelSession;
use crane_probe::dry_run::DryRunResult;

const SETUP: &str = "import time\nimport numpy as np\nimport pandas as pd\nrng = np.random.default_rng(0)\n\
                     MODELS = ['ridge', 'lasso', 'svr', 'knn', 'tree', 'forest']\n\
                     def add_rmse(t):\n    if (t['mse'] == 0.5).any():\n        t['rmse'] = np.sqrt(t['mse'])\n\
                     sales = pd.DataFrame({'shop': rng.integers(0, 50, 30000), 'value': rng.gamma(2, 10, 30000),\n\
                     'late': rng.random(30000) < 0.1})";

/// The abridged run of `code` raised `KeyError` at `line`, certain, with grounds naming
/// `says`.
async fn certain(session: &mut KernelSession, code: &str, line: u32, says: &[&str]) {
    let report = abridged_run(session, code).await;
    let (exception, raised_at, abridged) = raised(&report);
    assert_eq!((exception, raised_at), ("KeyError", Some(line)), "{code}");
    assert!(abridged.depends_on.is_empty(), "{code}: {abridged:?}");
    let grounds = abridged.grounds.as_deref().unwrap_or_default();
    for words in says {
        assert!(grounds.contains(words), "{code}: {grounds}");
    }
}

/// The abridged run of `code` raised `KeyError`, and the verdict stays uncertain.
async fn uncertain(session: &mut KernelSession, code: &str) {
    let report = abridged_run(session, code).await;
    let (exception, _, depends_on) = abridged_raised(&report);
    assert_eq!(exception, "KeyError", "{code}");
    assert!(!depends_on.is_empty(), "{code}");
}

async fn passes(session: &mut KernelSession, code: &str) {
    let report = abridged_run(session, code).await;
    assert!(
        matches!(report.result, DryRunResult::Passed),
        "{code}: {:?}",
        report.result
    );
}

#[tokio::test]
async fn a_column_no_record_or_aggregation_names_is_missing_for_certain() {
    let mut session = start_kernel().await;
    run_cell(&mut session, SETUP).await;
    // Records with their keys written out, a frame made from them and indexed, the best fold
    // picked by its values and asked for a column the records never have.
    let records = |read: &str| {
        format!(
            "rows = []\nfor fold in range(30):\n    time.sleep(0.1)\n    err = rng.normal(size=100)\n    \
             rows.append({{'fold': fold, 'mae': np.abs(err).mean(), 'mse': (err ** 2).mean()}})\n\
             table = pd.DataFrame(rows).set_index('fold')\nbest = table['mae'].idxmin()\nprint(best, {read})\n"
        )
    };
    certain(
        &mut session,
        &records("table.loc[best, 'rmse']"),
        8,
        &[
            "It reads best, table",
            "the column 'rmse' of table",
            "'mae', 'mse'",
            "the keys written out in the records appended to rows",
        ],
    )
    .await;
    passes(&mut session, &records("table.loc[best, 'mse']")).await;

    // Blocks summarised by a grouped aggregation written out, stacked and summed: its columns
    // are the spec's names (two levels deep), never the flat names asked for.
    let blocks = |read: &str| {
        format!(
            "parts = []\nfor start in range(0, len(sales), 2500):\n    time.sleep(0.15)\n    \
             block = sales.iloc[start:start + 2500]\n    \
             summary = block.groupby('shop').agg({{'value': ['sum', 'count'], 'late': 'sum'}})\n    \
             parts.append(summary)\nper_shop = pd.concat(parts).groupby(level=0).sum()\n\
             per_shop['mean_value'] = {read}\n"
        )
    };
    certain(
        &mut session,
        &blocks("per_shop['value_sum'] / per_shop['value_count']"),
        8,
        &[
            "the names a grouped aggregation writes out",
            "'late', 'mean_value', 'value'",
        ],
    )
    .await;
    passes(
        &mut session,
        &blocks("per_shop[('value', 'sum')] / per_shop[('value', 'count')]"),
    )
    .await;
    session.close().await.expect("shutdown");
}

#[tokio::test]
async fn a_column_the_skipped_iterations_could_add_stays_uncertain() {
    let mut session = start_kernel().await;
    run_cell(&mut session, SETUP).await;
    // Each of these raises in the abridged run only: the full run's frame has the column.
    let by_model = |grow: &str, make: &str| {
        format!(
            "rows = []\nfor name in MODELS:\n    time.sleep(0.4)\n{grow}\
             table = {make}\nprint(table['knn'])\n"
        )
    };
    // A key the loop computes from its item.
    uncertain(
        &mut session,
        &by_model(
            "    row = {'fold': 0}\n    row[name] = rng.normal()\n    rows.append(row)\n",
            "pd.DataFrame(rows)",
        ),
    )
    .await;
    // A `**` unpacking of one.
    uncertain(
        &mut session,
        &by_model(
            "    rows.append({'fold': 0, **{name: 1.0}})\n",
            "pd.DataFrame(rows)",
        ),
    )
    .await;
    // Columns a pivot takes from the values.
    uncertain(
        &mut session,
        &by_model(
            "    rows.append({'model': name, 'fold': 0, 'score': rng.normal()})\n",
            "pd.DataFrame(rows).pivot_table(index='fold', columns='model', values='score')",
        ),
    )
    .await;
    // The frame handed to a notebook function, or changed under a second name, by what
    // only the middle folds hold.
    let folds = |after: &str| {
        format!(
            "rows = []\nfor i in range(12):\n    time.sleep(0.2)\n    rows.append({{'fold': i, 'mse': i / 10}})\n\
             table = pd.DataFrame(rows)\n{after}print(table['rmse'].mean())\n"
        )
    };
    uncertain(&mut session, &folds("add_rmse(table)\n")).await;
    // A notebook function that adds it to the global frame it is not given.
    run_cell(
        &mut session,
        "def add_rmse_to_table():\n    if (table['mse'] == 0.5).any():\n        table['rmse'] = 1.0",
    )
    .await;
    uncertain(&mut session, &folds("add_rmse_to_table()\n")).await;
    // A statement that reaches names by strings.
    uncertain(
        &mut session,
        &folds("if (table['mse'] == 0.5).any():\n    exec(\"table['rmse'] = 1.0\")\n"),
    )
    .await;
    uncertain(
        &mut session,
        &folds("t2 = table\nif (table['mse'] == 0.5).any():\n    t2['rmse'] = 1.0\n"),
    )
    .await;
    session.close().await.expect("shutdown");
}
