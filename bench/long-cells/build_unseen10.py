"""Generate bench/long-cells/unseen10/: twelve more long-cell crash/fix pairs (torch 3, Keras 2,
scikit-learn 3, pandas 2, statsmodels 1, NumPy 1), in the format and with the writing conventions
of build.py. The set was written and verified before crane ran on it, by someone who had not read
crane's code. Not split: the whole folder is measured, by its totals only.

    .venv/bin/python bench/long-cells/build_unseen10.py               # write unseen10/
    .venv/bin/python bench/long-cells/build_unseen10.py --small DIR   # tiny sizes under DIR, to check crashes fast

The cases use build.py's `Case`, `code`, `entry` and `write_case`. Measured run times of the
targets are kept in `unseen10/target_seconds.json` (verify.py --record) and written into the
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

OUT = HERE / "unseen10"
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
# Shared first cells


def first(setup: str, more: str) -> str:
    """A first cell: a shared setup, then the notebook's own imports."""
    return code(setup) + "\n" + code(more)


TORCH_SETUP = """
    import os
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["MKL_NUM_THREADS"] = "1"

    import copy
    import numpy as np
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset

    torch.set_num_threads(1)
    torch.manual_seed(0)
"""

KERAS_SETUP = """
    import os
    os.environ["KERAS_BACKEND"] = "tensorflow"
    os.environ["TF_NUM_INTRAOP_THREADS"] = "1"
    os.environ["TF_NUM_INTEROP_THREADS"] = "1"
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"

    import numpy as np
    import pandas as pd
    import keras
    from keras import layers
"""

ONE_THREAD = """
    import os
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"
"""


# ---------------------------------------------------------------------------------------------
# torch

_t1_target = """
    EPOCHS = @N@
    model = MLP(X_train.shape[1], 256, 4)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
    loss_fn = nn.CrossEntropyLoss()

    log = []
    best = {"epoch": -1, "val_acc": 0.0}
    for epoch in range(EPOCHS):
        model.train()
        for xb, yb in train_loader:
            opt.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
        val_loss, val_acc = evaluate(model, val_loader, loss_fn)
        log.append((epoch, val_loss, val_acc))
        if val_acc > best["val_acc"]:
            best = {"epoch": epoch, "val_acc": val_acc, "state": copy.deepcopy(model.state_dict())}

    # restore the best checkpoint before scoring the test set
    model.load_state_dict(best)
    test_loss, test_acc = evaluate(model, test_loader, loss_fn)
    print(f"best epoch {best['epoch'] + 1}/{EPOCHS}: val acc {best['val_acc']:.3f}, test acc {test_acc:.3f}")
"""

case(
    name="torch_restore_best_checkpoint",
    library="torch",
    category="wrong_dict_keys",
    needs_runtime=False,
    exception="RuntimeError",
    message_contains="Missing key(s) in state_dict",
    diagnosis="After training, the best checkpoint is restored with model.load_state_dict(best), but "
              "`best` is the bookkeeping dict {'epoch', 'val_acc', 'state'} and not a state dict: the "
              "model's parameter keys are missing and the bookkeeping keys unexpected. Load best['state'].",
    cells=[
        first(TORCH_SETUP, """
            from sklearn.datasets import make_classification
            from sklearn.model_selection import train_test_split
        """),
        """
            X, y = make_classification(n_samples=24000, n_features=40, n_informative=16, n_classes=4,
                                       n_clusters_per_class=2, class_sep=0.9, random_state=3)
            X = ((X - X.mean(0)) / X.std(0)).astype(np.float32)
            X_tmp, X_test, y_tmp, y_test = train_test_split(X, y, test_size=0.2, random_state=0, stratify=y)
            X_train, X_val, y_train, y_val = train_test_split(X_tmp, y_tmp, test_size=0.2, random_state=0,
                                                              stratify=y_tmp)


            def loader(X, y, shuffle):
                ds = TensorDataset(torch.from_numpy(X), torch.from_numpy(y).long())
                return DataLoader(ds, batch_size=128, shuffle=shuffle)


            train_loader = loader(X_train, y_train, True)
            val_loader = loader(X_val, y_val, False)
            test_loader = loader(X_test, y_test, False)
            len(train_loader), len(val_loader), len(test_loader)
        """,
        """
            class MLP(nn.Module):
                def __init__(self, d_in, hidden, n_out, p=0.2):
                    super().__init__()
                    self.body = nn.Sequential(
                        nn.Linear(d_in, hidden), nn.ReLU(), nn.Dropout(p),
                        nn.Linear(hidden, hidden), nn.ReLU(), nn.Dropout(p),
                    )
                    self.head = nn.Linear(hidden, n_out)

                def forward(self, x):
                    return self.head(self.body(x))


            @torch.no_grad()
            def evaluate(model, loader, loss_fn):
                model.eval()
                total, correct, n = 0.0, 0, 0
                for xb, yb in loader:
                    logits = model(xb)
                    total += loss_fn(logits, yb).item() * len(yb)
                    correct += (logits.argmax(1) == yb).sum().item()
                    n += len(yb)
                return total / n, correct / n
        """,
        _t1_target,
    ],
    target=3,
    n=110,
    small=2,
    fix={3: edit(code(_t1_target), "model.load_state_dict(best)", 'model.load_state_dict(best["state"])')},
)

