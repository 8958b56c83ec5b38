"""Generate bench/long-cells/unseen8/: twelve more long-cell crash/fix pairs (torch 3, Keras 2,
scikit-learn 3, pandas 2, statsmodels 1, NumPy 1), in the format and with the writing conventions
of build.py. The set was written and verified before crane ran on it, by someone who had not read
crane's code. Not split: the whole folder is measured, by its totals only.

    .venv/bin/python bench/long-cells/build_unseen8.py               # write unseen8/
    .venv/bin/python bench/long-cells/build_unseen8.py --small DIR   # tiny sizes under DIR, to check crashes fast

The cases use build.py's `Case`, `code`, `entry` and `write_case`. Measured run times of the
targets are kept in `unseen8/target_seconds.json` (verify.py --record) and written into the
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

OUT = HERE / "unseen8"
SECONDS_FILE = OUT / "target_seconds.json"

CASES: list[Case] = []


def case(**kwargs) -> None:
    kwargs["cells"] = [code(c) for c in kwargs["cells"]]
    kwargs["fix"] = {i: code(c) for i, c in kwargs.get("fix", {}).items()}
    CASES.append(Case(**kwargs))


def _unindent(text: str) -> str:
    """An edit's text written at the definitions' indentation (8 spaces), moved to the cell's."""
    lines = text.strip("\n").rstrip().split("\n")
    return "\n".join(line[8:] if line.startswith(" " * 8) else line.strip() for line in lines)


def edit(source: str, old: str, new: str) -> str:
    """`source` with its one occurrence of `old` replaced by `new` (a fix is a small edit)."""
    source = code(source)
    old, new = _unindent(old), _unindent(new)
    if source.count(old) != 1:
        raise SystemExit(f"edit: {old!r} occurs {source.count(old)} times")
    return source.replace(old, new)


# ---------------------------------------------------------------------------------------------
# torch

TORCH_ACTIVITY_TARGET = """
EPOCHS = @N@
train_losses = []
for epoch in range(EPOCHS):
    model.train()
    running = 0.0
    for xb, yb in train_loader:
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
        running += loss.item() * len(xb)
    train_losses.append(running / len(train_loader.dataset))
    if (epoch + 1) % 10 == 0:
        print(f"epoch {epoch + 1:3d}  train loss {train_losses[-1]:.4f}")

# per-class accuracy on the held-out subjects
correct_pred = {name: 0 for name in ACTIVITIES}
total_pred = {name: 0 for name in ACTIVITIES}
model.eval()
with torch.no_grad():
    for xb, yb in test_loader:
        preds = model(xb).argmax(dim=1)
        for label, pred in zip(yb, preds):
            if label == pred:
                correct_pred[ACTIVITIES[label]] += 1
            total_pred[ACTIVITIES[label]] += 1

for name, n_correct in correct_pred.items():
    accuracy = 100 * float(n_correct) / total_pred[name]
    print(f"Accuracy for class {name:12s}: {accuracy:.1f} %")
"""

case(
    name="torch_activity_per_class_accuracy",
    library="torch",
    category="value",
    needs_runtime=True,
    exception="ZeroDivisionError",
    message_contains="division by zero",
    diagnosis="The held-out subjects never performed the last activity, so its test count is zero "
              "and the per-class accuracy divides by zero after training.",
    cells=[
        """
        import random
        import numpy as np
        import pandas as pd
        import matplotlib.pyplot as plt
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader, TensorDataset

        torch.set_num_threads(1)
        SEED = 7
        random.seed(SEED)
        np.random.seed(SEED)
        torch.manual_seed(SEED)
        """,
        """
        # Synthetic accelerometer windows: 30 subjects, summary features per 2.5 s window.
        ACTIVITIES = ["walking", "upstairs", "downstairs", "sitting", "standing", "cycling"]
        N_FEATURES = 48
        rng = np.random.default_rng(SEED)
        centers = rng.normal(0, 1.0, size=(len(ACTIVITIES), N_FEATURES))
        frames = []
        for subject in range(1, 31):
            offset = rng.normal(0, 0.4, size=N_FEATURES)
            # the bike protocol was only recorded with the first cohort
            done = ACTIVITIES if subject <= 12 else ACTIVITIES[:-1]
            for activity in done:
                k = ACTIVITIES.index(activity)
                n = int(rng.integers(180, 260))
                X = centers[k] + offset + rng.normal(0, 1.6, size=(n, N_FEATURES))
                frame = pd.DataFrame(X, columns=[f"f{i:02d}" for i in range(N_FEATURES)])
                frames.append(frame.assign(subject=subject, activity=activity))
        df = pd.concat(frames, ignore_index=True)
        df["label"] = df["activity"].map({a: i for i, a in enumerate(ACTIVITIES)})
        print(df.shape)
        df.groupby("activity").subject.nunique()
        """,
        """
        test_subjects = [25, 26, 27, 28, 29, 30]
        train_df = df[~df.subject.isin(test_subjects)]
        test_df = df[df.subject.isin(test_subjects)]
        feature_cols = [c for c in df.columns if c.startswith("f")]
        mu, sd = train_df[feature_cols].mean(), train_df[feature_cols].std()

        def to_tensors(frame):
            X = torch.tensor(((frame[feature_cols] - mu) / sd).values, dtype=torch.float32)
            y = torch.tensor(frame["label"].values, dtype=torch.long)
            return X, y

        X_train, y_train = to_tensors(train_df)
        X_test, y_test = to_tensors(test_df)
        train_loader = DataLoader(TensorDataset(X_train, y_train), batch_size=64, shuffle=True)
        test_loader = DataLoader(TensorDataset(X_test, y_test), batch_size=256)
        print(len(train_loader.dataset), len(test_loader.dataset))
        """,
        """
        class ActivityNet(nn.Module):
            def __init__(self, n_in, n_classes):
                super().__init__()
                self.net = nn.Sequential(
                    nn.Linear(n_in, 256), nn.ReLU(), nn.Dropout(0.2),
                    nn.Linear(256, 256), nn.ReLU(), nn.Dropout(0.2),
                    nn.Linear(256, 128), nn.ReLU(),
                    nn.Linear(128, n_classes),
                )

            def forward(self, x):
                return self.net(x)

        model = ActivityNet(N_FEATURES, len(ACTIVITIES))
        criterion = nn.CrossEntropyLoss()
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        """,
        TORCH_ACTIVITY_TARGET,
    ],
    target=4,
    n=36,
    small=2,
    fix={4: edit(
        TORCH_ACTIVITY_TARGET,
        """
        for name, n_correct in correct_pred.items():
            accuracy = 100 * float(n_correct) / total_pred[name]
            print(f"Accuracy for class {name:12s}: {accuracy:.1f} %")
        """,
        """
        per_class = {}
        for name, n_correct in correct_pred.items():
            if total_pred[name] == 0:
                print(f"Accuracy for class {name:12s}: no test windows")
                continue
            per_class[name] = 100 * float(n_correct) / total_pred[name]
            print(f"Accuracy for class {name:12s}: {per_class[name]:.1f} %")

        plt.plot(range(1, EPOCHS + 1), train_losses)
        plt.xlabel("epoch"); plt.ylabel("train loss")
        print(f"loss {train_losses[0]:.3f} -> {min(train_losses):.3f} over {len(train_losses)} epochs; "
              f"mean per-class accuracy {np.mean(list(per_class.values())):.1f} %")
        """,
    )},
)

