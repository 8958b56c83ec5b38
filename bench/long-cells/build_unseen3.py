"""Generate bench/long-cells/unseen3/: twelve more long-cell crash/fix pairs (torch 3, Keras 2,
scikit-learn 3, pandas 2, statsmodels 1, NumPy 1), written and verified before crane ran on them
by someone who had not read crane's dry-run code, in the format and with the writing conventions
of build.py (same Case fields, `@N@` size, cell ids, execution counts, no outputs). Each target
trains, searches, fits or loops for 30 to 55 seconds and, in its buggy version, fails only in its
last iteration or in the statements after its loop; several fixed versions end with a statement
that reads everything the loop accumulated. Not split: the folder is measured only by its totals,
and whoever works on crane must not look at it (its notebooks, its manifest, this file's
definitions, its per-case results or unseen3/target_seconds.json).

    .venv/bin/python bench/long-cells/build_unseen3.py
    MPLBACKEND=Agg .venv/bin/python bench/long-cells/verify.py bench/long-cells/unseen3 --record bench/long-cells/unseen3/target_seconds.json
    .venv/bin/python bench/long-cells/build_unseen3.py      # again, to write the seconds into the manifest

`--small DIR` writes every case with tiny sizes under DIR instead (to check crashes quickly).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from build import Case, code, entry, write_case  # noqa: E402

OUT = HERE / "unseen3"
SECONDS_FILE = OUT / "target_seconds.json"

CASES: list[Case] = []


def case(**kwargs) -> None:
    kwargs["cells"] = [code(c) for c in kwargs["cells"]]
    kwargs["fix"] = {i: code(c) for i, c in kwargs.get("fix", {}).items()}
    CASES.append(Case(**kwargs))


def swap(source: str, old: str, new: str) -> str:
    """The fixed cell: `source` with its one occurrence of `old` replaced by `new`."""
    if source.count(old) != 1:
        raise SystemExit(f"fix text found {source.count(old)} times: {old!r}")
    return source.replace(old, new)


# ---------------------------------------------------------------------------------------------
# torch

GRU_TARGET = """
for epoch in range(EPOCHS):
    model.train()
    h = None
    total = 0.0
    for xb, yb in train_loader:
        optimizer.zero_grad()
        pred, h = model(xb, h)
        h = h.detach()  # truncated BPTT: keep the state, drop its graph
        loss = loss_fn(pred, yb)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        total += loss.item()
    if (epoch + 1) % 5 == 0:
        print(f"epoch {epoch + 1}/{EPOCHS}  train mse {total / len(train_loader):.4f}")

model.eval()
h = None
test_preds = []
with torch.no_grad():
    for xb, yb in test_loader:
        pred, h = model(xb, h)
        test_preds.append(pred)
test_preds = torch.cat(test_preds)
print(f"test mse {loss_fn(test_preds, y_test).item():.4f}")
"""

case(
    name="torch_stateful_gru_eval_last_batch",
    library="torch",
    category="shape",
    needs_runtime=True,
    exception="RuntimeError",
    message_contains="Expected hidden size",
    diagnosis="the GRU's hidden state is carried from batch to batch; the training loader drops its "
    "last partial batch but the test loader does not, so after training the last test batch "
    "is smaller than the carried state and the GRU rejects it. Trim the state to the batch.",
    cells=[
        """
        import numpy as np
        import pandas as pd
        import torch
        from torch import nn
        from torch.utils.data import DataLoader, TensorDataset

        torch.manual_seed(0)
        torch.set_num_threads(1)  # small models on a shared 2-core box: more threads only wait on each other
        """,
        """
        rng = np.random.default_rng(11)
        T = 60_000
        t = np.arange(T)
        load = np.sin(2 * np.pi * t / 288) + 0.3 * np.sin(2 * np.pi * t / 2016) + rng.normal(0, 0.2, T)
        temp = 0.5 * np.cos(2 * np.pi * t / 288) + rng.normal(0, 0.1, T)
        series = np.column_stack([load, temp]).astype(np.float32)

        SEQ = 48

        def chunks(arr, seq):
            # consecutive chunks, so that the hidden state can be carried from one batch to the next
            n = (len(arr) - 1) // seq
            X = np.stack([arr[i * seq:(i + 1) * seq] for i in range(n)])
            y = np.stack([arr[i * seq + 1:(i + 1) * seq + 1, 0] for i in range(n)])
            return torch.from_numpy(X), torch.from_numpy(y)

        split = int(0.8 * T)
        X_train, y_train = chunks(series[:split], SEQ)
        X_test, y_test = chunks(series[split:], SEQ)
        print(X_train.shape, X_test.shape)
        """,
        """
        BATCH = 64
        train_loader = DataLoader(TensorDataset(X_train, y_train), batch_size=BATCH, shuffle=False, drop_last=True)
        test_loader = DataLoader(TensorDataset(X_test, y_test), batch_size=BATCH, shuffle=False)


        class Forecaster(nn.Module):
            def __init__(self, n_in, hidden=64):
                super().__init__()
                self.gru = nn.GRU(n_in, hidden, num_layers=2, batch_first=True)
                self.head = nn.Linear(hidden, 1)

            def forward(self, x, h=None):
                out, h = self.gru(x, h)
                return self.head(out).squeeze(-1), h


        model = Forecaster(series.shape[1])
        optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
        loss_fn = nn.MSELoss()
        EPOCHS = @N@
        """,
        GRU_TARGET,
    ],
    target=3,
    n=80,
    small=1,
    fix={3: swap(GRU_TARGET, "        pred, h = model(xb, h)\n        test_preds",
                 "        if h is not None and h.size(1) != xb.size(0):\n"
                 "            h = h[:, :xb.size(0)].contiguous()\n"
                 "        pred, h = model(xb, h)\n        test_preds")},
)

EARLY_TARGET = """
history = {"train_loss": [], "val_loss": [], "val_auc": []}
best_auc, best_state, bad_epochs = 0.0, None, 0
for epoch in range(MAX_EPOCHS):
    model.train()
    running = 0.0
    for xb, yb in train_loader:
        optimizer.zero_grad()
        loss = loss_fn(model(xb).squeeze(1), yb)
        loss.backward()
        optimizer.step()
        running += loss.item() * len(xb)
    model.eval()
    with torch.no_grad():
        val_logits = model(X_val_t).squeeze(1)
        val_loss = loss_fn(val_logits, y_val_t).item()
    val_auc = roc_auc_score(y_val, val_logits.numpy())
    history["train_loss"].append(running / len(X_train_t))
    history["val_loss"].append(val_loss)
    history["val_auc"].append(val_auc)
    print(f"epoch {epoch + 1:3d}  train {history['train_loss'][-1]:.4f}  val {val_loss:.4f}  auc {val_auc:.4f}")
    if val_auc > best_auc + 1e-4:
        best_auc, best_state, bad_epochs = val_auc, copy.deepcopy(model.state_dict()), 0
    else:
        bad_epochs += 1
        if bad_epochs >= PATIENCE:
            print(f"early stopping after epoch {epoch + 1}")
            break

