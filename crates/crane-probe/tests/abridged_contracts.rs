//! Abridged runs made certain by a library's contract, in a real ipykernel with real
//! scikit-learn and pandas: the shape of a fitted attribute that the data an estimator was
//! fitted on fixes (a linear model's `coef_`, an ensemble's `feature_importances_`), read from
//! a shortened search's winner whose earlier steps no candidate sets, or from an ensemble whose
//! rounds the abridgement cut, is the full run's, so a crash about its length is certain; where
//! the search also tries a setting of an earlier step that changes the width, an earlier step
//! selects columns by a cut ensemble's importances, or the attribute reaches the call through a
//! computation, it stays uncertain, and the corrected cell passes. A pipeline step before the
//! one whose rounds were cut, fitted on rows the abridgement did not change, raises as the full
//! run's does.

mod common;

use common::{abridged_raised, abridged_run, raised_abridged as raised, run_cell, start_kernel};

use crane_kernel::KernelSession;
use crane_probe::dry_run::DryRunResult;

/// The abridged run of `code` raised `exception`, and the verdict on it stays uncertain.
async fn stays_uncertain(session: &mut KernelSession, code: &str, exception: &str) {
    let report = abridged_run(session, code).await;
    let (raised, _, depends_on) = abridged_raised(&report);
    assert_eq!(raised, exception, "{code}: {depends_on:?}");
    assert!(!depends_on.is_empty(), "{code}: {depends_on:?}");
}

#[tokio::test]
async fn a_searched_models_coefficients_against_the_raw_columns_hold() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nimport numpy as np\nimport pandas as pd\n\
         from sklearn.compose import ColumnTransformer\nfrom sklearn.ensemble import ExtraTreesClassifier\n\
         from sklearn.linear_model import Ridge\nfrom sklearn.model_selection import GridSearchCV, RandomizedSearchCV\n\
         from sklearn.pipeline import Pipeline\nfrom sklearn.preprocessing import OneHotEncoder, StandardScaler\n\
         rng = np.random.default_rng(3)\nFEATURES = ['depth', 'flow', 'site']\n\
         wells = pd.DataFrame({'depth': rng.normal(50, 9, 400), 'flow': rng.gamma(2.0, 3.0, 400),\n\
                               'site': rng.choice(['north', 'east', 'south', 'west'], 400)})\n\
         output = wells['depth'] * 0.3 + wells['flow'] + (wells['site'] == 'east') * 4 + rng.normal(size=400)\n\
         dry = (output < output.median()).astype(int)",
    )
    .await;
    let prep = "prep = ColumnTransformer([('num', StandardScaler(), ['depth', 'flow']), \
                ('cat', OneHotEncoder(handle_unknown='ignore'), ['site'])])\n";
    let ridge = |grid: &str, read: &str| {
        format!(
            "time.sleep(1.5)\n{prep}pipe = Pipeline([('prep', prep), ('model', Ridge())])\n\
             search = GridSearchCV(pipe, {{'model__alpha': [0.01, 0.1, 1.0, 10.0]{grid}}}, cv=4)\n\
             search.fit(wells[FEATURES], output)\nbest = search.best_estimator_\n\
             weights = pd.Series({read}, index=FEATURES)\n"
        )
    };
    // Six columns reach the model (two scaled, four sites), three names are given.
    let report = abridged_run(&mut session, &ridge("", "best.named_steps['model'].coef_")).await;
    let (exception, line, abridged) = raised(&report);
    assert_eq!((exception, line), ("ValueError", Some(7)), "{abridged:?}");
    assert!(abridged.depends_on.is_empty(), "{abridged:?}");
    let grounds = abridged.grounds.as_deref().unwrap_or_default();
    assert!(grounds.contains("Ridge's coef_"), "{grounds}");
    assert!(grounds.contains("It reads best"), "{grounds}");

    // Named by the encoder's output, the weights line up: the cell runs.
    let fixed = ridge("", "best.named_steps['model'].coef_").replace(
        "index=FEATURES",
        "index=best.named_steps['prep'].get_feature_names_out()",
    );
    let report = abridged_run(&mut session, &fixed).await;
    assert!(
        matches!(report.result, DryRunResult::Passed),
        "{:?}",
        report.result
    );

    // A search that also tries dropping a site's column changes the width the winner sees.
    let dropping = ridge(", 'prep__cat__drop': [None, 'first']", "best[-1].coef_");
    stays_uncertain(&mut session, &dropping, "ValueError").await;

    // Their magnitudes, rounded, have their shape: still held.
    let magnitudes = ridge("", "np.round(np.abs(best[-1].coef_), 3)");
    let report = abridged_run(&mut session, &magnitudes).await;
    let (exception, _, abridged) = raised(&report);
    assert_eq!(exception, "ValueError", "{abridged:?}");
    assert!(abridged.depends_on.is_empty(), "{abridged:?}");

    // Selected by their values (the weights that are not zero), the length is the values'.
    let computed = ridge("", "best[-1].coef_[best[-1].coef_ != 0]");
    stays_uncertain(&mut session, &computed, "ValueError").await;

    // An ensemble's importances, read through the search itself, against the raw names in a
    // frame: whatever trees or features per split the candidates try, one per column.
    let forest = format!(
        "time.sleep(1.5)\n{prep}pipe = Pipeline([('prep', prep), ('model', ExtraTreesClassifier(random_state=0))])\n\
         grid = {{'model__n_estimators': [20, 40, 80], 'model__max_features': ['sqrt', 0.5, None]}}\n\
         search = RandomizedSearchCV(pipe, grid, n_iter=5, cv=3, random_state=0)\n\
         search.fit(wells[FEATURES], dry)\n\
         table = pd.DataFrame({{'feature': FEATURES, 'importance': search.best_estimator_[-1].feature_importances_}})\n"
    );
    let report = abridged_run(&mut session, &forest).await;
    let (exception, line, abridged) = raised(&report);
    assert_eq!((exception, line), ("ValueError", Some(7)), "{abridged:?}");
    assert!(abridged.depends_on.is_empty(), "{abridged:?}");
    let grounds = abridged.grounds.as_deref().unwrap_or_default();
    assert!(
        grounds.contains("ExtraTreesClassifier's feature_importances_"),
        "{grounds}"
    );
    session.close().await.expect("shutdown");
}

