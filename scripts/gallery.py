"""The gallery corpus: real notebooks nobody here wrote, run through crane to count wrong holds.

`build` fetches the sdists of scikit-learn 1.9.1 and matplotlib 3.11.2 from PyPI (the source
archive only, nothing is built), converts each sphinx-gallery script of their `examples/` into a
notebook (the top docstring and the comment blocks after `# %%` become markdown cells) and keeps
the notebooks that run cleanly offline in a plain ipykernel within a time limit (a notebook
that fails, times out or tries the network is left out). `check` runs every cell of every kept
notebook, and of the fixed notebooks of bench/notebooks, through `crane run`, through crane's
kernel (nbclient with the crane kernelspec) and through `crane check --every-unexecuted
--dry-run`, and lists every cell crane held or predicted to crash.

Everything is cached under .cache/gallery/ (ignored by git): a second run only does what is new.

    .venv/bin/python scripts/gallery.py build [--limit N] [--shard I/N] [--timeout 60]
    .venv/bin/python scripts/gallery.py check --crane target/release/crane [--limit N] [--shard I/N]
"""

import argparse
import concurrent.futures
import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache" / "gallery"
SOURCES = [("scikit-learn", "1.9.1", "scikit_learn-1.9.1.tar.gz"),
           ("matplotlib", "3.11.2", "matplotlib-3.11.2.tar.gz")]
BENCH = ROOT / "bench" / "notebooks"
WORKERS = 2


def log(message):
    print(message, file=sys.stderr, flush=True)


# --- sources -------------------------------------------------------------------------------------

def sdist(project, version, filename):
    """The sdist archive, fetched once through PyPI's simple index (PEP 691) and hash-checked."""
    path = CACHE / "sdist" / filename
    if path.exists():
        return path
    request = urllib.request.Request(f"https://pypi.org/simple/{project}/",
                                     headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        files = json.load(response)["files"]
    entry = next((f for f in files if f["filename"] == filename), None)
    if entry is None:
        raise SystemExit(f"{project} {version}: no sdist {filename} on PyPI")
    log(f"downloading {entry['url']}")
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".part")
    with urllib.request.urlopen(entry["url"], timeout=300) as response, open(partial, "wb") as out:
        shutil.copyfileobj(response, out)
    digest = hashlib.sha256(partial.read_bytes()).hexdigest()
    if digest != entry["hashes"]["sha256"]:
        partial.unlink()
        raise SystemExit(f"{filename}: sha256 {digest} is not PyPI's {entry['hashes']['sha256']}")
    partial.rename(path)
    return path


def examples(project, archive):
    """{path below examples/: bytes} of every file of the sdist's example gallery (`examples/`,
    matplotlib's `galleries/examples/`)."""
    found = {}
    with tarfile.open(archive) as tar:
        for member in tar:
            parts = Path(member.name).parts[1:]
            if parts[:2] == ("galleries", "examples"):
                parts = parts[1:]
            if member.isfile() and len(parts) > 1 and parts[0] == "examples":
                found["/".join(parts[1:])] = tar.extractfile(member).read()
    return found


# --- conversion ----------------------------------------------------------------------------------

SEPARATOR = re.compile(r"^(# ?%%.*|#{20,})\s*$")


def to_notebook(source):
    """A sphinx-gallery script as a notebook, or None when it is not a gallery script."""
    match = re.match(r'\s*(?:[rRuU]?)("""|\'\'\')(.*?)\1\s*\n', source, re.S)
    if not match:
        return None
    cells = [nbformat.v4.new_markdown_cell(match.group(2).strip())]
    blocks, current = [], []
    for line in source[match.end():].splitlines():
        if SEPARATOR.match(line):
            blocks.append(current)
            current = []
        else:
            current.append(line)
    blocks.append(current)
    for index, block in enumerate(blocks):
        # After a separator, the leading comment lines are the block's text.
        text = []
        if index > 0:
            while block and (block[0].startswith("#") or not block[0].strip()) and not block[0].startswith("#!"):
                line = block.pop(0)
                text.append(line[2:] if line.startswith("# ") else line.lstrip("#"))
        if "".join(text).strip():
            cells.append(nbformat.v4.new_markdown_cell("\n".join(text).strip()))
        code = "\n".join(block).strip("\n")
        if code.strip():
            cells.append(nbformat.v4.new_code_cell(code))
    if not any(cell.cell_type == "code" for cell in cells):
        return None
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