model.load_state_dict(best_state)
model.eval()
test_prob = torch.sigmoid(model(X_test_t).squeeze(1))
print(f"best val auc {best_auc:.4f}  test auc {roc_auc_score(y_test, test_prob):.4f}")
curves = pd.DataFrame(history, index=pd.RangeIndex(1, len(history["val_auc"]) + 1, name="epoch"))
curves[["train_loss", "val_loss"]].plot(title="loss per epoch")
curves.tail()
"""

case(
    name="torch_early_stopping_test_auc_grad_tensor",
    library="torch",
    category="type",
    needs_runtime=True,
    exception="RuntimeError",
    message_contains="Can't call numpy() on Tensor that requires grad",
    diagnosis="after early stopping the best weights are reloaded and the test set is scored "
    "outside torch.no_grad(), so the probabilities require grad and roc_auc_score cannot turn "
    "them into a NumPy array. Score the test set under no_grad (or detach).",
    cells=[
        """
        import copy

        import numpy as np
        import pandas as pd
        import torch
        from torch import nn
        from torch.utils.data import DataLoader, TensorDataset
        from sklearn.datasets import make_classification
        from sklearn.metrics import roc_auc_score
        from sklearn.model_selection import train_test_split
        from sklearn.preprocessing import StandardScaler

        torch.manual_seed(0)
        torch.set_num_threads(1)  # small models on a shared 2-core box: more threads only wait on each other
        """,
        """
        X, y = make_classification(n_samples=@N@, n_features=40, n_informative=14, n_redundant=10,
                                   flip_y=0.08, class_sep=0.7, random_state=3)
        X_tmp, X_test, y_tmp, y_test = train_test_split(X, y, test_size=0.2, stratify=y, random_state=0)
        X_train, X_val, y_train, y_val = train_test_split(X_tmp, y_tmp, test_size=0.2, stratify=y_tmp, random_state=0)
        scaler = StandardScaler().fit(X_train)


        def to_tensor(a):
            return torch.tensor(a, dtype=torch.float32)


        X_train_t, X_val_t, X_test_t = (to_tensor(scaler.transform(a)) for a in (X_train, X_val, X_test))
        y_train_t, y_val_t = to_tensor(y_train), to_tensor(y_val)
        train_loader = DataLoader(TensorDataset(X_train_t, y_train_t), batch_size=128, shuffle=True)
        print(len(X_train_t), len(X_val_t), len(X_test_t))
        """,
        """
        model = nn.Sequential(
            nn.Linear(X_train_t.shape[1], 512), nn.ReLU(), nn.Dropout(0.3),
            nn.Linear(512, 128), nn.ReLU(), nn.Dropout(0.3),
            nn.Linear(128, 1),
        )
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=1e-4)
        loss_fn = nn.BCEWithLogitsLoss()
        MAX_EPOCHS = 200
        PATIENCE = 8
        """,
        EARLY_TARGET,
    ],
    target=3,
    n=40000,
    small=1000,
    fix={3: swap(EARLY_TARGET, "model.eval()\ntest_prob = torch.sigmoid(model(X_test_t).squeeze(1))",
                 "model.eval()\nwith torch.no_grad():\n    test_prob = torch.sigmoid(model(X_test_t).squeeze(1))")},
)

MF_MODEL = """
train = events[events["day"] < 300].reset_index(drop=True)
test = events[events["day"] >= 300].reset_index(drop=True)
n_users, n_items = train["user_id"].max() + 1, train["item_id"].max() + 1


def tensors(df):
    return (torch.tensor(df["user_id"].to_numpy()), torch.tensor(df["item_id"].to_numpy()),
            torch.tensor(df["rating"].to_numpy(), dtype=torch.float32))