CHAR_MODEL_CELL = """
class CharLSTM(nn.Module):
    def __init__(self, vocab_size, emb=48, hidden=160, layers=2):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, emb)
        self.lstm = nn.LSTM(emb, hidden, layers, batch_first=True, dropout=0.1)
        self.head = nn.Linear(hidden, vocab_size)

    def forward(self, x, h=None):
        out, h = self.lstm(self.emb(x), h)
        return self.head(out), h


def sample(model, prime="chop ", length=240, temperature=1.0):
    model.eval()
    chars = list(prime)
    with torch.no_grad():
        out, h = model(encode(prime).unsqueeze(0))
        logits = out[0, -1]
        for _ in range(length):
            probs = torch.softmax(logits / temperature, dim=-1)
            next_id = torch.multinomial(probs, 1).item()
            chars.append(itos[next_id])
            out, h = model(torch.tensor([[next_id]]), h)
            logits = out[0, -1]
    model.train()
    return "".join(chars)


model = CharLSTM(len(vocab))
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
criterion = nn.CrossEntropyLoss()
"""

case(
    name="torch_char_lstm_sampling",
    library="torch",
    category="value",
    needs_runtime=False,
    exception="RuntimeError",
    message_contains="probability tensor contains either",
    diagnosis="Sampling at temperature 0.0 divides the logits by zero; the softmax of infinite "
              "logits is NaN and torch.multinomial refuses it, after training, at the last temperature.",
    cells=[
        """
        import random
        import numpy as np
        import torch
        import torch.nn as nn

        torch.set_num_threads(1)
        random.seed(3)
        torch.manual_seed(3)
        """,
        """
        # A small corpus of recipe steps generated from templates.
        rnd = random.Random(3)
        verbs = ["chop", "stir", "whisk", "fold", "simmer", "bake", "grill", "season", "drain", "slice", "roast", "toss"]
        ingredients = ["onion", "garlic", "tomatoes", "carrots", "basil", "butter", "flour", "eggs", "rice",
                       "lentils", "spinach", "mushrooms", "lemon zest", "cream", "chickpeas", "ginger"]
        tools = ["pan", "pot", "bowl", "oven", "skillet", "tray"]
        times = ["2 minutes", "5 minutes", "10 minutes", "until golden", "until soft", "gently", "well"]

        def make_step():
            form = rnd.random()
            v, i, j = rnd.choice(verbs), rnd.choice(ingredients), rnd.choice(ingredients)
            if form < 0.4:
                return f"{v} the {i} and {j} in a {rnd.choice(tools)} {rnd.choice(times)}."
            if form < 0.7:
                return f"{v} the {i} {rnd.choice(times)}, then add the {j}."
            return f"{v} {i} with {j} and a pinch of salt."

        text = "\\n".join(make_step() for _ in range(12000))
        vocab = sorted(set(text))
        stoi = {c: i for i, c in enumerate(vocab)}
        itos = {i: c for c, i in stoi.items()}

        def encode(s):
            return torch.tensor([stoi[c] for c in s], dtype=torch.long)

        data = encode(text)
        print(len(text), "characters,", len(vocab), "symbols")
        """,
        """
        SEQ_LEN, BATCH_SIZE = 64, 48
        batch_gen = torch.Generator().manual_seed(3)

        def get_batch():
            starts = torch.randint(0, len(data) - SEQ_LEN - 1, (BATCH_SIZE,), generator=batch_gen)
            x = torch.stack([data[s:s + SEQ_LEN] for s in starts])
            y = torch.stack([data[s + 1:s + SEQ_LEN + 1] for s in starts])
            return x, y
        """,
        CHAR_MODEL_CELL,
        """
        EPOCHS, STEPS_PER_EPOCH = @N@, 40
        history = []
        for epoch in range(EPOCHS):
            total = 0.0
            for step in range(STEPS_PER_EPOCH):
                x, y = get_batch()
                logits, _ = model(x)
                loss = criterion(logits.reshape(-1, len(vocab)), y.reshape(-1))
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                total += loss.item()
            history.append(total / STEPS_PER_EPOCH)
            print(f"epoch {epoch + 1:2d}  loss {history[-1]:.3f}")

        for temperature in [1.0, 0.7, 0.4, 0.0]:
            print(f"--- temperature {temperature}")
            print(sample(model, temperature=temperature))
        """,
    ],
    target=4,
    n=11,
    small=1,
    fix={3: edit(
        CHAR_MODEL_CELL,
        """
                    probs = torch.softmax(logits / temperature, dim=-1)
                    next_id = torch.multinomial(probs, 1).item()
        """,
        """
                    if temperature == 0:
                        next_id = int(logits.argmax())
                    else:
                        probs = torch.softmax(logits / temperature, dim=-1)
                        next_id = torch.multinomial(probs, 1).item()
        """,
    )},
)

SENTIMENT_TARGET = """
epochs = @N@
clip = 5
train_losses, val_losses = [], []
for e in range(epochs):
    net.train()
    h = net.init_hidden(batch_size)
    batch_losses = []
    for inputs, labels in train_loader:
        h = tuple([each.data for each in h])
        net.zero_grad()
        output, h = net(inputs, h)
        loss = criterion(output, labels.float())
        loss.backward()
        nn.utils.clip_grad_norm_(net.parameters(), clip)
        optimizer.step()
        batch_losses.append(loss.item())

    net.eval()
    val_h = net.init_hidden(batch_size)
    val_batch = []
    with torch.no_grad():
        for inputs, labels in valid_loader:
            val_h = tuple([each.data for each in val_h])
            output, val_h = net(inputs, val_h)
            val_batch.append(criterion(output, labels.float()).item())
    train_losses.append(np.mean(batch_losses))
    val_losses.append(np.mean(val_batch))
    print(f"Epoch {e + 1}/{epochs}  loss {train_losses[-1]:.4f}  val loss {val_losses[-1]:.4f}")

# test
test_losses, num_correct = [], 0
h = net.init_hidden(batch_size)
net.eval()
with torch.no_grad():
    for inputs, labels in test_loader:
        h = tuple([each.data for each in h])
        output, h = net(inputs, h)
        test_losses.append(criterion(output, labels.float()).item())
        pred = torch.round(torch.sigmoid(output))
        num_correct += pred.eq(labels.float().view_as(pred)).sum().item()

print(f"Test loss: {np.mean(test_losses):.3f}")
print(f"Test accuracy: {num_correct / len(test_loader.dataset):.3f}")
"""

