"""Generate bench/long-cells/unseen2/: a second set of twelve long-cell crash/fix pairs written and
verified before crane ran on them, by someone who had not read crane's dry-run code, in the format
and with the writing conventions of build.py (same Case fields, `@N@` size, cell ids, execution
counts, no outputs). Not split: the whole folder is measured, and only by its totals; whoever works
on crane must not look at these definitions, the notebooks or their per-case results.

    .venv/bin/python bench/long-cells/build_unseen2.py
    MPLBACKEND=Agg .venv/bin/python bench/long-cells/verify.py bench/long-cells/unseen2 --record bench/long-cells/unseen2/target_seconds.json
    .venv/bin/python bench/long-cells/build_unseen2.py      # again, to write the seconds into the manifest

`--small` writes tiny sizes (quick crash checks) and `--out DIR` writes elsewhere than unseen2/.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from build import Case, code, entry, write_case  # noqa: E402

OUT = HERE / "unseen2"
SECONDS_FILE = OUT / "target_seconds.json"

CASES: list[Case] = []


def case(**kwargs) -> None:
    kwargs["cells"] = [code(c) for c in kwargs["cells"]]
    kwargs["fix"] = {i: code(c) for i, c in kwargs.get("fix", {}).items()}
    CASES.append(Case(**kwargs))


TORCH_IMPORTS = """
import copy

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(1)
"""

KERAS_IMPORTS = """
import numpy as np
import pandas as pd
import keras
from keras import layers
from sklearn.model_selection import train_test_split
"""

# ---------------------------------------------------------------------------------------------
# torch

TORCH_ES_DATA = """
from sklearn.datasets import make_regression
from sklearn.model_selection import train_test_split

X, y = make_regression(n_samples=30000, n_features=40, n_informative=25, noise=15.0, random_state=8141)
y = (y - y.mean()) / y.std()
X_tr, X_va, y_tr, y_va = train_test_split(X, y, test_size=0.2, random_state=8141)
mu, sd = X_tr.mean(axis=0), X_tr.std(axis=0)
X_tr, X_va = (X_tr - mu) / sd, (X_va - mu) / sd

train_ds = TensorDataset(torch.tensor(X_tr, dtype=torch.float32), torch.tensor(y_tr, dtype=torch.float32))
train_loader = DataLoader(train_ds, batch_size=64, shuffle=True)
X_va_t = torch.tensor(X_va, dtype=torch.float32)
y_va_t = torch.tensor(y_va, dtype=torch.float32)
print(len(train_ds), "training rows,", len(X_va_t), "validation rows")
"""

TORCH_ES_MODEL = """
model = nn.Sequential(
    nn.Linear(40, 256), nn.ReLU(), nn.Dropout(0.1),
    nn.Linear(256, 128), nn.ReLU(),
    nn.Linear(128, 1),
)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
loss_fn = nn.MSELoss()
"""

TORCH_ES_TARGET = """
EPOCHS = @N@
best_loss, best_state, best_epoch = {init}, None, -1
history = {{"train": [], "val": []}}
for epoch in range(EPOCHS):
    model.train()
    total = 0.0
    for xb, yb in train_loader:
        optimizer.zero_grad()
        loss = loss_fn(model(xb).squeeze(1), yb)
        loss.backward()
        optimizer.step()
        total += loss.item() * len(xb)
    model.eval()
    with torch.no_grad():
        val_loss = loss_fn(model(X_va_t).squeeze(1), y_va_t).item()
    history["train"].append(total / len(train_ds))
    history["val"].append(val_loss)
    if val_loss < best_loss:
        best_loss, best_epoch = val_loss, epoch
        best_state = copy.deepcopy(model.state_dict())
    if epoch % 5 == 0:
        print(f"epoch {{epoch:3d}}  train {{history['train'][-1]:.4f}}  val {{val_loss:.4f}}")