_t2_target = """
    EPOCHS = @N@
    model = MatrixFactorization(int(train_u.max()) + 1, N_ITEMS, dim=32)
    opt = torch.optim.Adam(model.parameters(), lr=5e-3, weight_decay=1e-5)

    train_rmse = []
    for epoch in range(EPOCHS):
        train_rmse.append(train_epoch(model, train_loader, opt))

    model.eval()
    with torch.no_grad():
        pred = model(test_u, test_i).clamp(1, 5)
    test_rmse = torch.sqrt(((pred - test_r) ** 2).mean()).item()
    print(f"train RMSE {train_rmse[0]:.3f} -> {train_rmse[-1]:.3f} over {EPOCHS} epochs; test RMSE {test_rmse:.3f}")
"""

case(
    name="torch_ratings_matrix_factorization",
    library="torch",
    category="index_out_of_range",
    needs_runtime=True,
    exception="IndexError",
    message_contains="index out of range in self",
    diagnosis="The user embedding table is sized from the largest user id of the training period, but "
              "user ids grow with sign-up time and the later test period holds users who signed up "
              "after it: scoring the test set after training looks up ids past the table. Size it "
              "with N_USERS.",
    cells=[
        TORCH_SETUP,
        """
            rng = np.random.default_rng(7)
            N_USERS, N_ITEMS, N_RATINGS = 4000, 900, 240_000
            # users are numbered in the order they signed up
            signup = np.sort(rng.uniform(0, 1, N_USERS))
            t = np.sort(rng.uniform(0.02, 1, N_RATINGS))
            signed_up = np.searchsorted(signup, t)
            users = np.minimum((rng.uniform(0, 1, N_RATINGS) * signed_up).astype(np.int64), signed_up - 1)
            popularity = 1 / (np.arange(N_ITEMS) + 10) ** 0.8
            items = rng.choice(N_ITEMS, N_RATINGS, p=popularity / popularity.sum())
            U, V = rng.normal(0, 0.6, (N_USERS, 8)), rng.normal(0, 0.6, (N_ITEMS, 8))
            ratings = np.clip(np.rint(3.4 + (U[users] * V[items]).sum(1) + rng.normal(0, 0.5, N_RATINGS)), 1, 5)

            cut = np.searchsorted(t, 0.9)  # train on the first 90% of the time span, test on the rest
            train_u, train_i = torch.from_numpy(users[:cut]), torch.from_numpy(items[:cut])
            train_r = torch.tensor(ratings[:cut], dtype=torch.float32)
            test_u, test_i = torch.from_numpy(users[cut:]), torch.from_numpy(items[cut:])
            test_r = torch.tensor(ratings[cut:], dtype=torch.float32)
            train_loader = DataLoader(TensorDataset(train_u, train_i, train_r), batch_size=1024, shuffle=True)
            len(train_r), len(test_r)
        """,
        """
            class MatrixFactorization(nn.Module):
                def __init__(self, n_users, n_items, dim):
                    super().__init__()
                    self.user = nn.Embedding(n_users, dim)
                    self.item = nn.Embedding(n_items, dim)
                    self.user_bias = nn.Embedding(n_users, 1)
                    self.item_bias = nn.Embedding(n_items, 1)
                    for emb in (self.user, self.item):
                        nn.init.normal_(emb.weight, std=0.05)
                    for emb in (self.user_bias, self.item_bias):
                        nn.init.zeros_(emb.weight)
                    self.mu = nn.Parameter(torch.tensor(3.4))

                def forward(self, u, i):
                    dot = (self.user(u) * self.item(i)).sum(1)
                    return self.mu + dot + self.user_bias(u).squeeze(1) + self.item_bias(i).squeeze(1)


            def train_epoch(model, loader, opt):
                model.train()
                total, n = 0.0, 0
                for u, i, r in loader:
                    opt.zero_grad()
                    loss = ((model(u, i) - r) ** 2).mean()
                    loss.backward()
                    opt.step()
                    total += loss.item() * len(r)
                    n += len(r)
                return (total / n) ** 0.5
        """,
        _t2_target,
    ],
    target=3,
    n=18,
    small=1,
    fix={3: edit(code(_t2_target), "MatrixFactorization(int(train_u.max()) + 1, N_ITEMS",
                 "MatrixFactorization(N_USERS, N_ITEMS")},
)