case(
    name="torch_sentiment_rnn_test_loop",
    library="torch",
    category="structure",
    needs_runtime=True,
    exception="RuntimeError",
    message_contains="Expected hidden[0] size",
    diagnosis="The test loader keeps its last, smaller batch while the hidden state was made for "
              "batch_size rows; the LSTM rejects it at the last test batch, after training.",
    cells=[
        """
        import numpy as np
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader, TensorDataset

        torch.set_num_threads(1)
        torch.manual_seed(0)
        np.random.seed(0)
        """,
        """
        # Synthetic tokenised reviews: a few sentiment-bearing words inside a lot of filler.
        VOCAB, SEQ_LEN, N_REVIEWS = 3000, 80, 13_537
        rng = np.random.default_rng(0)
        POSITIVE = np.arange(10, 60)
        NEGATIVE = np.arange(60, 110)
        reviews, labels = [], []
        for _ in range(N_REVIEWS):
            label = int(rng.random() < 0.5)
            length = int(rng.integers(20, 160))
            tokens = rng.zipf(1.3, size=length) % (VOCAB - 110) + 110
            cues = rng.choice(POSITIVE if label else NEGATIVE, size=int(rng.integers(1, 5)))
            noise = rng.choice(NEGATIVE if label else POSITIVE, size=int(rng.integers(0, 3)))
            positions = rng.choice(length, size=len(cues) + len(noise), replace=len(cues) + len(noise) > length)
            tokens[positions] = np.concatenate([cues, noise])
            reviews.append(tokens)
            labels.append(label)

        def pad_features(reviews, seq_length):
            features = np.zeros((len(reviews), seq_length), dtype=np.int64)
            for i, row in enumerate(reviews):
                features[i, -len(row):] = np.array(row)[:seq_length]
            return features

        features = pad_features(reviews, SEQ_LEN)
        encoded_labels = np.array(labels)
        print(features.shape, encoded_labels.mean())
        """,
        """
        split_frac = 0.8
        split_idx = int(len(features) * split_frac)
        train_x, remaining_x = features[:split_idx], features[split_idx:]
        train_y, remaining_y = encoded_labels[:split_idx], encoded_labels[split_idx:]
        test_idx = int(len(remaining_x) * 0.5)
        val_x, test_x = remaining_x[:test_idx], remaining_x[test_idx:]
        val_y, test_y = remaining_y[:test_idx], remaining_y[test_idx:]

        train_data = TensorDataset(torch.from_numpy(train_x), torch.from_numpy(train_y))
        valid_data = TensorDataset(torch.from_numpy(val_x), torch.from_numpy(val_y))
        test_data = TensorDataset(torch.from_numpy(test_x), torch.from_numpy(test_y))

        batch_size = 50
        train_loader = DataLoader(train_data, shuffle=True, batch_size=batch_size, drop_last=True)
        valid_loader = DataLoader(valid_data, shuffle=True, batch_size=batch_size, drop_last=True)
        test_loader = DataLoader(test_data, shuffle=True, batch_size=batch_size)
        print(len(train_data), len(valid_data), len(test_data))
        """,
        """
        class SentimentRNN(nn.Module):
            def __init__(self, vocab_size, output_size, embedding_dim, hidden_dim, n_layers, drop_prob=0.3):
                super().__init__()
                self.output_size = output_size
                self.n_layers = n_layers
                self.hidden_dim = hidden_dim
                self.embedding = nn.Embedding(vocab_size, embedding_dim)
                self.lstm = nn.LSTM(embedding_dim, hidden_dim, n_layers, dropout=drop_prob, batch_first=True)
                self.dropout = nn.Dropout(0.3)
                self.fc = nn.Linear(hidden_dim, output_size)

            def forward(self, x, hidden):
                embeds = self.embedding(x)
                lstm_out, hidden = self.lstm(embeds, hidden)
                out = self.fc(self.dropout(lstm_out[:, -1, :]))
                return out.squeeze(1), hidden

            def init_hidden(self, batch_size):
                weight = next(self.parameters()).data
                return (weight.new_zeros(self.n_layers, batch_size, self.hidden_dim),
                        weight.new_zeros(self.n_layers, batch_size, self.hidden_dim))


        net = SentimentRNN(VOCAB, 1, embedding_dim=64, hidden_dim=96, n_layers=2)
        criterion = nn.BCEWithLogitsLoss()
        optimizer = torch.optim.Adam(net.parameters(), lr=0.002)
        print(net)
        """,
        SENTIMENT_TARGET,
    ],
    target=4,
    n=3,
    small=1,
    fix={4: edit(
        SENTIMENT_TARGET,
        """
            for inputs, labels in test_loader:
                h = tuple([each.data for each in h])
        """,
        """
            for inputs, labels in test_loader:
                h = net.init_hidden(inputs.size(0))
        """,
    )},
)

# ---------------------------------------------------------------------------------------------
# Keras

KERAS_ENERGY_TARGET = """
keras.utils.set_random_seed(42)
model = keras.Sequential([
    keras.Input(shape=(X_train.shape[1],)),
    layers.Dense(128, activation="relu"),
    layers.Dense(64, activation="relu"),
    layers.Dense(32, activation="relu"),
    layers.Dense(1),
])
model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="mse", metrics=["mae"])
history = model.fit(X_train, y_train, validation_split=0.2, epochs=EPOCHS, batch_size=64, verbose=0)
print(f"final val_loss {history.history['val_loss'][-1]:.3f}")

fig, axes = plt.subplots(1, 2, figsize=(11, 4))
axes[0].plot(history.history["loss"], label="train")
axes[0].plot(history.history["val_loss"], label="validation")
axes[0].set_title("MSE")
axes[1].plot(history.history["mean_absolute_error"], label="train")
axes[1].plot(history.history["val_mean_absolute_error"], label="validation")
axes[1].set_title("MAE")
for ax in axes:
    ax.set_xlabel("epoch")
    ax.legend()
"""