# --- running a notebook offline ------------------------------------------------------------------

def offline(command):
    """`command` with no network but the loopback the kernel talks over (a new net namespace)."""
    if shutil.which("unshare") and shutil.which("ip") and os.geteuid() == 0:
        return ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "offline", *command]
    return command


def run_bounded(command, cwd, limit, env=None):
    """(returncode or None on timeout, stdout, stderr). Every process the command started ends
    with it, even those that left its process group (loky's and multiprocessing's helpers): they
    are found by a token in their environment."""
    token = uuid.uuid4().hex
    env = dict(env or os.environ, CRANE_GALLERY_RUN=token)
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=err, text=True,
                                   start_new_session=True)
        try:
            code = process.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            code = None
        for pid in started_with(token):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        process.wait()
        out.seek(0)
        err.seek(0)
        return code, out.read(), err.read()


def started_with(token):
    """Pids of the processes whose environment holds CRANE_GALLERY_RUN=token."""
    needle = f"CRANE_GALLERY_RUN={token}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    if needle in f.read().split(b"\0"):
                        found.append(int(entry))
            except OSError:
                pass
    return found


def base_env():
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONHASHSEED="0")
    for name in ("CRANE_LLM", "OPENAI_API_KEY", "GEMINI_API_KEY", "ANTHROPIC_API_KEY"):
        env.pop(name, None)
    return env


def execute_plain(path):
    """Run a notebook in a plain ipykernel (used through `_execute` in a bounded subprocess)."""
    from nbclient import NotebookClient
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, kernel_name="python3", timeout=None,
                   resources={"metadata": {"path": str(Path(path).parent)}}).execute()


def workdir(name):
    return CACHE / "work" / name.removesuffix(".py")


def validate(task):
    """Whether one converted notebook runs cleanly offline within the limit."""
    name, limit = task
    folder = workdir(name)
    path = folder / "notebook.ipynb"
    started = time.monotonic()
    code, _, err = run_bounded(offline([sys.executable, __file__, "_execute", str(path)]),
                               folder, limit, base_env())
    seconds = round(time.monotonic() - started, 1)
    if code is None:
        return name, {"kept": False, "why": f"timed out after {limit} s", "seconds": seconds}
    if code != 0:
        plain = re.sub(r"\x1b\[[0-9;]*m", "", err)
        last = [line for line in plain.strip().splitlines() if line.strip()][-1:] or ["failed"]
        return name, {"kept": False, "why": last[0][:200], "seconds": seconds}
    return name, {"kept": True, "seconds": seconds}


def select(items, limit, shard):
    if shard:
        index, count = (int(x) for x in shard.split("/"))
        items = [item for position, item in enumerate(items) if position % count == index - 1]
    return items[:limit] if limit else items


def load(path):
    return json.loads(path.read_text()) if path.exists() else {}


