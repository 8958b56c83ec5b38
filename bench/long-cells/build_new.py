"""Generate bench/long-cells/new/: six more long-cell crash/fix pairs, written before crane ran on
them, in the format and with the writing conventions of build.py (same Case fields, `@N@` size,
cell ids, execution counts, no outputs). They measure the abridged run's second abridgement: a
last smaller batch stacked, a Keras history validated every tenth epoch, a multi-metric search
read by the single-metric key, a column created for some groups only, a statsmodels fit per
region read by a formula's term, a bootstrap of dicts. Not split: the whole folder is measured.

    .venv/bin/python bench/long-cells/build_new.py
    .venv/bin/python bench/long-cells/verify.py bench/long-cells/new --record bench/long-cells/new/target_seconds.json
    .venv/bin/python bench/long-cells/build_new.py      # again, to write the seconds into the manifest
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from build import Case, code, entry, write_case  # noqa: E402

OUT = HERE / "new"
SECONDS_FILE = OUT / "target_seconds.json"

CASES: list[Case] = []


def case(**kwargs) -> None:
    kwargs["cells"] = [code(c) for c in kwargs["cells"]]
    kwargs["fix"] = {i: code(c) for i, c in kwargs.get("fix", {}).items()}
    CASES.append(Case(**kwargs))


case(
    name="torch_stack_epoch_predictions_last_batch",
    library="torch",
    category="shape",
    needs_runtime=True,
    exception="RuntimeError",
    message_contains="stack expects each tensor to be equal size",
    diagnosis="2,020 rows in batches of 64 leave a last batch of 36: stacking the epoch's "
    "per-batch predictions fails after the last epoch; concatenate them instead",
    cells=[
        """
        import numpy as np
        import torch
        from torch import nn
        from torch.utils.data import DataLoader, TensorDataset

        torch.manual_seed(0)
        """,
        """
        X = torch.randn(2020, 128)
        y = (X[:, :8].sum(dim=1) > 0).float()
        loader = DataLoader(TensorDataset(X, y), batch_size=64, shuffle=False)
        model = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 1))
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        loss_fn = nn.BCEWithLogitsLoss()
        EPOCHS = @N@
        """,
        """
        for epoch in range(EPOCHS):
            epoch_preds = []
            for xb, yb in loader:
                optimizer.zero_grad()
                logits = model(xb).squeeze(1)
                loss = loss_fn(logits, yb)
                loss.backward()
                optimizer.step()
                epoch_preds.append(torch.sigmoid(logits.detach()))
        predictions = torch.stack(epoch_preds)
        accuracy = ((predictions.flatten() > 0.5).float() == y).float().mean().item()
        print(f"train accuracy {accuracy:.3f}")
        """,
    ],
    target=2,
    n=12,
    small=2,
    fix={2: """
        for epoch in range(EPOCHS):
            epoch_preds = []
            for xb, yb in loader:
                optimizer.zero_grad()
                logits = model(xb).squeeze(1)
                loss = loss_fn(logits, yb)
                loss.backward()
                optimizer.step()
                epoch_preds.append(torch.sigmoid(logits.detach()))
        predictions = torch.cat(epoch_preds)
        accuracy = ((predictions.flatten() > 0.5).float() == y).float().mean().item()
        print(f"train accuracy {accuracy:.3f}")
        """},
)

case(
    name="keras_validation_every_tenth_epoch_gap",
    library="keras",
    category="shape",
    needs_runtime=True,
    exception="ValueError",
    message_contains="operands could not be broadcast together",
    diagnosis="validation_freq=10 records val_accuracy every tenth epoch only: the gap between "
    "training and validation accuracy per epoch subtracts arrays of different lengths",
    cells=[
        """
        import numpy as np
        import keras
        from sklearn.datasets import load_digits

        digits = load_digits()
        X = (digits.data / 16.0).astype("float32")
        y = digits.target
        X_train, X_val, y_train, y_val = X[:1400], X[1400:], y[:1400], y[1400:]
        EPOCHS = @N@
        """,
        """
        keras.utils.set_random_seed(0)
        model = keras.Sequential([
            keras.layers.Input((64,)),
            keras.layers.Dense(256, activation="relu"),
            keras.layers.Dense(256, activation="relu"),
            keras.layers.Dense(10, activation="softmax"),
        ])
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        history = model.fit(X_train, y_train, epochs=EPOCHS, batch_size=16,
                            validation_data=(X_val, y_val), validation_freq=10, verbose=0)
        gap = np.array(history.history["accuracy"]) - np.array(history.history["val_accuracy"])
        print("largest gap", gap.max())
        """,
    ],
    target=1,
    n=90,
    small=25,
    fix={1: """
        keras.utils.set_random_seed(0)
        model = keras.Sequential([
            keras.layers.Input((64,)),
            keras.layers.Dense(256, activation="relu"),
            keras.layers.Dense(256, activation="relu"),
            keras.layers.Dense(10, activation="softmax"),
        ])
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        history = model.fit(X_train, y_train, epochs=EPOCHS, batch_size=16,
                            validation_data=(X_val, y_val), validation_freq=1, verbose=0)
        gap = np.array(history.history["accuracy"]) - np.array(history.history["val_accuracy"])
        print("largest gap", gap.max())
        """},
)

case(
    name="sklearn_multimetric_search_rank_key",
    library="sklearn",
    category="key",
    needs_runtime=True,
    exception="KeyError",
    message_contains="rank_test_score",
    diagnosis="with several scoring metrics GridSearchCV names its ranks rank_test_<metric>: "
    "there is no rank_test_score to sort by",
    cells=[
        """
        import numpy as np
        import pandas as pd
        from sklearn.datasets import make_classification
        from sklearn.ensemble import RandomForestClassifier
        from sklearn.model_selection import GridSearchCV

        X, y = make_classification(n_samples=1500, n_features=20, n_informative=8, random_state=0)
        """,
        """
        grid = {"n_estimators": [60, 120], "max_depth": [4, 8, None], "min_samples_leaf": list(range(1, @N@))}
        search = GridSearchCV(RandomForestClassifier(random_state=0), grid,
                              scoring=["accuracy", "f1_macro"], refit="f1_macro", cv=5)
        search.fit(X, y)
        table = pd.DataFrame(search.cv_results_).sort_values("rank_test_score")
        print(table[["params", "mean_test_accuracy", "mean_test_f1_macro"]].head())
        """,
    ],
    target=1,
    n=3,
    small=2,
    fix={1: """
        grid = {"n_estimators": [60, 120], "max_depth": [4, 8, None], "min_samples_leaf": list(range(1, @N@))}
        search = GridSearchCV(RandomForestClassifier(random_state=0), grid,
                              scoring=["accuracy", "f1_macro"], refit="f1_macro", cv=5)
        search.fit(X, y)
        table = pd.DataFrame(search.cv_results_).sort_values("rank_test_f1_macro")
        print(table[["params", "mean_test_accuracy", "mean_test_f1_macro"]].head())
        """},
)

case(
    name="pandas_discount_column_for_some_stores",
    library="pandas",
    category="nan",
    needs_runtime=True,
    exception="IntCastingNaNError",
    message_contains="Cannot convert non-finite values",
    diagnosis="the loop over stores creates the discount column only for stores whose sales "
    "trend down; the other stores' rows are NaN, which astype(int) refuses",
    cells=[
        """
        import numpy as np
        import pandas as pd

        rng = np.random.default_rng(0)
        N_STORES = @N@
        days = pd.date_range("2024-01-01", periods=365, freq="D")
        sales = pd.DataFrame({
            "store": np.repeat(np.arange(N_STORES), len(days)),
            "day": np.tile(days, N_STORES),
            "units": rng.poisson(40, N_STORES * len(days)).astype(float),
        })
        sales["units"] += np.repeat(rng.normal(0, 0.05, N_STORES), len(days)) * np.tile(np.arange(len(days)), N_STORES)
        """,
        """
        for store, rows in sales.groupby("store"):
            weekly = rows.set_index("day")["units"].resample("W").sum()
            smooth = weekly.rolling(8, min_periods=1).mean().ewm(span=6).mean()
            trend = np.polyfit(np.arange(len(smooth)), smooth.to_numpy(), 1)[0]
            season = rows["units"].rolling(28, min_periods=1).apply(lambda w: np.percentile(w, 90), raw=True)
            if trend < 0:
                sales.loc[rows.index, "discount_pct"] = np.clip(-trend * 10 + season / 100, 0, 30).round()
        sales["discount_pct"] = sales["discount_pct"].astype(int)
        print(sales.groupby("store")["discount_pct"].mean().describe())
        """,
    ],
    target=1,
    n=1500,
    small=6,
    fix={1: """
        for store, rows in sales.groupby("store"):
            weekly = rows.set_index("day")["units"].resample("W").sum()
            smooth = weekly.rolling(8, min_periods=1).mean().ewm(span=6).mean()
            trend = np.polyfit(np.arange(len(smooth)), smooth.to_numpy(), 1)[0]
            season = rows["units"].rolling(28, min_periods=1).apply(lambda w: np.percentile(w, 90), raw=True)
            if trend < 0:
                sales.loc[rows.index, "discount_pct"] = np.clip(-trend * 10 + season / 100, 0, 30).round()
        sales["discount_pct"] = sales["discount_pct"].fillna(0).astype(int)
        print(sales.groupby("store")["discount_pct"].mean().describe())
        """},
)

case(
    name="statsmodels_elasticity_by_region_term_name",
    library="statsmodels",
    category="key",
    needs_runtime=True,
    exception="KeyError",
    message_contains="log_price",
    diagnosis="the formula's term is named np.log(price) in each fit's params, so the "
    "per-region coefficient table has no log_price column",
    cells=[
        """
        import numpy as np
        import pandas as pd
        import statsmodels.api as sm
        import statsmodels.formula.api as smf

        rng = np.random.default_rng(1)
        N_REGIONS = @N@
        rows = 6000
        frames = []
        for region in range(N_REGIONS):
            price = rng.uniform(1, 20, rows)
            promo = rng.integers(0, 2, rows)
            demand = np.exp(3 - (0.5 + region / 100) * np.log(price) + 0.3 * promo + rng.normal(0, 0.2, rows))
            frames.append(pd.DataFrame({"region": region, "price": price, "promo": promo, "demand": demand}))
        data = pd.concat(frames, ignore_index=True)
        """,
        """
        coefs = []
        for region, part in data.groupby("region"):
            family = sm.families.Gamma(sm.families.links.Log())
            fit = smf.glm("demand ~ np.log(price) * C(promo) + I(price ** 2)", data=part, family=family).fit(maxiter=200)
            robust = smf.quantreg("np.log(demand) ~ np.log(price) + C(promo)", data=part).fit(q=0.5)
            coefs.append(fit.params.rename(str).to_dict() | {"median_elasticity": robust.params["np.log(price)"]})
        table = pd.DataFrame(coefs)
        print(table["log_price"].describe())
        """,
    ],
    target=1,
    n=300,
    small=3,
    fix={1: """
        coefs = []
        for region, part in data.groupby("region"):
            family = sm.families.Gamma(sm.families.links.Log())
            fit = smf.glm("demand ~ np.log(price) * C(promo) + I(price ** 2)", data=part, family=family).fit(maxiter=200)
            robust = smf.quantreg("np.log(demand) ~ np.log(price) + C(promo)", data=part).fit(q=0.5)
            coefs.append(fit.params.rename(str).to_dict() | {"median_elasticity": robust.params["np.log(price)"]})
        table = pd.DataFrame(coefs)
        print(table["np.log(price)"].describe())
        """},
)

case(
    name="numpy_bootstrap_percentile_of_dicts",
    library="numpy",
    category="type",
    needs_runtime=True,
    exception="TypeError",
    message_contains="dict",
    diagnosis="each bootstrap resample appends a dict of statistics: np.percentile of a list "
    "of dicts cannot compare them; take the percentiles of one statistic",
    cells=[
        """
        import numpy as np
        from sklearn.datasets import make_regression
        from sklearn.linear_model import Ridge

        X, y = make_regression(n_samples=4000, n_features=40, noise=10.0, random_state=0)
        rng = np.random.default_rng(0)
        N_BOOT = @N@
        """,
        """
        boot = []
        for b in range(N_BOOT):
            idx = rng.integers(0, len(y), len(y))
            model = Ridge(alpha=1.0).fit(X[idx], y[idx])
            residual = y[idx] - model.predict(X[idx])
            boot.append({"r2": model.score(X, y), "mad": float(np.median(np.abs(residual))),
                         "norm": float(np.linalg.norm(model.coef_))})
        low, high = np.percentile(boot, [2.5, 97.5])
        print(f"95% interval {low:.3f} to {high:.3f}")
        """,
    ],
    target=1,
    n=400,
    small=20,
    fix={1: """
        boot = []
        for b in range(N_BOOT):
            idx = rng.integers(0, len(y), len(y))
            model = Ridge(alpha=1.0).fit(X[idx], y[idx])
            residual = y[idx] - model.predict(X[idx])
            boot.append({"r2": model.score(X, y), "mad": float(np.median(np.abs(residual))),
                         "norm": float(np.linalg.norm(model.coef_))})
        low, high = np.percentile([b["r2"] for b in boot], [2.5, 97.5])
        print(f"95% interval {low:.3f} to {high:.3f}")
        """},
)


def main() -> None:
    seconds = json.loads(SECONDS_FILE.read_text()) if SECONDS_FILE.exists() else {}
    small = "--small" in sys.argv
    OUT.mkdir(exist_ok=True)
    for c in CASES:
        write_case(c, OUT / c.name, small)
    manifest = [entry(c, seconds) for c in CASES]
    (OUT / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"{len(CASES)} cases under {OUT}")


if __name__ == "__main__":
    main()