train_loader = DataLoader(TensorDataset(*tensors(train)), batch_size=1024, shuffle=True)
test_u, test_i, test_r = tensors(test)


class MatrixFactorization(nn.Module):
    def __init__(self, n_users, n_items, dim=32):
        super().__init__()
        self.user = nn.Embedding(n_users, dim)
        self.item = nn.Embedding(n_items, dim)
        self.user_bias = nn.Embedding(n_users, 1)
        self.item_bias = nn.Embedding(n_items, 1)
        self.global_bias = nn.Parameter(torch.tensor(3.0))
        for emb in (self.user, self.item, self.user_bias, self.item_bias):
            nn.init.normal_(emb.weight, std=0.05)

    def forward(self, u, i):
        dot = (self.user(u) * self.item(i)).sum(dim=1)
        return dot + self.user_bias(u).squeeze(1) + self.item_bias(i).squeeze(1) + self.global_bias


model = MatrixFactorization(n_users, n_items)
optimizer = torch.optim.Adam(model.parameters(), lr=5e-3, weight_decay=1e-5)
loss_fn = nn.MSELoss()
print(f"{len(train)} train and {len(test)} test ratings, {n_users} users, {n_items} items")
"""

case(
    name="torch_item_embeddings_sized_from_train_split",
    library="torch",
    category="data confusion",
    needs_runtime=True,
    exception="IndexError",
    message_contains="index out of range in self",
    diagnosis="the split is by time and items keep being released, so the test weeks rate items "
    "that never appear in training; the item embeddings were sized from the training split's "
    "largest id, and scoring the test ratings after training indexes past them. Size the "
    "embeddings from the catalogue.",
    cells=[
        """
        import numpy as np
        import pandas as pd
        import torch
        from torch import nn
        from torch.utils.data import DataLoader, TensorDataset

        torch.manual_seed(0)
        torch.set_num_threads(1)  # small models on a shared 2-core box: more threads only wait on each other
        """,
        """
        rng = np.random.default_rng(5)
        N_USERS, N_ITEMS, N_EVENTS, K = 4000, 1500, 250_000, 6

        # the catalogue grows over the year: 300 items at launch, the rest released day by day
        catalogue = pd.DataFrame({"item_id": np.arange(N_ITEMS)})
        catalogue["release_day"] = np.sort(np.r_[np.zeros(300, int), rng.integers(1, 365, N_ITEMS - 300)])

        day = np.sort(rng.integers(0, 365, N_EVENTS))
        available = np.searchsorted(catalogue["release_day"].to_numpy(), day, side="right")
        item_id = (available * rng.random(N_EVENTS) ** 0.7).astype(int)
        user_id = rng.integers(0, N_USERS, N_EVENTS)

        user_taste = rng.normal(0, 0.6, (N_USERS, K))
        item_profile = rng.normal(0, 0.6, (N_ITEMS, K))
        affinity = (user_taste[user_id] * item_profile[item_id]).sum(axis=1)
        rating = np.clip(np.round(3.4 + affinity + rng.normal(0, 0.5, N_EVENTS)), 1, 5)
        events = pd.DataFrame({"user_id": user_id, "item_id": item_id, "day": day, "rating": rating})
        events.head()
        """,
        MF_MODEL,
        """
        EPOCHS = @N@
        for epoch in range(EPOCHS):
            model.train()
            total = 0.0
            for u, i, r in train_loader:
                optimizer.zero_grad()
                loss = loss_fn(model(u, i), r)
                loss.backward()
                optimizer.step()
                total += loss.item() * len(r)
            print(f"epoch {epoch + 1:2d}  train rmse {np.sqrt(total / len(train)):.4f}")

        model.eval()
        with torch.no_grad():
            test_pred = model(test_u, test_i).clamp(1, 5)
        test_rmse = torch.sqrt(((test_pred - test_r) ** 2).mean()).item()
        baseline = np.sqrt(((train["rating"].mean() - test["rating"]) ** 2).mean())
        print(f"test rmse {test_rmse:.4f}  (global mean baseline {baseline:.4f})")
        """,
    ],
    target=3,
    n=19,
    small=1,
    fix={2: swap(MF_MODEL, 'n_users, n_items = train["user_id"].max() + 1, train["item_id"].max() + 1',
                 'n_users, n_items = events["user_id"].max() + 1, len(catalogue)')},
)

# ---------------------------------------------------------------------------------------------
# Keras

SUBMISSION_TARGET = """
keras.utils.set_random_seed(42)
model = keras.Sequential([
    layers.Input((X_train.shape[1],)),
    layers.Dense(256, activation="relu"),
    layers.BatchNormalization(),
    layers.Dropout(0.3),
    layers.Dense(128, activation="relu"),
    layers.Dropout(0.3),
    layers.Dense(1, activation="sigmoid"),
])
model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="binary_crossentropy",
              metrics=["accuracy", keras.metrics.AUC(name="auc")])
history = model.fit(X_train, y_train, validation_split=0.15, epochs=EPOCHS, batch_size=64, verbose=0)
print(f"last epoch: val auc {history.history['val_auc'][-1]:.4f}, best {max(history.history['val_auc']):.4f}")

