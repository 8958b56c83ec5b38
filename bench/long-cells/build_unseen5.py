"""Generate bench/long-cells/unseen5/: twelve more long-cell crash/fix pairs (torch 3, Keras 2,
scikit-learn 3, pandas 2, statsmodels 1, NumPy 1), in the format and with the writing conventions
of build.py. The set was written and verified before crane ran on it, by someone who had not read
crane's dry-run code. Not split: the whole folder is measured, by its totals only.

    .venv/bin/python bench/long-cells/build_unseen5.py               # write unseen5/
    .venv/bin/python bench/long-cells/build_unseen5.py --small DIR   # tiny sizes under DIR, to check crashes fast

The cases use build.py's `Case`, `code`, `entry` and `write_case`. Measured run times of the
targets are kept in `unseen5/target_seconds.json` (verify.py --record) and written into the
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

OUT = HERE / "unseen5"
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

VAE_TARGET = """
EPOCHS = @N@
BATCH = 32
kl_weights = np.linspace(0.0, 1.0, EPOCHS)  # linear KL warm-up over the run
history = {"recon": [], "kl": [], "val_elbo": []}

for epoch in range(1, EPOCHS + 1):
    beta = float(kl_weights[epoch])
    model.train()
    perm = torch.randperm(len(X_train))
    rec_sum = kl_sum = 0.0
    for start in range(0, len(X_train), BATCH):
        xb = X_train[perm[start:start + BATCH]]
        logits, mu, logvar = model(xb)
        recon, kl = vae_terms(logits, xb, mu, logvar)
        loss = recon + beta * kl
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        rec_sum += recon.item() * len(xb)
        kl_sum += kl.item() * len(xb)
    model.eval()
    with torch.no_grad():
        logits, mu, logvar = model(X_val)
        v_rec, v_kl = vae_terms(logits, X_val, mu, logvar)
    history["recon"].append(rec_sum / len(X_train))
    history["kl"].append(kl_sum / len(X_train))
    history["val_elbo"].append(-(v_rec + v_kl).item())
    if epoch % 10 == 0:
        print(f"epoch {epoch:3d}  beta {beta:.2f}  recon {history['recon'][-1]:.2f}  kl {history['kl'][-1]:.2f}")