#[tokio::test]
async fn a_boosted_models_importances_against_the_raw_columns_hold() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nimport numpy as np\nimport pandas as pd\n\
         from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor\n\
         from sklearn.feature_selection import SelectFromModel\nfrom sklearn.linear_model import Ridge\n\
         from sklearn.pipeline import make_pipeline\n\
         rng = np.random.default_rng(5)\n\
         homes = pd.DataFrame({'rooms': rng.integers(1, 7, 500), 'age': rng.integers(0, 90, 500),\n\
                               'zone': rng.choice(['A', 'B', 'C'], 500)})\n\
         X = pd.get_dummies(homes, columns=['zone'], dtype=float)\n\
         price = homes['rooms'] * 40 - homes['age'] + (homes['zone'] == 'A') * 30 + rng.normal(0, 5, 500)",
    )
    .await;
    // Five columns after the dummies, three raw names: whatever its stages, one importance per
    // column the model was fitted on.
    let boosted = "time.sleep(1.5)\nmodel = GradientBoostingRegressor(n_estimators=300, random_state=0).fit(X, price)\n\
                   ranking = pd.Series(model.feature_importances_, index=homes.columns).sort_values()\n";
    let report = abridged_run(&mut session, boosted).await;
    let (exception, line, abridged) = raised(&report);
    assert_eq!((exception, line), ("ValueError", Some(3)), "{abridged:?}");
    assert!(abridged.depends_on.is_empty(), "{abridged:?}");
    let grounds = abridged.grounds.as_deref().unwrap_or_default();
    assert!(
        grounds.contains("GradientBoostingRegressor's feature_importances_"),
        "{grounds}"
    );
    assert!(grounds.contains("but for its rounds"), "{grounds}");
    let report = abridged_run(&mut session, &boosted.replace("homes.columns", "X.columns")).await;
    assert!(
        matches!(report.result, DryRunResult::Passed),
        "{:?}",
        report.result
    );

    // Bound to a name first and summed on the way, the importances are still the fit's own;
    // one more entry appended to them is a computation, which stays uncertain.
    let bound = "time.sleep(1.5)\nmodel = GradientBoostingRegressor(n_estimators=300, random_state=0).fit(X, price)\n\
                 imp = model.feature_importances_\nprint(imp.sum())\nranking = pd.Series(imp, index=homes.columns)\n";
    let report = abridged_run(&mut session, bound).await;
    let (exception, line, abridged) = raised(&report);
    assert_eq!((exception, line), ("ValueError", Some(5)), "{abridged:?}");
    assert!(abridged.depends_on.is_empty(), "{abridged:?}");
    let grounds = abridged.grounds.as_deref().unwrap_or_default();
    assert!(
        grounds.contains("It reads imp, which line 3 read from model"),
        "{grounds}"
    );
    let appended = bound.replace(
        "model.feature_importances_\n",
        "np.append(model.feature_importances_, 0.0)\n",
    );
    stays_uncertain(&mut session, &appended, "ValueError").await;

    // Columns kept by a forest's importances: a forest of 2 trees keeps others than one of
    // 300, so the ridge's width is not the full run's.
    let selected = "time.sleep(1.5)\nmodel = make_pipeline(SelectFromModel(RandomForestRegressor(n_estimators=300, \
                    random_state=0)), Ridge()).fit(X, price)\n\
                    weights = pd.Series(model[-1].coef_, index=homes.columns)\n";
    stays_uncertain(&mut session, selected, "ValueError").await;
    session.close().await.expect("shutdown");
}