model.load_state_dict(best_state)
print(f"restored epoch {{best_epoch}} with validation MSE {{best_loss:.4f}}")
fig, ax = plt.subplots(figsize=(7, 4))
ax.plot(range(1, EPOCHS + 1), history["train"], label="train")
ax.plot(range(1, EPOCHS + 1), history["val"], label="validation")
ax.axvline(best_epoch + 1, color="grey", linestyle="--")
ax.set_xlabel("epoch")
ax.legend()
"""

case(
    name="torch_checkpoint_best_loss_starts_at_zero",
    library="torch",
    category="implementation error",
    needs_runtime=True,
    exception="TypeError",
    message_contains="Expected state_dict to be dict-like",
    diagnosis="The early-stopping bookkeeping starts best_loss at 0.0, so no validation MSE is ever "
    "lower, best_state stays None, and model.load_state_dict(None) fails after all epochs. Start "
    "best_loss at float('inf').",
    cells=[TORCH_IMPORTS, TORCH_ES_DATA, TORCH_ES_MODEL, TORCH_ES_TARGET.format(init="0.0")],
    target=3,
    n=100,
    small=1,
    fix={3: TORCH_ES_TARGET.format(init='float("inf")')},
)

TORCH_AE_DATA = """
rng = np.random.default_rng(8231)
N_FEATURES = 30

def sensor_rows(n):
    latent = rng.normal(size=(n, 5))
    return latent @ MIXING + 0.15 * rng.normal(size=(n, N_FEATURES))

MIXING = rng.normal(size=(5, N_FEATURES))
X_train = sensor_rows(@N@)
X_normal = sensor_rows(9000)
X_faulty = sensor_rows(1000) + rng.normal(scale=1.5, size=(1000, N_FEATURES)) * (rng.random((1000, N_FEATURES)) < 0.2)
X_test = np.vstack([X_normal, X_faulty])
is_fault = np.r_[np.zeros(len(X_normal), bool), np.ones(len(X_faulty), bool)]

mean, std = X_train.mean(axis=0), X_train.std(axis=0)
X_train_t = torch.tensor((X_train - mean) / std, dtype=torch.float32)
X_test_t = torch.tensor((X_test - mean) / std, dtype=torch.float32)
loader = DataLoader(TensorDataset(X_train_t), batch_size=128, shuffle=True)
print(X_train_t.shape, X_test_t.shape, is_fault.mean())
"""

TORCH_AE_DEFS = """
class AutoEncoder(nn.Module):
    def __init__(self, n_in, bottleneck):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(n_in, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, bottleneck))
        self.decoder = nn.Sequential(nn.Linear(bottleneck, 32), nn.ReLU(), nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, n_in))

    def forward(self, x):
        return self.decoder(self.encoder(x))


def train_epoch(model, loader, optimizer):
    model.train()
    total, rows = 0.0, 0
    for (xb,) in loader:
        optimizer.zero_grad()
        loss = ((model(xb) - xb) ** 2).mean()
        loss.backward()
        optimizer.step()
        total += loss.item() * len(xb)
        rows += len(xb)
    return total / rows
"""

TORCH_AE_TARGET = """
EPOCHS = 25
model = AutoEncoder(N_FEATURES, 5)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
epoch_losses = []
for epoch in range(EPOCHS):
    epoch_losses.append(train_epoch(model, loader, optimizer))
    if epoch % 5 == 0:
        print(f"epoch {epoch:2d}  reconstruction MSE {epoch_losses[-1]:.4f}")

model.eval()
<<recon>>
errors = ((recon - X_test_t) ** 2).mean(dim=1).numpy()
threshold = np.percentile(errors[~is_fault], 99)
flagged = errors > threshold
precision = is_fault[flagged].mean()
recall = flagged[is_fault].mean()
print(f"threshold {threshold:.4f}  precision {precision:.3f}  recall {recall:.3f}")

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
ax1.plot(np.arange(1, EPOCHS + 1), epoch_losses)
ax1.set_title("training loss")
ax2.hist([errors[~is_fault], errors[is_fault]], bins=60, label=["normal", "faulty"], log=True)
ax2.axvline(threshold, color="black")
ax2.legend()
"""

case(
    name="torch_autoencoder_scores_keep_grad",
    library="torch",
    category="implementation error",
    needs_runtime=True,
    exception="RuntimeError",
    message_contains="Can't call numpy() on Tensor that requires grad",
    diagnosis="After training, the test reconstruction is computed outside torch.no_grad(), so the "
    "per-row errors still require grad and .numpy() refuses them. Compute the reconstruction under "
    "torch.no_grad() (or detach it).",
    cells=[TORCH_IMPORTS, TORCH_AE_DATA, TORCH_AE_DEFS,
           TORCH_AE_TARGET.replace("<<recon>>", "recon = model(X_test_t)")],
    target=3,
    n=190000,
    small=2000,
    fix={3: TORCH_AE_TARGET.replace("<<recon>>", "with torch.no_grad():\n    recon = model(X_test_t)")},
)

TORCH_DT_DATA = """
from sklearn.datasets import make_classification
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