fig, ax = plt.subplots(1, 2, figsize=(11, 4))
ax[0].plot(range(1, EPOCHS + 1), history["recon"], label="reconstruction")
ax[0].plot(range(1, EPOCHS + 1), history["kl"], label="KL")
ax[0].legend()
ax[1].plot(range(1, EPOCHS + 1), history["val_elbo"])
ax[1].set_title("validation ELBO")
best = int(np.argmax(history["val_elbo"]))
print(f"best validation ELBO {history['val_elbo'][best]:.2f} at epoch {best + 1} of {EPOCHS}")
"""

case(
    name="torch_vae_kl_warmup_one_based_epochs",
    library="torch",
    category="implementation error",
    needs_runtime=False,
    exception="IndexError",
    message_contains="is out of bounds for axis 0",
    diagnosis="The KL warm-up weights are np.linspace(0, 1, EPOCHS), EPOCHS values indexed 0 to "
    "EPOCHS-1, but the epoch loop counts from 1 to EPOCHS and reads kl_weights[epoch]; every epoch "
    "trains until the last one, whose index EPOCHS is past the end, so the cell fails at the start of "
    "the last epoch. Read kl_weights[epoch - 1].",
    cells=[
        """
        import numpy as np
        import matplotlib.pyplot as plt
        import torch
        from torch import nn
        from torch.nn import functional as F

        torch.manual_seed(0)
        torch.set_num_threads(1)
        """,
        """
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split

        digits = load_digits()
        X = (digits.data / 16.0).astype(np.float32)
        X_train, X_val = train_test_split(X, test_size=0.2, random_state=0)
        X_train = torch.from_numpy(X_train)
        X_val = torch.from_numpy(X_val)
        print(X_train.shape, X_val.shape)
        """,
        """
        class VAE(nn.Module):
            def __init__(self, n_in=64, hidden=256, latent=8):
                super().__init__()
                self.enc = nn.Sequential(nn.Linear(n_in, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
                self.mu = nn.Linear(hidden, latent)
                self.logvar = nn.Linear(hidden, latent)
                self.dec = nn.Sequential(
                    nn.Linear(latent, hidden), nn.ReLU(),
                    nn.Linear(hidden, hidden), nn.ReLU(),
                    nn.Linear(hidden, n_in),
                )

            def forward(self, x):
                h = self.enc(x)
                mu, logvar = self.mu(h), self.logvar(h)
                z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
                return self.dec(z), mu, logvar


        def vae_terms(logits, x, mu, logvar):
            recon = F.binary_cross_entropy_with_logits(logits, x, reduction="sum") / len(x)
            kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp()) / len(x)
            return recon, kl


        model = VAE()
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        """,
        VAE_TARGET,
    ],
    target=3,
    n=560,
    small=2,
    fix={3: edit(VAE_TARGET, "kl_weights[epoch]", "kl_weights[epoch - 1]")},
)

CKPT_TARGET = """
EPOCHS = @N@
history = []
best = {"val_loss": float("inf")}
for epoch in range(EPOCHS):
    train_loss = train_one_epoch(model, train_loader, optimizer, criterion)
    val_loss, val_acc = evaluate(model, val_loader, criterion)
    history.append({"epoch": epoch, "train_loss": train_loss, "val_loss": val_loss, "val_acc": val_acc})
    if val_loss < best["val_loss"]:
        best = {"epoch": epoch, "val_loss": val_loss, "state_dict": copy.deepcopy(model.state_dict())}
    if epoch % 5 == 0:
        print(f"epoch {epoch:3d}  train {train_loss:.4f}  val {val_loss:.4f}  acc {val_acc:.3f}")

# back to the best checkpoint before scoring the test set
model.load_state_dict(best)
test_loss, test_acc = evaluate(model, test_loader, criterion)
print(f"best epoch {best['epoch']}  test loss {test_loss:.4f}  test accuracy {test_acc:.3f}")
curves = pd.DataFrame(history).set_index("epoch")
print(curves.loc[[0, best["epoch"], EPOCHS - 1]].round(4))
"""

case(
    name="torch_best_checkpoint_reloaded_whole",
    library="torch",
    category="API misuse",
    needs_runtime=False,
    exception="RuntimeError",
    message_contains="Error(s) in loading state_dict",
    diagnosis="The best checkpoint is kept as a dict {'epoch', 'val_loss', 'state_dict'}, and after "
    "all epochs model.load_state_dict(best) is given that wrapper instead of the weights it holds: "
    "the keys '0.weight', ... are missing and 'epoch', 'val_loss', 'state_dict' are unexpected, so "
    "the cell fails after the training. Load best['state_dict'].",
    cells=[
        """
        import copy

        import numpy as np
        import pandas as pd
        import torch
        from torch import nn
        from torch.utils.data import DataLoader, TensorDataset

        torch.manual_seed(0)
        torch.set_num_threads(1)
        """,
        """
        from sklearn.datasets import make_classification
        from sklearn.model_selection import train_test_split
        from sklearn.preprocessing import StandardScaler

        X, y = make_classification(n_samples=30000, n_features=40, n_informative=15, flip_y=0.03,
                                   class_sep=0.8, random_state=3)
        X_train, X_rest, y_train, y_rest = train_test_split(X, y, test_size=0.3, random_state=3, stratify=y)
        X_val, X_test, y_val, y_test = train_test_split(X_rest, y_rest, test_size=0.5, random_state=3, stratify=y_rest)
        scaler = StandardScaler().fit(X_train)


        def loader(X, y, shuffle):
            ds = TensorDataset(torch.tensor(scaler.transform(X), dtype=torch.float32),
                               torch.tensor(y, dtype=torch.float32))
            return DataLoader(ds, batch_size=128, shuffle=shuffle)


        train_loader = loader(X_train, y_train, True)
        val_loader = loader(X_val, y_val, False)
        test_loader = loader(X_test, y_test, False)
        print(len(train_loader.dataset), len(val_loader.dataset), len(test_loader.dataset))
        """,
        """
        def train_one_epoch(model, loader, optimizer, criterion):
            model.train()
            total = 0.0
            for xb, yb in loader:
                optimizer.zero_grad()
                loss = criterion(model(xb).squeeze(1), yb)
                loss.backward()
                optimizer.step()
                total += loss.item() * len(xb)
            return total / len(loader.dataset)


        @torch.no_grad()
        def evaluate(model, loader, criterion):
            model.eval()
            total, correct = 0.0, 0
            for xb, yb in loader:
                logits = model(xb).squeeze(1)
                total += criterion(logits, yb).item() * len(xb)
                correct += ((logits > 0).float() == yb).sum().item()
            n = len(loader.dataset)
            return total / n, correct / n
        """,
        """
        model = nn.Sequential(
            nn.Linear(40, 256), nn.ReLU(), nn.Dropout(0.2),
            nn.Linear(256, 128), nn.ReLU(), nn.Dropout(0.2),
            nn.Linear(128, 1),
        )
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
        criterion = nn.BCEWithLogitsLoss()
        """,
        CKPT_TARGET,
    ],
    target=4,
    n=130,
    small=2,
    fix={4: edit(CKPT_TARGET, "model.load_state_dict(best)", 'model.load_state_dict(best["state_dict"])')},
)

AUC_TARGET = """
EPOCHS = @N@
log = {"train_loss": [], "val_acc": []}
for epoch in range(EPOCHS):
    log["train_loss"].append(fit_epoch(model, train_loader, optimizer, loss_fn))
    scheduler.step()
    val_logits = predict_logits(model, val_loader)
    log["val_acc"].append((val_logits.argmax(1).numpy() == y_val).mean())
    if epoch % 5 == 0:
        print(f"epoch {epoch:3d}  loss {log['train_loss'][-1]:.4f}  val acc {log['val_acc'][-1]:.3f}")

test_logits = predict_logits(model, test_loader)
test_pred = test_logits.argmax(1).numpy()
print(f"test accuracy {(test_pred == y_test).mean():.3f}")
test_auc = roc_auc_score(y_test, test_logits.numpy(), multi_class="ovr")
print(f"test macro AUC (one-vs-rest) {test_auc:.4f}")
print(classification_report(y_test, test_pred, digits=3))
"""

case(
    name="torch_multiclass_auc_from_raw_logits",
    library="torch",
    category="API misuse",
    needs_runtime=True,
    exception="ValueError",
    message_contains="Target scores need to be probabilities for multiclass roc_auc",
    diagnosis="predict_logits() returns the network's raw outputs, and after training they go "
    "straight to roc_auc_score(..., multi_class='ovr'), which requires class probabilities summing "
    "to 1 per row; the logits do not, so the evaluation fails after all epochs. Apply "
    "torch.softmax(test_logits, dim=1) first.",
    cells=[
        """
        import numpy as np
        import torch
        from torch import nn
        from torch.utils.data import DataLoader, TensorDataset
        from sklearn.metrics import classification_report, roc_auc_score

        torch.manual_seed(1)
        torch.set_num_threads(1)
        """,
        """
        from sklearn.datasets import make_classification
        from sklearn.model_selection import train_test_split
        from sklearn.preprocessing import StandardScaler

        X, y = make_classification(n_samples=24000, n_features=30, n_informative=12, n_classes=5,
                                   n_clusters_per_class=2, random_state=11)
        X_train, X_rest, y_train, y_rest = train_test_split(X, y, test_size=0.3, random_state=11, stratify=y)
        X_val, X_test, y_val, y_test = train_test_split(X_rest, y_rest, test_size=0.5, random_state=11, stratify=y_rest)
        scaler = StandardScaler().fit(X_train)


        def to_loader(X, y, shuffle):
            ds = TensorDataset(torch.tensor(scaler.transform(X), dtype=torch.float32), torch.tensor(y))
            return DataLoader(ds, batch_size=64, shuffle=shuffle)


        train_loader = to_loader(X_train, y_train, True)
        val_loader = to_loader(X_val, y_val, False)
        test_loader = to_loader(X_test, y_test, False)
        print(np.bincount(y_train))
        """,
        """
        def fit_epoch(model, loader, optimizer, loss_fn):
            model.train()
            total = 0.0
            for xb, yb in loader:
                optimizer.zero_grad()
                loss = loss_fn(model(xb), yb)
                loss.backward()
                optimizer.step()
                total += loss.item() * len(xb)
            return total / len(loader.dataset)


        @torch.no_grad()
        def predict_logits(model, loader):
            model.eval()
            return torch.cat([model(xb) for xb, _ in loader])


        model = nn.Sequential(
            nn.Linear(30, 256), nn.BatchNorm1d(256), nn.ReLU(), nn.Dropout(0.1),
            nn.Linear(256, 128), nn.BatchNorm1d(128), nn.ReLU(),
            nn.Linear(128, 5),
        )
        loss_fn = nn.CrossEntropyLoss(label_smoothing=0.05)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=10, gamma=0.5)
        """,
        AUC_TARGET,
    ],
    target=3,
    n=125,
    small=1,
    fix={3: edit(AUC_TARGET, "roc_auc_score(y_test, test_logits.numpy(), multi_class=\"ovr\")",
                 "roc_auc_score(y_test, torch.softmax(test_logits, dim=1).numpy(), multi_class=\"ovr\")")},
)

# ---------------------------------------------------------------------------------------------
# Keras

LR_TARGET = """
keras.utils.set_random_seed(42)
EPOCHS = @N@
model = keras.Sequential([
    keras.Input(shape=(X_train.shape[1],)),
    layers.Dense(128, activation="relu"),
    layers.Dropout(0.3),
    layers.Dense(64, activation="relu"),
    layers.Dense(1, activation="sigmoid"),
])
model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="binary_crossentropy", metrics=["accuracy"])
reduce_lr = keras.callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=4, min_lr=1e-5)
history = model.fit(X_train, y_train, validation_data=(X_val, y_val), epochs=EPOCHS,
                    batch_size=256, callbacks=[reduce_lr], verbose=0)