/// A pipeline whose last step's fit the abridgement cut in rounds, asked in a fold loop's last
/// fold about a category its encoder, fitted on that fold's own rows, never saw: the encoder
/// learned what the full run's learns, so the crash is certain and says why; told to ignore
/// unknown categories, the cell runs. An encoder fitted on rows an abridged loop stacked
/// (stand-ins for the chunks it skipped, one of which holds the category) stays uncertain.
#[tokio::test]
async fn an_encoder_before_a_cut_step_fitted_on_exact_rows_holds() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nimport numpy as np\nimport pandas as pd\n\
         from sklearn.compose import ColumnTransformer\nfrom sklearn.ensemble import GradientBoostingRegressor\n\
         from sklearn.model_selection import TimeSeriesSplit\nfrom sklearn.pipeline import make_pipeline\n\
         from sklearn.preprocessing import OneHotEncoder\nrng = np.random.default_rng(4)\nn = 30000\n\
         orders = pd.DataFrame({'kind': rng.choice(['a', 'b', 'c'], n), 'size': rng.normal(size=n)})\n\
         orders.loc[n - 500:, 'kind'] = np.where(rng.random(500) < 0.3, 'new', orders.loc[n - 500:, 'kind'])\n\
         orders['y'] = orders['size'] * 2 + (orders['kind'] == 'a')\n\
         KINDS = ['a', 'b', 'mid', 'c', 'd', 'e']\ntest = pd.DataFrame({'kind': ['mid', 'a']})",
    )
    .await;
    let folds = |encoder: &str| {
        format!(
            "time.sleep(1.5)\nprep = ColumnTransformer([('cat', {encoder}, ['kind']), ('num', 'passthrough', ['size'])])\n\
             maes = []\nfor fold, (tr_idx, va_idx) in enumerate(TimeSeriesSplit(n_splits=5).split(orders)):\n    \
             tr, va = orders.iloc[tr_idx], orders.iloc[va_idx]\n    \
             model = make_pipeline(prep, GradientBoostingRegressor(n_estimators=400, max_depth=5, random_state=fold))\n    \
             model.fit(tr[['kind', 'size']], tr['y'])\n    pred = model.predict(va[['kind', 'size']])\n    \
             maes.append(np.abs(pred - va['y']).mean())\n"
        )
    };
    let report = abridged_run(&mut session, &folds("OneHotEncoder()")).await;
    let (exception, line, abridged) = raised(&report);
    assert_eq!((exception, line), ("ValueError", Some(8)), "{abridged:?}");
    assert!(abridged.depends_on.is_empty(), "{abridged:?}");
    let grounds = abridged.grounds.as_deref().unwrap_or_default();
    assert!(
        grounds.contains("It reads model, which the abridgement changed, but only as the pipeline whose step columntransformer raised"),
        "{grounds}"
    );
    let report = abridged_run(
        &mut session,
        &folds("OneHotEncoder(handle_unknown='ignore')"),
    )
    .await;
    assert!(
        matches!(report.result, DryRunResult::Passed),
        "{:?}",
        report.result
    );

    let stacked = "chunks = []\nfor kind in KINDS:\n    time.sleep(0.5)\n    \
                   chunks.append(pd.DataFrame({'kind': [kind] * 2000, 'y': rng.normal(size=2000)}))\n\
                   train = pd.concat(chunks)\n\
                   model = make_pipeline(OneHotEncoder(), GradientBoostingRegressor(n_estimators=300, max_depth=5, random_state=0))\n\
                   model.fit(train[['kind']], train['y'])\nprint(model.predict(test))\n";
    stays_uncertain(&mut session, stacked, "ValueError").await;
    session.close().await.expect("shutdown");
}

