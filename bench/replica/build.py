"""Generate crane's corpus of crash/fix notebook pairs for kernels that cannot fork (the replica).

Each case is a compact definition: the code cells of the buggy notebook, the target cell (0-based
among code cells), and the edits that make the fixed notebook. In every Keras notebook the cells
above the target build and fit (and most evaluate) a Keras model, so TensorFlow's runtime has
started in the kernel before the target and crane refuses to fork it. In every torch notebook the
first cell sets `CRANE_TEST_REFUSE_FORK`, crane's test seam for a kernel that refuses forks as one
whose torch touched a GPU does (the development machine has none). All data is made by seeded
generators or comes from scikit-learn's bundled datasets: no file is read or written, nothing is
downloaded. Cases listing `stand_in` names hold arrays over 64 MiB that the target reads, which
the replica cannot copy exactly.

    .venv/bin/python bench/replica/build.py              # write dev/ and held-out/
    .venv/bin/python bench/replica/build.py --flat DIR   # every case under DIR (before the split)

The split (README.md): the case names, sorted, are shuffled with `random.Random(20261205)`; the
first half goes to `dev/`, the rest to `held-out/`, each with its own manifest.json. Output is
deterministic: same definitions, same bytes. Needs only the standard library and nbformat.
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
SPLIT_SEED = 20261205


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
    fix: dict[int, str] = field(default_factory=dict)
    # Names the target reads that hold more than 64 MiB (the replica's exact-copy bound).
    stand_in: list[str] = field(default_factory=list)
    # Where the buggy target crashes: "first line", "in the cell" (after a few statements),
    # "after a loop" (a short training loop ran first), "in an earlier cell's function".
    crash_position: str = "in the cell"


def code(source: str) -> str:
    return textwrap.dedent(source).strip("\n")


CASES: list[Case] = []


def case(**kwargs) -> None:
    kwargs["cells"] = [code(c) for c in kwargs["cells"]]
    kwargs["fix"] = {i: code(c) for i, c in kwargs.get("fix", {}).items()}
    CASES.append(Case(**kwargs))


KERAS_IMPORTS = """
import numpy as np
import pandas as pd
import keras
from keras import layers

keras.utils.set_random_seed(0)
"""

TORCH_IMPORTS = """
import os
# This kernel stands for one whose torch has touched a GPU: crane's test seam makes it refuse forks.
os.environ["CRANE_TEST_REFUSE_FORK"] = "torch on a device"

import numpy as np
import pandas as pd
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
"""

DIGITS_IMAGES = """
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