test_loss, test_acc = model.evaluate(X_test, y_test, verbose=0)
print(f"test loss {test_loss:.4f}  test accuracy {test_acc:.3f}")

hist = history.history
epochs = range(1, EPOCHS + 1)
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4))
ax1.plot(epochs, hist["loss"], label="train")
ax1.plot(epochs, hist["val_loss"], label="validation")
ax1.legend()
ax2.plot(epochs, hist["lr"])
ax2.set_yscale("log")
ax2.set_title("learning rate")
print(f"learning rate {hist['lr'][0]:g} -> {hist['lr'][-1]:g} over {len(hist['loss'])} epochs")
"""

case(
    name="keras_plateau_schedule_plotted_by_old_key",
    library="tensorflow",
    category="API misuse",
    needs_runtime=False,
    exception="KeyError",
    message_contains="'lr'",
    diagnosis="With ReduceLROnPlateau, Keras 3 records the learning rate in the history under "
    "'learning_rate' (Keras 2 used 'lr'); after the whole fit and the test evaluation, the plot "
    "reads hist['lr'] and fails with KeyError. Read hist['learning_rate'].",
    cells=[
        """
        import numpy as np
        import matplotlib.pyplot as plt
        import keras
        from keras import layers
        """,
        """
        from sklearn.datasets import make_classification
        from sklearn.model_selection import train_test_split
        from sklearn.preprocessing import StandardScaler

        X, y = make_classification(n_samples=40000, n_features=24, n_informative=10, flip_y=0.05,
                                   class_sep=0.8, random_state=5)
        X_train, X_rest, y_train, y_rest = train_test_split(X, y, test_size=0.3, random_state=5)
        X_val, X_test, y_val, y_test = train_test_split(X_rest, y_rest, test_size=0.5, random_state=5)
        scaler = StandardScaler().fit(X_train)
        X_train, X_val, X_test = (scaler.transform(a).astype("float32") for a in (X_train, X_val, X_test))
        y_train, y_val, y_test = (a.astype("float32") for a in (y_train, y_val, y_test))
        print(X_train.shape, X_val.shape, X_test.shape)
        """,
        LR_TARGET,
    ],
    target=2,
    n=130,
    small=2,
    fix={2: LR_TARGET.replace('hist["lr"]', 'hist["learning_rate"]').replace("hist['lr']", "hist['learning_rate']")},
)

TWO_INPUT_TARGET = """
keras.utils.set_random_seed(7)
EPOCHS = @N@
num_in = keras.Input(shape=(Xn_train.shape[1],), name="numeric")
city_in = keras.Input(shape=(1,), dtype="int32", name="city")
city_vec = layers.Flatten()(layers.Embedding(N_CITIES, 8)(city_in))
h = layers.Concatenate()([num_in, city_vec])
h = layers.Dense(128, activation="relu")(h)
h = layers.Dense(64, activation="relu")(h)
out = layers.Dense(1)(h)
model = keras.Model([num_in, city_in], out)
model.compile(optimizer=keras.optimizers.Adam(2e-3), loss="mse", metrics=["mae"])
history = model.fit([Xn_train, city_train], y_train, validation_data=([Xn_val, city_val], y_val),
                    epochs=EPOCHS, batch_size=512, verbose=0)
