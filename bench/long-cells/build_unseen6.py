"""Generate bench/long-cells/unseen6/: twelve more long-cell crash/fix pairs (torch 3, Keras 2,
scikit-learn 3, pandas 2, statsmodels 1, NumPy 1), in the format and with the writing conventions
of build.py. The set was written and verified before crane ran on it, by someone who had not read
crane's dry-run code. Not split: the whole folder is measured, by its totals only.

    .venv/bin/python bench/long-cells/build_unseen6.py               # write unseen6/
    .venv/bin/python bench/long-cells/build_unseen6.py --small DIR   # tiny sizes under DIR, to check crashes fast

The cases use build.py's `Case`, `code`, `entry` and `write_case`. Measured run times of the
targets are kept in `unseen6/target_seconds.json` (verify.py --record) and written into the
manifest when that file exists. Output is deterministic: same definitions, same bytes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from build import Case, code, entry, write_case  # noqa: E402

OUT = HERE / "unseen6"
SECONDS_FILE = OUT / "target_seconds.json"

CASES: list[Case] = []


def case(**kwargs) -> None:
    kwargs["cells"] = [code(c) for c in kwargs["cells"]]
    kwargs["fix"] = {i: code(c) for i, c in kwargs.get("fix", {}).items()}
    CASES.append(Case(**kwargs))


def edit(source: str, old: str, new: str) -> str:
    """`source` with its one occurrence of `old` replaced by `new` (a fix is a small edit)."""
    if source.count(old) != 1:
        raise SystemExit(f"edit: {old!r} occurs {source.count(old)} times")
    return source.replace(old, new)


# ---------------------------------------------------------------------------------------------
# torch


GRU_MODEL = """
BATCH = 64
HIDDEN = 64


