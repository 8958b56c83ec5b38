"""Generate bench/long-cells/unseen/: twelve long-cell crash/fix pairs written and verified before
crane ran on them, by someone who had not read crane's dry-run code, in the format and with the
writing conventions of build.py (same Case fields, `@N@` size, cell ids, execution counts, no
outputs). Not split: the whole folder is measured, and only by its totals; whoever works on crane
must not look at these definitions, the notebooks or their per-case results.

    .venv/bin/python bench/long-cells/build_unseen.py
    MPLBACKEND=Agg .venv/bin/python bench/long-cells/verify.py bench/long-cells/unseen --record bench/long-cells/unseen/target_seconds.json
    .venv/bin/python bench/long-cells/build_unseen.py      # again, to write the seconds into the manifest
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from build import Case, code, entry, write_case  # noqa: E402

OUT = HERE / "unseen"
SECONDS_FILE = OUT / "target_seconds.json"

CASES: list[Case] = []


def case(**kwargs) -> None:
    kwargs["cells"] = [code(c) for c in kwargs["cells"]]
    kwargs["fix"] = {i: code(c) for i, c in kwargs.get("fix", {}).items()}
    CASES.append(Case(**kwargs))


def fill(template: str, **parts: str) -> str:
    """The template with each `<<key>>` replaced by parts[key]: in place within a line, or, where
    the placeholder is alone on its line, as a block of lines at the placeholder's indentation."""
    lines = []
    for line in textwrap.dedent(template).split("\n"):
        stripped = line.strip()
        if stripped.startswith("<<") and stripped.endswith(">>") and stripped[2:-2] in parts:
            indent = line[: len(line) - len(line.lstrip())]
            block = textwrap.dedent(parts[stripped[2:-2]]).strip("\n")
            lines.extend(indent + part if part else part for part in block.split("\n"))
            continue
        for key, value in parts.items():
            line = line.replace(f"<<{key}>>", value)
        lines.append(line)
    out = "\n".join(lines)
    if "<<" in out:
        raise SystemExit(f"unfilled placeholder in: {out[:80]}")
    return out


# ---------------------------------------------------------------------------------------------
# torch

GRU_LOOP = """
    h = torch.zeros(2, loader.batch_size, HIDDEN)
    losses = []
    for step, (xb, yb) in enumerate(loader):
        optimizer.zero_grad()
        pred, h = model(xb, <<h>>)
        loss = loss_fn(pred, yb)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        h = h.detach()
        losses.append(loss.item())
    print(f"{len(losses)} steps over {len(windows)} windows, mean loss of the last 50 steps {np.mean(losses[-50:]):.4f}")
    """

case(
    name="torch_gru_carried_hidden_state",
    library="torch",
    category="shape",
    needs_runtime=True,
    exception="RuntimeError",
    message_contains="Expected hidden size",
    diagnosis="the GRU's hidden state is carried from batch to batch with the size of a full "
    "batch of 64; the last batch of the pass holds fewer windows, so the carried state no "
    "longer matches its batch size",
    cells=[
        """
        import numpy as np
        import torch
        from torch import nn
        from torch.utils.data import DataLoader, TensorDataset

        torch.set_num_threads(1)
        torch.manual_seed(7031)
        rng = np.random.default_rng(7031)
        """,
        """
        N_WINDOWS, WINDOW, HIDDEN = @N@, 48, 96
        t = np.arange(N_WINDOWS * WINDOW + 1)
        load = 50 + 10 * np.sin(2 * np.pi * t / 24) + 4 * np.sin(2 * np.pi * t / 168) + rng.normal(0, 2, len(t))
        series = ((load - load.mean()) / load.std()).astype("float32")
        windows = np.arange(0, N_WINDOWS * WINDOW, WINDOW)
        X = torch.tensor(np.stack([series[s:s + WINDOW] for s in windows])).unsqueeze(-1)
        y = torch.tensor(np.stack([series[s + 1:s + WINDOW + 1] for s in windows])).unsqueeze(-1)
        loader = DataLoader(TensorDataset(X, y), batch_size=64, shuffle=False)


        class Forecaster(nn.Module):
            def __init__(self, hidden):
                super().__init__()
                self.gru = nn.GRU(1, hidden, num_layers=2, batch_first=True)
                self.head = nn.Linear(hidden, 1)

            def forward(self, x, h):
                out, h = self.gru(x, h)
                return self.head(out), h


        model = Forecaster(HIDDEN)
        optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
        loss_fn = nn.MSELoss()
        """,
        fill(GRU_LOOP, h="h"),
    ],
    target=2,
    n=80020,
    small=100,
    fix={2: fill(GRU_LOOP, h="h[:, : xb.size(0)]")},
)