print(f"final validation MAE {history.history['val_mae'][-1]:.3f}")

pred = model.predict(Xn_test, verbose=0).ravel()
rmse = float(np.sqrt(np.mean((pred - y_test) ** 2)))
print(f"test RMSE {rmse:.3f}")
by_city = pd.DataFrame({"city": city_test.ravel(), "abs_err": np.abs(pred - y_test)}).groupby("city")["abs_err"].mean()
print(by_city.sort_values().tail())
"""

case(
    name="keras_embedding_model_scored_without_city",
    library="tensorflow",
    category="implementation error",
    needs_runtime=False,
    exception="ValueError",
    message_contains="but it received 1 input tensors",
    diagnosis="The model has two inputs, the numeric features and the city id for the embedding, and "
    "is fitted and validated on [Xn, city]; after the fit the test predictions pass only Xn_test, "
    "so the functional model, expecting 2 inputs, fails. Predict on [Xn_test, city_test].",
    cells=[
        """
        import numpy as np
        import pandas as pd
        import keras
        from keras import layers
        """,
        """
        rng = np.random.default_rng(17)
        N, N_NUM, N_CITIES = 60000, 12, 50
        X_num = rng.normal(size=(N, N_NUM))
        city = rng.integers(0, N_CITIES, size=N)
        city_effect = rng.normal(0, 1.5, size=N_CITIES)
        w = rng.normal(size=N_NUM)
        y = X_num @ w + 0.5 * np.sin(X_num[:, 0] * X_num[:, 1]) + city_effect[city] + rng.normal(0, 0.5, size=N)

        order = rng.permutation(N)
        tr, va, te = order[:42000], order[42000:51000], order[51000:]
        mean, std = X_num[tr].mean(axis=0), X_num[tr].std(axis=0)
        Xn = ((X_num - mean) / std).astype("float32")
        city = city.reshape(-1, 1).astype("int32")
        y = y.astype("float32")
        Xn_train, Xn_val, Xn_test = Xn[tr], Xn[va], Xn[te]
        city_train, city_val, city_test = city[tr], city[va], city[te]
        y_train, y_val, y_test = y[tr], y[va], y[te]
        print(Xn_train.shape, city_train.shape, y_train.shape)
        """,
        TWO_INPUT_TARGET,
    ],
    target=2,
    n=150,
    small=1,
    fix={2: edit(TWO_INPUT_TARGET, "model.predict(Xn_test, verbose=0)",
                 "model.predict([Xn_test, city_test], verbose=0)")},
)

# ---------------------------------------------------------------------------------------------
# scikit-learn

SEARCH_TARGET = """
search = RandomizedSearchCV(pipe, param_dist, n_iter=@N@, scoring="roc_auc",
                            cv=StratifiedKFold(5, shuffle=True, random_state=0),
                            random_state=0, n_jobs=1)
search.fit(X_train, y_train)
print(f"best CV AUC {search.best_score_:.4f}")

# refit the best configuration with more boosting rounds
best = search.best_params_
final = HistGradientBoostingClassifier(
    learning_rate=best["learning_rate"] / 2,
    max_depth=best["max_depth"],
    max_leaf_nodes=best["max_leaf_nodes"],
    min_samples_leaf=best["min_samples_leaf"],
    l2_regularization=best["l2_regularization"],
    max_iter=300,
    random_state=0,
)
final.fit(scaler.fit_transform(X_train), y_train)
test_auc = roc_auc_score(y_test, final.predict_proba(scaler.transform(X_test))[:, 1])
print(f"test AUC {test_auc:.4f}")
results = pd.DataFrame(search.cv_results_).sort_values("rank_test_score")
print(f"{len(results)} candidates")
print(results[["rank_test_score", "mean_test_score", "std_test_score"]].head(5))
"""

case(
    name="sklearn_search_best_params_without_step_prefix",
    library="sklearn",
    category="API misuse",
    needs_runtime=False,
    exception="KeyError",
    message_contains="'learning_rate'",
    diagnosis="The search runs over a Pipeline, so best_params_ names every parameter with its step "
    "prefix ('model__learning_rate', ...); after all the candidates are fitted, best['learning_rate'] "
    "is not a key. Strip the 'model__' prefix (or read best['model__learning_rate'], ...).",
    cells=[
        """
        import numpy as np
        import pandas as pd
        from threadpoolctl import threadpool_limits
        """,
        """
        from sklearn.datasets import make_classification
        from sklearn.model_selection import train_test_split

        X, y = make_classification(n_samples=8000, n_features=25, n_informative=8, weights=[0.8, 0.2],
                                   flip_y=0.02, random_state=21)
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, stratify=y, random_state=21)
        print(X_train.shape, y_train.mean().round(3))
        """,
        """
        from scipy.stats import loguniform, randint
        from sklearn.ensemble import HistGradientBoostingClassifier
        from sklearn.metrics import roc_auc_score
        from sklearn.model_selection import RandomizedSearchCV, StratifiedKFold
        from sklearn.pipeline import Pipeline
        from sklearn.preprocessing import StandardScaler

        scaler = StandardScaler()
        pipe = Pipeline([("scale", StandardScaler()), ("model", HistGradientBoostingClassifier(random_state=0))])
        param_dist = {
            "model__learning_rate": loguniform(0.01, 0.3),
            "model__max_depth": [3, 4, 6, 8, None],
            "model__max_leaf_nodes": randint(15, 64),
            "model__min_samples_leaf": randint(10, 80),
            "model__l2_regularization": loguniform(1e-4, 1.0),
        }
        threadpool_limits(1)  # after the imports, so OpenMP and BLAS are both loaded: stable timings
        """,
        SEARCH_TARGET,
    ],
    target=3,
    n=40,
    small=2,
    fix={3: edit(SEARCH_TARGET, "best = search.best_params_",
                 'best = {k.removeprefix("model__"): v for k, v in search.best_params_.items()}')},
)

FOLD_TARGET = """
oof = np.zeros(len(tx))
fold_rows = []
for fold, (tr_idx, va_idx) in enumerate(folds.split(tx)):
    tr, va = tx.iloc[tr_idx], tx.iloc[va_idx]
    enc = OrdinalEncoder()
    X_tr = np.hstack([tr[num_cols].to_numpy(), enc.fit_transform(tr[cat_cols])])
    clf = RandomForestClassifier(n_estimators=@N@, min_samples_leaf=3, max_features=0.5,
                                 random_state=fold, n_jobs=1)
    clf.fit(X_tr, tr["is_fraud"])
    X_va = np.hstack([va[num_cols].to_numpy(), enc.transform(va[cat_cols])])
    oof[va_idx] = clf.predict_proba(X_va)[:, 1]
    auc = roc_auc_score(va["is_fraud"], oof[va_idx])
    fold_rows.append({"fold": fold, "n_train": len(tr), "auc": auc})
    print(f"fold {fold}  AUC {auc:.4f}")

