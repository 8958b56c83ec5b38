"""Real notebooks through a plain ipykernel and through the crane kernel, compared cell by cell.

crane's kernel must not break a notebook that runs without it. This runs every code cell of each
notebook of one or more corpora in (a) a plain ipykernel and (b) the crane kernel as
`crane kernel install` writes it (default settings), both driven by nbclient with
`allow_errors=True` (every cell runs, even after an error), a per-cell timeout and a
per-notebook limit, offline (a new network namespace when run as root), with MPLBACKEND=Agg, each
run in its own scratch copy of the notebook's folder (the data files a notebook reads lie beside
it; the corpus is never written). Then it compares each cell's outcome:

    ok | error ENAME | held (crane's CranePredictedCrash) | stopped (crane stopped it while it
    ran) | timeout | not reached (the notebook's limit or a dead kernel ended the run first)

and, for the crane kernel, whether crane rolled the kernel back after the cell ("crane: rolled
back ..."). A cell whose outcome differs is run again in plain (its notebook, once more): a cell
whose plain outcome changes between the two plain runs is flaky (time, randomness, memory) and is
counted apart, as are cells that timed out in either kernel or were not reached.

Counted per corpus: cells compared; false holds (ok in plain, held by crane); cells broken by
crane (ok in plain, raised or stopped under crane) and the notebooks with one; true holds (held
by crane, raised in plain); rollbacks; other differences (a different error, or ok under crane
where plain raised). Every differing cell (notebook, code cell index, both outcomes, crane's
message's first line, a held cell's lines saying which of its statements did not run and why)
goes to .cache/compare/<corpus>-<build>.json (--build, else the working
tree's `git describe`).

A corpus is a folder of notebooks (every .ipynb below it), or the gallery corpus's cache folder
(.cache/gallery, `scripts/gallery.py build`), whose kept notebooks are taken from kept.json.

    .venv/bin/python scripts/compare-kernels.py --corpus ../shared/corpora/pydata-book \\
        [--corpus .cache/gallery ...] [--crane target/release/crane] [--jobs 1] [--limit N] \\
        [--timeout 120] [--notebook-limit 1800] [--build NAME]
"""

import argparse
import concurrent.futures
import json
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import nbformat

sys.dont_write_bytecode = True  # no scripts/__pycache__ in the working tree
sys.path.insert(0, str(Path(__file__).resolve().parent))
import gallery  # noqa: E402  (scripts/ is no package: its shared helpers are imported by path)

ROOT = gallery.ROOT
OUT = ROOT / ".cache" / "compare"
HELD = "CranePredictedCrash"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


# --- one notebook in one kernel (run in a bounded subprocess) -----------------------------------

def execute(kernel, path, record, timeout):
    """Run every code cell of `path` in `kernel`, appending each cell's outcome to `record` (JSON
    lines) as soon as it is known, so that a run the notebook limit kills still tells how far it
    went. A cell past the per-cell timeout is interrupted (nbclient's interrupt_on_timeout)."""
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    nb = nbformat.read(path, as_version=4)
    replies = {}
    client = NotebookClient(nb, kernel_name=kernel, timeout=timeout, interrupt_on_timeout=True,
                            allow_errors=True, resources={"metadata": {"path": str(Path(path).parent)}},
                            on_cell_executed=lambda cell, cell_index, execute_reply: replies.update(
                                {cell_index: (execute_reply or {}).get("content", {})}))
    with open(record, "a") as out, client.setup_kernel():
        index = -1
        for position, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            index += 1
            started = time.monotonic()
            try:
                client.execute_cell(cell, position)
            except DeadKernelError:
                out.write(json.dumps({"cell": index, "outcome": "dead"}) + "\n")
                return
            seconds = time.monotonic() - started
            result = outcome(cell.outputs, replies.pop(position, {}))
            if seconds >= timeout:
                result["outcome"] = "timeout"
            out.write(json.dumps(dict(result, cell=index, seconds=round(seconds, 2))) + "\n")
            out.flush()


