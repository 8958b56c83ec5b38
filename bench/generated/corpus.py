"""A generated corpus of small runnable notebooks, to find unsound reasoning in crane's rules.

Each case is a notebook state (setup cells) and a target cell composed from real API calls of
pandas, numpy, scikit-learn, torch, matplotlib, seaborn, statsmodels and plain Python, with
randomly mutated arguments, names, shapes and column sets. Whether the target crashes is
decided by running it, never by the generator: the corpus exists to check that every finding
crane calls proven is a real crash of the predicted class, not to tune rules.

    python bench/generated/corpus.py generate --out DIR [--count N] [--seed S]
        writes DIR/cases.jsonl and DIR/notebooks/<id>.ipynb (deterministic for a seed)
    python bench/generated/corpus.py truth DIR
        runs every case (setup, then target) in a fresh namespace of one Python process and
        writes DIR/truth.jsonl: the outcome, and crane's probe facts of what the target reads
        (the probe module summarizes the objects in-process, as it does in a kernel)
    python bench/generated/corpus.py pairs DIR OUT
        writes OUT as runnable pairs for `crane bench` (manifest.json; a crashing and a clean
        case of one template form a pair)

Judge the truth file with crane's rules (no kernel needed):
    cargo run -p crane-detect --example generated_corpus -- DIR/truth.jsonl
"""

import argparse
import contextlib
import importlib
import io
import json
import os
import random
import re
import signal
import sys
import types
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROBE_CRATE = os.path.join(ROOT, "crates", "crane-probe", "src")

COLUMNS = ["age", "price", "city", "score", "label", "date", "zip", "income"]


# Templates: each returns (library, template name, setup cells, target cell).

def frame_setup(rng, with_nan=False, numeric_only=False):
    columns = rng.sample(["age", "price", "score", "income"], rng.randint(2, 4))
    if not numeric_only and rng.random() < 0.5:
        columns.append("city")
    rows = rng.choice([0, 1, 3, 8, 20])
    lines = ["import numpy as np", "import pandas as pd", f"rng = np.random.default_rng({rng.randint(0, 99)})"]
    data = []
    for column in columns:
        if column == "city":
            data.append(f"'city': rng.choice(['Oslo', 'Lima', 'Pune'], {rows})")
        else:
            data.append(f"'{column}': rng.normal(size={rows}).round(2)")
    lines.append(f"df = pd.DataFrame({{{', '.join(data)}}})")
    if with_nan and rows > 0:
        lines.append(f"df.iloc[0, 0] = np.nan")
    return columns, rows, "\n".join(lines)


def pandas_case(rng):
    columns, rows, setup = frame_setup(rng, with_nan=rng.random() < 0.3)
    col = rng.choice(COLUMNS)
    col2 = rng.choice(COLUMNS)
    k = rng.choice([-2, 0, 1, 5, 30])
    targets = [
        f"df['{col}'].mean()",
        f"df[['{col}', '{col2}']].head()",
        f"df.drop(columns=['{col}'])",
        f"df.drop('{col}', axis=1)",
        f"df.groupby('{col}').size()",
        f"df.sort_values('{col}')",
        f"df['{col}'].astype(int)",
        f"df.iloc[{k}]",
        f"df.loc[:, '{col}']",
        f"df['{col}'].str.upper()",
        f"df.set_index('{col}')",
        f"df.{col}.max()",
        f"pd.to_numeric(df['{col}'])",
        f"df.dropna(subset=['{col}'])",
        f"other = pd.DataFrame({{'{col2}': [1, 2], 'extra': [3, 4]}})\ndf.merge(other, on='{col}')",
        f"other = pd.DataFrame({{'{col2}': [1, 2]}})\ndf.join(other)",
        f"x = df.drop(columns=['{col}'])\nx['{col2}'].sum()",
        f"for c in {[rng.choice(COLUMNS) for _ in range(3)]}:\n    df[c].min()",
    ]
    return "pandas", rng.randrange(len(targets)), [setup], targets


def shape(rng, rank=None):
    rank = rank or rng.randint(1, 3)
    return tuple(rng.choice([1, 2, 3, 4, 6]) for _ in range(rank))


def numpy_case(rng):
    a, b = shape(rng), shape(rng) if rng.random() < 0.5 else None
    b = b or a
    setup = f"import numpy as np\na = np.ones({a})\nb = np.ones({b})"
    dims = ", ".join(str(rng.choice([-1, 1, 2, 3, 4, 6, 12])) for _ in range(rng.randint(1, 3)))
    axis = rng.randint(-3, 3)
    i = rng.choice([0, 1, 3, 5, -1, -7])
    targets = [
        f"a.reshape({dims})",
        "a @ b",
        "np.dot(a, b)",
        f"np.concatenate([a, b], axis={axis})",
        f"np.stack([a, b], axis={axis})",
        "a + b",
        f"a[{i}]",
        f"a[:, {i}]",
        f"a.sum(axis={axis})",
        "np.savetxt('/dev/null', a)",
        "np.vstack([a, b])",
        "np.hstack([a, b])",
        f"x = a.reshape(-1)\nx[{i}]",
        f"n = len(a)\nfor j in range(n + {rng.choice([-1, 0, 1])}):\n    a[j]",
        f"labels = ['x', 'y', 'z']\nlabels[a.astype(int)[0]]",
    ]
    return "numpy", rng.randrange(len(targets)), [setup], targets