scores = pd.DataFrame(fold_rows).set_index("fold")
print(scores)
print(f"mean fold AUC {scores['auc'].mean():.4f} +- {scores['auc'].std():.4f}   "
      f"out-of-fold AUC {roc_auc_score(tx['is_fraud'], oof):.4f}")
"""

case(
    name="sklearn_time_folds_category_new_in_last_fold",
    library="sklearn",
    category="data confusion",
    needs_runtime=True,
    exception="ValueError",
    message_contains="Found unknown categories",
    diagnosis="The transactions are in time order and the KFold is not shuffled; the merchant type "
    "'crypto' appears only in the last 8% of rows, so every fold but the last has it in its "
    "training part, and the last fold's encoder, fitted on the first 80%, meets it only in the "
    "validation part: OrdinalEncoder.transform fails after that fold's forest is fitted. Use "
    "OrdinalEncoder(handle_unknown='use_encoded_value', unknown_value=-1).",
    cells=[
        """
        import numpy as np
        import pandas as pd
        from threadpoolctl import threadpool_limits
        """,
        """
        rng = np.random.default_rng(31)
        N = 40000
        kinds = np.array(["grocery", "fuel", "travel", "electronics", "online", "restaurants"])
        merchant = rng.choice(kinds, size=N, p=[0.3, 0.15, 0.1, 0.1, 0.25, 0.1]).astype(object)
        late = np.arange(N) >= int(0.92 * N)
        merchant[late & (rng.random(N) < 0.12)] = "crypto"  # a merchant type launched recently
        tx = pd.DataFrame({
            "ts": pd.Timestamp("2024-01-01") + pd.to_timedelta(np.sort(rng.uniform(0, 180, N)), unit="D"),
            "amount": np.round(rng.lognormal(3.5, 1.0, N), 2),
            "hour": rng.integers(0, 24, N),
            "n_prev_tx": rng.poisson(20, N),
            "account_age_days": rng.integers(1, 3000, N),
            "merchant_type": merchant,
            "channel": rng.choice(["pos", "web", "app"], size=N, p=[0.5, 0.3, 0.2]),
            "country": rng.choice(["FR", "DE", "ES", "IT", "NL"], size=N),
        })
        logit = (-4 + 0.6 * np.log(tx["amount"]) - 0.0004 * tx["account_age_days"]
                 + 1.2 * (tx["merchant_type"] == "electronics") + 0.8 * (tx["channel"] == "web")
                 + 0.5 * tx["hour"].between(0, 5) + 2.0 * (tx["merchant_type"] == "crypto"))
        tx["is_fraud"] = (rng.random(N) < 1 / (1 + np.exp(-logit))).astype(int)
        print(tx.shape, tx["is_fraud"].mean().round(4))
        print(tx["merchant_type"].value_counts())
        """,
        """
        from sklearn.ensemble import RandomForestClassifier
        from sklearn.metrics import roc_auc_score
        from sklearn.model_selection import KFold
        from sklearn.preprocessing import OrdinalEncoder

        cat_cols = ["merchant_type", "channel", "country"]
        num_cols = ["amount", "hour", "n_prev_tx", "account_age_days"]
        folds = KFold(n_splits=5)  # rows are in time order: contiguous blocks
        threadpool_limits(1)
        """,
        FOLD_TARGET,
    ],
    target=3,
    n=210,
    small=3,
    fix={3: edit(FOLD_TARGET, "enc = OrdinalEncoder()",
                 'enc = OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1)')},
)

ZOO_MODELS = """
from sklearn.ensemble import ExtraTreesClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