class ActivityGRU(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(CHANNELS, HIDDEN, batch_first=True)
        self.head = nn.Linear(HIDDEN, N_CLASSES)

    def forward(self, x):
        h0 = torch.zeros(1, BATCH, HIDDEN)
        out, h = self.gru(x, h0)
        return self.head(h[-1])


train_loader = DataLoader(TensorDataset(torch.from_numpy(X_train), torch.from_numpy(y_train)),
                          batch_size=BATCH, shuffle=True, drop_last=True)
test_loader = DataLoader(TensorDataset(torch.from_numpy(X_test), torch.from_numpy(y_test)),
                         batch_size=BATCH)

model = ActivityGRU()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
loss_fn = nn.CrossEntropyLoss()
"""

case(
    name="torch_gru_activity_windows",
    library="torch",
    category="shape",
    needs_runtime=False,
    exception="RuntimeError",
    message_contains="Expected hidden size",
    diagnosis="The GRU's initial hidden state is built with the constant BATCH rows; training drops "
              "the last incomplete batch, but the test loader's last batch has 1000 % 64 = 40 "
              "windows, so the final evaluation fails on its last batch.",
    cells=[
        """
        import numpy as np
        import torch
        from torch import nn
        from torch.utils.data import DataLoader, TensorDataset

        torch.manual_seed(0)
        torch.set_num_threads(1)
        rng = np.random.default_rng(7)
        """,
        """
        # Synthetic accelerometer windows: 3 channels x 50 time steps, 4 activities
        N_TRAIN, N_TEST, STEPS, CHANNELS, N_CLASSES = 4096, 1000, 50, 3, 4


        def make_windows(n):
            labels = rng.integers(0, N_CLASSES, size=n)
            t = np.linspace(0, 1, STEPS)
            freq = 1.5 + 0.7 * labels[:, None]          # each activity has its own rhythm
            base = np.sin(2 * np.pi * freq * t + rng.uniform(0, np.pi, size=(n, 1)))
            x = base[:, :, None] * rng.uniform(0.5, 1.5, size=(n, 1, CHANNELS))
            x += rng.normal(scale=0.8, size=(n, STEPS, CHANNELS))
            return x.astype(np.float32), labels


        X_train, y_train = make_windows(N_TRAIN)
        X_test, y_test = make_windows(N_TEST)
        print(X_train.shape, X_test.shape, np.bincount(y_train))
        """,
        GRU_MODEL,
        """
        EPOCHS = @N@
        for epoch in range(EPOCHS):
            model.train()
            running = 0.0
            for xb, yb in train_loader:
                optimizer.zero_grad()
                loss = loss_fn(model(xb), yb)
                loss.backward()
                optimizer.step()
                running += loss.item()
            print(f"epoch {epoch + 1}/{EPOCHS}: train loss {running / len(train_loader):.4f}")

        model.eval()
        correct = 0
        with torch.no_grad():
            for xb, yb in test_loader:
                correct += (model(xb).argmax(dim=1) == yb).sum().item()
        print(f"test accuracy: {correct / N_TEST:.3f}")
        """,
    ],
    target=3,
    n=42,
    small=1,
    fix={2: edit(GRU_MODEL, "torch.zeros(1, BATCH, HIDDEN)", "torch.zeros(1, x.size(0), HIDDEN)")},
)


DEMAND_DATA = """
# Weekly sales of a growing catalogue; product ids are assigned in launch order
N_PRODUCTS, N_WEEKS, ROWS = 400, 52, 600_000
launch_week = np.sort(rng.integers(0, N_WEEKS, size=N_PRODUCTS))
launch_week[:150] = 0

product = rng.integers(0, N_PRODUCTS, size=ROWS)
week = rng.integers(launch_week[product], N_WEEKS)
price = rng.uniform(2, 20, size=ROWS).round(2)
promo = (rng.random(ROWS) < 0.2).astype(int)
popularity = rng.normal(scale=0.7, size=N_PRODUCTS)
units = rng.poisson(np.exp(1.2 + popularity[product] - 0.06 * price + 0.5 * promo))

sales = pd.DataFrame({"product_id": product, "week": week, "price": price,
                      "promo": promo, "units": units})
train = sales[sales.week < 44]
test = sales[sales.week >= 44]
print(len(train), len(test), train.product_id.nunique(), test.product_id.nunique())

n_products = int(train.product_id.max()) + 1   # rows of the embedding table
train_t = to_tensors(train)
test_t = to_tensors(test)
model = DemandNet(n_products)
opt = torch.optim.Adam(model.parameters(), lr=5e-3)
"""

case(
    name="torch_demand_product_embedding",
    library="torch",
    category="value",
    needs_runtime=True,
    exception="IndexError",
    message_contains="index out of range in self",
    diagnosis="The product embedding is sized from the highest product id of the training weeks; "
              "products launched in the test weeks have higher ids, so the prediction on the test "
              "set after training looks up rows the table does not have.",
    cells=[
        """
        import numpy as np
        import pandas as pd
        import torch
        from torch import nn

        torch.manual_seed(0)
        torch.set_num_threads(1)
        rng = np.random.default_rng(11)
        """,
        """
        def to_tensors(frame):
            ids = torch.tensor(frame.product_id.to_numpy())
            feats = torch.tensor(frame[["price", "promo"]].to_numpy(), dtype=torch.float32)
            target = torch.tensor(frame.units.to_numpy(), dtype=torch.float32)
            return ids, feats, target


        class DemandNet(nn.Module):
            def __init__(self, n_products, dim=16):
                super().__init__()
                self.emb = nn.Embedding(n_products, dim)
                self.mlp = nn.Sequential(nn.Linear(dim + 2, 64), nn.ReLU(), nn.Linear(64, 1))

            def forward(self, ids, feats):
                # log of the expected weekly units
                return self.mlp(torch.cat([self.emb(ids), feats], dim=1)).squeeze(1)


        def train_epoch(model, opt, ids, feats, target, batch=256):
            model.train()
            order = torch.randperm(len(target))
            total = 0.0
            for start in range(0, len(target), batch):
                idx = order[start:start + batch]
                opt.zero_grad()
                loss = nn.functional.poisson_nll_loss(model(ids[idx], feats[idx]), target[idx])
                loss.backward()
                opt.step()
                total += loss.item() * len(idx)
            return total / len(target)


        def predict(model, ids, feats):
            model.eval()
            with torch.no_grad():
                return model(ids, feats).exp()
        """,
        DEMAND_DATA,
        """
        EPOCHS = @N@
        history = []
        for epoch in range(EPOCHS):
            loss = train_epoch(model, opt, *train_t)
            history.append(loss)
            print(f"epoch {epoch + 1}: poisson nll {loss:.4f}")

        pred = predict(model, test_t[0], test_t[1])
        mae = (pred - test_t[2]).abs().mean().item()
        print(f"test MAE: {mae:.3f} units per row")
        """,
    ],
    target=3,
    n=36,
    small=1,
    fix={2: edit(DEMAND_DATA, "n_products = int(train.product_id.max()) + 1",
                 "n_products = int(sales.product_id.max()) + 1")},
)


AE_TARGET = """
EPOCHS = @N@
losses = []
for epoch in range(EPOCHS):
    perm = torch.randperm(len(train_t))
    epoch_loss = 0.0
    for i in range(0, len(train_t), 128):
        xb = train_t[perm[i:i + 128]]
        opt.zero_grad()
        loss = reconstruction_error(autoencoder, xb).mean()
        loss.backward()
        opt.step()
        epoch_loss += loss.item() * len(xb)
    losses.append(epoch_loss / len(train_t))
    print(f"epoch {epoch + 1}: reconstruction mse {losses[-1]:.4f}")

train_err = reconstruction_error(autoencoder, train_t)
test_err = reconstruction_error(autoencoder, test_t)
rows = []
for q in (95, 97.5, 99, 99.5):
    threshold = np.percentile(train_err, q)
    flagged = (test_err > threshold).numpy()
    rows.append({"percentile": q, "threshold": threshold, "flagged": int(flagged.sum()),
                 "precision": precision_score(y_test, flagged, zero_division=0),
                 "recall": recall_score(y_test, flagged)})
print(pd.DataFrame(rows).round(3).to_string(index=False))

fig, ax = plt.subplots(figsize=(6, 3))
ax.plot(range(1, EPOCHS + 1), losses, marker=".")
ax.set_xlabel("epoch")
ax.set_ylabel("train reconstruction mse")
ax.set_title(f"autoencoder, {EPOCHS} epochs")
plt.close(fig)
"""

case(
    name="torch_autoencoder_anomaly_threshold",
    library="torch",
    category="api",
    needs_runtime=False,
    exception="RuntimeError",
    message_contains="Can't call numpy() on Tensor that requires grad",
    diagnosis="After training, the reconstruction errors are computed outside torch.no_grad(), so "
              "they require grad and np.percentile cannot turn them into an array.",
    cells=[
        """
        import numpy as np
        import pandas as pd
        import torch
        from torch import nn
        import matplotlib.pyplot as plt
        from sklearn.datasets import make_classification
        from sklearn.preprocessing import StandardScaler
        from sklearn.metrics import precision_score, recall_score

        torch.manual_seed(0)
        torch.set_num_threads(1)
        """,
        """
        # Card transactions: 2% fraud; the autoencoder sees only normal training transactions
        X, y = make_classification(n_samples=120_000, n_features=30, n_informative=12,
                                   weights=[0.98], flip_y=0, class_sep=2.0, random_state=3)
        normal_train = X[:100_000][y[:100_000] == 0]
        X_test, y_test = X[100_000:], y[100_000:]

        scaler = StandardScaler().fit(normal_train)
        train_t = torch.tensor(scaler.transform(normal_train), dtype=torch.float32)
        test_t = torch.tensor(scaler.transform(X_test), dtype=torch.float32)
        print(train_t.shape, test_t.shape, y_test.mean())
        """,
        """
        autoencoder = nn.Sequential(
            nn.Linear(30, 16), nn.ReLU(),
            nn.Linear(16, 6), nn.ReLU(),
            nn.Linear(6, 16), nn.ReLU(),
            nn.Linear(16, 30),
        )
        opt = torch.optim.Adam(autoencoder.parameters(), lr=1e-3)


        def reconstruction_error(model, x):
            return ((model(x) - x) ** 2).mean(dim=1)
        """,
        AE_TARGET,
    ],
    target=3,
    n=65,
    small=1,
    fix={3: edit(AE_TARGET,
                 "train_err = reconstruction_error(autoencoder, train_t)\n"
                 "test_err = reconstruction_error(autoencoder, test_t)\n",
                 "with torch.no_grad():\n"
                 "    train_err = reconstruction_error(autoencoder, train_t)\n"
                 "    test_err = reconstruction_error(autoencoder, test_t)\n")},
)


# ---------------------------------------------------------------------------------------------
# Keras

KERAS_IMPORTS = """
import os
os.environ["TF_NUM_INTRAOP_THREADS"] = "1"
os.environ["TF_NUM_INTEROP_THREADS"] = "1"

import numpy as np
import pandas as pd
import keras
from keras import layers
"""

LOANS_PREP = """
NUMERIC = ["log_income", "amount", "dti", "age"]
train_df = loans[loans.month < 20]
test_df = loans[loans.month >= 20]
means, stds = train_df[NUMERIC].mean(), train_df[NUMERIC].std()


def prepare(frame):
    numeric = ((frame[NUMERIC] - means) / stds).to_numpy("float32")
    dummies = pd.get_dummies(frame[["purpose", "region"]], dtype="float32")
    return np.hstack([numeric, dummies.to_numpy()]), frame.default.to_numpy("float32")


X_train, y_train = prepare(train_df)
X_test, y_test = prepare(test_df)
print(X_train.shape, X_test.shape, y_train.mean())
"""

case(
    name="keras_loan_default_dummies",
    library="keras",
    category="shape",
    needs_runtime=True,
    exception="InvalidArgumentError",
    message_contains="Matrix size-incompatible",
    diagnosis="The one-hot columns are made with pd.get_dummies separately for each split; a loan "
              "purpose retired before the test months has no column in the test matrix, so the "
              "test set is one column narrower than the model's input and the evaluation after "
              "fitting fails.",
    cells=[
        KERAS_IMPORTS,
        """
        rng = np.random.default_rng(5)
        N = 60_000
        month = np.sort(rng.integers(0, 24, size=N))
        purpose = rng.choice(["car", "home", "education", "medical", "business", "debt"], size=N,
                             p=[0.2, 0.25, 0.1, 0.1, 0.1, 0.25])
        # the student refinancing product was retired after month 15
        purpose = np.where((month < 16) & (rng.random(N) < 0.05), "student_refi", purpose)
        region = rng.choice(["north", "south", "east", "west"], size=N)
        income = rng.lognormal(10.6, 0.5, size=N)
        amount = rng.gamma(2.0, 6000, size=N)
        dti = rng.beta(2, 5, size=N)
        age = rng.integers(21, 70, size=N)

        logit = (-2.2 + 2.5 * dti + amount / 40_000 - 0.6 * (np.log(income) - 10.6)
                 + 0.4 * (purpose == "business") - 0.3 * (purpose == "home") - 0.01 * (age - 40))
        default = rng.random(N) < 1 / (1 + np.exp(-logit))
        loans = pd.DataFrame({"month": month, "purpose": purpose, "region": region,
                              "log_income": np.log(income), "amount": amount, "dti": dti,
                              "age": age, "default": default})
        loans.groupby("purpose").default.agg(["size", "mean"])
        """,
        LOANS_PREP,
        """
        keras.utils.set_random_seed(0)
        model = keras.Sequential([
            keras.Input(shape=(X_train.shape[1],)),
            layers.Dense(64, activation="relu"),
            layers.Dropout(0.2),
            layers.Dense(32, activation="relu"),
            layers.Dense(1, activation="sigmoid"),
        ])
        model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="binary_crossentropy",
                      metrics=[keras.metrics.AUC(name="auc")])
        history = model.fit(X_train, y_train, validation_split=0.2, epochs=@N@, batch_size=128,
                            verbose=0)
        print("best validation AUC:", round(max(history.history["val_auc"]), 4))

        test_loss, test_auc = model.evaluate(X_test, y_test, verbose=0)
        print(f"test loss {test_loss:.4f}, test AUC {test_auc:.4f}")
        """,
    ],
    target=3,
    n=55,
    small=1,
    fix={2: edit(LOANS_PREP,
                 '    dummies = pd.get_dummies(frame[["purpose", "region"]], dtype="float32")\n',
                 '    dummies = pd.get_dummies(frame[["purpose", "region"]], dtype="float32")\n'
                 '    dummies = dummies.reindex(columns=DUMMY_COLUMNS, fill_value=0.0)\n')
         .replace("means, stds = ",
                  'DUMMY_COLUMNS = pd.get_dummies(train_df[["purpose", "region"]]).columns\n'
                  "means, stds = ")},
)


BIKES_TARGET = """
keras.utils.set_random_seed(1)
model = keras.Sequential([
    keras.Input(shape=(X_train.shape[1],)),
    layers.Dense(64, activation="relu"),
    layers.Dense(64, activation="relu"),
    layers.Dense(1),
])
model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="mse", metrics=["mae"])
history = model.fit(X_train, y_train, validation_split=0.15, epochs=@N@, batch_size=256,
                    verbose=0)