digits = load_digits()
X = (digits.data / 16.0).astype("float32")
y = digits.target
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=0, stratify=y)
X_train_img = X_train.reshape(-1, 8, 8, 1)
print(X_train_img.shape, X_test.shape)
"""

CNN_FIT = """
model = keras.Sequential([
    layers.Input(shape=(8, 8, 1)),
    layers.Conv2D(16, 3, activation="relu"),
    layers.MaxPooling2D(2),
    layers.Flatten(),
    layers.Dense(10, activation="softmax"),
])
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
history = model.fit(X_train_img, y_train, epochs=4, batch_size=64, validation_split=0.1, verbose=0)
print(f"val accuracy {history.history['val_accuracy'][-1]:.3f}")
"""

# ---------------------------------------------------------------------------------------------
# Keras: the cells above the target build and fit a model (TensorFlow's runtime has started).

CHURN_FRAME = """
rng = np.random.default_rng(1)
n = 1500
df = pd.DataFrame({
    "tenure": rng.integers(1, 72, n),
    "monthly": rng.normal(70, 20, n).round(2),
    "support_calls": rng.poisson(1.5, n),
    "age": rng.integers(18, 80, n),
})
df["churn"] = ((df["support_calls"] > 2) | (df["tenure"] < 6)).astype(int)
features = ["tenure", "monthly", "support_calls", "age"]
X = df[features].to_numpy("float32")
mu, sd = X.mean(0), X.std(0)
X = (X - mu) / sd
y = df["churn"].to_numpy()
"""

CHURN_FIT = """
model = keras.Sequential([
    layers.Input(shape=(len(features),)),
    layers.Dense(16, activation="relu"),
    layers.Dense(1, activation="sigmoid"),
])
model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
history = model.fit(X, y, epochs=5, batch_size=64, validation_split=0.2, verbose=0)
print(f"val accuracy {history.history['val_accuracy'][-1]:.3f}")
"""

case(
    name="keras_finetune_on_engineered_columns",
    library="tensorflow",
    category="data confusion",
    needs_runtime=True,
    exception="InvalidArgumentError",
    message_contains="Matrix size-incompatible",
    diagnosis="After two engineered columns were added to df, the target refits the model trained on "
    "4 features with all 6 non-label columns; the first Dense layer's kernel is 4 x 16, so the matmul "
    "of a (64, 6) batch fails in fit. Train a model whose input has X2's width.",
    crash_position="first line",
    cells=[
        KERAS_IMPORTS,
        CHURN_FRAME,
        CHURN_FIT,
        """
        df["monthly_per_tenure"] = df["monthly"] / df["tenure"]
        df["heavy_support"] = (df["support_calls"] >= 3).astype(int)
        X2 = df.drop(columns="churn").to_numpy("float32")
        X2 = (X2 - X2.mean(0)) / X2.std(0)
        print(X2.shape)
        """,
        """
        history2 = model.fit(X2, y, epochs=5, batch_size=64, validation_split=0.2, verbose=0)
        print(f"val accuracy with engineered columns {history2.history['val_accuracy'][-1]:.3f}")
        """,
    ],
    target=4,
    fix={
        4: """
        model2 = keras.Sequential([
            layers.Input(shape=(X2.shape[1],)),
            layers.Dense(16, activation="relu"),
            layers.Dense(1, activation="sigmoid"),
        ])
        model2.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
        history2 = model2.fit(X2, y, epochs=5, batch_size=64, validation_split=0.2, verbose=0)
        print(f"val accuracy with engineered columns {history2.history['val_accuracy'][-1]:.3f}")
        """,
    },
)

case(
    name="keras_input_shape_from_rows",
    library="tensorflow",
    category="implementation error",
    needs_runtime=False,
    exception="ValueError",
    message_contains="expected axis -1 of input shape to have value 960",
    diagnosis="The deeper model is built with Input(shape=(X_train.shape[0],)), the number of rows "
    "(960), instead of the number of features (12); fit rejects the first batch of width 12.",
    crash_position="in the cell",
    cells=[
        KERAS_IMPORTS,
        """
        from sklearn.datasets import make_regression
        from sklearn.model_selection import train_test_split

        X, y = make_regression(n_samples=1200, n_features=12, noise=10.0, random_state=3)
        X = X.astype("float32")
        y = ((y - y.mean()) / y.std()).astype("float32")
        X_train, X_val, y_train, y_val = train_test_split(X, y, test_size=0.2, random_state=3)
        """,
        """
        baseline = keras.Sequential([layers.Input(shape=(X_train.shape[1],)), layers.Dense(1)])
        baseline.compile(optimizer="adam", loss="mse")
        baseline.fit(X_train, y_train, epochs=5, batch_size=64, verbose=0)
        print(f"baseline val mse {baseline.evaluate(X_val, y_val, verbose=0):.3f}")
        """,
        """
        deeper = keras.Sequential([
            layers.Input(shape=(X_train.shape[0],)),
            layers.Dense(32, activation="relu"),
            layers.Dense(16, activation="relu"),
            layers.Dense(1),
        ])
        deeper.compile(optimizer="adam", loss="mse")
        deeper.fit(X_train, y_train, epochs=5, batch_size=64, verbose=0)
        print(f"deeper val mse {deeper.evaluate(X_val, y_val, verbose=0):.3f}")
        """,
    ],
    target=3,
    fix={
        3: """
        deeper = keras.Sequential([
            layers.Input(shape=(X_train.shape[1],)),
            layers.Dense(32, activation="relu"),
            layers.Dense(16, activation="relu"),
            layers.Dense(1),
        ])
        deeper.compile(optimizer="adam", loss="mse")
        deeper.fit(X_train, y_train, epochs=5, batch_size=64, verbose=0)
        print(f"deeper val mse {deeper.evaluate(X_val, y_val, verbose=0):.3f}")
        """,
    },
)

case(
    name="keras_conv2d_predict_flat_digits",
    library="tensorflow",
    category="data confusion",
    needs_runtime=True,
    exception="ValueError",
    message_contains="Expected shape (None, 8, 8, 1), but input has incompatible shape (32, 64)",
    diagnosis="Only the training images were reshaped to (8, 8, 1); X_test is still flat rows of 64, "
    "which the Conv2D model rejects in predict. Reshape X_test like X_train.",
    crash_position="first line",
    cells=[
        KERAS_IMPORTS,
        DIGITS_IMAGES,
        CNN_FIT,
        """
        probs = model.predict(X_test, verbose=0)
        pred = probs.argmax(axis=1)
        print(f"test accuracy {(pred == y_test).mean():.3f}")
        """,
    ],
    target=3,
    fix={
        3: """
        probs = model.predict(X_test.reshape(-1, 8, 8, 1), verbose=0)
        pred = probs.argmax(axis=1)
        print(f"test accuracy {(pred == y_test).mean():.3f}")
        """,
    },
)

case(
    name="keras_lstm_evaluate_flat_windows",
    library="tensorflow",
    category="data confusion",
    needs_runtime=True,
    exception="ValueError",
    message_contains="Cannot take the length of shape with unknown rank",
    diagnosis="make_windows returns flat rows of 24 x 3 = 72 values; the training windows were "
    "reshaped to (24, 3) for the LSTM, the test windows made in the target are not, so evaluate gets "
    "a 2-D array (Keras, having traced evaluate for 3-D windows, retraces with an unknown rank and "
    "the LSTM fails on it). Reshape X_test to (-1, 24, 3).",
    crash_position="in the cell",
    cells=[
        KERAS_IMPORTS,
        """
        rng = np.random.default_rng(4)
        WIDTH = 24

        def sensor_series(n):
            t = np.arange(n)
            temp = np.sin(t / 12) + rng.normal(scale=0.1, size=n)
            load = np.cos(t / 30) + rng.normal(scale=0.1, size=n)
            vib = 0.5 * temp * load + rng.normal(scale=0.05, size=n)
            return np.column_stack([temp, load, vib]).astype("float32")

        def make_windows(series, width):
            X = np.stack([series[i:i + width].ravel() for i in range(len(series) - width)])
            y = series[width:, 2]
            return X, y

        X_flat, y_train = make_windows(sensor_series(1500), WIDTH)
        X_train = X_flat.reshape(-1, WIDTH, 3)
        print(X_train.shape)
        """,
        """
        model = keras.Sequential([
            layers.Input(shape=(WIDTH, 3)),
            layers.LSTM(16),
            layers.Dense(1),
        ])
        model.compile(optimizer="adam", loss="mse")
        model.fit(X_train, y_train, epochs=3, batch_size=64, verbose=0)
        print(f"train mse {model.evaluate(X_train, y_train, verbose=0):.4f}")
        """,
        """
        X_test, y_test = make_windows(sensor_series(400), WIDTH)
        test_mse = model.evaluate(X_test, y_test, verbose=0)
        print(f"test mse {test_mse:.4f}")
        """,
    ],
    target=3,
    fix={
        3: """
        X_test, y_test = make_windows(sensor_series(400), WIDTH)
        test_mse = model.evaluate(X_test.reshape(-1, WIDTH, 3), y_test, verbose=0)
        print(f"test mse {test_mse:.4f}")
        """,
    },
)

REVIEWS = """
rng = np.random.default_rng(6)
n = 1200
reviews = pd.DataFrame({
    "length": rng.integers(5, 400, n),
    "exclamations": rng.poisson(1.0, n),
    "stars_shown": rng.integers(1, 6, n),
    "reply_hours": rng.exponential(24, n).round(1),
})
score = 0.8 * reviews["stars_shown"] - 0.3 * reviews["exclamations"] + rng.normal(0, 1, n)
reviews["label"] = np.where(score > 2.0, "pos", "neg")
cols = ["length", "exclamations", "stars_shown", "reply_hours"]
mu, sd = reviews[cols].mean(), reviews[cols].std()
X = ((reviews[cols] - mu) / sd).to_numpy("float32")
y = (reviews["label"] == "pos").astype(int).to_numpy()
"""

REVIEWS_FIT = """
model = keras.Sequential([
    layers.Input(shape=(len(cols),)),
    layers.Dense(16, activation="relu"),
    layers.Dense(1, activation="sigmoid"),
])
model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
model.fit(X, y, epochs=4, batch_size=64, verbose=0)
print(model.evaluate(X, y, verbose=0))
"""

case(
    name="keras_fit_string_labels",
    library="tensorflow",
    category="data confusion",
    needs_runtime=True,
    exception="UnimplementedError",
    message_contains="Cast string to float is not supported",
    diagnosis="The new batch of reviews is fitted with its raw label column, strings 'pos'/'neg' "
    "(object array), where the model was trained on 0/1; binary_crossentropy cannot cast strings to "
    "float. Encode the labels as the training labels were.",
    crash_position="in the cell",
    cells=[
        KERAS_IMPORTS,
        REVIEWS,
        REVIEWS_FIT,
        """
        new = reviews.sample(300, random_state=1).reset_index(drop=True)
        X_new = ((new[cols] - mu) / sd).to_numpy("float32")
        model.fit(X_new, new["label"].to_numpy(), epochs=2, batch_size=64, verbose=0)
        print(model.evaluate(X, y, verbose=0))
        """,
    ],
    target=3,
    fix={
        3: """
        new = reviews.sample(300, random_state=1).reset_index(drop=True)
        X_new = ((new[cols] - mu) / sd).to_numpy("float32")
        model.fit(X_new, (new["label"] == "pos").astype(int).to_numpy(), epochs=2, batch_size=64, verbose=0)
        print(model.evaluate(X, y, verbose=0))
        """,
    },
)

case(
    name="keras_predict_object_array_from_form",
    library="tensorflow",
    category="data confusion",
    needs_runtime=True,
    exception="ValueError",
    message_contains="Invalid dtype: object",
    diagnosis="The new customers' monthly charge arrives as text ('71.20'), so the frame's values "
    "are an object array and Keras refuses its dtype in predict (the model scales its raw inputs "
    "with a Normalization layer). Convert the columns to float32.",
    crash_position="in the cell",
    cells=[
        KERAS_IMPORTS,
        CHURN_FRAME,
        """
        raw = df[features].to_numpy("float32")
        norm = layers.Normalization()
        norm.adapt(raw)
        model = keras.Sequential([
            layers.Input(shape=(len(features),)),
            norm,
            layers.Dense(16, activation="relu"),
            layers.Dense(1, activation="sigmoid"),
        ])
        model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
        model.fit(raw, y, epochs=5, batch_size=64, verbose=0)
        print(model.evaluate(raw, y, verbose=0))
        """,
        """
        form = pd.DataFrame({
            "tenure": [3, 40, 12, 65],
            "monthly": ["71.20", "45.00", "99.90", "20.50"],
            "support_calls": [4, 0, 1, 2],
            "age": [23, 51, 37, 70],
        })
        print(form.dtypes)
        """,
        """
        X_form = form[features].to_numpy()
        risk = model.predict(X_form, verbose=0).ravel()
        print(dict(zip(form["tenure"], risk.round(3))))
        """,
    ],
    target=4,
    fix={
        4: """
        X_form = form[features].astype("float32").to_numpy()
        risk = model.predict(X_form, verbose=0).ravel()
        print(dict(zip(form["tenure"], risk.round(3))))
        """,
    },
)

TICKETS = """
rng = np.random.default_rng(7)

def tickets(n, n_classes):
    X = rng.normal(size=(n, 6)).astype("float32")
    y = rng.integers(0, n_classes, n)
    X[np.arange(n), y % 6] += 2.0
    return X, y