models = {
    "logistic": make_pipeline(StandardScaler(), LogisticRegression(C=0.5, max_iter=2000)),
    "random_forest": RandomForestClassifier(n_estimators=@N@, min_samples_leaf=2, random_state=0),
    "extra_trees": ExtraTreesClassifier(n_estimators=@N@, min_samples_leaf=2, random_state=0),
    "knn": make_pipeline(StandardScaler(), KNeighborsClassifier(n_neighbors=25)),
    "linear_svm": make_pipeline(StandardScaler(), LinearSVC(C=0.5)),
}
threadpool_limits(1)  # one thread per library, now that all are loaded
"""

case(
    name="sklearn_model_zoo_probabilities_from_svm",
    library="sklearn",
    category="API misuse",
    needs_runtime=False,
    exception="AttributeError",
    message_contains="has no attribute 'predict_proba'",
    diagnosis="Every model of the comparison is scored from cross_val_predict(..., "
    "method='predict_proba'); the last one is a pipeline ending in LinearSVC, which has no "
    "predict_proba, so the loop fails at the last model after the others ran. Wrap it in "
    "CalibratedClassifierCV(LinearSVC(C=0.5)).",
    cells=[
        """
        import time

        import numpy as np
        import pandas as pd
        from threadpoolctl import threadpool_limits
        """,
        """
        from sklearn.datasets import make_classification

        X, y = make_classification(n_samples=12000, n_features=30, n_informative=10, n_redundant=6,
                                   flip_y=0.05, class_sep=0.7, random_state=4)
        print(X.shape, np.bincount(y))
        """,
        ZOO_MODELS,
        """
        from sklearn.metrics import brier_score_loss, log_loss, roc_auc_score
        from sklearn.model_selection import StratifiedKFold, cross_val_predict

        cv = StratifiedKFold(n_splits=5, shuffle=True, random_state=1)
        oof, rows = {}, []
        for name, est in models.items():
            t0 = time.perf_counter()
            proba = cross_val_predict(est, X, y, cv=cv, method="predict_proba")[:, 1]
            oof[name] = proba
            rows.append({"model": name, "auc": roc_auc_score(y, proba), "log_loss": log_loss(y, proba),
                         "brier": brier_score_loss(y, proba), "seconds": time.perf_counter() - t0})
            print(f"{name:14s} AUC {rows[-1]['auc']:.4f}  {rows[-1]['seconds']:.1f}s")

        table = pd.DataFrame(rows).set_index("model").sort_values("log_loss")
        print(table.round(4))
        blend = np.mean([oof[m] for m in table.index[:3]], axis=0)
        print(f"blend of the three best: AUC {roc_auc_score(y, blend):.4f}  log loss {log_loss(y, blend):.4f}")
        """,
    ],
    target=3,
    n=210,
    small=5,
    fix={2: edit(ZOO_MODELS, '"linear_svm": make_pipeline(StandardScaler(), LinearSVC(C=0.5)),',
                 '"linear_svm": make_pipeline(StandardScaler(), CalibratedClassifierCV(LinearSVC(C=0.5))),')
         .replace("from sklearn.ensemble import", "from sklearn.calibration import CalibratedClassifierCV\n"
                  "from sklearn.ensemble import")},
)

# ---------------------------------------------------------------------------------------------
# pandas

QCUT_TARGET = """
LABELS = ["very low", "low", "mid", "high", "very high"]
parts = []
for store, g in daily.groupby("store", sort=True):
    g = g.sort_values("date").copy()
    g["ma7"] = g["sales"].rolling(7, min_periods=1).mean()
    g["ma28"] = g["sales"].rolling(28, min_periods=1).mean()
    g["p90_28"] = g["sales"].rolling(28, min_periods=7).apply(lambda w: np.percentile(w, 90), raw=True)
    g["ewm14"] = g["sales"].ewm(halflife=14).mean()
    g["dow_index"] = g["sales"] / g.groupby(g["date"].dt.dayofweek)["sales"].transform("mean")
    g["band"] = pd.qcut(g["sales"], 5, labels=LABELS)
    parts.append(g)

features = pd.concat(parts, ignore_index=True)
print(f"{features['store'].nunique()} stores, {len(features)} rows")
print(features.groupby("band", observed=True)[["sales", "ma28", "p90_28"]].mean().round(1))
print(pd.crosstab(features["date"].dt.day_name(), features["band"], normalize="index").round(3))
"""

case(
    name="pandas_store_demand_bands_new_store",
    library="pandas",
    category="data confusion",
    needs_runtime=True,
    exception="ValueError",
    message_contains="Bin edges must be unique",
    diagnosis="Each store's daily sales are cut into five quantile bands with pd.qcut; the store that "
    "opened in October 2023 sorts last and has zero sales on most of its days, so several of its "
    "quantile edges are 0 and qcut fails on that last group, after all the others. Rank the sales "
    "first (pd.qcut(g['sales'].rank(method='first'), 5, ...)).",
    cells=[
        """
        import numpy as np
        import pandas as pd
        """,
        """
        rng = np.random.default_rng(12)
        N_STORES = @N@
        dates = pd.date_range("2022-01-01", "2023-12-31", freq="D")
        t = np.arange(len(dates))
        frames = []
        for s in range(N_STORES):
            base = rng.uniform(50, 400)
            weekly = 1 + 0.25 * np.sin(2 * np.pi * dates.dayofweek.to_numpy() / 7 + rng.uniform(0, 6))
            trend = 1 + rng.normal(0, 0.15) * t / len(t)
            frames.append(pd.DataFrame({"store": f"S{s:04d}", "date": dates,
                                        "sales": rng.poisson(base * weekly * trend)}))
        opened = dates >= "2023-10-01"  # the newest store, no sales before it opened
        frames.append(pd.DataFrame({"store": "S9001", "date": dates,
                                    "sales": np.where(opened, rng.poisson(180, len(dates)), 0)}))
        daily = pd.concat(frames, ignore_index=True)
        print(daily.shape)
        print(daily.groupby("store")["sales"].sum().describe())
        """,
        QCUT_TARGET,
    ],
    target=2,
    n=1500,
    small=4,
    fix={2: edit(QCUT_TARGET, 'pd.qcut(g["sales"], 5, labels=LABELS)',
                 'pd.qcut(g["sales"].rank(method="first"), 5, labels=LABELS)')},
)

SESSION_TARGET = """
aggs = []
for day, chunk in events.groupby(events["ts"].dt.date):
    chunk = chunk.sort_values(["user_id", "ts"])
    gap = chunk.groupby("user_id")["ts"].diff().dt.total_seconds()
    chunk["session"] = (gap.isna() | (gap > 1800)).cumsum()
    sess = chunk.groupby(["user_id", "session"]).agg(
        start=("ts", "min"), end=("ts", "max"), n=("event", "size"), spend=("amount", "sum"),
        purchases=("event", lambda e: (e == "purchase").sum()),
    )
    sess["minutes"] = (sess["end"] - sess["start"]).dt.total_seconds() / 60
    per_user = sess.groupby(level="user_id").agg(
        sessions=("n", "size"), events=("n", "sum"), minutes=("minutes", "sum"),
        spend=("spend", "sum"), purchases=("purchases", "sum"),
    )
    per_user["active_days"] = 1
    aggs.append(per_user)