print("final validation MAE:", round(history.history["val_mae"][-1], 3))

y_pred = model.predict(X_test, verbose=0).ravel()
print(f"test MAE {mean_absolute_error(y_test, y_pred):.3f}, "
      f"poisson deviance {mean_poisson_deviance(y_test, y_pred):.3f}")
by_hour = pd.DataFrame({"hour": hour_test, "actual": y_test, "predicted": y_pred})
print(by_hour.groupby("hour").mean().round(2).to_string())
"""

case(
    name="keras_bike_rentals_count_model",
    library="keras",
    category="value",
    needs_runtime=True,
    exception="ValueError",
    message_contains="strictly positive y_pred",
    diagnosis="The count model has a linear output trained with MSE, so for night hours with "
              "almost no rentals it predicts values at or below zero; the Poisson deviance "
              "computed after fitting requires strictly positive predictions.",
    cells=[
        KERAS_IMPORTS + "from sklearn.metrics import mean_absolute_error, mean_poisson_deviance\n",
        """
        # Hourly bike rentals at one station: counts, many zeros at night
        rng = np.random.default_rng(21)
        N = 100_000
        hour = rng.integers(0, 24, size=N)
        temp = rng.normal(15, 8, size=N)
        humidity = rng.uniform(20, 100, size=N)
        weekend = (rng.random(N) < 2 / 7).astype(float)
        rain = (rng.random(N) < 0.15).astype(float)

        daylight = np.clip(np.sin(np.pi * (hour - 5) / 17), 0, None)
        rate = np.exp(-1.5 + 3.0 * daylight + 0.04 * (temp - 15) - 0.01 * (humidity - 60)
                      - 0.9 * rain + 0.3 * weekend * daylight)
        rentals = rng.poisson(rate).astype("float32")

        features = np.column_stack([np.sin(2 * np.pi * hour / 24), np.cos(2 * np.pi * hour / 24),
                                    (temp - 15) / 8, (humidity - 60) / 23, weekend, rain])
        features = features.astype("float32")
        split = 80_000
        X_train, X_test = features[:split], features[split:]
        y_train, y_test = rentals[:split], rentals[split:]
        hour_test = hour[split:]
        print(X_train.shape, X_test.shape, (y_train == 0).mean().round(3), y_train.max())
        """,
        BIKES_TARGET,
    ],
    target=2,
    n=85,
    small=1,
    fix={2: edit(BIKES_TARGET, "y_pred = model.predict(X_test, verbose=0).ravel()",
                 "y_pred = np.clip(model.predict(X_test, verbose=0).ravel(), 0.01, None)")},
)


# ---------------------------------------------------------------------------------------------
# scikit-learn

CHURN_TARGET = """
search = GridSearchCV(pipe, {"model__C": np.logspace(-3, 2, @N@)}, cv=5, scoring="roc_auc",
                      n_jobs=1)