AUC_LOOP = """
    eval_epochs, val_aucs, train_losses = [], [], []
    for epoch in range(EPOCHS):
        model.train()
        order = torch.randperm(len(X_tr_t))
        running = 0.0
        for i in range(0, len(order), BATCH):
            idx = order[i:i + BATCH]
            optimizer.zero_grad()
            loss = loss_fn(model(X_tr_t[idx]).squeeze(1), y_tr_t[idx])
            loss.backward()
            optimizer.step()
            running += loss.item() * len(idx)
        train_losses.append(running / len(order))
        if epoch + 1 >= WARMUP and (epoch + 1) % EVAL_EVERY == 0:
            model.eval()
            <<scores>>
            eval_epochs.append(epoch + 1)
            val_aucs.append(roc_auc_score(y_va, val_scores))
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.plot(range(1, EPOCHS + 1), train_losses, label="train loss")
    ax.set_xlabel("epoch")
    ax2 = ax.twinx()
    ax2.plot(eval_epochs, val_aucs, "o-", color="C1", label="validation AUC")
    best = int(np.argmax(val_aucs))
    print(f"best validation AUC {val_aucs[best]:.4f} at epoch {eval_epochs[best]}")
    """

case(
    name="torch_validation_auc_after_warmup",
    library="torch",
    category="type",
    needs_runtime=True,
    exception="RuntimeError",
    message_contains="Can't call numpy() on Tensor that requires grad",
    diagnosis="validation starts after the warm-up epochs; its forward pass runs outside "
    "torch.no_grad(), so the scores still require grad and roc_auc_score cannot turn them "
    "into a NumPy array",
    cells=[
        """
        import numpy as np
        import torch
        from torch import nn
        import matplotlib.pyplot as plt
        from sklearn.datasets import make_classification
        from sklearn.metrics import roc_auc_score
        from sklearn.model_selection import train_test_split

        torch.set_num_threads(1)
        torch.manual_seed(7112)
        """,
        """
        X, y = make_classification(n_samples=@N@, n_features=40, n_informative=12, weights=[0.85],
                                   flip_y=0.02, random_state=7112)
        X_tr, X_va, y_tr, y_va = train_test_split(X, y, test_size=0.25, stratify=y, random_state=7112)
        mu, sd = X_tr.mean(axis=0), X_tr.std(axis=0)
        X_tr_t = torch.tensor((X_tr - mu) / sd, dtype=torch.float32)
        y_tr_t = torch.tensor(y_tr, dtype=torch.float32)
        X_va_t = torch.tensor((X_va - mu) / sd, dtype=torch.float32)

        model = nn.Sequential(nn.Linear(40, 512), nn.ReLU(), nn.Dropout(0.2),
                              nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 1))
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-2)
        loss_fn = nn.BCEWithLogitsLoss(pos_weight=torch.tensor(5.0))
        EPOCHS, WARMUP, EVAL_EVERY, BATCH = 35, 30, 5, 128
        """,
        fill(AUC_LOOP, scores="val_scores = torch.sigmoid(model(X_va_t)).squeeze(1)"),
    ],
    target=2,
    n=58000,
    small=1200,
    fix={2: fill(AUC_LOOP, scores="""
        with torch.no_grad():
            val_scores = torch.sigmoid(model(X_va_t)).squeeze(1)
        """)},
)

TRAIN_FN = """
    digits = load_digits()
    X = torch.tensor(digits.data / 16.0, dtype=torch.float32)
    y = torch.tensor(digits.target)
    train_loader = DataLoader(TensorDataset(X[:1500], y[:1500]), batch_size=50, shuffle=True,
                              generator=torch.Generator().manual_seed(7193))
    X_test, y_test = X[1500:], y[1500:]
    EPOCHS = @N@


    def make_model():
        torch.manual_seed(7193)
        return nn.Sequential(nn.Linear(64, 512), nn.Tanh(), nn.Linear(512, 512), nn.Tanh(), nn.Linear(512, 10))


    def train(model, optimizer, loader, epochs):
        loss_fn = nn.CrossEntropyLoss()
        curve = []
        for epoch in range(epochs):
            total = 0.0
            for xb, yb in loader:
                <<step>>
                total += loss.item() * len(xb)
            curve.append(total / len(loader.dataset))
        return curve
    """