features = pd.concat(aggs).groupby(level="user_id").sum()
features["minutes_per_session"] = features["minutes"] / features["sessions"]
print(features.shape)
train = features.reset_index().merge(labels, on="user_id", how="inner")
print(train.groupby("churned")[["sessions", "spend", "active_days", "minutes_per_session"]].mean().round(2))
activity = pd.cut(train["active_days"], [0, 5, 15, 30, 60, 366])
print(train.groupby(activity, observed=True)["churned"].agg(["mean", "size"]))
"""

case(
    name="pandas_daily_sessions_joined_to_text_ids",
    library="pandas",
    category="data confusion",
    needs_runtime=False,
    exception="ValueError",
    message_contains="You are trying to merge on int64 and",
    diagnosis="The session features are built day by day from the event log and keep its integer "
    "user_id, while the churn labels hold the ids as text (as exported); after all the days are "
    "aggregated, the merge on user_id refuses int64 against str. Convert the labels' user_id with "
    "astype('int64') before merging.",
    cells=[
        """
        import numpy as np
        import pandas as pd
        """,
        """
        rng = np.random.default_rng(5)
        N_USERS, N_EVENTS = 20000, @N@
        events = pd.DataFrame({
            "user_id": rng.integers(100000, 100000 + N_USERS, N_EVENTS),
            "ts": pd.Timestamp("2024-01-01") + pd.to_timedelta(np.sort(rng.uniform(0, 90 * 86400, N_EVENTS)), unit="s"),
            "event": rng.choice(["view", "click", "cart", "purchase"], N_EVENTS, p=[0.6, 0.25, 0.1, 0.05]),
        })
        events["amount"] = np.where(events["event"] == "purchase", np.round(rng.lognormal(3, 0.8, N_EVENTS), 2), 0.0)
        # churn labels as exported by the CRM: ids come as text
        labels = pd.DataFrame({
            "user_id": np.arange(100000, 100000 + N_USERS).astype(str),
            "churned": (rng.random(N_USERS) < 0.2).astype(int),
        })
        print(events.shape, labels.shape)
        print(events["event"].value_counts(normalize=True).round(3))
        """,
        SESSION_TARGET,
    ],
    target=2,
    n=780000,
    small=20000,
    fix={2: edit(SESSION_TARGET, 'merge(labels, on="user_id", how="inner")',
                 'merge(labels.assign(user_id=labels["user_id"].astype("int64")), on="user_id", how="inner")')},
)

# ---------------------------------------------------------------------------------------------
# statsmodels

SARIMAX_TARGET = """
records = []
for k, origin in enumerate(origins):
    train = df.iloc[origin - WINDOW:origin]
    future = df.iloc[origin:origin + H]
    model = sm.tsa.SARIMAX(train["demand"], exog=train[["temp", "promo"]], order=(1, 0, 1),
                           seasonal_order=(1, 0, 1, 7), trend="c")
    res = model.fit(disp=False)
    fc = res.forecast(steps=H, exog=future[["temp", "promo"]])
    for step, (actual, pred) in enumerate(zip(future["demand"], fc), start=1):
        records.append({"origin": df.index[origin], "step": step, "actual": actual, "forecast": pred})
    if k % 10 == 0:
        print(f"origin {df.index[origin].date()}  AIC {res.aic:.1f}")

errors = pd.DataFrame(records)
errors["ape"] = (errors["forecast"] - errors["actual"]).abs() / errors["actual"]
print(errors.groupby("step")["ape"].mean().mul(100).round(2))
print(f"overall MAPE {100 * errors['ape'].mean():.2f}% over {errors['origin'].nunique()} of {len(origins)} origins")
"""

case(
    name="statsmodels_walk_forward_short_last_horizon",
    library="statsmodels",
    category="implementation error",
    needs_runtime=True,
    exception="ValueError",
    message_contains="Provided exogenous values are not of the appropriate shape",
    diagnosis="The walk-forward origins step by H=14 from day 365, but the series' length leaves only "
    "a few days after the last origin; that last slice of future exog is shorter than the H steps "
    "asked of forecast(), which fails on the last origin after all the other fits. Forecast "
    "len(future) steps.",
    cells=[
        """
        import warnings

        import numpy as np
        import pandas as pd
        import statsmodels.api as sm
        from threadpoolctl import threadpool_limits

        warnings.filterwarnings("ignore")
        threadpool_limits(1)  # small matrices: one BLAS thread is faster and steadier
        """,
        """
        rng = np.random.default_rng(3)
        N_DAYS = @N@
        idx = pd.date_range("2021-01-01", periods=N_DAYS, freq="D")
        t = np.arange(N_DAYS)
        temp = 15 + 10 * np.sin(2 * np.pi * t / 365.25) + rng.normal(0, 2, N_DAYS)
        promo = (rng.random(N_DAYS) < 0.15).astype(float)
        weekday = np.array([0, -5, -3, 0, 10, 30, 20])[idx.dayofweek]
        noise = np.zeros(N_DAYS)
        for i in range(1, N_DAYS):
            noise[i] = 0.6 * noise[i - 1] + rng.normal(0, 8)
        df = pd.DataFrame({"demand": 200 + 3 * temp + 40 * promo + weekday + noise,
                           "temp": temp, "promo": promo}, index=idx)
        print(df.shape)
        print(df.describe().round(1))
        """,
        """
        WINDOW = 365  # rolling one-year training window
        H = 14        # two-week forecasts
        origins = list(range(WINDOW, len(df), H))
        print(len(origins), "forecast origins, the last on", df.index[origins[-1]].date())
        """,
        SARIMAX_TARGET,
    ],
    target=3,
    n=365 + 14 * 105 + 5,
    small=365 + 14 * 2 + 5,
    fix={3: edit(SARIMAX_TARGET, "res.forecast(steps=H,", "res.forecast(steps=len(future),")},
)

# ---------------------------------------------------------------------------------------------
# NumPy

NUMPY_TARGET = """
EPOCHS = @N@
BATCH = 128
LR = 0.05
params = init_params(X_train.shape[1], 256, N_CLASSES, seed=0)
losses, test_accs = [], []
for epoch in range(EPOCHS):
    order = rng.permutation(len(X_train))
    epoch_loss = 0.0
    for start in range(0, len(order), BATCH):
        idx = order[start:start + BATCH]
        cache = forward(params, X_train[idx])
        epoch_loss += cross_entropy(cache["probs"], Y_train[idx]) * len(idx)
        grads = backward(params, cache, X_train[idx], Y_train[idx])
        for name in params:
            params[name] -= LR * grads[name]
    losses.append(epoch_loss / len(X_train))
    pred = forward(params, X_test)["probs"].argmax(axis=1)
    test_accs.append((pred == y_test).mean())
    if epoch % 5 == 0:
        print(f"epoch {epoch:3d}  loss {losses[-1]:.4f}  test acc {test_accs[-1]:.3f}")