test_prob = model.predict(X_test, batch_size=1024, verbose=0)
submission = pd.DataFrame({
    "customer_id": test_ids,
    "churn_probability": test_prob,
    "churn": (test_prob > 0.5).astype(int),
})
submission.sort_values("churn_probability", ascending=False).head(10)
"""

case(
    name="keras_churn_submission_from_predict",
    library="keras",
    category="shape",
    needs_runtime=True,
    exception="ValueError",
    message_contains="Per-column arrays must each be 1-dimensional",
    diagnosis="model.predict returns an (n, 1) array for the single sigmoid output; the "
    "submission DataFrame built after training wants one-dimensional columns. Ravel the "
    "predictions.",
    cells=[
        """
        import numpy as np
        import pandas as pd
        import keras
        from keras import layers
        """,
        """
        rng = np.random.default_rng(8)
        n = 30000
        customers = pd.DataFrame({
            "customer_id": np.arange(100_000, 100_000 + n),
            "tenure_months": rng.integers(1, 72, n),
            "monthly_charges": rng.normal(65, 20, n).clip(15, 130),
            "support_calls": rng.poisson(1.5, n),
            "contract": rng.choice(["monthly", "annual", "two_year"], n, p=[0.55, 0.3, 0.15]),
            "paperless": rng.integers(0, 2, n),
            "data_gb": rng.gamma(2.0, 8.0, n),
        })
        logit = (-1.0 - 0.04 * customers["tenure_months"] + 0.02 * customers["monthly_charges"]
                 + 0.35 * customers["support_calls"] + 1.2 * (customers["contract"] == "monthly")
                 - 0.8 * (customers["contract"] == "two_year") + 0.2 * customers["paperless"])
        customers["churn"] = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
        customers["churn"].mean()
        """,
        """
        features = pd.get_dummies(customers.drop(columns=["customer_id", "churn"]), columns=["contract"], dtype=float)
        n_test = 5000
        train_part, test_part = features.iloc[:-n_test], features.iloc[-n_test:]
        mean, std = train_part.mean(), train_part.std()
        X_train = ((train_part - mean) / std).to_numpy(dtype="float32")
        X_test = ((test_part - mean) / std).to_numpy(dtype="float32")
        y_train = customers["churn"].iloc[:-n_test].to_numpy()
        test_ids = customers["customer_id"].iloc[-n_test:].to_numpy()
        EPOCHS = @N@
        print(X_train.shape, X_test.shape)
        """,
        SUBMISSION_TARGET,
    ],
    target=3,
    n=46,
    small=1,
    fix={3: swap(SUBMISSION_TARGET, "test_prob = model.predict(X_test, batch_size=1024, verbose=0)",
                 "test_prob = model.predict(X_test, batch_size=1024, verbose=0).ravel()")},
)

LR_TARGET = """
WARMUP = 3
lr_table = np.concatenate([
    np.linspace(1e-4, 1e-3, WARMUP),                        # linear warm-up
    np.repeat([1e-3, 3e-4, 1e-4], (EPOCHS - WARMUP) // 3),  # then three equal steps
])


def schedule(epoch, lr):
    return float(lr_table[epoch])


keras.utils.set_random_seed(0)
model = keras.Sequential([
    layers.Input((8, 8, 1)),
    layers.Conv2D(32, 3, padding="same", activation="relu"),
    layers.Conv2D(64, 3, padding="same", activation="relu"),
    layers.MaxPooling2D(),
    layers.Flatten(),
    layers.Dense(128, activation="relu"),
    layers.Dropout(0.3),
    layers.Dense(10, activation="softmax"),
])
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
history = model.fit(X_train, y_train, validation_data=(X_val, y_val), epochs=EPOCHS, batch_size=32,
                    callbacks=[keras.callbacks.LearningRateScheduler(schedule)], verbose=0)

log = pd.DataFrame(history.history, index=pd.RangeIndex(1, EPOCHS + 1, name="epoch"))
print(log[["accuracy", "val_accuracy"]].iloc[::5].round(4))
log[["loss", "val_loss"]].plot(logy=True, title="digits CNN")
"""

case(
    name="keras_step_schedule_table_short",
    library="keras",
    category="index",
    needs_runtime=True,
    exception="IndexError",
    message_contains="is out of bounds for axis 0",
    diagnosis="the step schedule repeats each rate (EPOCHS - WARMUP) // 3 times, which floors: "
    "the table has fewer entries than epochs and the scheduler indexes past its end at the "
    "start of the last epoch. Round the repeat count up.",
    cells=[
        """
        import numpy as np
        import pandas as pd
        import keras
        from keras import layers
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split
        """,
        """
        digits = load_digits()
        X = (digits.images / 16.0).astype("float32")[..., None]
        y = digits.target
        X_train, X_val, y_train, y_val = train_test_split(X, y, test_size=0.2, stratify=y, random_state=0)
        EPOCHS = @N@
        print(X_train.shape, X_val.shape)
        """,
        LR_TARGET,
    ],
    target=2,
    n=130,
    small=7,
    fix={2: swap(LR_TARGET, "(EPOCHS - WARMUP) // 3),  # then three equal steps",
                 "int(np.ceil((EPOCHS - WARMUP) / 3))),  # then three equal steps, rounded up")},
)

# ---------------------------------------------------------------------------------------------
# scikit-learn

IMPORTANCE_TARGET = """
param_dist = {
    "model__n_estimators": [150, 250, 400],
    "model__max_depth": [8, 12, 16, None],
    "model__min_samples_leaf": [1, 3, 5, 10],
    "model__max_features": ["sqrt", 0.3, 0.5],
}
search = RandomizedSearchCV(pipe, param_dist, n_iter=@N@, cv=3, scoring="roc_auc", random_state=0)
search.fit(X_train, y_train)
print("best params:", search.best_params_)
print(f"cv auc {search.best_score_:.4f}  test auc {search.score(X_test, y_test):.4f}")

best = search.best_estimator_
importances = pd.Series(best.named_steps["model"].feature_importances_, index=X_train.columns)
importances.sort_values(ascending=False).head(15)
"""

case(
    name="sklearn_search_importances_raw_columns",
    library="sklearn",
    category="shape",
    needs_runtime=True,
    exception="ValueError",
    message_contains="does not match length of index",
    diagnosis="the forest inside the pipeline sees the one-hot expanded features, not the raw "
    "columns: after the search its feature_importances_ are longer than X_train.columns. Index "
    "them with the preprocessing step's get_feature_names_out().",
    cells=[
        """
        import numpy as np
        import pandas as pd
        from sklearn.compose import ColumnTransformer
        from sklearn.ensemble import RandomForestClassifier
        from sklearn.model_selection import RandomizedSearchCV, train_test_split
        from sklearn.pipeline import Pipeline
        from sklearn.preprocessing import OneHotEncoder, StandardScaler
        """,
        """
        rng = np.random.default_rng(21)
        n = 6000
        loans = pd.DataFrame({
            "income": rng.lognormal(10.8, 0.5, n),
            "loan_amount": rng.lognormal(9.5, 0.7, n),
            "term": rng.choice([36, 60], n),
            "credit_score": rng.normal(690, 60, n).clip(300, 850),
            "dti": rng.uniform(0, 45, n),
            "emp_years": rng.integers(0, 15, n),
            "purpose": rng.choice(["debt", "car", "home", "business", "medical", "education"], n),
            "home": rng.choice(["rent", "own", "mortgage"], n),
            "state": rng.choice(["CA", "TX", "NY", "FL", "IL", "PA", "OH", "GA", "NC", "MI"], n),
        })
        logit = (-2.0 + 0.9 * np.log(loans["loan_amount"] / loans["income"] * 10) - 0.012 * (loans["credit_score"] - 690)
                 + 0.03 * loans["dti"] + 0.4 * (loans["term"] == 60) + 0.6 * (loans["purpose"] == "business")
                 - 0.3 * (loans["home"] == "own"))
        loans["default"] = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
        X = loans.drop(columns="default")
        y = loans["default"]
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, stratify=y, random_state=0)
        y.mean()
        """,
        """
        num_cols = ["income", "loan_amount", "term", "credit_score", "dti", "emp_years"]
        cat_cols = ["purpose", "home", "state"]
        prep = ColumnTransformer([
            ("num", StandardScaler(), num_cols),
            ("cat", OneHotEncoder(handle_unknown="ignore"), cat_cols),
        ])
        pipe = Pipeline([("prep", prep), ("model", RandomForestClassifier(random_state=0))])
        """,
        IMPORTANCE_TARGET,
    ],
    target=3,
    n=11,
    small=1,
    fix={3: swap(IMPORTANCE_TARGET, "feature_importances_, index=X_train.columns)",
                 "feature_importances_,\n"
                 "                        index=best.named_steps[\"prep\"].get_feature_names_out())")},
)

CURVE_TARGET = """
param_range = np.logspace(-4.5, -1.5, @N@)
train_scores, val_scores = validation_curve(
    SVC(C=10.0), X, y, param_name="gamma", param_range=param_range,
    cv=StratifiedKFold(n_splits=10, shuffle=True, random_state=0), scoring="accuracy",
)