search.fit(X_train, y_train)
print("best C:", search.best_params_["model__C"], "cv AUC:", round(search.best_score_, 4))

best = search.best_estimator_
print("test AUC:", round(roc_auc_score(y_test, best.predict_proba(X_test)[:, 1]), 4))
coefs = pd.Series(best.named_steps["model"].coef_[0], index=numeric + categorical)
print(coefs.sort_values().round(3).to_string())
"""

case(
    name="sklearn_churn_logistic_coefficients",
    library="sklearn",
    category="shape",
    needs_runtime=True,
    exception="ValueError",
    message_contains="does not match length of index",
    diagnosis="After the grid search, the coefficients are labelled with the raw column names; "
              "the one-hot encoder turned the categorical columns into many more features, so "
              "the Series gets more values than index labels.",
    cells=[
        """
        import numpy as np
        import pandas as pd
        from threadpoolctl import threadpool_limits
        from sklearn.compose import ColumnTransformer
        from sklearn.linear_model import LogisticRegression
        from sklearn.metrics import roc_auc_score
        from sklearn.model_selection import GridSearchCV, train_test_split
        from sklearn.pipeline import Pipeline
        from sklearn.preprocessing import OneHotEncoder, StandardScaler

        threadpool_limits(1)
        """,
        """
        rng = np.random.default_rng(9)
        N = 40_000
        customers = pd.DataFrame({
            "tenure": rng.integers(1, 72, size=N),
            "monthly_charges": rng.normal(70, 25, size=N).clip(15),
            "support_calls": rng.poisson(1.2, size=N),
            "contract": rng.choice(["month", "one_year", "two_year"], size=N, p=[0.55, 0.25, 0.2]),
            "payment": rng.choice(["card", "bank", "check", "wallet"], size=N),
            "internet": rng.choice(["dsl", "fiber", "none"], size=N, p=[0.35, 0.45, 0.2]),
        })
        logit = (-1.0 - 0.04 * customers.tenure + 0.015 * customers.monthly_charges
                 + 0.35 * customers.support_calls + 1.2 * (customers.contract == "month")
                 + 0.5 * (customers.payment == "check") + 0.4 * (customers.internet == "fiber"))
        churn = (rng.random(N) < 1 / (1 + np.exp(-logit))).astype(int)
        X_train, X_test, y_train, y_test = train_test_split(customers, churn, test_size=0.25,
                                                            random_state=0, stratify=churn)
        print(X_train.shape, churn.mean().round(3))
        """,
        """
        numeric = ["tenure", "monthly_charges", "support_calls"]
        categorical = ["contract", "payment", "internet"]
        prep = ColumnTransformer([
            ("num", StandardScaler(), numeric),
            ("cat", OneHotEncoder(handle_unknown="ignore"), categorical),
        ])
        pipe = Pipeline([("prep", prep),
                         ("model", LogisticRegression(solver="saga", tol=1e-6, max_iter=400))])
        """,
        CHURN_TARGET,
    ],
    target=3,
    n=9,
    small=2,
    fix={3: edit(CHURN_TARGET, "index=numeric + categorical",
                 'index=best.named_steps["prep"].get_feature_names_out()')},
)


DELIVERY_TARGET = """
fold_rows = []
for fold, (tr, te) in enumerate(TimeSeriesSplit(n_splits=5).split(orders)):
    train, test = orders.iloc[tr], orders.iloc[te]
    encoder = OrdinalEncoder()
    X_tr = np.column_stack([encoder.fit_transform(train[["region"]]), train[NUMERIC]])
    model = HistGradientBoostingRegressor(max_iter=@N@, learning_rate=0.02, max_leaf_nodes=63,
                                          categorical_features=[0], early_stopping=False,
                                          random_state=fold)
    model.fit(X_tr, train.minutes)
    X_te = np.column_stack([encoder.transform(test[["region"]]), test[NUMERIC]])
    mae = mean_absolute_error(test.minutes, model.predict(X_te))
    fold_rows.append({"fold": fold, "train_rows": len(tr), "test_from": test.placed.min().date(),
                      "mae": mae})
    print(f"fold {fold}: {len(tr)} training orders, MAE {mae:.2f} min")

