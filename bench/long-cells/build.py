"""Generate crane's corpus of long-cell crash/fix notebook pairs.

Each case is a compact definition: the code cells of the buggy notebook, the target cell (0-based
among code cells), the edits that make the fixed notebook, and `n`, the size that sets how long the
target cell runs (epochs, rows, folds, candidates), written into the cells where they say `@N@`.
Every target cell trains, searches or loops for at least 30 s on the 2-core development machine;
the buggy one crashes in its last lines or last iteration. All data is made by seeded generators
or comes from scikit-learn's bundled datasets: no file is read, nothing is downloaded.

    .venv/bin/python bench/long-cells/build.py              # write dev/ and held-out/
    .venv/bin/python bench/long-cells/build.py --flat DIR   # every case under DIR (before the split)
    .venv/bin/python bench/long-cells/build.py --small --flat DIR   # tiny sizes, to check crashes fast

The split (README.md): the case names, sorted, are shuffled with `random.Random(20261203)`; the
first half goes to `dev/`, the rest to `held-out/`, each with its own manifest.json. Measured run
times of the targets (`target_seconds`) are kept in `target_seconds.json`, written by verify.py.
Output is deterministic: same definitions, same bytes. Needs only the standard library and nbformat.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

HERE = Path(__file__).resolve().parent
SPLIT_SEED = 20261203
SECONDS_FILE = HERE / "target_seconds.json"


@dataclass
class Case:
    name: str
    library: str
    category: str
    needs_runtime: bool
    exception: str
    message_contains: str
    diagnosis: str
    cells: list[str]
    target: int
    n: int
    small: int
    fix: dict[int, str] = field(default_factory=dict)


def code(source: str) -> str:
    return textwrap.dedent(source).strip("\n")


CASES: list[Case] = []


def case(**kwargs) -> None:
    kwargs["cells"] = [code(c) for c in kwargs["cells"]]
    kwargs["fix"] = {i: code(c) for i, c in kwargs.get("fix", {}).items()}
    CASES.append(Case(**kwargs))


TORCH_IMPORTS = """
import numpy as np
import pandas as pd
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
"""

KERAS_IMPORTS = """
import numpy as np
import pandas as pd
import keras
from keras import layers
"""

# ---------------------------------------------------------------------------------------------
# torch

case(
    name="torch_eval_test_has_unseen_region",
    library="torch",
    category="data confusion",
    needs_runtime=True,
    exception="RuntimeError",
    message_contains="mat1 and mat2 shapes cannot be multiplied",
    diagnosis="The test frame has a region the training frame lacks, so pd.get_dummies gives it one "
    "more column (15 against 14) and the scaling aligns on the union of columns; the model trained on "
    "14 inputs fails on the 15-column test tensor after all epochs. Reindex the test dummies on the "
    "training columns.",
    cells=[
        TORCH_IMPORTS,
        """
        rng = np.random.default_rng(7)

        def make_frame(n, regions):
            df = pd.DataFrame(rng.normal(size=(n, 10)), columns=[f"x{i}" for i in range(10)])
            df["region"] = rng.choice(regions, size=n)
            logit = df["x0"] - 0.5 * df["x3"] + 0.8 * (df["region"] == "north")
            df["churn"] = (logit + rng.normal(scale=0.5, size=n) > 0).astype(int)
            return df

        train = make_frame(40000, ["north", "south", "east", "west"])
        test = make_frame(5000, ["north", "south", "east", "west", "island"])
        X_train = pd.get_dummies(train.drop(columns="churn"), columns=["region"], dtype=float)
        X_test = pd.get_dummies(test.drop(columns="churn"), columns=["region"], dtype=float)
        mean, std = X_train.mean(), X_train.std()
        X_train = (X_train - mean) / std
        X_test = (X_test - mean) / std
        print(X_train.shape, X_test.shape)
        """,
        """
        X_train_t = torch.tensor(X_train.to_numpy(), dtype=torch.float32)
        y_train_t = torch.tensor(train["churn"].to_numpy(), dtype=torch.float32)
        X_test_t = torch.tensor(X_test.fillna(0).to_numpy(), dtype=torch.float32)
        y_test_t = torch.tensor(test["churn"].to_numpy(), dtype=torch.float32)
        train_ds = TensorDataset(X_train_t, y_train_t)
        train_loader = DataLoader(train_ds, batch_size=128, shuffle=True)

        model = nn.Sequential(
            nn.Linear(X_train_t.shape[1], 128), nn.ReLU(),
            nn.Linear(128, 64), nn.ReLU(),
            nn.Linear(64, 1),
        )
        criterion = nn.BCEWithLogitsLoss()
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        """,
        """
        EPOCHS = @N@
        for epoch in range(EPOCHS):
            model.train()
            running = 0.0
            for xb, yb in train_loader:
                optimizer.zero_grad()
                loss = criterion(model(xb).squeeze(1), yb)
                loss.backward()
                optimizer.step()
                running += loss.item() * len(xb)
            if epoch % 5 == 0:
                print(f"epoch {epoch:3d}  loss {running / len(train_ds):.4f}")

        model.eval()
        with torch.no_grad():
            test_logits = model(X_test_t).squeeze(1)
        test_acc = ((test_logits > 0).float() == y_test_t).float().mean().item()
        print(f"test accuracy {test_acc:.3f}")
        """,
    ],
    target=3,
    n=170,
    small=2,
    fix={
        1: """
        rng = np.random.default_rng(7)

        def make_frame(n, regions):
            df = pd.DataFrame(rng.normal(size=(n, 10)), columns=[f"x{i}" for i in range(10)])
            df["region"] = rng.choice(regions, size=n)
            logit = df["x0"] - 0.5 * df["x3"] + 0.8 * (df["region"] == "north")
            df["churn"] = (logit + rng.normal(scale=0.5, size=n) > 0).astype(int)
            return df

        train = make_frame(40000, ["north", "south", "east", "west"])
        test = make_frame(5000, ["north", "south", "east", "west", "island"])
        X_train = pd.get_dummies(train.drop(columns="churn"), columns=["region"], dtype=float)
        X_test = pd.get_dummies(test.drop(columns="churn"), columns=["region"], dtype=float)
        X_test = X_test.reindex(columns=X_train.columns, fill_value=0.0)
        mean, std = X_train.mean(), X_train.std()
        X_train = (X_train - mean) / std
        X_test = (X_test - mean) / std
        print(X_train.shape, X_test.shape)
        """,
    },
)

case(
    name="torch_predict_helper_views_full_batch",
    library="torch",
    category="implementation error",
    needs_runtime=True,
    exception="RuntimeError",
    message_contains="is invalid for input of size",
    diagnosis="predict(), defined in an earlier cell, reshapes every test batch with "
    ".view(batch_size, 1, 8, 8); the 3594 test images leave a last batch of 10, which cannot be viewed "
    "as 256 images, so the cell fails after training. Use .view(-1, 1, 8, 8).",
    cells=[
        TORCH_IMPORTS,
        """
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split

        digits = load_digits()
        rng = np.random.default_rng(0)
        copies = [digits.images + rng.normal(scale=1.5, size=digits.images.shape) for _ in range(10)]
        X = (np.concatenate(copies) / 16.0).astype(np.float32)
        y = np.tile(digits.target, 10)
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=0)
        print(X_train.shape, X_test.shape)
        """,
        """
        class SmallCNN(nn.Module):
            def __init__(self):
                super().__init__()
                self.features = nn.Sequential(
                    nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
                    nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
                    nn.MaxPool2d(2),
                )
                self.head = nn.Sequential(nn.Flatten(), nn.Linear(32 * 4 * 4, 64), nn.ReLU(), nn.Linear(64, 10))

            def forward(self, x):
                return self.head(self.features(x))

        BATCH = 256

        def predict(model, X, batch_size=BATCH):
            model.eval()
            preds = []
            with torch.no_grad():
                for start in range(0, len(X), batch_size):
                    xb = torch.as_tensor(X[start:start + batch_size]).view(batch_size, 1, 8, 8)
                    preds.append(model(xb).argmax(dim=1))
            return torch.cat(preds).numpy()
        """,
        """
        EPOCHS = @N@
        model = SmallCNN()
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        criterion = nn.CrossEntropyLoss()
        train_loader = DataLoader(
            TensorDataset(torch.tensor(X_train).unsqueeze(1), torch.tensor(y_train)),
            batch_size=64, shuffle=True,
        )
        for epoch in range(EPOCHS):
            model.train()
            correct = 0
            for xb, yb in train_loader:
                optimizer.zero_grad()
                out = model(xb)
                loss = criterion(out, yb)
                loss.backward()
                optimizer.step()
                correct += (out.argmax(dim=1) == yb).sum().item()
            print(f"epoch {epoch + 1}: train accuracy {correct / len(X_train):.3f}")

        test_pred = predict(model, X_test)
        print("test accuracy", (test_pred == y_test).mean())
        """,
    ],
    target=3,
    n=105,
    small=1,
    fix={
        2: """
        class SmallCNN(nn.Module):
            def __init__(self):
                super().__init__()
                self.features = nn.Sequential(
                    nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
                    nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
                    nn.MaxPool2d(2),
                )
                self.head = nn.Sequential(nn.Flatten(), nn.Linear(32 * 4 * 4, 64), nn.ReLU(), nn.Linear(64, 10))

            def forward(self, x):
                return self.head(self.features(x))

        BATCH = 256

        def predict(model, X, batch_size=BATCH):
            model.eval()
            preds = []
            with torch.no_grad():
                for start in range(0, len(X), batch_size):
                    xb = torch.as_tensor(X[start:start + batch_size]).view(-1, 1, 8, 8)
                    preds.append(model(xb).argmax(dim=1))
            return torch.cat(preds).numpy()
        """,
    },
)

case(
    name="torch_last_epoch_validation_long_targets",
    library="torch",
    category="data confusion",
    needs_runtime=True,
    exception="RuntimeError",
    message_contains="result type Float can't be cast to the desired output type Long",
    diagnosis="The validation targets were made with torch.tensor(y_val), which keeps NumPy's int64, "
    "while the training targets are float32; BCEWithLogitsLoss only meets them in the branch of the "
    "last epoch, which fails after all the training. Convert y_val to float32 like y_train.",
    cells=[
        TORCH_IMPORTS,
        """
        from sklearn.datasets import make_classification
        from sklearn.model_selection import train_test_split
        from sklearn.preprocessing import StandardScaler

        X, y = make_classification(n_samples=30000, n_features=20, n_informative=8, random_state=1)
        X_train, X_val, y_train, y_val = train_test_split(X, y, test_size=0.2, random_state=1)
        scaler = StandardScaler().fit(X_train)
        X_train_t = torch.tensor(scaler.transform(X_train), dtype=torch.float32)
        y_train_t = torch.tensor(y_train, dtype=torch.float32)
        X_val_t = torch.tensor(scaler.transform(X_val), dtype=torch.float32)
        y_val_t = torch.tensor(y_val)
        train_loader = DataLoader(TensorDataset(X_train_t, y_train_t), batch_size=64, shuffle=True)
        """,
        """
        model = nn.Sequential(
            nn.Linear(20, 64), nn.ReLU(), nn.Dropout(0.2),
            nn.Linear(64, 32), nn.ReLU(),
            nn.Linear(32, 1),
        )
        criterion = nn.BCEWithLogitsLoss()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        """,
        """
        EPOCHS = @N@
        for epoch in range(EPOCHS):
            model.train()
            epoch_loss = 0.0
            for xb, yb in train_loader:
                optimizer.zero_grad()
                loss = criterion(model(xb).squeeze(1), yb)
                loss.backward()
                optimizer.step()
                epoch_loss += loss.item()
            print(f"epoch {epoch + 1}/{EPOCHS}  train loss {epoch_loss / len(train_loader):.4f}")
            if epoch == EPOCHS - 1:
                model.eval()
                with torch.no_grad():
                    val_logits = model(X_val_t).squeeze(1)
                    val_loss = criterion(val_logits, y_val_t).item()
                val_acc = ((val_logits > 0).long() == y_val_t).float().mean().item()
                print(f"final validation loss {val_loss:.4f}, accuracy {val_acc:.3f}")
        """,
    ],
    target=3,
    n=280,
    small=1,
    fix={
        3: """
        EPOCHS = @N@
        for epoch in range(EPOCHS):
            model.train()
            epoch_loss = 0.0
            for xb, yb in train_loader:
                optimizer.zero_grad()
                loss = criterion(model(xb).squeeze(1), yb)
                loss.backward()
                optimizer.step()
                epoch_loss += loss.item()
            print(f"epoch {epoch + 1}/{EPOCHS}  train loss {epoch_loss / len(train_loader):.4f}")
            if epoch == EPOCHS - 1:
                model.eval()
                with torch.no_grad():
                    val_logits = model(X_val_t).squeeze(1)
                    val_loss = criterion(val_logits, y_val_t.float()).item()
                val_acc = ((val_logits > 0).long() == y_val_t).float().mean().item()
                print(f"final validation loss {val_loss:.4f}, accuracy {val_acc:.3f}")
        """,
    },
)

case(
    name="torch_history_plot_validation_every_fifth_epoch",
    library="torch",
    category="implementation error",
    needs_runtime=False,
    exception="ValueError",
    message_contains="x and y must have same first dimension",
    diagnosis="The validation loss is recorded every fifth epoch only, so val_hist has EPOCHS / 5 "
    "entries and plotting it against range(EPOCHS) fails once training is over. Plot it against "
    "the epochs where it was recorded.",
    cells=[
        TORCH_IMPORTS
        + """import matplotlib.pyplot as plt
        """,
        """
        from sklearn.datasets import make_regression

        X, y = make_regression(n_samples=24000, n_features=30, n_informative=12, noise=15.0, random_state=4)
        y = (y - y.mean()) / y.std()
        X_t = torch.tensor(X, dtype=torch.float32)
        y_t = torch.tensor(y, dtype=torch.float32).unsqueeze(1)
        n_train = 20000
        X_tr, y_tr = X_t[:n_train], y_t[:n_train]
        X_va, y_va = X_t[n_train:], y_t[n_train:]

        model = nn.Sequential(nn.Linear(30, 128), nn.Tanh(), nn.Linear(128, 64), nn.Tanh(), nn.Linear(64, 1))
        optimizer = torch.optim.Adam(model.parameters(), lr=5e-4)
        loss_fn = nn.MSELoss()
        """,
        """
        EPOCHS = @N@
        BATCH = 100
        train_hist, val_hist = [], []
        for epoch in range(EPOCHS):
            model.train()
            perm = torch.randperm(n_train)
            total = 0.0
            for i in range(0, n_train, BATCH):
                idx = perm[i:i + BATCH]
                optimizer.zero_grad()
                loss = loss_fn(model(X_tr[idx]), y_tr[idx])
                loss.backward()
                optimizer.step()
                total += loss.item() * len(idx)
            train_hist.append(total / n_train)
            if epoch % 5 == 4:
                model.eval()
                with torch.no_grad():
                    val_hist.append(loss_fn(model(X_va), y_va).item())
                print(f"epoch {epoch + 1}: train {train_hist[-1]:.4f}  val {val_hist[-1]:.4f}")

        plt.figure(figsize=(7, 4))
        plt.plot(range(EPOCHS), train_hist, label="train")
        plt.plot(range(EPOCHS), val_hist, label="validation")
        plt.xlabel("epoch")
        plt.ylabel("MSE")
        plt.legend()
        """,
    ],
    target=2,
    n=520,
    small=5,
    fix={
        2: """
        EPOCHS = @N@
        BATCH = 100
        train_hist, val_hist = [], []
        for epoch in range(EPOCHS):
            model.train()
            perm = torch.randperm(n_train)
            total = 0.0
            for i in range(0, n_train, BATCH):
                idx = perm[i:i + BATCH]
                optimizer.zero_grad()
                loss = loss_fn(model(X_tr[idx]), y_tr[idx])
                loss.backward()
                optimizer.step()
                total += loss.item() * len(idx)
            train_hist.append(total / n_train)
            if epoch % 5 == 4:
                model.eval()
                with torch.no_grad():
                    val_hist.append(loss_fn(model(X_va), y_va).item())
                print(f"epoch {epoch + 1}: train {train_hist[-1]:.4f}  val {val_hist[-1]:.4f}")

        plt.figure(figsize=(7, 4))
        plt.plot(range(EPOCHS), train_hist, label="train")
        plt.plot(range(4, EPOCHS, 5), val_hist, label="validation")
        plt.xlabel("epoch")
        plt.ylabel("MSE")
        plt.legend()
        """,
    },
)

case(
    name="torch_f1_score_on_probabilities",
    library="torch",
    category="API misuse",
    needs_runtime=False,
    exception="ValueError",
    message_contains="Classification metrics can't handle a mix of binary and continuous targets",
    diagnosis="After training, f1_score gets the sigmoid probabilities instead of class labels; "
    "scikit-learn sees binary targets against continuous predictions and refuses. Threshold the "
    "probabilities first.",
    cells=[
        TORCH_IMPORTS,
        """
        from sklearn.metrics import f1_score, roc_auc_score

        rng = np.random.default_rng(11)
        n = 60000
        amount = rng.lognormal(3.0, 1.2, size=n)
        hour = rng.integers(0, 24, size=n)
        features = np.column_stack([
            np.log1p(amount), np.sin(hour / 24 * 2 * np.pi), np.cos(hour / 24 * 2 * np.pi),
            rng.normal(size=(n, 12)),
        ])
        risk = 0.9 * features[:, 0] - 1.5 * features[:, 1] + features[:, 3] - 4.0
        fraud = (risk + rng.logistic(size=n) > 0).astype(np.float32)
        print("fraud rate", fraud.mean().round(3))
        X_t = torch.tensor(features, dtype=torch.float32)
        y_t = torch.tensor(fraud)
        X_train, X_test = X_t[:50000], X_t[50000:]
        y_train, y_test = y_t[:50000], y_t[50000:]
        loader = DataLoader(TensorDataset(X_train, y_train), batch_size=256, shuffle=True)
        """,
        """
        class FraudNet(nn.Module):
            def __init__(self, d):
                super().__init__()
                self.net = nn.Sequential(
                    nn.Linear(d, 64), nn.ReLU(), nn.Dropout(0.1),
                    nn.Linear(64, 64), nn.ReLU(), nn.Dropout(0.1),
                    nn.Linear(64, 1),
                )

            def forward(self, x):
                return self.net(x).squeeze(1)

        model = FraudNet(X_train.shape[1])
        pos_weight = torch.tensor((1 - y_train.mean()) / y_train.mean())
        criterion = nn.BCEWithLogitsLoss(pos_weight=pos_weight)
        optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-4)
        """,
        """
        EPOCHS = @N@
        for epoch in range(EPOCHS):
            model.train()
            for xb, yb in loader:
                optimizer.zero_grad()
                criterion(model(xb), yb).backward()
                optimizer.step()
            if (epoch + 1) % 10 == 0:
                print(f"epoch {epoch + 1} done")

        model.eval()
        with torch.no_grad():
            probs = torch.sigmoid(model(X_test)).numpy()
        print("ROC AUC", round(roc_auc_score(y_test.numpy(), probs), 4))
        print("F1", round(f1_score(y_test.numpy(), probs), 4))
        """,
    ],
    target=3,
    n=150,
    small=2,
    fix={
        3: """
        EPOCHS = @N@
        for epoch in range(EPOCHS):
            model.train()
            for xb, yb in loader:
                optimizer.zero_grad()
                criterion(model(xb), yb).backward()
                optimizer.step()
            if (epoch + 1) % 10 == 0:
                print(f"epoch {epoch + 1} done")

        model.eval()
        with torch.no_grad():
            probs = torch.sigmoid(model(X_test)).numpy()
        print("ROC AUC", round(roc_auc_score(y_test.numpy(), probs), 4))
        print("F1", round(f1_score(y_test.numpy(), (probs > 0.5).astype(int)), 4))
        """,
    },
)

case(
    name="torch_lstm_test_windows_float64",
    library="torch",
    category="data confusion",
    needs_runtime=True,
    exception="ValueError",
    message_contains="does not match weight dtype",
    diagnosis="The training windows were converted with dtype=torch.float32, the test windows with "
    "torch.from_numpy, which keeps float64; the float32 LSTM trains for all epochs and then fails "
    "on the double test tensor. Convert the test windows to float32.",
    cells=[
        TORCH_IMPORTS,
        """
        rng = np.random.default_rng(3)
        t = np.arange(12000)
        series = np.sin(t * 0.05) + 0.3 * np.sin(t * 0.31) + 0.002 * t / 100 + rng.normal(scale=0.1, size=t.size)
        WINDOW = 32

        def windows(x, w):
            idx = np.arange(w)[None, :] + np.arange(len(x) - w)[:, None]
            return x[idx], x[w:]

        X_all, y_all = windows(series, WINDOW)
        split = int(0.8 * len(X_all))
        X_train_t = torch.tensor(X_all[:split], dtype=torch.float32).unsqueeze(-1)
        y_train_t = torch.tensor(y_all[:split], dtype=torch.float32)
        X_test_t = torch.from_numpy(X_all[split:]).unsqueeze(-1)
        y_test_t = torch.from_numpy(y_all[split:])
        print(X_train_t.shape, X_test_t.shape)
        """,
        """
        class Forecaster(nn.Module):
            def __init__(self, hidden=32):
                super().__init__()
                self.lstm = nn.LSTM(1, hidden, batch_first=True)
                self.out = nn.Linear(hidden, 1)

            def forward(self, x):
                seq, _ = self.lstm(x)
                return self.out(seq[:, -1]).squeeze(1)

        model = Forecaster()
        optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
        loss_fn = nn.MSELoss()
        loader = DataLoader(TensorDataset(X_train_t, y_train_t), batch_size=128, shuffle=True)
        """,
        """
        EPOCHS = @N@
        for epoch in range(EPOCHS):
            model.train()
            total = 0.0
            for xb, yb in loader:
                optimizer.zero_grad()
                loss = loss_fn(model(xb), yb)
                loss.backward()
                optimizer.step()
                total += loss.item() * len(xb)
            print(f"epoch {epoch + 1}: mse {total / len(X_train_t):.5f}")

        model.eval()
        with torch.no_grad():
            forecast = model(X_test_t)
        rmse = torch.sqrt(((forecast - y_test_t) ** 2).mean()).item()
        print(f"test RMSE {rmse:.4f}")
        """,
    ],
    target=3,
    n=300,
    small=1,
    fix={
        1: """
        rng = np.random.default_rng(3)
        t = np.arange(12000)
        series = np.sin(t * 0.05) + 0.3 * np.sin(t * 0.31) + 0.002 * t / 100 + rng.normal(scale=0.1, size=t.size)
        WINDOW = 32

        def windows(x, w):
            idx = np.arange(w)[None, :] + np.arange(len(x) - w)[:, None]
            return x[idx], x[w:]

        X_all, y_all = windows(series, WINDOW)
        split = int(0.8 * len(X_all))
        X_train_t = torch.tensor(X_all[:split], dtype=torch.float32).unsqueeze(-1)
        y_train_t = torch.tensor(y_all[:split], dtype=torch.float32)
        X_test_t = torch.tensor(X_all[split:], dtype=torch.float32).unsqueeze(-1)
        y_test_t = torch.tensor(y_all[split:], dtype=torch.float32)
        print(X_train_t.shape, X_test_t.shape)
        """,
    },
)

case(
    name="torch_onecycle_total_steps_floor",
    library="torch",
    category="implementation error",
    needs_runtime=True,
    exception="ValueError",
    message_contains="The specified number of total steps is",
    diagnosis="OneCycleLR is given EPOCHS * (len(train_ds) // BATCH) steps, but the loader yields "
    "one more, smaller batch per epoch; train_one_epoch (an earlier cell) steps the scheduler per "
    "batch, so the count runs out during the last epoch and OneCycleLR raises. Use len(train_loader).",
    cells=[
        TORCH_IMPORTS,
        """
        from sklearn.datasets import make_classification

        X, y = make_classification(n_samples=96050, n_features=24, n_informative=10, n_classes=4,
                                   n_clusters_per_class=2, random_state=8)
        X = (X - X.mean(axis=0)) / X.std(axis=0)
        train_ds = TensorDataset(torch.tensor(X, dtype=torch.float32), torch.tensor(y))
        BATCH = 128
        train_loader = DataLoader(train_ds, batch_size=BATCH, shuffle=True)
        """,
        """
        def train_one_epoch(model, loader, optimizer, scheduler, criterion):
            model.train()
            total, correct = 0.0, 0
            for xb, yb in loader:
                optimizer.zero_grad()
                out = model(xb)
                loss = criterion(out, yb)
                loss.backward()
                optimizer.step()
                scheduler.step()
                total += loss.item() * len(xb)
                correct += (out.argmax(1) == yb).sum().item()
            return total / len(loader.dataset), correct / len(loader.dataset)

        model = nn.Sequential(nn.Linear(24, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 4))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        criterion = nn.CrossEntropyLoss()
        """,
        """
        EPOCHS = @N@
        steps_per_epoch = len(train_ds) // BATCH
        scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.1, total_steps=EPOCHS * steps_per_epoch)
        history = []
        for epoch in range(EPOCHS):
            loss, acc = train_one_epoch(model, train_loader, optimizer, scheduler, criterion)
            history.append((loss, acc))
            print(f"epoch {epoch + 1:2d}  loss {loss:.4f}  acc {acc:.3f}  lr {scheduler.get_last_lr()[0]:.4f}")
        print("best accuracy", max(acc for _, acc in history))
        """,
    ],
    target=3,
    n=100,
    small=2,
    fix={
        3: """
        EPOCHS = @N@
        steps_per_epoch = len(train_loader)
        scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.1, total_steps=EPOCHS * steps_per_epoch)
        history = []
        for epoch in range(EPOCHS):
            loss, acc = train_one_epoch(model, train_loader, optimizer, scheduler, criterion)
            history.append((loss, acc))
            print(f"epoch {epoch + 1:2d}  loss {loss:.4f}  acc {acc:.3f}  lr {scheduler.get_last_lr()[0]:.4f}")
        print("best accuracy", max(acc for _, acc in history))
        """,
    },
)

case(
    name="torch_batchnorm_last_batch_of_one",
    library="torch",
    category="ML model confusion",
    needs_runtime=True,
    exception="ValueError",
    message_contains="Expected more than 1 value per channel when training",
    diagnosis="The click log has 64 * k + 1 rows, so the one pass of the DataLoader (batch 64) ends "
    "with a batch of a single row, and BatchNorm1d in training mode cannot normalise one value per "
    "channel: the pass fails at its very last batch. Use drop_last=True.",
    cells=[
        TORCH_IMPORTS,
        """
        rng = np.random.default_rng(21)
        N_ROWS = 64 * @N@ + 1
        X = rng.normal(size=(N_ROWS, 32)).astype(np.float32)
        w = rng.normal(size=32).astype(np.float32)
        clicked = ((X @ w) / 6 + rng.logistic(size=N_ROWS) > 1.5).astype(np.float32)
        click_ds = TensorDataset(torch.from_numpy(X), torch.from_numpy(clicked))
        loader = DataLoader(click_ds, batch_size=64, shuffle=True)
        print(N_ROWS, "rows,", len(loader), "batches")
        """,
        """
        model = nn.Sequential(
            nn.Linear(32, 256), nn.BatchNorm1d(256), nn.ReLU(),
            nn.Linear(256, 256), nn.BatchNorm1d(256), nn.ReLU(),
            nn.Linear(256, 1),
        )
        criterion = nn.BCEWithLogitsLoss()
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        """,
        """
        # the log is too large for several epochs: one pass over it
        model.train()
        seen, running = 0, 0.0
        for step, (xb, yb) in enumerate(loader):
            optimizer.zero_grad()
            loss = criterion(model(xb).squeeze(1), yb)
            loss.backward()
            optimizer.step()
            seen += len(xb)
            running = 0.98 * running + 0.02 * loss.item()
            if step % 2000 == 0:
                print(f"step {step}: smoothed loss {running:.4f}")
        print(f"trained on {seen} rows")
        """,
    ],
    target=3,
    n=41000,
    small=500,
    fix={
        1: """
        rng = np.random.default_rng(21)
        N_ROWS = 64 * @N@ + 1
        X = rng.normal(size=(N_ROWS, 32)).astype(np.float32)
        w = rng.normal(size=32).astype(np.float32)
        clicked = ((X @ w) / 6 + rng.logistic(size=N_ROWS) > 1.5).astype(np.float32)
        click_ds = TensorDataset(torch.from_numpy(X), torch.from_numpy(clicked))
        loader = DataLoader(click_ds, batch_size=64, shuffle=True, drop_last=True)
        print(N_ROWS, "rows,", len(loader), "batches")
        """,
    },
)

# ---------------------------------------------------------------------------------------------
# Keras 3 (models are built and fitted in the target cell; earlier cells only prepare NumPy data)

case(
    name="keras_evaluate_test_has_unseen_vehicle",
    library="tensorflow",
    category="data confusion",
    needs_runtime=True,
    exception="InvalidArgumentError",
    message_contains="Matrix size-incompatible",
    diagnosis="pd.get_dummies on the test claims sees a vehicle type the training claims lack, so the "
    "test matrix has 9 columns against 8; the network fits on the training width and, after training, "
    "model.evaluate's first Dense matmul fails in TensorFlow on the wider test input. Reindex the "
    "test dummies on the training columns.",
    cells=[
        KERAS_IMPORTS,
        """
        rng = np.random.default_rng(5)

        def claims(n, vehicles):
            df = pd.DataFrame({
                "age": rng.integers(18, 80, size=n),
                "bonus_malus": rng.uniform(0.5, 2.0, size=n),
                "density": rng.lognormal(6, 1, size=n),
                "power": rng.integers(4, 15, size=n),
                "vehicle": rng.choice(vehicles, size=n),
            })
            base = 300 + 8 * df["power"] + 400 * (df["bonus_malus"] - 1) + 50 * np.log(df["density"])
            df["cost"] = base * np.where(df["vehicle"] == "suv", 1.3, 1.0) + rng.normal(scale=60, size=n)
            return df

        train = claims(30000, ["sedan", "suv", "van", "hatchback"])
        test = claims(6000, ["sedan", "suv", "van", "hatchback", "pickup"])
        X_train = pd.get_dummies(train.drop(columns="cost"), columns=["vehicle"], dtype=float)
        X_test = pd.get_dummies(test.drop(columns="cost"), columns=["vehicle"], dtype=float)
        numeric = ["age", "bonus_malus", "density", "power"]
        mu, sd = X_train[numeric].mean(), X_train[numeric].std()
        X_train[numeric] = (X_train[numeric] - mu) / sd
        X_test[numeric] = (X_test[numeric] - mu) / sd
        X_train, X_test = X_train.to_numpy("float32"), X_test.to_numpy("float32")
        y_train, y_test = train["cost"].to_numpy("float32"), test["cost"].to_numpy("float32")
        print(X_train.shape, X_test.shape)
        """,
        """
        EPOCHS = @N@
        keras.utils.set_random_seed(0)
        model = keras.Sequential([
            keras.Input(shape=(X_train.shape[1],)),
            layers.Dense(128, activation="relu"),
            layers.Dense(64, activation="relu"),
            layers.Dense(1),
        ])
        model.compile(optimizer="adam", loss="mse", metrics=["mae"])
        history = model.fit(X_train, y_train, epochs=EPOCHS, batch_size=64, validation_split=0.1, verbose=0)
        print("final validation MAE", round(history.history["val_mae"][-1], 2))
        test_loss, test_mae = model.evaluate(X_test, y_test, verbose=0)
        print(f"test MAE {test_mae:.2f}")
        """,
    ],
    target=2,
    n=95,
    small=1,
    fix={
        1: """
        rng = np.random.default_rng(5)

        def claims(n, vehicles):
            df = pd.DataFrame({
                "age": rng.integers(18, 80, size=n),
                "bonus_malus": rng.uniform(0.5, 2.0, size=n),
                "density": rng.lognormal(6, 1, size=n),
                "power": rng.integers(4, 15, size=n),
                "vehicle": rng.choice(vehicles, size=n),
            })
            base = 300 + 8 * df["power"] + 400 * (df["bonus_malus"] - 1) + 50 * np.log(df["density"])
            df["cost"] = base * np.where(df["vehicle"] == "suv", 1.3, 1.0) + rng.normal(scale=60, size=n)
            return df

        train = claims(30000, ["sedan", "suv", "van", "hatchback"])
        test = claims(6000, ["sedan", "suv", "van", "hatchback", "pickup"])
        X_train = pd.get_dummies(train.drop(columns="cost"), columns=["vehicle"], dtype=float)
        X_test = pd.get_dummies(test.drop(columns="cost"), columns=["vehicle"], dtype=float)
        X_test = X_test.reindex(columns=X_train.columns, fill_value=0.0)
        numeric = ["age", "bonus_malus", "density", "power"]
        mu, sd = X_train[numeric].mean(), X_train[numeric].std()
        X_train[numeric] = (X_train[numeric] - mu) / sd
        X_test[numeric] = (X_test[numeric] - mu) / sd
        X_train, X_test = X_train.to_numpy("float32"), X_test.to_numpy("float32")
        y_train, y_test = train["cost"].to_numpy("float32"), test["cost"].to_numpy("float32")
        print(X_train.shape, X_test.shape)
        """,
    },
)

case(
    name="keras_history_plot_without_validation",
    library="tensorflow",
    category="API misuse",
    needs_runtime=False,
    exception="KeyError",
    message_contains="val_loss",
    diagnosis="fit is called without validation data, so history.history holds only 'loss' and "
    "'accuracy'; plotting history.history['val_loss'] after training raises KeyError. Pass "
    "validation_split to fit.",
    cells=[
        KERAS_IMPORTS
        + """import matplotlib.pyplot as plt
        """,
        """
        from sklearn.datasets import load_digits

        digits = load_digits()
        rng = np.random.default_rng(2)
        X = np.concatenate([digits.data + rng.normal(scale=2.0, size=digits.data.shape) for _ in range(8)]) / 16.0
        y = np.tile(digits.target, 8)
        order = rng.permutation(len(X))
        X, y = X[order].astype("float32"), y[order]
        print(X.shape)
        """,
        """
        EPOCHS = @N@
        keras.utils.set_random_seed(1)
        model = keras.Sequential([
            keras.Input(shape=(64,)),
            layers.Dense(256, activation="relu"),
            layers.Dropout(0.3),
            layers.Dense(128, activation="relu"),
            layers.Dense(10, activation="softmax"),
        ])
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        history = model.fit(X, y, epochs=EPOCHS, batch_size=32, verbose=0)

        plt.figure(figsize=(6, 4))
        plt.plot(range(1, EPOCHS + 1), history.history["loss"], label="train")
        plt.plot(range(1, EPOCHS + 1), history.history["val_loss"], label="validation")
        plt.xlabel("epoch")
        plt.legend()
        """,
    ],
    target=2,
    n=100,
    small=1,
    fix={
        2: """
        EPOCHS = @N@
        keras.utils.set_random_seed(1)
        model = keras.Sequential([
            keras.Input(shape=(64,)),
            layers.Dense(256, activation="relu"),
            layers.Dropout(0.3),
            layers.Dense(128, activation="relu"),
            layers.Dense(10, activation="softmax"),
        ])
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        history = model.fit(X, y, epochs=EPOCHS, batch_size=32, validation_split=0.2, verbose=0)

        plt.figure(figsize=(6, 4))
        plt.plot(range(1, EPOCHS + 1), history.history["loss"], label="train")
        plt.plot(range(1, EPOCHS + 1), history.history["val_loss"], label="validation")
        plt.xlabel("epoch")
        plt.legend()
        """,
    },
)

case(
    name="keras_classification_report_on_softmax",
    library="tensorflow",
    category="API misuse",
    needs_runtime=False,
    exception="ValueError",
    message_contains="can't handle a mix of multiclass and continuous-multioutput targets",
    diagnosis="classification_report gets model.predict's softmax matrix instead of class labels; "
    "scikit-learn refuses multiclass targets against continuous multi-output predictions, after the "
    "whole training. Take argmax over axis 1.",
    cells=[
        KERAS_IMPORTS,
        """
        from sklearn.datasets import load_wine
        from sklearn.metrics import classification_report
        from sklearn.model_selection import train_test_split

        wine = load_wine()
        rng = np.random.default_rng(9)
        X = np.concatenate([wine.data * rng.normal(1.0, 0.05, size=wine.data.shape) for _ in range(150)])
        y = np.tile(wine.target, 150)
        X = ((X - X.mean(axis=0)) / X.std(axis=0)).astype("float32")
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, stratify=y, random_state=9)
        print(X_train.shape, X_test.shape)
        """,
        """
        EPOCHS = @N@
        keras.utils.set_random_seed(3)
        model = keras.Sequential([
            keras.Input(shape=(13,)),
            layers.Dense(64, activation="relu"),
            layers.Dense(64, activation="relu"),
            layers.Dense(3, activation="softmax"),
        ])
        model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        model.fit(X_train, y_train, epochs=EPOCHS, batch_size=32, validation_split=0.1, verbose=0)
        pred = model.predict(X_test, verbose=0)
        print(classification_report(y_test, pred, target_names=wine.target_names))
        """,
    ],
    target=2,
    n=80,
    small=1,
    fix={
        2: """
        EPOCHS = @N@
        keras.utils.set_random_seed(3)
        model = keras.Sequential([
            keras.Input(shape=(13,)),
            layers.Dense(64, activation="relu"),
            layers.Dense(64, activation="relu"),
            layers.Dense(3, activation="softmax"),
        ])
        model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        model.fit(X_train, y_train, epochs=EPOCHS, batch_size=32, validation_split=0.1, verbose=0)
        pred = model.predict(X_test, verbose=0).argmax(axis=1)
        print(classification_report(y_test, pred, target_names=wine.target_names))
        """,
    },
)

case(
    name="keras_last_epoch_evaluates_flat_images",
    library="tensorflow",
    category="data confusion",
    needs_runtime=True,
    exception="ValueError",
    message_contains="but input has incompatible shape (None, 64)",
    diagnosis="Only the training images were reshaped to (8, 8, 1); the test images are still flat "
    "rows of 64. The epoch loop evaluates on them in its branch for the last epoch, where the "
    "Conv2D model rejects a 2-D input. Reshape X_test like X_train.",
    cells=[
        KERAS_IMPORTS,
        """
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split

        digits = load_digits()
        rng = np.random.default_rng(4)
        X = np.concatenate([digits.data + rng.normal(scale=1.5, size=digits.data.shape) for _ in range(5)]) / 16.0
        y = np.tile(digits.target, 5)
        X_train, X_test, y_train, y_test = train_test_split(X.astype("float32"), y, test_size=0.2, random_state=4)
        X_train = X_train.reshape(-1, 8, 8, 1)
        print(X_train.shape, X_test.shape)
        """,
        """
        EPOCHS = @N@
        keras.utils.set_random_seed(4)
        model = keras.Sequential([
            keras.Input(shape=(8, 8, 1)),
            layers.Conv2D(32, 3, padding="same", activation="relu"),
            layers.Conv2D(32, 3, padding="same", activation="relu"),
            layers.MaxPooling2D(),
            layers.Flatten(),
            layers.Dense(64, activation="relu"),
            layers.Dense(10, activation="softmax"),
        ])
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        for epoch in range(EPOCHS):
            logs = model.fit(X_train, y_train, epochs=1, batch_size=64, verbose=0).history
            print(f"epoch {epoch + 1}: loss {logs['loss'][0]:.4f}  accuracy {logs['accuracy'][0]:.3f}")
            if epoch == EPOCHS - 1:
                test_loss, test_acc = model.evaluate(X_test, y_test, verbose=0)
                print(f"test accuracy {test_acc:.3f}")
        """,
    ],
    target=2,
    n=115,
    small=1,
    fix={
        1: """
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split

        digits = load_digits()
        rng = np.random.default_rng(4)
        X = np.concatenate([digits.data + rng.normal(scale=1.5, size=digits.data.shape) for _ in range(5)]) / 16.0
        y = np.tile(digits.target, 5)
        X_train, X_test, y_train, y_test = train_test_split(X.astype("float32"), y, test_size=0.2, random_state=4)
        X_train = X_train.reshape(-1, 8, 8, 1)
        X_test = X_test.reshape(-1, 8, 8, 1)
        print(X_train.shape, X_test.shape)
        """,
    },
)

case(
    name="keras_submission_ids_before_dropna",
    library="tensorflow",
    category="implementation error",
    needs_runtime=True,
    exception="ValueError",
    message_contains="does not match index length",
    diagnosis="The test ids are taken before dropna removes the rows with missing readings, so "
    "after training the submission frame pairs 6000 ids with fewer predictions and pandas refuses "
    "the lengths. Take the ids of the rows that were predicted.",
    cells=[
        KERAS_IMPORTS,
        """
        rng = np.random.default_rng(12)

        def sensor_frame(n, start_id):
            df = pd.DataFrame(rng.normal(size=(n, 16)), columns=[f"s{i}" for i in range(16)])
            df.insert(0, "id", np.arange(start_id, start_id + n))
            df["load"] = 2 * df["s0"] - df["s1"] * df["s2"] + np.sin(df["s3"]) + rng.normal(scale=0.2, size=n)
            return df

        train_df = sensor_frame(40000, 0)
        test_df = sensor_frame(6000, 100000).drop(columns="load")
        test_df.loc[rng.choice(6000, size=240, replace=False), "s5"] = np.nan
        features = [f"s{i}" for i in range(16)]
        test_ids = test_df["id"]
        X_train = train_df[features].to_numpy("float32")
        y_train = train_df["load"].to_numpy("float32")
        X_test = test_df.dropna()[features].to_numpy("float32")
        print(X_train.shape, X_test.shape)
        """,
        """
        EPOCHS = @N@
        keras.utils.set_random_seed(12)
        model = keras.Sequential([
            keras.Input(shape=(16,)),
            layers.Dense(128, activation="relu"),
            layers.Dense(128, activation="relu"),
            layers.Dense(1),
        ])
        model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="mse")
        model.fit(X_train, y_train, epochs=EPOCHS, batch_size=128, validation_split=0.1, verbose=0)
        preds = model.predict(X_test, verbose=0)
        submission = pd.DataFrame({"id": test_ids, "load": preds.ravel()})
        submission.head()
        """,
    ],
    target=2,
    n=150,
    small=1,
    fix={
        2: """
        EPOCHS = @N@
        keras.utils.set_random_seed(12)
        model = keras.Sequential([
            keras.Input(shape=(16,)),
            layers.Dense(128, activation="relu"),
            layers.Dense(128, activation="relu"),
            layers.Dense(1),
        ])
        model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="mse")
        model.fit(X_train, y_train, epochs=EPOCHS, batch_size=128, validation_split=0.1, verbose=0)
        preds = model.predict(X_test, verbose=0)
        submission = pd.DataFrame({"id": test_df.dropna()["id"].to_numpy(), "load": preds.ravel()})
        submission.head()
        """,
    },
)

# ---------------------------------------------------------------------------------------------
# scikit-learn

SK_IMPORTS = """
import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split
"""

case(
    name="sklearn_grid_search_test_lacks_engineered_feature",
    library="sklearn",
    category="data confusion",
    needs_runtime=True,
    exception="ValueError",
    message_contains="The feature names should match those that were passed during fit",
    diagnosis="The ratio feature was added to the training frame only; the grid search fits on 13 "
    "named columns and search.score on the 12-column test frame fails on the missing name after "
    "the whole search. Add the feature to the test frame too.",
    cells=[
        SK_IMPORTS,
        """
        from sklearn.datasets import make_classification

        X, y = make_classification(n_samples=@N@, n_features=12, n_informative=6, weights=[0.7],
                                   random_state=13)
        df = pd.DataFrame(X, columns=[f"f{i}" for i in range(12)])
        X_train, X_test, y_train, y_test = train_test_split(df, y, test_size=0.25, random_state=13)
        X_train = X_train.copy()
        X_train["ratio"] = X_train["f0"] / (X_train["f1"].abs() + 1)
        print(X_train.shape, X_test.shape)
        """,
        """
        from sklearn.ensemble import RandomForestClassifier
        from sklearn.model_selection import GridSearchCV

        param_grid = {"n_estimators": [100, 200], "max_depth": [6, 12, None], "min_samples_leaf": [1, 5]}
        search = GridSearchCV(RandomForestClassifier(random_state=0), param_grid, cv=5, scoring="roc_auc")
        search.fit(X_train, y_train)
        print(search.best_params_, round(search.best_score_, 4))
        print("test ROC AUC", round(search.score(X_test, y_test), 4))
        """,
    ],
    target=2,
    n=5500,
    small=300,
)
CASES[-1].fix = {1: code("""
        from sklearn.datasets import make_classification

        X, y = make_classification(n_samples=@N@, n_features=12, n_informative=6, weights=[0.7],
                                   random_state=13)
        df = pd.DataFrame(X, columns=[f"f{i}" for i in range(12)])
        X_train, X_test, y_train, y_test = train_test_split(df, y, test_size=0.25, random_state=13)
        X_train, X_test = X_train.copy(), X_test.copy()
        for frame in (X_train, X_test):
            frame["ratio"] = frame["f0"] / (frame["f1"].abs() + 1)
        print(X_train.shape, X_test.shape)
        """)}

case(
    name="sklearn_model_comparison_extends_fold_times",
    library="sklearn",
    category="implementation error",
    needs_runtime=False,
    exception="ValueError",
    message_contains="All arrays must be of the same length",
    diagnosis="Inside the model loop the fit times of all five folds are added with extend, the "
    "scores as one mean per model; the comparison table after the loop gets 5 model names and mean "
    "scores but 25 fit times. Append the mean fit time.",
    cells=[
        SK_IMPORTS,
        """
        from sklearn.datasets import load_breast_cancer

        data = load_breast_cancer()
        rng = np.random.default_rng(6)
        X = np.concatenate([data.data * rng.normal(1.0, 0.03, size=data.data.shape) for _ in range(@N@)])
        y = np.tile(data.target, @N@)
        print(X.shape)
        """,
        """
        from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import cross_validate
        from sklearn.neighbors import KNeighborsClassifier
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler
        from sklearn.svm import SVC

        models = {
            "logreg": LogisticRegression(max_iter=2000),
            "knn": KNeighborsClassifier(n_neighbors=15),
            "forest": RandomForestClassifier(n_estimators=200, random_state=0),
            "boosting": GradientBoostingClassifier(random_state=0),
            "svc": SVC(C=3.0),
        }
        mean_scores, std_scores, fit_times = [], [], []
        for name, estimator in models.items():
            cv = cross_validate(make_pipeline(StandardScaler(), estimator), X, y, cv=5, scoring="accuracy")
            mean_scores.append(cv["test_score"].mean())
            std_scores.append(cv["test_score"].std())
            fit_times.extend(cv["fit_time"])
            print(f"{name:10s} {mean_scores[-1]:.4f} +/- {std_scores[-1]:.4f}")

        comparison = pd.DataFrame({"model": list(models), "accuracy": mean_scores, "std": std_scores,
                                   "fit_seconds": fit_times})
        comparison.sort_values("accuracy", ascending=False)
        """,
    ],
    target=2,
    n=20,
    small=1,
    fix={
        2: """
        from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import cross_validate
        from sklearn.neighbors import KNeighborsClassifier
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler
        from sklearn.svm import SVC

        models = {
            "logreg": LogisticRegression(max_iter=2000),
            "knn": KNeighborsClassifier(n_neighbors=15),
            "forest": RandomForestClassifier(n_estimators=200, random_state=0),
            "boosting": GradientBoostingClassifier(random_state=0),
            "svc": SVC(C=3.0),
        }
        mean_scores, std_scores, fit_times = [], [], []
        for name, estimator in models.items():
            cv = cross_validate(make_pipeline(StandardScaler(), estimator), X, y, cv=5, scoring="accuracy")
            mean_scores.append(cv["test_score"].mean())
            std_scores.append(cv["test_score"].std())
            fit_times.append(cv["fit_time"].mean())
            print(f"{name:10s} {mean_scores[-1]:.4f} +/- {std_scores[-1]:.4f}")

        comparison = pd.DataFrame({"model": list(models), "accuracy": mean_scores, "std": std_scores,
                                   "fit_seconds": fit_times})
        comparison.sort_values("accuracy", ascending=False)
        """,
    },
)

case(
    name="sklearn_fold_summary_counts_from_one",
    library="sklearn",
    category="implementation error",
    needs_runtime=False,
    exception="KeyError",
    message_contains="5",
    diagnosis="The fold loop stores scores under enumerate's keys 0 to 4; the summary after it "
    "reads keys 1 to 5 and fails on the last one, 5. Read range(N_FOLDS).",
    cells=[
        SK_IMPORTS,
        """
        from sklearn.datasets import make_classification

        X, y = make_classification(n_samples=@N@, n_features=20, n_informative=7, flip_y=0.05,
                                   random_state=17)
        N_FOLDS = 5
        """,
        """
        from sklearn.ensemble import GradientBoostingClassifier
        from sklearn.metrics import roc_auc_score
        from sklearn.model_selection import StratifiedKFold

        skf = StratifiedKFold(n_splits=N_FOLDS, shuffle=True, random_state=17)
        oof = np.zeros(len(y))
        fold_scores = {}
        for fold, (tr, va) in enumerate(skf.split(X, y)):
            model = GradientBoostingClassifier(n_estimators=150, max_depth=3, subsample=0.8, random_state=fold)
            model.fit(X[tr], y[tr])
            oof[va] = model.predict_proba(X[va])[:, 1]
            fold_scores[fold] = roc_auc_score(y[va], oof[va])
            print(f"fold {fold}: AUC {fold_scores[fold]:.4f}")

        for k in range(1, N_FOLDS + 1):
            print(f"fold {k} of {N_FOLDS}: {fold_scores[k]:.4f}")
        print("out-of-fold AUC", round(roc_auc_score(y, oof), 4))
        print("mean fold AUC", round(np.mean(list(fold_scores.values())), 4))
        """,
    ],
    target=2,
    n=21000,
    small=500,
    fix={
        2: """
        from sklearn.ensemble import GradientBoostingClassifier
        from sklearn.metrics import roc_auc_score
        from sklearn.model_selection import StratifiedKFold

        skf = StratifiedKFold(n_splits=N_FOLDS, shuffle=True, random_state=17)
        oof = np.zeros(len(y))
        fold_scores = {}
        for fold, (tr, va) in enumerate(skf.split(X, y)):
            model = GradientBoostingClassifier(n_estimators=150, max_depth=3, subsample=0.8, random_state=fold)
            model.fit(X[tr], y[tr])
            oof[va] = model.predict_proba(X[va])[:, 1]
            fold_scores[fold] = roc_auc_score(y[va], oof[va])
            print(f"fold {fold}: AUC {fold_scores[fold]:.4f}")

        for k in range(N_FOLDS):
            print(f"fold {k + 1} of {N_FOLDS}: {fold_scores[k]:.4f}")
        print("out-of-fold AUC", round(roc_auc_score(y, oof), 4))
        print("mean fold AUC", round(np.mean(list(fold_scores.values())), 4))
        """,
    },
)

case(
    name="sklearn_svc_search_predict_proba",
    library="sklearn",
    category="API misuse",
    needs_runtime=False,
    exception="AttributeError",
    message_contains="predict_proba",
    diagnosis="The randomized search tunes an SVC built without probability=True; once it is "
    "refitted, asking the search for predict_proba fails because the best SVC has none. Build the "
    "SVC with probability=True or score with decision_function.",
    cells=[
        SK_IMPORTS,
        """
        from sklearn.datasets import make_classification

        X, y = make_classification(n_samples=@N@, n_features=25, n_informative=10, class_sep=0.8,
                                   random_state=23)
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=23)
        """,
        """
        from scipy.stats import loguniform
        from sklearn.metrics import roc_auc_score
        from sklearn.model_selection import RandomizedSearchCV
        from sklearn.pipeline import Pipeline
        from sklearn.preprocessing import StandardScaler
        from sklearn.svm import SVC

        pipe = Pipeline([("scale", StandardScaler()), ("svc", SVC())])
        search = RandomizedSearchCV(
            pipe,
            {"svc__C": loguniform(0.1, 100), "svc__gamma": loguniform(1e-3, 1e-1)},
            n_iter=10, cv=4, random_state=23,
        )
        search.fit(X_train, y_train)
        print(search.best_params_, round(search.best_score_, 4))
        proba = search.predict_proba(X_test)[:, 1]
        print("test ROC AUC", round(roc_auc_score(y_test, proba), 4))
        """,
    ],
    target=2,
    n=12500,
    small=400,
    fix={
        2: """
        from scipy.stats import loguniform
        from sklearn.metrics import roc_auc_score
        from sklearn.model_selection import RandomizedSearchCV
        from sklearn.pipeline import Pipeline
        from sklearn.preprocessing import StandardScaler
        from sklearn.svm import SVC

        pipe = Pipeline([("scale", StandardScaler()), ("svc", SVC())])
        search = RandomizedSearchCV(
            pipe,
            {"svc__C": loguniform(0.1, 100), "svc__gamma": loguniform(1e-3, 1e-1)},
            n_iter=10, cv=4, random_state=23,
        )
        search.fit(X_train, y_train)
        print(search.best_params_, round(search.best_score_, 4))
        scores = search.decision_function(X_test)
        print("test ROC AUC", round(roc_auc_score(y_test, scores), 4))
        """,
    },
)

case(
    name="sklearn_chunked_scoring_last_chunk_smaller",
    library="sklearn",
    category="implementation error",
    needs_runtime=True,
    exception="ValueError",
    message_contains="could not broadcast input array from shape",
    diagnosis="The scores are preallocated as n_chunks rows of CHUNK, but the last chunk of the "
    "new rows is smaller than CHUNK, so assigning its predictions into a full row fails at the last "
    "iteration. Preallocate a flat array and assign by slice.",
    cells=[
        SK_IMPORTS,
        """
        from sklearn.datasets import make_classification
        from sklearn.neighbors import KNeighborsClassifier

        X, y = make_classification(n_samples=20000, n_features=16, n_informative=8, random_state=29)
        knn = KNeighborsClassifier(n_neighbors=25, algorithm="brute").fit(X, y)
        rng = np.random.default_rng(29)
        X_new = rng.normal(size=(@N@, 16)) * X.std(axis=0) + X.mean(axis=0)
        print(X_new.shape)
        """,
        """
        CHUNK = 4000
        n_chunks = int(np.ceil(len(X_new) / CHUNK))
        scores = np.empty((n_chunks, CHUNK))
        for i in range(n_chunks):
            batch = X_new[i * CHUNK:(i + 1) * CHUNK]
            scores[i] = knn.predict_proba(batch)[:, 1]
            if i % 5 == 0:
                print(f"chunk {i + 1}/{n_chunks}")
        scores = scores.ravel()
        print("share above 0.5:", round(float((scores > 0.5).mean()), 4))
        """,
    ],
    target=2,
    n=1900500,
    small=8500,
    fix={
        2: """
        CHUNK = 4000
        n_chunks = int(np.ceil(len(X_new) / CHUNK))
        scores = np.empty(len(X_new))
        for i in range(n_chunks):
            batch = X_new[i * CHUNK:(i + 1) * CHUNK]
            scores[i * CHUNK:(i + 1) * CHUNK] = knn.predict_proba(batch)[:, 1]
            if i % 5 == 0:
                print(f"chunk {i + 1}/{n_chunks}")
        print("share above 0.5:", round(float((scores > 0.5).mean()), 4))
        """,
    },
)

case(
    name="sklearn_cv_results_unnamed_scorer",
    library="sklearn",
    category="API misuse",
    needs_runtime=False,
    exception="KeyError",
    message_contains="not in index",
    diagnosis="With a single scoring string, GridSearchCV names its result columns mean_test_score "
    "and std_test_score, not after the scorer; selecting mean_test_f1 from cv_results_ after the "
    "search raises KeyError. Pass scoring as a dict (and refit) or read mean_test_score.",
    cells=[
        SK_IMPORTS,
        """
        from sklearn.datasets import make_classification

        X, y = make_classification(n_samples=@N@, n_features=15, n_informative=6, weights=[0.8],
                                   random_state=31)
        """,
        """
        from sklearn.ensemble import GradientBoostingClassifier
        from sklearn.model_selection import GridSearchCV

        grid = {"learning_rate": [0.05, 0.1, 0.2], "max_depth": [2, 3], "n_estimators": [100, 200]}
        search = GridSearchCV(GradientBoostingClassifier(random_state=31), grid, cv=4, scoring="f1")
        search.fit(X, y)
        results = pd.DataFrame(search.cv_results_)
        results[["params", "mean_test_f1", "std_test_f1"]].sort_values("mean_test_f1", ascending=False).head()
        """,
    ],
    target=2,
    n=3300,
    small=300,
    fix={
        2: """
        from sklearn.ensemble import GradientBoostingClassifier
        from sklearn.model_selection import GridSearchCV

        grid = {"learning_rate": [0.05, 0.1, 0.2], "max_depth": [2, 3], "n_estimators": [100, 200]}
        search = GridSearchCV(GradientBoostingClassifier(random_state=31), grid, cv=4, scoring={"f1": "f1"},
                              refit="f1")
        search.fit(X, y)
        results = pd.DataFrame(search.cv_results_)
        results[["params", "mean_test_f1", "std_test_f1"]].sort_values("mean_test_f1", ascending=False).head()
        """,
    },
)

# ---------------------------------------------------------------------------------------------
# pandas and NumPy

case(
    name="pandas_store_loop_yoy_only_for_old_stores",
    library="pandas",
    category="implementation error",
    needs_runtime=True,
    exception="KeyError",
    message_contains="['yoy'] not in index",
    diagnosis="The year-over-year column is created only for stores with a full year of sales; the "
    "last store in groupby order opened 60 days ago, so selecting the output columns for it fails "
    "at the last iteration. Give the short stores a NaN yoy column.",
    cells=[
        """
        import numpy as np
        import pandas as pd
        """,
        """
        rng = np.random.default_rng(14)
        N_STORES = @N@
        frames = []
        for s in range(N_STORES):
            days = 60 if s == N_STORES - 1 else 730
            dates = pd.date_range("2023-01-01", periods=days, freq="D")
            weekly = 1 + 0.3 * np.sin(2 * np.pi * np.arange(days) / 7)
            units = rng.poisson(40 * weekly * rng.uniform(0.5, 1.5))
            frames.append(pd.DataFrame({"store": f"store_{s:03d}", "date": dates, "units": units}))
        sales = pd.concat(frames, ignore_index=True)
        print(sales.shape, sales["store"].nunique(), "stores")
        """,
        """
        def mad(window):
            return np.median(np.abs(window - np.median(window)))

        parts = []
        for store, g in sales.groupby("store"):
            g = g.sort_values("date").copy()
            g["rolling_mean"] = g["units"].rolling(28, min_periods=1).mean()
            g["rolling_mad"] = g["units"].rolling(28, min_periods=7).apply(mad, raw=True)
            if len(g) >= 365:
                g["yoy"] = g["units"] / g["units"].shift(364) - 1
            parts.append(g[["store", "date", "units", "rolling_mean", "rolling_mad", "yoy"]])

        store_features = pd.concat(parts, ignore_index=True)
        store_features.groupby("store")["rolling_mad"].mean().describe()
        """,
    ],
    target=2,
    n=3600,
    small=3,
    fix={
        2: """
        def mad(window):
            return np.median(np.abs(window - np.median(window)))

        parts = []
        for store, g in sales.groupby("store"):
            g = g.sort_values("date").copy()
            g["rolling_mean"] = g["units"].rolling(28, min_periods=1).mean()
            g["rolling_mad"] = g["units"].rolling(28, min_periods=7).apply(mad, raw=True)
            if len(g) >= 365:
                g["yoy"] = g["units"] / g["units"].shift(364) - 1
            else:
                g["yoy"] = np.nan
            parts.append(g[["store", "date", "units", "rolling_mean", "rolling_mad", "yoy"]])

        store_features = pd.concat(parts, ignore_index=True)
        store_features.groupby("store")["rolling_mad"].mean().describe()
        """,
    },
)

case(
    name="pandas_meter_loop_partial_last_day",
    library="pandas",
    category="data confusion",
    needs_runtime=True,
    exception="ValueError",
    message_contains="cannot reshape array of size",
    diagnosis="Each meter's hourly readings are reshaped into days of 24 hours; the last meter stopped "
    "reporting in the middle of a day, so its reading count is not a multiple of 24 and the reshape "
    "fails at the last iteration. Keep only complete days.",
    cells=[
        """
        import numpy as np
        import pandas as pd
        """,
        """
        rng = np.random.default_rng(19)
        N_METERS = @N@
        frames = []
        for m in range(N_METERS):
            hours = 24 * 60 - (7 if m == N_METERS - 1 else 0)
            ts = pd.date_range("2024-01-01", periods=hours, freq="h")
            daily = 1.2 + np.sin(2 * np.pi * (ts.hour - 7) / 24)
            kwh = np.clip(daily * rng.uniform(0.5, 2.0) + rng.normal(scale=0.3, size=hours), 0, None)
            frames.append(pd.DataFrame({"meter": f"m{m:04d}", "ts": ts, "kwh": kwh}))
        readings = pd.concat(frames, ignore_index=True)
        print(readings.shape)
        """,
        """
        profiles = {}
        anomalies = []
        for meter, g in readings.groupby("meter"):
            g = g.sort_values("ts")
            hourly_median = g.groupby(g["ts"].dt.hour)["kwh"].transform("median")
            p90_day = g["kwh"].rolling(24, min_periods=12).apply(lambda w: np.percentile(w, 90), raw=True)
            robust = g["kwh"].groupby(g["ts"].dt.dayofweek).transform(lambda s: (s - s.median()) / (s.std() + 1e-9))
            flagged = g.loc[(robust.abs() > 3) | (g["kwh"] > np.maximum(3 * hourly_median, 1.5 * p90_day)), "ts"]
            anomalies.extend((meter, t) for t in flagged)
            by_day = g["kwh"].to_numpy().reshape(-1, 24)
            profiles[meter] = by_day.mean(axis=0)

        profile_frame = pd.DataFrame(profiles).T
        print(len(anomalies), "anomalous hours")
        profile_frame.describe().T.head()
        """,
    ],
    target=2,
    n=1250,
    small=20,
    fix={
        2: """
        profiles = {}
        anomalies = []
        for meter, g in readings.groupby("meter"):
            g = g.sort_values("ts")
            hourly_median = g.groupby(g["ts"].dt.hour)["kwh"].transform("median")
            p90_day = g["kwh"].rolling(24, min_periods=12).apply(lambda w: np.percentile(w, 90), raw=True)
            robust = g["kwh"].groupby(g["ts"].dt.dayofweek).transform(lambda s: (s - s.median()) / (s.std() + 1e-9))
            flagged = g.loc[(robust.abs() > 3) | (g["kwh"] > np.maximum(3 * hourly_median, 1.5 * p90_day)), "ts"]
            anomalies.extend((meter, t) for t in flagged)
            values = g["kwh"].to_numpy()
            by_day = values[: len(values) // 24 * 24].reshape(-1, 24)
            profiles[meter] = by_day.mean(axis=0)

        profile_frame = pd.DataFrame(profiles).T
        print(len(anomalies), "anomalous hours")
        profile_frame.describe().T.head()
        """,
    },
)

case(
    name="pandas_customer_features_merge_key_case",
    library="pandas",
    category="data confusion",
    needs_runtime=True,
    exception="KeyError",
    message_contains="customer_id",
    diagnosis="The churn labels name their key CustomerID while the features computed in the batch "
    "loop use customer_id; the merge after the loop fails on the missing key. Rename the label "
    "column before merging.",
    cells=[
        """
        import numpy as np
        import pandas as pd
        """,
        """
        rng = np.random.default_rng(27)
        N_CUSTOMERS = @N@
        n_orders = N_CUSTOMERS * 12
        orders = pd.DataFrame({
            "customer_id": rng.integers(0, N_CUSTOMERS, size=n_orders),
            "order_date": pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 365, size=n_orders), unit="D"),
            "amount": rng.gamma(2.0, 30.0, size=n_orders).round(2),
            "category": rng.choice(["food", "toys", "books", "garden", "tech"], size=n_orders),
        })
        labels = pd.DataFrame({"CustomerID": np.arange(N_CUSTOMERS), "churned": rng.random(N_CUSTOMERS) < 0.2})
        print(orders.shape, labels.shape)
        """,
        """
        SNAPSHOT = pd.Timestamp("2025-01-01")

        def customer_features(g):
            gaps = g["order_date"].sort_values().diff().dt.days
            return pd.Series({
                "recency": (SNAPSHOT - g["order_date"].max()).days,
                "frequency": len(g),
                "monetary": g["amount"].sum(),
                "mean_gap": gaps.mean(),
                "top_category": g["category"].mode().iat[0],
                "tech_share": (g["category"] == "tech").mean(),
            })

        BATCH = 1000
        batches = []
        for start in range(0, N_CUSTOMERS, BATCH):
            part = orders[orders["customer_id"].between(start, start + BATCH - 1)]
            batches.append(part.groupby("customer_id").apply(customer_features))
            print(f"customers {start}-{start + BATCH - 1} done")

        features = pd.concat(batches).reset_index()
        train = features.merge(labels, on="customer_id", how="inner")
        train.groupby("churned")[["recency", "frequency", "monetary"]].mean()
        """,
    ],
    target=2,
    n=87000,
    small=500,
    fix={
        2: """
        SNAPSHOT = pd.Timestamp("2025-01-01")

        def customer_features(g):
            gaps = g["order_date"].sort_values().diff().dt.days
            return pd.Series({
                "recency": (SNAPSHOT - g["order_date"].max()).days,
                "frequency": len(g),
                "monetary": g["amount"].sum(),
                "mean_gap": gaps.mean(),
                "top_category": g["category"].mode().iat[0],
                "tech_share": (g["category"] == "tech").mean(),
            })

        BATCH = 1000
        batches = []
        for start in range(0, N_CUSTOMERS, BATCH):
            part = orders[orders["customer_id"].between(start, start + BATCH - 1)]
            batches.append(part.groupby("customer_id").apply(customer_features))
            print(f"customers {start}-{start + BATCH - 1} done")

        features = pd.concat(batches).reset_index()
        train = features.merge(labels.rename(columns={"CustomerID": "customer_id"}), on="customer_id", how="inner")
        train.groupby("churned")[["recency", "frequency", "monetary"]].mean()
        """,
    },
)

case(
    name="pandas_engagement_levels_nan_for_silent_users",
    library="pandas",
    category="data confusion",
    needs_runtime=True,
    exception="IntCastingNaNError",
    message_contains="Cannot convert non-finite values (NA or inf) to integer",
    diagnosis="The per-user engagement scores are reindexed on all registered users; users without "
    "any event get NaN, and casting the rounded score to int after the loop fails. Fill the missing "
    "scores (with 0) before the cast.",
    cells=[
        """
        import numpy as np
        import pandas as pd
        """,
        """
        rng = np.random.default_rng(33)
        N_USERS = @N@
        users = pd.DataFrame({"user_id": np.arange(N_USERS), "plan": rng.choice(["free", "pro"], size=N_USERS, p=[0.8, 0.2])})
        active = rng.choice(N_USERS, size=int(N_USERS * 0.93), replace=False)
        n_events = len(active) * 30
        events = pd.DataFrame({
            "user_id": rng.choice(active, size=n_events),
            "ts": pd.Timestamp("2024-06-01") + pd.to_timedelta(rng.integers(0, 90 * 24 * 3600, size=n_events), unit="s"),
            "kind": rng.choice(["view", "click", "share", "purchase"], size=n_events, p=[0.6, 0.3, 0.07, 0.03]),
        })
        print(users.shape, events.shape)
        """,
        """
        WEIGHTS = {"view": 1, "click": 2, "share": 5, "purchase": 10}

        def engagement(g):
            g = g.sort_values("ts")
            days_active = g["ts"].dt.normalize().nunique()
            streak = (g["ts"].dt.normalize().diff().dt.days.fillna(1) == 1).astype(int).groupby(
                (g["ts"].dt.normalize().diff().dt.days.fillna(1) != 1).cumsum()).sum().max()
            return g["kind"].map(WEIGHTS).sum() / 90 + days_active / 9 + streak

        scores = {}
        for plan, plan_users in users.groupby("plan"):
            plan_events = events[events["user_id"].isin(plan_users["user_id"])]
            scores[plan] = plan_events.groupby("user_id").apply(engagement)
            print(plan, len(scores[plan]), "active users scored")

        users["score"] = pd.concat(scores.values()).reindex(users["user_id"]).to_numpy()
        users["level"] = users["score"].round().astype(int)
        users.groupby(["plan", "level"]).size().unstack(fill_value=0)
        """,
    ],
    target=2,
    n=43000,
    small=400,
    fix={
        2: """
        WEIGHTS = {"view": 1, "click": 2, "share": 5, "purchase": 10}

        def engagement(g):
            g = g.sort_values("ts")
            days_active = g["ts"].dt.normalize().nunique()
            streak = (g["ts"].dt.normalize().diff().dt.days.fillna(1) == 1).astype(int).groupby(
                (g["ts"].dt.normalize().diff().dt.days.fillna(1) != 1).cumsum()).sum().max()
            return g["kind"].map(WEIGHTS).sum() / 90 + days_active / 9 + streak

        scores = {}
        for plan, plan_users in users.groupby("plan"):
            plan_events = events[events["user_id"].isin(plan_users["user_id"])]
            scores[plan] = plan_events.groupby("user_id").apply(engagement)
            print(plan, len(scores[plan]), "active users scored")

        users["score"] = pd.concat(scores.values()).reindex(users["user_id"]).to_numpy()
        users["level"] = users["score"].fillna(0).round().astype(int)
        users.groupby(["plan", "level"]).size().unstack(fill_value=0)
        """,
    },
)

case(
    name="numpy_bootstrap_interval_axis_one",
    library="numpy",
    category="implementation error",
    needs_runtime=False,
    exception="AxisError",
    message_contains="axis 1 is out of bounds for array of dimension 1",
    diagnosis="The bootstrap loop collects one R^2 per resample, a 1-D array; the percentile "
    "interval after the loop asks for axis=1, which a 1-D array does not have. Drop the axis.",
    cells=[
        """
        import numpy as np
        """,
        """
        rng = np.random.default_rng(37)
        n, p = 4000, 40
        X = np.column_stack([np.ones(n), rng.normal(size=(n, p))])
        beta = rng.normal(scale=0.5, size=p + 1)
        y = X @ beta + rng.standard_t(df=4, size=n)
        N_BOOT = @N@
        """,
        """
        def r_squared(X, y, coef):
            resid = y - X @ coef
            return 1 - resid @ resid / ((y - y.mean()) @ (y - y.mean()))

        r2s = []
        coefs = np.empty((N_BOOT, X.shape[1]))
        for b in range(N_BOOT):
            idx = rng.integers(0, n, size=n)
            Xb, yb = X[idx], y[idx]
            coef, *_ = np.linalg.lstsq(Xb, yb, rcond=None)
            # a few IRLS steps for a Huber fit, to be robust to the t-distributed noise
            for _ in range(5):
                r = yb - Xb @ coef
                w = np.minimum(1.0, 1.345 / np.maximum(np.abs(r), 1e-12))
                coef = np.linalg.solve(Xb.T @ (Xb * w[:, None]), Xb.T @ (w * yb))
            coefs[b] = coef
            r2s.append(r_squared(Xb, yb, coef))

        r2s = np.array(r2s)
        coef_lo, coef_hi = np.percentile(coefs, [2.5, 97.5], axis=0)
        r2_lo, r2_hi = np.percentile(r2s, [2.5, 97.5], axis=1)
        print(f"R^2 95% interval: [{r2_lo:.4f}, {r2_hi:.4f}]")
        """,
    ],
    target=2,
    n=7500,
    small=100,
    fix={
        2: """
        def r_squared(X, y, coef):
            resid = y - X @ coef
            return 1 - resid @ resid / ((y - y.mean()) @ (y - y.mean()))

        r2s = []
        coefs = np.empty((N_BOOT, X.shape[1]))
        for b in range(N_BOOT):
            idx = rng.integers(0, n, size=n)
            Xb, yb = X[idx], y[idx]
            coef, *_ = np.linalg.lstsq(Xb, yb, rcond=None)
            # a few IRLS steps for a Huber fit, to be robust to the t-distributed noise
            for _ in range(5):
                r = yb - Xb @ coef
                w = np.minimum(1.0, 1.345 / np.maximum(np.abs(r), 1e-12))
                coef = np.linalg.solve(Xb.T @ (Xb * w[:, None]), Xb.T @ (w * yb))
            coefs[b] = coef
            r2s.append(r_squared(Xb, yb, coef))

        r2s = np.array(r2s)
        coef_lo, coef_hi = np.percentile(coefs, [2.5, 97.5], axis=0)
        r2_lo, r2_hi = np.percentile(r2s, [2.5, 97.5])
        print(f"R^2 95% interval: [{r2_lo:.4f}, {r2_hi:.4f}]")
        """,
    },
)


# ---------------------------------------------------------------------------------------------
# Writing.


def cell_id(case_name: str, position: int) -> str:
    return hashlib.sha1(f"long-cells:{case_name}:{position}".encode()).hexdigest()[:12]


def sized(source: str, n: int) -> str:
    return source.replace("@N@", str(n))


def make_notebook(name: str, cells: list[str], target: int, n: int) -> nbformat.NotebookNode:
    nb = new_notebook()
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    for position, source in enumerate(cells):
        count = position + 1 if position < target else None
        nb.cells.append(new_code_cell(sized(source, n), id=cell_id(name, position), execution_count=count))
    nbformat.validate(nb)
    return nb


def check_case(c: Case) -> None:
    problems = []
    if not 0 <= c.target < len(c.cells):
        problems.append("target out of range")
    if not c.fix:
        problems.append("buggy and fixed are identical")
    if any(i >= len(c.cells) for i in c.fix):
        problems.append("fix edits a missing cell")
    if not any("@N@" in cell for cell in c.cells):
        problems.append("no @N@ size in the cells")
    if problems:
        raise SystemExit(f"{c.name}: " + "; ".join(problems))


def entry(c: Case, seconds: dict) -> dict:
    out = {
        "case": c.name,
        "library": c.library,
        "target_cell": c.target,
        "exception": c.exception,
        "message_contains": c.message_contains,
        "diagnosis": c.diagnosis,
        "needs_runtime": c.needs_runtime,
        "category": c.category,
    }
    if c.name in seconds:
        out["target_seconds"] = seconds[c.name]
    return out


def write_case(c: Case, folder: Path, small: bool) -> None:
    check_case(c)
    n = c.small if small else c.n
    fixed_cells = [c.fix.get(i, cell) for i, cell in enumerate(c.cells)]
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    nbformat.write(make_notebook(c.name, c.cells, c.target, n), folder / "buggy.ipynb")
    nbformat.write(make_notebook(c.name, fixed_cells, c.target, n), folder / "fixed.ipynb")


def split(names: list[str]) -> tuple[list[str], list[str]]:
    """The sorted case names shuffled with the corpus seed: first half dev, rest held-out."""
    shuffled = sorted(names)
    random.Random(SPLIT_SEED).shuffle(shuffled)
    half = len(shuffled) // 2
    return shuffled[:half], shuffled[half:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flat", type=Path, help="write every case under this folder, one manifest")
    parser.add_argument("--small", action="store_true", help="tiny sizes (quick crash checks)")
    args = parser.parse_args()

    names = [c.name for c in CASES]
    if len(set(names)) != len(names):
        raise SystemExit("duplicate case names")
    seconds = json.loads(SECONDS_FILE.read_text()) if SECONDS_FILE.exists() and not args.small else {}
    by_name = {c.name: c for c in CASES}

    if args.flat:
        args.flat.mkdir(parents=True, exist_ok=True)
        for c in CASES:
            write_case(c, args.flat / c.name, args.small)
        manifest = [entry(c, seconds) for c in CASES]
        (args.flat / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
        print(f"{len(CASES)} cases under {args.flat}")
        return

    dev, held_out = split(names)
    for part, part_names in (("dev", dev), ("held-out", held_out)):
        root = HERE / part
        if root.exists():
            shutil.rmtree(root)
        root.mkdir()
        manifest = []
        for name in sorted(part_names):
            write_case(by_name[name], root / name, small=False)
            manifest.append(entry(by_name[name], seconds))
        (root / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"{len(CASES)} cases: {len(dev)} dev, {len(held_out)} held-out")


if __name__ == "__main__":
    main()