def build(args):
    results_path = CACHE / "validated.json"
    results = load(results_path)
    notebooks = []
    for project, version, filename in SOURCES:
        archive = sdist(project, version, filename)
        files = examples(project, archive)
        scripts = sorted(path for path in files if path.endswith(".py"))
        converted = 0
        for relative in scripts:
            name = f"{project}/{relative}"
            nb = to_notebook(files[relative].decode("utf-8"))
            if nb is None:
                continue
            converted += 1
            folder = workdir(name)
            path = folder / "notebook.ipynb"
            text = nbformat.writes(nb)
            digest = hashlib.sha256(text.encode()).hexdigest()
            if not path.exists() or path.read_text() != text:
                folder.mkdir(parents=True, exist_ok=True)
                # Data an example reads by relative path lies next to it.
                here = relative.rpartition("/")[0]
                for other, data in files.items():
                    if other.rpartition("/")[0] == here and not other.endswith(".py"):
                        (folder / other.rpartition("/")[2]).write_bytes(data)
                path.write_text(text)
            notebooks.append((name, digest))
        log(f"{project} {version}: {len(scripts)} example scripts, {converted} converted")
    # The order shards are taken from, so that `check --shard I/N` checks the notebooks that
    # `build --shard I/N` validated.
    (CACHE / "order.json").write_text(json.dumps([name for name, _ in notebooks], indent=1))
    chosen = select(notebooks, args.limit, args.shard)
    todo = [(name, args.timeout) for name, digest in chosen
            if results.get(name, {}).get("digest") != digest or results[name].get("limit") != args.timeout]
    digests = dict(notebooks)
    log(f"{len(chosen)} notebooks selected, {len(chosen) - len(todo)} already validated, "
        f"{len(todo)} to run offline ({WORKERS} at a time, {args.timeout} s each at most)")
    with concurrent.futures.ThreadPoolExecutor(max_workers=WORKERS) as pool:
        for done, (name, result) in enumerate(pool.map(validate, todo), 1):
            results[name] = dict(result, digest=digests[name], limit=args.timeout)
            log(f"[{done}/{len(todo)}] {'kept' if result['kept'] else 'left out'} {name}"
                f" ({result['seconds']} s){'' if result['kept'] else ': ' + result['why']}")
            results_path.write_text(json.dumps(results, indent=1, sort_keys=True))
    kept = [name for name, _ in chosen if results.get(name, {}).get("kept")]
    cells = sum(code_cells(workdir(name) / "notebook.ipynb") for name in kept)
    (CACHE / "kept.json").write_text(json.dumps(
        sorted(name for name, result in results.items()
               if result.get("kept") and name in digests), indent=1))
    print(f"kept {len(kept)} of {len(chosen)} notebooks ({cells} code cells) that run offline "
          f"within {args.timeout} s")


def code_cells(path):
    return sum(cell.cell_type == "code" for cell in nbformat.read(path, as_version=4).cells)


# --- checking through crane ----------------------------------------------------------------------

def corpus(args):
    """(label, notebook path) of every notebook `check` runs. `--shard I/N` takes the gallery
    notebooks of `build --shard I/N` (the same positions among all converted notebooks) and the
    I-th of N shards of bench/notebooks, so that the N shards cover each notebook once."""
    kept = json.loads((CACHE / "kept.json").read_text()) if (CACHE / "kept.json").exists() else []
    if not kept and not args.bench_only:
        log("no gallery notebooks kept yet: run `build` first (checking bench/notebooks only)")
    if args.shard and kept:
        order_path = CACHE / "order.json"
        if not order_path.exists():
            raise SystemExit("no .cache/gallery/order.json: run `build` first")
        kept = set(kept)
        kept = [name for name in select(json.loads(order_path.read_text()), None, args.shard)
                if name in kept]
    items = [] if args.bench_only else [(name, workdir(name) / "notebook.ipynb") for name in kept]
    manifest = json.loads((BENCH / "manifest.json").read_text())
    bench = [(f"bench/{case['case']}", BENCH / case["case"] / "fixed.ipynb") for case in manifest]
    items += select(bench, None, args.shard)
    return items[:args.limit] if args.limit else items


def scratch_copy(path, into):
    """A copy of the notebook's folder, so that what a cell writes never lands in the corpus."""
    target = Path(into) / "nb"
    shutil.copytree(path.parent, target, ignore=shutil.ignore_patterns("out-*.ipynb"))
    return target / path.name


