"""Generate bench/long-cells/unseen4/: twelve more long-cell crash/fix pairs (torch 3, Keras 2,
scikit-learn 3, pandas 2, statsmodels 1, NumPy 1), in the format and with the writing conventions
of build.py (same Case fields, `@N@` size, cell ids, execution counts, no outputs). The set was
written and verified before crane ran on it, by someone who had not read crane's dry-run code.
Not split: the whole folder is measured, by its totals only.

    .venv/bin/python bench/long-cells/build_unseen4.py
    .venv/bin/python bench/long-cells/build_unseen4.py --small /tmp/unseen4-small   # tiny sizes
    MPLBACKEND=Agg .venv/bin/python bench/long-cells/verify.py bench/long-cells/unseen4 --record bench/long-cells/unseen4/target_seconds.json
    .venv/bin/python bench/long-cells/build_unseen4.py      # again, to write the seconds into the manifest
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from build import Case, code, entry, write_case  # noqa: E402

OUT = HERE / "unseen4"
SECONDS_FILE = OUT / "target_seconds.json"

CASES: list[Case] = []


def case(**kwargs) -> None:
    kwargs["cells"] = [code(c) for c in kwargs["cells"]]
    kwargs["fix"] = {i: code(c) for i, c in kwargs.get("fix", {}).items()}
    CASES.append(Case(**kwargs))


# ---------------------------------------------------------------------------------------------
# torch

TORCH_REGRESSION_TARGET = """
train_losses, val_losses = [], []
for epoch in range(EPOCHS):
    model.train()
    running = 0.0
    for xb, yb in train_loader:
        optimizer.zero_grad()
        loss = loss_fn(model(xb).squeeze(1), yb)
        loss.backward()
        optimizer.step()
        running += loss.item() * len(xb)
    train_losses.append(running / len(train_loader.dataset))
    model.eval()
    with torch.no_grad():
        val_losses.append(loss_fn(model(X_val_t).squeeze(1), y_val_t).item())
    if epoch % 20 == 0:
        print(f"epoch {epoch:3d}  train {train_losses[-1]:.1f}  val {val_losses[-1]:.1f}")

model.eval()
@PREDICT@
print(f"test R^2 {r2_score(y_test, test_pred):.3f}")
print(f"test MAE {mean_absolute_error(y_test, test_pred):.2f}")
@TAIL@
"""

case(
    name="torch_house_prices_metrics_on_grad_tensor",
    library="torch",
    category="type",
    needs_runtime=True,
    exception="RuntimeError",
    message_contains="Can't call numpy() on Tensor that requires grad",
    diagnosis="After training, the test predictions are computed outside torch.no_grad() and "
    "handed as a tensor to r2_score; scikit-learn converts it with numpy(), which a tensor "
    "that requires grad refuses. Predict under no_grad and pass .numpy().",
    cells=[
        """
        import numpy as np
        import torch
        from torch import nn
        from torch.utils.data import DataLoader, TensorDataset
        import matplotlib.pyplot as plt
        from sklearn.datasets import make_regression
        from sklearn.metrics import mean_absolute_error, r2_score
        from sklearn.model_selection import train_test_split

        torch.manual_seed(0)
        torch.set_num_threads(1)
        """,
        """
        X, y = make_regression(n_samples=24000, n_features=30, n_informative=18, noise=25.0,
                               random_state=3)
        y = y + 0.02 * X[:, 0] ** 2 * y.std()
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=0)
        X_train, X_val, y_train, y_val = train_test_split(X_train, y_train, test_size=0.15, random_state=0)
        mu, sd = X_train.mean(axis=0), X_train.std(axis=0)
        as_t = lambda a: torch.tensor(a, dtype=torch.float32)
        X_train_t, X_val_t, X_test_t = as_t((X_train - mu) / sd), as_t((X_val - mu) / sd), as_t((X_test - mu) / sd)
        y_train_t, y_val_t = as_t(y_train), as_t(y_val)
        train_loader = DataLoader(TensorDataset(X_train_t, y_train_t), batch_size=128, shuffle=True)
        print(X_train_t.shape, X_val_t.shape, X_test_t.shape)
        """,
        """
        model = nn.Sequential(
            nn.Linear(30, 256), nn.ReLU(),
            nn.Linear(256, 128), nn.ReLU(),
            nn.Linear(128, 1),
        )
        loss_fn = nn.MSELoss()
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        EPOCHS = @N@
        """,
        TORCH_REGRESSION_TARGET.replace("@PREDICT@", "test_pred = model(X_test_t).squeeze(1)")
        .replace("@TAIL@", ""),
    ],
    target=3,
    n=170,
    small=2,
    fix={
        3: TORCH_REGRESSION_TARGET.replace(
            "@PREDICT@", "with torch.no_grad():\n    test_pred = model(X_test_t).squeeze(1).numpy()"
        ).replace(
            "@TAIL@",
            'fig, ax = plt.subplots(figsize=(7, 4))\n'
            'ax.plot(range(1, EPOCHS + 1), train_losses, label="train")\n'
            'ax.plot(range(1, EPOCHS + 1), val_losses, label="validation")\n'
            'ax.set_xlabel("epoch")\nax.set_ylabel("MSE")\nax.set_yscale("log")\nax.legend()',
        ),
    },
)

GRU_TARGET = """
hidden = model.init_hidden(BATCH)
for epoch in range(EPOCHS):
    model.train()
    running = 0.0
    for xb, yb in train_loader:
        optimizer.zero_grad()
        loss = loss_fn(model(xb, hidden), yb)
        loss.backward()
        optimizer.step()
        running += loss.item()
    if epoch % 10 == 0:
        print(f"epoch {epoch:3d}  loss {running / len(train_loader):.4f}")

