"""Generate bench/long-cells/unseen7/: twelve more long-cell crash/fix pairs (torch 3, Keras 2,
scikit-learn 3, pandas 2, statsmodels 1, NumPy 1), in the format and with the writing conventions
of build.py. The set was written and verified before crane ran on it, by someone who had not read
crane's code. Not split: the whole folder is measured, by its totals only.

    .venv/bin/python bench/long-cells/build_unseen7.py               # write unseen7/
    .venv/bin/python bench/long-cells/build_unseen7.py --small DIR   # tiny sizes under DIR, to check crashes fast

The cases use build.py's `Case`, `code`, `entry` and `write_case`. Measured run times of the
targets are kept in `unseen7/target_seconds.json` (verify.py --record) and written into the
manifest when that file exists. Output is deterministic: same definitions, same bytes. The Keras
notebooks set TensorFlow's thread counts in the environment before importing Keras; the others
limit their numeric library to one thread in an early cell.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from build import Case, code, entry, write_case  # noqa: E402

OUT = HERE / "unseen7"
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

TORCH_ONECYCLE_TARGET = code('''
    EPOCHS = @N@
    model = make_mlp(N_FEATURES, N_CLASSES)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
    steps_per_epoch = len(train_ds) // BATCH
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, epochs=EPOCHS,
                                                steps_per_epoch=steps_per_epoch)
    loss_fn = nn.CrossEntropyLoss()
    Xv, yv = torch.from_numpy(X_va), torch.from_numpy(y_va)

    history = {"loss": [], "val_acc": [], "lr": []}
    for epoch in range(EPOCHS):
        model.train()
        total = 0.0
        for xb, yb in loader:
            opt.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item() * len(xb)
        model.eval()
        with torch.no_grad():
            acc = (model(Xv).argmax(1) == yv).float().mean().item()
        history["loss"].append(total / len(train_ds))
        history["val_acc"].append(acc)
        history["lr"].append(sched.get_last_lr()[0])

    fig, axes = plt.subplots(1, 3, figsize=(12, 3))
    for ax, key in zip(axes, ["loss", "val_acc", "lr"]):
        ax.plot(range(1, EPOCHS + 1), history[key])
        ax.set_title(key)
    best = int(np.argmax(history["val_acc"]))
    print(f"best val acc {history['val_acc'][best]:.3f} at epoch {best + 1}, lr then {history['lr'][best]:.2e}")
''')

case(
    name="torch_onecycle_steps_per_epoch",
    library="torch",
    category="index",
    needs_runtime=False,
    exception="ValueError",
    message_contains="Tried to step",
    diagnosis="OneCycleLR is given len(train_ds) // BATCH steps per epoch, but the DataLoader keeps "
              "the last partial batch, so each epoch steps once more than planned and the scheduler "
              "runs out of steps during the last epoch.",
    cells=[
        '''
        import numpy as np
        import torch
        from torch import nn
        from torch.utils.data import DataLoader, TensorDataset
        from sklearn.datasets import make_classification
        from sklearn.model_selection import train_test_split
        import matplotlib.pyplot as plt

        torch.set_num_threads(1)
        torch.manual_seed(0)
        ''',
        '''
        N_FEATURES, N_CLASSES = 40, 4
        X, y = make_classification(n_samples=40000, n_features=N_FEATURES, n_informative=24,
                                   n_classes=N_CLASSES, n_clusters_per_class=2, class_sep=0.8,
                                   random_state=7)
        X = ((X - X.mean(0)) / X.std(0)).astype(np.float32)
        X_tr, X_va, y_tr, y_va = train_test_split(X, y, test_size=0.25, random_state=7, stratify=y)
        train_ds = TensorDataset(torch.from_numpy(X_tr), torch.from_numpy(y_tr))
        BATCH = 64
        loader = DataLoader(train_ds, batch_size=BATCH, shuffle=True,
                            generator=torch.Generator().manual_seed(0))
        print(len(train_ds), "training rows,", len(loader), "batches per epoch")
        ''',
        '''
        def make_mlp(n_in, n_out, width=192):
            return nn.Sequential(
                nn.Linear(n_in, width), nn.ReLU(), nn.Dropout(0.2),
                nn.Linear(width, width), nn.ReLU(),
                nn.Linear(width, n_out),
            )
        ''',
        TORCH_ONECYCLE_TARGET,
    ],
    target=3,
    n=58,
    small=2,
    fix={3: edit(TORCH_ONECYCLE_TARGET, "steps_per_epoch = len(train_ds) // BATCH",
                 "steps_per_epoch = len(loader)")},
)

TORCH_DTYPE_TARGET = code('''
    torch.manual_seed(1)
    model = SignalNet(n_classes=3)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    EPOCHS = @N@
    for epoch in range(EPOCHS):
        train_loss = train_epoch(model, loader, opt)
        if epoch % 5 == 0 or epoch == EPOCHS - 1:
            print(f"epoch {epoch:3d}  loss {train_loss:.4f}")

    model.eval()
    with torch.no_grad():
        logits = model(torch.from_numpy(X_test).unsqueeze(1))
    test_acc = (logits.argmax(1).numpy() == y_test).mean()
    print(f"test accuracy {test_acc:.3f}")
''')

case(
    name="torch_signal_test_float64",
    library="torch",
    category="type",
    needs_runtime=False,
    exception="RuntimeError",
    message_contains="Input type (double) and bias type (float) should be the same",
    diagnosis="The training signals were cast to float32 after standardising but the test signals "
              "were not, so the final evaluation feeds a float64 tensor to the float32 Conv1d.",
    cells=[
        '''
        import numpy as np
        import torch
        from torch import nn
        from torch.utils.data import DataLoader, TensorDataset

        torch.set_num_threads(1)
        ''',
        '''
        rng = np.random.default_rng(3)
        t = np.linspace(0.0, 1.0, 96)

        def make_signals(n):
            kind = rng.integers(0, 3, n)
            freq = np.where(kind == 0, 3.0, np.where(kind == 1, 5.0, 7.0)) + rng.normal(0, 0.6, n)
            phase = rng.uniform(0, 2 * np.pi, n)
            x = np.sin(2 * np.pi * freq[:, None] * t + phase[:, None])
            x += rng.normal(0, 0.9, x.shape)
            return x, kind

        X_train, y_train = make_signals(8000)
        X_test, y_test = make_signals(1000)
        mu, sd = X_train.mean(), X_train.std()
        X_train = ((X_train - mu) / sd).astype(np.float32)
        X_test = (X_test - mu) / sd
        train_ds = TensorDataset(torch.from_numpy(X_train).unsqueeze(1), torch.from_numpy(y_train))
        loader = DataLoader(train_ds, batch_size=64, shuffle=True,
                            generator=torch.Generator().manual_seed(3))
        ''',
        '''
        class SignalNet(nn.Module):
            def __init__(self, n_classes):
                super().__init__()
                self.features = nn.Sequential(
                    nn.Conv1d(1, 16, 7, padding=3), nn.ReLU(), nn.MaxPool1d(2),
                    nn.Conv1d(16, 32, 5, padding=2), nn.ReLU(), nn.AdaptiveAvgPool1d(8),
                )
                self.head = nn.Linear(32 * 8, n_classes)

            def forward(self, x):
                return self.head(self.features(x).flatten(1))


        def train_epoch(model, loader, opt):
            model.train()
            loss_fn = nn.CrossEntropyLoss()
            total, count = 0.0, 0
            for xb, yb in loader:
                opt.zero_grad()
                loss = loss_fn(model(xb), yb)
                loss.backward()
                opt.step()
                total += loss.item() * len(xb)
                count += len(xb)
            return total / count
        ''',
        TORCH_DTYPE_TARGET,
    ],
    target=3,
    n=78,
    small=1,
    fix={3: edit(TORCH_DTYPE_TARGET, "torch.from_numpy(X_test).unsqueeze(1)",
                 "torch.from_numpy(X_test).float().unsqueeze(1)")},
)

TORCH_BCE_TARGET = code('''
    ENSEMBLE, EPOCHS = 4, @N@
    members = []
    for k in range(ENSEMBLE):
        torch.manual_seed(100 + k)
        net = RiskNet(X_tr.shape[1])
        opt = torch.optim.Adam(net.parameters(), lr=1e-3)
        loss_fn = nn.BCEWithLogitsLoss()
        for epoch in range(EPOCHS):
            net.train()
            for xb, yb in loader:
                opt.zero_grad()
                loss = loss_fn(net(xb).squeeze(1), yb)
                loss.backward()
                opt.step()
        net.eval()
        members.append(net)
        print(f"member {k} trained, last batch loss {loss.item():.4f}")

    with torch.no_grad():
        scores = torch.stack([net(X_te_t).squeeze(1) for net in members]).mean(0)
        test_nll = F.binary_cross_entropy(scores, y_te_t).item()
    test_acc = ((scores > 0.5).float() == y_te_t).float().mean().item()
    print(f"ensemble test log-loss {test_nll:.4f}, accuracy {test_acc:.3f}")
''')

case(
    name="torch_ensemble_bce_on_logits",
    library="torch",
    category="value",
    needs_runtime=True,
    exception="RuntimeError",
    message_contains="all elements of input should be between 0 and 1",
    diagnosis="The nets were trained with BCEWithLogitsLoss and output logits, but the ensemble's "
              "averaged logits are passed to binary_cross_entropy as if they were probabilities, "
              "and many of them lie outside [0, 1].",
    cells=[
        '''
        import numpy as np
        import torch
        from torch import nn
        import torch.nn.functional as F
        from torch.utils.data import DataLoader, TensorDataset
        from sklearn.datasets import make_classification
        from sklearn.model_selection import train_test_split
        from sklearn.preprocessing import StandardScaler

        torch.set_num_threads(1)
        ''',
        '''
        X, y = make_classification(n_samples=12000, n_features=30, n_informative=12, n_redundant=6,
                                   weights=[0.7, 0.3], flip_y=0.03, random_state=21)
        X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.2, random_state=21, stratify=y)
        scaler = StandardScaler().fit(X_tr)
        X_tr = scaler.transform(X_tr).astype(np.float32)
        X_te = scaler.transform(X_te).astype(np.float32)
        loader = DataLoader(TensorDataset(torch.from_numpy(X_tr), torch.from_numpy(y_tr).float()),
                            batch_size=128, shuffle=True, generator=torch.Generator().manual_seed(21))
        X_te_t, y_te_t = torch.from_numpy(X_te), torch.from_numpy(y_te).float()


        class RiskNet(nn.Module):
            def __init__(self, n_in):
                super().__init__()
                self.body = nn.Sequential(nn.Linear(n_in, 128), nn.ReLU(), nn.Dropout(0.1),
                                          nn.Linear(128, 64), nn.ReLU())
                self.out = nn.Linear(64, 1)

            def forward(self, x):
                return self.out(self.body(x))
        ''',
        TORCH_BCE_TARGET,
    ],
    target=2,
    n=95,
    small=1,
    fix={2: edit(TORCH_BCE_TARGET,
                 "scores = torch.stack([net(X_te_t).squeeze(1) for net in members]).mean(0)",
                 "scores = torch.stack([torch.sigmoid(net(X_te_t).squeeze(1)) for net in members]).mean(0)")},
)

# ---------------------------------------------------------------------------------------------
# Keras

KERAS_HEADER = '''
    import os
    os.environ["KERAS_BACKEND"] = "tensorflow"
    os.environ["TF_NUM_INTRAOP_THREADS"] = "1"
    os.environ["TF_NUM_INTEROP_THREADS"] = "1"
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"

    import numpy as np
    import keras
    from keras import layers
    import matplotlib.pyplot as plt
'''

KERAS_ACC_TARGET = code('''
    keras.utils.set_random_seed(0)
    model = keras.Sequential([
        keras.Input(shape=(8, 8, 1)),
        layers.Conv2D(32, 3, padding="same", activation="relu"),
        layers.Conv2D(32, 3, padding="same", activation="relu"),
        layers.MaxPooling2D(),
        layers.Conv2D(64, 3, padding="same", activation="relu"),
        layers.GlobalAveragePooling2D(),
        layers.Dropout(0.3),
        layers.Dense(10, activation="softmax"),
    ])
    model.compile(optimizer=keras.optimizers.Adam(1e-3),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    history = model.fit(X_train, y_train, validation_data=(X_val, y_val),
                        epochs=@N@, batch_size=32, verbose=0)

    curves = history.history
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.plot(curves["acc"], label="train")
    ax.plot(curves["val_acc"], label="validation")
    ax.legend()
    best = int(np.argmax(curves["val_acc"]))
    print(f"best validation accuracy {curves['val_acc'][best]:.3f} after {best + 1} of {len(curves['val_acc'])} epochs")
''')

case(
    name="keras_digits_history_acc_key",
    library="keras",
    category="key",
    needs_runtime=False,
    exception="KeyError",
    message_contains="acc",
    diagnosis="The model is compiled with metrics=['accuracy'], so Keras 3 records the history under "
              "'accuracy' and 'val_accuracy'; the plot after training reads the old 'acc' name.",
    cells=[
        KERAS_HEADER,
        '''
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split

        digits = load_digits()
        X = (digits.images / 16.0).astype("float32")[..., None]
        y = digits.target
        X_train, X_val, y_train, y_val = train_test_split(X, y, test_size=0.25, random_state=0,
                                                          stratify=y)
        print(X_train.shape, X_val.shape)
        ''',
        KERAS_ACC_TARGET,
    ],
    target=2,
    n=110,
    small=1,
    fix={2: edit(edit(edit(KERAS_ACC_TARGET,
                            'ax.plot(curves["acc"], label="train")',
                            'ax.plot(curves["accuracy"], label="train")'),
                       'ax.plot(curves["val_acc"], label="validation")',
                       'ax.plot(curves["val_accuracy"], label="validation")'),
                  '''best = int(np.argmax(curves["val_acc"]))
print(f"best validation accuracy {curves['val_acc'][best]:.3f} after {best + 1} of {len(curves['val_acc'])} epochs")''',
                  '''best = int(np.argmax(curves["val_accuracy"]))
print(f"best validation accuracy {curves['val_accuracy'][best]:.3f} after {best + 1} of {len(curves['val_accuracy'])} epochs")''')},
)

KERAS_WIDTH_TARGET = code('''
    keras.utils.set_random_seed(5)
    model = keras.Sequential([
        keras.Input(shape=(X_train.shape[1],)),
        layers.Dense(256, activation="relu"),
        layers.Dense(256, activation="relu"),
        layers.Dense(128, activation="relu"),
        layers.Dense(1),
    ])
    model.compile(optimizer=keras.optimizers.Adam(5e-4), loss="mse", metrics=["mae"])
    history = model.fit(X_train, y_train, validation_split=0.15, epochs=@N@, batch_size=64, verbose=0)
    print(f"final val mae {history.history['val_mae'][-1]:.4f}")

    X_test = ((test_df.drop(columns=["log_price"]) - feat_mean) / feat_std).to_numpy("float32")
    pred = model.predict(X_test, batch_size=1024, verbose=0).ravel()
    test_mae = np.abs(pred - test_df["log_price"].to_numpy()).mean()
    print(f"test mae {test_mae:.4f}")
''')

case(
    name="keras_listing_test_extra_column",
    library="keras",
    category="shape",
    needs_runtime=False,
    exception="ValueError",
    message_contains="expected axis -1 of input shape to have value",
    diagnosis="The training matrix is built from the FEATURES columns only, but the test matrix drops "
              "just the target and keeps the listing_id column, so the evaluation after training "
              "gives the network one column too many.",
    cells=[
        KERAS_HEADER,
        '''
        import pandas as pd

        rng = np.random.default_rng(42)
        n = 14000
        listings = pd.DataFrame({
            "listing_id": np.arange(100000, 100000 + n),
            "area": rng.gamma(4.0, 20.0, n),
            "rooms": rng.integers(1, 7, n),
            "age": rng.uniform(0, 80, n),
            "dist_center": rng.exponential(5.0, n),
            "floor": rng.integers(0, 20, n),
            "has_lift": rng.integers(0, 2, n),
            "has_garden": rng.integers(0, 2, n),
            "noise": rng.normal(0, 1, n),
        })
        listings["log_price"] = (np.log(listings["area"]) * 0.9 + 0.05 * listings["rooms"]
                                 - 0.004 * listings["age"] - 0.06 * np.sqrt(listings["dist_center"])
                                 + 0.1 * listings["has_lift"] * (listings["floor"] > 3)
                                 + 0.08 * listings["has_garden"] + rng.normal(0, 0.15, n))
        FEATURES = ["area", "rooms", "age", "dist_center", "floor", "has_lift", "has_garden", "noise"]
        train_df, test_df = listings.iloc[:12000], listings.iloc[12000:]
        feat_mean, feat_std = train_df[FEATURES].mean(), train_df[FEATURES].std()
        X_train = ((train_df[FEATURES] - feat_mean) / feat_std).to_numpy("float32")
        y_train = train_df["log_price"].to_numpy("float32")
        print(X_train.shape)
        ''',
        KERAS_WIDTH_TARGET,
    ],
    target=2,
    n=72,
    small=1,
    fix={2: edit(KERAS_WIDTH_TARGET, '(test_df.drop(columns=["log_price"]) - feat_mean)',
                 '(test_df[FEATURES] - feat_mean)')},
)

# ---------------------------------------------------------------------------------------------
# scikit-learn

SK_AUC_TARGET = code('''
    param_dist = {
        "svc__C": loguniform(1e-1, 1e3),
        "svc__gamma": loguniform(1e-4, 1e-1),
    }
    pipe = make_pipeline(StandardScaler(), PCA(n_components=40, random_state=0),
                         SVC(probability=True, random_state=0))
    search = RandomizedSearchCV(pipe, param_dist, n_iter=@N@, cv=StratifiedKFold(5, shuffle=True, random_state=0),
                                scoring="accuracy", random_state=0)
    search.fit(X_train, y_train)
    print("best", search.best_params_, f"cv accuracy {search.best_score_:.3f}")

    best = search.best_estimator_
    test_auc = roc_auc_score(y_test, best.predict(X_test), multi_class="ovr")
    print(f"test macro one-vs-rest AUC {test_auc:.4f}")
''')

case(
    name="sklearn_digits_auc_from_labels",
    library="scikit-learn",
    category="api",
    needs_runtime=False,
    exception="ValueError",
    message_contains="needs to be of shape `(n_samples, n_classes)`",
    diagnosis="After the search, the one-vs-rest AUC of a ten-class problem is given the predicted "
              "labels instead of the (n_samples, n_classes) probabilities from predict_proba.",
    cells=[
        '''
        import numpy as np
        from threadpoolctl import threadpool_limits
        from scipy.stats import loguniform
        from sklearn.datasets import load_digits
        from sklearn.decomposition import PCA
        from sklearn.metrics import roc_auc_score
        from sklearn.model_selection import RandomizedSearchCV, StratifiedKFold, train_test_split
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler
        from sklearn.svm import SVC

        threadpool_limits(1)
        ''',
        '''
        X, y = load_digits(return_X_y=True)
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=1,
                                                            stratify=y)
        print(X_train.shape, X_test.shape)
        ''',
        SK_AUC_TARGET,
    ],
    target=2,
    n=52,
    small=1,
    fix={2: edit(SK_AUC_TARGET, "roc_auc_score(y_test, best.predict(X_test), multi_class=\"ovr\")",
                 "roc_auc_score(y_test, best.predict_proba(X_test), multi_class=\"ovr\")")},
)

SK_PCA_TARGET = code('''
    COMPONENTS = [5, 10, 15, 20, 30, 40, 50, 60, 70]
    folds = RepeatedStratifiedKFold(n_splits=5, n_repeats=@N@, random_state=0)
    results = {}
    for k in COMPONENTS:
        scores = []
        for train_idx, val_idx in folds.split(X, y):
            model = make_pipeline(StandardScaler(), PCA(n_components=k, svd_solver="full"),
                                  LogisticRegression(C=0.5, max_iter=2000))
            model.fit(X[train_idx], y[train_idx])
            scores.append(model.score(X[val_idx], y[val_idx]))
        results[k] = scores
        print(f"{k:3d} components: {np.mean(scores):.4f}")

    table = pd.DataFrame({k: {"mean": np.mean(s), "std": np.std(s), "folds": len(s)} for k, s in results.items()}).T
    print(table)
    print("smallest within 0.5% of best:", table.index[table["mean"] >= table["mean"].max() - 0.005][0])
''')

case(
    name="sklearn_digits_pca_components_sweep",
    library="scikit-learn",
    category="value",
    needs_runtime=False,
    exception="ValueError",
    message_contains="must be between 0 and min(n_samples, n_features)=64",
    diagnosis="The digits images have 64 pixel features, but the last candidate of the sweep asks "
              "PCA for 70 components, so the first fit of the last candidate fails.",
    cells=[
        '''
        import numpy as np
        import pandas as pd
        from threadpoolctl import threadpool_limits
        from sklearn.datasets import load_digits
        from sklearn.decomposition import PCA
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import RepeatedStratifiedKFold
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        threadpool_limits(1)
        ''',
        '''
        X, y = load_digits(return_X_y=True)
        print(X.shape, np.bincount(y))
        ''',
        SK_PCA_TARGET,
    ],
    target=2,
    n=35,
    small=1,
    fix={2: edit(SK_PCA_TARGET, "COMPONENTS = [5, 10, 15, 20, 30, 40, 50, 60, 70]",
                 "COMPONENTS = [5, 10, 15, 20, 30, 40, 50, 60, 64]")},
)

SK_CHURN_TARGET = code('''
    pre = ColumnTransformer([
        ("cat", OneHotEncoder(), CATEGORICAL),
        ("num", StandardScaler(), NUMERIC),
    ])
    pipe = Pipeline([("pre", pre), ("gb", GradientBoostingClassifier(random_state=0))])
    grid = {
        "gb__n_estimators": [@N@],
        "gb__learning_rate": [0.05, 0.1],
        "gb__max_depth": [2, 3],
    }
    search = GridSearchCV(pipe, grid, cv=StratifiedKFold(4, shuffle=True, random_state=0),
                          scoring="roc_auc")
    search.fit(customers[CATEGORICAL + NUMERIC], customers["churned"])
    print("best", search.best_params_, f"cv auc {search.best_score_:.4f}")

    new_batch["churn_prob"] = search.predict_proba(new_batch[CATEGORICAL + NUMERIC])[:, 1]
    print(new_batch.groupby("plan")["churn_prob"].mean().round(3))
''')

case(
    name="sklearn_churn_new_plan_category",
    library="scikit-learn",
    category="value",
    needs_runtime=True,
    exception="ValueError",
    message_contains="Found unknown categories",
    diagnosis="The new batch of customers to score contains a plan that never occurs in the training "
              "data, and the one-hot encoder was left at handle_unknown='error', so scoring after the "
              "grid search fails.",
    cells=[
        '''
        import numpy as np
        import pandas as pd
        from threadpoolctl import threadpool_limits
        from sklearn.compose import ColumnTransformer
        from sklearn.ensemble import GradientBoostingClassifier
        from sklearn.model_selection import GridSearchCV, StratifiedKFold
        from sklearn.pipeline import Pipeline
        from sklearn.preprocessing import OneHotEncoder, StandardScaler

        threadpool_limits(1)
        ''',
        '''
        rng = np.random.default_rng(8)

        def make_customers(n, plans, plan_p):
            df = pd.DataFrame({
                "plan": rng.choice(plans, n, p=plan_p),
                "region": rng.choice(["north", "south", "east", "west"], n),
                "tenure_months": rng.integers(1, 72, n),
                "monthly_fee": rng.gamma(3.0, 12.0, n).round(2),
                "support_calls": rng.poisson(1.5, n),
                "usage_gb": rng.lognormal(2.0, 0.8, n),
            })
            logit = (-1.0 + 0.35 * df["support_calls"] - 0.03 * df["tenure_months"]
                     + 0.01 * df["monthly_fee"] + 0.4 * (df["region"] == "south")
                     - 0.5 * (df["plan"] == "pro"))
            df["churned"] = (rng.uniform(size=n) < 1 / (1 + np.exp(-logit))).astype(int)
            return df

        customers = make_customers(5000, ["basic", "plus", "pro"], [0.5, 0.3, 0.2])
        new_batch = make_customers(800, ["basic", "plus", "pro", "family"], [0.4, 0.25, 0.2, 0.15])
        CATEGORICAL = ["plan", "region"]
        NUMERIC = ["tenure_months", "monthly_fee", "support_calls", "usage_gb"]
        print(customers["churned"].mean().round(3), new_batch["plan"].value_counts().to_dict())
        ''',
        SK_CHURN_TARGET,
    ],
    target=2,
    n=720,
    small=5,
    fix={2: edit(SK_CHURN_TARGET, '("cat", OneHotEncoder(), CATEGORICAL)',
                 '("cat", OneHotEncoder(handle_unknown="ignore"), CATEGORICAL)')},
)

# ---------------------------------------------------------------------------------------------
# pandas

PD_MONTH_TARGET = code('''
    monthly = []
    for m in range(1, 13):
        start = pd.Timestamp(2023, m, 1)
        end = pd.Timestamp(2023, m + 1, 1)
        window = tx[(tx["ts"] >= start) & (tx["ts"] < end)]
        feats = window.groupby("customer").apply(customer_features)
        feats["month"] = m
        monthly.append(feats.reset_index())
        print(f"{start:%b}: {len(window):6d} transactions, {len(feats):5d} active customers")

    panel = pd.concat(monthly, ignore_index=True)
    spend = panel.pivot_table(index="customer", columns="month", values="spend", fill_value=0.0)
    active = (spend > 0).sum(axis=1)
    print("customers active all 12 months:", int((active == 12).sum()))
    print(spend.mean().round(2))
''')

case(
    name="pandas_monthly_features_december_end",
    library="pandas",
    category="value",
    needs_runtime=False,
    exception="ValueError",
    message_contains="month must be in 1..12",
    diagnosis="Each month's window ends at pd.Timestamp(2023, m + 1, 1), which for December asks "
              "for month 13, so the last iteration fails after eleven months of feature work.",
    cells=[
        '''
        import numpy as np
        import pandas as pd
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
        ''',
        '''
        rng = np.random.default_rng(12)
        n_customers, n_tx = @N@, 150000
        seconds = rng.integers(0, 365 * 24 * 3600, n_tx)
        tx = pd.DataFrame({
            "customer": rng.integers(0, n_customers, n_tx),
            "ts": pd.Timestamp("2023-01-01") + pd.to_timedelta(np.sort(seconds), unit="s"),
            "amount": rng.lognormal(3.0, 1.0, n_tx).round(2),
            "category": rng.choice(["food", "travel", "tech", "home", "fun"], n_tx),
        })


        def customer_features(g):
            gaps = g["ts"].diff().dt.total_seconds().div(86400)
            return pd.Series({
                "spend": g["amount"].sum(),
                "n_tx": len(g),
                "mean_gap_days": gaps.mean(),
                "top_category": g["category"].mode().iat[0],
                "share_travel": (g["category"] == "travel").mean(),
                "p90_amount": g["amount"].quantile(0.9),
            })


        print(tx.shape, tx["ts"].min(), tx["ts"].max())
        ''',
        PD_MONTH_TARGET,
    ],
    target=2,
    n=3800,
    small=200,
    fix={2: edit(PD_MONTH_TARGET, "end = pd.Timestamp(2023, m + 1, 1)",
                 "end = start + pd.offsets.MonthBegin(1)")},
)

PD_PIVOT_TARGET = code('''
    CHUNK = 25000
    parts = []
    for i in range(0, len(log), CHUNK):
        chunk = log.iloc[i:i + CHUNK]
        parsed = chunk["record"].map(parse_record).apply(pd.Series)
        parsed["week"] = pd.to_datetime(parsed["date"]).dt.isocalendar().week.astype(int)
        parsed["revenue"] = parsed["qty"] * parsed["unit_price"]
        part = parsed.groupby(["store", "week"], as_index=False).agg(
            revenue=("revenue", "sum"), units=("qty", "sum"))
        parts.append(part)
    print(len(parts), "chunks parsed")

    weekly = pd.concat(parts, ignore_index=True)
    table = weekly.pivot(index="store", columns="week", values="revenue")
    growth = table.pct_change(axis=1).mean(axis=1).sort_values()
    print(table.sum(axis=1).sort_values(ascending=False).head())
    print("slowest growing stores:", list(growth.index[:3]))
''')

case(
    name="pandas_chunked_log_pivot_duplicates",
    library="pandas",
    category="key",
    needs_runtime=True,
    exception="ValueError",
    message_contains="Index contains duplicate entries, cannot reshape",
    diagnosis="The log is aggregated per (store, week) chunk by chunk, and weeks that straddle a "
              "chunk boundary appear in two chunks' parts, so the pivot of the concatenated parts "
              "meets duplicate (store, week) pairs.",
    cells=[
        '''
        import numpy as np
        import pandas as pd
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
        ''',
        '''
        rng = np.random.default_rng(30)
        n = @N@
        days = np.sort(rng.integers(0, 364, n))
        dates = (pd.Timestamp("2024-01-01") + pd.to_timedelta(days, unit="D")).strftime("%Y-%m-%d")
        stores = rng.integers(1, 41, n)
        qty = rng.integers(1, 6, n)
        price = rng.gamma(2.0, 8.0, n).round(2)
        skus = rng.integers(1000, 9999, n)
        log = pd.DataFrame({
            "record": [f"{d}|S{s:03d}|SKU{k}|{q}|{p:.2f}" for d, s, k, q, p in zip(dates, stores, skus, qty, price)]
        })


        def parse_record(text):
            date, store, sku, qty, price = text.split("|")
            return {"date": date, "store": store, "sku": int(sku[3:]), "qty": int(qty), "unit_price": float(price)}


        print(len(log), log["record"].iat[0])
        ''',
        PD_PIVOT_TARGET,
    ],
    target=2,
    n=330000,
    small=60000,
    fix={2: edit(PD_PIVOT_TARGET, 'table = weekly.pivot(index="store", columns="week", values="revenue")',
                 'table = weekly.pivot_table(index="store", columns="week", values="revenue", aggfunc="sum")')},
)

# ---------------------------------------------------------------------------------------------
# statsmodels

SM_SEASON_TARGET = code('''
    rows = []
    for store, df in sales.groupby("store"):
        formula = "units ~ np.log(price) + promo + C(season)"
        res = smf.negativebinomial(formula, data=df).fit(disp=0, maxiter=200)
        pois = smf.poisson(formula, data=df).fit(disp=0, maxiter=200)
        rows.append({
            "store": store,
            "lr_overdispersion": 2 * (res.llf - pois.llf),
            "elasticity": res.params["np.log(price)"],
            "promo_lift": np.exp(res.params["promo"]),
            "winter_effect": res.params["C(season)[T.winter]"],
            "alpha": res.params["alpha"],
        })
    effects = pd.DataFrame(rows).set_index("store")
    print(effects.describe().round(3))
''')

case(
    name="statsmodels_store_season_term",
    library="statsmodels",
    category="key",
    needs_runtime=True,
    exception="KeyError",
    message_contains="C(season)[T.winter]",
    diagnosis="The last store opened in spring of the last year and has no winter rows, so its "
              "formula has no C(season)[T.winter] term and reading that coefficient of its fit "
              "fails after all other stores were fitted.",
    cells=[
        '''
        import numpy as np
        import pandas as pd
        import statsmodels.formula.api as smf
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
        ''',
        '''
        rng = np.random.default_rng(17)
        N_STORES = @N@
        SEASON = {12: "winter", 1: "winter", 2: "winter", 3: "spring", 4: "spring", 5: "spring",
                  6: "summer", 7: "summer", 8: "summer", 9: "autumn", 10: "autumn", 11: "autumn"}
        frames = []
        for s in range(N_STORES):
            # the newest store opened in April 2024; the others have almost three years
            dates = pd.date_range("2024-04-01" if s == N_STORES - 1 else "2022-01-01", "2024-11-30", freq="D")
            n = len(dates)
            season = dates.month.map(SEASON)
            price = rng.uniform(2.0, 6.0, n)
            promo = (rng.uniform(size=n) < 0.15).astype(int)
            mu = np.exp(3.0 - 0.8 * np.log(price) + 0.3 * promo + 0.2 * (season == "summer")
                        - 0.15 * (season == "winter") + rng.normal(0, 0.05))
            units = rng.negative_binomial(5, 5 / (5 + mu))
            frames.append(pd.DataFrame({"store": s, "date": dates, "season": season, "price": price,
                                        "promo": promo, "units": units}))
        sales = pd.concat(frames, ignore_index=True)
        print(sales.shape, sales.groupby("store")["date"].min().iloc[-1])
        ''',
        SM_SEASON_TARGET,
    ],
    target=2,
    n=1550,
    small=3,
    fix={2: edit(SM_SEASON_TARGET, 'res.params["C(season)[T.winter]"]',
                 'res.params.get("C(season)[T.winter]", np.nan)')},
)

# ---------------------------------------------------------------------------------------------
# NumPy

NP_GIBBS_TARGET = code('''
    N_ITER = @N@
    BURN = N_ITER // 5
    K = 3
    mu = np.quantile(x, [0.2, 0.5, 0.8])
    sigma2 = np.full(K, x.var())
    pi = np.full(K, 1 / K)
    mu_trace = np.empty((N_ITER, K))
    pi_trace = np.empty((N_ITER, K))
    for it in range(N_ITER):
        z = sample_assignments(x, mu, sigma2, pi, rng)
        counts = np.bincount(z, minlength=K)
        sums = np.bincount(z, weights=x, minlength=K)
        prec = 1 / 100.0 + counts / sigma2
        mu = rng.normal((sums / sigma2) / prec, np.sqrt(1 / prec))
        sq = np.bincount(z, weights=(x - mu[z]) ** 2, minlength=K)
        sigma2 = 1 / rng.gamma(2.0 + counts / 2, 1 / (1.0 + sq / 2))
        pi = rng.dirichlet(1.0 + counts)
        order = np.argsort(mu)
        mu, sigma2, pi = mu[order], sigma2[order], pi[order]
        mu_trace[it], pi_trace[it] = mu, pi

    post_pi = pi_trace[BURN:].sum(axis=0) / N_ITER
    post_mu = mu_trace[BURN:].mean(axis=0)
    comp = rng.choice(K, size=5000, p=post_pi)
    print("posterior mean weights", post_pi.round(3), "means", post_mu.round(3))
    print("95% intervals of the means:", np.percentile(mu_trace[BURN:], [2.5, 97.5], axis=0).round(3))
    print("predictive share per component:", np.bincount(comp, minlength=K) / len(comp))
''')

case(
    name="numpy_gibbs_mixture_weights",
    library="numpy",
    category="value",
    needs_runtime=False,
    exception="ValueError",
    message_contains="Probabilities do not sum to 1",
    diagnosis="The posterior mean weights sum the draws after burn-in but divide by all N_ITER draws, "
              "so they sum to 0.8 and the posterior predictive draw with them as probabilities fails.",
    cells=[
        '''
        import numpy as np
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
        rng = np.random.default_rng(2024)
        ''',
        '''
        true_mu, true_sd, true_pi = np.array([-2.0, 0.5, 3.0]), np.array([0.7, 0.5, 1.0]), np.array([0.3, 0.45, 0.25])
        comp = rng.choice(3, size=4000, p=true_pi)
        x = rng.normal(true_mu[comp], true_sd[comp])


        def sample_assignments(x, mu, sigma2, pi, rng):
            logp = np.log(pi) - 0.5 * np.log(2 * np.pi * sigma2) - (x[:, None] - mu) ** 2 / (2 * sigma2)
            logp -= logp.max(axis=1, keepdims=True)
            p = np.exp(logp)
            p /= p.sum(axis=1, keepdims=True)
            u = rng.uniform(size=(len(x), 1))
            return (p.cumsum(axis=1) < u).sum(axis=1).clip(max=len(mu) - 1)


        print(x.shape, x.mean().round(3))
        ''',
        NP_GIBBS_TARGET,
    ],
    target=2,
    n=56000,
    small=200,
    fix={2: edit(NP_GIBBS_TARGET, "post_pi = pi_trace[BURN:].sum(axis=0) / N_ITER",
                 "post_pi = pi_trace[BURN:].mean(axis=0)")},
)


# ---------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=Path, metavar="DIR", help="write tiny-size copies under DIR")
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