fig, ax = plt.subplots(figsize=(6, 4))
for name, scores in (("train", train_scores), ("validation", val_scores)):
    mean, std = scores.mean(axis=0), scores.std(axis=0)
    ax.semilogx(param_range, mean, marker="o", label=name)
    ax.fill_between(param_range, mean - std, mean + std, alpha=0.2)
ax.set_xlabel("gamma")
ax.set_ylabel("accuracy")
ax.legend()
best_gamma = param_range[val_scores.mean(axis=1).argmax()]
print(f"best gamma {best_gamma:.2e}: validation accuracy {val_scores.mean(axis=1).max():.4f}")
"""

case(
    name="sklearn_validation_curve_fold_axis",
    library="sklearn",
    category="shape",
    needs_runtime=True,
    exception="ValueError",
    message_contains="x and y must have same first dimension",
    diagnosis="validation_curve returns scores of shape (n_params, n_folds); averaging over "
    "axis 0 gives one value per fold, which cannot be plotted against the gammas. Average "
    "over axis 1.",
    cells=[
        """
        import numpy as np
        import matplotlib.pyplot as plt
        from sklearn.datasets import load_digits
        from sklearn.model_selection import StratifiedKFold, validation_curve
        from sklearn.svm import SVC
        """,
        """
        digits = load_digits()
        X = digits.data / 16.0
        y = digits.target
        X.shape
        """,
        CURVE_TARGET,
    ],
    target=2,
    n=25,
    small=3,
    fix={2: swap(CURVE_TARGET, "mean, std = scores.mean(axis=0), scores.std(axis=0)",
                 "mean, std = scores.mean(axis=1), scores.std(axis=1)")},
)

FOLD_TARGET = """
N_SPLITS = 5
cv = KFold(n_splits=N_SPLITS)
fold_scores = defaultdict(list)
for fold, (tr, va) in enumerate(cv.split(X, y), start=1):
    model = HistGradientBoostingClassifier(max_iter=600, learning_rate=0.03, max_leaf_nodes=63,
                                           l2_regularization=1.0, early_stopping=False, random_state=0)
    model.fit(X.iloc[tr], y.iloc[tr])
    prob = model.predict_proba(X.iloc[va])[:, 1]
    fold_scores["auc"].append(roc_auc_score(y.iloc[va], prob))
    fold_scores["avg_precision"].append(average_precision_score(y.iloc[va], prob))
    fold_scores["log_loss"].append(log_loss(y.iloc[va], prob))
    fold_scores["fraud_rate"].append(y.iloc[va].mean())
    print(f"fold {fold}: auc {fold_scores['auc'][-1]:.4f}  ap {fold_scores['avg_precision'][-1]:.4f}")