/// A prequential loop scores each chunk before it learns from it; the last chunk's targets
/// hold NaN (a shift by a horizon). The metric refuses them whatever the model trained fewer
/// steps predicts: certain, and the grounds name the array; with the NaN rows dropped the cell
/// runs. Called only under a test on a count the abridgement changed, it stays uncertain. The
/// model it trains, asked about a row with a missing value, refuses it as its class says.
#[tokio::test]
async fn a_metric_given_an_unchanged_array_of_nan_holds() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nimport numpy as np\nimport pandas as pd\nfrom sklearn.linear_model import SGDRegressor\n\
         from sklearn.metrics import mean_absolute_error\nfrom sklearn.preprocessing import StandardScaler\n\
         rng = np.random.default_rng(1)\nn = 6000\ndata = pd.DataFrame({'a': rng.normal(size=n), 'b': rng.normal(size=n)})\n\
         data['target'] = (data['a'] * 2 + rng.normal(size=n)).shift(-50)",
    )
    .await;
    let prequential = |keep: &str, score: &str| {
        format!(
            "scaler, reg, maes, seen = StandardScaler(), SGDRegressor(random_state=0), [], 0\n\
             for start in range(0, n, 200):\n    part = data.iloc[start:start + 200]{keep}\n    \
             X, y = part[['a', 'b']].to_numpy(), part['target'].to_numpy()\n    if start > 0:\n{score}    \
             scaler.partial_fit(X)\n    seen += 1\n    for _ in range(3):\n        time.sleep(0.05)\n        \
             reg.partial_fit(scaler.transform(X), np.nan_to_num(y))\n"
        )
    };
    let scored = "        maes.append(mean_absolute_error(y, reg.predict(scaler.transform(X))))\n";
    let report = abridged_run(&mut session, &prequential("", scored)).await;
    let (exception, line, abridged) = raised(&report);
    assert_eq!((exception, line), ("ValueError", Some(6)), "{abridged:?}");
    assert!(abridged.depends_on.is_empty(), "{abridged:?}");
    let grounds = abridged.grounds.as_deref().unwrap_or_default();
    assert!(
        grounds.contains("raised in scikit-learn's mean_absolute_error")
            && grounds.contains("and y, given to it, holds them"),
        "{grounds}"
    );
    let report = abridged_run(&mut session, &prequential(".dropna()", scored)).await;
    assert!(
        matches!(report.result, DryRunResult::Passed),
        "{:?}",
        report.result
    );
    // In the full run `seen` passes 5 long before the last chunk: the metric is never called
    // there; the abridged run, having counted 2 chunks, calls it.
    let counted = "        if seen < 5:\n            maes.append(mean_absolute_error(y, reg.predict(scaler.transform(X))))\n";
    stays_uncertain(&mut session, &prequential("", counted), "ValueError").await;

    // The model trained on the clean chunks asked about a row with a missing value: the
    // regressor's class refuses NaN in what it is asked about, whatever its weights.
    let asked = format!(
        "{}new = np.array([[0.3, np.nan]])\nprint(reg.predict(new))\n",
        prequential(".dropna()", scored)
    );
    let report = abridged_run(&mut session, &asked).await;
    let (exception, line, abridged) = raised(&report);
    assert_eq!((exception, line), ("ValueError", Some(13)), "{abridged:?}");
    assert!(abridged.depends_on.is_empty(), "{abridged:?}");
    let grounds = abridged.grounds.as_deref().unwrap_or_default();
    assert!(
        grounds.contains("raised in SGDRegressor.predict") && grounds.contains("new, given to it"),
        "{grounds}"
    );
    session.close().await.expect("shutdown");
}