case(
    name="torch_optimizer_comparison_closure",
    library="torch",
    category="api",
    needs_runtime=True,
    exception="TypeError",
    message_contains="missing 1 required positional argument: 'closure'",
    diagnosis="the comparison trains one fresh model per optimizer with the same train(); the "
    "last optimizer, L-BFGS, needs step(closure) and fails on the plain step() once the "
    "other five have trained",
    cells=[
        """
        import numpy as np
        import pandas as pd
        import torch
        from torch import nn
        from torch.utils.data import DataLoader, TensorDataset
        from sklearn.datasets import load_digits

        torch.set_num_threads(1)
        """,
        fill(TRAIN_FN, step="""\
                optimizer.zero_grad()
                loss = loss_fn(model(xb), yb)
                loss.backward()
                optimizer.step()"""),
        """
        optimizers = {
            "sgd": lambda params: torch.optim.SGD(params, lr=0.05),
            "nesterov": lambda params: torch.optim.SGD(params, lr=0.05, momentum=0.9, nesterov=True),
            "adam": lambda params: torch.optim.Adam(params, lr=1e-3),
            "rmsprop": lambda params: torch.optim.RMSprop(params, lr=5e-4),
            "adagrad": lambda params: torch.optim.Adagrad(params, lr=0.02),
            "lbfgs": lambda params: torch.optim.LBFGS(params, lr=0.05, max_iter=1, history_size=10),
        }
        curves, test_acc = {}, {}
        for name, make_optimizer in optimizers.items():
            model = make_model()
            curves[name] = train(model, make_optimizer(model.parameters()), train_loader, EPOCHS)
            with torch.no_grad():
                test_acc[name] = (model(X_test).argmax(dim=1) == y_test).float().mean().item()
            print(f"{name:>9}: final loss {curves[name][-1]:.4f}, test accuracy {test_acc[name]:.3f}")
        summary = pd.DataFrame(curves, index=pd.RangeIndex(1, EPOCHS + 1, name="epoch"))
        print(summary.iloc[[0, EPOCHS // 2, -1]].round(4))
        print(pd.Series(test_acc).sort_values(ascending=False))
        """,
    ],
    target=2,
    n=120,
    small=1,
    fix={1: fill(TRAIN_FN, step="""\
                def closure():
                    optimizer.zero_grad()
                    loss = loss_fn(model(xb), yb)
                    loss.backward()
                    return loss

                loss = optimizer.step(closure)""")},
)


# ---------------------------------------------------------------------------------------------
# Keras

SNAPSHOT_FIT = """
    keras.utils.set_random_seed(7277)
    model = keras.Sequential([
        keras.layers.Input((30,)),
        keras.layers.Dense(256, activation="relu"),
        keras.layers.Dense(256, activation="relu"),
        keras.layers.Dense(4, activation="softmax"),
    ])
    model.compile(optimizer=keras.optimizers.SGD(0.05, momentum=0.9),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    snapshots = Snapshots(every=SNAPSHOT_EVERY)
    history = model.fit(X_train, y_train, epochs=EPOCHS, batch_size=32, callbacks=[snapshots], verbose=0)
    last_acc = model.evaluate(X_test, y_test, verbose=0)[1]
    <<average>>
    avg_acc = model.evaluate(X_test, y_test, verbose=0)[1]
    print(f"last weights {last_acc:.3f}, average of {len(snapshots.weights)} snapshots {avg_acc:.3f}")
    """

case(
    name="keras_snapshot_weight_average",
    library="keras",
    category="shape",
    needs_runtime=True,
    exception="ValueError",
    message_contains="inhomogeneous shape",
    diagnosis="each snapshot is a list of layer arrays of different shapes; np.mean over the "
    "list of snapshots cannot build one array from them, average layer by layer instead",
    cells=[
        """
        import numpy as np
        import keras
        from sklearn.datasets import make_classification
        from sklearn.preprocessing import StandardScaler

        X, y = make_classification(n_samples=@N@, n_features=30, n_informative=15, n_classes=4,
                                   n_clusters_per_class=2, class_sep=0.8, random_state=7277)
        X = StandardScaler().fit_transform(X).astype("float32")
        X_train, X_test, y_train, y_test = X[:-2000], X[-2000:], y[:-2000], y[-2000:]
        EPOCHS, SNAPSHOT_EVERY = 40, 5
        """,
        """
        class Snapshots(keras.callbacks.Callback):
            def __init__(self, every):
                super().__init__()
                self.every = every
                self.weights = []

            def on_epoch_end(self, epoch, logs=None):
                if (epoch + 1) % self.every == 0:
                    self.weights.append(self.model.get_weights())
        """,
        fill(SNAPSHOT_FIT, average="model.set_weights(np.mean(snapshots.weights, axis=0))"),
    ],
    target=2,
    n=30000,
    small=2600,
    fix={2: fill(SNAPSHOT_FIT,
        average="model.set_weights([np.mean(layer, axis=0) for layer in zip(*snapshots.weights)])")},
)