model.eval()
test_losses, batch_sizes, correct = [], [], 0
with torch.no_grad():
    for xb, yb in test_loader:
        logits = model(xb, @EVAL_HIDDEN@)
        test_losses.append(loss_fn(logits, yb).item())
        batch_sizes.append(len(xb))
        correct += (logits.argmax(1) == yb).sum().item()
print(f"test loss {np.average(test_losses, weights=batch_sizes):.4f}")
print(f"test accuracy {correct / sum(batch_sizes):.3f}")
"""

case(
    name="torch_gru_sensor_eval_reuses_train_hidden",
    library="torch",
    category="shape",
    needs_runtime=True,
    exception="RuntimeError",
    message_contains="Expected hidden size",
    diagnosis="The initial hidden state is made once for batches of 64; training drops its last "
    "incomplete batch, but the test loader does not, so after training its last batch of "
    "900 % 64 = 4 sequences meets a hidden state of batch 64 and the GRU refuses it. Make the "
    "hidden state for each batch's size.",
    cells=[
        """
        import numpy as np
        import torch
        from torch import nn
        from torch.utils.data import DataLoader, TensorDataset

        torch.manual_seed(0)
        torch.set_num_threads(1)
        """,
        """
        rng = np.random.default_rng(21)

        def sensor_windows(n, length=60):
            kind = rng.integers(0, 3, size=n)
            t = np.arange(length) / 10.0
            freq = np.array([0.8, 1.3, 2.1])[kind][:, None] * rng.uniform(0.9, 1.1, size=(n, 1))
            phase = rng.uniform(0, 2 * np.pi, size=(n, 1))
            drift = rng.normal(scale=0.02, size=(n, 1)) * np.arange(length)
            x = np.sin(freq * t + phase) + drift + rng.normal(scale=0.6, size=(n, length))
            return x[:, :, None].astype(np.float32), kind

        X_train, y_train = sensor_windows(3200)
        X_test, y_test = sensor_windows(900)
        print(X_train.shape, X_test.shape)
        """,
        """
        class SensorGRU(nn.Module):
            def __init__(self, hidden_size=48, n_classes=3):
                super().__init__()
                self.hidden_size = hidden_size
                self.gru = nn.GRU(1, hidden_size, batch_first=True)
                self.head = nn.Linear(hidden_size, n_classes)

            def init_hidden(self, batch_size):
                return torch.zeros(1, batch_size, self.hidden_size)

            def forward(self, x, h0):
                out, _ = self.gru(x, h0)
                return self.head(out[:, -1])

        BATCH = 64
        train_loader = DataLoader(TensorDataset(torch.from_numpy(X_train), torch.from_numpy(y_train)),
                                  batch_size=BATCH, shuffle=True, drop_last=True)
        test_loader = DataLoader(TensorDataset(torch.from_numpy(X_test), torch.from_numpy(y_test)),
                                 batch_size=BATCH)
        model = SensorGRU()
        loss_fn = nn.CrossEntropyLoss()
        optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
        EPOCHS = @N@
        """,
        GRU_TARGET.replace("@EVAL_HIDDEN@", "hidden"),
    ],
    target=3,
    n=48,
    small=1,
    fix={3: GRU_TARGET.replace("@EVAL_HIDDEN@", "model.init_hidden(len(xb))")},
)

AE_TARGET = """
epoch_losses = []
for epoch in range(EPOCHS):
    model.train()
    running = 0.0
    for (xb,) in train_loader:
        optimizer.zero_grad()
        loss = loss_fn(model(xb), xb)
        loss.backward()
        optimizer.step()
        running += loss.item() * len(xb)
    epoch_losses.append(running / len(X_normal_t))
    if epoch % 10 == 0:
        print(f"epoch {epoch:3d}  reconstruction {epoch_losses[-1]:.4f}")