def outcome(outputs, reply):
    """{outcome, message, rolled_back, warned} of one executed cell, from its outputs and its
    execute reply (an error the kernel shows as text only, such as IPython's UsageError, has a
    reply with status "error" and no error output)."""
    result = {"outcome": "ok", "message": None, "rolled_back": False, "warned": False}
    if reply.get("status") == "error":
        ename = reply.get("ename") or "error"
        result.update(outcome=f"error {ename}", message=first_line(f"{ename}: {reply.get('evalue', '')}"))
    for output in outputs:
        if output.get("output_type") == "error":
            if output["ename"] == HELD:
                result.update(outcome="held", message=first_line(output["evalue"]),
                              not_run=not_run("\n".join(output.get("traceback") or [])))
            elif result["outcome"] != "held":
                result.update(outcome=f"error {output['ename']}",
                              message=first_line(f"{output['ename']}: {output['evalue']}"))
        text = output.get("text") or output.get("data", {}).get("text/plain") or ""
        text = ANSI.sub("", "".join(text) if isinstance(text, list) else text)
        for line in text.splitlines():
            if line.startswith(("crane: rolled back", "crane: stopped this cell")):
                result["rolled_back"] = True
                result["crane"] = line[:400]
                if line.startswith("crane: stopped this cell"):
                    result["outcome"] = "stopped"
            elif line.startswith(("crane: interrupted this cell", "crane: not rolled back")):
                result["crane"] = line[:400]
            elif line.startswith("crane warning:"):
                result["warned"] = True
    return result


def not_run(text):
    """The lines of a held cell's message that say which of its statements before the crash
    crane did not run, and why: what tells a false hold's cause without reading the cell."""
    return [line[:400] for line in ANSI.sub("", text or "").splitlines()
            if "did not run" in line or line.startswith("crane did not run")]


def first_line(text):
    lines = [line for line in ANSI.sub("", text or "").splitlines() if line.strip()]
    return lines[0][:400] if lines else ""


def run_notebook(kernel, path, args, jupyter_path):
    """{code cell index: outcome} of `path` run in `kernel`, offline, in a scratch copy of its
    folder, within the notebook limit; cells it did not reach are missing."""
    with tempfile.TemporaryDirectory(prefix="crane-compare-") as tmp:
        copy = gallery.scratch_copy(path, tmp)
        record = Path(tmp) / "cells.jsonl"
        record.touch()
        env = dict(gallery.base_env(), JUPYTER_PATH=jupyter_path)
        command = [sys.executable, __file__, "_execute", kernel, str(copy), str(record), str(args.timeout)]
        code, _, stderr = gallery.run_bounded(gallery.offline(command), copy.parent,
                                              args.notebook_limit, env)
        cells = {}
        for line in record.read_text().splitlines():
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue  # the last line, cut short by the limit
            cells[entry["cell"]] = entry
        why = None
        if code is None:
            why = f"notebook limit ({args.notebook_limit} s)"
        elif code != 0:
            why = f"exit {code}: {first_line(stderr.strip().splitlines()[-1] if stderr.strip() else '')}"
        return cells, why


# --- comparing ----------------------------------------------------------------------------------

def classify(plain, crane):
    """The kind of difference between a cell's plain and crane outcomes, or None when alike."""
    p, c = plain["outcome"], crane["outcome"]
    if "timeout" in (p, c):
        return "timeout"
    if c == "held":
        return "true hold" if p.startswith("error") else "false hold"
    if p == "ok" and (c.startswith("error") or c == "stopped"):
        return "broken"
    if p != c:
        return "other"
    return None


def compare(label, path, args, jupyter_path):
    """The comparison of one notebook: per-cell differences and counts."""
    started = time.monotonic()
    plain, plain_why = run_notebook("python3", path, args, jupyter_path)
    crane, crane_why = run_notebook("crane-python3", path, args, jupyter_path)
    total = gallery.code_cells(path)
    result = {"notebook": label, "cells": total, "plain_stop": plain_why, "crane_stop": crane_why,
              "plain_seconds": sum(c.get("seconds", 0) for c in plain.values()),
              "crane_seconds": sum(c.get("seconds", 0) for c in crane.values()),
              "compared": 0, "not_reached": 0, "rollbacks": 0, "warnings": 0, "differences": []}
    for index in range(total):
        p, c = plain.get(index), crane.get(index)
        if c and c.get("rolled_back"):
            result["rollbacks"] += 1
        if c and c.get("warned"):
            result["warnings"] += 1
        if not p or not c or "dead" in (p["outcome"], c["outcome"]):
            result["not_reached"] += 1
            continue
        kind = classify(p, c)
        if kind != "timeout":
            result["compared"] += 1
        if kind or c.get("rolled_back"):
            result["differences"].append({
                "notebook": label, "cell": index, "kind": kind or "rollback", "plain": p["outcome"],
                "plain_message": p.get("message"), "crane": c["outcome"],
                "crane_message": c.get("message") or c.get("crane"), "crane_note": c.get("crane"),
                "crane_not_run": c.get("not_run") or None,
                "rolled_back": c.get("rolled_back", False)})
    # A second plain run tells a cell that is flaky in plain from crane's doing.
    suspects = [d for d in result["differences"] if d["kind"] not in ("timeout", "rollback")]
    if suspects:
        again, _ = run_notebook("python3", path, args, jupyter_path)
        for difference in suspects:
            second = again.get(difference["cell"])
            difference["plain_again"] = second["outcome"] if second else "not reached"
            if difference["plain_again"] != difference["plain"]:
                difference["kind"] = "flaky"
                result["compared"] -= 1
    result["seconds"] = round(time.monotonic() - started, 1)
    return result