MULTI_OUTPUT = """
    keras.utils.set_random_seed(7331)
    inputs = keras.Input((24,))
    shared = keras.layers.Dense(256, activation="relu")(inputs)
    shared = keras.layers.Dense(128, activation="relu")(shared)
    kind_out = keras.layers.Dense(3, activation="softmax", name="kind")(shared)
    amount_out = keras.layers.Dense(1, name="amount")(keras.layers.Dense(64, activation="relu")(shared))
    model = keras.Model(inputs, {"kind": kind_out, "amount": amount_out})
    model.compile(optimizer=keras.optimizers.Adam(1e-3),
                  loss={"kind": "sparse_categorical_crossentropy", "amount": "huber"},
                  loss_weights={"kind": 1.0, "amount": 0.5},
                  metrics={"kind": ["accuracy"], "amount": ["mae"]})
    history = model.fit(X_train, y_train, validation_split=0.1, epochs=EPOCHS, batch_size=64, verbose=0)
    <<evaluate>>
    """

case(
    name="keras_claims_two_heads_evaluate",
    library="keras",
    category="api",
    needs_runtime=True,
    exception="ValueError",
    message_contains="too many values to unpack",
    diagnosis="a model with two outputs and a metric on each evaluates to five numbers (total "
    "loss, two head losses, two metrics), not to a loss and an accuracy",
    cells=[
        """
        import numpy as np
        import keras

        rng = np.random.default_rng(7331)
        N_CLAIMS = @N@
        features = rng.normal(size=(N_CLAIMS, 24)).astype("float32")
        kind = np.argmax(features @ rng.normal(size=(24, 3)) + rng.gumbel(size=(N_CLAIMS, 3)), axis=1)
        amount = np.exp(4 + 0.3 * features[:, :4].sum(axis=1) + 0.5 * kind + rng.normal(0, 0.3, N_CLAIMS))
        log_amount = np.log(amount).astype("float32")
        split = int(0.8 * N_CLAIMS)
        X_train, X_test = features[:split], features[split:]
        y_train = {"kind": kind[:split], "amount": log_amount[:split]}
        y_test = {"kind": kind[split:], "amount": log_amount[split:]}
        EPOCHS = 30
        """,
        fill(MULTI_OUTPUT, evaluate="""\
    test_loss, test_acc = model.evaluate(X_test, y_test, verbose=0)
    print(f"test loss {test_loss:.3f}, claim-type accuracy {test_acc:.3f}")"""),
    ],
    target=1,
    n=75000,
    small=3000,
    fix={1: fill(MULTI_OUTPUT, evaluate="""\
    scores = model.evaluate(X_test, y_test, verbose=0, return_dict=True)
    print(f"test loss {scores['loss']:.3f}, claim-type accuracy {scores['kind_accuracy']:.3f}")""")},
)


# ---------------------------------------------------------------------------------------------
# scikit-learn

FOLD_LOOP = """
    folds = StratifiedKFold(n_splits=5, shuffle=True, random_state=7393)
    importances, aucs = [], []
    for fold, (tr, te) in enumerate(folds.split(df, y)):
        pipe = Pipeline([
            ("prep", ColumnTransformer([
                ("num", StandardScaler(), numeric),
                ("cat", OneHotEncoder(handle_unknown="ignore"), categorical),
            ])),
            ("forest", RandomForestClassifier(n_estimators=300, min_samples_leaf=2, random_state=fold)),
        ])
        pipe.fit(df.iloc[tr], y[tr])
        aucs.append(roc_auc_score(y[te], pipe.predict_proba(df.iloc[te])[:, 1]))
        importances.append(pipe.named_steps["forest"].feature_importances_)
        print(f"fold {fold}: AUC {aucs[-1]:.4f}")
    imp = pd.DataFrame(importances, columns=<<columns>>)
    order = imp.mean().sort_values().index
    imp[order].mean().plot.barh(xerr=imp[order].std(), figsize=(6, 8))
    print(f"mean AUC {np.mean(aucs):.4f} +/- {np.std(aucs):.4f}")
    """

