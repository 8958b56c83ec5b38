"""Generate bench/long-cells/unseen9/: twelve more long-cell crash/fix pairs (torch 3, Keras 2,
scikit-learn 3, pandas 2, statsmodels 1, NumPy 1), in the format and with the writing conventions
of build.py. The set was written and verified before crane ran on it, by someone who had not read
crane's code. Not split: the whole folder is measured, by its totals only.

    .venv/bin/python bench/long-cells/build_unseen9.py               # write unseen9/
    .venv/bin/python bench/long-cells/build_unseen9.py --small DIR   # tiny sizes under DIR, to check crashes fast

The cases use build.py's `Case`, `code`, `entry` and `write_case`. Measured run times of the
targets are kept in `unseen9/target_seconds.json` (verify.py --record) and written into the
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

OUT = HERE / "unseen9"
SECONDS_FILE = OUT / "target_seconds.json"

CASES: list[Case] = []


def case(**kwargs) -> None:
    kwargs["cells"] = [code(c) for c in kwargs["cells"]]
    kwargs["fix"] = {i: code(c) for i, c in kwargs.get("fix", {}).items()}
    CASES.append(Case(**kwargs))


def edit(source: str, old: str, new: str) -> str:
    """`source` with its one occurrence of `old` replaced by `new` (a fix is a small edit)."""
    source = code(source)
    if source.count(old) != 1:
        raise SystemExit(f"edit: {old!r} occurs {source.count(old)} times")
    return source.replace(old, new)


# ---------------------------------------------------------------------------------------------
# torch: a tabular price regressor trained with a manual loop, evaluated on the test frame.

HOUSE_TARGET = """
EPOCHS = @N@
model = PriceNet(len(FEATURES))
opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
loss_fn = nn.MSELoss()
train_losses, val_losses = [], []

for epoch in range(EPOCHS):
    model.train()
    total = 0.0
    for xb, yb in train_loader:
        opt.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
        total += loss.item() * len(xb)
    train_losses.append(total / len(train_loader.dataset))
    val_losses.append(evaluate(model, X_val, y_val, loss_fn))
    if epoch % 10 == 0 or epoch == EPOCHS - 1:
        print(f"epoch {epoch:3d} | train mse {train_losses[-1]:8.1f} | val mse {val_losses[-1]:8.1f}")

X_test = torch.tensor(((test_df.drop(columns=["price"]) - mu) / sd).values, dtype=torch.float32)
model.eval()
with torch.no_grad():
    test_pred = model(X_test).squeeze(1).numpy()
test_rmse = np.sqrt(np.mean((test_pred - test_df["price"].values) ** 2))
print(f"test RMSE: {test_rmse:.1f}k")

fig, ax = plt.subplots(figsize=(7, 4))
ax.set_yscale("log")
ax.set_xlabel("epoch")
ax.set_title("PriceNet MSE")
ax.plot(range(EPOCHS), np.column_stack([train_losses, val_losses]), label=["train", "validation"])
"""

case(
    name="torch_house_prices_mlp",
    library="torch",
    category="structure",
    needs_runtime=True,
    exception="RuntimeError",
    message_contains="mat1 and mat2 shapes cannot be multiplied",
    diagnosis="After the training loop the test matrix is built from test_df.drop(columns=['price']), "
              "which keeps house_id: aligned against mu/sd it has seven columns where the network was "
              "trained on six, and the first Linear layer rejects it. Fix: build it from test_df[FEATURES].",
    cells=[
        """
        import numpy as np
        import pandas as pd
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader, TensorDataset
        import matplotlib.pyplot as plt

        torch.set_num_threads(1)
        torch.manual_seed(0)
        rng = np.random.default_rng(2024)
        """,
        """
        n = 40_000
        houses = pd.DataFrame({
            "house_id": np.arange(100_000, 100_000 + n),
            "sqft": rng.normal(1750, 420, n).clip(450, None).round(),
            "bedrooms": rng.integers(1, 6, n),
            "bathrooms": rng.integers(1, 4, n),
            "age": rng.integers(0, 90, n),
            "dist_center_km": rng.gamma(2.0, 4.0, n).round(2),
            "lot_acres": rng.normal(0.28, 0.09, n).clip(0.04, None).round(3),
        })
        # price in thousands
        houses["price"] = (
            0.13 * houses.sqft + 11 * houses.bedrooms + 14 * houses.bathrooms - 0.9 * houses.age
            - 4.5 * houses.dist_center_km + 60 * houses.lot_acres
            + 0.00002 * (houses.sqft - 1750) ** 2 + rng.normal(0, 22, n)
        ).round(1)
        houses.describe().T
        """,
        """
        FEATURES = ["sqft", "bedrooms", "bathrooms", "age", "dist_center_km", "lot_acres"]
        train_df = houses.sample(frac=0.7, random_state=0)
        rest = houses.drop(train_df.index)
        val_df = rest.sample(frac=0.5, random_state=0)
        test_df = rest.drop(val_df.index)

        mu, sd = train_df[FEATURES].mean(), train_df[FEATURES].std()
        X_train = torch.tensor(((train_df[FEATURES] - mu) / sd).values, dtype=torch.float32)
        y_train = torch.tensor(train_df["price"].values, dtype=torch.float32).unsqueeze(1)
        X_val = torch.tensor(((val_df[FEATURES] - mu) / sd).values, dtype=torch.float32)
        y_val = torch.tensor(val_df["price"].values, dtype=torch.float32).unsqueeze(1)
        train_loader = DataLoader(TensorDataset(X_train, y_train), batch_size=128, shuffle=True)
        print(X_train.shape, X_val.shape, len(test_df))
        """,
        """
        class PriceNet(nn.Module):
            def __init__(self, n_in, hidden=128, p_drop=0.1):
                super().__init__()
                self.body = nn.Sequential(
                    nn.Linear(n_in, hidden), nn.ReLU(), nn.Dropout(p_drop),
                    nn.Linear(hidden, hidden), nn.ReLU(), nn.Dropout(p_drop),
                    nn.Linear(hidden, 1),
                )

            def forward(self, x):
                return self.body(x)


        def evaluate(model, X, y, loss_fn):
            model.eval()
            with torch.no_grad():
                return loss_fn(model(X), y).item()
        """,
        HOUSE_TARGET,
    ],
    target=4,
    n=110,
    small=2,
    fix={4: edit(HOUSE_TARGET, 'test_df.drop(columns=["price"])', "test_df[FEATURES]")},
)

# ---------------------------------------------------------------------------------------------
# torch: store demand with embeddings, trained before a date cutoff, scored after it.

DEMAND_TARGET = """
EPOCHS = @N@
n_stores = train["store"].nunique()
model = DemandNet(n_stores, len(NUM_COLS))
opt = torch.optim.Adam(model.parameters(), lr=2e-3)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=EPOCHS)
history = {"epoch": [], "train_rmse": [], "lr": []}