KINDS = ("false hold", "broken", "true hold", "other", "timeout", "flaky")


def summarize(notebooks, differences):
    """Counts over the notebooks of one corpus (`notebooks`: each one's counts; `differences`:
    every differing cell of them)."""
    counts = {kind: 0 for kind in KINDS}
    for difference in differences:
        if difference["kind"] in counts:
            counts[difference["kind"]] += 1
    broken = {d["notebook"] for d in differences if d["kind"] in ("broken", "false hold")}
    return {
        "notebooks": len(notebooks),
        "cells": sum(r["cells"] for r in notebooks),
        "compared": sum(r["compared"] for r in notebooks),
        "false_holds": counts["false hold"],
        "broken": counts["broken"],
        "notebooks_broken": len(broken),
        "true_holds": counts["true hold"],
        # A held cell's message starts with the exception crane predicts.
        "true_holds_other_exception": sum(
            d["kind"] == "true hold" and not (d["crane_message"] or "").startswith(d["plain"].split()[-1] + " ")
            for d in differences),
        "rollbacks": sum(r["rollbacks"] for r in notebooks),
        "other": counts["other"],
        "timeouts": counts["timeout"],
        "flaky": counts["flaky"],
        "not_reached": sum(r["not_reached"] for r in notebooks),
        "warnings": sum(r["warnings"] for r in notebooks),
        "plain_seconds": round(sum(r["plain_seconds"] for r in notebooks), 1),
        "crane_seconds": round(sum(r["crane_seconds"] for r in notebooks), 1),
    }


COLUMNS = [("notebooks", "notebooks"), ("cells", "code cells"), ("compared", "compared"),
           ("false_holds", "false holds"), ("broken", "broken"), ("notebooks_broken", "nb broken"),
           ("true_holds", "true holds"), ("true_holds_other_exception", "other exc"),
           ("rollbacks", "rollbacks"), ("other", "other diff"),
           ("timeouts", "timeouts"), ("flaky", "flaky"), ("not_reached", "not reached")]


def print_differences(report):
    """Every differing cell of one corpus but those that timed out, one line each."""
    for d in report["differences"]:
        if d["kind"] != "timeout":
            print(f"  {d['kind']:10}  {report['corpus']}/{d['notebook']} code cell {d['cell']}: plain {d['plain']}"
                  f"{' (again: ' + d['plain_again'] + ')' if 'plain_again' in d else ''}, "
                  f"crane {d['crane']}{' + rolled back' if d['rolled_back'] else ''}: {d['crane_message']}"
                  f"{' / ' + d['crane_note'] if d.get('crane_note') and d['crane_note'] != d['crane_message'] else ''}")


def print_table(summaries):
    widths = [max(len(title), 8) for _, title in COLUMNS]
    name_width = max([6] + [len(name) for name in summaries])
    print("corpus".ljust(name_width) + "  " + "  ".join(t.rjust(w) for (_, t), w in zip(COLUMNS, widths)))
    for name, summary in summaries.items():
        print(name.ljust(name_width) + "  " + "  ".join(
            str(summary[key]).rjust(w) for (key, _), w in zip(COLUMNS, widths)))


# --- corpora ------------------------------------------------------------------------------------