X, y = make_classification(n_samples=@N@, n_features=30, n_informative=12, weights=[0.7, 0.3],
                           flip_y=0.02, random_state=8311)
X_rest, X_test, y_rest, y_test = train_test_split(X, y, test_size=0.15, stratify=y, random_state=8311)
X_train, X_val, y_train, y_val = train_test_split(X_rest, y_rest, test_size=0.15, stratify=y_rest, random_state=8311)
scaler = StandardScaler().fit(X_train)

def to_tensors(X, y):
    return torch.tensor(scaler.transform(X), dtype=torch.float32), torch.tensor(y, dtype=torch.float32)

train_ds = TensorDataset(*to_tensors(X_train, y_train))
X_val_t, y_val_t = to_tensors(X_val, y_val)
X_test_t = torch.tensor(scaler.transform(X_test), dtype=torch.float32)
y_test_t = <<y_test>>
print(len(train_ds), len(X_val_t), len(X_test_t))
"""

TORCH_DT_DEFS = """
criterion = nn.BCEWithLogitsLoss()

def make_model(n_in):
    return nn.Sequential(nn.Linear(n_in, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 1))

def fit_epoch(model, loader, optimizer):
    model.train()
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = criterion(model(xb).squeeze(1), yb)
        loss.backward()
        optimizer.step()

def evaluate(model, X, y):
    model.eval()
    with torch.no_grad():
        logits = model(X).squeeze(1)
        loss = criterion(logits, y).item()
        acc = ((logits > 0).float() == y).float().mean().item()
    return loss, acc
"""

TORCH_DT_TARGET = """
EPOCHS = 30
model = make_model(X_val_t.shape[1])
optimizer = torch.optim.Adam(model.parameters(), lr=5e-4)
loader = DataLoader(train_ds, batch_size=64, shuffle=True)
log = []
for epoch in range(EPOCHS):
    fit_epoch(model, loader, optimizer)
    val_loss, val_acc = evaluate(model, X_val_t, y_val_t)
    log.append((epoch, val_loss, val_acc))
    if epoch % 5 == 0:
        print(f"epoch {epoch:2d}  val loss {val_loss:.4f}  val acc {val_acc:.3f}")

test_loss, test_acc = evaluate(model, X_test_t, y_test_t)
print(f"test loss {test_loss:.4f}  test acc {test_acc:.3f}")
curve = pd.DataFrame(log, columns=["epoch", "val_loss", "val_acc"]).set_index("epoch")
print("last epoch:", curve.loc[EPOCHS - 1].round(4).to_dict())
print("best epoch:", curve["val_loss"].idxmin())
"""

case(
    name="torch_holdout_labels_stay_int64",
    library="torch",
    category="dtype",
    needs_runtime=True,
    exception="RuntimeError",
    message_contains="result type Float can't be cast to the desired output type Long",
    diagnosis="The test labels are made with torch.from_numpy on make_classification's int64 array, "
    "unlike the float32 training and validation labels, so BCEWithLogitsLoss in evaluate() fails on "
    "the held-out set after all epochs. Make y_test_t a float32 tensor.",
    cells=[TORCH_IMPORTS, TORCH_DT_DATA.replace("<<y_test>>", "torch.from_numpy(y_test)"),
           TORCH_DT_DEFS, TORCH_DT_TARGET],
    target=3,
    n=140000,
    small=2000,
    fix={1: TORCH_DT_DATA.replace("<<y_test>>", "torch.tensor(y_test, dtype=torch.float32)")},
)

# ---------------------------------------------------------------------------------------------
# Keras

KERAS_SUB_DATA = """
from sklearn.datasets import make_regression

X, y = make_regression(n_samples=@N@, n_features=20, n_informative=12, noise=12.0, random_state=8411)
y = 250_000 + 40_000 * (y / y.std())
ids = np.arange(100_000, 100_000 + len(X))
X_train, X_test, y_train, y_test, id_train, id_test = train_test_split(X, y, ids, test_size=0.2, random_state=8411)
x_mean, x_std = X_train.mean(axis=0), X_train.std(axis=0)
X_train = ((X_train - x_mean) / x_std).astype("float32")
X_test = ((X_test - x_mean) / x_std).astype("float32")
y_mean, y_std = y_train.mean(), y_train.std()
print(X_train.shape, X_test.shape)
"""

KERAS_SUB_TARGET = """
EPOCHS = 30
keras.utils.set_random_seed(8411)
model = keras.Sequential([
    keras.Input(shape=(X_train.shape[1],)),
    layers.Dense(128, activation="relu"),
    layers.Dense(64, activation="relu"),
    layers.Dense(1),
])
model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="mse", metrics=["mae"])
history = model.fit(X_train, (y_train - y_mean) / y_std, validation_split=0.1,
                    epochs=EPOCHS, batch_size=64, verbose=0)