model.eval()
with torch.no_grad():
    errors = @ERRORS@
scores = pd.DataFrame({"error": errors.numpy(), "fraud": y_test})
threshold = scores.loc[scores["fraud"] == 0, "error"].quantile(0.99)
flagged = scores["error"] > threshold
print(f"ROC AUC {roc_auc_score(scores['fraud'], scores['error']):.3f}")
print(f"flagged {flagged.sum()} of {len(scores)}, recall {flagged[scores['fraud'] == 1].mean():.2f}")
"""

case(
    name="torch_autoencoder_fraud_unreduced_errors",
    library="torch",
    category="shape",
    needs_runtime=True,
    exception="ValueError",
    message_contains="Per-column arrays must each be 1-dimensional",
    diagnosis="The anomaly score uses MSELoss(reduction='none'), which keeps one error per "
    "feature (6000 x 24), not one per transaction; after training, the 2-D array cannot be a "
    "column of the scores DataFrame. Average over the features (mean(dim=1)).",
    cells=[
        """
        import numpy as np
        import pandas as pd
        import torch
        from torch import nn
        from torch.utils.data import DataLoader, TensorDataset
        from sklearn.metrics import roc_auc_score

        torch.manual_seed(0)
        torch.set_num_threads(1)
        """,
        """
        rng = np.random.default_rng(8)
        n_features, rank = 24, 5
        mixing = rng.normal(size=(rank, n_features))

        def transactions(n, fraud_rate=0.0):
            z = rng.normal(size=(n, rank))
            x = z @ mixing + rng.normal(scale=0.3, size=(n, n_features))
            fraud = rng.uniform(size=n) < fraud_rate
            x[fraud] += rng.normal(scale=2.5, size=(fraud.sum(), n_features))
            return x.astype(np.float32), fraud.astype(int)

        X_normal, _ = transactions(30000)
        X_test, y_test = transactions(6000, fraud_rate=0.02)
        mu, sd = X_normal.mean(axis=0), X_normal.std(axis=0)
        X_normal_t = torch.from_numpy((X_normal - mu) / sd)
        X_test_t = torch.from_numpy((X_test - mu) / sd)
        print(X_normal_t.shape, X_test_t.shape, y_test.sum(), "frauds in test")
        """,
        """
        model = nn.Sequential(
            nn.Linear(n_features, 64), nn.ReLU(),
            nn.Linear(64, 8), nn.ReLU(),
            nn.Linear(8, 64), nn.ReLU(),
            nn.Linear(64, n_features),
        )
        loss_fn = nn.MSELoss()
        score_fn = nn.MSELoss(reduction="none")
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        train_loader = DataLoader(TensorDataset(X_normal_t), batch_size=256, shuffle=True)
        EPOCHS = @N@
        """,
        AE_TARGET.replace("@ERRORS@", "score_fn(model(X_test_t), X_test_t)"),
    ],
    target=3,
    n=185,
    small=1,
    fix={3: AE_TARGET.replace("@ERRORS@", "score_fn(model(X_test_t), X_test_t).mean(dim=1)")},
)


# ---------------------------------------------------------------------------------------------
# Keras

KERAS_LR_TARGET = """
EPOCHS = @N@
keras.utils.set_random_seed(0)
model = keras.Sequential([
    keras.Input(shape=(X_train.shape[1],)),
    layers.Dense(256, activation="relu"),
    layers.Dropout(0.2),
    layers.Dense(128, activation="relu"),
    layers.Dense(4, activation="softmax"),
])
model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="sparse_categorical_crossentropy",
              metrics=["accuracy"])
decay = keras.callbacks.LearningRateScheduler(lambda epoch, lr: lr if epoch < 5 else lr * 0.95)
history = model.fit(X_train, y_train, epochs=EPOCHS, batch_size=128, validation_split=0.15,
                    callbacks=[decay], verbose=0)