summary = pd.DataFrame(fold_scores, index=pd.RangeIndex(1, N_SPLITS + 1, name="fold"))
print(summary.round(4))
summary.agg(["mean", "std"]).round(4)
"""

case(
    name="sklearn_fraud_cv_time_ordered_folds",
    library="sklearn",
    category="data confusion",
    needs_runtime=True,
    exception="ValueError",
    message_contains="y_true contains only one label",
    diagnosis="the transactions are sorted by day and a fraud label only exists once its "
    "chargeback has arrived, so the newest transactions are all labelled 0; an unshuffled "
    "KFold puts them in the last fold, whose log loss cannot be computed from a single class. "
    "Shuffle and stratify the folds.",
    cells=[
        """
        from collections import defaultdict

        import numpy as np
        import pandas as pd
        from sklearn.ensemble import HistGradientBoostingClassifier
        from sklearn.metrics import average_precision_score, log_loss, roc_auc_score
        from sklearn.model_selection import KFold, StratifiedKFold
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)  # shared 2-core box: one OpenMP/BLAS thread is faster than two fighting
        """,
        """
        rng = np.random.default_rng(13)
        N_TX = @N@
        SNAPSHOT = 150  # days of history
        tx = pd.DataFrame({
            "day": np.sort(rng.uniform(0, SNAPSHOT, N_TX)),
            "amount": rng.lognormal(3.5, 1.1, N_TX),
            "hour": rng.integers(0, 24, N_TX),
            "card_age_days": rng.integers(1, 2000, N_TX),
            "n_tx_24h": rng.poisson(2, N_TX),
            "foreign": (rng.random(N_TX) < 0.08).astype(int),
            "merchant_risk": rng.beta(2, 8, N_TX),
        })
        logit = (-6.5 + 0.5 * np.log(tx["amount"]) + 1.2 * tx["foreign"] + 4 * tx["merchant_risk"]
                 + 0.25 * tx["n_tx_24h"] - 0.0008 * tx["card_age_days"] + 0.6 * (tx["hour"] < 6))
        fraud = rng.random(N_TX) < 1 / (1 + np.exp(-logit))
        # a transaction is known to be fraudulent once its chargeback has come in
        chargeback_day = tx["day"] + rng.uniform(35, 80, N_TX)
        tx["is_fraud"] = (fraud & (chargeback_day < SNAPSHOT)).astype(int)

        features = ["amount", "hour", "card_age_days", "n_tx_24h", "foreign", "merchant_risk"]
        X, y = tx[features], tx["is_fraud"]
        print(f"{len(tx)} transactions, fraud rate {y.mean():.4f}")
        """,
        FOLD_TARGET,
    ],
    target=2,
    n=300_000,
    small=5000,
    fix={2: swap(FOLD_TARGET, "cv = KFold(n_splits=N_SPLITS)",
                 "cv = StratifiedKFold(n_splits=N_SPLITS, shuffle=True, random_state=0)")},
)

# ---------------------------------------------------------------------------------------------
# pandas

BACKTEST_TARGET = """
HOLDOUT = 26
results = []
for (store, dept), g in tqdm(sales.groupby(["store", "dept"]), total=N_STORES * len(DEPTS)):
    y = g.set_index("week")["units"].astype(float)
    for cutoff in y.index[-HOLDOUT:]:
        hist = y[y.index < cutoff]
        seasonal_naive = hist.iloc[-52]
        level = hist.ewm(alpha=0.3).mean().iloc[-1]
        forecast = 0.5 * seasonal_naive + 0.5 * level
        actual = y[cutoff]
        results.append({"store": store, "dept": dept, "week": cutoff,
                        "forecast": forecast, "ape": abs(forecast - actual) / actual})