case(
    name="sklearn_fold_importances_encoded_columns",
    library="sklearn",
    category="shape",
    needs_runtime=True,
    exception="AssertionError",
    message_contains="columns passed, passed data had",
    diagnosis="the forest sees the one-hot encoded columns (one per category level), so each "
    "fold's importances are longer than the list of raw column names given to the DataFrame",
    cells=[
        """
        import numpy as np
        import pandas as pd
        from sklearn.compose import ColumnTransformer
        from sklearn.datasets import make_classification
        from sklearn.ensemble import RandomForestClassifier
        from sklearn.metrics import roc_auc_score
        from sklearn.model_selection import StratifiedKFold
        from sklearn.pipeline import Pipeline
        from sklearn.preprocessing import OneHotEncoder, StandardScaler
        """,
        """
        X_num, y = make_classification(n_samples=@N@, n_features=8, n_informative=5, random_state=7393)
        rng = np.random.default_rng(7393)
        numeric = [f"usage_{i}" for i in range(8)]
        df = pd.DataFrame(X_num, columns=numeric)
        df["plan"] = rng.choice(["basic", "plus", "pro", "team"], len(df))
        df["region"] = np.where(y == 1,
                                rng.choice(["north", "south", "east", "west", "central"], len(df), p=[0.3, 0.1, 0.2, 0.2, 0.2]),
                                rng.choice(["north", "south", "east", "west", "central"], len(df)))
        df["channel"] = rng.choice(["web", "app", "store"], len(df))
        categorical = ["plan", "region", "channel"]
        """,
        fill(FOLD_LOOP, columns="numeric + categorical"),
    ],
    target=2,
    n=30000,
    small=600,
    fix={2: fill(FOLD_LOOP, columns='pipe.named_steps["prep"].get_feature_names_out()')},
)

SEARCH = """
    pipe = Pipeline([("scale", StandardScaler()), ("pca", PCA(random_state=7433)), ("svc", SVC())])
    space = {
        "pca__n_components": [16, 24, 32, 48],
        "svc__C": loguniform(1e-2, 1e3),
        "svc__gamma": loguniform(1e-5, 1e-1),
        "svc__kernel": ["rbf", "poly", "sigmoid"],
    }
    search = RandomizedSearchCV(pipe, space, n_iter=N_CANDIDATES, cv=5, random_state=7433)
    search.fit(X_train, y_train)
    print(f"best CV accuracy {search.best_score_:.4f}")
    best = search.best_params_
    features = search.best_estimator_[:-1]
    svc = SVC(C=best[<<c>>], gamma=best[<<gamma>>], kernel=best[<<kernel>>], probability=True, random_state=7433)
    svc.fit(features.transform(X_train), y_train)
    proba = svc.predict_proba(features.transform(X_test))
    print(f"test log loss {log_loss(y_test, proba):.4f}, accuracy {(proba.argmax(axis=1) == y_test).mean():.4f}")
    """


case(
    name="sklearn_random_search_param_names",
    library="sklearn",
    category="key",
    needs_runtime=True,
    exception="KeyError",
    message_contains="'C'",
    diagnosis="the searched estimator is a pipeline, so best_params_ names the SVC's "
    "parameters with the step's prefix (svc__C, svc__gamma, svc__kernel): rebuilding the final "
    "SVC from best_params_['C'] fails once the search is over",
    cells=[
        """
        import numpy as np
        from scipy.stats import loguniform
        from sklearn.datasets import load_digits
        from sklearn.decomposition import PCA
        from sklearn.metrics import log_loss
        from sklearn.model_selection import RandomizedSearchCV, train_test_split
        from sklearn.pipeline import Pipeline
        from sklearn.preprocessing import StandardScaler
        from sklearn.svm import SVC

        digits = load_digits()
        X_train, X_test, y_train, y_test = train_test_split(digits.data, digits.target, test_size=0.25,
                                                            stratify=digits.target, random_state=7433)
        N_CANDIDATES = @N@
        """,
        fill(SEARCH, c='"C"', gamma='"gamma"', kernel='"kernel"'),
    ],
    target=1,
    n=350,
    small=4,
    fix={1: fill(SEARCH, c='"svc__C"', gamma='"svc__gamma"', kernel='"svc__kernel"')},
)

OOF = """
    models = {
        "logreg": make_pipeline(StandardScaler(), LogisticRegression(C=0.5, max_iter=5000)),
        "forest": RandomForestClassifier(n_estimators=N_TREES, random_state=7517),
        "extra_trees": ExtraTreesClassifier(n_estimators=N_TREES, random_state=7517),
        "boosting": GradientBoostingClassifier(n_estimators=N_TREES, learning_rate=0.05, subsample=0.8,
                                               random_state=7517),
        "svm": make_pipeline(StandardScaler(), SVC(C=1.0, kernel="rbf"<<probability>>)),
    }
    oof = {}
    for name, model in models.items():
        oof[name] = cross_val_predict(model, X, y, cv=cv, method="predict_proba")[:, 1]
        print(f"{name:>11}: log loss {log_loss(y, oof[name]):.4f}, AUC {roc_auc_score(y, oof[name]):.4f}")
    blend = pd.DataFrame(oof)
    stacker = LogisticRegression(max_iter=1000).fit(blend, y)
    print(pd.Series(stacker.coef_[0], index=blend.columns).round(3))
    print(blend.corr().round(3))
    """