folds = pd.DataFrame(fold_rows)
print(folds.to_string(index=False))
print(f"MAE {folds.mae.mean():.2f} +/- {folds.mae.std():.2f} over {len(folds)} folds")
"""

case(
    name="sklearn_delivery_time_backtest",
    library="sklearn",
    category="value",
    needs_runtime=True,
    exception="ValueError",
    message_contains="Found unknown categories",
    diagnosis="The region encoder is fitted on each fold's earlier orders only; a region launched "
              "in the last weeks of the data first appears in the last fold's test window, where "
              "OrdinalEncoder.transform meets a category it never saw.",
    cells=[
        """
        import numpy as np
        import pandas as pd
        from threadpoolctl import threadpool_limits
        from sklearn.ensemble import HistGradientBoostingRegressor
        from sklearn.metrics import mean_absolute_error
        from sklearn.model_selection import TimeSeriesSplit
        from sklearn.preprocessing import OrdinalEncoder

        threadpool_limits(1)
        """,
        """
        # Food delivery orders over 18 months, in time order; the "harbour" region opened late
        rng = np.random.default_rng(17)
        N = 180_000
        placed = pd.Timestamp("2024-01-01") + pd.to_timedelta(np.sort(rng.uniform(0, 540, N)), unit="D")
        regions = np.array(["centre", "north", "south", "east", "west", "airport"])
        region = rng.choice(regions, size=N)
        region = np.where((placed >= pd.Timestamp("2025-05-01")) & (rng.random(N) < 0.12),
                          "harbour", region)
        distance = rng.gamma(2.0, 1.6, size=N)
        items = rng.integers(1, 9, size=N)
        hour = placed.hour + placed.minute / 60
        rush = ((hour > 11.5) & (hour < 13.5)) | ((hour > 18) & (hour < 20.5))
        base = {"centre": 18, "north": 24, "south": 22, "east": 25, "west": 23, "airport": 31,
                "harbour": 27}
        minutes = (pd.Series(region).map(base).to_numpy() + 4.5 * distance + 0.8 * items
                   + 7 * rush + rng.gamma(2.0, 2.5, size=N))
        orders = pd.DataFrame({"placed": placed, "region": region, "distance_km": distance,
                               "items": items, "hour": hour, "rush": rush.astype(int),
                               "minutes": minutes})
        NUMERIC = ["distance_km", "items", "hour", "rush"]
        orders.groupby("region").minutes.agg(["size", "mean"]).round(1)
        """,
        DELIVERY_TARGET,
    ],
    target=2,
    n=1400,
    small=5,
    fix={2: edit(DELIVERY_TARGET, "encoder = OrdinalEncoder()",
                 'encoder = OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=np.nan)')},
)


SVC_TARGET = """
search = RandomizedSearchCV(
    pipe,
    {"svc__C": loguniform(1e-1, 1e2), "svc__gamma": loguniform(1e-4, 1e-1)},
    n_iter=@N@, cv=4, scoring="accuracy", random_state=0, n_jobs=1,
)
search.fit(X_train, y_train)
print("best:", search.best_params_, "cv accuracy:", round(search.best_score_, 4))