case(
    name="keras_energy_history_plot",
    library="keras",
    category="structure",
    needs_runtime=False,
    exception="KeyError",
    message_contains="mean_absolute_error",
    diagnosis="The model was compiled with metrics=['mae'], so the history holds 'mae' and "
              "'val_mae'; the plot after training asks for 'mean_absolute_error'.",
    cells=[
        """
        import os
        os.environ["KERAS_BACKEND"] = "tensorflow"
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
        os.environ["TF_NUM_INTRAOP_THREADS"] = "1"
        os.environ["TF_NUM_INTEROP_THREADS"] = "1"

        import numpy as np
        import pandas as pd
        import matplotlib.pyplot as plt
        import keras
        from keras import layers
        from sklearn.model_selection import train_test_split
        from sklearn.preprocessing import StandardScaler
        """,
        """
        # Hourly building energy use from weather and occupancy (synthetic).
        rng = np.random.default_rng(21)
        n = 9000
        df = pd.DataFrame({
            "temp_out": rng.normal(12, 8, n),
            "humidity": rng.uniform(20, 95, n),
            "wind": rng.gamma(2.0, 2.0, n),
            "solar": np.clip(rng.normal(300, 200, n), 0, None),
            "occupancy": rng.integers(0, 400, n),
            "hour": rng.integers(0, 24, n),
            "weekday": rng.integers(0, 7, n),
            "floor_area": rng.choice([1200, 2500, 4000, 8000], n),
        })
        df["hour_sin"] = np.sin(2 * np.pi * df.hour / 24)
        df["hour_cos"] = np.cos(2 * np.pi * df.hour / 24)
        df["kwh"] = (0.02 * df.floor_area + 3.5 * np.abs(df.temp_out - 18) + 0.15 * df.occupancy
                     - 0.01 * df.solar + 8 * df.hour_sin * (df.weekday < 5) + rng.normal(0, 6, n))
        df.describe().T
        """,
        """
        features = ["temp_out", "humidity", "wind", "solar", "occupancy", "hour_sin", "hour_cos", "weekday", "floor_area"]
        X_train, X_test, y_train, y_test = train_test_split(df[features].values, df["kwh"].values,
                                                            test_size=0.15, random_state=21)
        scaler = StandardScaler().fit(X_train)
        X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
        EPOCHS = @N@
        print(X_train.shape, X_test.shape)
        """,
        KERAS_ENERGY_TARGET,
        """
        test_mse, test_mae = model.evaluate(X_test, y_test, verbose=0)
        print(f"test MAE {test_mae:.2f} kWh")
        """,
    ],
    target=3,
    n=145,
    small=2,
    fix={3: edit(
        KERAS_ENERGY_TARGET,
        """
        axes[1].plot(history.history["mean_absolute_error"], label="train")
        axes[1].plot(history.history["val_mean_absolute_error"], label="validation")
        axes[1].set_title("MAE")
        for ax in axes:
            ax.set_xlabel("epoch")
            ax.legend()
        """,
        """
        axes[1].plot(history.history["mae"], label="train")
        axes[1].plot(history.history["val_mae"], label="validation")
        axes[1].set_title("MAE")
        for ax in axes:
            ax.set_xlabel("epoch")
            ax.legend()
        best_epoch = int(np.argmin(history.history["val_mae"])) + 1
        print(f"best val MAE {min(history.history['val_mae']):.2f} at epoch {best_epoch} of {len(history.history['val_mae'])}")
        """,
    )},
)

KERAS_CHURN_TARGET = """
keras.utils.set_random_seed(5)
model = keras.Sequential([
    keras.Input(shape=(X_train.shape[1],)),
    layers.Dense(96, activation="relu"),
    layers.Dropout(0.3),
    layers.Dense(48, activation="relu"),
    layers.Dropout(0.3),
    layers.Dense(1, activation="sigmoid"),
])
model.compile(optimizer="adam", loss="binary_crossentropy",
              metrics=["accuracy", keras.metrics.AUC(name="auc")])
history = model.fit(X_train, y_train, validation_data=(X_val, y_val), epochs=@N@, batch_size=32,
                    class_weight=class_weight, verbose=0)
print(f"best val AUC {max(history.history['val_auc']):.3f}")

test_loss = model.evaluate(X_test, y_test, verbose=0)
print(f"Test loss: {test_loss:.4f}")
"""

case(
    name="keras_churn_evaluate",
    library="keras",
    category="structure",
    needs_runtime=False,
    exception="TypeError",
    message_contains="unsupported format string passed to list.__format__",
    diagnosis="With metrics compiled, model.evaluate returns a list [loss, accuracy, auc]; "
              "formatting it with :.4f after training raises TypeError.",
    cells=[
        """
        import os
        os.environ["KERAS_BACKEND"] = "tensorflow"
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
        os.environ["TF_NUM_INTRAOP_THREADS"] = "1"
        os.environ["TF_NUM_INTEROP_THREADS"] = "1"

        import numpy as np
        import pandas as pd
        import keras
        from keras import layers
        from sklearn.compose import ColumnTransformer
        from sklearn.model_selection import train_test_split
        from sklearn.preprocessing import OneHotEncoder, StandardScaler
        """,
        """
        # Telecom churn, synthetic.
        rng = np.random.default_rng(8)
        n = 12000
        customers = pd.DataFrame({
            "tenure_months": rng.integers(1, 72, n),
            "monthly_charges": rng.uniform(18, 120, n).round(2),
            "support_calls": rng.poisson(1.2, n),
            "data_gb": rng.gamma(2.0, 6.0, n).round(1),
            "contract": rng.choice(["month-to-month", "one_year", "two_year"], n, p=[0.55, 0.25, 0.2]),
            "payment": rng.choice(["card", "bank", "electronic_check", "mailed_check"], n),
            "internet": rng.choice(["dsl", "fiber", "none"], n, p=[0.4, 0.45, 0.15]),
        })
        customers["total_charges"] = (customers.tenure_months * customers.monthly_charges * rng.uniform(0.9, 1.05, n)).round(2)
        logit = (-1.2 - 0.04 * customers.tenure_months + 0.015 * customers.monthly_charges
                 + 0.35 * customers.support_calls + 1.1 * (customers.contract == "month-to-month")
                 + 0.5 * (customers.payment == "electronic_check") + 0.4 * (customers.internet == "fiber"))
        customers["churn"] = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
        customers.churn.mean()
        """,
        """
        numeric = ["tenure_months", "monthly_charges", "support_calls", "data_gb", "total_charges"]
        categorical = ["contract", "payment", "internet"]
        pre = ColumnTransformer([("num", StandardScaler(), numeric),
                                 ("cat", OneHotEncoder(sparse_output=False), categorical)])
        train_df, test_df = train_test_split(customers, test_size=0.2, stratify=customers.churn, random_state=8)
        train_df, val_df = train_test_split(train_df, test_size=0.15, stratify=train_df.churn, random_state=8)
        X_train = pre.fit_transform(train_df).astype("float32")
        X_val = pre.transform(val_df).astype("float32")
        X_test = pre.transform(test_df).astype("float32")
        y_train, y_val, y_test = train_df.churn.values, val_df.churn.values, test_df.churn.values
        pos = y_train.mean()
        class_weight = {0: 0.5 / (1 - pos), 1: 0.5 / pos}
        print(X_train.shape, class_weight)
        """,
        KERAS_CHURN_TARGET,
    ],
    target=3,
    n=62,
    small=1,
    fix={3: edit(
        KERAS_CHURN_TARGET,
        """
        test_loss = model.evaluate(X_test, y_test, verbose=0)
        print(f"Test loss: {test_loss:.4f}")
        """,
        """
        test_loss, test_acc, test_auc = model.evaluate(X_test, y_test, verbose=0)
        print(f"Test loss: {test_loss:.4f}  accuracy: {test_acc:.3f}  AUC: {test_auc:.3f}")
        """,
    )},
)

# ---------------------------------------------------------------------------------------------
# scikit-learn