pred = <<pred>>
submission = pd.DataFrame({"id": id_test, "price": pred})
rmse = np.sqrt(np.mean((submission["price"].to_numpy() - y_test) ** 2))
print(submission.head())
print(f"test RMSE {rmse:,.0f}")
curves = pd.DataFrame(history.history).assign(epoch=np.arange(1, EPOCHS + 1)).set_index("epoch")
print(curves.tail())
"""

case(
    name="keras_submission_frame_from_2d_predictions",
    library="keras",
    category="shape",
    needs_runtime=True,
    exception="ValueError",
    message_contains="Per-column arrays must each be 1-dimensional",
    diagnosis="model.predict returns an (n, 1) array, so the submission DataFrame built from it after "
    "training refuses the 2-D 'price' column. Flatten the predictions (.ravel()) before building "
    "the frame.",
    cells=[KERAS_IMPORTS, KERAS_SUB_DATA,
           KERAS_SUB_TARGET.replace("<<pred>>", "model.predict(X_test, verbose=0) * y_std + y_mean")],
    target=2,
    n=70000,
    small=1000,
    fix={2: KERAS_SUB_TARGET.replace("<<pred>>", "model.predict(X_test, verbose=0).ravel() * y_std + y_mean")},
)

KERAS_EMB_DATA = """
rng = np.random.default_rng(8447)
N_FEATURES = 8
weights = rng.normal(size=N_FEATURES)
store_effect = rng.normal(scale=2.0, size=61)

def sales_rows(n, n_open_stores):
    store = rng.integers(0, n_open_stores, size=n)
    numeric = rng.normal(size=(n, N_FEATURES)).astype("float32")
    target = numeric @ weights + store_effect[store] + np.sin(numeric[:, 0] * numeric[:, 1]) + rng.normal(scale=0.3, size=n)
    return numeric, store.reshape(-1, 1), target.astype("float32")

# the test period includes store 60, opened after the training period
X_num_train, store_train, y_train = sales_rows(@N@, 60)
X_num_test, store_test, y_test = sales_rows(8000, 61)
<<n_stores>>
print(X_num_train.shape, "stores in the embedding:", n_stores)
"""

KERAS_EMB_TARGET = """
EPOCHS = 25
keras.utils.set_random_seed(8447)
num_in = keras.Input(shape=(N_FEATURES,), name="numeric")
store_in = keras.Input(shape=(1,), dtype="int32", name="store")
store_vec = layers.Flatten()(layers.Embedding(n_stores, 8)(store_in))
h = layers.Concatenate()([num_in, store_vec])
h = layers.Dense(128, activation="relu")(h)
h = layers.Dense(64, activation="relu")(h)
out = layers.Dense(1)(h)
model = keras.Model([num_in, store_in], out)
model.compile(optimizer="adam", loss="mse")
history = model.fit([X_num_train, store_train], y_train, validation_split=0.1,
                    epochs=EPOCHS, batch_size=128, verbose=0)
val_curve = np.array(history.history["val_loss"])
print(f"best validation MSE {val_curve.min():.4f} at epoch {val_curve.argmin() + 1}")

test_pred = model.predict([X_num_test, store_test], verbose=0).ravel()
per_store = pd.DataFrame({"store": store_test.ravel(), "err": (test_pred - y_test) ** 2}).groupby("store")["err"].mean()
print(f"test MSE {np.mean((test_pred - y_test) ** 2):.4f}; worst stores:")
print(per_store.sort_values().tail())
"""

case(
    name="keras_store_embedding_sized_on_train",
    library="keras",
    category="data confusion",
    needs_runtime=True,
    exception="InvalidArgumentError",
    message_contains="is not in [0, 60)",
    diagnosis="The Embedding's input_dim is taken from the training stores only (60), but the test "
    "period includes store id 60, so the lookup in model.predict fails after training. Size the "
    "embedding on every store id (or map unseen stores to a reserved index).",
    cells=[KERAS_IMPORTS,
           KERAS_EMB_DATA.replace("<<n_stores>>", "n_stores = int(store_train.max()) + 1"),
           KERAS_EMB_TARGET],
    target=2,
    n=130000,
    small=1000,
    fix={1: KERAS_EMB_DATA.replace("<<n_stores>>",
                                   "n_stores = int(max(store_train.max(), store_test.max())) + 1")},
)

# ---------------------------------------------------------------------------------------------
# scikit-learn

SK_GRID_DATA = """
import numpy as np
import pandas as pd
from sklearn.datasets import make_hastie_10_2
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