backtest = pd.DataFrame(results)
mape = backtest.pivot(index="store", columns="week", values="ape")
print(mape.mean(axis=1).sort_values().tail())
mape.T.mean(axis=1).plot(title="MAPE by week")
"""

case(
    name="pandas_store_backtest_pivot_by_store",
    library="pandas",
    category="key",
    needs_runtime=True,
    exception="ValueError",
    message_contains="Index contains duplicate entries",
    diagnosis="the backtest loops over store and department, so every (store, week) pair has "
    "one row per department; pivoting the collected results on store and week alone finds "
    "duplicates. Aggregate with pivot_table (or keep the department in the index).",
    cells=[
        """
        import numpy as np
        import pandas as pd
        from tqdm import tqdm
        """,
        """
        rng = np.random.default_rng(4)
        N_STORES = @N@
        DEPTS = ["grocery", "household", "electronics", "apparel"]
        weeks = pd.date_range("2021-01-03", periods=156, freq="W-SUN")
        sales = pd.MultiIndex.from_product([range(N_STORES), DEPTS, weeks], names=["store", "dept", "week"]).to_frame(index=False)
        n_series = N_STORES * len(DEPTS)
        t = np.tile(np.arange(len(weeks)), n_series)
        level = rng.gamma(5, 40, n_series).repeat(len(weeks))
        phase = rng.uniform(0, 2 * np.pi, n_series).repeat(len(weeks))
        sales["units"] = rng.poisson(level * (1 + 0.25 * np.sin(2 * np.pi * t / 52 + phase))) + 1
        sales.head()
        """,
        BACKTEST_TARGET,
    ],
    target=2,
    n=2200,
    small=2,
    fix={2: swap(BACKTEST_TARGET, 'mape = backtest.pivot(index="store", columns="week", values="ape")',
                 'mape = backtest.pivot_table(index="store", columns="week", values="ape", aggfunc="mean")')},
)

TIER_TARGET = """
scores = {}
for cid, g in orders.groupby("customer_id"):
    if len(g) < 3:
        continue  # too few orders to score
    monthly = g.set_index("date")["amount"].resample("MS").sum()
    trend = np.polyfit(np.arange(len(monthly)), monthly.to_numpy(), 1)[0] if len(monthly) > 1 else 0.0
    gaps = g["date"].sort_values().diff().dt.days.dropna()
    scores[cid] = {
        "recency": (SNAPSHOT - g["date"].max()).days,
        "frequency": len(g),
        "monetary": g["amount"].sum(),
        "trend": trend,
        "regularity": gaps.std() / gaps.mean() if gaps.mean() > 0 else np.nan,
    }

rfm = pd.DataFrame.from_dict(scores, orient="index")
ranks = rfm.rank(pct=True)
rfm["score"] = (1 - ranks["recency"]) + ranks["frequency"] + ranks["monetary"] + 0.5 * ranks["trend"]
customers = customers.join(rfm, on="customer_id")
customers["tier"] = pd.cut(customers["score"], bins=[-np.inf, 1.3, 2.2, np.inf], labels=["bronze", "silver", "gold"])
customers["tier"] = customers["tier"].fillna("unscored")
customers.groupby(["region", "tier"], observed=True)["monetary"].agg(["size", "median"]).unstack()
"""

case(
    name="pandas_rfm_tiers_fill_unscored",
    library="pandas",
    category="type",
    needs_runtime=True,
    exception="TypeError",
    message_contains="Cannot setitem on a Categorical with a new category",
    diagnosis="pd.cut makes the tier column categorical with three categories; customers the "
    "scoring loop skipped have no score, and filling their tier with 'unscored' after the loop "
    "needs that category added first.",
    cells=[
        """
        import numpy as np
        import pandas as pd
        """,
        """
        rng = np.random.default_rng(17)
        N_CUSTOMERS = @N@
        n_orders = rng.negative_binomial(2, 0.25, N_CUSTOMERS)
        orders = pd.DataFrame({"customer_id": np.repeat(np.arange(N_CUSTOMERS), n_orders)})
        orders["date"] = pd.Timestamp("2023-01-01") + pd.to_timedelta(rng.integers(0, 730, len(orders)), unit="D")
        orders["amount"] = rng.gamma(2.0, 35.0, len(orders)).round(2)
        customers = pd.DataFrame({
            "customer_id": np.arange(N_CUSTOMERS),
            "region": rng.choice(["north", "south", "east", "west"], N_CUSTOMERS),
        })
        SNAPSHOT = pd.Timestamp("2025-01-01")
        print(len(orders), "orders")
        """,
        TIER_TARGET,
    ],
    target=2,
    n=35000,
    small=200,
    fix={2: swap(TIER_TARGET, 'customers["tier"] = customers["tier"].fillna("unscored")',
                 'customers["tier"] = customers["tier"].cat.add_categories("unscored").fillna("unscored")')},
)

# ---------------------------------------------------------------------------------------------
# statsmodels

WALK_TARGET = """
preds, windows = [], []
for start in range(START, len(load), H):
    train = load.iloc[:start]
    nxt = load.iloc[start:start + H]
    X_tr = sm.add_constant(train[FEATURES])
    glm = sm.GLM(train["mw"], X_tr, family=sm.families.Poisson()).fit()
    X_next = sm.add_constant(nxt[FEATURES])
    pred = glm.predict(X_next)
    preds.append(pred.to_numpy())
    windows.append({"day": nxt.index[0].normalize(), "temp_effect": glm.params["temp"],
                    "weekly_amplitude": np.hypot(glm.params["week_sin"], glm.params["week_cos"]),
                    "mape": (np.abs(pred - nxt["mw"]) / nxt["mw"]).mean()})

backtest = pd.DataFrame({"actual": load["mw"].to_numpy()[START:], "forecast": np.concatenate(preds)},
                        index=load.index[START:])