case(
    name="sklearn_out_of_fold_probabilities_per_model",
    library="sklearn",
    category="api",
    needs_runtime=True,
    exception="AttributeError",
    message_contains="has no attribute 'predict_proba'",
    diagnosis="out-of-fold probabilities are collected per model; the last model, an SVC built "
    "without probability=True, has no predict_proba",
    cells=[
        """
        import numpy as np
        import pandas as pd
        from sklearn.datasets import load_breast_cancer
        from sklearn.ensemble import ExtraTreesClassifier, GradientBoostingClassifier, RandomForestClassifier
        from sklearn.linear_model import LogisticRegression
        from sklearn.metrics import log_loss, roc_auc_score
        from sklearn.model_selection import StratifiedKFold, cross_val_predict
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler
        from sklearn.svm import SVC

        X, y = load_breast_cancer(return_X_y=True)
        cv = StratifiedKFold(n_splits=10, shuffle=True, random_state=7517)
        N_TREES = @N@
        """,
        fill(OOF, probability=""),
    ],
    target=1,
    n=1050,
    small=10,
    fix={1: fill(OOF, probability=", probability=True, random_state=7517")},
)


# ---------------------------------------------------------------------------------------------
# pandas

CHUNKS = """
    parts = []
    for start in range(0, len(transactions), CHUNK):
        chunk = transactions.iloc[start:start + CHUNK].copy()
        chunk["month"] = chunk["timestamp"].dt.to_period("M")
        chunk["revenue"] = chunk.apply(line_total, axis=1)
        chunk["basket"] = chunk["store"] + "/" + chunk["timestamp"].dt.strftime("%Y-%m-%d %H")
        agg = chunk.groupby(["store", "month"]).agg(
            revenue=("revenue", "sum"),
            units=("qty", "sum"),
            baskets=("basket", "nunique"),
            skus=("sku", "nunique"),
        )
        parts.append(agg.reset_index())
    monthly = pd.concat(parts, ignore_index=True)
    revenue = <<pivot>>
    print(revenue.sum(axis=0).round(0))
    print(revenue.rank(axis=1, ascending=False).mean(axis=1).sort_values().head(10))
    """

case(
    name="pandas_chunked_monthly_revenue_pivot",
    library="pandas",
    category="shape",
    needs_runtime=True,
    exception="ValueError",
    message_contains="Index contains duplicate entries",
    diagnosis="the transactions are aggregated chunk by chunk; a month that straddles two "
    "chunks gives a store two rows for that month, which pivot refuses; pivot_table sums them",
    cells=[
        """
        import numpy as np
        import pandas as pd

        rng = np.random.default_rng(7573)
        N_ROWS = @N@
        stores = np.array([f"S{i:03d}" for i in range(80)])
        transactions = pd.DataFrame({
            "store": rng.choice(stores, N_ROWS),
            "timestamp": pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 366 * 86400, N_ROWS), unit="s"),
            "sku": rng.integers(0, 20000, N_ROWS),
            "qty": rng.poisson(1.5, N_ROWS) + 1,
            "unit_price": rng.gamma(2.0, 8.0, N_ROWS).round(2),
            "discount": rng.choice([0.0, 0.1, 0.25], N_ROWS, p=[0.8, 0.15, 0.05]),
            "member": rng.random(N_ROWS) < 0.3,
        }).sort_values("timestamp", ignore_index=True)
        CHUNK = 250_000


        def line_total(row):
            price = row["unit_price"] * (1 - row["discount"])
            if row["member"]:
                price *= 0.95
            if row["qty"] >= 3:
                price *= 0.9
            return round(price * row["qty"], 2)
        """,
        fill(CHUNKS, pivot='monthly.pivot(index="store", columns="month", values="revenue")'),
    ],
    target=1,
    n=3_800_000,
    small=500_000,
    fix={1: fill(CHUNKS,
        pivot='monthly.pivot_table(index="store", columns="month", values="revenue", aggfunc="sum")')},
)

USERS = """
    rows = []
    for user, ev in events.groupby("user_id"):
        ev = ev.sort_values("ts")
        counts = ev["event"].value_counts()
        gaps = ev["ts"].diff().dt.total_seconds() / 3600
        sessions = (gaps.isna() | (gaps > 0.5)).cumsum()
        first_purchase = ev.loc[ev["event"] == "purchase", "ts"].min()
        rows.append({
            "user_id": user,
            "signup_day": ev["signup_day"].iloc[0],
            "sessions": sessions.nunique(),
            "views": counts["view"],
            "carts": <<carts>>,
            "purchases": <<purchases>>,
            "hours_to_purchase": (first_purchase - ev["ts"].iloc[0]) / pd.Timedelta(hours=1),
            "median_gap_h": gaps.median(),
        })
    features = pd.DataFrame(rows)
    features["converted"] = features["purchases"] > 0
    by_activity = features.groupby(pd.qcut(features["sessions"], 5, duplicates="drop"), observed=True)
    print(by_activity[["converted", "purchases", "hours_to_purchase"]].mean().round(3))
    print(f"{features['converted'].mean():.1%} of {len(features)} users converted")
    """