def crane_json(path, limit, command):
    """(exit code, parsed stdout) of crane run offline in a scratch copy of the notebook's
    folder; (None, {"error": ...}) when it timed out or printed no JSON."""
    with tempfile.TemporaryDirectory(prefix="crane-gallery-") as tmp:
        copy = scratch_copy(path, tmp)
        code, stdout, stderr = run_bounded(offline(command(copy, tmp)), copy.parent, limit, base_env())
        if code is None:
            return None, {"error": f"timed out after {limit} s"}
        try:
            return code, json.loads(stdout)
        except json.JSONDecodeError:
            return None, {"error": f"exit {code}: {stderr.strip()[-300:]}"}


def through_run(crane, python, label, path, limit):
    """Cells checked and held by `crane run` as a user runs it (its default detectors: the
    rules, and dry runs as `--dry-run` defaults), every cell, top to bottom."""
    code, summary = crane_json(path, limit, lambda copy, tmp: [
        crane, "run", str(copy), "-o", str(Path(tmp) / "out.ipynb"), "--python", python, "--isolated",
        "--format", "json"])
    if code is None:
        return summary
    held = []
    for cell in summary["cells"]:
        if cell["fate"] == "held":
            verdict = cell.get("verdict") or {}
            held.append({"cell": cell["cell"], "rule": cell.get("rule"),
                         "exception": verdict.get("exception"), "message": verdict.get("diagnosis")})
    return {"checked": sum(c["fate"] in ("ran", "crashed", "held") for c in summary["cells"]),
            "cells": len(summary["cells"]), "held": held,
            "crashed": [c["cell"] for c in summary["cells"] if c["fate"] == "crashed"],
            "not_reached": sum(c["fate"] == "not_reached" for c in summary["cells"]),
            "dry_runs": [c["dry_run"]["status"] for c in summary["cells"] if c.get("dry_run")],
            "exit": code}


def through_dry_run(crane, python, label, path, limit):
    """Cells `crane check --every-unexecuted --dry-run` predicts to crash: rules and a dry run
    in a sealed fork of the kernel, each cell against the state the cells before it left."""
    code, reports = crane_json(path, limit, lambda copy, tmp: [
        crane, "check", str(copy), "--every-unexecuted", "--dry-run", "--python", python,
        "--isolated", "--format", "json", "--quiet"])
    if code is None:
        return reports
    reports = reports if isinstance(reports, list) else [reports]
    held, statuses, causes = [], {}, {}
    for report in reports:
        if "error" in report and "verdict" not in report:
            return {"error": f"exit {code}: {report['error'].get('message', '')[-300:]}"}
        for finding in report.get("findings", []):
            if finding.get("detector") == "dry_run":
                statuses[finding["status"]] = statuses.get(finding["status"], 0) + 1
                if finding["status"] not in ("observed", "abridged"):
                    cause = f"{finding['status']}: {cause_of(finding.get('diagnosis', ''))}"
                    causes[cause] = causes.get(cause, 0) + 1
        verdict = report.get("verdict") or {}
        if verdict.get("crash"):
            deciding = [f["status"] for f in report.get("findings", [])
                        if f.get("crash") and f.get("detector") == verdict.get("detector")]
            held.append({"cell": (report.get("target_cell") or {}).get("index"), "rule": verdict.get("rule"),
                         "detector": verdict.get("detector"), "exception": verdict.get("exception"),
                         "status": deciding[0] if deciding else None,
                         "message": verdict.get("diagnosis")})
    return {"checked": len(reports), "held": held, "dry_run": statuses, "causes": causes, "exit": code}


def cause_of(diagnosis):
    """A dry run's reason for deciding nothing, without what names this cell (its line, the
    path it tried), so that reasons can be counted over the corpus."""
    cause = re.sub(r"'[^']*'", "'…'", diagnosis)
    cause = re.sub(r"\bline \d+", "line N", cause)
    return re.sub(r"\b\d+(\.\d+)?\b", "N", cause)[:160]