def notebooks(corpus):
    """(label, path) of the notebooks of a corpus folder, in a fixed order."""
    corpus = Path(corpus)
    kept = corpus / "kept.json"
    if kept.exists():  # the gallery corpus: its kept notebooks, each in its own folder
        return [(name, gallery.workdir(name) / "notebook.ipynb") for name in json.loads(kept.read_text())]
    return [(str(path.relative_to(corpus)), path) for path in sorted(corpus.rglob("*.ipynb"))
            if ".ipynb_checkpoints" not in path.parts]


def git_rev():
    return subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=10"], cwd=ROOT,
                          capture_output=True, text=True).stdout.strip() or "unknown"


def run_corpus(corpus, args, jupyter_path, rev):
    name = Path(corpus).resolve().name
    items = notebooks(corpus)[:args.limit] if args.limit else notebooks(corpus)
    started = time.monotonic()
    results, lock = [], threading.Lock()
    gallery.log(f"{name}: {len(items)} notebooks, {args.jobs} at a time")

    def one(item):
        label, path = item
        result = compare(label, path, args, jupyter_path)
        with lock:
            results.append(result)
            kinds = [d["kind"] for d in result["differences"]]
            marks = ", ".join(f"{kinds.count(k)} {k}" for k in sorted(set(kinds))) or "alike"
            stops = "; ".join(f"{who} stopped: {why}" for who, why in
                              (("plain", result["plain_stop"]), ("crane", result["crane_stop"])) if why)
            gallery.log(f"[{len(results)}/{len(items)}] {name}/{label}: {result['cells']} cells, {marks}"
                        f"{'; ' + stops if stops else ''} ({result['seconds']} s; "
                        f"elapsed {time.monotonic() - started:.0f} s)")
        return result

    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        list(pool.map(one, items))
    order = {label: position for position, (label, _) in enumerate(items)}
    results.sort(key=lambda r: order[r["notebook"]])
    differences = [d for r in results for d in r["differences"]]
    summary = summarize(results, differences)
    report = {"corpus": name, "path": str(corpus), "rev": rev, "crane": args.crane,
              "timeout": args.timeout, "notebook_limit": args.notebook_limit,
              "seconds": round(time.monotonic() - started, 1), "summary": summary,
              "differences": differences,
              "notebooks": [{k: v for k, v in r.items() if k != "differences"} for r in results]}
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{name}-{rev}.json"
    path.write_text(json.dumps(report, indent=1))
    gallery.log(f"{name}: written {path.relative_to(ROOT)}")
    return name, report


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", action="append", help="a folder of notebooks (repeatable)")
    parser.add_argument("--crane", default=str(ROOT / "target/release/crane"), help="the crane binary")
    parser.add_argument("--jobs", type=int, default=1, help="notebooks compared at a time")
    parser.add_argument("--limit", type=int, help="at most N notebooks of each corpus")
    parser.add_argument("--timeout", type=int, default=120, help="seconds a cell may run")
    parser.add_argument("--notebook-limit", type=int, default=1800,
                        help="seconds one notebook may run in one kernel")
    parser.add_argument("--build", help="the crane build's name in the report and the JSON file's "
                                        "name (default: `git describe` of the working tree)")
    if len(sys.argv) > 1 and sys.argv[1] == "_execute":
        kernel, path, record, timeout = sys.argv[2:6]
        execute(kernel, path, record, int(timeout))
        return
    parser.add_argument("--summarize", nargs="+", metavar="JSON",
                        help="run nothing: print the table and the differing cells of saved results")
    args = parser.parse_args()
    if args.summarize:
        summaries = {}
        for path in args.summarize:
            report = json.loads(Path(path).read_text())
            report["summary"] = summarize(report["notebooks"], report["differences"])
            print_differences(report)
            summaries[f"{report['corpus']} ({report['rev']})"] = report["summary"]
        print_table(summaries)
        return
    if not args.corpus:
        parser.error("name at least one --corpus or --summarize")
    args.crane = str(Path(args.crane).resolve())
    rev = args.build or git_rev()
    summaries = {}
    with gallery.crane_kernelspec(args.crane, sys.executable) as jupyter_path:
        for corpus in args.corpus:
            name, report = run_corpus(corpus, args, jupyter_path, rev)
            summaries[name] = report["summary"]
            print_differences(report)
    print(f"build {rev}; cell timeout {args.timeout} s, notebook limit {args.notebook_limit} s")
    print_table(summaries)


if __name__ == "__main__":
    main()