X, y = tickets(1500, 3)
print(np.bincount(y))
"""

case(
    name="keras_new_class_in_finetune_labels",
    library="tensorflow",
    category="ML model confusion",
    needs_runtime=True,
    exception="InvalidArgumentError",
    message_contains="which is outside the valid range of [0, 3)",
    diagnosis="The fine-tuning tickets include a fourth category (label 3) while the softmax has 3 "
    "units; sparse_categorical_crossentropy rejects the label value 3 in fit. Keep the three known "
    "categories (or rebuild the head with 4 units).",
    crash_position="in the cell",
    cells=[
        KERAS_IMPORTS,
        TICKETS,
        """
        model = keras.Sequential([
            layers.Input(shape=(6,)),
            layers.Dense(32, activation="relu"),
            layers.Dense(3, activation="softmax"),
        ])
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        model.fit(X, y, epochs=4, batch_size=64, verbose=0)
        print(model.evaluate(X, y, verbose=0))
        """,
        """
        X_new, y_new = tickets(400, 4)
        print(np.bincount(y_new))
        model.fit(X_new, y_new, epochs=2, batch_size=64, verbose=0)
        print(model.evaluate(X, y, verbose=0))
        """,
    ],
    target=3,
    fix={
        3: """
        X_new, y_new = tickets(400, 4)
        print(np.bincount(y_new))
        known = y_new < 3
        model.fit(X_new[known], y_new[known], epochs=2, batch_size=64, verbose=0)
        print(model.evaluate(X, y, verbose=0))
        """,
    },
)

case(
    name="keras_evaluate_onehot_with_sparse_loss",
    library="tensorflow",
    category="API misuse",
    needs_runtime=True,
    exception="ValueError",
    message_contains="must have rank (ndim) `target.ndim - 1`",
    diagnosis="The test labels are one-hot encoded with to_categorical, but the model was compiled "
    "with sparse_categorical_crossentropy, which wants integer labels; evaluate fails on the ranks. "
    "Evaluate with y_test itself.",
    crash_position="in the cell",
    cells=[
        KERAS_IMPORTS,
        DIGITS_IMAGES,
        CNN_FIT,
        """
        X_test_img = X_test.reshape(-1, 8, 8, 1)
        y_test_onehot = keras.utils.to_categorical(y_test, 10)
        loss, acc = model.evaluate(X_test_img, y_test_onehot, verbose=0)
        print(f"test accuracy {acc:.3f}")
        """,
    ],
    target=3,
    fix={
        3: """
        X_test_img = X_test.reshape(-1, 8, 8, 1)
        y_test_onehot = keras.utils.to_categorical(y_test, 10)
        loss, acc = model.evaluate(X_test_img, y_test, verbose=0)
        print(f"test accuracy {acc:.3f}")
        """,
    },
)

case(
    name="keras_integer_labels_categorical_loss",
    library="tensorflow",
    category="API misuse",
    needs_runtime=True,
    exception="ValueError",
    message_contains="must have the same rank (ndim)",
    diagnosis="The wider model is compiled with categorical_crossentropy, which wants one-hot labels, "
    "and fitted on the integer labels y (the first model used the sparse loss); fit fails on the "
    "ranks. Compile with sparse_categorical_crossentropy.",
    crash_position="in the cell",
    cells=[
        KERAS_IMPORTS,
        TICKETS,
        """
        model = keras.Sequential([
            layers.Input(shape=(6,)),
            layers.Dense(16, activation="relu"),
            layers.Dense(3, activation="softmax"),
        ])
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        model.fit(X, y, epochs=4, batch_size=64, verbose=0)
        print(model.evaluate(X, y, verbose=0))
        """,
        """
        wide = keras.Sequential([
            layers.Input(shape=(6,)),
            layers.Dense(64, activation="relu"),
            layers.Dropout(0.2),
            layers.Dense(3, activation="softmax"),
        ])
        wide.compile(optimizer="adam", loss="categorical_crossentropy", metrics=["accuracy"])
        wide.fit(X, y, epochs=4, batch_size=64, verbose=0)
        print(wide.evaluate(X, y, verbose=0))
        """,
    ],
    target=3,
    fix={
        3: """
        wide = keras.Sequential([
            layers.Input(shape=(6,)),
            layers.Dense(64, activation="relu"),
            layers.Dropout(0.2),
            layers.Dense(3, activation="softmax"),
        ])
        wide.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        wide.fit(X, y, epochs=4, batch_size=64, verbose=0)
        print(wide.evaluate(X, y, verbose=0))
        """,
    },
)

case(
    name="keras_two_output_model_one_target",
    library="tensorflow",
    category="ML model confusion",
    needs_runtime=True,
    exception="ValueError",
    message_contains="y_true and y_pred have different structures",
    diagnosis="The model has two outputs (price and segment) and was fitted with both targets; the "
    "target evaluates it on the price alone, so Keras cannot match one target to two outputs. Pass "
    "both test targets.",
    crash_position="in the cell",
    cells=[
        KERAS_IMPORTS,
        """
        rng = np.random.default_rng(9)
        n = 1500
        X = rng.normal(size=(n, 8)).astype("float32")
        price = (X[:, 0] * 2 + X[:, 1] + rng.normal(scale=0.3, size=n)).astype("float32")
        segment = (X[:, 2] > 0).astype(int) + (X[:, 3] > 1).astype(int)
        X_train, X_test = X[:1200], X[1200:]
        price_train, price_test = price[:1200], price[1200:]
        segment_train, segment_test = segment[:1200], segment[1200:]
        """,
        """
        inputs = keras.Input(shape=(8,))
        hidden = layers.Dense(32, activation="relu")(inputs)
        price_out = layers.Dense(1, name="price")(hidden)
        segment_out = layers.Dense(3, activation="softmax", name="segment")(hidden)
        model = keras.Model(inputs, [price_out, segment_out])
        model.compile(optimizer="adam", loss=["mse", "sparse_categorical_crossentropy"])
        model.fit(X_train, [price_train, segment_train], epochs=4, batch_size=64, verbose=0)
        """,
        """
        price_pred, segment_pred = model.predict(X_test, verbose=0)
        print(f"price mae {np.abs(price_pred.ravel() - price_test).mean():.3f}")
        test_loss = model.evaluate(X_test, price_test, verbose=0)
        print(test_loss)
        """,
    ],
    target=3,
    fix={
        3: """
        price_pred, segment_pred = model.predict(X_test, verbose=0)
        print(f"price mae {np.abs(price_pred.ravel() - price_test).mean():.3f}")
        test_loss = model.evaluate(X_test, [price_test, segment_test], verbose=0)
        print(test_loss)
        """,
    },
)

case(
    name="keras_callback_class_not_instance",
    library="tensorflow",
    category="API misuse",
    needs_runtime=False,
    exception="TypeError",
    message_contains="set_model() missing 1 required positional argument",
    diagnosis="callbacks= holds keras.callbacks.TerminateOnNaN, the class, not an instance; Keras "
    "calls set_model on it unbound and fit fails before the first epoch. Write TerminateOnNaN().",
    crash_position="in the cell",
    cells=[
        KERAS_IMPORTS,
        REVIEWS,
        REVIEWS_FIT,
        """
        stop = keras.callbacks.EarlyStopping(monitor="val_loss", patience=2, restore_best_weights=True)
        history = model.fit(X, y, epochs=20, batch_size=64, validation_split=0.2, verbose=0,
                            callbacks=[stop, keras.callbacks.TerminateOnNaN])
        print(f"stopped after {len(history.history['loss'])} epochs")
        """,
    ],
    target=3,
    fix={
        3: """
        stop = keras.callbacks.EarlyStopping(monitor="val_loss", patience=2, restore_best_weights=True)
        history = model.fit(X, y, epochs=20, batch_size=64, validation_split=0.2, verbose=0,
                            callbacks=[stop, keras.callbacks.TerminateOnNaN()])
        print(f"stopped after {len(history.history['loss'])} epochs")
        """,
    },
)

case(
    name="keras_history_val_loss_without_validation",
    library="tensorflow",
    category="API misuse",
    needs_runtime=False,
    exception="KeyError",
    message_contains="val_loss",
    diagnosis="The second round of training is fitted without validation data, so its History has "
    "only 'loss' and 'accuracy'; reading history.history['val_loss'] after the fit fails. Pass "
    "validation_split as in the first round.",
    crash_position="after a loop",
    cells=[
        KERAS_IMPORTS,
        DIGITS_IMAGES,
        CNN_FIT,
        """
        history = model.fit(X_train_img, y_train, epochs=4, batch_size=64, verbose=0)
        best_epoch = int(np.argmin(history.history["val_loss"]))
        print(f"best epoch {best_epoch}")
        """,
    ],
    target=3,
    fix={
        3: """
        history = model.fit(X_train_img, y_train, epochs=4, batch_size=64, validation_split=0.1, verbose=0)
        best_epoch = int(np.argmin(history.history["val_loss"]))
        print(f"best epoch {best_epoch}")
        """,
    },
)

case(
    name="keras_base_model_called_on_extra_input",
    library="tensorflow",
    category="implementation error",
    needs_runtime=False,
    exception="ValueError",
    message_contains="expected shape=(None, 10), found shape=(None, 3)",
    diagnosis="The trained encoder takes 10 features; the new two-input model calls it on the "
    "3-feature extra input instead of on the base input, so building the graph fails. Call "
    "encoder(base_in).",
    crash_position="in the cell",
    cells=[
        KERAS_IMPORTS,
        """
        rng = np.random.default_rng(10)
        n = 1500
        X = rng.normal(size=(n, 10)).astype("float32")
        extras = rng.normal(size=(n, 3)).astype("float32")
        y = (X[:, 0] + X[:, 1] * extras[:, 0] > 0).astype(int)
        """,
        """
        inputs = keras.Input(shape=(10,))
        hidden = layers.Dense(16, activation="relu")(inputs)
        out = layers.Dense(1, activation="sigmoid")(hidden)
        model = keras.Model(inputs, out)
        model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
        model.fit(X, y, epochs=4, batch_size=64, verbose=0)
        encoder = keras.Model(inputs, hidden)
        print(model.evaluate(X, y, verbose=0))
        """,
        """
        base_in = keras.Input(shape=(10,), name="base")
        extra_in = keras.Input(shape=(3,), name="extra")
        merged = layers.Concatenate()([encoder(extra_in), extra_in])
        head = layers.Dense(1, activation="sigmoid")(merged)
        combined = keras.Model([base_in, extra_in], head)
        combined.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
        combined.fit([X, extras], y, epochs=4, batch_size=64, verbose=0)
        print(combined.evaluate([X, extras], y, verbose=0))
        """,
    ],
    target=3,
    fix={
        3: """
        base_in = keras.Input(shape=(10,), name="base")
        extra_in = keras.Input(shape=(3,), name="extra")
        merged = layers.Concatenate()([encoder(base_in), extra_in])
        head = layers.Dense(1, activation="sigmoid")(merged)
        combined = keras.Model([base_in, extra_in], head)
        combined.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
        combined.fit([X, extras], y, epochs=4, batch_size=64, verbose=0)
        print(combined.evaluate([X, extras], y, verbose=0))
        """,
    },
)

case(
    name="keras_train_on_batch_flat_pool",
    library="tensorflow",
    category="data confusion",
    needs_runtime=True,
    exception="ValueError",
    message_contains="but input has incompatible shape (64, 64)",
    diagnosis="The active-learning loop takes its batches from X_pool, the flat rows of 64, instead "
    "of the (8, 8, 1) images; train_on_batch of the Conv2D model rejects the first batch. Take "
    "batches from X_pool_img.",
    crash_position="first line",
    cells=[
        KERAS_IMPORTS,
        DIGITS_IMAGES,
        CNN_FIT,
        """
        X_pool, y_pool = X_test, y_test
        X_pool_img = X_pool.reshape(-1, 8, 8, 1)
        order = np.argsort(model.predict(X_pool_img, verbose=0).max(axis=1))
        """,
        """
        for step in range(5):
            pick = order[step * 64:(step + 1) * 64]
            loss, acc = model.train_on_batch(X_pool[pick], y_pool[pick])
            print(f"step {step}  loss {loss:.3f}  acc {acc:.3f}")
        """,
    ],
    target=4,
    fix={
        4: """
        for step in range(5):
            pick = order[step * 64:(step + 1) * 64]
            loss, acc = model.train_on_batch(X_pool_img[pick], y_pool[pick])
            print(f"step {step}  loss {loss:.3f}  acc {acc:.3f}")
        """,
    },
)

case(
    name="keras_accuracy_score_on_probabilities",
    library="tensorflow",
    category="API misuse",
    needs_runtime=False,
    exception="ValueError",
    message_contains="Classification metrics can't handle a mix of binary and continuous targets",
    diagnosis="model.predict returns sigmoid probabilities; accuracy_score compares them with the 0/1 "
    "labels and scikit-learn refuses continuous predictions. Threshold at 0.5 first.",
    crash_position="in the cell",
    cells=[
        KERAS_IMPORTS,
        REVIEWS,
        """
        from sklearn.model_selection import train_test_split

        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=2)
        model = keras.Sequential([
            layers.Input(shape=(len(cols),)),
            layers.Dense(16, activation="relu"),
            layers.Dense(1, activation="sigmoid"),
        ])
        model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
        model.fit(X_train, y_train, epochs=4, batch_size=64, verbose=0)
        """,
        """
        from sklearn.metrics import accuracy_score, confusion_matrix

        pred = model.predict(X_test, verbose=0)
        print(confusion_matrix(y_test, (pred > 0.5).astype(int).ravel()))
        print(f"accuracy {accuracy_score(y_test, pred):.3f}")
        """,
    ],
    target=3,
    fix={
        3: """
        from sklearn.metrics import accuracy_score, confusion_matrix

        pred = model.predict(X_test, verbose=0)
        print(confusion_matrix(y_test, (pred > 0.5).astype(int).ravel()))
        print(f"accuracy {accuracy_score(y_test, (pred > 0.5).astype(int).ravel()):.3f}")
        """,
    },
)

case(
    name="keras_embedding_oov_index",
    library="tensorflow",
    category="implementation error",
    needs_runtime=True,
    exception="InvalidArgumentError",
    message_contains="is not in [0, ",
    diagnosis="encode() maps unknown words to len(vocab) + 1, but the Embedding has input_dim "
    "len(vocab) + 1 (ids 0..len(vocab)); the training texts hold only known words, the new reviews "
    "do not, and the embedding lookup fails in predict. Map unknown words to the padding id 0.",
    crash_position="in the cell",
    cells=[
        KERAS_IMPORTS,
        """
        rng = np.random.default_rng(11)
        words = [f"w{i}" for i in range(300)]
        MAXLEN = 12

        def sentences(n, pool):
            return [list(rng.choice(pool, size=rng.integers(4, MAXLEN + 1))) for _ in range(n)]

        train_texts = sentences(1200, words)
        vocab = {w: i + 1 for i, w in enumerate(sorted({w for s in train_texts for w in s}))}
        OOV = len(vocab) + 1

        def encode(texts):
            out = np.zeros((len(texts), MAXLEN), dtype="int32")
            for row, text in enumerate(texts):
                ids = [vocab.get(w, OOV) for w in text][:MAXLEN]
                out[row, :len(ids)] = ids
            return out

        X_train = encode(train_texts)
        y_train = np.array([sum(w in ("w1", "w2", "w3") for w in s) > 0 for s in train_texts], dtype=int)
        print(len(vocab), X_train.max())
        """,
        """
        model = keras.Sequential([
            layers.Input(shape=(MAXLEN,)),
            layers.Embedding(input_dim=len(vocab) + 1, output_dim=16),
            layers.GlobalAveragePooling1D(),
            layers.Dense(1, activation="sigmoid"),
        ])
        model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
        model.fit(X_train, y_train, epochs=3, batch_size=64, verbose=0)
        print(model.evaluate(X_train, y_train, verbose=0))
        """,
        """
        new_texts = sentences(200, words + ["brand", "refund", "late"])
        X_new = encode(new_texts)
        scores = model.predict(X_new, verbose=0).ravel()
        print(f"{(scores > 0.5).mean():.2f} flagged")
        """,
    ],
    target=3,
    fix={
        1: """
        rng = np.random.default_rng(11)
        words = [f"w{i}" for i in range(300)]
        MAXLEN = 12

        def sentences(n, pool):
            return [list(rng.choice(pool, size=rng.integers(4, MAXLEN + 1))) for _ in range(n)]

        train_texts = sentences(1200, words)
        vocab = {w: i + 1 for i, w in enumerate(sorted({w for s in train_texts for w in s}))}
        OOV = 0

        def encode(texts):
            out = np.zeros((len(texts), MAXLEN), dtype="int32")
            for row, text in enumerate(texts):
                ids = [vocab.get(w, OOV) for w in text][:MAXLEN]
                out[row, :len(ids)] = ids
            return out

        X_train = encode(train_texts)
        y_train = np.array([sum(w in ("w1", "w2", "w3") for w in s) > 0 for s in train_texts], dtype=int)
        print(len(vocab), X_train.max())
        """,
    },
)

case(
    name="keras_report_helper_flat_test_images",
    library="tensorflow",
    category="data confusion",
    needs_runtime=True,
    exception="ValueError",
    message_contains="Cannot take the length of shape with unknown rank",
    diagnosis="report(), defined in an earlier cell, evaluates whatever it is given; it worked on the "
    "validation images, but the target passes the flat test rows of 64 and model.evaluate inside "
    "report() fails on them (Keras, having traced evaluate for 4-D images, retraces with an unknown "
    "rank and the Conv2D model rejects it). Pass X_test reshaped to (-1, 8, 8, 1).",
    crash_position="in an earlier cell's function",
    cells=[
        KERAS_IMPORTS,
        DIGITS_IMAGES,
        """
        X_fit, X_val, y_fit, y_val = train_test_split(X_train_img, y_train, test_size=0.2, random_state=1)
        model = keras.Sequential([
            layers.Input(shape=(8, 8, 1)),
            layers.Conv2D(16, 3, activation="relu"),
            layers.Flatten(),
            layers.Dense(10, activation="softmax"),
        ])
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        model.fit(X_fit, y_fit, epochs=4, batch_size=64, verbose=0)

        def report(model, X, y, name):
            loss, acc = model.evaluate(X, y, verbose=0)
            print(f"{name:>10}: loss {loss:.3f}  accuracy {acc:.3f}")
            return acc

        report(model, X_val, y_val, "validation")
        """,
        """
        scores = {"validation": report(model, X_val, y_val, "validation")}
        scores["test"] = report(model, X_test, y_test, "test")
        print(scores)
        """,
    ],
    target=3,
    fix={
        3: """
        scores = {"validation": report(model, X_val, y_val, "validation")}
        scores["test"] = report(model, X_test.reshape(-1, 8, 8, 1), y_test, "test")
        print(scores)
        """,
    },
)

case(
    name="keras_standin_readings_missing_product_feature",
    library="tensorflow",
    category="data confusion",
    needs_runtime=True,
    exception="ValueError",
    message_contains="expected axis -1 of input shape to have value 3",
    diagnosis="The model was trained on (temperature, vibration, their product); the target scores "
    "a sample of the 10M raw readings, two columns, without the product column, and predict rejects "
    "the width. readings (10M x 2 float32, 80 MB) is larger than the replica copies. Add the product "
    "column to the batch.",
    crash_position="in the cell",
    stand_in=["readings"],
    cells=[
        KERAS_IMPORTS,
        """
        rng = np.random.default_rng(5)
        readings = rng.normal(size=(10_000_000, 2)).astype("float32")  # temperature, vibration
        print(f"{readings.nbytes / 2**20:.0f} MiB")
        """,
        """
        train = readings[:20_000]
        X = np.column_stack([train, train[:, 0] * train[:, 1]])
        y = (X[:, 2] > 0.5).astype("float32")
        model = keras.Sequential([
            layers.Input(shape=(3,)),
            layers.Dense(8, activation="relu"),
            layers.Dense(1, activation="sigmoid"),
        ])
        model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
        model.fit(X, y, epochs=3, batch_size=256, verbose=0)
        print(model.evaluate(X, y, verbose=0))
        """,
        """
        idx = rng.integers(0, len(readings), size=4096)
        batch = readings[idx]
        scores = model.predict(batch, batch_size=1024, verbose=0)
        print(f"{(scores > 0.5).mean():.3f} flagged")
        """,
    ],
    target=3,
    fix={
        3: """
        idx = rng.integers(0, len(readings), size=4096)
        batch = readings[idx]
        batch = np.column_stack([batch, batch[:, 0] * batch[:, 1]])
        scores = model.predict(batch, batch_size=1024, verbose=0)
        print(f"{(scores > 0.5).mean():.3f} flagged")
        """,
    },
)

case(
    name="keras_standin_event_codes_one_based",
    library="tensorflow",
    category="data confusion",
    needs_runtime=True,
    exception="InvalidArgumentError",
    message_contains="which is outside the valid range of [0, 3)",
    diagnosis="The event log's codes are 1, 2, 3; the first training subtracted 1, the fine-tuning "
    "on a fresh sample does not, so sparse_categorical_crossentropy meets label 3 with 3 units in "
    "fit. events (10M x 3 float32, 120 MB) and codes (10M int64, 80 MB) are larger than the replica "
    "copies. Subtract 1.",
    crash_position="in the cell",
    stand_in=["events", "codes"],
    cells=[
        KERAS_IMPORTS,
        """
        rng = np.random.default_rng(8)
        n = 10_000_000
        events = rng.normal(size=(n, 3)).astype("float32")
        codes = rng.integers(1, 4, n)  # event type as logged: 1, 2 or 3
        events[np.arange(n), codes - 1] += 1.5
        print(f"{events.nbytes / 2**20:.0f} MiB + {codes.nbytes / 2**20:.0f} MiB")
        """,
        """
        model = keras.Sequential([
            layers.Input(shape=(3,)),
            layers.Dense(16, activation="relu"),
            layers.Dense(3, activation="softmax"),
        ])
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        model.fit(events[:20_000], codes[:20_000] - 1, epochs=3, batch_size=256, verbose=0)
        print(model.evaluate(events[20_000:30_000], codes[20_000:30_000] - 1, verbose=0))
        """,
        """
        idx = rng.integers(0, n, size=5000)
        model.fit(events[idx], codes[idx], epochs=2, batch_size=256, verbose=0)
        print(model.evaluate(events[20_000:30_000], codes[20_000:30_000] - 1, verbose=0))
        """,
    ],
    target=3,
    fix={
        3: """
        idx = rng.integers(0, n, size=5000)
        model.fit(events[idx], codes[idx] - 1, epochs=2, batch_size=256, verbose=0)
        print(model.evaluate(events[20_000:30_000], codes[20_000:30_000] - 1, verbose=0))
        """,
    },
)

# ---------------------------------------------------------------------------------------------
# torch: the first cell sets the seam; a model class, an optimizer and a DataLoader come before
# the target.

TABULAR = """
rng = np.random.default_rng(21)
n = 2000
df = pd.DataFrame(rng.normal(size=(n, 10)), columns=[f"x{i}" for i in range(10)])
df["label"] = (df["x0"] + 0.5 * df["x1"] - df["x2"] > 0).astype(int)
features = [f"x{i}" for i in range(10)]
X_t = torch.tensor(df[features].to_numpy(), dtype=torch.float32)
y_t = torch.tensor(df["label"].to_numpy(), dtype=torch.long)
loader = DataLoader(TensorDataset(X_t, y_t), batch_size=64, shuffle=True)
"""

TABULAR_MODEL = """
class Net(nn.Module):
    def __init__(self, n_in, n_out=2):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(n_in, 32), nn.ReLU(), nn.Linear(32, n_out))

    def forward(self, x):
        return self.body(x)

