#!/usr/bin/env python3
"""Per-cell overhead of crane's kernel (`crane kernel serve`) against a plain ipykernel, in the
same run, alternating: the 30 light cells of scripts/bench-check-overhead.py (dry run off, so
every cell is checked by the probe and the rules only), and the relay latency of a cell with
1,000 small outputs. With --timings, the crane kernel logs where each cell's time went
(`crane kernel serve --timings`) and the medians of its phases are printed too.

With --notebooks N, it also runs the code cells of the first N fixed notebooks of
bench/notebooks (notebooks that do real work: reading data, fitting models, plotting) in both
kernels, each in its case folder, and prints their total time and the overhead.

With --floor, it also measures the least any design that reads the probe's facts before each
cell could add: the plain kernel running each light cell with the probe's call for that cell's
expressions (as `crane inspect` lists them) prepended to the cell's own code, so that the facts
cost no request at all; crane's analysis and rules come on top of that.

With --notebook-modes N, it runs only the first N fixed notebooks (Run All: each notebook's code
cells in order, in its case folder) in four kernels, alternating per notebook, for --runs
rounds: the crane kernel as installed by default (snapshots on, `--dry-run auto`: dry runs for
cells that look long), with `--dry-run on` (every cell the rules are silent about) and with
`--dry-run off`, and a plain ipykernel; it prints each one's total and its
ratio to plain; with --memory, also the peak of the private memory the crane kernels' snapshots
held together (Private_Dirty + Private_Clean of /proc/PID/smaps_rollup), sampled every 0.2 s
(reading it walks each snapshot's page tables, milliseconds of CPU each time on the cores the
kernels run on, which slows the crane kernels it watches: not for timings). --modes picks some of them (`auto`, `on`, `off`, `keep0`: dry runs off and
`%crane snapshot-keep 0`, so the check alone, without snapshots; plain is always run), and --before PATH
adds the default kernel of another crane binary (`before`), for a comparison of two builds in the
same run.

With --gallery N, it runs the same as --notebook-modes on N notebooks of the gallery corpus
(scripts/gallery.py) drawn with a fixed seed, instead of the fixed notebooks.

With --snapshot-floor, it measures only what a snapshot adds to a trivial cell (`x = 1`, 40
times) once pandas, scikit-learn and matplotlib (then torch too) are imported: the crane kernel
with snapshots and with `snapshot-keep 0` (dry runs off) against a plain one, and the time of a
bare `os.fork()` of a Python process with the same imports.

With --returns, it measures only how long `%crane undo` takes to return to a fork's snapshot (a
takeover) and to the fresh start before the first cell (a new kernel behind the proxy), --runs
times each, in fresh crane kernels whose first cell imports numpy, pandas, scikit-learn and
matplotlib.

With --first-cell, it measures only a fresh kernel's first cell importing numpy, pandas,
scikit-learn and matplotlib (--runs times in the crane kernel and a plain one, shuffled): its
time inside the kernel and the full collections it made.

Usage: .venv/bin/python scripts/bench-kernel.py [--crane target/release/crane] [--runs N] [--timings]
                                                [--notebooks N] [--floor] [--notebook-modes N]
                                                [--gallery N] [--modes auto,on,off,keep0] [--before PATH] [--memory]
                                                [--snapshot-floor] [--first-cell] [--returns]
"""
import argparse
import importlib.util
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from jupyter_client.manager import KernelManager

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MANY_OUTPUTS = "from IPython.display import display\nfor i in range(1000):\n    display(i)"