LOAN_TARGET = """
param_grid = {
    "n_estimators": [80, 160],
    "learning_rate": [0.05, 0.1],
    "max_depth": [2, 3, 4],
}
search = GridSearchCV(GradientBoostingClassifier(subsample=0.8, random_state=0), param_grid,
                      scoring="roc_auc", cv=3, n_jobs=1)
search.fit(X_train, y_train)
print("best params:", search.best_params_)
print(f"best CV AUC: {search.best_score_:.4f}")

test_proba = search.predict_proba(X_test)[:, 1]
print(f"test AUC: {roc_auc_score(y_test, test_proba):.4f}")
"""

case(
    name="sklearn_loan_default_grid",
    library="scikit-learn",
    category="structure",
    needs_runtime=True,
    exception="ValueError",
    message_contains="The feature names should match those that were passed during fit",
    diagnosis="get_dummies was applied to train and test separately; the test set lacks a purpose "
              "category, so its columns differ and the refitted search refuses it after the search.",
    cells=[
        """
        import numpy as np
        import pandas as pd
        from threadpoolctl import threadpool_limits
        from sklearn.ensemble import GradientBoostingClassifier
        from sklearn.metrics import roc_auc_score
        from sklearn.model_selection import GridSearchCV

        threadpool_limits(1)
        """,
        """
        def make_loans(n, seed, purposes, p):
            rng = np.random.default_rng(seed)
            df = pd.DataFrame({
                "loan_amount": rng.lognormal(9.3, 0.6, n).round(-1),
                "annual_income": rng.lognormal(10.9, 0.5, n).round(-2),
                "term": rng.choice([36, 60], n, p=[0.7, 0.3]),
                "credit_score": rng.normal(690, 55, n).clip(300, 850).round(),
                "open_accounts": rng.poisson(8, n),
                "delinquencies": rng.poisson(0.3, n),
                "purpose": rng.choice(purposes, n, p=p),
                "home_ownership": rng.choice(["rent", "mortgage", "own"], n, p=[0.45, 0.4, 0.15]),
                "grade": rng.choice(list("ABCDEFG"), n, p=[0.18, 0.28, 0.25, 0.15, 0.08, 0.04, 0.02]),
            })
            risk = (-2.5 + 1.2 * df.loan_amount / df.annual_income - 0.006 * (df.credit_score - 690)
                    + 0.4 * df.delinquencies + 0.3 * (df.term == 60)
                    + df.grade.map(dict(zip("ABCDEFG", [0, 0.3, 0.6, 0.9, 1.2, 1.5, 1.8]))))
            df["default"] = (rng.random(n) < 1 / (1 + np.exp(-risk))).astype(int)
            return df

        PURPOSES = ["debt_consolidation", "credit_card", "home_improvement", "car", "medical", "small_business", "wedding"]
        train = make_loans(@N@, 1, PURPOSES, [0.45, 0.2, 0.1, 0.08, 0.07, 0.06, 0.04])
        # this quarter's applications: the wedding loan product was discontinued
        test = make_loans(2500, 2, PURPOSES[:-1], [0.47, 0.21, 0.1, 0.08, 0.08, 0.06])
        train.shape, test.shape, train["default"].mean()
        """,
        """
        cat_cols = ["purpose", "home_ownership", "grade"]
        X_train = pd.get_dummies(train.drop(columns="default"), columns=cat_cols, dtype=int)
        X_test = pd.get_dummies(test.drop(columns="default"), columns=cat_cols, dtype=int)
        y_train, y_test = train["default"], test["default"]
        X_train.shape, X_test.shape
        """,
        LOAN_TARGET,
    ],
    target=3,
    n=13500,
    small=400,
    fix={3: edit(
        LOAN_TARGET,
        """
        test_proba = search.predict_proba(X_test)[:, 1]
        """,
        """
        X_test = X_test.reindex(columns=X_train.columns, fill_value=0)
        test_proba = search.predict_proba(X_test)[:, 1]
        """,
    )},
)

CREDIT_FEATURES_CELL = """
def add_features(df):
    out = df.copy()
    out["debt_to_income"] = out["debt"] / out["income"]
    out["loan_to_income"] = out["loan_amount"] / out["income"]
    out["log_income"] = np.log1p(out["income"])
    return out.drop(columns=["income", "debt"])

X_train = add_features(applications.drop(columns="approved"))
y_train = applications["approved"]
X_new = add_features(new_applications.drop(columns="approved"))
y_new = new_applications["approved"]
X_train.describe().T
"""

case(
    name="sklearn_credit_svc_search",
    library="scikit-learn",
    category="value",
    needs_runtime=True,
    exception="ValueError",
    message_contains="Input X contains infinity",
    diagnosis="A new applicant has zero income, so the engineered ratio features are infinite; "
              "the searched pipeline's scaler refuses the new applications after the search.",
    cells=[
        """
        import numpy as np
        import pandas as pd
        from threadpoolctl import threadpool_limits
        from scipy.stats import loguniform
        from sklearn.metrics import classification_report, roc_auc_score
        from sklearn.model_selection import RandomizedSearchCV, StratifiedKFold
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler
        from sklearn.svm import SVC

        threadpool_limits(1)
        """,
        """
        def simulate(n, seed, student_share=0.0):
            rng = np.random.default_rng(seed)
            income = rng.lognormal(10.6, 0.55, n).round(-2)
            students = rng.random(n) < student_share
            income[students] = rng.choice([0.0, 4800.0, 7200.0], students.sum())
            df = pd.DataFrame({
                "age": rng.integers(19, 75, n),
                "income": income,
                "debt": rng.gamma(2.0, 6000, n).round(-1),
                "loan_amount": rng.lognormal(9.0, 0.7, n).round(-1),
                "years_employed": rng.integers(0, 35, n),
                "prior_defaults": rng.poisson(0.2, n),
                "credit_lines": rng.poisson(5, n),
            })
            score = (1.5 - 2.5 * df.debt / (df.income + 1e4) - 1.2 * df.loan_amount / (df.income + 1e4)
                     + 0.03 * df.years_employed - 0.9 * df.prior_defaults + rng.normal(0, 0.7, n))
            df["approved"] = (score > 0).astype(int)
            return df

        applications = simulate(@N@, 11)
        # this week's applications, now also from the student credit programme
        new_applications = simulate(600, 12, student_share=0.05)
        applications.approved.mean(), (new_applications.income == 0).sum()
        """,
        CREDIT_FEATURES_CELL,
        """
        pipe = make_pipeline(StandardScaler(), SVC(kernel="rbf", class_weight="balanced"))
        param_distributions = {"svc__C": loguniform(1e-1, 1e2), "svc__gamma": loguniform(1e-3, 1e0)}
        search = RandomizedSearchCV(pipe, param_distributions, n_iter=20, scoring="roc_auc",
                                    cv=StratifiedKFold(3, shuffle=True, random_state=0),
                                    random_state=0, n_jobs=1)
        search.fit(X_train, y_train)
        print(search.best_params_, round(search.best_score_, 4))
        results = pd.DataFrame(search.cv_results_).sort_values("rank_test_score")
        print(results[["param_svc__C", "param_svc__gamma", "mean_test_score", "std_test_score"]].head())

        new_scores = search.decision_function(X_new)
        print(f"AUC on the new applications: {roc_auc_score(y_new, new_scores):.4f}")
        print(classification_report(y_new, search.predict(X_new)))
        """,
    ],
    target=3,
    n=8000,
    small=300,
    fix={2: edit(
        CREDIT_FEATURES_CELL,
        """
        def add_features(df):
            out = df.copy()
        """,
        """
        def add_features(df):
            out = df.copy()
            out["income"] = out["income"].clip(lower=1000)
        """,
    )},
)