X, y = make_hastie_10_2(n_samples=@N@, random_state=8513)
feature_names = [f"sensor_{i}" for i in range(X.shape[1])]
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=8513)
pipe = Pipeline([("scale", StandardScaler()), ("clf", LogisticRegression(max_iter=1000))])
param_grid = [
    {"clf": [LogisticRegression(max_iter=1000)], "clf__C": [0.01, 0.1, 1.0, 10.0]},
    {"clf": [RandomForestClassifier(random_state=8513)], "clf__n_estimators": [100, 200],
     "clf__max_depth": [None, 12], "clf__min_samples_leaf": [1, 5]},
]
print(X_train.shape)
"""

SK_GRID_TARGET = """
search = GridSearchCV(pipe, param_grid, cv=5, scoring="roc_auc", n_jobs=1)
search.fit(X_train, y_train)
print("best params:", search.best_params_)
print(f"cv AUC {search.best_score_:.3f}  test accuracy {search.score(X_test, y_test):.3f}")

best = search.best_estimator_.named_steps["clf"]
<<importance>>
print(importance.sort_values(ascending=False).head(5))
"""

case(
    name="sklearn_grid_over_model_types_reads_coef",
    library="sklearn",
    category="api misuse",
    needs_runtime=True,
    exception="AttributeError",
    message_contains="has no attribute 'coef_'",
    diagnosis="The grid searches over both a logistic regression and a random forest; on this "
    "nonlinear data the forest wins, and the feature-importance step after the search reads "
    "coef_, which a RandomForestClassifier lacks. Use feature_importances_ when the best model is "
    "a forest.",
    cells=[SK_GRID_DATA,
           SK_GRID_TARGET.replace("<<importance>>", "importance = pd.Series(np.abs(best.coef_[0]), index=feature_names)")],
    target=1,
    n=4200,
    small=400,
    fix={1: SK_GRID_TARGET.replace(
        "<<importance>>",
        "scores = best.feature_importances_ if hasattr(best, \"feature_importances_\") else np.abs(best.coef_[0])\n"
        "importance = pd.Series(scores, index=feature_names)")},
)

SK_CV_DATA = """
import numpy as np
import pandas as pd
from sklearn.datasets import make_classification
from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_validate
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

X, y = make_classification(n_samples=@N@, n_features=25, n_informative=10, n_redundant=5, n_classes=3,
                           n_clusters_per_class=2, class_sep=0.9, random_state=8529)
models = {
    "logreg": make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)),
    "knn": make_pipeline(StandardScaler(), KNeighborsClassifier(n_neighbors=15)),
    "svc": make_pipeline(StandardScaler(), SVC(C=3.0)),
    "forest": RandomForestClassifier(n_estimators=100, random_state=8529),
    "extra": ExtraTreesClassifier(n_estimators=200, random_state=8529),
}
scoring = {"acc": "accuracy", "f1": "f1_macro"}
print(X.shape, np.bincount(y))
"""

SK_CV_TARGET = """
cv = StratifiedKFold(n_splits=5, shuffle=True, random_state=8529)
cv_results = {}
for name, model in models.items():
    cv_results[name] = cross_validate(model, X, y, cv=cv, scoring=scoring, return_train_score=True)
    print(f"{name:7s} fitted in {cv_results[name]['fit_time'].sum():.1f}s")

summary = pd.DataFrame({
    name: {"f1_mean": res["<<key>>"].mean(), "f1_std": res["<<key>>"].std(),
           "gap": res["train_f1"].mean() - res["<<key>>"].mean()}
    for name, res in cv_results.items()
}).T
print(summary.loc[list(models)].round(3))
per_fold = pd.DataFrame({name: cv_results[name]["<<key>>"] for name in models})
print(per_fold.rank(axis=1, ascending=False).mean().sort_values())
"""

case(
    name="sklearn_cross_validate_named_scorers_test_score",
    library="sklearn",
    category="api misuse",
    needs_runtime=True,
    exception="KeyError",
    message_contains="test_score",
    diagnosis="cross_validate is given a dict of named scorers, so its results hold test_acc and "
    "test_f1, not test_score; the summary built after every model has been cross-validated fails "
    "with KeyError. Read res['test_f1'].",
    cells=[SK_CV_DATA, SK_CV_TARGET.replace("<<key>>", "test_score")],
    target=1,
    n=11000,
    small=300,
    fix={1: SK_CV_TARGET.replace("<<key>>", "test_f1")},
)

SK_RS_DATA = """
import numpy as np
import pandas as pd
from scipy.stats import loguniform, randint, uniform
from sklearn.datasets import make_classification
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import RandomizedSearchCV, train_test_split