for epoch in range(EPOCHS):
    model.train()
    se, count = 0.0, 0
    for store, dow, num, y in train_loader:
        opt.zero_grad()
        loss = F.mse_loss(model(store, dow, num), y)
        loss.backward()
        opt.step()
        se += loss.item() * len(y)
        count += len(y)
    history["epoch"].append(epoch)
    history["train_rmse"].append((se / count) ** 0.5)
    history["lr"].append(sched.get_last_lr()[0])
    sched.step()
    if epoch % 5 == 0:
        print(f"epoch {epoch:02d}  rmse {history['train_rmse'][-1]:.4f}  lr {history['lr'][-1]:.2e}")

model.eval()
with torch.no_grad():
    test_pred = model(*test_t[:3])
test_rmse = torch.sqrt(F.mse_loss(test_pred, test_t[3])).item()
print(f"holdout RMSE (log units) after {CUTOFF.date()}: {test_rmse:.4f}")
"""

case(
    name="torch_store_demand_embeddings",
    library="torch",
    category="value",
    needs_runtime=True,
    exception="IndexError",
    message_contains="index out of range in self",
    diagnosis="The store embedding is sized by train['store'].nunique(); the newest store opens after "
              "the cutoff, so its id appears only in the holdout and the embedding lookup after the "
              "training loop is out of range. Fix: size it by the ids of the whole sales frame.",
    cells=[
        """
        import numpy as np
        import pandas as pd
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        from torch.utils.data import DataLoader, TensorDataset

        torch.set_num_threads(1)
        torch.manual_seed(42)
        rng = np.random.default_rng(42)
        """,
        """
        START, END = pd.Timestamp("2022-01-01"), pd.Timestamp("2024-06-30")
        # store ids follow the opening calendar; the last ones opened during the period
        open_offsets = np.r_[np.zeros(32, dtype=int), [118, 203, 297, 386, 470, 611, 702, 846]]
        stores = pd.DataFrame({
            "store": np.arange(len(open_offsets)),
            "opened": START + pd.to_timedelta(open_offsets, unit="D"),
            "level": rng.normal(5.2, 0.35, len(open_offsets)),
        })

        days = pd.date_range(START, END, freq="D")
        sales = stores.merge(pd.DataFrame({"date": days}), how="cross")
        sales = sales[sales["date"] >= sales["opened"]].reset_index(drop=True)
        m = len(sales)
        sales["dow"] = sales["date"].dt.dayofweek
        sales["promo"] = (rng.random(m) < 0.18).astype(float)
        sales["price_index"] = rng.normal(1.0, 0.05, m)
        doy = sales["date"].dt.dayofyear
        sales["doy_sin"], sales["doy_cos"] = np.sin(2 * np.pi * doy / 365.25), np.cos(2 * np.pi * doy / 365.25)
        sales["log_age"] = np.log1p((sales["date"] - sales["opened"]).dt.days)
        dow_effect = np.array([0.0, -0.05, -0.04, 0.0, 0.12, 0.35, 0.22])
        sales["log_sales"] = (
            sales["level"] + dow_effect[sales["dow"]] + 0.3 * sales["promo"] - 1.2 * (sales["price_index"] - 1)
            + 0.15 * sales["doy_sin"] + 0.05 * np.minimum(sales["log_age"], 5) + rng.normal(0, 0.12, m)
        )
        print(sales.shape)
        sales.tail()
        """,
        """
        CUTOFF = pd.Timestamp("2024-04-01")
        NUM_COLS = ["promo", "price_index", "doy_sin", "doy_cos", "log_age"]
        train = sales[sales["date"] < CUTOFF]
        test = sales[sales["date"] >= CUTOFF]


        def to_tensors(frame):
            return (
                torch.tensor(frame["store"].values),
                torch.tensor(frame["dow"].values),
                torch.tensor(frame[NUM_COLS].values, dtype=torch.float32),
                torch.tensor(frame["log_sales"].values, dtype=torch.float32),
            )


        train_t, test_t = to_tensors(train), to_tensors(test)
        train_loader = DataLoader(TensorDataset(*train_t), batch_size=128, shuffle=True)
        print(len(train), "train rows,", len(test), "holdout rows")
        """,
        """
        class DemandNet(nn.Module):
            def __init__(self, n_stores, n_num, store_dim=8, hidden=96):
                super().__init__()
                self.store_emb = nn.Embedding(n_stores, store_dim)
                self.dow_emb = nn.Embedding(7, 3)
                self.mlp = nn.Sequential(
                    nn.Linear(store_dim + 3 + n_num, hidden), nn.ReLU(),
                    nn.Linear(hidden, hidden // 2), nn.ReLU(),
                    nn.Linear(hidden // 2, 1),
                )

            def forward(self, store, dow, num):
                h = torch.cat([self.store_emb(store), self.dow_emb(dow), num], dim=1)
                return self.mlp(h).squeeze(1)
        """,
        DEMAND_TARGET,
    ],
    target=4,
    n=85,
    small=1,
    fix={4: edit(DEMAND_TARGET, 'train["store"].nunique()', 'sales["store"].nunique()')},
)

# ---------------------------------------------------------------------------------------------
# torch: a GRU activity classifier; a helper from an earlier cell runs every epoch and the test.

GRU_HELPER = """
loss_fn = nn.CrossEntropyLoss()


def run_epoch(model, loader, optimizer=None):
    training = optimizer is not None
    model.train(training)
    total_loss, correct, seen = 0.0, 0, 0
    with torch.set_grad_enabled(training):
        for xb, yb in loader:
            h = model.init_hidden(BATCH_SIZE)
            logits, _ = model(xb, h)
            loss = loss_fn(logits, yb)
            if training:
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
            total_loss += loss.item() * len(yb)
            correct += (logits.argmax(1) == yb).sum().item()
            seen += len(yb)
    return total_loss / seen, correct / seen
"""

case(
    name="torch_har_gru",
    library="torch",
    category="structure",
    needs_runtime=True,
    exception="RuntimeError",
    message_contains="Expected hidden size",
    diagnosis="run_epoch makes the GRU's initial state with model.init_hidden(BATCH_SIZE). The train "
              "(3840) and validation (640) sets are multiples of 64, the test set (520) is not: its "
              "last batch of 8 windows gets a hidden state for 64 and the GRU refuses it, in the test "
              "pass after the training loop. Fix: init_hidden(xb.size(0)).",
    cells=[
        """
        import copy
        import numpy as np
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader, TensorDataset

        torch.set_num_threads(1)
        torch.manual_seed(7)
        rng = np.random.default_rng(7)
        """,
        """
        ACTIVITIES = ["walk", "run", "sit", "stand", "stairs_up", "stairs_down"]
        N_WIN, T, C = 5000, 80, 3          # 4 s windows at 20 Hz, 3 axes
        labels = rng.integers(0, len(ACTIVITIES), N_WIN)
        t = np.arange(T) / 20.0
        freq = np.array([1.8, 2.7, 0.0, 0.0, 1.4, 1.6])[labels][:, None]
        amp = np.array([1.0, 2.0, 0.05, 0.08, 1.1, 1.0])[labels][:, None]
        tilt = np.array([0.0, 0.1, 0.9, 0.2, 0.3, -0.3])[labels][:, None]
        phase = rng.uniform(0, 2 * np.pi, (N_WIN, 1))
        wave = amp * np.sin(2 * np.pi * freq * t + phase)
        X = np.stack([
            wave + tilt,
            0.6 * amp * np.sin(2 * np.pi * freq * t + phase + 1.1),
            0.4 * wave ** 2 + 1.0 - tilt,
        ], axis=2) + rng.normal(0, 0.35, (N_WIN, T, C))
        print(X.shape, np.bincount(labels))
        """,
        """
        BATCH_SIZE = 64
        order = rng.permutation(N_WIN)
        tr_idx, va_idx, te_idx = order[:3840], order[3840:4480], order[4480:]


        def make_loader(idx, shuffle):
            ds = TensorDataset(torch.tensor(X[idx], dtype=torch.float32), torch.tensor(labels[idx]))
            return DataLoader(ds, batch_size=BATCH_SIZE, shuffle=shuffle)


        train_loader = make_loader(tr_idx, True)
        val_loader = make_loader(va_idx, False)
        test_loader = make_loader(te_idx, False)
        print(len(tr_idx), len(va_idx), len(te_idx))
        """,
        """
        class ActivityGRU(nn.Module):
            def __init__(self, n_channels, hidden, n_classes, n_layers=1):
                super().__init__()
                self.hidden, self.n_layers = hidden, n_layers
                self.gru = nn.GRU(n_channels, hidden, num_layers=n_layers, batch_first=True)
                self.head = nn.Sequential(nn.Linear(hidden, 64), nn.ReLU(), nn.Linear(64, n_classes))

            def init_hidden(self, batch_size):
                return torch.zeros(self.n_layers, batch_size, self.hidden)

            def forward(self, x, h):
                out, h = self.gru(x, h)
                return self.head(out[:, -1]), h
        """,
        GRU_HELPER,
        """
        EPOCHS = @N@
        model = ActivityGRU(C, hidden=64, n_classes=len(ACTIVITIES))
        optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
        log = []
        best_val, best_state = 0.0, None

        for epoch in range(1, EPOCHS + 1):
            tr_loss, tr_acc = run_epoch(model, train_loader, optimizer)
            va_loss, va_acc = run_epoch(model, val_loader)
            log.append((epoch, tr_loss, va_loss, va_acc))
            if va_acc > best_val:
                best_val, best_state = va_acc, copy.deepcopy(model.state_dict())
            print(f"[{epoch:02d}/{EPOCHS}] loss {tr_loss:.3f} / {va_loss:.3f}   val acc {va_acc:.3f}")

        model.load_state_dict(best_state)
        test_loss, test_acc = run_epoch(model, test_loader)
        print(f"best val acc {best_val:.3f} -> test acc {test_acc:.3f}")
        """,
    ],
    target=5,
    n=25,
    small=1,
    fix={4: edit(GRU_HELPER, "model.init_hidden(BATCH_SIZE)", "model.init_hidden(xb.size(0))")},
)

# ---------------------------------------------------------------------------------------------
# Keras: hourly bike rentals regressor, scored with RMSLE after fit.

BIKE_TARGET = """
EPOCHS = @N@
keras.utils.set_random_seed(7)
model = keras.Sequential([
    layers.Input(shape=(X_train.shape[1],)),
    layers.Dense(128, activation="relu"),
    layers.Dense(64, activation="relu"),
    layers.Dense(1),
])
model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="mse", metrics=["mae"])
history = model.fit(
    X_train, y_train, validation_split=0.1, epochs=EPOCHS, batch_size=64, verbose=0,
    callbacks=[keras.callbacks.ReduceLROnPlateau(monitor="val_loss", patience=6, factor=0.5)],
)
print(f"val MAE {history.history['val_mae'][-1]:.1f} after {len(history.history['loss'])} epochs")

pred = model.predict(X_test, batch_size=1024, verbose=0).ravel()
rmsle = np.sqrt(mean_squared_log_error(y_test, pred))
print(f"test RMSLE: {rmsle:.4f}")
"""

case(
    name="keras_bike_rentals_regressor",
    library="keras",
    category="value",
    needs_runtime=True,
    exception="ValueError",
    message_contains="Mean Squared Logarithmic Error cannot be used",
    diagnosis="The network ends in a linear Dense(1) trained with MSE; at night hours with zero rentals "
              "some test predictions fall below -1, and mean_squared_log_error, called after fit, "
              "refuses them. Fix: clip the predictions at 0.",
    cells=[
        """
        import os
        os.environ["TF_NUM_INTRAOP_THREADS"] = "1"
        os.environ["TF_NUM_INTEROP_THREADS"] = "1"
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"

        import numpy as np
        import pandas as pd
        import keras
        from keras import layers
        from sklearn.metrics import mean_squared_log_error
        from sklearn.preprocessing import StandardScaler
        """,
        """
        rng = np.random.default_rng(11)
        bikes = pd.DataFrame({"ts": pd.date_range("2021-01-01", periods=2 * 8760, freq="h")})
        n = len(bikes)
        bikes["hour"] = bikes.ts.dt.hour
        bikes["weekday"] = bikes.ts.dt.weekday
        bikes["doy"] = bikes.ts.dt.dayofyear
        bikes["temp"] = 12 + 10 * np.sin(2 * np.pi * (bikes.doy - 110) / 365) + rng.normal(0, 3, n)
        bikes["humidity"] = rng.uniform(20, 100, n)
        bikes["wind"] = rng.gamma(2, 6, n)
        bikes["rain"] = (rng.random(n) < 0.08).astype(int)
        bikes["workday"] = (bikes.weekday < 5).astype(int)

        commute = np.exp(-((bikes.hour - 8) ** 2) / 3) + np.exp(-((bikes.hour - 17.5) ** 2) / 4)
        leisure = np.exp(-((bikes.hour - 14) ** 2) / 10)
        demand = (
            420 * (bikes.workday * commute + (1 - bikes.workday) * 0.8 * leisure)
            * np.clip(bikes.temp / 25, 0.1, 1.3) * (1 - 0.7 * bikes.rain) * (1 - bikes.humidity / 250)
        )
        bikes["count"] = rng.poisson(demand.clip(lower=0))
        print(bikes["count"].describe())
        """,
        """
        bikes["hour_sin"], bikes["hour_cos"] = np.sin(2 * np.pi * bikes.hour / 24), np.cos(2 * np.pi * bikes.hour / 24)
        bikes["doy_sin"], bikes["doy_cos"] = np.sin(2 * np.pi * bikes.doy / 365), np.cos(2 * np.pi * bikes.doy / 365)
        FEATURES = ["hour_sin", "hour_cos", "doy_sin", "doy_cos", "temp", "humidity", "wind", "rain", "workday"]

        train = bikes[bikes.ts < "2022-09-01"]
        test = bikes[bikes.ts >= "2022-09-01"]
        scaler = StandardScaler().fit(train[FEATURES])
        X_train = scaler.transform(train[FEATURES]).astype("float32")
        X_test = scaler.transform(test[FEATURES]).astype("float32")
        y_train = train["count"].to_numpy(dtype="float32")
        y_test = test["count"].to_numpy(dtype="float32")
        print(X_train.shape, X_test.shape)
        """,
        BIKE_TARGET,
    ],
    target=3,
    n=95,
    small=2,
    fix={3: edit(BIKE_TARGET, "pred = model.predict(X_test, batch_size=1024, verbose=0).ravel()",
                 "pred = np.clip(model.predict(X_test, batch_size=1024, verbose=0).ravel(), 0, None)")},
)

# ---------------------------------------------------------------------------------------------
# Keras: multi-class plan classifier; the history is tabulated and plotted after fit.

PLAN_TARGET = """
EPOCHS = @N@
keras.utils.set_random_seed(3)
model = build_classifier(X_train.shape[1], N_PLANS)
model.compile(
    optimizer=keras.optimizers.Adam(5e-4),
    loss="sparse_categorical_crossentropy",
    metrics=[keras.metrics.SparseCategoricalAccuracy()],
)
history = model.fit(X_train, y_train, validation_data=(X_val, y_val), epochs=EPOCHS, batch_size=128, verbose=0)

hist = pd.DataFrame(history.history)
hist.index.name = "epoch"
best = int(hist["val_loss"].idxmin())
print(f"best epoch {best}: val loss {hist.loc[best, 'val_loss']:.4f}, val acc {hist.loc[best, 'val_accuracy']:.3f}")

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
hist[["loss", "val_loss"]].plot(ax=ax1, title="loss")
hist[["accuracy", "val_accuracy"]].plot(ax=ax2, title="accuracy")
"""

case(
    name="keras_plan_upgrade_classifier",
    library="keras",
    category="structure",
    needs_runtime=False,
    exception="KeyError",
    message_contains="val_accuracy",
    diagnosis="The model is compiled with keras.metrics.SparseCategoricalAccuracy(), whose history keys "
              "are 'sparse_categorical_accuracy' and 'val_sparse_categorical_accuracy'; the table "
              "read after fit asks for 'val_accuracy'. Fix: metrics=['accuracy'].",
    cells=[
        """
        import os
        os.environ["TF_NUM_INTRAOP_THREADS"] = "1"
        os.environ["TF_NUM_INTEROP_THREADS"] = "1"
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"

        import numpy as np
        import pandas as pd
        import matplotlib.pyplot as plt
        import keras
        from keras import layers
        from sklearn.datasets import make_classification
        from sklearn.model_selection import train_test_split
        from sklearn.preprocessing import StandardScaler
        """,
        """
        PLANS = ["prepaid", "basic", "unlimited", "family"]
        N_PLANS = len(PLANS)
        X_raw, y = make_classification(
            n_samples=40_000, n_features=30, n_informative=14, n_redundant=6, n_classes=N_PLANS,
            n_clusters_per_class=3, class_sep=0.8, flip_y=0.03, random_state=3,
        )
        usage = pd.DataFrame(X_raw, columns=[f"usage_{i:02d}" for i in range(X_raw.shape[1])])
        usage["next_plan"] = pd.Categorical.from_codes(y, PLANS)
        usage["next_plan"].value_counts()
        """,
        """
        X_tr, X_val, y_train, y_val = train_test_split(
            usage.drop(columns="next_plan").values, usage["next_plan"].cat.codes.values,
            test_size=0.2, stratify=usage["next_plan"].cat.codes.values, random_state=0,
        )
        scaler = StandardScaler().fit(X_tr)
        X_train, X_val = scaler.transform(X_tr).astype("float32"), scaler.transform(X_val).astype("float32")
        print(X_train.shape, X_val.shape)
        """,
        """
        def build_classifier(n_features, n_classes, width=256, dropout=0.25):
            return keras.Sequential([
                layers.Input(shape=(n_features,)),
                layers.Dense(width, activation="relu"),
                layers.Dropout(dropout),
                layers.Dense(width // 2, activation="relu"),
                layers.Dropout(dropout),
                layers.Dense(n_classes, activation="softmax"),
            ])
        """,
        PLAN_TARGET,
    ],
    target=4,
    n=50,
    small=2,
    fix={4: edit(PLAN_TARGET, "metrics=[keras.metrics.SparseCategoricalAccuracy()]", 'metrics=["accuracy"]')},
)

# ---------------------------------------------------------------------------------------------
# scikit-learn: randomized search for churn, then scoring of a new batch of customers.

CHURN_TARGET = """
N_ITER = @N@
param_dist = {
    "learning_rate": loguniform(0.02, 0.3),
    "max_iter": randint(100, 350),
    "max_leaf_nodes": randint(8, 64),
    "min_samples_leaf": randint(10, 80),
    "l2_regularization": loguniform(1e-4, 1.0),
}
search = RandomizedSearchCV(
    HistGradientBoostingClassifier(early_stopping=False, random_state=0),
    param_dist, n_iter=N_ITER, scoring="roc_auc",
    cv=StratifiedKFold(n_splits=5, shuffle=True, random_state=0),
    n_jobs=1, random_state=42,
)
search.fit(X_train, y_train)
print(f"best CV AUC: {search.best_score_:.4f}")
print(search.best_params_)
val_auc = roc_auc_score(y_val, search.predict_proba(X_val)[:, 1])
print(f"holdout AUC: {val_auc:.4f}")

X_new = pd.get_dummies(new_customers.drop(columns=["customer_id", "churned"]), columns=CAT_COLS, dtype=float)
new_customers["churn_risk"] = search.predict_proba(X_new)[:, 1]
new_customers.nlargest(10, "churn_risk")[["customer_id", "plan", "region", "churn_risk"]]
"""

case(
    name="sklearn_telecom_churn_search",
    library="scikit-learn",
    category="structure",
    needs_runtime=True,
    exception="ValueError",
    message_contains="The feature names should match those that were passed during fit",
    diagnosis="The new customers are one-hot encoded with their own pd.get_dummies call; they come "
              "from five regions only, so region_north_islands is missing from their columns and the "
              "searched model refuses them after the search. Fix: reindex the new matrix to X's "
              "columns, filling 0.",
    cells=[
        """
        import os
        os.environ["OMP_NUM_THREADS"] = "1"
        os.environ["OPENBLAS_NUM_THREADS"] = "1"

        import numpy as np
        import pandas as pd
        from scipy.stats import loguniform, randint
        from sklearn.ensemble import HistGradientBoostingClassifier
        from sklearn.metrics import roc_auc_score
        from sklearn.model_selection import RandomizedSearchCV, StratifiedKFold, train_test_split
        """,
        """
        rng = np.random.default_rng(5)
        REGIONS = ["north", "south", "east", "west", "central", "north_islands"]
        PLANS = ["basic", "plus", "family", "business"]


        def make_customers(n, regions, first_id):
            df = pd.DataFrame({
                "customer_id": np.arange(first_id, first_id + n),
                "tenure_months": rng.integers(1, 72, n),
                "monthly_fee": rng.normal(55, 18, n).clip(10).round(2),
                "support_calls": rng.poisson(1.3, n),
                "data_gb": rng.gamma(2.0, 6.0, n).round(1),
                "region": rng.choice(regions, n),
                "plan": rng.choice(PLANS, n, p=[0.4, 0.3, 0.2, 0.1]),
                "autopay": rng.integers(0, 2, n),
            })
            logit = (-1.2 - 0.04 * df.tenure_months + 0.025 * (df.monthly_fee - 55) + 0.45 * df.support_calls
                     - 0.6 * df.autopay + 0.5 * (df.plan == "basic") + 0.4 * (df.region == "north_islands"))
            df["churned"] = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
            return df


        customers = make_customers(12_000, REGIONS, 1)
        new_customers = make_customers(3_000, ["north", "south", "east", "west", "central"], 50_001)
        print(customers.churned.mean().round(3), customers.shape, new_customers.shape)
        """,
        """
        CAT_COLS = ["region", "plan"]
        X = pd.get_dummies(customers.drop(columns=["customer_id", "churned"]), columns=CAT_COLS, dtype=float)
        y = customers["churned"]
        X_train, X_val, y_train, y_val = train_test_split(X, y, test_size=0.2, stratify=y, random_state=0)
        X.columns.tolist()
        """,
        CHURN_TARGET,
    ],
    target=3,
    n=16,
    small=1,
    fix={3: edit(CHURN_TARGET, "columns=CAT_COLS, dtype=float)\nnew_customers",
                 "columns=CAT_COLS, dtype=float)\nX_new = X_new.reindex(columns=X.columns, fill_value=0.0)\nnew_customers")},
)

# ---------------------------------------------------------------------------------------------
# scikit-learn: time-ordered folds of a claims-cost pipeline; the fold table is read after.

CLAIMS_TARGET = """
N_TREES = @N@
cat_cols = ["product", "channel", "region"]
num_cols = ["policy_age_y", "insured_value", "prior_claims", "driver_age"]
preprocess = ColumnTransformer([
    ("cat", OneHotEncoder(), cat_cols),
    ("num", "passthrough", num_cols),
])
tscv = TimeSeriesSplit(n_splits=5)
fold_rows = []

for fold, (tr_idx, va_idx) in enumerate(tscv.split(claims)):
    tr, va = claims.iloc[tr_idx], claims.iloc[va_idx]
    model = make_pipeline(
        preprocess,
        GradientBoostingRegressor(n_estimators=N_TREES, max_depth=5, learning_rate=0.05,
                                  subsample=0.8, random_state=fold),
    )
    model.fit(tr[cat_cols + num_cols], np.log1p(tr["claim_cost"]))
    pred = np.expm1(model.predict(va[cat_cols + num_cols]))
    fold_rows.append({
        "fold": fold,
        "train_until": tr["reported"].max().date(),
        "n_val": len(va),
        "mae": mean_absolute_error(va["claim_cost"], pred),
        "medae": median_absolute_error(va["claim_cost"], pred),
    })
    print(f"fold {fold}: trained on {len(tr):,} claims, MAE {fold_rows[-1]['mae']:,.0f}")

cv_table = pd.DataFrame(fold_rows).set_index("fold")
print(cv_table)
print(f"mean MAE over folds: {cv_table['mae'].mean():,.0f} (+/- {cv_table['mae'].std():,.0f})")
"""

case(
    name="sklearn_claims_cost_time_folds",
    library="scikit-learn",
    category="value",
    needs_runtime=True,
    exception="ValueError",
    message_contains="Found unknown categories",
    diagnosis="The one-hot encoder keeps its default handle_unknown='error'. The claims are in time "
              "order and 'motor_telematics' is sold only from July 2023, which lies in the last "
              "TimeSeriesSplit validation fold only: predicting that fold raises. Fix: "
              "OneHotEncoder(handle_unknown='ignore').",
    cells=[
        """
        import os
        os.environ["OMP_NUM_THREADS"] = "1"
        os.environ["OPENBLAS_NUM_THREADS"] = "1"

        import numpy as np
        import pandas as pd
        from sklearn.compose import ColumnTransformer
        from sklearn.ensemble import GradientBoostingRegressor
        from sklearn.metrics import mean_absolute_error, median_absolute_error
        from sklearn.model_selection import TimeSeriesSplit
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import OneHotEncoder
        """,
        """
        rng = np.random.default_rng(31)
        n = 60_000
        claims = pd.DataFrame({
            "reported": pd.Timestamp("2019-01-01") + pd.to_timedelta(np.sort(rng.integers(0, 5 * 365, n)), unit="D"),
            "product": rng.choice(["motor", "home", "travel", "pet"], n, p=[0.45, 0.3, 0.15, 0.1]),
            "channel": rng.choice(["broker", "online", "phone"], n, p=[0.5, 0.35, 0.15]),
            "region": rng.choice(["N", "S", "E", "W"], n),
            "policy_age_y": rng.integers(0, 15, n),
            "insured_value": rng.lognormal(10, 0.6, n).round(-2),
            "prior_claims": rng.poisson(0.4, n),
            "driver_age": rng.integers(18, 85, n),
        })
        telematics = (claims["reported"] >= "2023-07-01") & (claims["product"] == "motor") & (rng.random(n) < 0.35)
        claims.loc[telematics, "product"] = "motor_telematics"
        base = claims["product"].map({"motor": 3200, "motor_telematics": 2500, "home": 5200, "travel": 900, "pet": 700})
        claims["claim_cost"] = (
            base * (claims["insured_value"] / 22_000) ** 0.3 * (1 + 0.25 * claims["prior_claims"])
            * np.where(claims["driver_age"] < 25, 1.4, 1.0) * rng.lognormal(0, 0.5, n)
        ).round(2)
        claims.groupby(claims["reported"].dt.year)["product"].value_counts().unstack(fill_value=0)
        """,
        CLAIMS_TARGET,
    ],
    target=2,
    n=280,
    small=5,
    fix={2: edit(CLAIMS_TARGET, '("cat", OneHotEncoder(), cat_cols)',
                 '("cat", OneHotEncoder(handle_unknown="ignore"), cat_cols)')},
)

# ---------------------------------------------------------------------------------------------
# scikit-learn: streaming day-ahead feeder load forecaster fitted week by week with partial_fit.

LOAD_TARGET = """
PASSES = @N@
CHUNK = 24 * 7 * len(FEEDERS)       # one week of hours, all feeders
scaler = StandardScaler()
net = MLPRegressor(hidden_layer_sizes=(256, 128), batch_size=64, learning_rate_init=5e-4,
                   alpha=1e-4, random_state=0)
chunk_mae = []

for start in range(0, len(load), CHUNK):
    chunk = load.iloc[start:start + CHUNK]
    X_c, y_c = chunk[FEATS].to_numpy(), chunk["target"].to_numpy()
    if start > 0:                   # prequential: score on the week before learning from it
        chunk_mae.append(mean_absolute_error(y_c, net.predict(scaler.transform(X_c))))
    scaler.partial_fit(X_c)
    X_s = scaler.transform(X_c)
    for _ in range(PASSES):
        net.partial_fit(X_s, y_c)
    if chunk_mae and len(chunk_mae) % 20 == 0:
        print(f"week of {chunk['ts'].iloc[0]:%Y-%m-%d}: prequential MAE {np.mean(chunk_mae[-20:]):.2f} MW")

print(f"last week MAE: {chunk_mae[-1]:.2f} MW")
"""

case(
    name="sklearn_feeder_load_partial_fit",
    library="scikit-learn",
    category="value",
    needs_runtime=True,
    exception="ValueError",
    message_contains="contains NaN",
    diagnosis="The day-ahead target is each feeder's load_mw shifted by -24 hours, so the last 24 hours "
              "of every feeder have NaN targets; only the lag warm-up week at the start was dropped. "
              "Sorted by time, those rows all fall in the last weekly chunk, where the prequential MAE "
              "refuses NaN. Fix: drop rows whose target is NaN from each chunk.",
    cells=[
        """
        import os
        os.environ["OMP_NUM_THREADS"] = "1"
        os.environ["OPENBLAS_NUM_THREADS"] = "1"

        import numpy as np
        import pandas as pd
        from sklearn.metrics import mean_absolute_error
        from sklearn.neural_network import MLPRegressor
        from sklearn.preprocessing import StandardScaler
        """,
        """
        rng = np.random.default_rng(8)
        hours = pd.date_range("2021-01-01", "2023-12-31 23:00", freq="h")
        FEEDERS = [f"F{i:02d}" for i in range(1, 21)]
        hour, dow, doy = hours.hour.to_numpy(), hours.dayofweek.to_numpy(), hours.dayofyear.to_numpy()
        temp = (11 + 9 * np.sin(2 * np.pi * (doy - 105) / 365.25) + 4 * np.sin(2 * np.pi * (hour - 9) / 24)
                + rng.normal(0, 2.0, len(hours)))
        evening = np.exp(-((hour - 19) ** 2) / 8)
        morning = np.exp(-((hour - 8) ** 2) / 5)

        frames = []
        for feeder in FEEDERS:
            size, residential = rng.uniform(20, 90), rng.uniform(0.3, 0.9)
            mw = size * (1 + residential * 0.6 * evening + (1 - residential) * 0.5 * morning
                         - 0.15 * (dow >= 5) + 0.012 * np.abs(temp - 16)) + rng.normal(0, 0.03 * size, len(hours))
            frames.append(pd.DataFrame({"ts": hours, "feeder": feeder, "temp": temp, "size": size, "load_mw": mw}))
        load = pd.concat(frames, ignore_index=True)
        load.groupby("feeder")["load_mw"].describe().head()
        """,
        """
        HORIZON = 24
        by_feeder = load.groupby("feeder")["load_mw"]
        for lag in (24, 48, 168):
            load[f"lag_{lag}"] = by_feeder.shift(lag)
        load["roll_mean_24"] = by_feeder.transform(lambda s: s.rolling(24).mean())
        load["hour_sin"] = np.sin(2 * np.pi * load["ts"].dt.hour / 24)
        load["hour_cos"] = np.cos(2 * np.pi * load["ts"].dt.hour / 24)
        load["is_weekend"] = (load["ts"].dt.dayofweek >= 5).astype(float)
        load["target"] = by_feeder.shift(-HORIZON)
        load = load[load["ts"] >= load["ts"].min() + pd.Timedelta(days=7)]   # warm-up of the weekly lag
        load = load.sort_values(["ts", "feeder"]).reset_index(drop=True)
        FEATS = ["temp", "size", "lag_24", "lag_48", "lag_168", "roll_mean_24", "hour_sin", "hour_cos", "is_weekend"]
        print(load.shape)
        """,
        LOAD_TARGET,
    ],
    target=3,
    n=6,
    small=1,
    fix={3: edit(LOAD_TARGET, "chunk = load.iloc[start:start + CHUNK]",
                 'chunk = load.iloc[start:start + CHUNK].dropna(subset=["target"])')},
)

# ---------------------------------------------------------------------------------------------
# pandas: chunked aggregation of card transactions into a per-card profile.

CARDS_TARGET = """
CHUNK = 100_000
parts = []
reader = pd.read_csv(io.StringIO(raw_csv), chunksize=CHUNK, parse_dates=["ts"])
for i, chunk in enumerate(reader):
    chunk["night"] = chunk["ts"].dt.hour < 6
    chunk["merchant_clean"] = (
        chunk["merchant"].str.lower().str.replace(r"[^a-z ]+", " ", regex=True).str.split().str.join(" ")
    )
    chunk["foreign"] = chunk["country"] != "US"
    chunk["round_amount"] = chunk["amount"].mod(10).eq(0)
    chunk["rapid"] = chunk.groupby("card_id")["ts"].transform(lambda s: s.diff().lt(pd.Timedelta(minutes=10)))
    agg = chunk.groupby("card_id").agg({
        "amount": ["sum", "count"],
        "night": "sum",
        "foreign": "sum",
        "round_amount": "sum",
        "rapid": "sum",
    })
    parts.append(agg)
    if i % 5 == 0:
        print(f"chunk {i}: {len(chunk):,} rows, {chunk['merchant_clean'].nunique():,} merchants, {len(agg):,} cards")

combined = pd.concat(parts)
per_card = combined.groupby(level=0).sum()
per_card["avg_ticket"] = per_card["amount_sum"] / per_card["amount_count"]
per_card["night_share"] = per_card["night_sum"] / per_card["amount_count"]
flagged = per_card.query("amount_count >= 20 and night_share > 0.35").sort_values("avg_ticket", ascending=False)
print(f"{len(flagged):,} of {len(per_card):,} cards flagged")
flagged.head(10)
"""

case(
    name="pandas_card_transactions_profile",
    library="pandas",
    category="structure",
    needs_runtime=False,
    exception="KeyError",
    message_contains="amount_sum",
    diagnosis="groupby().agg with a dict of lists gives MultiIndex columns ('amount', 'sum'), ...; "
              "after the chunk loop the combined profile is read with flat names like 'amount_sum'. "
              "Fix: flatten the columns of the concatenated parts ('_'.join).",
    cells=[
        """
        import io
        import numpy as np
        import pandas as pd
        """,
        """
        rng = np.random.default_rng(77)
        N_TX = @N@
        MERCHANTS = np.array([
            "AMZN Mktp US*2K4", "UBER   *TRIP", "Shell Oil 5741", "STARBUCKS #1123", "Walmart Supercenter",
            "NETFLIX.COM", "SQ *Blue Bottle", "Delta Air 0062", "Target T-0412", "CVS/Pharmacy #0883",
            "APPLE.COM/BILL", "Lyft   *Ride", "Whole Foods #10233", "Chevron 0091442", "Spotify P1A2B3",
        ])
        seconds = np.sort(rng.integers(0, 180 * 86_400, N_TX))
        tx = pd.DataFrame({
            "tx_id": np.arange(N_TX),
            "ts": pd.Timestamp("2024-01-01") + pd.to_timedelta(seconds, unit="s"),
            "card_id": rng.integers(0, 15_000, N_TX),
            "merchant": MERCHANTS[rng.integers(0, len(MERCHANTS), N_TX)],
            "country": rng.choice(["US", "US", "US", "US", "CA", "MX", "GB"], N_TX),
            "amount": np.where(rng.random(N_TX) < 0.1, rng.integers(1, 30, N_TX) * 10.0, rng.lognormal(3, 1, N_TX).round(2)),
        })
        raw_csv = tx.to_csv(index=False)   # stands in for the bank's daily export
        del tx
        print(f"{len(raw_csv) / 1e6:.0f} MB of CSV")
        """,
        CARDS_TARGET,
    ],
    target=2,
    n=1_200_000,
    small=300_000,
    fix={2: edit(CARDS_TARGET, "combined = pd.concat(parts)\n",
                 'combined = pd.concat(parts)\ncombined.columns = ["_".join(col) for col in combined.columns]\n')},
)

# ---------------------------------------------------------------------------------------------
# pandas: per-store weekly trend and anomaly report over daily sales.

STORES_TARGET = """
rows = []
for k, (store, g) in enumerate(sales.groupby("store", sort=True)):
    s = g.set_index("date")["sales"]
    weekly = s.resample("W-SUN").sum()
    med = s.rolling(28, min_periods=7).median()
    mad = s.rolling(28, min_periods=7).apply(lambda w: np.median(np.abs(w - np.median(w))), raw=True)
    anomalies = int(((s - med).abs() > 4 * 1.4826 * mad).sum())
    rows.append({
        "store": store,
        "weeks": len(weekly),
        "last_week": weekly.iloc[-1],
        "wow_growth": weekly.iloc[-1] / weekly.iloc[-2] - 1,
        "trend_8w": weekly.tail(8).pct_change().mean(),
        "anomalies": anomalies,
    })
    if k % 100 == 0:
        print(f"{k:4d} {store}: {len(weekly)} weeks, {anomalies} anomalous days")
"""

case(
    name="pandas_store_weekly_trends",
    library="pandas",
    category="value",
    needs_runtime=True,
    exception="IndexError",
    message_contains="single positional indexer is out-of-bounds",
    diagnosis="The week-over-week growth reads weekly.iloc[-2]; the newest store (the last id, opened "
              "on Thursday 2024-12-26) has a single week of sales, so the last group of the loop "
              "raises. Fix: NaN growth when a store has fewer than two weeks.",
    cells=[
        """
        import numpy as np
        import pandas as pd
        """,
        """
        rng = np.random.default_rng(19)
        N_STORES = @N@
        dates = pd.date_range("2023-01-02", "2024-12-29", freq="D")
        store_ids = [f"ST{i:04d}" for i in range(1, N_STORES + 1)]
        opened = pd.Series(dates[0], index=store_ids)
        later = rng.choice(store_ids[:-1], size=N_STORES // 10, replace=False)
        opened[later] = dates[0] + pd.to_timedelta(rng.integers(20, 600, len(later)), unit="D")
        opened[store_ids[-1]] = pd.Timestamp("2024-12-26")     # latest opening

        sales = pd.DataFrame({
            "store": np.repeat(store_ids, len(dates)),
            "date": np.tile(dates, N_STORES),
        })
        sales = sales[sales["date"] >= sales["store"].map(opened)].reset_index(drop=True)
        level = pd.Series(rng.lognormal(8, 0.4, N_STORES), index=store_ids)
        dow = sales["date"].dt.dayofweek.to_numpy()
        sales["sales"] = (
            sales["store"].map(level).to_numpy() * (1 + 0.25 * (dow >= 5))
            * (1 + 0.1 * np.sin(2 * np.pi * sales["date"].dt.dayofyear.to_numpy() / 365))
            * rng.lognormal(0, 0.15, len(sales))
        ).round(2)
        spikes = rng.random(len(sales)) < 0.003
        sales.loc[spikes, "sales"] *= 4
        print(sales.shape, sales["store"].nunique())
        """,
        STORES_TARGET,
        """
        report = pd.DataFrame(rows).set_index("store")
        report.sort_values("wow_growth").head(10)
        """,
    ],
    target=2,
    n=1700,
    small=60,
    fix={2: edit(STORES_TARGET, '"wow_growth": weekly.iloc[-1] / weekly.iloc[-2] - 1,',
                 '"wow_growth": weekly.iloc[-1] / weekly.iloc[-2] - 1 if len(weekly) > 1 else np.nan,')},
)

# ---------------------------------------------------------------------------------------------
# statsmodels: SARIMAX backtest over rolling origins, then a refit and a two-week outlook.

SARIMAX_TARGET = """
N_ORIGINS = @N@
ORDER, SEASONAL = (1, 0, 1), (1, 0, 1, 7)
y, X = df["demand"], df[EXOG]
records = []

for k in range(N_ORIGINS):
    cut = len(y) - 7 * (N_ORIGINS - k)
    res = SARIMAX(y.iloc[:cut], exog=X.iloc[:cut], order=ORDER, seasonal_order=SEASONAL).fit(disp=False)
    fc = res.forecast(steps=7, exog=X.iloc[cut:cut + 7])
    actual = y.iloc[cut:cut + 7]
    for h in range(7):
        records.append({"origin": y.index[cut - 1], "horizon": h + 1,
                        "abs_err": abs(fc.iloc[h] - actual.iloc[h])})
    print(f"origin {y.index[cut - 1]:%Y-%m-%d}: week MAE {np.mean(np.abs(fc.values - actual.values)):.1f}")

final = SARIMAX(y, exog=X, order=ORDER, seasonal_order=SEASONAL).fit(disp=False)
future_idx = pd.date_range(y.index[-1] + pd.Timedelta(days=1), periods=14, freq="D")
temp_outlook = 15 + 9 * np.sin(2 * np.pi * (future_idx.dayofyear - 105) / 365.25)
future_exog = pd.DataFrame({"temp": temp_outlook}, index=future_idx)
outlook = final.forecast(steps=14, exog=future_exog)
print(outlook.round(1))

errors = pd.DataFrame(records)
errors.groupby("horizon")["abs_err"].mean().plot(kind="bar", title=f"backtest MAE by horizon, {N_ORIGINS} origins")
"""

case(
    name="statsmodels_water_demand_backtest",
    library="statsmodels",
    category="structure",
    needs_runtime=True,
    exception="ValueError",
    message_contains="Provided exogenous values are not of the appropriate shape",
    diagnosis="The SARIMAX models are fitted with two exogenous columns (temp, holiday); after the "
              "backtest loop the outlook's future exog frame holds only temp, and forecast refuses a "
              "(14, 1) exog where (14, 2) is required. Fix: add the holiday flag to future_exog.",
    cells=[
        """
        import os
        os.environ["OMP_NUM_THREADS"] = "1"
        os.environ["OPENBLAS_NUM_THREADS"] = "1"

        import warnings
        import numpy as np
        import pandas as pd
        import matplotlib.pyplot as plt
        from statsmodels.tsa.statespace.sarimax import SARIMAX

        warnings.filterwarnings("ignore")
        """,
        """
        rng = np.random.default_rng(23)
        idx = pd.date_range("2021-01-01", "2023-12-31", freq="D")
        HOLIDAYS = pd.to_datetime([
            f"{y}-{md}" for y in range(2021, 2025)
            for md in ("01-01", "05-01", "07-04", "09-06", "11-25", "12-24", "12-25", "12-31")
        ])
        temp = 15 + 9 * np.sin(2 * np.pi * (idx.dayofyear - 105) / 365.25) + rng.normal(0, 2.5, len(idx))
        holiday = idx.isin(HOLIDAYS).astype(float)
        weekly = np.array([0, 4, 6, 5, 3, -12, -20])[idx.dayofweek]
        noise = np.zeros(len(idx))
        for t in range(1, len(idx)):
            noise[t] = 0.6 * noise[t - 1] + rng.normal(0, 6)
        df = pd.DataFrame({
            "demand": 480 + 5 * np.abs(temp - 17) - 35 * holiday + weekly + noise,
            "temp": temp,
            "holiday": holiday,
        }, index=idx)
        df.index.freq = "D"
        EXOG = ["temp", "holiday"]
        df.describe()
        """,
        SARIMAX_TARGET,
    ],
    target=2,
    n=52,
    small=2,
    fix={2: edit(SARIMAX_TARGET, 'future_exog = pd.DataFrame({"temp": temp_outlook}, index=future_idx)',
                 'future_exog = pd.DataFrame({"temp": temp_outlook, "holiday": future_idx.isin(HOLIDAYS).astype(float)},\n'
                 '                           index=future_idx)')},
)

# ---------------------------------------------------------------------------------------------
# NumPy: a bootstrap particle filter written by hand for a tank level sensor.

PF_TARGET = """
N_PART = 20_000
Q, R = 0.5, 1.0                       # process / sensor noise (cm)
particles = readings[0] + rng.normal(0, 2.0, N_PART)
estimates, spread = [], []

for t in range(1, T):
    outflow = K_OUT * np.sqrt(np.clip(particles, 0, None))
    particles = particles + inflow[t] - outflow + rng.normal(0, Q, N_PART)
    logw = -0.5 * ((readings[t] - particles) / R) ** 2
    w = np.exp(logw)
    w /= w.sum()
    estimates.append(np.dot(w, particles))
    spread.append(np.sqrt(np.dot(w, (particles - estimates[-1]) ** 2)))
    particles = particles[rng.choice(N_PART, size=N_PART, p=w)]
    if t % 5000 == 0:
        print(f"t={t:6d}  level {estimates[-1]:7.2f} cm  (true {level[t]:7.2f})  sd {spread[-1]:.2f}")

est = np.array(estimates)
fig, ax = plt.subplots(figsize=(11, 3))
ax.plot(level, lw=0.6, label="true level")
ax.plot(np.arange(1, T), est, lw=0.6, label="filter")
ax.legend()
print(f"RMSE over the deployment: {np.sqrt(np.mean((np.array(estimates) - level[1:]) ** 2)):.3f} cm")
"""

case(
    name="numpy_tank_level_particle_filter",
    library="numpy",
    category="value",
    needs_runtime=True,
    exception="ValueError",
    message_contains="contain NaN",
    diagnosis="The weights are exp(logw) normalised by their sum. At the last step the tank is drained "
              "by 60 cm while every particle stays near the previous level: all exp(logw) underflow to 0, "
              "0/0 gives NaN weights and rng.choice refuses them. (The refill of 20 cm earlier is small "
              "enough not to underflow.) Fix: subtract logw.max() before exponentiating.",
    cells=[
        """
        import os
        os.environ["OMP_NUM_THREADS"] = "1"
        os.environ["OPENBLAS_NUM_THREADS"] = "1"

        import numpy as np
        import matplotlib.pyplot as plt
        """,
        """
        rng = np.random.default_rng(99)
        T = @N@                             # one reading per minute
        K_OUT = 0.3
        inflow = 2.2 + 0.8 * np.sin(np.arange(T) / 300.0)
        events = {int(0.4 * T): +20.0, T - 1: -60.0}   # a refill, then the maintenance drain
        level = np.empty(T)
        level[0] = 55.0
        for t in range(1, T):
            level[t] = level[t - 1] + inflow[t] - K_OUT * np.sqrt(max(level[t - 1], 0.0)) + rng.normal(0, 0.5)
            level[t] += events.get(t, 0.0)
        readings = level + rng.normal(0, 1.0, T)
        print(level.min().round(1), level.max().round(1), readings[:5].round(2))
        """,
        PF_TARGET,
    ],
    target=2,
    n=15_000,
    small=2_000,
    fix={2: edit(PF_TARGET, "w = np.exp(logw)", "w = np.exp(logw - logw.max())")},
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=Path, help="write tiny-size copies under this folder")
    args = parser.parse_args()

    names = [c.name for c in CASES]
    if len(set(names)) != len(names):
        raise SystemExit("duplicate case names")
    root = args.small or OUT
    small = args.small is not None
    seconds = json.loads(SECONDS_FILE.read_text()) if SECONDS_FILE.exists() and not small else {}
    root.mkdir(parents=True, exist_ok=True)
    manifest = []
    for c in sorted(CASES, key=lambda c: c.name):
        write_case(c, root / c.name, small)
        manifest.append(entry(c, seconds))
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"{len(CASES)} cases under {root}")


if __name__ == "__main__":
    main()