case(
    name="pandas_user_features_event_counts",
    library="pandas",
    category="key",
    needs_runtime=True,
    exception="KeyError",
    message_contains="purchase",
    diagnosis="value_counts of a user's events only has the event types that user produced; "
    "the most recent sign-ups have few events and some have never purchased, so counts['purchase'] "
    "fails late in the loop over users",
    cells=[
        """
        import numpy as np
        import pandas as pd

        rng = np.random.default_rng(7619)
        N_USERS = @N@
        signup_day = np.sort(rng.integers(0, 180, N_USERS))
        n_events = 1 + rng.poisson(4 * (180 - signup_day))
        user_id = np.repeat(np.arange(N_USERS), n_events)
        start = pd.Timestamp("2024-01-01") + pd.to_timedelta(np.repeat(signup_day, n_events), unit="D")
        offset_h = rng.exponential(6.0, len(user_id)).round(3)
        events = pd.DataFrame({
            "user_id": user_id,
            "signup_day": np.repeat(signup_day, n_events),
            "ts": start + pd.to_timedelta(np.minimum(offset_h * rng.uniform(1, 30, len(user_id)), 24 * (180 - np.repeat(signup_day, n_events)) + 23), unit="h"),
            "event": rng.choice(["view", "cart", "purchase"], len(user_id), p=[0.65, 0.25, 0.1]),
        })
        first = np.r_[0, np.cumsum(n_events)[:-1]]
        events.loc[first, "event"] = "view"
        """,
        fill(USERS, carts='counts["cart"]', purchases='counts["purchase"]'),
    ],
    target=1,
    n=38000,
    small=400,
    fix={1: fill(USERS, carts='counts.get("cart", 0)', purchases='counts.get("purchase", 0)')},
)


# ---------------------------------------------------------------------------------------------
# statsmodels and NumPy

ORDERS = """
    HORIZON = 28
    fits = {}
    for p, d, q in itertools.product(range(3), range(2), range(3)):
        for P, Q in [(0, 1), (1, 0), (1, 1)]:
            model = SARIMAX(train, order=(p, d, q), seasonal_order=(P, 0, Q, 7), trend="c" if d == 0 else "n")
            try:
                fits[(p, d, q, P, Q)] = model.fit(disp=False, maxiter=200)
            except (np.linalg.LinAlgError, ValueError):
                continue
    aic = pd.Series({order: fit.aic for order, fit in fits.items()}).sort_values()
    best_order = aic.index[0]
    forecast = fits[best_order].forecast(steps=<<steps>>)
    print("best order", best_order, "MAE", round(mean_absolute_error(test, forecast), 3))
    print(aic.head(8).round(1))
    fig, ax = plt.subplots(figsize=(9, 3))
    ax.plot(train.index[-120:], train.iloc[-120:], label="train")
    ax.plot(test.index, test, label="test")
    ax.plot(test.index, forecast, label=f"SARIMAX{best_order}")
    ax.legend()
    """

case(
    name="statsmodels_sarimax_order_grid_horizon",
    library="statsmodels",
    category="shape",
    needs_runtime=True,
    exception="ValueError",
    message_contains="inconsistent numbers of samples",
    diagnosis="after the grid of SARIMAX orders the best fit forecasts HORIZON = 28 days while "
    "the held-out test period has 35 days; the MAE compares series of different lengths",
    cells=[
        """
        import itertools
        import warnings

        import matplotlib.pyplot as plt
        import numpy as np
        import pandas as pd
        from sklearn.metrics import mean_absolute_error
        from statsmodels.tsa.statespace.sarimax import SARIMAX

        warnings.filterwarnings("ignore")
        """,
        """
        rng = np.random.default_rng(7691)
        days = pd.date_range("2021-01-01", periods=@N@, freq="D")
        weekly = np.array([0.9, 0.95, 1.0, 1.0, 1.1, 1.35, 1.2])[days.dayofweek]
        level = 200 + np.cumsum(rng.normal(0.05, 1.5, len(days)))
        noise = np.zeros(len(days))
        for i in range(1, len(days)):
            noise[i] = 0.6 * noise[i - 1] + rng.normal(0, 6)
        visits = pd.Series(level * weekly + noise, index=days, name="visits")
        TEST_DAYS = 35
        train, test = visits.iloc[:-TEST_DAYS], visits.iloc[-TEST_DAYS:]
        """,
        fill(ORDERS, steps="HORIZON"),
    ],
    target=2,
    n=1600,
    small=120,
    fix={2: fill(ORDERS, steps="len(test)")},
)