MODELS_TARGET = """
scoring = ["accuracy", "f1", "roc_auc"]
cv = StratifiedKFold(n_splits=5, shuffle=True, random_state=0)
cv_results = {}
for name, estimator in models.items():
    cv_results[name] = cross_validate(estimator, X, y, cv=cv, scoring=scoring, n_jobs=1)
    print(f"{name:14s} AUC {cv_results[name]['test_roc_auc'].mean():.4f}  "
          f"fit {cv_results[name]['fit_time'].sum():.1f}s")

summary = pd.DataFrame({name: {metric: res[f"test_{metric}"].mean() for metric in scoring}
                        for name, res in cv_results.items()}).T.sort_values("roc_auc", ascending=False)
print(summary.round(4))

forest_importances = np.mean([est.feature_importances_ for est in cv_results["random_forest"]["estimator"]], axis=0)
pd.Series(forest_importances, index=feature_names).sort_values().tail(15).plot.barh(figsize=(6, 5))
"""

case(
    name="sklearn_model_comparison_cv",
    library="scikit-learn",
    category="structure",
    needs_runtime=False,
    exception="KeyError",
    message_contains="estimator",
    diagnosis="cross_validate was called without return_estimator=True, so its result has no "
              "'estimator' key; reading the forest's fold models after the comparison fails.",
    cells=[
        """
        import numpy as np
        import pandas as pd
        import matplotlib.pyplot as plt
        from threadpoolctl import threadpool_limits
        from sklearn.datasets import make_classification
        from sklearn.ensemble import ExtraTreesClassifier, GradientBoostingClassifier, RandomForestClassifier
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import StratifiedKFold, cross_validate
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        threadpool_limits(1)
        """,
        """
        X, y = make_classification(n_samples=@N@, n_features=30, n_informative=12, n_redundant=6,
                                   weights=[0.7, 0.3], class_sep=0.8, flip_y=0.03, random_state=42)
        feature_names = [f"sensor_{i:02d}" for i in range(X.shape[1])]
        X.shape, y.mean()
        """,
        """
        models = {
            "logreg": make_pipeline(StandardScaler(), LogisticRegression(C=0.5, max_iter=2000)),
            "random_forest": RandomForestClassifier(n_estimators=150, min_samples_leaf=2, random_state=0),
            "extra_trees": ExtraTreesClassifier(n_estimators=150, min_samples_leaf=2, random_state=0),
            "grad_boost": GradientBoostingClassifier(n_estimators=120, max_depth=3, random_state=0),
        }
        """,
        MODELS_TARGET,
        """
        plt.tight_layout()
        print("best model:", summary.index[0])
        """,
    ],
    target=3,
    n=6500,
    small=300,
    fix={3: edit(
        MODELS_TARGET,
        """
            cv_results[name] = cross_validate(estimator, X, y, cv=cv, scoring=scoring, n_jobs=1)
        """,
        """
            cv_results[name] = cross_validate(estimator, X, y, cv=cv, scoring=scoring, n_jobs=1,
                                              return_estimator=True)
        """,
    )},
)

# ---------------------------------------------------------------------------------------------
# pandas

LEAD_TARGET = """
rows = []
for failure in failures.itertuples():
    signal = readings.loc[readings.sensor == failure.sensor].set_index("ts")["vibration"]
    # robust vibration band over the last hour
    band = signal.rolling("60min", min_periods=30).apply(
        lambda w: np.percentile(w, 95) - np.percentile(w, 5), raw=True)
    baseline = band.loc[: signal.index[0] + pd.Timedelta("1D")].median()
    before = band.loc[: failure.failed_at]
    alarms = before[before > 1.5 * baseline]
    first_alarm = alarms.index[0]
    rows.append({
        "sensor": failure.sensor,
        "failed_at": failure.failed_at,
        "first_alarm": first_alarm,
        "lead_hours": (failure.failed_at - first_alarm) / pd.Timedelta("1h"),
    })
    print(f"{failure.sensor}: alarm {(failure.failed_at - first_alarm) / pd.Timedelta('1h'):.1f} h ahead")

lead = pd.DataFrame(rows)
print(f"median lead time {lead.lead_hours.median():.1f} h")
"""

case(
    name="pandas_sensor_alarm_lead_time",
    library="pandas",
    category="value",
    needs_runtime=True,
    exception="IndexError",
    message_contains="out of bounds",
    diagnosis="The last failure in the log gave no vibration warning, so no band value exceeds the "
              "threshold and alarms.index[0] is out of bounds in the loop's last iteration.",
    cells=[
        """
        import os
        os.environ["OMP_NUM_THREADS"] = "1"
        os.environ["OPENBLAS_NUM_THREADS"] = "1"
        os.environ["MKL_NUM_THREADS"] = "1"
        import numpy as np
        import pandas as pd
        """,
        """
        # One week of per-minute vibration readings for a fleet of pump sensors (synthetic).
        N_SENSORS = @N@
        rng = np.random.default_rng(4)
        index = pd.date_range("2024-03-04", periods=7 * 24 * 60, freq="min")
        sensors = [f"P{i:03d}" for i in range(1, N_SENSORS + 1)]
        failure_mode = {s: "bearing_wear" for s in sensors}
        failure_mode[sensors[-1]] = "electrical"  # the newest pump failed on its motor
        frames, log = [], []
        for s in sensors:
            level = rng.uniform(0.8, 1.2)
            noise = rng.normal(0, 0.25 * level, len(index))
            failed_at = index[0] + pd.Timedelta(hours=float(rng.uniform(72, 160)))
            if failure_mode[s] == "bearing_wear":
                ramp_hours = rng.uniform(8, 30)
                t = (failed_at - index) / pd.Timedelta("1h")
                growth = np.clip(1 - t / ramp_hours, 0, None)
                noise = noise * (1 + 2.5 * growth * (t > 0))
            frames.append(pd.DataFrame({"sensor": s, "ts": index, "vibration": level + noise}))
            log.append({"sensor": s, "failed_at": failed_at.floor("min"), "mode": failure_mode[s]})
        readings = pd.concat(frames, ignore_index=True)
        failures = pd.DataFrame(log)
        readings.shape, failures["mode"].value_counts()
        """,
        LEAD_TARGET,
    ],
    target=2,
    n=58,
    small=3,
    fix={2: edit(
        LEAD_TARGET,
        """
            first_alarm = alarms.index[0]
            rows.append({
        """,
        """
            if alarms.empty:
                print(f"{failure.sensor}: no alarm before the failure")
                rows.append({"sensor": failure.sensor, "failed_at": failure.failed_at,
                             "first_alarm": pd.NaT, "lead_hours": np.nan})
                continue
            first_alarm = alarms.index[0]
            rows.append({
        """,
    ).replace(
        'print(f"median lead time {lead.lead_hours.median():.1f} h")',
        'print(f"detected {lead.lead_hours.notna().sum()} of {len(lead)} failures, "\n'
        '      f"median lead time {lead.lead_hours.median():.1f} h")\n'
        'lead.describe()',
    )},
)