_t3_target = """
    EPOCHS = @N@
    model = make_model(X_train_t.shape[1])
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=EPOCHS)
    loss_fn = nn.MSELoss()

    train_losses, val_losses = [], []
    for epoch in range(EPOCHS):
        train_losses.append(fit_epoch(model, train_loader, opt, loss_fn))
        model.eval()
        val_loss = loss_fn(model(X_val_t), y_val_t)
        val_losses.append(val_loss)
        sched.step()

    best_epoch = int(np.argmin(val_losses))
    print(f"best epoch {best_epoch + 1}: val MSE {val_losses[best_epoch]:.4f}")
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(range(1, EPOCHS + 1), train_losses, label="train")
    ax.plot(range(1, EPOCHS + 1), val_losses, label="validation")
    ax.axvline(best_epoch + 1, color="grey", ls="--")
    ax.set_xlabel("epoch")
    ax.set_ylabel("MSE")
    ax.legend()
"""

case(
    name="torch_regression_val_curve",
    library="torch",
    category="wrong_object_type",
    needs_runtime=False,
    exception="RuntimeError",
    message_contains="Can't call numpy() on Tensor that requires grad",
    diagnosis="The validation loss of each epoch is appended as the loss tensor itself (computed "
              "without no_grad, so it requires grad) instead of a float; after training, "
              "np.argmin over the list converts the tensors and fails. Append val_loss.item().",
    cells=[
        first(TORCH_SETUP, """
            import matplotlib.pyplot as plt
            from sklearn.datasets import make_regression
            from sklearn.model_selection import train_test_split
        """),
        """
            X, y = make_regression(n_samples=24000, n_features=48, n_informative=20, noise=12.0, random_state=5)
            y = np.sin(y / 80.0) * 40 + y / 4  # a bent target, so the network has something to learn
            X = ((X - X.mean(0)) / X.std(0)).astype(np.float32)
            y = ((y - y.mean()) / y.std()).astype(np.float32)
            X_train, X_val, y_train, y_val = train_test_split(X, y, test_size=1000, random_state=1)
            X_train_t, y_train_t = torch.from_numpy(X_train), torch.from_numpy(y_train).unsqueeze(1)
            X_val_t, y_val_t = torch.from_numpy(X_val), torch.from_numpy(y_val).unsqueeze(1)
            train_loader = DataLoader(TensorDataset(X_train_t, y_train_t), batch_size=256, shuffle=True)
        """,
        """
            def make_model(d_in):
                torch.manual_seed(0)
                return nn.Sequential(nn.Linear(d_in, 128), nn.GELU(), nn.Linear(128, 128), nn.GELU(),
                                     nn.Linear(128, 1))


            def fit_epoch(model, loader, opt, loss_fn):
                model.train()
                total, n = 0.0, 0
                for xb, yb in loader:
                    opt.zero_grad()
                    loss = loss_fn(model(xb), yb)
                    loss.backward()
                    opt.step()
                    total += loss.item() * len(xb)
                    n += len(xb)
                return total / n
        """,
        _t3_target,
    ],
    target=3,
    n=215,
    small=2,
    fix={3: edit(code(_t3_target), "val_losses.append(val_loss)", "val_losses.append(val_loss.item())")},
)


# ---------------------------------------------------------------------------------------------
# Keras

_k1_target = """
    EPOCHS = @N@
    keras.utils.set_random_seed(0)
    model = keras.Sequential([
        keras.Input(shape=(X_train.shape[1],)),
        layers.Dense(128, activation="relu"),
        layers.Dropout(0.3),
        layers.Dense(64, activation="relu"),
        layers.Dense(1, activation="sigmoid"),
    ])
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="binary_crossentropy",
                  metrics=[keras.metrics.AUC(name="auc")])
    history = model.fit(X_train, y_train, validation_data=(X_val, y_val), epochs=EPOCHS,
                        batch_size=64, verbose=0)

    proba = model.predict(X_test, verbose=0)
    report = pd.DataFrame({"region": region_test, "churned": y_test, "proba": proba})
    by_region = report.groupby("region").agg(customers=("churned", "size"), churn_rate=("churned", "mean"),
                                             predicted=("proba", "mean"))
    by_region["gap"] = by_region["predicted"] - by_region["churn_rate"]
    by_region.sort_values("gap")
"""