def execute_crane_kernel(path, out):
    """Run a notebook on the crane kernel through nbclient, every cell even past a held one."""
    from nbclient import NotebookClient
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, kernel_name="crane-python3", timeout=None, allow_errors=True,
                   resources={"metadata": {"path": str(Path(path).parent)}}).execute()
    nbformat.write(nb, out)


def through_kernel(crane, python, label, path, limit, jupyter_path):
    """Cells checked and held by crane's kernel driven by nbclient, as papermill drives it."""
    with tempfile.TemporaryDirectory(prefix="crane-gallery-") as tmp:
        copy = scratch_copy(path, tmp)
        out = Path(tmp) / "out.ipynb"
        env = dict(base_env(), JUPYTER_PATH=jupyter_path)
        code, _, stderr = run_bounded(
            offline([sys.executable, __file__, "_execute_crane", str(copy), str(out)]),
            copy.parent, limit, env)
        if code is None:
            return {"error": f"timed out after {limit} s"}
        if code != 0:
            return {"error": f"exit {code}: {stderr.strip()[-300:]}"}
        nb = nbformat.read(out, as_version=4)
        held, crashed, checked = [], [], 0
        for index, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
            checked += cell.execution_count is not None or bool(cell.outputs)
            for output in cell.outputs:
                if output.get("output_type") == "error":
                    if output["ename"] == "CranePredictedCrash":
                        held.append({"cell": index, "message": output["evalue"]})
                    else:
                        crashed.append(index)
        return {"checked": checked, "cells": index + 1, "held": held, "crashed": crashed}


@contextlib.contextmanager
def crane_kernelspec(crane, python):
    """The JUPYTER_PATH of a temporary prefix holding the kernelspec `crane-python3` that
    `crane kernel install` writes with its default settings; the prefix is removed after."""
    prefix = tempfile.mkdtemp(prefix="crane-gallery-kernel-")
    try:
        subprocess.run([crane, "kernel", "install", "--prefix", prefix, "--python", python],
                       check=True, capture_output=True)
        yield os.path.join(prefix, "share", "jupyter")
    finally:
        shutil.rmtree(prefix, ignore_errors=True)


def check(args):
    crane = str(Path(args.crane).resolve())
    python = str(Path(sys.executable))
    items = corpus(args)
    results_path = CACHE / f"checked-{hashlib.sha256(Path(crane).read_bytes()).hexdigest()[:12]}.json"
    results = load(results_path)
    with crane_kernelspec(crane, python) as jupyter_path:
        todo = [(label, path) for label, path in items
                if any(way not in results.get(label, {}) for way in args.through)]
        log(f"{len(items)} notebooks, {len(items) - len(todo)} already checked with this binary, "
            f"{len(todo)} to run ({WORKERS} at a time)")

        def one(item):
            label, path = item
            result = dict(results.get(label, {}))
            if "run" in args.through and "run" not in result:
                result["run"] = through_run(crane, python, label, path, args.timeout)
            if "kernel" in args.through and "kernel" not in result:
                result["kernel"] = through_kernel(crane, python, label, path, args.timeout, jupyter_path)
            if "dry-run" in args.through and "dry-run" not in result:
                result["dry-run"] = through_dry_run(crane, python, label, path, args.timeout)
            return label, result

        with concurrent.futures.ThreadPoolExecutor(max_workers=WORKERS) as pool:
            for done, (label, result) in enumerate(pool.map(one, todo), 1):
                results[label] = result
                results_path.write_text(json.dumps(results, indent=1, sort_keys=True))
                marks = []
                for way in args.through:
                    r = result[way]
                    marks.append(f"{way}: " + (r["error"] if "error" in r else
                                               f"{r['checked']} checked, {len(r['held'])} held"))
                log(f"[{done}/{len(todo)}] {label}: {'; '.join(marks)}")
    report(items, results, args.through)