def sibling(script):
    """Another script of scripts/, loaded as a module."""
    spec = importlib.util.spec_from_file_location(script.replace("-", "_"), os.path.join(ROOT, "scripts", f"{script}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def light_cells():
    module = sibling("bench-check-overhead")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "light.ipynb")
        module.light_notebook(path)
        return [cell["source"] for cell in json.load(open(path))["cells"]]


def timed(client, code, **request):
    """Seconds from the execute_request to its reply and idle; and the outputs seen."""
    outputs = []
    start = time.perf_counter()
    reply = client.execute_interactive(code, output_hook=outputs.append, timeout=120, **request)
    elapsed = time.perf_counter() - start
    assert reply["content"]["status"] == "ok", reply["content"]
    return elapsed, outputs


def session(kernel_name, stderr=None, cwd=None):
    manager = KernelManager(kernel_name=kernel_name)
    manager.start_kernel(stderr=stderr, cwd=cwd)
    client = manager.client()
    client.start_channels()
    client.wait_for_ready(timeout=60)
    return manager, client


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--crane", default=os.path.join(ROOT, "target/release/crane"))
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--timings", action="store_true", help="also print the medians of the check's phases")
    parser.add_argument("--notebooks", type=int, default=0, help="also run the first N fixed notebooks of bench/notebooks")
    parser.add_argument("--floor", action="store_true", help="also measure the facts computed inside each cell's own request")
    parser.add_argument("--snapshot-keep", type=int, help="set `%%crane snapshot-keep N` in the crane kernel first (0: no snapshots)")
    parser.add_argument("--notebook-modes", type=int, default=0,
                        help="only Run All of the first N fixed notebooks: crane (dry runs on), crane (dry runs off), plain")
    parser.add_argument("--gallery", type=int, default=0,
                        help="as --notebook-modes, on N gallery notebooks drawn with a fixed seed (.cache/gallery)")
    parser.add_argument("--snapshot-floor", action="store_true",
                        help="only what a snapshot adds to a trivial cell, by the libraries imported, and a bare fork's time")
    parser.add_argument("--first-cell", action="store_true",
                        help="only a fresh kernel's first cell importing numpy, pandas, scikit-learn and matplotlib, "
                             "--runs times in each kernel: its time in the kernel and its full collections")
    parser.add_argument("--returns", action="store_true",
                        help="only the time of `%%crane undo` to a fork's snapshot and to the fresh start, --runs times each")
    parser.add_argument("--modes", default="auto,on,off",
                        help="with --notebook-modes: the crane kernels to run (auto, on, off, keep0)")
    parser.add_argument("--before", help="with --notebook-modes: also the default kernel of this crane binary")
    parser.add_argument("--memory", action="store_true",
                        help="with --notebook-modes: also sample the snapshots' private memory (slows the crane kernels)")
    args = parser.parse_args()
    if args.snapshot_floor:
        run_snapshot_floor(args.crane)
        return
    if args.first_cell:
        run_first_cell(args.crane, args.runs)
        return
    if args.returns:
        run_returns(args.crane, args.runs)
        return
    if args.notebook_modes or args.gallery:
        notebooks = gallery_notebooks(args.gallery) if args.gallery else bench_notebooks(args.notebook_modes)
        run_notebook_modes(args.crane, notebooks, args.runs, args.modes.split(","), args.before, args.memory)
        return
    cells = light_cells()
    workdir = tempfile.TemporaryDirectory(prefix="crane-bench-kernel-")
    prefix = workdir.name
    subprocess.run([args.crane, "kernel", "install", "--prefix", prefix, "--python", sys.executable,
                    "--dry-run", "off"] + (["--timings"] if args.timings else []), check=True, capture_output=True)
    log = open(os.path.join(prefix, "crane-kernel.log"), "w+")
    os.environ["JUPYTER_PATH"] = os.path.join(prefix, "share", "jupyter")

    totals = {"python3": [], "crane-python3": []}
    added_ms = []
    many = {"python3": [], "crane-python3": [], "bypass": []}
    # A silent request with a trivial user expression, as the probe's own request is sent: the
    # least any request to the kernel costs, whatever the probe does.
    silent_ms, info_ms, plain_cell_ms = [], [], []
    for _ in range(args.runs):
        per_cell = {}
        for name in ("python3", "crane-python3"):
            manager, client = session(name, log if name == "crane-python3" else None)
            try:
                if name == "crane-python3" and args.snapshot_keep is not None:
                    timed(client, f"%crane snapshot-keep {args.snapshot_keep}")
                times = [timed(client, cell)[0] for cell in cells]
                per_cell[name] = times
                if name == "python3":
                    plain_cell_ms += [1000 * t for t in times[1:]]
                    silent_ms += [1000 * timed(client, "", silent=True, store_history=False,
                                               user_expressions={"k": "1"})[0] for _ in cells[1:]]
                    info_ms += [1000 * kernel_info_time(client) for _ in cells[1:]]
                totals[name].append(sum(times))
                elapsed, outputs = timed(client, MANY_OUTPUTS)
                assert sum(1 for m in outputs if m["msg_type"] == "display_data") == 1000
                many[name].append(elapsed)
                if name == "crane-python3":
                    elapsed, _ = timed(client, "%%crane run\n" + MANY_OUTPUTS)
                    many["bypass"].append(elapsed)
            finally:
                client.stop_channels()
                manager.shutdown_kernel(now=False)
        # The first cell imports numpy and pandas: its cost is the kernel's, not the check's.
        added_ms += [1000 * (c - p) for c, p in zip(per_cell["crane-python3"][1:], per_cell["python3"][1:])]

    plain, crane = statistics.median(totals["python3"]), statistics.median(totals["crane-python3"])
    print(f"30 light cells: plain ipykernel {plain * 1000:.0f} ms, crane kernel {crane * 1000:.0f} ms, "
          f"overhead {100 * (crane - plain) / plain:.1f}% (medians of {args.runs} alternating runs)")
    print(f"added per checked cell (rules silent, dry run off): median {statistics.median(added_ms):.1f} ms, "
          f"p90 {statistics.quantiles(added_ms, n=10)[-1]:.1f} ms over {len(added_ms)} cells")
    mp, mc, mb = (statistics.median(many[k]) for k in ("python3", "crane-python3", "bypass"))
    print(f"cell with 1,000 outputs: plain {mp * 1000:.0f} ms, crane {mc * 1000:.0f} ms ({mc / mp:.2f}x), "
          f"crane with %%crane run {mb * 1000:.0f} ms ({mb / mp:.2f}x)")
    print(f"silent request to the plain kernel (user expression `1`): median {statistics.median(silent_ms):.1f} ms, "
          f"kernel_info request {statistics.median(info_ms):.1f} ms (the least any request costs), "
          f"against {statistics.median(plain_cell_ms):.1f} ms for a light cell")
    if args.notebooks:
        run_notebooks(args.notebooks)
    if args.floor:
        run_floor(args.crane, cells, args.runs)
    if args.timings:
        log.seek(0)
        print_phases(log.read())


def kernel_info_time(client):
    start = time.perf_counter()
    msg_id = client.kernel_info()
    while client.get_shell_msg(timeout=30)["parent_header"].get("msg_id") != msg_id:
        pass
    return time.perf_counter() - start


def probe_source():
    """The probe's source as crane joins it: the files `PROBE_SOURCE` in
    crates/crane-probe/src/lib.rs names, in its order."""
    src = os.path.join(ROOT, "crates/crane-probe/src")
    block = open(os.path.join(src, "lib.rs")).read().split("pub const PROBE_SOURCE", 1)[1].split(");", 1)[0]
    return "".join(open(os.path.join(src, path)).read() for path in re.findall(r'include_str!\("([^"]+)"\)', block))


def run_floor(crane, cells, runs):
    """The light cells in a plain kernel, with and without the probe's call for their facts
    prepended to their own code (the probe module put into the kernel once, as crane does)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "light.ipynb")
        notebook = {"cells": [{"cell_type": "code", "execution_count": i + 1, "id": f"c{i}", "metadata": {},
                               "outputs": [], "source": source} for i, source in enumerate(cells)],
                    "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
        json.dump(notebook, open(path, "w"))
        facts = subprocess.run([crane, "inspect", path, "--cell", str(len(cells) - 1), "--format", "json"],
                               check=True, capture_output=True, text=True, env={**os.environ, "CRANE_PYTHON": sys.executable})
    expressions = list(json.loads(facts.stdout)["variables"])
    request = json.dumps({"expressions": expressions, "work": 20_000_000, "budget_ms": 1000.0, "max_bytes": 24_000})
    source = probe_source()
    inject = ("import types as _t, sys as _s\n_m = _t.ModuleType('_crane_probe')\n"
              f"exec(compile({source!r}, '<crane-probe>', 'exec'), _m.__dict__)\n"
              "_s.modules['_crane_probe'] = _m\ndel _t, _s, _m")
    call = f"__import__('sys').modules['_crane_probe'].summarize({request!r})\n"
    times = {False: [], True: []}
    for _ in range(runs):
        for inline in (False, True):
            manager, client = session("python3")
            try:
                timed(client, inject)
                times[inline].append([timed(client, (call if inline and i else "") + cell)[0]
                                      for i, cell in enumerate(cells)])
            finally:
                client.stop_channels()
                manager.shutdown_kernel(now=False)
    plain, inline = (statistics.median(sum(run) for run in times[kind]) for kind in (False, True))
    added = [with_facts - without for run, facts_run in zip(times[False], times[True])
             for without, with_facts in zip(run[1:], facts_run[1:])]
    print(f"facts inside each light cell's own request ({len(expressions)} expressions per cell): plain "
          f"{plain * 1000:.0f} ms, with the facts {inline * 1000:.0f} ms, overhead {100 * (inline - plain) / plain:.1f}% "
          f"(medians of {runs}); added per cell: median {1000 * statistics.median(added):.1f} ms. The least any design "
          f"that reads these facts before each cell adds, before crane's analysis and rules")


def run_notebooks(count):
    """The fixed notebooks' code cells in both kernels, alternating per notebook."""
    manifest = json.load(open(os.path.join(ROOT, "bench/notebooks/manifest.json")))[:count]
    totals = {"python3": 0.0, "crane-python3": 0.0}
    cells_run = 0
    for entry in manifest:
        folder = os.path.join(ROOT, "bench/notebooks", entry["case"])
        notebook = json.load(open(os.path.join(folder, "fixed.ipynb")))
        sources = ["".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "code"]
        for name in totals:
            manager, client = session(name, subprocess.DEVNULL, cwd=folder)
            try:
                totals[name] += sum(timed(client, source)[0] for source in sources)
            finally:
                client.stop_channels()
                manager.shutdown_kernel(now=False)
        cells_run += len(sources)
    plain, crane = totals["python3"], totals["crane-python3"]
    print(f"{len(manifest)} fixed notebooks of bench/notebooks ({cells_run} cells): plain ipykernel {plain:.2f} s, "
          f"crane kernel {crane:.2f} s, overhead {100 * (crane - plain) / plain:.1f}%, "
          f"{1000 * (crane - plain) / cells_run:.1f} ms per cell")


def snapshot_pids(root):
    """The snapshots below process `root`: processes holding a socket bound in a directory
    crane made for a snapshot (`crane-snapshot-*`), other than the kernel that made it."""
    inodes = set()
    try:
        with open("/proc/net/unix") as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if len(fields) >= 8 and "/crane-snapshot-" in fields[7]:
                    inodes.add(fields[6])
    except OSError:
        return []
    if not inodes:
        return []
    pids, stack = [], [root]
    while stack:
        pid = stack.pop()
        try:
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    stack.extend(int(child) for child in f.read().split())
        except OSError:
            continue
        if pid == root:
            continue
        try:
            links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        except OSError:
            continue
        if any(link.startswith("socket:[") and link[8:-1] in inodes for link in links):
            pids.append(pid)
    return pids


def private_bytes(pid):
    total = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith(("Private_Dirty:", "Private_Clean:")):
                    total += int(line.split()[1]) * 1024
    except OSError:
        pass
    return total


class SnapshotMemory:
    """Samples, every 0.2 s, the private memory the snapshots below a process hold together,
    and keeps the peak."""

    def __init__(self):
        import threading
        self.root, self.peak, self.peak_count, self.stop = None, 0, 0, False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop:
            root = self.root
            if root is not None:
                pids = snapshot_pids(root)
                held = sum(private_bytes(pid) for pid in pids)
                if held > self.peak:
                    self.peak, self.peak_count = held, len(pids)
            time.sleep(0.2)


FLOOR_SETUPS = {
    "pandas, scikit-learn, matplotlib": "import pandas, numpy, sklearn.linear_model, matplotlib.pyplot",
    "the same and torch": "import pandas, numpy, sklearn.linear_model, matplotlib.pyplot, torch",
}
BARE_FORK = """
import os, signal, statistics, sys, time
exec(sys.argv[1])
times = []
for _ in range(20):
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        signal.pause()
        os._exit(0)
    times.append(time.perf_counter() - started)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
status = open("/proc/self/status").read()
resident = int(status.split("VmRSS:")[1].split()[0]) // 1024
print(f"{statistics.median(times) * 1000:.1f} {resident}")
"""


def install_dry_run_off(crane, name):
    """The crane kernelspec `name` with dry runs off, in a temporary prefix that Jupyter looks
    in from now on; the prefix (kept alive by the caller)."""
    workdir = tempfile.TemporaryDirectory(prefix=f"{name}-")
    subprocess.run([crane, "kernel", "install", "--prefix", workdir.name, "--python", sys.executable,
                    "--name", name, "--dry-run", "off"], check=True, capture_output=True)
    os.environ["JUPYTER_PATH"] = os.path.join(workdir.name, "share", "jupyter")
    return workdir


def run_snapshot_floor(crane, cells=40):
    """What a snapshot adds to a trivial cell (`x = 1`), by the libraries imported: the crane
    kernel with `snapshot-keep 3` and `0` (dry runs off) and a plain one, and a bare `os.fork()`
    of a Python process with the same imports (the fork's own share)."""
    workdir = install_dry_run_off(crane, "crane-floor")
    for label, setup in FLOOR_SETUPS.items():
        medians = {}
        for mode in ("keep3", "keep0", "plain"):
            manager, client = session("python3" if mode == "plain" else "crane-floor", subprocess.DEVNULL)
            try:
                if mode == "keep0":
                    timed(client, "%crane snapshot-keep 0")
                timed(client, setup)
                medians[mode] = statistics.median(1000 * timed(client, "x = 1")[0] for _ in range(cells))
            finally:
                client.stop_channels()
                manager.shutdown_kernel(now=True)
        fork_ms, resident_mb = subprocess.run([sys.executable, "-c", BARE_FORK, setup], check=True,
                                              capture_output=True, text=True).stdout.split()
        print(f"{label}: `x = 1` median {medians['keep3']:.1f} ms with snapshots, {medians['keep0']:.1f} ms "
              f"without, {medians['plain']:.1f} ms plain; a bare fork of such a process ({resident_mb} MB "
              f"resident) {fork_ms} ms")


FIRST_CELL = """import time as _t, gc as _gc
_s = _t.perf_counter(); _k = _gc.get_stats()[2]['collections']
import numpy, pandas, sklearn.linear_model, sklearn.model_selection, matplotlib.pyplot
print(_t.perf_counter() - _s, _gc.get_stats()[2]['collections'] - _k)"""


def run_first_cell(crane, runs):
    """A fresh kernel's first cell importing the usual data libraries, in the crane kernel (its
    defaults but dry runs off) and a plain one, `runs` times each in a shuffled order: the
    cell's time measured inside the kernel, and the full collections it made."""
    workdir = install_dry_run_off(crane, "crane-first")
    modes = ["crane", "plain"] * runs
    random.Random(5).shuffle(modes)
    seen = {"crane": [], "plain": []}
    for mode in modes:
        manager, client = session("python3" if mode == "plain" else "crane-first", subprocess.DEVNULL)
        try:
            _, outputs = timed(client, FIRST_CELL)
            text = "".join(o["content"].get("text", "") for o in outputs if o["msg_type"] == "stream")
            seconds, collections = text.split()
            seen[mode].append((float(seconds), int(collections)))
        finally:
            client.stop_channels()
            manager.shutdown_kernel(now=True)
    for mode, runs_seen in seen.items():
        print(f"{mode}: first cell median {1000 * statistics.median(s for s, _ in runs_seen):.0f} ms in the kernel, "
              f"full collections {[c for _, c in runs_seen]}")


def run_returns(crane, runs):
    """`%crane undo` to the snapshot before a cell (a fork's takeover) and to the one before the
    first cell (the fresh start: a new kernel, started and prepared), `runs` times each in fresh
    kernels; the magic's time from request to reply and idle."""
    workdir = install_dry_run_off(crane, "crane-returns")
    seen = {"takeover": [], "fresh start": []}
    for _ in range(runs):
        for kind, back in (("takeover", 1), ("fresh start", 3)):
            manager, client = session("crane-returns", subprocess.DEVNULL)
            try:
                timed(client, "import numpy, pandas, sklearn.linear_model, matplotlib.pyplot")
                timed(client, "x = 1")
                timed(client, "y = 2")
                elapsed, outputs = timed(client, f"%crane undo {back}")
                text = "".join(o["content"].get("text", "") for o in outputs if o["msg_type"] == "stream")
                assert "undone" in text and (kind == "takeover") != ("started afresh" in text), text
                seen[kind].append(elapsed)
            finally:
                client.stop_channels()
                manager.shutdown_kernel(now=True)
    for kind, times in seen.items():
        times.sort()
        print(f"`%crane undo` to {kind}: median {1000 * statistics.median(times):.0f} ms, "
              f"p90 {1000 * times[min(len(times) - 1, int(0.9 * len(times)))]:.0f} ms over {len(times)}")


def bench_notebooks(count):
    """(label, notebook path) of the first `count` fixed notebooks of bench/notebooks."""
    manifest = json.load(open(os.path.join(ROOT, "bench/notebooks/manifest.json")))[:count]
    return [("fixed notebooks of bench/notebooks", os.path.join(ROOT, "bench/notebooks", entry["case"], "fixed.ipynb"))
            for entry in manifest]


def gallery_notebooks(count):
    """(label, notebook path) of `count` gallery notebooks (.cache/gallery, built by
    scripts/gallery.py build), drawn with a fixed seed from all kept ones, so that a run names
    the same sample every time."""
    gallery = sibling("gallery")
    kept_path = gallery.CACHE / "kept.json"
    if not kept_path.exists():
        raise SystemExit("no .cache/gallery/kept.json: run `scripts/gallery.py build` first")
    kept = sorted(json.loads(kept_path.read_text()))
    sample = random.Random(GALLERY_SEED).sample(kept, min(count, len(kept)))
    # The environment scripts/gallery.py runs them in (no figure window, the same hashes each
    # run, no LLM configured), which the kernels inherit.
    environment = gallery.base_env()
    os.environ.clear()
    os.environ.update(environment)
    return [("gallery notebooks", str(gallery.workdir(name) / "notebook.ipynb")) for name in sample]


# The gallery sample's seed: fixed, so that every run of --gallery draws the same notebooks.
GALLERY_SEED = 22


def code_sources(path):
    notebook = json.load(open(path))
    return ["".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "code"]


def run_notebook_modes(crane, notebooks, runs, chosen=("auto", "on", "off"), before=None, sample_memory=False):
    """Run All of `notebooks` in the crane kernel with dry runs auto, on and off (snapshots on
    in all) and in a plain ipykernel, alternating per notebook, each run in a scratch copy of
    the notebook's folder (what a cell writes never reaches the next run)."""
    gallery = sibling("gallery")
    workdir = tempfile.TemporaryDirectory(prefix="crane-bench-modes-")
    prefix = workdir.name
    known = {"auto": ("crane-dry-auto", crane, []), "on": ("crane-dry-on", crane, ["--dry-run", "on"]),
             "off": ("crane-dry-off", crane, ["--dry-run", "off"]), "keep0": ("crane-keep0", crane, ["--dry-run", "off"])}
    crane_modes = [known[mode] for mode in chosen]
    if before:
        crane_modes.append(("crane-before", before, []))
    for name, binary, flags in crane_modes:
        subprocess.run([binary, "kernel", "install", "--prefix", prefix, "--python", sys.executable,
                        "--name", name] + flags, check=True, capture_output=True)
    os.environ["JUPYTER_PATH"] = os.path.join(prefix, "share", "jupyter")
    modes = tuple(name for name, _, _ in crane_modes) + ("python3",)
    totals = {mode: [] for mode in modes}
    memory = {mode: SnapshotMemory() for mode in modes[:-1]} if sample_memory else {}
    cells_run = 0
    for round_ in range(runs):
        round_totals = dict.fromkeys(modes, 0.0)
        first_totals = dict.fromkeys(modes, 0.0)
        start_totals = dict.fromkeys(modes, 0.0)
        for _, path in notebooks:
            sources = code_sources(path)
            # Alternating, and the order turned each notebook, so that no mode always goes first.
            order = modes[round_ % len(modes):] + modes[:round_ % len(modes)]
            for mode in order:
                scratch = tempfile.TemporaryDirectory(prefix="crane-bench-run-")
                copy = gallery.scratch_copy(Path(path), scratch.name)
                started = time.perf_counter()
                manager, client = session(mode, subprocess.DEVNULL, cwd=str(copy.parent))
                start_totals[mode] += time.perf_counter() - started
                if mode in memory:
                    memory[mode].root = manager.provisioner.process.pid
                try:
                    if mode == "crane-keep0":
                        timed(client, "%crane snapshot-keep 0")
                    times = [timed(client, source)[0] for source in sources]
                    round_totals[mode] += sum(times)
                    first_totals[mode] += times[0]
                finally:
                    if mode in memory:
                        memory[mode].root = None
                    client.stop_channels()
                    manager.shutdown_kernel(now=False)
                    scratch.cleanup()
            if round_ == 0:
                cells_run += len(sources)
        for mode in modes:
            totals[mode].append(round_totals[mode])
        print(f"round {round_ + 1}: " + ", ".join(f"{mode} {round_totals[mode]:.2f} s" for mode in modes), flush=True)
        print("  of which the notebooks' first cells: " + ", ".join(f"{mode} {first_totals[mode]:.2f} s" for mode in modes),
              flush=True)
        print("  kernel start-ups (not in the totals): " + ", ".join(f"{mode} {start_totals[mode]:.2f} s" for mode in modes),
              flush=True)
    plain = statistics.median(totals["python3"])
    print(f"{len(notebooks)} {notebooks[0][0]} ({cells_run} cells), Run All, medians of {runs} rounds:")
    labels = {"crane-dry-auto": "crane kernel, snapshots on, dry runs auto (default)",
              "crane-dry-on": "crane kernel, snapshots on, dry runs on",
              "crane-dry-off": "crane kernel, snapshots on, dry runs off",
              "crane-keep0": "crane kernel, no snapshots (snapshot-keep 0), dry runs off",
              "crane-before": f"crane kernel of {before}, default settings",
              "python3": "plain ipykernel"}
    for mode in modes:
        total = statistics.median(totals[mode])
        print(f"  {labels[mode]}: {total:.2f} s, {total / plain:.3f}x plain")
    for mode in memory:
        memory[mode].stop = True
        print(f"  peak private memory of the snapshots, {labels[mode]}: {memory[mode].peak / 1e6:.1f} MB "
              f"({memory[mode].peak_count} snapshot(s) then)")


PHASES = {
    "in crane before the kernel got it": r"([\d.]+) ms in crane before the kernel got it",
    "check": r"check ([\d.]+) ms",
    "analysis": r"analysis ([\d.]+) ms",
    "probe round trip": r"probe ([\d.]+) ms",
    "probe in the kernel": r"([\d.]+) ms of it in the kernel's probe",
    "detectors": r"detectors ([\d.]+) ms",
    "kernel ran the cell": r"the kernel ran it in ([\d.]+) ms",
}


def print_phases(text):
    """Medians of the phases `crane kernel serve --timings` logged for the checked light cells."""
    lines = [line for line in text.splitlines() if "timings: cell" in line and "check " in line]
    print(f"phases of {len(lines)} checked cells (medians, ms):", ", ".join(
        f"{name} {statistics.median(values):.1f}"
        for name, pattern in PHASES.items()
        if (values := [float(m.group(1)) for line in lines if (m := re.search(pattern, line))])))


if __name__ == "__main__":
    main()