case(
    name="keras_churn_by_region",
    library="keras",
    category="wrong_shape",
    needs_runtime=False,
    exception="ValueError",
    message_contains="Per-column arrays must each be 1-dimensional",
    diagnosis="model.predict returns an (n, 1) array for the one sigmoid output; putting it as a column "
              "of the report DataFrame after training fails. Flatten it with .ravel().",
    cells=[
        first(KERAS_SETUP, """
            from sklearn.datasets import make_classification
            from sklearn.model_selection import train_test_split
        """),
        """
            X, y = make_classification(n_samples=24000, n_features=24, n_informative=12, weights=[0.8],
                                       flip_y=0.03, random_state=11)
            region = np.random.default_rng(11).choice(["north", "south", "east", "west", "central"], len(y))
            X_tmp, X_test, y_tmp, y_test, r_tmp, region_test = train_test_split(
                X, y, region, test_size=0.2, random_state=0, stratify=y)
            X_train, X_val, y_train, y_val = train_test_split(X_tmp, y_tmp, test_size=0.15, random_state=0,
                                                              stratify=y_tmp)
            mean, std = X_train.mean(0), X_train.std(0)
            X_train, X_val, X_test = [((a - mean) / std).astype("float32") for a in (X_train, X_val, X_test)]
            X_train.shape, X_val.shape, X_test.shape, y_train.mean()
        """,
        _k1_target,
    ],
    target=2,
    n=88,
    small=1,
    fix={2: edit(code(_k1_target), "proba = model.predict(X_test, verbose=0)",
                 "proba = model.predict(X_test, verbose=0).ravel()")},
)

_k2_target = """
    EPOCHS = @N@
    keras.utils.set_random_seed(1)
    model = keras.Sequential([
        keras.Input(shape=(X_train.shape[1],)),
        layers.Dense(64, activation="relu"),
        layers.Dense(64, activation="relu"),
        layers.Dense(1),
    ])
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="mse")
    # fit the counts on the log1p scale, then bring the predictions back to counts
    history = model.fit(X_train, np.log1p(y_train), validation_split=0.15, epochs=EPOCHS,
                        batch_size=64, verbose=0)

    pred_counts = np.expm1(model.predict(X_test, verbose=0).ravel())
    deviance = mean_poisson_deviance(y_test, pred_counts)
    curve = pd.DataFrame(history.history, index=pd.RangeIndex(1, EPOCHS + 1, name="epoch"))
    print(f"test Poisson deviance {deviance:.3f}; best val MSE {curve['val_loss'].min():.4f} "
          f"at epoch {curve['val_loss'].idxmin()}")
    curve.plot(logy=True, title="log1p-scale MSE")
"""

case(
    name="keras_claim_counts_log_target",
    library="keras",
    category="out_of_range_values",
    needs_runtime=True,
    exception="ValueError",
    message_contains="strictly positive y_pred",
    diagnosis="The network is fitted on log1p(counts) with a linear output; back-transformed with expm1, "
              "the predictions of rows near zero counts are zero or negative, and the Poisson deviance "
              "computed after training needs strictly positive predictions. Clip them above zero.",
    cells=[
        first(KERAS_SETUP, """
            from sklearn.metrics import mean_poisson_deviance
            from sklearn.model_selection import train_test_split
        """),
        """
            rng = np.random.default_rng(21)
            n, d = 24000, 14
            X = rng.normal(size=(n, d)).astype("float32")
            beta = rng.normal(0, 0.35, d)
            rate = np.exp(X @ beta + 0.3 * np.sin(2 * X[:, 0]) - 0.9)
            claims = rng.poisson(rate)
            X_train, X_test, y_train, y_test = train_test_split(X, claims, test_size=0.2, random_state=0)
            X_train.shape, (claims == 0).mean(), claims.max()
        """,
        _k2_target,
    ],
    target=2,
    n=115,
    small=1,
    fix={2: edit(code(_k2_target), "pred_counts = np.expm1(model.predict(X_test, verbose=0).ravel())",
                 "pred_counts = np.clip(np.expm1(model.predict(X_test, verbose=0).ravel()), 1e-6, None)")},
)


# ---------------------------------------------------------------------------------------------
# scikit-learn

_s1_target = """
    search = RandomizedSearchCV(pipe, param_dist, n_iter=@N@, cv=5, scoring="roc_auc", random_state=0, n_jobs=1)
    search.fit(X, y)

    results = pd.DataFrame(search.cv_results_)
    for name in ("C", "gamma"):
        results[f"log10_{name}"] = np.log10(results[f"param_{name}"].astype(float))
    grid = results.pivot_table(index=pd.cut(results["log10_C"], 4), columns=pd.cut(results["log10_gamma"], 4),
                               values="mean_test_score", aggfunc="max", observed=False)
    print(f"best {search.best_params_} with AUC {search.best_score_:.4f}")
    grid.round(3)
"""