test_loss, test_acc = model.evaluate(X_test, y_test, verbose=0)
print(f"test accuracy {test_acc:.3f}")
print(f"learning rate at the end: {float(model.optimizer.@LR@):.2e}")
@TAIL@
"""

case(
    name="keras_decay_report_optimizer_lr",
    library="keras",
    category="attribute",
    needs_runtime=False,
    exception="AttributeError",
    message_contains="has no attribute 'lr'",
    diagnosis="The report after training reads the optimizer's learning rate as optimizer.lr, the "
    "Keras 2 alias; Keras 3 optimizers only have learning_rate, so the cell fails after fit and "
    "evaluate. Read model.optimizer.learning_rate.",
    cells=[
        """
        import numpy as np
        import keras
        from keras import layers
        import matplotlib.pyplot as plt
        from sklearn.datasets import make_classification
        from sklearn.model_selection import train_test_split
        """,
        """
        X, y = make_classification(n_samples=30000, n_features=40, n_informative=16, n_redundant=8,
                                   n_classes=4, n_clusters_per_class=3, class_sep=0.8, random_state=11)
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, stratify=y, random_state=0)
        mu, sd = X_train.mean(axis=0), X_train.std(axis=0)
        X_train = ((X_train - mu) / sd).astype("float32")
        X_test = ((X_test - mu) / sd).astype("float32")
        print(X_train.shape, np.bincount(y_train))
        """,
        KERAS_LR_TARGET.replace("@LR@", "lr").replace("@TAIL@", ""),
    ],
    target=2,
    n=42,
    small=1,
    fix={
        2: KERAS_LR_TARGET.replace("@LR@", "learning_rate").replace(
            "@TAIL@",
            'epochs = range(1, EPOCHS + 1)\n'
            'fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))\n'
            'ax1.plot(epochs, history.history["loss"], label="train")\n'
            'ax1.plot(epochs, history.history["val_loss"], label="validation")\n'
            'ax1.legend()\n'
            'ax2.plot(epochs, history.history["learning_rate"])\n'
            'ax2.set_yscale("log")',
        )
    },
)

KERAS_LABELS_TARGET = """
EPOCHS = @N@
keras.utils.set_random_seed(3)
model = keras.Sequential([
    keras.Input(shape=(X_train.shape[1],)),
    layers.Dense(128, activation="relu"),
    layers.BatchNormalization(),
    layers.Dense(64, activation="relu"),
    layers.Dense(len(encoder.classes_), activation="softmax"),
])
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
history = model.fit(X_train, y_train_enc, epochs=EPOCHS, batch_size=64, validation_split=0.1, verbose=0)
print("last validation accuracy", round(history.history["val_accuracy"][-1], 3))

proba = model.predict(X_test, verbose=0)
y_pred = @PRED@
print(f"test accuracy {accuracy_score(y_test, y_pred):.3f}")
print(classification_report(y_test, y_pred))
"""

case(
    name="keras_tiers_report_encoded_predictions",
    library="keras",
    category="type",
    needs_runtime=True,
    exception="ValueError",
    message_contains="Mix of label input types",
    diagnosis="The network is trained on LabelEncoder codes, but the test labels stay tier "
    "names; after training, accuracy_score compares the string labels with the integer argmax "
    "codes and refuses the mix. Decode the predictions with encoder.inverse_transform.",
    cells=[
        """
        import numpy as np
        import pandas as pd
        import keras
        from keras import layers
        from sklearn.datasets import make_classification
        from sklearn.metrics import accuracy_score, classification_report
        from sklearn.model_selection import train_test_split
        from sklearn.preprocessing import LabelEncoder, StandardScaler
        """,
        """
        X, codes = make_classification(n_samples=22000, n_features=32, n_informative=14, n_classes=5,
                                       n_clusters_per_class=2, class_sep=0.9, random_state=4)
        tiers = np.array(["bronze", "silver", "gold", "platinum", "diamond"])
        customers = pd.DataFrame(X, columns=[f"f{i:02d}" for i in range(X.shape[1])])
        customers["tier"] = tiers[codes]
        train, test = train_test_split(customers, test_size=0.2, stratify=customers["tier"], random_state=1)
        scaler = StandardScaler().fit(train.drop(columns="tier"))
        X_train = scaler.transform(train.drop(columns="tier")).astype("float32")
        X_test = scaler.transform(test.drop(columns="tier")).astype("float32")
        encoder = LabelEncoder()
        y_train_enc = encoder.fit_transform(train["tier"])
        y_test = test["tier"].to_numpy()
        print(X_train.shape, X_test.shape, list(encoder.classes_))
        """,
        KERAS_LABELS_TARGET.replace("@PRED@", "proba.argmax(axis=1)"),
    ],
    target=2,
    n=62,
    small=1,
    fix={2: KERAS_LABELS_TARGET.replace("@PRED@", "encoder.inverse_transform(proba.argmax(axis=1))")},
)


# ---------------------------------------------------------------------------------------------
# scikit-learn

RF_SEARCH_TARGET = """
param_distributions = {
    "n_estimators": [60, 100, 140],
    "max_depth": [None, 8, 14, 20],
    "max_features": ["sqrt", 0.3, 0.5],
    "min_samples_leaf": [1, 2, 4, 8],
}
search = RandomizedSearchCV(
    RandomForestClassifier(@RF_ARGS@),
    param_distributions, n_iter=N_CANDIDATES, cv=5, scoring="roc_auc", random_state=0,
)
search.fit(X_train, y_train)
best = search.best_estimator_
print("best parameters:", search.best_params_)
print(f"cross-validated AUC {search.best_score_:.4f}")
print(f"out-of-bag accuracy {best.oob_score_:.4f}")
print(f"held-out AUC {roc_auc_score(y_test, best.predict_proba(X_test)[:, 1]):.4f}")
@TAIL@
"""

case(
    name="sklearn_forest_search_reads_oob_score",
    library="sklearn",
    category="attribute",
    needs_runtime=False,
    exception="AttributeError",
    message_contains="oob_score_",
    diagnosis="The random forest in the search is built without oob_score=True, so the refitted "
    "best estimator has no oob_score_; the report after the whole randomized search fails. Pass "
    "oob_score=True to the forest (or drop the out-of-bag line).",
    cells=[
        """
        import numpy as np
        import pandas as pd
        from sklearn.datasets import make_classification
        from sklearn.ensemble import RandomForestClassifier
        from sklearn.metrics import roc_auc_score
        from sklearn.model_selection import RandomizedSearchCV, train_test_split
        """,
        """
        X, y = make_classification(n_samples=6000, n_features=30, n_informative=10, n_redundant=6,
                                   weights=[0.8, 0.2], flip_y=0.03, random_state=6)
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, stratify=y, random_state=0)
        N_CANDIDATES = @N@
        print(X_train.shape, y_train.mean().round(3))
        """,
        RF_SEARCH_TARGET.replace("@RF_ARGS@", "random_state=0").replace("@TAIL@", ""),
    ],
    target=2,
    n=3,
    small=1,
    fix={
        2: RF_SEARCH_TARGET.replace("@RF_ARGS@", "random_state=0, oob_score=True").replace(
            "@TAIL@",
            'results = pd.DataFrame(search.cv_results_).set_index(pd.RangeIndex(1, N_CANDIDATES + 1, name="candidate"))\n'
            'results.sort_values("rank_test_score")[["params", "mean_test_score", "std_test_score", "mean_fit_time"]]',
        )
    },
)

CV_MODELS_TARGET = """
results = {}
for name, estimator in models.items():
    pipe = make_pipeline(StandardScaler(), estimator)
    scores = cross_validate(pipe, X, y, cv=5, scoring=["accuracy", "f1_macro"]@CV_ARGS@)
    results[name] = scores
    print(f"{name:>8}: accuracy {scores['test_accuracy'].mean():.3f}  "
          f"fit {scores['fit_time'].mean():.1f}s")