cm = np.zeros((N_CLASSES, N_CLASSES), dtype=int)
np.add.at(cm, (y_test, pred), 1)
print(cm)
print("per-class recall", np.round(cm.diagonal() / cm.sum(axis=1), 3))
fig, ax = plt.subplots(1, 2, figsize=(11, 4))
ax[0].plot(range(1, EPOCHS + 1), losses)
ax[0].set_title("training loss")
ax[1].plot(range(1, EPOCHS + 1), test_accs)
ax[1].set_title("test accuracy")
print(f"best test accuracy {max(test_accs):.3f} at epoch {int(np.argmax(test_accs)) + 1}")
"""

case(
    name="numpy_scratch_mlp_confusion_float_labels",
    library="numpy",
    category="data confusion",
    needs_runtime=True,
    exception="IndexError",
    message_contains="arrays used as indices must be of integer",
    diagnosis="Features and labels were shuffled together as one np.column_stack array, which is "
    "float, so y_test is float64; training only compares it with ==, and after all epochs the "
    "confusion matrix indexes with it in np.add.at, which refuses float indices. Use "
    "y_test.astype(int).",
    cells=[
        """
        import numpy as np
        import matplotlib.pyplot as plt
        from sklearn.datasets import make_classification
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
        """,
        """
        N_CLASSES = 6
        X, y = make_classification(n_samples=60000, n_features=40, n_informative=20, n_classes=N_CLASSES,
                                   n_clusters_per_class=2, random_state=8)
        data = np.column_stack([X, y])
        rng = np.random.default_rng(0)
        rng.shuffle(data)
        n_train = int(0.8 * len(data))
        X_train, y_train = data[:n_train, :-1], data[:n_train, -1]
        X_test, y_test = data[n_train:, :-1], data[n_train:, -1]
        mu, sd = X_train.mean(axis=0), X_train.std(axis=0)
        X_train, X_test = (X_train - mu) / sd, (X_test - mu) / sd
        Y_train = np.eye(N_CLASSES)[y_train.astype(int)]
        print(X_train.shape, X_test.shape, np.bincount(y_train.astype(int)))
        """,
        """
        def init_params(n_in, n_hidden, n_out, seed):
            g = np.random.default_rng(seed)
            return {
                "W1": g.normal(0, np.sqrt(2 / n_in), (n_in, n_hidden)), "b1": np.zeros(n_hidden),
                "W2": g.normal(0, np.sqrt(2 / n_hidden), (n_hidden, n_out)), "b2": np.zeros(n_out),
            }


        def forward(params, X):
            z1 = X @ params["W1"] + params["b1"]
            a1 = np.maximum(z1, 0)
            z2 = a1 @ params["W2"] + params["b2"]
            z2 -= z2.max(axis=1, keepdims=True)
            e = np.exp(z2)
            return {"z1": z1, "a1": a1, "probs": e / e.sum(axis=1, keepdims=True)}


        def cross_entropy(probs, Y):
            return float(-np.mean(np.sum(Y * np.log(probs + 1e-12), axis=1)))


        def backward(params, cache, X, Y):
            n = len(X)
            d2 = (cache["probs"] - Y) / n
            d1 = (d2 @ params["W2"].T) * (cache["z1"] > 0)
            return {"W2": cache["a1"].T @ d2, "b2": d2.sum(axis=0), "W1": X.T @ d1, "b1": d1.sum(axis=0)}
        """,
        NUMPY_TARGET,
    ],
    target=3,
    n=300,
    small=1,
    fix={3: edit(NUMPY_TARGET, "np.add.at(cm, (y_test, pred), 1)", "np.add.at(cm, (y_test.astype(int), pred), 1)")},
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
    root.mkdir(parents=True, exist_ok=True)
    seconds = {}
    if not args.small and SECONDS_FILE.exists():
        seconds = json.loads(SECONDS_FILE.read_text())
    for c in CASES:
        write_case(c, root / c.name, small=bool(args.small))
    manifest = [entry(c, seconds) for c in CASES]
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"{len(CASES)} cases under {root}")


if __name__ == "__main__":
    main()