case(
    name="sklearn_svc_random_search_map",
    library="sklearn",
    category="wrong_dict_keys",
    needs_runtime=False,
    exception="KeyError",
    message_contains="param_C",
    diagnosis="The search runs over a Pipeline, so cv_results_ names the parameter columns "
              "param_svc__C and param_svc__gamma; reading param_C after the search fails. Use the "
              "step-prefixed names.",
    cells=[
        first(ONE_THREAD, """
            import numpy as np
            import pandas as pd
            from scipy.stats import loguniform
            from sklearn.datasets import make_classification
            from sklearn.model_selection import RandomizedSearchCV
            from sklearn.pipeline import Pipeline
            from sklearn.preprocessing import StandardScaler
            from sklearn.svm import SVC
        """),
        """
            X, y = make_classification(n_samples=3000, n_features=30, n_informative=10, n_redundant=6,
                                       flip_y=0.05, class_sep=0.8, random_state=21)
            X.shape, y.mean()
        """,
        """
            pipe = Pipeline([("scale", StandardScaler()), ("svc", SVC(kernel="rbf"))])
            param_dist = {"svc__C": loguniform(1e-2, 1e3), "svc__gamma": loguniform(1e-4, 1e0)}
        """,
        _s1_target,
    ],
    target=3,
    n=42,
    small=2,
    fix={3: edit(code(_s1_target), 'results[f"param_{name}"]', 'results[f"param_svc__{name}"]')},
)

_s2_target = """
    WARMUP = 6
    scores = {}
    for m in months[WARMUP:]:
        train, test = tx[tx["month"] < m], tx[tx["month"] == m]
        clf = make_model().fit(train[FEATURES], train["label"])
        p = clf.predict_proba(test[FEATURES])[:, 1]
        scores[m] = {"auc": roc_auc_score(test["label"], p), "log_loss": log_loss(test["label"], p),
                     "fraud_rate": test["label"].mean(), "n": len(test)}

    table = pd.DataFrame.from_dict(scores, orient="index")
    print(table.round(4).to_string())
    table[["auc", "log_loss"]].agg(["mean", "std", "min"])
"""

case(
    name="sklearn_fraud_monthly_backtest",
    library="sklearn",
    category="single_class_fold",
    needs_runtime=True,
    exception="ValueError",
    message_contains="y_true contains only one label",
    diagnosis="The backtest scores every month after the warm-up, but chargebacks take at least five "
              "weeks to arrive, so no fraud of the newest month is labelled yet: in the last iteration "
              "its labels are all 0 and log_loss fails. Stop before the newest, immature month.",
    cells=[
        first(ONE_THREAD, """
            import numpy as np
            import pandas as pd
            from sklearn.datasets import make_classification
            from sklearn.ensemble import HistGradientBoostingClassifier
            from sklearn.metrics import log_loss, roc_auc_score
        """),
        """
            N_MONTHS, PER_MONTH = 18, @N@
            X, fraud = make_classification(n_samples=N_MONTHS * PER_MONTH, n_features=20, n_informative=8,
                                           weights=[0.95], flip_y=0.01, class_sep=0.7, random_state=8)
            rng = np.random.default_rng(8)
            FEATURES = [f"x{i}" for i in range(X.shape[1])]
            tx = pd.DataFrame(X, columns=FEATURES)
            tx["day"] = np.sort(rng.integers(0, N_MONTHS * 30, len(tx)))
            tx["month"] = tx["day"] // 30
            TODAY = N_MONTHS * 30
            # a fraud is only known once its chargeback arrives, 5 to 12 weeks after the transaction
            delay = rng.integers(35, 85, len(tx))
            tx["label"] = ((fraud == 1) & (tx["day"] + delay <= TODAY)).astype(int)
            months = sorted(tx["month"].unique())
            tx.groupby("month")["label"].mean().round(4).tolist()
        """,
        """
            def make_model():
                return HistGradientBoostingClassifier(max_iter=150, learning_rate=0.08, max_leaf_nodes=31,
                                                      early_stopping=False, random_state=0)
        """,
        _s2_target,
    ],
    target=3,
    n=27_000,
    small=200,
    fix={3: edit(code(_s2_target), "for m in months[WARMUP:]:",
                 "for m in months[WARMUP:-1]:  # the newest month's chargebacks are not in yet")},
)

_s3_target = """
    K_GRID = [4, 8, 12, 16, 24, 32, 48]
    cv = RepeatedStratifiedKFold(n_splits=5, n_repeats=@N@, random_state=0)
    fold_scores = {k: [] for k in K_GRID}
    for k in K_GRID:
        pipe.set_params(select__k=k)
        for fold, (tr, te) in enumerate(cv.split(X, y)):
            pipe.fit(X[tr], y[tr])
            fold_scores[k].append(balanced_accuracy_score(y[te], pipe.predict(X[te])))

    summary = pd.DataFrame({k: pd.Series(v).agg(["mean", "std"]) for k, v in fold_scores.items()}).T
    best_k = int(summary["mean"].idxmax())
    pipe.set_params(select__k=best_k).fit(X, y)
    coefs = pd.Series(pipe.named_steps["clf"].coef_[0], index=feature_names)
    print(summary.round(4).to_string())
    coefs.sort_values(key=abs, ascending=False).head(10)
"""