summary = pd.DataFrame({
    name: {
        "test_accuracy": r["test_accuracy"].mean(),
        "train_accuracy": r["train_accuracy"].mean(),
        "test_f1": r["test_f1_macro"].mean(),
    }
    for name, r in results.items()
}).T
summary["overfit_gap"] = summary["train_accuracy"] - summary["test_accuracy"]
summary.sort_values("test_accuracy", ascending=False)
"""

case(
    name="sklearn_model_zoo_overfit_gap_train_scores",
    library="sklearn",
    category="key",
    needs_runtime=False,
    exception="KeyError",
    message_contains="train_accuracy",
    diagnosis="cross_validate is called without return_train_score=True, so its results have "
    "test_* and timing keys only; the summary built after every model has been cross-validated "
    "reads 'train_accuracy' and fails. Ask cross_validate for the train scores.",
    cells=[
        """
        import numpy as np
        import pandas as pd
        from sklearn.datasets import make_classification
        from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import cross_validate
        from sklearn.neighbors import KNeighborsClassifier
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler
        from sklearn.svm import SVC
        """,
        """
        X, y = make_classification(n_samples=@N@, n_features=25, n_informative=12, n_redundant=5,
                                   n_classes=3, class_sep=0.9, random_state=12)
        models = {
            "logreg": LogisticRegression(max_iter=2000),
            "knn": KNeighborsClassifier(n_neighbors=15),
            "svc": SVC(C=3.0),
            "forest": RandomForestClassifier(n_estimators=200, random_state=0),
            "extra": ExtraTreesClassifier(n_estimators=300, random_state=0),
        }
        print(X.shape, np.bincount(y))
        """,
        CV_MODELS_TARGET.replace("@CV_ARGS@", ""),
    ],
    target=2,
    n=7800,
    small=300,
    fix={2: CV_MODELS_TARGET.replace("@CV_ARGS@", ", return_train_score=True")},
)

FOLDS_TARGET = """
aucs, best_iters, oof = [], [], np.zeros(len(y))
folds = StratifiedKFold(n_splits=N_FOLDS, shuffle=True, random_state=0)
for fold, (train_idx, valid_idx) in enumerate(folds.split(X, y), start=1):
    pipe = make_pipeline(
        StandardScaler(),
        GradientBoostingClassifier(n_estimators=300, learning_rate=0.1, max_depth=3, subsample=0.8,
                                   validation_fraction=0.1, n_iter_no_change=20, random_state=fold),
    )
    pipe.fit(X[train_idx], y[train_idx])
    oof[valid_idx] = pipe.predict_proba(X[valid_idx])[:, 1]
    aucs.append(roc_auc_score(y[valid_idx], oof[valid_idx]))
    best_iters.append(pipe[-1].n_estimators_)
    print(f"fold {fold:2d}: AUC {aucs[-1]:.4f}  iterations {best_iters[-1]}")