CHUNK_TARGET = """
stats = []
for i, chunk in enumerate(pd.read_csv(CSV_PATH, chunksize=CHUNK_SIZE)):
    chunk["ts"] = pd.to_datetime(chunk["ts"], format="%Y-%m-%d %H:%M:%S")
    chunk["category"] = chunk["category"].str.strip().str.lower()
    chunk["sku_family"] = chunk["sku"].str.extract(r"^([A-Z]+)-", expand=False)
    chunk["line_total"] = chunk["quantity"] * chunk["unit_price"]
    chunk = chunk.sort_values(["customer_id", "ts"])
    # a new visit starts after 30 minutes without a purchase
    gap = chunk.groupby("customer_id")["ts"].diff()
    chunk["visit"] = (gap.isna() | (gap > pd.Timedelta("30min"))).cumsum()
    visits = chunk.groupby("visit").agg(customer_id=("customer_id", "first"),
                                        basket=("line_total", "sum"),
                                        items=("quantity", "sum"),
                                        families=("sku_family", lambda s: s.nunique()))
    stats.append({
        "chunk": i,
        "rows": len(chunk),
        "revenue": chunk["line_total"].sum(),
        "visits": len(visits),
        "mean_basket": visits["basket"].mean(),
        "multi_family_share": (visits["families"] > 1).mean(),
    })

by_chunk = pd.concat(stats)
print(by_chunk[["revenue", "visits"]].sum())
"""

case(
    name="pandas_transactions_chunks",
    library="pandas",
    category="structure",
    needs_runtime=False,
    exception="TypeError",
    message_contains="cannot concatenate object of type",
    diagnosis="The chunk loop collects plain dicts; pd.concat after the loop only takes Series and "
              "DataFrames and raises TypeError.",
    cells=[
        """
        import os
        os.environ["OMP_NUM_THREADS"] = "1"
        os.environ["OPENBLAS_NUM_THREADS"] = "1"
        import tempfile
        from pathlib import Path
        import numpy as np
        import pandas as pd
        """,
        """
        # Write a month of till transactions to disk, as the export would arrive.
        rng = np.random.default_rng(17)
        n = @N@
        families = np.array(["BAK", "DAIRY", "FRUIT", "VEG", "MEAT", "DRINK", "SNACK", "HOME"])
        fam = rng.integers(0, len(families), n)
        start = np.datetime64("2024-05-01T07:00:00")
        offsets = np.sort(rng.integers(0, 30 * 24 * 3600, n)).astype("timedelta64[s]")
        tx = pd.DataFrame({
            "tx_id": np.arange(n),
            "ts": (start + offsets).astype(str),
            "customer_id": rng.integers(1, 6000, n),
            "sku": [f"{families[f]}-{k:05d}" for f, k in zip(fam, rng.integers(0, 3000, n))],
            "category": pd.Series(families[fam]).map(lambda s: f" {s.title()} "),
            "quantity": rng.integers(1, 6, n),
            "unit_price": rng.gamma(2.0, 2.5, n).round(2),
        })
        tx["ts"] = tx["ts"].str.replace("T", " ")
        DATA_DIR = Path(tempfile.gettempdir()) / "till_export"
        DATA_DIR.mkdir(exist_ok=True)
        CSV_PATH = DATA_DIR / "transactions.csv"
        tx.to_csv(CSV_PATH, index=False)
        CHUNK_SIZE = 25_000
        del tx
        print(CSV_PATH.stat().st_size // 1_000_000, "MB")
        """,
        CHUNK_TARGET,
    ],
    target=2,
    n=1_650_000,
    small=30_000,
    fix={2: edit(
        CHUNK_TARGET,
        """
        by_chunk = pd.concat(stats)
        print(by_chunk[["revenue", "visits"]].sum())
        """,
        """
        by_chunk = pd.DataFrame(stats)
        print(by_chunk[["revenue", "visits"]].sum())
        print(f"{by_chunk.rows.sum()} rows in {len(by_chunk)} chunks, "
              f"mean basket {np.average(by_chunk.mean_basket, weights=by_chunk.visits):.2f}")
        """,
    )},
)

# ---------------------------------------------------------------------------------------------
# statsmodels

HW_TARGET = """
HORIZON = 28
results, forecasts = [], {}
for store in panel.columns:
    y = panel[store]
    train, test = y.iloc[:-HORIZON], y.iloc[-HORIZON:]
    fit = ExponentialSmoothing(train, trend="add", seasonal="mul", seasonal_periods=7,
                               initialization_method="estimated").fit(optimized=True)
    forecast = fit.forecast(HORIZON)
    forecasts[store] = forecast
    results.append({
        "store": store,
        "mae": np.mean(np.abs(test.values - forecast.values)),
        "wape": np.abs(test.values - forecast.values).sum() / test.values.sum(),
        "alpha": fit.params["smoothing_level"],
    })

errors = pd.DataFrame(results).set_index("store")
print(errors.describe().round(3))
"""