case(
    name="sklearn_select_k_coefficients",
    library="sklearn",
    category="wrong_shape",
    needs_runtime=True,
    exception="ValueError",
    message_contains="does not match length of index",
    diagnosis="After the search over k, the refitted logistic regression has one coefficient per "
              "selected feature, not per input feature; labelling them with all feature names fails. "
              "Index them with the selector's support mask.",
    cells=[
        first(ONE_THREAD, """
            import numpy as np
            import pandas as pd
            from sklearn.datasets import make_classification
            from sklearn.feature_selection import SelectKBest, f_classif
            from sklearn.linear_model import LogisticRegression
            from sklearn.metrics import balanced_accuracy_score
            from sklearn.model_selection import RepeatedStratifiedKFold
            from sklearn.pipeline import Pipeline
            from sklearn.preprocessing import StandardScaler
        """),
        """
            X, y = make_classification(n_samples=12000, n_features=80, n_informative=10, n_redundant=10,
                                       weights=[0.7], flip_y=0.04, random_state=4)
            feature_names = np.array([f"sensor_{i:02d}" for i in range(X.shape[1])])
            pipe = Pipeline([
                ("scale", StandardScaler()),
                ("select", SelectKBest(f_classif)),
                ("clf", LogisticRegression(C=0.5, max_iter=2000)),
            ])
        """,
        _s3_target,
    ],
    target=2,
    n=48,
    small=1,
    fix={2: edit(code(_s3_target), "index=feature_names)",
                 'index=feature_names[pipe.named_steps["select"].get_support()])')},
)


# ---------------------------------------------------------------------------------------------
# pandas

_p1_target = """
    rows = []
    for store, g in sales.groupby("store", sort=True):
        g = g.sort_values("date")
        if g["units"].sum() == 0:
            continue
        profile = weekly_profile(g)
        weeks_open = (g["date"].max() - g["date"].min()).days // 7
        rows.append({"store": store, "opened": g["date"].min(),
                     "units_per_week": int(g["units"].sum()) / weeks_open, **profile})

    summary = pd.DataFrame(rows).set_index("store")
    print(f"{len(summary)} stores summarised")
    summary.sort_values("units_per_week", ascending=False).head(10)
"""

case(
    name="pandas_store_weekly_rates",
    library="pandas",
    category="zero_division",
    needs_runtime=True,
    exception="ZeroDivisionError",
    message_contains="division by zero",
    diagnosis="Weeks open are counted as whole weeks between the first and the last sale; the newest "
              "store, the last group, opened less than a week before the data ends, so its count is 0 "
              "and the units per week divide by zero. Count the open span in days plus one, over 7.",
    cells=[
        first(ONE_THREAD, """
            import numpy as np
            import pandas as pd
        """),
        """
            rng = np.random.default_rng(3)
            N_STORES = @N@
            days = pd.date_range("2023-01-01", "2023-12-31", freq="D")
            opened = rng.choice(days[:300], N_STORES)
            opened[: N_STORES // 2] = days[0]           # most stores were open before the year began
            opened[-1] = days[-5]                        # the newest store opened in the last week
            base = rng.gamma(3.0, 6.0, N_STORES)
            frames = []
            for s in range(N_STORES):
                d = days[days >= opened[s]]
                season = 1 + 0.25 * np.sin(2 * np.pi * d.dayofyear / 365) + 0.3 * (d.dayofweek >= 5)
                frames.append(pd.DataFrame({"store": s, "date": d, "units": rng.poisson(base[s] * season),
                                            "promo": rng.random(len(d)) < 0.1}))
            sales = pd.concat(frames, ignore_index=True)
            sales.shape
        """,
        """
            def weekly_profile(g):
                daily = g.set_index("date")["units"]
                weekly = daily.resample("W").sum()
                by_dow = daily.groupby(daily.index.dayofweek).mean()
                peak28 = daily.rolling("28D").apply(lambda w: np.percentile(w, 90), raw=True)
                lift = g.loc[g["promo"], "units"].mean() / max(g.loc[~g["promo"], "units"].mean(), 1e-9)
                return {"weekly_max": weekly.max(), "weekend_share": by_dow.loc[5:].sum() / by_dow.sum(),
                        "peak28": peak28.iloc[-1], "promo_lift": lift}
        """,
        _p1_target,
    ],
    target=3,
    n=3600,
    small=12,
    fix={3: edit(code(_p1_target), 'weeks_open = (g["date"].max() - g["date"].min()).days // 7',
                 'weeks_open = ((g["date"].max() - g["date"].min()).days + 1) / 7')},
)