def sklearn_case(rng):
    n, d = rng.choice([1, 5, 30]), rng.choice([1, 2, 3])
    d2 = d if rng.random() < 0.6 else rng.choice([1, 2, 4])
    fitted = rng.random() < 0.7
    estimator = rng.choice([
        ("sklearn.linear_model", "LogisticRegression", "labels"),
        ("sklearn.linear_model", "LinearRegression", "values"),
        ("sklearn.tree", "DecisionTreeClassifier", "labels"),
        ("sklearn.svm", "SVC", "labels"),
        ("sklearn.neighbors", "KNeighborsClassifier", "labels"),
        ("sklearn.preprocessing", "StandardScaler", "values"),
    ])
    module, name, target_kind = estimator
    y = "rng.integers(0, 2, n)" if target_kind == "labels" else "rng.normal(size=n)"
    setup = [
        "\n".join([
            "import numpy as np",
            "import pandas as pd",
            f"from {module} import {name}",
            "from sklearn.model_selection import train_test_split",
            "from sklearn.cluster import KMeans",
            "from sklearn.decomposition import PCA",
            "from sklearn.linear_model import LogisticRegression as LR",
            f"rng = np.random.default_rng({rng.randint(0, 99)})",
            f"n = {n}",
            f"X = rng.normal(size=(n, {d}))",
            f"X2 = rng.normal(size=({rng.choice([2, 5])}, {d2}))",
            f"y = {y}",
            "y[:2] = [0, 1][:len(y[:2])] if len(y) > 1 else y[:2]",
            f"model = {name}()",
        ]),
    ]
    if fitted:
        setup.append("model.fit(X, y)" if name != "StandardScaler" else "model.fit(X)")
    k = rng.choice([1, 2, 3, 8, 40])
    solver = rng.choice(["lbfgs", "liblinear", "saga", "newton-cg"])
    penalty = rng.choice(["l1", "l2", "elasticnet"])
    method = "transform" if name == "StandardScaler" else "predict"
    targets = [
        f"model.{method}(X2)",
        f"model.{method}(X)",
        f"model.{method}(X[:, 0])",
        f"model.fit(X, y[:{rng.choice([1, 2, 5])}])",
        f"KMeans(n_clusters={k}, n_init=1).fit(X)",
        f"PCA(n_components={k}).fit(X)",
        f"train_test_split(X, y, test_size=0.5)",
        f"LR(solver='{solver}', penalty='{penalty}').fit(X, y)",
        f"X3 = X.copy()\nX3[0, 0] = np.nan\nmodel.fit(X3, y)",
        f"frame = pd.DataFrame(X)\nframe['c'] = 'a'\nmodel.fit(frame, y)",
        "model.feature_importances_",
        "model.coef_",
    ]
    return "sklearn", rng.randrange(len(targets)), setup, targets


def torch_case(rng):
    i, o = rng.choice([2, 3, 4, 8]), rng.choice([1, 2, 5])
    c = rng.choice([1, 3])
    setup = "\n".join([
        "import torch",
        "import torch.nn as nn",
        "torch.manual_seed(0)",
        f"layer = nn.Linear({i}, {o})",
        f"conv = nn.Conv2d({c}, 4, 3)",
        f"model = nn.Sequential(nn.Linear({i}, 6), nn.ReLU(), nn.Linear(6, {o}))",
        f"x = torch.randn({rng.choice([1, 4])}, {rng.choice([2, 3, 4, 8])})",
        f"img = torch.randn(2, {rng.choice([1, 3])}, 8, 8)",
    ])
    dims = ", ".join(str(rng.choice([-1, 1, 2, 4, 8])) for _ in range(rng.randint(1, 3)))
    targets = [
        "layer(x)",
        "model(x)",
        "conv(img)",
        "layer(x.long())",
        f"x.view({dims})",
        f"x.reshape({dims})",
        "x @ layer.weight",
        f"torch.zeros({rng.choice([2, 3])}, {i}) + x",
        "model(x.to(torch.float64))",
    ]
    return "torch", rng.randrange(len(targets)), [setup], targets


