#!/usr/bin/env python3
"""crane's own overhead per check (fact extraction + detectors, excluding the earlier cells and
any LLM wait), over the bundled example and the runnable pairs in bench/notebooks, and the
overhead of `crane run` on a 30-cell notebook against plain `crane exec`.

Usage: python3 scripts/bench-check-overhead.py [--crane target/release/crane] [--cases N]
"""
import argparse, json, os, re, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The project's environment runs the kernels, as for the tests.
os.environ.setdefault("CRANE_PYTHON", os.path.join(ROOT, ".venv", "bin", "python"))


def check(crane, notebook, cell=None):
    args = [crane, "check", notebook, "--format", "json", "--quiet"]
    if cell is not None:
        args += ["--cell", str(cell)]
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode not in (0, 1):
        return None
    t = json.loads(out.stdout)["timings_ms"]
    return t["extract"] + t["detect"]


def light_notebook(path, cells=30):
    import_lines = "import numpy as np\nimport pandas as pd\n"
    sources = [import_lines + "df = pd.DataFrame({'a': np.arange(1000), 'b': np.arange(1000) * 2.0})"]
    for i in range(1, cells):
        sources.append(f"s{i} = df['a'].sum() + {i}\ndf['c{i}'] = df['b'] * {i}\nm{i} = df[['a', 'b']].mean()")
    nb = {"cells": [{"cell_type": "code", "execution_count": None, "id": f"c{i}", "metadata": {},
                     "outputs": [], "source": s} for i, s in enumerate(sources)],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    with open(path, "w") as f:
        json.dump(nb, f)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--crane", default=os.path.join(ROOT, "target/release/crane"))
    parser.add_argument("--cases", type=int, default=12, help="runnable pairs to time (buggy and fixed)")
    parser.add_argument("--runs", type=int, default=15, help="alternating exec/run pairs on the 30-cell notebook")
    args = parser.parse_args()
    manifest = json.load(open(os.path.join(ROOT, "bench/notebooks/manifest.json")))

    example = [check(args.crane, os.path.join(ROOT, "examples/titanic_like.ipynb")) for _ in range(5)]
    pairs = []
    for entry in manifest[: args.cases]:
        for variant in ("buggy", "fixed"):
            nb = os.path.join(ROOT, "bench/notebooks", entry["case"], f"{variant}.ipynb")
            ms = check(args.crane, nb, entry["target_cell"])
            if ms is not None:
                pairs.append(ms)
    print(f"check overhead, example: median {statistics.median(example)} ms over {len(example)} checks")
    print(f"check overhead, runnable pairs: median {statistics.median(pairs)} ms, max {max(pairs)} ms over {len(pairs)} checks")

    with tempfile.TemporaryDirectory() as tmp:
        nb = os.path.join(tmp, "light.ipynb")
        light_notebook(nb)
        plain, guarded = [], []
        for _ in range(args.runs):
            start = time.monotonic()
            subprocess.run([args.crane, "exec", nb, "--order", "visual", "--quiet"], check=True, capture_output=True)
            plain.append(time.monotonic() - start)
            start = time.monotonic()
            subprocess.run([args.crane, "run", nb, "--quiet"], check=True, capture_output=True)
            guarded.append(time.monotonic() - start)
        p, g = statistics.median(plain), statistics.median(guarded)
        print(f"30 light cells: exec {p:.2f} s, run (checked) {g:.2f} s, overhead {100 * (g - p) / p:.1f}% (medians of {args.runs})")
        # crane's own accounting, which machine noise moves far less: the time it spent
        # checking (probe injection, facts, rules) against the rest of the run; and the phases
        # of both commands (cells executing; kernel start and shutdown and the rest).
        shares, phases = [], []
        for _ in range(5):
            start = time.monotonic()
            out = subprocess.run([args.crane, "exec", nb, "--order", "visual"], check=True, capture_output=True, text=True)
            exec_wall = time.monotonic() - start
            exec_cells = float(re.search(r"executed \d+ cells in ([\d.]+) s", out.stderr).group(1))
            start = time.monotonic()
            out = subprocess.run([args.crane, "run", nb, "--quiet", "--format", "json"], check=True, capture_output=True, text=True)
            wall = time.monotonic() - start
            summary = json.loads(out.stdout)
            checking, executing = summary["check_ms"] / 1000.0, summary["execute_ms"] / 1000.0
            shares.append(100 * checking / (wall - checking))
            phases.append((exec_cells, exec_wall - exec_cells, executing, wall - checking - executing))
        print(f"30 light cells: crane's checking adds {statistics.median(shares):.1f}% to the rest of the run (its own accounting, median of 5)")
        med = [statistics.median(p[i] for p in phases) for i in range(4)]
        print(f"30 light cells, phases (medians of 5): exec cells {med[0]:.3f} s, rest {med[1]:.3f} s; "
              f"run cells {med[2]:.3f} s, rest {med[3]:.3f} s")
        # The fastest of each is the least disturbed by other work on the machine.
        p, g = min(plain), min(guarded)
        print(f"30 light cells: exec {p:.2f} s, run (checked) {g:.2f} s, overhead {100 * (g - p) / p:.1f}% (fastest of {args.runs})")


if __name__ == "__main__":
    sys.exit(main())