auc = roc_auc_score(y_test, search.predict_proba(X_test)[:, 1])
print(f"test accuracy {search.score(X_test, y_test):.4f}, test AUC {auc:.4f}")
top = (pd.DataFrame(search.cv_results_)
       .sort_values("rank_test_score")
       [["param_svc__C", "param_svc__gamma", "mean_test_score", "mean_fit_time"]]
       .head(5))
print(top.to_string(index=False))
"""

case(
    name="sklearn_svc_random_search_auc",
    library="sklearn",
    category="api",
    needs_runtime=False,
    exception="AttributeError",
    message_contains="has no attribute 'predict_proba'",
    diagnosis="The RBF SVC in the searched pipeline is built without probability=True, so after "
              "the randomized search the refitted best pipeline has no predict_proba for the "
              "test AUC.",
    cells=[
        """
        import numpy as np
        import pandas as pd
        from scipy.stats import loguniform
        from threadpoolctl import threadpool_limits
        from sklearn.datasets import make_classification
        from sklearn.metrics import roc_auc_score
        from sklearn.model_selection import RandomizedSearchCV, train_test_split
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler
        from sklearn.svm import SVC

        threadpool_limits(1)
        """,
        """
        X, y = make_classification(n_samples=6000, n_features=25, n_informative=10,
                                   n_redundant=5, flip_y=0.05, class_sep=0.9, random_state=4)
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=4)
        pipe = make_pipeline(StandardScaler(), SVC(kernel="rbf"))
        print(X_train.shape, np.bincount(y_train))
        """,
        SVC_TARGET,
    ],
    target=2,
    n=40,
    small=1,
    fix={2: edit(SVC_TARGET, "search.predict_proba(X_test)[:, 1]", "search.decision_function(X_test)")},
)


# ---------------------------------------------------------------------------------------------
# pandas

MONTHLY_TARGET = """
months = pd.period_range(orders.order_date.min(), orders.order_date.max(), freq="M")
seen = set()
report = []
for month in months:
    m = orders[orders.order_date.dt.to_period("M") == month]
    history = orders[orders.order_date <= month.end_time]
    rfm = history.groupby("customer_id").agg(last=("order_date", "max"),
                                             frequency=("order_id", "nunique"),
                                             monetary=("revenue", "sum"))
    active = (month.end_time - rfm["last"]).dt.days <= 90
    basket = m.groupby("order_id").agg(customer=("customer_id", "first"), revenue=("revenue", "sum"),
                                       lines=("product", "size"))
    returning = basket.customer.isin(seen)
    delivered = m[m.status == "delivered"]
    by_product = delivered.groupby("product").revenue.sum()
    report.append({
        "month": str(month),
        "orders": len(basket),
        "revenue": basket.revenue.sum(),
        "avg_basket": basket.revenue.mean(),
        "returning_share": returning.mean(),
        "active_customers": int(active.sum()),
        "active_avg_frequency": rfm.frequency[active].mean(),
        "top_delivered_product": by_product.idxmax(),
        "top_product_share": by_product.max() / by_product.sum(),
    })
    seen.update(basket.customer)
    print(month, len(basket), round(returning.mean(), 3))