def plots_case(rng):
    r, c, k = rng.choice([1, 2, 3]), rng.choice([1, 2, 3]), rng.choice([0, 1, 4, 6, 9, 10])
    n, m = rng.choice([3, 5]), rng.choice([3, 5])
    columns, rows, frame = frame_setup(rng, numeric_only=True)
    setup = "\n".join([
        "import matplotlib",
        "matplotlib.use('Agg')",
        "import matplotlib.pyplot as plt",
        "import seaborn as sns",
        "from statsmodels.graphics.tsaplots import plot_acf, plot_pacf",
        frame,
        f"xs = list(range({n}))",
        f"ys = [v * 2 for v in range({m})]",
        f"series = pd.Series(np.arange({rng.choice([10, 20, 40])}, dtype=float))",
    ])
    col, col2 = rng.choice(COLUMNS), rng.choice(COLUMNS)
    lags = rng.choice([3, 9, 15, 25, 45])
    targets = [
        f"plt.subplot({r}, {c}, {k})",
        f"for i in range({k}):\n    plt.subplot({r}, {c}, i + 1)",
        "plt.plot(xs, ys)",
        "plt.scatter(xs, ys)",
        f"fig, axes = plt.subplots({r}, {c})\naxes[{rng.choice([0, 1, 2])}, {rng.choice([0, 1, 2])}].plot(xs)",
        f"fig, axes = plt.subplots({r}, {c})\nfor i in range({k}):\n    axes[i].plot(xs)",
        f"sns.scatterplot(data=df, x='{col}', y='{col2}')",
        f"plot_acf(series, lags={lags})",
        f"plot_pacf(series, lags={lags})",
        f"n = len(xs)\nrows = -(-n // {c})\nfor i in range(n):\n    plt.subplot(rows, {c}, i + 1)",
    ]
    library = ["matplotlib"] * 6 + ["seaborn"] + ["statsmodels"] * 2 + ["matplotlib"]
    index = rng.randrange(len(targets))
    return library[index], index, [setup, "plt.close('all')"], targets


def python_case(rng):
    default = rng.choice(["2", "'x'", "None"])
    setup = "\n".join([
        f"def scale(values, factor={default}, *rest, **options):",
        "    out = [v * factor for v in values]",
        "    if options.get('total'):",
        "        return sum(out)",
        "    return out",
        "",
        "def first_key(mapping):",
        "    for key in mapping:",
        "        return key",
        "",
        "data = " + rng.choice(["[1, 2, 3]", "[]", "{'a': 1}", "'abc'"]),
        f"table = {{'a': 1, 'b': 2}}",
    ])
    key = rng.choice(["'a'", "'c'", "first_key(table)", "'b'"])
    targets = [
        "scale(data)",
        "scale(data, total=True)",
        f"scale(data, {rng.choice(['3', '0.5', 'None'])})",
        "scale()",
        "scale(data, bad=1)[0]",
        f"table[{key}]",
        f"n = len(data)\nresult = [0] * n\nfor i in range(n + {rng.choice([0, 1])}):\n    result[i] = i",
        f"s = 0\nfor i, v in enumerate(scale(data)):\n    s += v\n    if i > {rng.choice([0, 5])}:\n        break\ns // (len(data) - 3)",
        "undefined_helper(data)",
        f"try:\n    table[{key}]\nexcept {rng.choice(['KeyError', 'LookupError', 'ValueError', 'Exception'])}:\n    pass",
        f"try:\n    scale(data)[{rng.choice([0, 5])}]\nexcept {rng.choice(['IndexError', 'TypeError', 'ZeroDivisionError'])}:\n    pass",
    ]
    return "python", rng.randrange(len(targets)), [setup], targets


TEMPLATES = [pandas_case, numpy_case, sklearn_case, torch_case, plots_case, python_case]


def notebook(cells):
    return {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": index + 1 if index < len(cells) - 1 else None,
                "id": f"cell-{index}",
                "metadata": {},
                "outputs": [],
                "source": source,
            }
            for index, source in enumerate(cells)
        ],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def generate(out, count, seed):
    rng = random.Random(seed)
    os.makedirs(os.path.join(out, "notebooks"), exist_ok=True)
    with open(os.path.join(out, "cases.jsonl"), "w") as cases:
        for index in range(count):
            template = TEMPLATES[index % len(TEMPLATES)]
            library, variant, setup, targets = template(rng)
            target = targets[variant]
            case = {
                "id": f"{library}_{index:05d}",
                "library": library,
                "template": f"{template.__name__}/{variant}",
                "setup": setup,
                "target": target,
            }
            cases.write(json.dumps(case) + "\n")
            with open(os.path.join(out, "notebooks", case["id"] + ".ipynb"), "w") as file:
                json.dump(notebook(setup + [target]), file, indent=1)
    print(f"{count} cases in {out}")


class Timeout(Exception):
    pass


def on_alarm(signum, frame):
    raise Timeout()