print(f"mean AUC {np.mean(aucs):.4f} +/- {@STD@:.4f}")
print(f"out-of-fold AUC {roc_auc_score(y, oof):.4f}")
@TAIL@
"""

case(
    name="sklearn_kfold_loop_std_of_score_list",
    library="sklearn",
    category="type",
    needs_runtime=False,
    exception="AttributeError",
    message_contains="'list' object has no attribute 'std'",
    diagnosis="The fold AUCs are appended to a Python list; after the last fold the summary line "
    "calls aucs.std(), a NumPy method that lists lack. Use np.std(aucs).",
    cells=[
        """
        import numpy as np
        import pandas as pd
        from sklearn.datasets import make_classification
        from sklearn.ensemble import GradientBoostingClassifier
        from sklearn.metrics import roc_auc_score
        from sklearn.model_selection import StratifiedKFold
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler
        """,
        """
        X, y = make_classification(n_samples=@N@, n_features=40, n_informative=15, n_redundant=10,
                                   weights=[0.7, 0.3], flip_y=0.05, class_sep=0.7, random_state=9)
        N_FOLDS = 10
        print(X.shape, y.mean().round(3))
        """,
        FOLDS_TARGET.replace("@STD@", "aucs.std()").replace("@TAIL@", ""),
    ],
    target=2,
    n=3600,
    small=800,
    fix={
        2: FOLDS_TARGET.replace("@STD@", "np.std(aucs)").replace(
            "@TAIL@",
            'pd.DataFrame({"fold": range(1, N_FOLDS + 1), "auc": aucs, "iterations": best_iters}).set_index("fold")',
        )
    },
)


# ---------------------------------------------------------------------------------------------
# pandas

COHORT_TARGET = """
months = sorted(events["month"].unique())
snapshots = []
for i, month in @MONTHS@:
    history = events[events["month"] <= month]
    features = history.groupby("customer_id").agg(
        n_orders=("amount", "size"),
        total_spend=("amount", "sum"),
        last_month=("month", "max"),
        n_categories=("category", "nunique"),
    )
    features["recency"] = (month - features["last_month"]).apply(lambda offset: offset.n)
    next_buyers = events.loc[events["month"] == months[i + 1], "customer_id"].unique()
    features["churned"] = ~features.index.isin(next_buyers)
    features["snapshot"] = month
    snapshots.append(features.drop(columns="last_month"))
    print(f"{month}: {len(features)} customers, churn {features['churned'].mean():.2%}")

table = pd.concat(snapshots)
print(table.shape)
table.groupby("snapshot")["churned"].mean()@TAIL@
"""

case(
    name="pandas_churn_snapshots_next_month_lookup",
    library="pandas",
    category="index",
    needs_runtime=False,
    exception="IndexError",
    message_contains="list index out of range",
    diagnosis="Each monthly snapshot is labelled with the buyers of months[i + 1]; the loop runs "
    "over every month, so in its last iteration there is no next month and the list lookup "
    "fails. Loop over months[:-1].",
    cells=[
        """
        import numpy as np
        import pandas as pd
        """,
        """
        rng = np.random.default_rng(14)
        N_EVENTS = @N@
        n_customers = 120000
        activity = rng.gamma(0.6, 1.0, size=n_customers)
        customer_id = rng.choice(n_customers, size=N_EVENTS, p=activity / activity.sum())
        start = pd.Timestamp("2021-01-01")
        days = rng.integers(0, 1461, size=N_EVENTS)
        events = pd.DataFrame({
            "customer_id": customer_id,
            "ts": start + pd.to_timedelta(days, unit="D"),
            "amount": rng.lognormal(3.2, 0.8, size=N_EVENTS).round(2),
            "category": rng.choice(["books", "games", "garden", "kitchen", "toys", "tools"], size=N_EVENTS),
        })
        events["month"] = events["ts"].dt.to_period("M")
        print(events.shape, events["month"].nunique(), "months")
        """,
        COHORT_TARGET.replace("@MONTHS@", "enumerate(months)").replace("@TAIL@", ""),
    ],
    target=2,
    n=4500000,
    small=20000,
    fix={
        2: COHORT_TARGET.replace("@MONTHS@", "enumerate(months[:-1])").replace(
            "@TAIL@", ".reindex(months[:-1])"
        )
    },
)

CHUNKS_TARGET = """
partials = []
for chunk_id in range(N_CHUNKS):
    chunk = make_chunk(chunk_id)
    chunk["amount"] = chunk["amount_raw"].str.replace(" EUR", "", regex=False).str.replace(",", ".").astype(float)
    chunk["merchant"] = chunk["merchant_raw"].str.strip().str.upper().str.replace(r"\\s+#\\d+$", "", regex=True)
    chunk = chunk[chunk["status"] == "settled"]
    partials.append(chunk.groupby("merchant").agg({"amount": ["sum", "count"]}))
    if chunk_id % 10 == 0:
        print(f"chunk {chunk_id}: {len(chunk)} settled rows")