def report(items, results, through):
    labels = [label for label, _ in items if label in results]
    print(f"{len(labels)} notebooks ({sum(l.startswith('bench/') for l in labels)} of bench/notebooks)")
    for way in through:
        rows = [results[label][way] for label in labels if way in results[label]]
        done = [r for r in rows if "error" not in r]
        held = sum(len(r["held"]) for r in done)
        name = {"run": "run", "kernel": "kernel (nbclient)", "dry-run": "check --every-unexecuted --dry-run"}[way]
        print(f"crane {name}: {sum(r['checked'] for r in done)} cells "
              f"checked in {len(done)} notebooks, {held} held; "
              f"{len(rows) - len(done)} notebooks not completed")
        warned = sum(uncertain(h) for r in done for h in r["held"])
        if warned:
            print(f"  of which {warned} uncertain (abridged_uncertain: a crash an abridged dry run saw "
                  f"that may be an artefact of abridging; it warns and never holds a cell, but "
                  f"`crane check` reports it as a crash at confidence 0.5, exit 1)")
        for label in labels:
            r = results[label].get(way, {})
            if "error" in r:
                print(f"  not completed  {label}: {r['error']}")
            for h in r.get("held", []):
                rule = f" {h['rule']}" if h.get("rule") else ""
                kind = "uncertain" if uncertain(h) else "held"
                print(f"  {kind}  {label} code cell {h['cell']}{rule}: {h.get('message')}")
            if r.get("crashed"):
                print(f"  raised  {label} code cells {r['crashed']}")
        if way == "run":
            statuses = [status for r in done for status in r.get("dry_runs", [])]
            if statuses:
                print(f"  cells dry-run (--dry-run's default chose them): {len(statuses)}: " + ", ".join(
                    f"{statuses.count(status)} {status}" for status in sorted(set(statuses))))
        if way == "dry-run":
            totals = {}
            for r in done:
                for status, count in r.get("dry_run", {}).items():
                    totals[status] = totals.get(status, 0) + count
            print("  dry-run findings: " + ", ".join(f"{n} {status}" for status, n in sorted(totals.items())))
            causes, unknown = {}, 0
            for r in done:
                if "causes" not in r:
                    unknown += 1
                for cause, count in r.get("causes", {}).items():
                    causes[cause] = causes.get(cause, 0) + count
            for cause, count in sorted(causes.items(), key=lambda item: -item[1]):
                print(f"    {count:4}  {cause}")
            if unknown:
                print(f"    (causes not recorded for {unknown} notebooks checked before they were)")


def uncertain(held):
    """Whether a cell counted as held by the dry-run path is an `abridged_uncertain` verdict
    (its diagnosis says the crash may be an artefact of abridging)."""
    return held.get("status") == "abridged_uncertain" or (
        held.get("detector") == "dry_run" and "may be an artefact" in (held.get("message") or ""))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("build", "check"):
        sub = commands.add_parser(name)
        sub.add_argument("--limit", type=int, help="at most N notebooks (after --shard)")
        sub.add_argument("--shard", help="I/N: every N-th notebook starting at the I-th (1-based)")
        sub.add_argument("--timeout", type=int, default=60 if name == "build" else 300,
                         help="seconds a notebook may take in all")
    commands.choices["check"].add_argument("--crane", default=str(ROOT / "target/release/crane"))
    commands.choices["check"].add_argument("--through", nargs="+", default=["run", "kernel", "dry-run"],
                                           choices=["run", "kernel", "dry-run"])
    commands.choices["check"].add_argument("--bench-only", action="store_true",
                                           help="only the fixed notebooks of bench/notebooks")
    commands.add_parser("_execute").add_argument("path")
    private = commands.add_parser("_execute_crane")
    private.add_argument("path")
    private.add_argument("out")
    args = parser.parse_args()
    if args.command == "_execute":
        execute_plain(args.path)
    elif args.command == "_execute_crane":
        execute_crane_kernel(args.path, args.out)
    elif args.command == "build":
        build(args)
    else:
        check(args)


if __name__ == "__main__":
    main()