def load_probe():
    """The probe as crane puts it into a kernel: behind its guard against user code, compiled
    under the filename the guard knows as crane's own."""
    block = open(os.path.join(PROBE_CRATE, "lib.rs"), encoding="utf-8").read()
    block = block.split("pub const PROBE_SOURCE", 1)[1].split(");", 1)[0]
    paths = re.findall(r'include_str!\("([^"]+)"\)', block)
    source = "".join(open(os.path.join(PROBE_CRATE, path), encoding="utf-8").read() for path in paths)
    module = types.ModuleType("crane_probe_corpus")
    exec(compile(source, "<crane-probe>", "exec"), module.__dict__)
    return module


def run_case(case, probe, targets_of):
    main = types.ModuleType("__main__")
    saved = sys.modules["__main__"]
    sys.modules["__main__"] = main
    namespace = main.__dict__
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for cell in case["setup"]:
                signal.setitimer(signal.ITIMER_REAL, 20.0)
                try:
                    exec(compile(cell, "<setup>", "exec"), namespace)
                except BaseException as error:  # noqa: BLE001
                    return {"id": case["id"], "setup_failed": type(error).__name__}
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
            facts = json.loads(repr(probe.summarize({"expressions": targets_of(case["target"])})))
            signal.setitimer(signal.ITIMER_REAL, 20.0)
            try:
                exec(compile(case["target"], "<target>", "exec"), namespace)
                outcome = None
            except Timeout:
                return {"id": case["id"], "setup_failed": "Timeout"}
            except BaseException as error:  # noqa: BLE001
                outcome = type(error).__name__
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        sys.modules["__main__"] = saved
        try:
            import matplotlib.pyplot as plt
            plt.close("all")
        except Exception:
            pass
    return {**case, "crash": outcome is not None, "exception": outcome, "facts": facts}


def read_targets(case_dir):
    """The expressions crane asks the probe about, per target (written by the Rust side)."""
    path = os.path.join(case_dir, "targets.json")
    with open(path) as file:
        return json.load(file)


def truth(case_dir, preload=()):
    for module in preload:
        importlib.import_module(module)
    signal.signal(signal.SIGALRM, on_alarm)
    probe = load_probe()
    targets = read_targets(case_dir)
    counts = {}
    with open(os.path.join(case_dir, "cases.jsonl")) as cases, open(os.path.join(case_dir, "truth.jsonl"), "w") as out:
        for line in cases:
            case = json.loads(line)
            result = run_case(case, probe, lambda target: targets.get(case["id"], []))
            out.write(json.dumps(result) + "\n")
            key = (case["library"], "setup failed" if "setup_failed" in result else ("crash" if result["crash"] else "clean"))
            counts[key] = counts.get(key, 0) + 1
    for key in sorted(counts):
        print(f"{key[0]:12} {key[1]:12} {counts[key]}")


def pairs(case_dir, out):
    by_template = {}
    with open(os.path.join(case_dir, "truth.jsonl")) as file:
        for line in file:
            case = json.loads(line)
            if "setup_failed" in case:
                continue
            entry = by_template.setdefault(case["template"], {"crash": [], "clean": []})
            entry["crash" if case["crash"] else "clean"].append(case)
    manifest = []
    for template, entry in sorted(by_template.items()):
        for buggy, fixed in zip(entry["crash"], entry["clean"]):
            name = buggy["id"]
            folder = os.path.join(out, name)
            os.makedirs(folder, exist_ok=True)
            for variant, case in (("buggy", buggy), ("fixed", fixed)):
                with open(os.path.join(folder, variant + ".ipynb"), "w") as file:
                    json.dump(notebook(case["setup"] + [case["target"]]), file, indent=1)
            manifest.append({
                "case": name,
                "library": buggy["library"],
                "target_cell": len(buggy["setup"]),
                "exception": buggy["exception"],
                "message_contains": "",
                "diagnosis": f"generated from {template}",
                "needs_runtime": True,
                "category": "generated",
            })
    with open(os.path.join(out, "manifest.json"), "w") as file:
        json.dump(manifest, file, indent=1)
    print(f"{len(manifest)} pairs in {out}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    g = commands.add_parser("generate")
    g.add_argument("--out", required=True)
    g.add_argument("--count", type=int, default=2400)
    g.add_argument("--seed", type=int, default=13)
    t = commands.add_parser("truth")
    t.add_argument("dir")
    t.add_argument("--preload", default="", help="modules to import before any case (comma-separated), so their import time counts against no case's time limit")
    p = commands.add_parser("pairs")
    p.add_argument("dir")
    p.add_argument("out")
    args = parser.parse_args()
    if args.command == "generate":
        generate(args.out, args.count, args.seed)
    elif args.command == "truth":
        truth(args.dir, [m for m in args.preload.split(",") if m])
    else:
        pairs(args.dir, args.out)


if __name__ == "__main__":
    main()