_p2_helper = """
    def featurize(chunk):
        dev = pd.get_dummies(chunk["device"], prefix="dev", dtype=float)
        hour = chunk["ts"].dt.hour
        out = pd.DataFrame({
            "log_amount": np.log1p(chunk["amount"]),
            "hour_sin": np.sin(2 * np.pi * hour / 24),
            "hour_cos": np.cos(2 * np.pi * hour / 24),
            "user_mean5": chunk.groupby("user")["amount"].transform(
                lambda s: s.rolling(5, min_periods=1).mean()),
            "user_n": chunk.groupby("user")["amount"].transform("size"),
        }, index=chunk.index)
        return pd.concat([out, dev], axis=1)
"""

_p2_target = """
    CHUNK = 20_000
    parts, stats = [], []
    for i, start in enumerate(range(0, len(events), CHUNK)):
        chunk = events.iloc[start:start + CHUNK]
        feats = featurize(chunk)
        parts.append(feats.to_numpy(dtype=float))
        stats.append({"chunk": i, "rows": len(chunk), "users": chunk["user"].nunique(),
                      "mean_amount": chunk["amount"].mean()})

    X_all = np.vstack(parts)
    stats = pd.DataFrame(stats)
    print(X_all.shape, len(stats), "chunks")
    stats.describe()
"""

case(
    name="pandas_chunked_event_features",
    library="pandas",
    category="inconsistent_columns",
    needs_runtime=True,
    exception="ValueError",
    message_contains="along dimension 1",
    diagnosis="Each chunk one-hot encodes the device with get_dummies, which only makes columns for the "
              "devices present in that chunk; the legacy app was retired before the last chunks, so "
              "their feature matrices have one column fewer and stacking all chunks after the loop "
              "fails. Encode the device with the fixed category list.",
    cells=[
        first(ONE_THREAD, """
            import numpy as np
            import pandas as pd
        """),
        """
            rng = np.random.default_rng(12)
            N_EVENTS = @N@
            DEVICES = ["android", "ios", "legacy_app", "tablet", "web"]
            ts = pd.Timestamp("2024-01-01") + pd.to_timedelta(np.sort(rng.uniform(0, 180, N_EVENTS)), unit="D")
            device = rng.choice(DEVICES, N_EVENTS, p=[0.35, 0.3, 0.05, 0.1, 0.2])
            retired = np.arange(N_EVENTS) >= int(0.8 * N_EVENTS)    # the legacy app was switched off
            device[retired & (device == "legacy_app")] = "android"
            events = pd.DataFrame({"ts": ts, "user": rng.integers(0, 6000, N_EVENTS),
                                   "device": device, "amount": rng.lognormal(3, 1, N_EVENTS).round(2)})
            events["device"].value_counts()
        """,
        _p2_helper,
        _p2_target,
    ],
    target=3,
    n=1_300_000,
    small=100_000,
    fix={2: edit(code(_p2_helper), 'pd.get_dummies(chunk["device"], prefix="dev", dtype=float)',
                 'pd.get_dummies(chunk["device"].astype(pd.CategoricalDtype(DEVICES)), prefix="dev", dtype=float)')},
)


# ---------------------------------------------------------------------------------------------
# statsmodels

_sm_target = """
    forecasts, fitted_params = {}, []
    for i, (sku, y) in enumerate(demand.items()):
        model = ExponentialSmoothing(y, trend="add", damped_trend=True, seasonal="mul", seasonal_periods=12)
        fit = model.fit(optimized=True)
        forecasts[sku] = fit.forecast(12)
        fitted_params.append({"sku": sku, "alpha": fit.params["smoothing_level"],
                              "gamma": fit.params["smoothing_seasonal"], "sse": fit.sse})

    plan = pd.DataFrame(forecasts)
    params = pd.DataFrame(fitted_params).set_index("sku")
    print(params.describe().round(3).to_string())
    plan.sum(axis=1).round(0)
"""