model = Net(len(features))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
criterion = nn.CrossEntropyLoss()
for epoch in range(3):
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
print(f"last loss {loss.item():.3f}")
"""

case(
    name="torch_score_frame_with_id_column",
    library="torch",
    category="data confusion",
    needs_runtime=True,
    exception="RuntimeError",
    message_contains="mat1 and mat2 shapes cannot be multiplied",
    diagnosis="The new rows are turned into a tensor with every column of the frame, customer_id "
    "included (11 columns), while Net's first Linear takes the 10 features; the first line fails. "
    "Select df's feature columns.",
    crash_position="first line",
    cells=[
        TORCH_IMPORTS,
        TABULAR,
        TABULAR_MODEL,
        """
        new = pd.DataFrame(rng.normal(size=(50, 10)), columns=features)
        new.insert(0, "customer_id", np.arange(1000, 1050))
        """,
        """
        logits = model(torch.tensor(new.to_numpy(), dtype=torch.float32))
        new["p_positive"] = logits.softmax(dim=1)[:, 1].detach().numpy()
        print(new.sort_values("p_positive").tail())
        """,
    ],
    target=4,
    fix={
        4: """
        logits = model(torch.tensor(new[features].to_numpy(), dtype=torch.float32))
        new["p_positive"] = logits.softmax(dim=1)[:, 1].detach().numpy()
        print(new.sort_values("p_positive").tail())
        """,
    },
)

case(
    name="torch_crossentropy_float_targets",
    library="torch",
    category="API misuse",
    needs_runtime=False,
    exception="RuntimeError",
    message_contains="expected target dtype to be Long or Byte, but got Float",
    diagnosis="The labels were made a float32 tensor with the features; CrossEntropyLoss with "
    "class-index targets of shape (N,) wants int64, so the first training step fails. Build y_t "
    "with dtype=torch.long.",
    crash_position="in the cell",
    cells=[
        TORCH_IMPORTS,
        """
        from sklearn.datasets import load_wine

        wine = load_wine()
        X = (wine.data - wine.data.mean(0)) / wine.data.std(0)
        X_t = torch.tensor(X, dtype=torch.float32)
        y_t = torch.tensor(wine.target, dtype=torch.float32)
        loader = DataLoader(TensorDataset(X_t, y_t), batch_size=32, shuffle=True)
        """,
        """
        class WineNet(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = nn.Linear(13, 32)
                self.fc2 = nn.Linear(32, 3)

            def forward(self, x):
                return self.fc2(torch.relu(self.fc1(x)))

        model = WineNet()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        criterion = nn.CrossEntropyLoss()
        """,
        """
        for epoch in range(20):
            total = 0.0
            for xb, yb in loader:
                optimizer.zero_grad()
                loss = criterion(model(xb), yb)
                loss.backward()
                optimizer.step()
                total += loss.item() * len(xb)
        print(f"train loss {total / len(X_t):.3f}")
        """,
    ],
    target=3,
    fix={
        1: """
        from sklearn.datasets import load_wine

        wine = load_wine()
        X = (wine.data - wine.data.mean(0)) / wine.data.std(0)
        X_t = torch.tensor(X, dtype=torch.float32)
        y_t = torch.tensor(wine.target, dtype=torch.long)
        loader = DataLoader(TensorDataset(X_t, y_t), batch_size=32, shuffle=True)
        """,
    },
)

case(
    name="torch_mse_two_outputs_against_price",
    library="torch",
    category="ML model confusion",
    needs_runtime=True,
    exception="RuntimeError",
    message_contains="The size of tensor a (2) must match the size of tensor b (400)",
    diagnosis="The model predicts two targets (price, quantity), shape (400, 2); the validation "
    "loss compares it with the price vector of shape (400,), which broadcasts against the last "
    "dimension and fails. Compare the price column, model(X_val_t)[:, 0].",
    crash_position="in the cell",
    cells=[
        TORCH_IMPORTS,
        """
        rng = np.random.default_rng(22)
        X = rng.normal(size=(2000, 6)).astype("float32")
        price = X[:, 0] * 3 + X[:, 1] + rng.normal(scale=0.2, size=2000).astype("float32")
        quantity = -X[:, 0] + 2 * X[:, 2] + rng.normal(scale=0.2, size=2000).astype("float32")
        Y = np.column_stack([price, quantity]).astype("float32")
        X_train_t, Y_train_t = torch.from_numpy(X[:1600]), torch.from_numpy(Y[:1600])
        X_val_t, price_val_t = torch.from_numpy(X[1600:]), torch.from_numpy(price[1600:])
        loader = DataLoader(TensorDataset(X_train_t, Y_train_t), batch_size=64, shuffle=True)
        """,
        """
        class TwoHead(nn.Module):
            def __init__(self):
                super().__init__()
                self.net = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 2))

            def forward(self, x):
                return self.net(x)

        model = TwoHead()
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        criterion = nn.MSELoss()
        for epoch in range(5):
            for xb, yb in loader:
                optimizer.zero_grad()
                loss = criterion(model(xb), yb)
                loss.backward()
                optimizer.step()
        print(f"train mse {loss.item():.3f}")
        """,
        """
        model.eval()
        with torch.no_grad():
            val_pred = model(X_val_t)
            price_mse = criterion(val_pred, price_val_t).item()
        print(f"validation price mse {price_mse:.3f}")
        """,
    ],
    target=3,
    fix={
        3: """
        model.eval()
        with torch.no_grad():
            val_pred = model(X_val_t)
            price_mse = criterion(val_pred[:, 0], price_val_t).item()
        print(f"validation price mse {price_mse:.3f}")
        """,
    },
)

case(
    name="torch_float64_scaled_new_rows",
    library="torch",
    category="data confusion",
    needs_runtime=True,
    exception="RuntimeError",
    message_contains="mat1 and mat2 must have the same dtype, but got Double and Float",
    diagnosis="StandardScaler.transform returns float64; torch.from_numpy keeps it, and the float32 "
    "model's Linear refuses a Double input. Convert with .float().",
    crash_position="in the cell",
    cells=[
        TORCH_IMPORTS,
        """
        from sklearn.preprocessing import StandardScaler

        rng = np.random.default_rng(23)
        raw = rng.normal(loc=50, scale=10, size=(1500, 5))
        target = (raw[:, 0] - raw[:, 1] + rng.normal(scale=3, size=1500) > 0).astype(int)
        scaler = StandardScaler().fit(raw)
        X_t = torch.tensor(scaler.transform(raw), dtype=torch.float32)
        y_t = torch.tensor(target)
        loader = DataLoader(TensorDataset(X_t, y_t), batch_size=64, shuffle=True)
        """,
        """
        class Classifier(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 2))

            def forward(self, x):
                return self.layers(x)

        model = Classifier()
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        criterion = nn.CrossEntropyLoss()
        for epoch in range(4):
            for xb, yb in loader:
                optimizer.zero_grad()
                criterion(model(xb), yb).backward()
                optimizer.step()
        """,
        """
        new_raw = rng.normal(loc=50, scale=10, size=(20, 5))
        new_t = torch.from_numpy(scaler.transform(new_raw))
        with torch.no_grad():
            pred = model(new_t).argmax(dim=1)
        print(pred.tolist())
        """,
    ],
    target=3,
    fix={
        3: """
        new_raw = rng.normal(loc=50, scale=10, size=(20, 5))
        new_t = torch.from_numpy(scaler.transform(new_raw)).float()
        with torch.no_grad():
            pred = model(new_t).argmax(dim=1)
        print(pred.tolist())
        """,
    },
)

case(
    name="torch_view_after_transpose",
    library="torch",
    category="API misuse",
    needs_runtime=False,
    exception="RuntimeError",
    message_contains="view size is not compatible with input tensor's size and stride",
    diagnosis="The conv activations (batch, channels, steps) are transposed to (batch, steps, "
    "channels) and then flattened with .view, but the transpose is not contiguous; view fails. Use "
    ".reshape (or .contiguous().view).",
    crash_position="in the cell",
    cells=[
        TORCH_IMPORTS,
        """
        rng = np.random.default_rng(24)
        signals = rng.normal(size=(1200, 2, 32)).astype("float32")
        labels = (signals[:, 0, :16].mean(1) > signals[:, 1, 16:].mean(1)).astype("int64")
        ds = TensorDataset(torch.from_numpy(signals), torch.from_numpy(labels))
        loader = DataLoader(ds, batch_size=64, shuffle=True)
        """,
        """
        class SignalNet(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv1d(2, 8, kernel_size=5, padding=2)
                self.head = nn.Linear(8, 2)

            def forward(self, x):
                h = torch.relu(self.conv(x))
                return self.head(h.mean(dim=2))

        model = SignalNet()
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        criterion = nn.CrossEntropyLoss()
        for epoch in range(3):
            for xb, yb in loader:
                optimizer.zero_grad()
                criterion(model(xb), yb).backward()
                optimizer.step()
        """,
        """
        xb, yb = next(iter(loader))
        with torch.no_grad():
            acts = torch.relu(model.conv(xb))
        per_step = acts.transpose(1, 2).view(acts.size(0), -1)
        print(per_step.shape, per_step.abs().mean().item())
        """,
    ],
    target=3,
    fix={
        3: """
        xb, yb = next(iter(loader))
        with torch.no_grad():
            acts = torch.relu(model.conv(xb))
        per_step = acts.transpose(1, 2).reshape(acts.size(0), -1)
        print(per_step.shape, per_step.abs().mean().item())
        """,
    },
)

case(
    name="torch_embedding_raw_item_ids",
    library="torch",
    category="data confusion",
    needs_runtime=True,
    exception="IndexError",
    message_contains="index out of range in self",
    diagnosis="Training used item indices from pd.factorize (0..n_items-1); the new interactions "
    "are scored with the raw item_id column, 1000 and up, beyond the Embedding's n_items rows. Map "
    "the new ids through item_index.",
    crash_position="in the cell",
    cells=[
        TORCH_IMPORTS,
        """
        rng = np.random.default_rng(25)
        logs = pd.DataFrame({
            "item_id": rng.integers(1000, 1200, 5000),
            "hour": rng.integers(0, 24, 5000),
        })
        logs["clicked"] = ((logs["item_id"] % 7 == 0) | (logs["hour"] > 20)).astype("float32")
        codes, uniques = pd.factorize(logs["item_id"])
        item_index = {item: i for i, item in enumerate(uniques)}
        n_items = len(uniques)
        ds = TensorDataset(torch.tensor(codes), torch.tensor(logs["hour"].to_numpy()),
                           torch.tensor(logs["clicked"].to_numpy()))
        loader = DataLoader(ds, batch_size=128, shuffle=True)
        """,
        """
        class ClickModel(nn.Module):
            def __init__(self, n_items, dim=8):
                super().__init__()
                self.items = nn.Embedding(n_items, dim)
                self.hours = nn.Embedding(24, 4)
                self.out = nn.Linear(dim + 4, 1)

            def forward(self, item, hour):
                return self.out(torch.cat([self.items(item), self.hours(hour)], dim=1)).squeeze(1)

        model = ClickModel(n_items)
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        criterion = nn.BCEWithLogitsLoss()
        for epoch in range(3):
            for item, hour, clicked in loader:
                optimizer.zero_grad()
                criterion(model(item, hour), clicked).backward()
                optimizer.step()
        """,
        """
        new = pd.DataFrame({"item_id": [1003, 1049, 1111, 1190], "hour": [9, 22, 13, 23]})
        with torch.no_grad():
            p = torch.sigmoid(model(torch.tensor(new["item_id"].to_numpy()),
                                    torch.tensor(new["hour"].to_numpy())))
        new["p_click"] = p.numpy()
        print(new)
        """,
    ],
    target=3,
    fix={
        3: """
        new = pd.DataFrame({"item_id": [1003, 1049, 1111, 1190], "hour": [9, 22, 13, 23]})
        with torch.no_grad():
            p = torch.sigmoid(model(torch.tensor(new["item_id"].map(item_index).to_numpy()),
                                    torch.tensor(new["hour"].to_numpy())))
        new["p_click"] = p.numpy()
        print(new)
        """,
    },
)

DIGITS_TORCH = """
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

digits = load_digits()
X_train, X_test, y_train, y_test = train_test_split(
    (digits.data / 16.0).astype("float32"), digits.target, test_size=0.2, random_state=0)
train_ds = TensorDataset(torch.from_numpy(X_train).view(-1, 1, 8, 8), torch.from_numpy(y_train))
loader = DataLoader(train_ds, batch_size=64, shuffle=True)
print(len(train_ds))
"""

case(
    name="torch_conv_flatten_wrong_size",
    library="torch",
    category="implementation error",
    needs_runtime=False,
    exception="ValueError",
    message_contains="Expected input batch_size (36) to match target batch_size (64)",
    diagnosis="After Conv2d(1, 8, 3) and MaxPool2d(2) an 8x8 image is 8 x 3 x 3 = 72 values, but "
    "forward() flattens with view(-1, 8 * 4 * 4): 64 images become 36 rows of 128, and the loss "
    "finds 36 predictions for 64 targets in the first step. Flatten with x.flatten(1) and "
    "Linear(72, 10).",
    crash_position="in an earlier cell's function",
    cells=[
        TORCH_IMPORTS,
        DIGITS_TORCH,
        """
        class DigitCNN(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(1, 8, kernel_size=3)
                self.pool = nn.MaxPool2d(2)
                self.fc = nn.Linear(8 * 4 * 4, 10)

            def forward(self, x):
                x = self.pool(torch.relu(self.conv(x)))
                x = x.view(-1, 8 * 4 * 4)
                return self.fc(x)

        model = DigitCNN()
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        criterion = nn.CrossEntropyLoss()
        """,
        """
        for epoch in range(3):
            for xb, yb in loader:
                optimizer.zero_grad()
                loss = criterion(model(xb), yb)
                loss.backward()
                optimizer.step()
            print(f"epoch {epoch}  loss {loss.item():.3f}")
        """,
    ],
    target=3,
    fix={
        2: """
        class DigitCNN(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(1, 8, kernel_size=3)
                self.pool = nn.MaxPool2d(2)
                self.fc = nn.Linear(8 * 3 * 3, 10)

            def forward(self, x):
                x = self.pool(torch.relu(self.conv(x)))
                x = x.flatten(1)
                return self.fc(x)

        model = DigitCNN()
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        criterion = nn.CrossEntropyLoss()
        """,
    },
)

case(
    name="torch_train_epoch_fixed_batch_view",
    library="torch",
    category="implementation error",
    needs_runtime=True,
    exception="RuntimeError",
    message_contains="shape '[64, 1, 8, 8]' is invalid for input of size",
    diagnosis="train_epoch(), defined in an earlier cell, reshapes every batch with "
    ".view(BATCH_SIZE, 1, 8, 8); the 1437 training images leave a last batch of 29, so the first "
    "epoch fails at its last batch. Use .view(-1, 1, 8, 8).",
    crash_position="in an earlier cell's function",
    cells=[
        TORCH_IMPORTS,
        """
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split

        BATCH_SIZE = 64
        digits = load_digits()
        X_train, X_test, y_train, y_test = train_test_split(
            (digits.data / 16.0).astype("float32"), digits.target, test_size=0.2, random_state=0)
        loader = DataLoader(TensorDataset(torch.from_numpy(X_train), torch.from_numpy(y_train)),
                            batch_size=BATCH_SIZE, shuffle=True)
        print(len(X_train) % BATCH_SIZE, "images in the last batch")
        """,
        """
        class SmallCNN(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(1, 8, kernel_size=3, padding=1)
                self.fc = nn.Linear(8 * 4 * 4, 10)

            def forward(self, x):
                x = nn.functional.max_pool2d(torch.relu(self.conv(x)), 2)
                return self.fc(x.flatten(1))

        model = SmallCNN()
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        criterion = nn.CrossEntropyLoss()

        def train_epoch(model, loader):
            model.train()
            total = 0.0
            for xb, yb in loader:
                xb = xb.view(BATCH_SIZE, 1, 8, 8)
                optimizer.zero_grad()
                loss = criterion(model(xb), yb)
                loss.backward()
                optimizer.step()
                total += loss.item() * len(yb)
            return total / len(loader.dataset)
        """,
        """
        losses = []
        for epoch in range(3):
            losses.append(train_epoch(model, loader))
            print(f"epoch {epoch}  loss {losses[-1]:.3f}")
        """,
    ],
    target=3,
    fix={
        2: """
        class SmallCNN(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(1, 8, kernel_size=3, padding=1)
                self.fc = nn.Linear(8 * 4 * 4, 10)

            def forward(self, x):
                x = nn.functional.max_pool2d(torch.relu(self.conv(x)), 2)
                return self.fc(x.flatten(1))

        model = SmallCNN()
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        criterion = nn.CrossEntropyLoss()

        def train_epoch(model, loader):
            model.train()
            total = 0.0
            for xb, yb in loader:
                xb = xb.view(-1, 1, 8, 8)
                optimizer.zero_grad()
                loss = criterion(model(xb), yb)
                loss.backward()
                optimizer.step()
                total += loss.item() * len(yb)
            return total / len(loader.dataset)
        """,
    },
)

case(
    name="torch_bce_validation_target_shape",
    library="torch",
    category="implementation error",
    needs_runtime=False,
    exception="ValueError",
    message_contains="must be the same as input size",
    diagnosis="The training loop unsqueezes each label batch to (B, 1) to match the logits; the "
    "validation loss after the loop passes y_val_t as (400,) against logits of (400, 1), which "
    "BCEWithLogitsLoss refuses. Unsqueeze y_val_t too.",
    crash_position="after a loop",
    cells=[
        TORCH_IMPORTS,
        """
        from sklearn.datasets import make_classification

        X, y = make_classification(n_samples=2000, n_features=12, n_informative=6, random_state=26)
        X_t, y_t = torch.tensor(X[:1600], dtype=torch.float32), torch.tensor(y[:1600], dtype=torch.float32)
        X_val_t, y_val_t = torch.tensor(X[1600:], dtype=torch.float32), torch.tensor(y[1600:], dtype=torch.float32)
        loader = DataLoader(TensorDataset(X_t, y_t), batch_size=64, shuffle=True)
        """,
        """
        class Scorer(nn.Module):
            def __init__(self):
                super().__init__()
                self.net = nn.Sequential(nn.Linear(12, 24), nn.ReLU(), nn.Linear(24, 1))

            def forward(self, x):
                return self.net(x)

        model = Scorer()
        optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
        criterion = nn.BCEWithLogitsLoss()
        """,
        """
        for epoch in range(5):
            model.train()
            for xb, yb in loader:
                optimizer.zero_grad()
                loss = criterion(model(xb), yb.unsqueeze(1))
                loss.backward()
                optimizer.step()
        model.eval()
        with torch.no_grad():
            val_loss = criterion(model(X_val_t), y_val_t).item()
        print(f"train loss {loss.item():.3f}  validation loss {val_loss:.3f}")
        """,
    ],
    target=3,
    fix={
        3: """
        for epoch in range(5):
            model.train()
            for xb, yb in loader:
                optimizer.zero_grad()
                loss = criterion(model(xb), yb.unsqueeze(1))
                loss.backward()
                optimizer.step()
        model.eval()
        with torch.no_grad():
            val_loss = criterion(model(X_val_t), y_val_t.unsqueeze(1)).item()
        print(f"train loss {loss.item():.3f}  validation loss {val_loss:.3f}")
        """,
    },
)

case(
    name="torch_lstm_hidden_without_batch_first",
    library="torch",
    category="implementation error",
    needs_runtime=False,
    exception="RuntimeError",
    message_contains="Expected hidden[0] size (1, 30, 32), got [1, 64, 32]",
    diagnosis="The LSTM is built without batch_first while the loader yields (batch, steps, "
    "features) and forward() makes the initial state for x.size(0) = 64 sequences; the LSTM reads "
    "30 as the batch and rejects the hidden state in the first step. Build the LSTM with "
    "batch_first=True.",
    crash_position="in an earlier cell's function",
    cells=[
        TORCH_IMPORTS,
        """
        rng = np.random.default_rng(27)
        seqs = rng.normal(size=(1280, 30, 4)).astype("float32")
        targets = seqs[:, -5:, 0].sum(1).astype("float32")
        loader = DataLoader(TensorDataset(torch.from_numpy(seqs), torch.from_numpy(targets)),
                            batch_size=64, shuffle=True)
        """,
        """
        class SeqRegressor(nn.Module):
            def __init__(self, n_features=4, hidden=32):
                super().__init__()
                self.hidden = hidden
                self.lstm = nn.LSTM(n_features, hidden)
                self.out = nn.Linear(hidden, 1)

            def forward(self, x):
                h0 = torch.zeros(1, x.size(0), self.hidden)
                c0 = torch.zeros(1, x.size(0), self.hidden)
                seq, _ = self.lstm(x, (h0, c0))
                return self.out(seq[:, -1]).squeeze(1)

        model = SeqRegressor()
        optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
        criterion = nn.MSELoss()
        """,
        """
        for epoch in range(2):
            for xb, yb in loader:
                optimizer.zero_grad()
                loss = criterion(model(xb), yb)
                loss.backward()
                optimizer.step()
            print(f"epoch {epoch}  loss {loss.item():.3f}")
        """,
    ],
    target=3,
    fix={
        2: """
        class SeqRegressor(nn.Module):
            def __init__(self, n_features=4, hidden=32):
                super().__init__()
                self.hidden = hidden
                self.lstm = nn.LSTM(n_features, hidden, batch_first=True)
                self.out = nn.Linear(hidden, 1)

            def forward(self, x):
                h0 = torch.zeros(1, x.size(0), self.hidden)
                c0 = torch.zeros(1, x.size(0), self.hidden)
                seq, _ = self.lstm(x, (h0, c0))
                return self.out(seq[:, -1]).squeeze(1)

        model = SeqRegressor()
        optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
        criterion = nn.MSELoss()
        """,
    },
)

case(
    name="torch_standin_float64_readings",
    library="torch",
    category="data confusion",
    needs_runtime=True,
    exception="RuntimeError",
    message_contains="mat1 and mat2 must have the same dtype, but got Double and Float",
    diagnosis="readings is float64 (10M x 2, 160 MB, larger than the replica copies); training "
    "converted its slice to float32, the target's sample goes through torch.from_numpy as Double "
    "and the float32 model refuses it. Convert the sample with .float().",
    crash_position="in the cell",
    stand_in=["readings"],
    cells=[
        TORCH_IMPORTS,
        """
        rng = np.random.default_rng(28)
        readings = rng.normal(size=(10_000_000, 2))  # pressure, flow
        alarm = (readings[:, 0] * readings[:, 1] > 1.0).astype("float32")
        print(f"{readings.nbytes / 2**20:.0f} MiB")
        train_ds = TensorDataset(torch.tensor(readings[:20_000], dtype=torch.float32),
                                 torch.from_numpy(alarm[:20_000]))
        loader = DataLoader(train_ds, batch_size=256, shuffle=True)
        """,
        """
        class AlarmNet(nn.Module):
            def __init__(self):
                super().__init__()
                self.net = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 1))

            def forward(self, x):
                return self.net(x).squeeze(1)

        model = AlarmNet()
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        criterion = nn.BCEWithLogitsLoss()
        for epoch in range(2):
            for xb, yb in loader:
                optimizer.zero_grad()
                criterion(model(xb), yb).backward()
                optimizer.step()
        """,
        """
        idx = torch.from_numpy(rng.integers(0, len(readings), size=4096))
        sample = torch.from_numpy(readings)[idx]
        with torch.no_grad():
            rate = (torch.sigmoid(model(sample)) > 0.5).float().mean().item()
        print(f"predicted alarm rate {rate:.3f}, observed {alarm.mean():.3f}")
        """,
    ],
    target=3,
    fix={
        3: """
        idx = torch.from_numpy(rng.integers(0, len(readings), size=4096))
        sample = torch.from_numpy(readings)[idx].float()
        with torch.no_grad():
            rate = (torch.sigmoid(model(sample)) > 0.5).float().mean().item()
        print(f"predicted alarm rate {rate:.3f}, observed {alarm.mean():.3f}")
        """,
    },
)

case(
    name="torch_standin_grades_one_based",
    library="torch",
    category="data confusion",
    needs_runtime=True,
    exception="IndexError",
    message_contains="is out of bounds",
    diagnosis="grades are recorded 1 to 5; training subtracted 1 for CrossEntropyLoss's 5 classes, "
    "the fine-tuning batch drawn from the whole log does not, and the loss meets target 5. "
    "measurements (10M x 2 float32, 80 MB) and grades (10M int64, 80 MB) are larger than the "
    "replica copies. Subtract 1.",
    crash_position="in the cell",
    stand_in=["measurements", "grades"],
    cells=[
        TORCH_IMPORTS,
        """
        rng = np.random.default_rng(29)
        n = 10_000_000
        grades = rng.integers(1, 6, n)  # quality grade as recorded: 1 (best) to 5
        measurements = (rng.normal(size=(n, 2)) + grades[:, None] * [0.8, -0.5]).astype("float32")
        train_ds = TensorDataset(torch.from_numpy(measurements[:20_000]),
                                 torch.from_numpy(grades[:20_000] - 1))
        loader = DataLoader(train_ds, batch_size=256, shuffle=True)
        """,
        """
        class GradeNet(nn.Module):
            def __init__(self):
                super().__init__()
                self.net = nn.Sequential(nn.Linear(2, 32), nn.ReLU(), nn.Linear(32, 5))

            def forward(self, x):
                return self.net(x)

        model = GradeNet()
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        criterion = nn.CrossEntropyLoss()
        for epoch in range(2):
            for xb, yb in loader:
                optimizer.zero_grad()
                loss = criterion(model(xb), yb)
                loss.backward()
                optimizer.step()
        print(f"loss {loss.item():.3f}")
        """,
        """
        idx = rng.integers(0, n, size=2048)
        xb = torch.from_numpy(measurements[idx])
        yb = torch.from_numpy(grades[idx])
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
        print(f"fine-tuned on a fresh sample, loss {loss.item():.3f}")
        """,
    ],
    target=3,
    fix={
        3: """
        idx = rng.integers(0, n, size=2048)
        xb = torch.from_numpy(measurements[idx])
        yb = torch.from_numpy(grades[idx] - 1)
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
        print(f"fine-tuned on a fresh sample, loss {loss.item():.3f}")
        """,
    },
)


# ---------------------------------------------------------------------------------------------
# Writing.


def cell_id(case_name: str, position: int) -> str:
    return hashlib.sha1(f"replica:{case_name}:{position}".encode()).hexdigest()[:12]


def make_notebook(name: str, cells: list[str], target: int) -> nbformat.NotebookNode:
    nb = new_notebook()
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    for position, source in enumerate(cells):
        count = position + 1 if position < target else None
        nb.cells.append(new_code_cell(source, id=cell_id(name, position), execution_count=count))
    nbformat.validate(nb)
    return nb


def check_case(c: Case) -> None:
    problems = []
    if not 0 <= c.target < len(c.cells):
        problems.append("target out of range")
    if not c.fix or all(c.cells[i] == source for i, source in c.fix.items()):
        problems.append("buggy and fixed are identical")
    if any(i >= len(c.cells) for i in c.fix):
        problems.append("fix edits a missing cell")
    if c.library == "torch" and "CRANE_TEST_REFUSE_FORK" not in c.cells[0]:
        problems.append("torch case without the seam in its first cell")
    if c.library == "tensorflow" and not any(".fit(" in cell for cell in c.cells[:c.target]):
        problems.append("keras case without a fit above the target")
    if problems:
        raise SystemExit(f"{c.name}: " + "; ".join(problems))


def entry(c: Case) -> dict:
    return {
        "case": c.name,
        "library": c.library,
        "target_cell": c.target,
        "exception": c.exception,
        "message_contains": c.message_contains,
        "diagnosis": c.diagnosis,
        "needs_runtime": c.needs_runtime,
        "category": c.category,
        "crash_position": c.crash_position,
        "stand_in": c.stand_in,
    }


def write_case(c: Case, folder: Path) -> None:
    check_case(c)
    fixed_cells = [c.fix.get(i, cell) for i, cell in enumerate(c.cells)]
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    nbformat.write(make_notebook(c.name, c.cells, c.target), folder / "buggy.ipynb")
    nbformat.write(make_notebook(c.name, fixed_cells, c.target), folder / "fixed.ipynb")


def split(names: list[str]) -> tuple[list[str], list[str]]:
    """The sorted case names shuffled with the corpus seed: first half dev, rest held-out."""
    shuffled = sorted(names)
    random.Random(SPLIT_SEED).shuffle(shuffled)
    half = len(shuffled) // 2
    return shuffled[:half], shuffled[half:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flat", type=Path, help="write every case under this folder, one manifest")
    args = parser.parse_args()

    names = [c.name for c in CASES]
    if len(set(names)) != len(names):
        raise SystemExit("duplicate case names")
    by_name = {c.name: c for c in CASES}

    if args.flat:
        args.flat.mkdir(parents=True, exist_ok=True)
        for c in CASES:
            write_case(c, args.flat / c.name)
        manifest = [entry(c) for c in sorted(CASES, key=lambda c: c.name)]
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
            write_case(by_name[name], root / name)
            manifest.append(entry(by_name[name]))
        (root / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"{len(CASES)} cases: {len(dev)} dev, {len(held_out)} held-out")


if __name__ == "__main__":
    main()