totals = pd.concat(partials).groupby(level=0).sum()
@FLATTEN@totals["avg_ticket"] = totals["amount_sum"] / totals["amount_count"]
totals.sort_values("amount_sum", ascending=False).head(10)
"""

case(
    name="pandas_chunked_merchant_totals_flat_names",
    library="pandas",
    category="key",
    needs_runtime=False,
    exception="KeyError",
    message_contains="amount_sum",
    diagnosis="agg({'amount': ['sum', 'count']}) gives MultiIndex columns ('amount', 'sum') and "
    "('amount', 'count'); after all chunks are aggregated, the average ticket reads a flat "
    "'amount_sum' column that does not exist. Flatten the column names first.",
    cells=[
        """
        import numpy as np
        import pandas as pd
        """,
        """
        MERCHANTS = [f"shop {name}" for name in
                     ["alpha", "bravo", "delta", "echo", "foxtrot", "golf", "hotel", "india", "kilo", "lima"]]
        CHUNK_ROWS = 60000
        N_CHUNKS = @N@

        def make_chunk(chunk_id):
            r = np.random.default_rng(chunk_id)
            merchant = r.choice(MERCHANTS, size=CHUNK_ROWS)
            branch = r.integers(1, 40, size=CHUNK_ROWS)
            cents = r.lognormal(7.5, 1.0, size=CHUNK_ROWS).astype(int)
            return pd.DataFrame({
                "merchant_raw": [f"  {m} #{b}" for m, b in zip(merchant, branch)],
                "amount_raw": [f"{c // 100},{c % 100:02d} EUR" for c in cents],
                "status": r.choice(["settled", "settled", "settled", "pending", "refunded"], size=CHUNK_ROWS),
            })

        print(make_chunk(0).head())
        """,
        CHUNKS_TARGET.replace("@FLATTEN@", ""),
    ],
    target=2,
    n=125,
    small=2,
    fix={2: CHUNKS_TARGET.replace("@FLATTEN@", 'totals.columns = ["_".join(col) for col in totals.columns]\n')},
)


# ---------------------------------------------------------------------------------------------
# statsmodels

ARIMA_TARGET = """
orders = list(itertools.product(range(4), range(2), range(4)))
aics, bics = [], []
for order in orders:
    fit = ARIMA(train, order=order, trend="n" if order[1] else "c").fit()
    aics.append(fit.aic)
    bics.append(fit.bic)
    print(order, round(fit.aic, 1))