report = pd.DataFrame(report)
print(report.round(3).to_string(index=False))
"""

case(
    name="pandas_monthly_shop_report",
    library="pandas",
    category="value",
    needs_runtime=True,
    exception="ValueError",
    message_contains="attempt to get argmax of an empty sequence",
    diagnosis="The data ends ten days into its last month and deliveries take at least 12 days, "
              "so no order of that month is delivered yet: the per-product revenue of delivered "
              "orders is empty and idxmax fails in the loop's last month.",
    cells=[
        """
        import numpy as np
        import pandas as pd
        """,
        """
        # Order lines of an online shop, extracted on 2025-03-10
        rng = np.random.default_rng(3)
        LINES = @N@
        EXTRACT = pd.Timestamp("2025-03-10")
        start = pd.Timestamp("2021-01-01")
        span = (EXTRACT - start).days
        n_orders = LINES // 3
        order_day = start + pd.to_timedelta(np.sort(rng.integers(0, span + 1, n_orders)), unit="D")
        order_customer = rng.zipf(1.3, n_orders) % 200_000
        delivery_days = rng.integers(12, 30, n_orders)
        delivered = order_day + pd.to_timedelta(delivery_days, unit="D") <= EXTRACT
        cancelled = rng.random(n_orders) < 0.03
        status = np.where(cancelled, "cancelled", np.where(delivered, "delivered", "shipped"))

        order_of_line = np.sort(rng.integers(0, n_orders, LINES))
        orders = pd.DataFrame({
            "order_id": order_of_line,
            "order_date": order_day[order_of_line],
            "customer_id": order_customer[order_of_line],
            "status": status[order_of_line],
            "product": rng.choice([f"sku_{i:04d}" for i in range(3000)], size=LINES),
            "revenue": rng.gamma(2.0, 15.0, size=LINES).round(2),
        })
        print(orders.shape, orders.order_date.min().date(), orders.order_date.max().date())
        orders.status.value_counts()
        """,
        MONTHLY_TARGET,
    ],
    target=2,
    n=7_000_000,
    small=60_000,
    fix={2: edit(MONTHLY_TARGET,
                 '        "top_delivered_product": by_product.idxmax(),\n',
                 '        "top_delivered_product": by_product.idxmax() if len(by_product) else None,\n')},
)


CHUNK_TARGET = """
CHUNK = 250_000
FX = {"EUR": 1.0, "CHF": 1.04, "GBP": 1.17, "SEK": 0.087}
parts = []
for start in range(0, len(raw), CHUNK):
    chunk = raw.iloc[start:start + CHUNK]
    ts = pd.to_datetime(chunk.ts, format="%Y-%m-%dT%H:%M:%S")
    amount = pd.to_numeric(chunk.amount_str.str.replace(",", ".", regex=False))
    eur = chunk.assign(amount=amount).apply(lambda r: r.amount * FX[r.currency], axis=1)
    valid = amount.gt(0) & chunk.store.str.startswith("S")
    part = (pd.DataFrame({"store": chunk.store, "week": ts.dt.to_period("W"), "amount": eur})[valid]
            .groupby(["store", "week"], as_index=False).amount.sum())
    parts.append(part)
    print(f"rows {start:>9,}-{start + len(chunk):>9,}: {len(part)} store-weeks")

weekly = pd.concat(parts, ignore_index=True)
table = weekly.pivot(index="week", columns="store", values="amount")
print(table.shape)
print(table.iloc[-1].sort_values(ascending=False).head(5).round(0).to_string())
growth = table.iloc[-4:].mean() / table.iloc[:4].mean() - 1
print("median growth since the first month:", round(growth.median(), 3))
fig, ax = plt.subplots(figsize=(8, 3))
table.sum(axis=1).plot(ax=ax)
ax.set_ylabel("weekly revenue, all stores (EUR)")
plt.close(fig)
"""

case(
    name="pandas_chunked_store_weeks",
    library="pandas",
    category="key",
    needs_runtime=True,
    exception="ValueError",
    message_contains="Index contains duplicate entries",
    diagnosis="Each chunk of the time-ordered log is aggregated per store and week on its own; the "
              "weeks cut by a chunk boundary appear in two chunks' results, so the pivot after the "
              "loop finds duplicate (week, store) pairs.",
    cells=[
        """
        import numpy as np
        import pandas as pd
        import matplotlib.pyplot as plt
        """,
        """
        # A point-of-sale export as strings: ISO timestamps, store codes, amounts with a decimal comma
        rng = np.random.default_rng(8)
        ROWS = @N@
        seconds = np.sort(rng.integers(0, 365 * 86_400, size=ROWS))
        ts = np.datetime64("2024-01-01T00:00:00") + seconds.astype("timedelta64[s]")
        store_codes = np.array([f"S{i:03d}" for i in range(60)] + ["TEST"])
        amounts = rng.gamma(2.0, 12.0, size=ROWS).round(2)
        amounts[rng.random(ROWS) < 0.01] *= -1            # refunds
        raw = pd.DataFrame({
            "ts": np.datetime_as_string(ts, unit="s"),
            "store": store_codes[rng.integers(0, len(store_codes), size=ROWS)],
            "amount_str": pd.Series(amounts).map("{:.2f}".format).str.replace(".", ",", regex=False),
            "currency": rng.choice(["EUR", "CHF", "GBP", "SEK"], size=ROWS, p=[0.7, 0.1, 0.1, 0.1]),
        })
        print(raw.shape)
        raw.head()
        """,
        CHUNK_TARGET,
    ],
    target=2,
    n=3_400_000,
    small=600_000,
    fix={2: edit(CHUNK_TARGET, "weekly = pd.concat(parts, ignore_index=True)",
                 'weekly = pd.concat(parts).groupby(["store", "week"], as_index=False).amount.sum()')},
)


# ---------------------------------------------------------------------------------------------
# statsmodels

ETS_TARGET = """
H = 7
cutoffs = pd.date_range(end=sales.index[-1] - pd.Timedelta(days=H), periods=@N@, freq="7D")
rows = []
for cutoff in cutoffs:
    for store in sales.columns:
        history = sales.loc[:cutoff, store].to_numpy()
        actual = sales.loc[cutoff + pd.Timedelta(days=1):cutoff + pd.Timedelta(days=H), store]
        fit = ExponentialSmoothing(history, trend="add", seasonal="mul", seasonal_periods=7,
                                   initialization_method="estimated").fit()
        forecast = fit.forecast(H)
        wape = np.abs(forecast - actual.to_numpy()).sum() / actual.sum()
        rows.append({"cutoff": cutoff.date(), "store": store, "wape": wape})
    print(cutoff.date(), f"mean WAPE {np.mean([r['wape'] for r in rows[-len(sales.columns):]]):.3f}")