case(
    name="statsmodels_holt_winters_per_sku",
    library="statsmodels",
    category="out_of_range_values",
    needs_runtime=True,
    exception="ValueError",
    message_contains="endog must be strictly positive",
    diagnosis="Every SKU is fitted with a multiplicative seasonal Holt-Winters model; the last SKU was "
              "launched recently and its series starts with months of zero demand, which a "
              "multiplicative model rejects. Fit each series from its first positive month on.",
    cells=[
        first(ONE_THREAD, """
            import warnings
            import numpy as np
            import pandas as pd
            from statsmodels.tsa.holtwinters import ExponentialSmoothing

            warnings.filterwarnings("ignore")
        """),
        """
            rng = np.random.default_rng(5)
            N_SKUS = @N@
            idx = pd.date_range("2017-01-01", periods=96, freq="MS")
            t = np.arange(len(idx))
            demand = {}
            for k in range(N_SKUS):
                level = rng.uniform(50, 400)
                season = 1 + rng.uniform(0.1, 0.4) * np.sin(2 * np.pi * (t + rng.integers(0, 12)) / 12)
                trend = 1 + rng.normal(0.003, 0.002) * t
                demand[f"SKU-{k:04d}"] = pd.Series(level * season * trend * rng.lognormal(0, 0.08, len(t)), index=idx)
            # the newest SKU was launched 40 months ago: no sales before
            launch = len(t) - 40
            demand[f"SKU-{N_SKUS:04d}"] = pd.Series(np.r_[np.zeros(launch), 80 * (1 + 0.3 * np.sin(2 * np.pi * t[launch:] / 12))
                                                          * rng.lognormal(0, 0.08, len(t) - launch)], index=idx)
            len(demand)
        """,
        _sm_target,
    ],
    target=2,
    n=850,
    small=3,
    fix={2: edit(code(_sm_target), "    model = ExponentialSmoothing(y,",
                 "    y = y.loc[y.gt(0).idxmax():]  # from the first month with sales on\n"
                 "    model = ExponentialSmoothing(y,")},
)


# ---------------------------------------------------------------------------------------------
# NumPy

_np_target = """
    N_PARTICLES = 20_000
    rng = np.random.default_rng(1)
    particles = rng.normal(0, 2, N_PARTICLES)
    estimates, ess = [], []
    for t, (y_t, x_true) in enumerate(zip(obs, states)):
        particles = propagate(particles, t, rng)
        w = np.exp(log_likelihood(y_t, particles))
        w /= w.sum()
        estimates.append(np.sum(w * particles))
        ess.append(1.0 / np.sum(w ** 2))
        particles = particles[rng.choice(N_PARTICLES, size=N_PARTICLES, p=w)]

    estimates, ess = np.array(estimates), np.array(ess)
    rmse = np.sqrt(np.mean((estimates - states) ** 2))
    print(f"{len(estimates)} steps, RMSE {rmse:.3f}, median ESS {np.median(ess):.0f}")
    np.percentile(np.abs(estimates - states), [50, 90, 99])
"""

case(
    name="numpy_particle_filter",
    library="numpy",
    category="nan_from_underflow",
    needs_runtime=True,
    exception="ValueError",
    message_contains="Probabilities contain NaN",
    diagnosis="The particle weights are exp(log-likelihood) without subtracting the maximum; the last "
              "reading is a sensor glitch far from every particle, all weights underflow to 0, "
              "normalising gives NaN and resampling fails in the last step. Subtract the largest "
              "log-likelihood before exponentiating.",
    cells=[
        first(ONE_THREAD, """
            import numpy as np
        """),
        """
            T = @N@
            rng = np.random.default_rng(0)
            states, obs = np.empty(T), np.empty(T)
            x = 0.1
            for t in range(T):
                x = 0.5 * x + 25 * x / (1 + x ** 2) + 8 * np.cos(1.2 * t) + rng.normal(0, np.sqrt(10))
                states[t] = x
                obs[t] = x ** 2 / 20 + rng.normal(0, 1)
            obs[-1] = -60.0  # the sensor glitched on its last reading
            obs[:5], obs[-3:]
        """,
        """
            def propagate(p, t, rng):
                return 0.5 * p + 25 * p / (1 + p ** 2) + 8 * np.cos(1.2 * t) + rng.normal(0, np.sqrt(10), p.shape)


            def log_likelihood(y, p, sigma=1.0):
                return -0.5 * ((y - p ** 2 / 20) / sigma) ** 2
        """,
        _np_target,
    ],
    target=3,
    n=17_500,
    small=50,
    fix={3: edit(code(_np_target), "w = np.exp(log_likelihood(y_t, particles))",
                 "logw = log_likelihood(y_t, particles)\n    w = np.exp(logw - logw.max())")},
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
    seconds = json.loads(SECONDS_FILE.read_text()) if SECONDS_FILE.exists() and not args.small else {}
    root.mkdir(parents=True, exist_ok=True)
    for c in sorted(CASES, key=lambda c: c.name):
        write_case(c, root / c.name, small=bool(args.small))
    manifest = [entry(c, seconds) for c in sorted(CASES, key=lambda c: c.name)]
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"{len(CASES)} cases under {root}")


if __name__ == "__main__":
    main()