X, y = make_classification(n_samples=8000, n_features=30, n_informative=12, weights=[0.9, 0.1],
                           flip_y=0.01, random_state=8557)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, stratify=y, random_state=8557)
param_distributions = {
    "learning_rate": loguniform(0.03, 0.3),
    "max_depth": randint(2, 5),
    "min_samples_leaf": randint(5, 50),
    "subsample": uniform(0.6, 0.4),
    "n_estimators": [60, 100, 140],
}
"""

SK_RS_TARGET = """
search = RandomizedSearchCV(
    GradientBoostingClassifier(random_state=8557),
    param_distributions, n_iter=@N@, cv=3,
    scoring={"auc": "roc_auc", "ap": "average_precision"},
    refit=<<refit>>, random_state=8557,
)
search.fit(X_train, y_train)
results = pd.DataFrame(search.cv_results_).sort_values("rank_test_auc")
print(results[["mean_test_auc", "mean_test_ap", "mean_fit_time"]].head())

best_model = search.best_estimator_
test_proba = best_model.predict_proba(X_test)[:, 1]
print(f"test AUC {roc_auc_score(y_test, test_proba):.4f}")
"""

case(
    name="sklearn_multimetric_search_without_refit",
    library="sklearn",
    category="api misuse",
    needs_runtime=True,
    exception="AttributeError",
    message_contains="has no attribute 'best_estimator_'",
    diagnosis="The multi-metric randomized search is run with refit=False, so after all candidates it "
    "has no best_estimator_ to score the test set with. Pass refit='auc'.",
    cells=[SK_RS_DATA, SK_RS_TARGET.replace("<<refit>>", "False")],
    target=1,
    n=5,
    small=2,
    fix={1: SK_RS_TARGET.replace("<<refit>>", '"auc"')},
)

# ---------------------------------------------------------------------------------------------
# pandas

PD_CHUNK_DATA = """
import numpy as np
import pandas as pd

rng = np.random.default_rng(8613)
N_ROWS = @N@
# timestamps as they come out of the logger's export: text
stamps = pd.date_range("2024-01-01", periods=N_ROWS, freq="15s").strftime("%Y-%m-%d %H:%M:%S")
readings = pd.DataFrame({
    "ts": stamps,
    "sensor": rng.integers(0, 24, size=N_ROWS),
    "temp": rng.normal(45, 12, size=N_ROWS),
    "vibration": rng.gamma(2.0, 1.5, size=N_ROWS),
    "rpm": rng.normal(1500, 200, size=N_ROWS),
})
readings.loc[rng.random(N_ROWS) < 0.01, "temp"] = 999.0
<<convert>>
LAST_HOUR = pd.Timestamp(readings["ts"].iloc[-1]).floor("h")
print(readings.shape, readings["ts"].iloc[0], LAST_HOUR)
"""

PD_CHUNK_TARGET = """
LIMITS = {"temp": (-10, 90), "vibration": (0, 9), "rpm": (900, 2100)}

def health_flag(row):
    out = sum(not (LIMITS[col][0] <= row[col] <= LIMITS[col][1]) for col in LIMITS)
    return "alarm" if out >= 2 else ("warn" if out == 1 else "ok")