results = pd.DataFrame(rows)
print(results.pivot(index="cutoff", columns="store", values="wape").round(3).to_string())
print(results.groupby("store").wape.mean().sort_values().round(4).to_string())
"""

case(
    name="statsmodels_store_ets_backtest",
    library="statsmodels",
    category="value",
    needs_runtime=True,
    exception="ValueError",
    message_contains="endog must be strictly positive",
    diagnosis="The stores were closed on Christmas Day, the only zero-sales day in the data, which "
              "first enters the training history at the backtest's last cutoff; the "
              "multiplicative-seasonality fit requires strictly positive data (the fix "
              "interpolates the closure day).",
    cells=[
        """
        import warnings
        import numpy as np
        import pandas as pd
        from threadpoolctl import threadpool_limits
        from statsmodels.tsa.holtwinters import ExponentialSmoothing

        threadpool_limits(1)
        warnings.filterwarnings("ignore")
        """,
        """
        # Daily sales of 24 stores from 2024-01-01 to 2025-01-05; every store closes on Christmas Day
        rng = np.random.default_rng(12)
        days = pd.date_range("2024-01-01", "2025-01-05", freq="D")
        weekly = np.array([0.85, 0.9, 0.95, 1.0, 1.15, 1.35, 0.8])
        sales = {}
        for i in range(24):
            level = rng.uniform(800, 3000) * (1 + rng.uniform(0, 0.3) * np.arange(len(days)) / len(days))
            noise = rng.normal(1, 0.06, size=len(days))
            sales[f"store_{i}"] = (level * weekly[days.dayofweek] * noise).round(0)
        sales = pd.DataFrame(sales, index=days)
        sales.loc["2024-12-25"] = 0.0
        sales.describe().round(0)
        """,
        ETS_TARGET,
    ],
    target=2,
    n=26,
    small=1,
    fix={2: edit(ETS_TARGET, "history = sales.loc[:cutoff, store].to_numpy()",
                 "history = sales.loc[:cutoff, store].replace(0.0, np.nan).interpolate().to_numpy()")},
)


# ---------------------------------------------------------------------------------------------
# NumPy

MCMC_TARGET = """
N_ITER = @N@
STEP = 0.02
samples = np.empty((N_ITER, X.shape[1]))
theta = np.zeros(X.shape[1])
samples[0] = theta
current = log_posterior(theta)
accepted = 0
for i in range(N_ITER):
    proposal = theta + STEP * rng.standard_normal(X.shape[1])
    candidate = log_posterior(proposal)
    if np.log(rng.random()) < candidate - current:
        theta, current = proposal, candidate
        accepted += 1
    samples[i + 1] = theta
    if (i + 1) % 5000 == 0:
        print(f"iteration {i + 1}: acceptance {accepted / (i + 1):.3f}, log posterior {current:.1f}")

kept = samples[N_ITER // 4:]
lo, mid, hi = np.percentile(kept, [2.5, 50, 97.5], axis=0)
for j in range(X.shape[1]):
    print(f"beta[{j}] = {mid[j]:+.3f}  [{lo[j]:+.3f}, {hi[j]:+.3f}]   true {true_beta[j]:+.2f}")
print(f"acceptance rate {accepted / N_ITER:.3f}, {len(kept)} draws kept")
"""

case(
    name="numpy_metropolis_logistic",
    library="numpy",
    category="index",
    needs_runtime=False,
    exception="IndexError",
    message_contains="is out of bounds for axis 0",
    diagnosis="The sampler stores the initial state in row 0 and each iteration's draw in row "
              "i + 1, but the sample array has only N_ITER rows, so the last iteration writes one "
              "row past its end.",
    cells=[
        """
        import numpy as np
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
        rng = np.random.default_rng(2024)
        """,
        """
        # Bayesian logistic regression on a synthetic credit data set, sampled with random-walk Metropolis
        n, d = 20_000, 8
        X = np.column_stack([np.ones(n), rng.normal(size=(n, d - 1))])
        true_beta = np.array([-1.0, 0.8, -0.5, 0.3, 0.0, 1.2, -0.7, 0.1])
        y = (rng.random(n) < 1 / (1 + np.exp(-X @ true_beta))).astype(float)


        def log_posterior(beta):
            z = X @ beta
            log_lik = np.sum(y * z - np.logaddexp(0, z))
            return log_lik - 0.5 * np.sum(beta ** 2) / 10.0   # N(0, 10) prior
        """,
        MCMC_TARGET,
    ],
    target=2,
    n=115_000,
    small=2_000,
    fix={2: edit(MCMC_TARGET, "samples = np.empty((N_ITER, X.shape[1]))",
                 "samples = np.empty((N_ITER + 1, X.shape[1]))")},
)


# ---------------------------------------------------------------------------------------------
# Writing.


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=Path, metavar="DIR", help="write tiny-size copies under DIR")
    args = parser.parse_args()

    names = [c.name for c in CASES]
    if len(set(names)) != len(names):
        raise SystemExit("duplicate case names")
    root = args.small or OUT
    seconds = json.loads(SECONDS_FILE.read_text()) if SECONDS_FILE.exists() and not args.small else {}
    root.mkdir(parents=True, exist_ok=True)
    for c in CASES:
        write_case(c, root / c.name, small=bool(args.small))
    manifest = [entry(c, seconds) for c in sorted(CASES, key=lambda c: c.name)]
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"{len(CASES)} cases under {root}")


if __name__ == "__main__":
    main()