case(
    name="statsmodels_store_holt_winters",
    library="statsmodels",
    category="value",
    needs_runtime=True,
    exception="ValueError",
    message_contains="must be strictly positive",
    diagnosis="The newest store opened late, so the pivot filled its early days with 0; the "
              "multiplicative Holt-Winters model refuses it at the loop's last store.",
    cells=[
        """
        import os
        os.environ["OMP_NUM_THREADS"] = "1"
        os.environ["OPENBLAS_NUM_THREADS"] = "1"
        import warnings
        import numpy as np
        import pandas as pd
        from statsmodels.tsa.holtwinters import ExponentialSmoothing

        warnings.filterwarnings("ignore")
        """,
        """
        # Daily unit sales per store; stores are numbered in the order they opened.
        N_STORES = @N@
        rng = np.random.default_rng(30)
        dates = pd.date_range("2022-01-03", periods=728, freq="D")
        weekly = np.array([0.9, 0.85, 0.9, 1.0, 1.2, 1.4, 0.75])
        records = []
        for store in range(1, N_STORES + 1):
            opened = dates[0] if store < N_STORES else dates[-80]
            base = rng.uniform(40, 160)
            trend = rng.normal(0.0005, 0.0004)
            open_days = dates[dates >= opened]
            t = np.arange(len(open_days))
            mean = base * weekly[open_days.dayofweek] * (1 + trend * t)
            units = rng.poisson(mean)
            records.append(pd.DataFrame({"store": f"S{store:03d}", "date": open_days, "units": units}))
        sales = pd.concat(records, ignore_index=True)
        panel = sales.pivot_table(index="date", columns="store", values="units", fill_value=0)
        panel = panel.asfreq("D")
        panel.shape
        """,
        HW_TARGET,
        """
        worst = errors.sort_values("wape").tail(5)
        worst
        """,
    ],
    target=2,
    n=350,
    small=3,
    fix={2: edit(
        HW_TARGET,
        """
            y = panel[store]
        """,
        """
            y = panel[store]
            y = y.loc[y.ne(0).idxmax():]  # start at the store's first trading day
        """,
    ).replace(
        'print(errors.describe().round(3))',
        'print(errors.describe().round(3))\n'
        'print(f"fleet WAPE {errors.wape.mean():.3f} over {len(errors)} stores, "\n'
        '      f"{sum(len(f) for f in forecasts.values())} forecast days")',
    )},
)

# ---------------------------------------------------------------------------------------------
# NumPy

ALS_TARGET = """
N_ITERS = @N@
rng = np.random.default_rng(0)
U = rng.normal(0, 0.1, (n_users, K))
V = rng.normal(0, 0.1, (n_items, K))
reg = LAMBDA * np.eye(K)
train_rmse = []
for it in range(N_ITERS):
    for u in range(n_users):
        idx = user_items[u]
        if len(idx) == 0:
            continue
        Vu = V[idx]
        U[u] = np.linalg.solve(Vu.T @ Vu + reg * len(idx), Vu.T @ user_ratings[u])
    for i in range(n_items):
        idx = item_users[i]
        if len(idx) == 0:
            continue
        Ui = U[idx]
        V[i] = np.linalg.solve(Ui.T @ Ui + reg * len(idx), Ui.T @ item_ratings[i])
    pred = np.sum(U[tr_u] * V[tr_i], axis=1)
    train_rmse.append(np.sqrt(np.mean((pred - tr_r) ** 2)))
    print(f"iter {it + 1:2d}  train RMSE {train_rmse[-1]:.4f}")

test_pred = np.clip(np.sum(U[test.user_id.values] * V[test.item_id.values], axis=1), 1, 5)
test_rmse = np.sqrt(np.mean((test_pred - test.rating.values) ** 2))
print(f"test RMSE {test_rmse:.4f}")
"""

case(
    name="numpy_als_recommender",
    library="numpy",
    category="value",
    needs_runtime=True,
    exception="IndexError",
    message_contains="is out of bounds for axis 0",
    diagnosis="The user count comes from the training period; the time-based test period holds "
              "users who signed up later, whose ids index past the factor matrix after training.",
    cells=[
        """
        import os
        os.environ["OMP_NUM_THREADS"] = "1"
        os.environ["OPENBLAS_NUM_THREADS"] = "1"
        os.environ["MKL_NUM_THREADS"] = "1"
        import numpy as np
        import pandas as pd
        """,
        """
        # Ratings from a growing user base: user ids are given in sign-up order.
        rng = np.random.default_rng(12)
        N_USERS, N_ITEMS, TRUE_K = 40000, 4000, 6
        P = rng.normal(0, 1, (N_USERS, TRUE_K))
        Q = rng.normal(0, 1, (N_ITEMS, TRUE_K))
        signup = np.sort(rng.uniform(0, 365, N_USERS))
        n_ratings = rng.integers(10, 60, N_USERS)
        user_id = np.repeat(np.arange(N_USERS), n_ratings)
        item_id = rng.integers(0, N_ITEMS, len(user_id))
        day = signup[user_id] + rng.exponential(20, len(user_id))
        score = np.sum(P[user_id] * Q[item_id], axis=1) / np.sqrt(TRUE_K) + rng.normal(0, 0.5, len(user_id))
        ratings = pd.DataFrame({"user_id": user_id, "item_id": item_id, "day": day,
                                "rating": np.clip(np.round(3 + score), 1, 5)})
        ratings = ratings.drop_duplicates(["user_id", "item_id"]).sort_values("day", ignore_index=True)
        ratings.shape
        """,
        """
        # time-based split: the last 10 % of ratings are the test period
        cut = ratings.day.quantile(0.9)
        train = ratings[ratings.day <= cut]
        test = ratings[ratings.day > cut]
        n_users = train.user_id.max() + 1
        n_items = ratings.item_id.max() + 1
        K, LAMBDA = 24, 0.08

        tr_u, tr_i, tr_r = train.user_id.values, train.item_id.values, train.rating.values
        order = np.argsort(tr_u, kind="stable")
        user_items = np.split(tr_i[order], np.searchsorted(tr_u[order], np.arange(1, n_users)))
        user_ratings = np.split(tr_r[order], np.searchsorted(tr_u[order], np.arange(1, n_users)))
        order = np.argsort(tr_i, kind="stable")
        item_users = np.split(tr_u[order], np.searchsorted(tr_i[order], np.arange(1, n_items)))
        item_ratings = np.split(tr_r[order], np.searchsorted(tr_i[order], np.arange(1, n_items)))
        len(train), len(test), n_users, n_items
        """,
        ALS_TARGET,
    ],
    target=3,
    n=35,
    small=1,
    fix={3: edit(
        ALS_TARGET,
        """
        test_pred = np.clip(np.sum(U[test.user_id.values] * V[test.item_id.values], axis=1), 1, 5)
        test_rmse = np.sqrt(np.mean((test_pred - test.rating.values) ** 2))
        print(f"test RMSE {test_rmse:.4f}")
        """,
        """
        known = test[test.user_id < n_users]  # users who signed up after the cut have no factors
        test_pred = np.clip(np.sum(U[known.user_id.values] * V[known.item_id.values], axis=1), 1, 5)
        test_rmse = np.sqrt(np.mean((test_pred - known.rating.values) ** 2))
        print(f"test RMSE {test_rmse:.4f} on {len(known)} of {len(test)} test ratings")
        """,
    )},
)


# ---------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=Path, metavar="DIR", help="tiny sizes under DIR (quick crash checks)")
    args = parser.parse_args()

    names = [c.name for c in CASES]
    if len(set(names)) != len(names):
        raise SystemExit("duplicate case names")
    root = args.small or OUT
    small = args.small is not None
    seconds = json.loads(SECONDS_FILE.read_text()) if SECONDS_FILE.exists() and not small else {}
    root.mkdir(parents=True, exist_ok=True)
    for c in CASES:
        write_case(c, root / c.name, small)
    manifest = [entry(c, seconds) for c in CASES]
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(f"{len(CASES)} cases under {root}")


if __name__ == "__main__":
    main()