MLP = """
    HIDDEN = 512
    W1 = rng.normal(0, np.sqrt(2 / X_tr.shape[1]), (X_tr.shape[1], HIDDEN))
    b1 = np.zeros(HIDDEN)
    W2 = rng.normal(0, np.sqrt(2 / HIDDEN), (HIDDEN, N_CLASSES))
    b2 = np.zeros(N_CLASSES)
    LR, BATCH, PATIENCE, SNAPSHOT_EVERY, MAX_EPOCHS = 0.01, 32, 8, 5, 300
    history, snapshots = [], []
    best_loss, best_epoch, waited, epoch = np.inf, 0, 0, 0
    while epoch < MAX_EPOCHS:
        order = rng.permutation(len(X_tr))
        for i in range(0, len(order), BATCH):
            idx = order[i:i + BATCH]
            h, p = forward(X_tr[idx], W1, b1, W2, b2)
            dz2 = p.copy()
            dz2[np.arange(len(idx)), y_tr[idx]] -= 1
            dz2 /= len(idx)
            dh = (dz2 @ W2.T) * (h > 0)
            W2 -= LR * (h.T @ dz2 + 1e-4 * W2)
            b2 -= LR * dz2.sum(axis=0)
            W1 -= LR * (X_tr[idx].T @ dh + 1e-4 * W1)
            b1 -= LR * dh.sum(axis=0)
        val_loss = cross_entropy(forward(X_va, W1, b1, W2, b2)[1], y_va)
        history.append(val_loss)
        if epoch % SNAPSHOT_EVERY == 0:
            snapshots.append((W1.copy(), b1.copy(), W2.copy(), b2.copy()))
        if val_loss < best_loss - 1e-4:
            best_loss, best_epoch, waited = val_loss, epoch, 0
        else:
            waited += 1
            if waited >= PATIENCE:
                break
        epoch += 1
    W1, b1, W2, b2 = snapshots[<<index>>]
    test_acc = (forward(X_te, W1, b1, W2, b2)[1].argmax(axis=1) == y_te).mean()
    print(f"stopped after {len(history)} epochs, best validation loss {best_loss:.4f} at epoch {best_epoch}, "
          f"test accuracy {test_acc:.3f}")
    plt.plot(history)
    plt.axvline(best_epoch, linestyle="--")
    """

case(
    name="numpy_mlp_early_stopping_snapshot",
    library="numpy",
    category="index",
    needs_runtime=True,
    exception="IndexError",
    message_contains="list index out of range",
    diagnosis="weights are snapshotted every fifth epoch only, so the list of snapshots is five "
    "times shorter than the number of epochs; indexing it with the best epoch after early "
    "stopping runs past its end",
    cells=[
        """
        import numpy as np
        import matplotlib.pyplot as plt
        from sklearn.datasets import make_classification
        from sklearn.model_selection import train_test_split

        X, y = make_classification(n_samples=@N@, n_features=60, n_informative=24, n_classes=5,
                                   n_clusters_per_class=2, flip_y=0.03, random_state=7759)
        X_tr, X_rest, y_tr, y_rest = train_test_split(X, y, test_size=0.3, random_state=7759)
        X_va, X_te, y_va, y_te = train_test_split(X_rest, y_rest, test_size=0.5, random_state=7759)
        mu, sd = X_tr.mean(axis=0), X_tr.std(axis=0)
        X_tr, X_va, X_te = (X_tr - mu) / sd, (X_va - mu) / sd, (X_te - mu) / sd
        N_CLASSES = 5
        rng = np.random.default_rng(7759)
        """,
        """
        def forward(X, W1, b1, W2, b2):
            h = np.maximum(X @ W1 + b1, 0)
            z = h @ W2 + b2
            z -= z.max(axis=1, keepdims=True)
            p = np.exp(z)
            return h, p / p.sum(axis=1, keepdims=True)


        def cross_entropy(p, y):
            return float(-np.log(p[np.arange(len(y)), y] + 1e-12).mean())
        """,
        fill(MLP, index="best_epoch"),
    ],
    target=2,
    n=145000,
    small=1500,
    fix={2: fill(MLP, index="best_epoch // SNAPSHOT_EVERY")},
)


def main() -> None:
    seconds = json.loads(SECONDS_FILE.read_text()) if SECONDS_FILE.exists() else {}
    small = "--small" in sys.argv
    names = [c.name for c in CASES]
    if len(set(names)) != len(names):
        raise SystemExit("duplicate case names")
    OUT.mkdir(exist_ok=True)
    for c in CASES:
        write_case(c, OUT / c.name, small)
    manifest = [entry(c, seconds) for c in CASES]
    (OUT / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"{len(CASES)} cases under {OUT}")


if __name__ == "__main__":
    main()