CHUNK = 50_000
parts = []
for start in range(0, len(readings), CHUNK):
    chunk = readings.iloc[start:start + CHUNK]
    chunk = chunk[chunk["temp"] < 500].copy()
    chunk["flag"] = chunk.apply(health_flag, axis=1)
    chunk["alarm"] = (chunk["flag"] != "ok").astype(float)
    parts.append(chunk[["ts", "sensor", "alarm"]])
    if (start // CHUNK) % 10 == 0:
        print(f"rows {start:>9,}  alarm rate {chunk['alarm'].mean():.4f}")

scored = pd.concat(parts, ignore_index=True)
hourly = scored.set_index("ts")["alarm"].resample("h").mean()
print(hourly.describe())
print("last hour:", hourly.loc[LAST_HOUR])
"""

case(
    name="pandas_chunked_scoring_resamples_text_timestamps",
    library="pandas",
    category="dtype",
    needs_runtime=True,
    exception="TypeError",
    message_contains="Only valid with DatetimeIndex",
    diagnosis="The timestamps stay text as exported, so after all chunks are scored the hourly "
    "resample of the concatenated frame, indexed by those strings, fails. Parse them with "
    "pd.to_datetime before the loop.",
    cells=[PD_CHUNK_DATA.replace("<<convert>>", ""), PD_CHUNK_TARGET],
    target=1,
    n=6_000_000,
    small=60_000,
    fix={0: PD_CHUNK_DATA.replace("<<convert>>", 'readings["ts"] = pd.to_datetime(readings["ts"])')},
)

PD_GROUP_DATA = """
import numpy as np
import pandas as pd

rng = np.random.default_rng(8641)
N_SKUS = @N@
skus = [f"SKU-{i:05d}" for i in range(N_SKUS)]
days = pd.date_range("2024-01-01", periods=180, freq="D")
frame = pd.DataFrame({
    "sku": np.repeat(skus, len(days)),
    "date": np.tile(days, N_SKUS),
})
base = np.repeat(rng.uniform(5, 80, size=N_SKUS), len(days))
frame["price"] = base * np.exp(rng.normal(0, 0.08, size=len(frame)))
elasticity = np.repeat(rng.uniform(-2.5, -0.3, size=N_SKUS), len(days))
frame["units"] = rng.poisson(40 * (frame["price"] / base) ** elasticity)
frame.loc[rng.random(len(frame)) < 0.05, "price"] = np.nan
# the newest listing has sales recorded but no price feed yet
frame.loc[frame["sku"] == skus[-1], "price"] = np.nan
print(frame.shape, frame["price"].isna().mean())
"""

PD_GROUP_TARGET = """
rows = []
for sku, g in frame.groupby("sku", sort=True):
    <<guard>>
    g = g.sort_values("date")
    peak_date = g.loc[g["price"].idxmax(), "date"]
    weekly = g.set_index("date")[["price", "units"]].resample("W").agg({"price": "mean", "units": "sum"})
    ok = g["price"].notna() & (g["units"] > 0)
    slope, intercept = np.polyfit(np.log(g.loc[ok, "price"]), np.log(g.loc[ok, "units"]), 1)
    rows.append({"sku": sku, "peak_date": peak_date, "elasticity": slope,
                 "weekly_units": weekly["units"].mean(), "price_cv": g["price"].std() / g["price"].mean()})

report = pd.DataFrame(rows).set_index("sku")
print(report["elasticity"].describe())
print(report.sort_values("elasticity").head())
"""

case(
    name="pandas_price_peak_per_sku_unpriced_listing",
    library="pandas",
    category="data confusion",
    needs_runtime=True,
    exception="ValueError",
    message_contains="Encountered all NA values",
    diagnosis="The loop over SKUs takes idxmax of each SKU's prices; the last SKU (the newest "
    "listing) has no prices at all, so idxmax raises in the last iteration. Skip SKUs without any "
    "price.",
    cells=[PD_GROUP_DATA, PD_GROUP_TARGET.replace("    <<guard>>\n", "")],
    target=1,
    n=18000,
    small=50,
    fix={1: PD_GROUP_TARGET.replace("<<guard>>", 'if g["price"].isna().all():\n        continue')},
)

# ---------------------------------------------------------------------------------------------
# statsmodels

SM_DATA = """
import warnings

import numpy as np
import pandas as pd
import statsmodels.api as sm

warnings.filterwarnings("ignore")
rng = np.random.default_rng(8719)
N_DAYS = @N@
dates = pd.date_range("2022-01-03", periods=N_DAYS, freq="D")
promo = (rng.random(N_DAYS) < 0.15).astype(float)
temp = 15 + 10 * np.sin(2 * np.pi * np.arange(N_DAYS) / 365.25) + rng.normal(0, 2, N_DAYS)
noise = np.zeros(N_DAYS)
for t in range(1, N_DAYS):
    noise[t] = 0.6 * noise[t - 1] + rng.normal(0, 4)
weekly = 6 * np.isin(dates.dayofweek, [5, 6])
demand = 120 + 25 * promo + 0.8 * temp + weekly + noise
exog = np.column_stack([promo, temp])
H = 14
START = 420
print(N_DAYS, "days;", (N_DAYS - START) / H, "forecast origins")
"""

SM_TARGET = """
errors, origins = [], []
for origin in range(START, N_DAYS, H):
    <<h>>
    model = sm.tsa.SARIMAX(demand[:origin], exog=exog[:origin], order=(1, 0, 1),
                           seasonal_order=(1, 0, 0, 7), trend="c")
    res = model.fit(disp=False, maxiter=200)
    fc = res.get_forecast(steps=<<steps>>, exog=exog[origin:origin + <<steps>>])
    errors.append(demand[origin:origin + <<steps>>] - fc.predicted_mean)
    origins.append(dates[origin])

all_errors = np.concatenate(errors)
assert len(all_errors) == N_DAYS - START
print(f"{len(origins)} origins  MAE {np.abs(all_errors).mean():.2f}  bias {all_errors.mean():.2f}")
print(pd.Series([np.abs(e).mean() for e in errors], index=origins).tail())
"""

case(
    name="statsmodels_walk_forward_last_block_short",
    library="statsmodels",
    category="shape",
    needs_runtime=True,
    exception="ValueError",
    message_contains="Provided exogenous values are not of the appropriate shape",
    diagnosis="The walk-forward loop forecasts H=14 days from every origin, but the last origin "
    "has only 10 days of data left, so the exogenous slice has 10 rows where get_forecast(steps=14) "
    "needs 14, and the last iteration fails. Forecast min(H, days left) steps.",
    cells=[SM_DATA, SM_TARGET.replace("    <<h>>\n", "").replace("<<steps>>", "H")],
    target=1,
    n=1046,
    small=500,
    fix={1: SM_TARGET.replace("<<h>>", "h = min(H, N_DAYS - origin)").replace("<<steps>>", "h")},
)

# ---------------------------------------------------------------------------------------------
# NumPy

NP_DATA = """
import numpy as np
import pandas as pd

rng = np.random.default_rng(8803)
n = 5000
feature_names = ["age", "income", "tenure", "visits", "discount"]
X_raw = rng.normal(size=(n, len(feature_names)))
true_beta = np.array([-1.2, 0.8, -0.5, 0.3, 1.1, 0.0])
X = np.column_stack([np.ones(n), X_raw])
y = (rng.random(n) < 1 / (1 + np.exp(-X @ true_beta))).astype(float)

def log_posterior(beta):
    z = X @ beta
    return y @ z - np.logaddexp(0, z).sum() - 0.5 * beta @ beta / 25.0

print(X.shape, y.mean())
"""

NP_TARGET = """
N_ITER = @N@
BURN, THIN = N_ITER // 4, 10
chain = np.empty((N_ITER, X.shape[1]))
beta = np.zeros(X.shape[1])
lp = log_posterior(beta)
step, accepted = 0.05, 0
for i in range(N_ITER):
    proposal = beta + step * rng.normal(size=beta.size)
    lp_prop = log_posterior(proposal)
    if np.log(rng.random()) < lp_prop - lp:
        beta, lp = proposal, lp_prop
        accepted += 1
    chain[i] = beta
    if i < BURN and (i + 1) % 500 == 0:
        rate = accepted / (i + 1)
        step *= 1.2 if rate > 0.3 else 0.8
print(f"acceptance {accepted / N_ITER:.3f}  final step {step:.4f}")

draws = chain[BURN::THIN]
ci = np.percentile(draws, [2.5, 50, 97.5], axis=0)
summary = pd.DataFrame(ci.T, index=<<names>>, columns=["lo", "median", "hi"])
summary["true"] = true_beta
print(summary.round(3))
"""

case(
    name="numpy_metropolis_summary_drops_intercept_name",
    library="numpy",
    category="shape",
    needs_runtime=True,
    exception="ValueError",
    message_contains="Shape of passed values is (6, 3), indices imply (5, 3)",
    diagnosis="The design matrix has an intercept column in front of the five features, so the "
    "chain has six coefficients, but the posterior summary after sampling labels them with the five "
    "feature names only. Label them ['intercept'] + feature_names.",
    cells=[NP_DATA, NP_TARGET.replace("<<names>>", "feature_names")],
    target=1,
    n=500000,
    small=2000,
    fix={1: NP_TARGET.replace("<<names>>", '["intercept"] + feature_names')},
)


def main() -> None:
    args = sys.argv[1:]
    small = "--small" in args
    out = Path(args[args.index("--out") + 1]) if "--out" in args else OUT
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