best_order = orders[int(np.argmin(aics))]
best = ARIMA(train, order=best_order, trend="n" if best_order[1] else "c").fit()
forecast = best.forecast(steps=len(test))
rmse = np.sqrt(np.mean((forecast.to_numpy() - test.to_numpy()) ** 2))
print("best order by AIC: %s" % @BEST@)
print("test RMSE %.3f" % rmse)
@TAIL@
"""

case(
    name="statsmodels_arima_grid_report_tuple_format",
    library="statsmodels",
    category="type",
    needs_runtime=False,
    exception="TypeError",
    message_contains="not all arguments converted during string formatting",
    diagnosis="After the grid of 32 ARIMA fits and the refit of the best one, the report formats "
    "the (p, d, q) tuple with '%s' % best_order: %-formatting takes the 3-tuple as three "
    "arguments for one placeholder. Wrap it in a one-element tuple.",
    cells=[
        """
        import itertools
        import warnings

        import numpy as np
        import pandas as pd
        from statsmodels.tsa.arima.model import ARIMA
        from threadpoolctl import threadpool_limits

        warnings.simplefilter("ignore")
        threadpool_limits(limits=1)
        """,
        """
        rng = np.random.default_rng(17)
        N_OBS = @N@
        e = rng.normal(size=N_OBS + 2)
        y = np.zeros(N_OBS + 2)
        for t in range(2, N_OBS + 2):
            y[t] = 0.55 * y[t - 1] - 0.25 * y[t - 2] + e[t] + 0.4 * e[t - 1]
        series = pd.Series(y[2:] + 10, index=pd.date_range("2010-01-01", periods=N_OBS, freq="D"))
        train, test = series.iloc[:-60], series.iloc[-60:]
        print(len(train), len(test))
        """,
        ARIMA_TARGET.replace("@BEST@", "best_order").replace("@TAIL@", ""),
    ],
    target=2,
    n=17000,
    small=120,
    fix={
        2: ARIMA_TARGET.replace("@BEST@", "(best_order,)").replace(
            "@TAIL@",
            'pd.DataFrame({"aic": aics, "bic": bics}, index=pd.MultiIndex.from_tuples(orders, names=["p", "d", "q"]))'
            '.sort_values("aic").head(10)',
        )
    },
)


# ---------------------------------------------------------------------------------------------
# NumPy

MCMC_TARGET = """
step = 0.04
beta = np.zeros(X.shape[1])
lp = log_posterior(beta)
samples, accepted = [], 0
for it in range(N_ITER):
    proposal = beta + step * rng.normal(size=beta.shape)
    lp_proposal = log_posterior(proposal)
    if np.log(rng.uniform()) < lp_proposal - lp:
        beta, lp = proposal, lp_proposal
        accepted += 1
    samples.append(beta)

chain = np.array(samples).reshape(N_ITER, X.shape[1])[BURN_IN::THIN]
print(f"acceptance rate {accepted / N_ITER:.2f}, {len(chain)} draws kept")
print("posterior means", chain.mean(axis=0).round(3))
centered = chain - chain.mean(axis=0)
@ESS@
"""

MCMC_ESS_BUGGY = """
acf = np.correlate(centered, centered, mode="full")[len(centered) - 1:]
acf = acf / acf[0]
ess = len(chain) / (1 + 2 * acf[1:MAX_LAG].sum())
print("effective sample size", ess.round(0))
"""

MCMC_ESS_FIXED = """
ess = []
for j in range(centered.shape[1]):
    x = centered[:, j]
    acf = np.correlate(x, x, mode="full")[len(x) - 1:]
    acf = acf / acf[0]
    ess.append(len(chain) / (1 + 2 * acf[1:MAX_LAG].sum()))
print("effective sample size", np.round(ess, 0))
"""

case(
    name="numpy_metropolis_ess_correlate_whole_chain",
    library="numpy",
    category="shape",
    needs_runtime=True,
    exception="ValueError",
    message_contains="object too deep for desired array",
    diagnosis="The Metropolis chain is a 2-D array (draws x coefficients); after sampling, the "
    "effective sample size passes the whole centred chain to np.correlate, which takes 1-D "
    "sequences only. Compute the autocorrelation one coefficient at a time.",
    cells=[
        """
        import numpy as np
        """,
        """
        rng = np.random.default_rng(23)
        n, p = 3000, 4
        X = np.column_stack([np.ones(n), rng.normal(size=(n, p - 1))])
        true_beta = np.array([-0.5, 1.2, -0.8, 0.3])
        y = (rng.uniform(size=n) < 1 / (1 + np.exp(-X @ true_beta))).astype(float)

        def log_posterior(beta):
            eta = X @ beta
            return y @ eta - np.logaddexp(0, eta).sum() - 0.5 * beta @ beta / 10.0

        N_ITER = @N@
        BURN_IN, THIN, MAX_LAG = 2000, 50, 100
        print(X.shape, y.mean())
        """,
        MCMC_TARGET.replace("@ESS@", code(MCMC_ESS_BUGGY)),
    ],
    target=2,
    n=680000,
    small=4000,
    fix={2: MCMC_TARGET.replace("@ESS@", code(MCMC_ESS_FIXED))},
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=Path, metavar="DIR",
                        help="write tiny-size versions under DIR instead (quick crash checks)")
    args = parser.parse_args()

    names = [c.name for c in CASES]
    if len(set(names)) != len(names):
        raise SystemExit("duplicate case names")
    root = args.small or OUT
    seconds = json.loads(SECONDS_FILE.read_text()) if SECONDS_FILE.exists() and not args.small else {}
    root.mkdir(parents=True, exist_ok=True)
    for c in CASES:
        write_case(c, root / c.name, small=bool(args.small))
    manifest = [entry(c, seconds) for c in CASES]
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"{len(CASES)} cases under {root}")


if __name__ == "__main__":
    main()