print(f"walk-forward MAPE {(backtest.eval('abs(forecast - actual) / actual')).mean():.4f}")
pd.DataFrame(windows).set_index("day")[["temp_effect", "weekly_amplitude", "mape"]].describe()
"""

case(
    name="statsmodels_day_ahead_refit_last_hour",
    library="statsmodels",
    category="shape",
    needs_runtime=True,
    exception="ValueError",
    message_contains="not aligned",
    diagnosis="the hourly index runs to midnight inclusive, so the walk-forward loop's last "
    "window holds a single hour; sm.add_constant sees every column of one row as constant and "
    "adds no intercept, and the GLM's predict gets one column fewer than its parameters. Force "
    "the constant with has_constant='add'.",
    cells=[
        """
        import numpy as np
        import pandas as pd
        import statsmodels.api as sm
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)  # hundreds of small fits: one BLAS thread is faster than two fighting
        """,
        """
        rng = np.random.default_rng(9)
        N_DAYS = @N@
        start = pd.Timestamp("2023-01-01")
        idx = pd.date_range(start, start + pd.Timedelta(days=N_DAYS), freq="h")
        doy, hour = idx.day_of_year.to_numpy(), idx.hour.to_numpy()
        week_phase = 2 * np.pi * (idx.day_of_week.to_numpy() * 24 + hour) / 168
        temp = 12 + 9 * np.sin(2 * np.pi * (doy - 110) / 365) + 4 * np.sin(2 * np.pi * (hour - 9) / 24) + rng.normal(0, 2, len(idx))
        mu = np.exp(6.2 + 0.012 * (temp - 15) ** 2 / 10 + 0.25 * np.sin(2 * np.pi * (hour - 14) / 24)
                    + 0.1 * np.cos(week_phase) - 0.05 * np.sin(week_phase))
        load = pd.DataFrame({"temp": temp, "temp_sq": (temp - 15) ** 2, "week_sin": np.sin(week_phase),
                             "week_cos": np.cos(week_phase), "mw": rng.poisson(mu)}, index=idx)
        load = load.join(pd.get_dummies(pd.Series(hour, index=idx), prefix="h", drop_first=True, dtype=float))
        FEATURES = [c for c in load.columns if c != "mw"]
        START, H = 24 * 120, 24  # four months of history, then refit every day for the next 24 hours
        print(load.shape)
        """,
        WALK_TARGET,
    ],
    target=2,
    n=950,
    small=123,
    fix={2: swap(WALK_TARGET, "X_next = sm.add_constant(nxt[FEATURES])",
                 'X_next = sm.add_constant(nxt[FEATURES], has_constant="add")')},
)

# ---------------------------------------------------------------------------------------------
# NumPy

MAXT_TARGET = """
def welch_t(x, g):
    a, b = x[g == 0], x[g == 1]
    return (b.mean(axis=0) - a.mean(axis=0)) / np.sqrt(a.var(axis=0, ddof=1) / len(a) + b.var(axis=0, ddof=1) / len(b))


t_obs = welch_t(expr, group)
null_max = np.empty(N_PERM)
for b in range(N_PERM):
    null_max[b] = np.abs(welch_t(expr, rng.permutation(group))).max()
    if (b + 1) % 1000 == 0:
        print(f"{b + 1} permutations, 95th percentile of max |t| so far {np.quantile(null_max[:b + 1], 0.95):.3f}")

# single-step max-T adjusted p-values (Westfall-Young)
p_adj = (1 + (null_max[:, None] >= np.abs(t_obs)).sum(axis=0)) / (N_PERM + 1)
hits = gene_names[p_adj < 0.05]
print(f"{len(hits)} genes significant after max-T correction:", ", ".join(sorted(hits)[:10]))
"""

case(
    name="numpy_maxt_permutation_gene_names_list",
    library="numpy",
    category="type",
    needs_runtime=True,
    exception="TypeError",
    message_contains="only integer scalar arrays can be converted to a scalar index",
    diagnosis="gene_names is a Python list: after the permutation loop, selecting the "
    "significant genes with a boolean array fails. Make it a NumPy array first.",
    cells=[
        """
        import numpy as np
        """,
        """
        rng = np.random.default_rng(2024)
        n_samples, n_genes = 120, 5000
        expr = rng.normal(size=(n_samples, n_genes))
        group = np.repeat([0, 1], n_samples // 2)
        expr[group == 1, :40] += 0.9  # the first 40 genes are differentially expressed
        gene_names = [f"GENE{i:05d}" for i in range(n_genes)]
        N_PERM = @N@
        """,
        MAXT_TARGET,
    ],
    target=2,
    n=7500,
    small=200,
    fix={2: swap(MAXT_TARGET, "hits = gene_names[p_adj < 0.05]", "hits = np.array(gene_names)[p_adj < 0.05]")},
)


def main() -> None:
    args = sys.argv[1:]
    small = bool(args) and args[0] == "--small"
    out = Path(args[1]) if small else OUT
    seconds = json.loads(SECONDS_FILE.read_text()) if SECONDS_FILE.exists() and not small else {}
    names = [c.name for c in CASES]
    if len(set(names)) != len(names):
        raise SystemExit("duplicate case names")
    out.mkdir(parents=True, exist_ok=True)
    for c in CASES:
        write_case(c, out / c.name, small)
    manifest = [entry(c, seconds) for c in CASES]
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"{len(CASES)} cases under {out}")


if __name__ == "__main__":
    main()
