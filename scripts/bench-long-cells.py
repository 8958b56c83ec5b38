#!/usr/bin/env python3
"""Measure crane's dry run on the long-cell crash/fix pairs (bench/long-cells/dev or held-out).

For each case of the directory's manifest.json and each version (buggy, fixed), runs

    crane check CASE/VERSION.ipynb --cell TARGET --dry-run on --format json

(`--dry-run auto` with this script's option of that name: no dry run where a rule proved the
crash or the fork cannot be sealed)

(one at a time, a timeout per run) and records the dry-run finding (detector `dry_run`: its
`status`, `crash`, `exception`, `line`), the verdict, and the seconds crane took to judge the
target: `timings_ms.extract + timings_ms.detect` of the JSON report, i.e. the check's wall time
minus starting the kernel and executing the cells before the target (`execute_prior`), and
whether a hold rests on a second abridged run's agreement.

A version is *held* when the verdict predicts a crash that `crane run` and the crane kernel hold
(every crash finding but one seen only in an abridged run through a value the abridgement
changed, status `abridged_uncertain`), *warned* when it is not held but a dry-run finding
reports a crash, otherwise it passes. On a buggy version a hold is correct when its exception is the manifest's; a buggy
version neither held nor warned is *missed*. Any hold or warning of a fixed version is false.

    scripts/bench-long-cells.py bench/long-cells/dev --out target/long-cells-dev.json
    scripts/bench-long-cells.py bench/long-cells/dev --case NAME --version buggy
    scripts/bench-long-cells.py bench/long-cells/unseen4 --totals-only   # a folder not to be read

`--kernel` measures the crane kernel instead, as a user meets it: each notebook in a fresh crane
kernel (`crane kernel install`'s kernelspec, default settings, the case folder as working
directory), its executed cells in execution_count order, then the target, timed. A buggy version
is *held* when crane stopped the running cell (or held it before it ran) predicting the manifest's
exception, *warned* when the cell ran into its crash after crane's "will likely raise" line, else
*missed*; a fixed version stopped or held is a false hold, one with such a line a false warning.
The seconds to the verdict are those crane's own line gives ("crane stopped this cell after S s",
"raised it after S s"): the cell's time until crane knew.

Prints a markdown table and totals to stdout; writes everything as JSON to --out. Standard library
only (`--kernel` needs jupyter_client, as in the repository's .venv). Environment: CRANE (the crane binary; default target/release/crane, then target/debug/crane, then `crane` on PATH),
CRANE_PYTHON (the kernel's interpreter; default the repository's .venv/bin/python when it exists).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGET_RATIO = 10 / 60  # at most 10 s to a verdict for a cell that runs 60 s
TENTH = 1 / 10  # the bar: a late crash stopped within a tenth of the cell's time


def crane_binary() -> str:
    """$CRANE, else the repository's release build, its debug build, or `crane` on the PATH."""
    if os.environ.get("CRANE"):
        return os.environ["CRANE"]
    for profile in ("release", "debug"):
        local = REPO / "target" / profile / "crane"
        if local.exists():
            return str(local)
    found = shutil.which("crane")
    if not found:
        raise SystemExit("no crane binary: build it (cargo build --release -p crane) or set CRANE")
    return found


def check(crane: str, notebook: Path, cell: int, timeout: float, mode: str) -> dict:
    command = [crane, "check", str(notebook), "--cell", str(cell), "--dry-run", mode, "--format", "json",
               "--quiet", "--isolated"]
    env = dict(os.environ, MPLBACKEND="Agg")
    venv_python = REPO / ".venv" / "bin" / "python"
    if "CRANE_PYTHON" not in env and venv_python.exists():
        env["CRANE_PYTHON"] = str(venv_python)
    started = time.monotonic()
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"crane ran longer than {timeout:.0f}s", "wall_seconds": round(time.monotonic() - started, 1)}
    wall = round(time.monotonic() - started, 1)
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return {"error": f"exit {proc.returncode}, no JSON report: {' | '.join(tail)}", "wall_seconds": wall}
    if isinstance(report, list):
        report = report[0]
    return {"exit": proc.returncode, "report": report, "wall_seconds": wall}


# Crashes that warn and never hold a cell, as `crane run`, `crane check` and the crane kernel decide:
# one seen in an abridged run through a value the abridgement changed, or one in the replica that
# reads a stand-in.
ARTEFACT_STATUSES = {"abridged_uncertain", "replica_approximate"}


def summarize(item: dict, version: str, run: dict) -> dict:
    row = {
        "case": item["case"],
        "library": item["library"],
        "version": version,
        "target_seconds": (item.get("target_seconds") or {}).get(version),
        "wall_seconds": run.get("wall_seconds"),
        "error": run.get("error"),
    }
    return judged(row, item, version, run)


def judged(row: dict, item: dict, version: str, run: dict, diagnosis_chars: int = 300) -> dict:
    """`row` with what the check `run` reported of the dry run and the verdict, and its outcome
    against the manifest's `item` (shared by scripts/bench-replica.py)."""
    report = run.get("report")
    if report is None:
        row.update(outcome="error", held=False, warned=False)
        return row
    timings = report.get("timings_ms", {})
    dry = [f for f in report.get("findings", []) if f.get("detector") == "dry_run"]
    finding = dry[0] if dry else {}
    verdict = report.get("verdict") or {}
    failures = [f.get("error", "") for f in report.get("detector_failures", []) if f.get("detector") == "dry_run"]
    row.update(
        exit=run.get("exit"),
        dry_run={
            "status": finding.get("status"),
            "crash": finding.get("crash"),
            "exception": finding.get("exception"),
            "line": finding.get("line"),
            "diagnosis": (finding.get("diagnosis") or "")[:diagnosis_chars],
        } if finding else None,
        dry_run_failure=failures[0][:300] if failures else None,
        verdict={
            "crash": verdict.get("crash"),
            "exception": verdict.get("exception"),
            "line": verdict.get("line"),
            "detector": verdict.get("detector"),
        },
        seconds_to_verdict=round((timings.get("extract", 0) + timings.get("detect", 0)) / 1000, 1),
        execute_prior_seconds=round(timings.get("execute_prior", 0) / 1000, 1),
    )
    crashes = [f for f in report.get("findings", []) if f.get("crash")]
    artefacts_only = bool(crashes) and all(f.get("status") in ARTEFACT_STATUSES for f in crashes)
    held = bool(verdict.get("crash")) and not artefacts_only
    warned = not held and any(f.get("crash") for f in dry)
    row["held"], row["warned"] = held, warned
    # Certain through a second run abridged otherwise (docs/dry-run.md, "Abridged runs").
    row["second_abridgement"] = held and "second run abridged otherwise" in (finding.get("diagnosis") or "")
    if version == "buggy":
        if held:
            row["outcome"] = "held" if verdict.get("exception") == item["exception"] else "held, other exception"
        else:
            row["outcome"] = "warned" if warned else "missed"
    else:
        row["outcome"] = "false hold" if held else ("false warning" if warned else "pass")
    return row


# --- the crane kernel (--kernel) -----------------------------------------------------------------

@contextlib.contextmanager
def kernelspec(crane: str, wanted: bool):
    """The environment of a crane kernel as `crane kernel install` writes it (default settings),
    in a temporary prefix removed after; None when not `wanted`."""
    if not wanted:
        yield None
        return
    python = os.environ.get("CRANE_PYTHON") or str(REPO / ".venv" / "bin" / "python")
    with tempfile.TemporaryDirectory(prefix="crane-long-cells-kernel-") as prefix:
        subprocess.run([crane, "kernel", "install", "--prefix", prefix, "--python", python],
                       check=True, capture_output=True)
        # jupyter_client finds kernelspecs through this process's own JUPYTER_PATH.
        os.environ["JUPYTER_PATH"] = os.path.join(prefix, "share", "jupyter")
        yield dict(os.environ, MPLBACKEND="Agg")

HELD_ENAME = "CranePredictedCrash"
STOPPED = re.compile(r"crane stopped this cell after ([0-9.]+) s")
# crane's line under a cell it stopped and rolled back, which stands for its error output should
# that not reach the frontend (it travels on another socket than the reply).
STOPPED_LINE = re.compile(r"crane: stopped this cell after ([0-9.]+) s .*? crashed first\. (\w+) predicted")
LIKELY = re.compile(r"crane warning: this cell will likely raise (\w+)(?: at line (\d+))?: .* raised it after ([0-9.]+) s")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def in_kernel(kernel_env: dict, notebook: Path, target: int, timeout: float) -> dict:
    """The target's outcome in a fresh crane kernel after the notebook's executed cells:
    {"kernel": {"stopped", "held", "ename", "predicted", "stop_seconds", "warning_seconds",
    "warning_exception", "second_abridgement", "seconds", "beside"}} or {"error": ...}, where
    "beside" is `%crane status`'s line on the target's dry run beside it."""
    import nbformat
    from jupyter_client import KernelManager

    nb = nbformat.read(notebook, as_version=4)
    cells = [cell for cell in nb.cells if cell.cell_type == "code"]
    executed = [i for _, i in sorted((c.execution_count, i) for i, c in enumerate(cells)
                                     if c.execution_count is not None)]
    km = KernelManager(kernel_name="crane-python3")
    started = time.monotonic()
    km.start_kernel(cwd=str(notebook.parent), env=kernel_env, stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL)
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=120)
        for index in executed:
            reply = kc.execute_interactive(cells[index].source, timeout=timeout,
                                           output_hook=lambda msg: None, allow_stdin=False)
            if reply["content"]["status"] != "ok":
                return {"error": f"executed cell {index} failed: {reply['content'].get('ename')}",
                        "wall_seconds": round(time.monotonic() - started, 1)}
        seen = {"texts": [], "errors": []}

        def hook(msg):
            content = msg["content"]
            if msg["msg_type"] == "stream":
                seen["texts"].append(content.get("text", ""))
            elif msg["msg_type"] == "display_data":  # crane's warning under a running cell
                seen["texts"].append(content.get("data", {}).get("text/plain", "") + "\n")
            elif msg["msg_type"] == "error":
                seen["errors"].append(content)

        began = time.monotonic()
        reply = kc.execute_interactive(cells[target].source, timeout=timeout, output_hook=hook,
                                       allow_stdin=False)["content"]
        seconds = round(time.monotonic() - began, 1)
        # How its dry run beside it went, in crane's words (`%crane status`).
        status = []
        kc.execute_interactive("%crane status", timeout=60, allow_stdin=False,
                               output_hook=lambda msg: status.append(msg["content"].get("text", ""))
                               if msg["msg_type"] == "stream" else None)
        beside = [line.strip() for line in "".join(status).splitlines() if "dry run beside it" in line]
    except TimeoutError:
        return {"error": f"a cell ran longer than {timeout:.0f}s", "wall_seconds": round(time.monotonic() - started, 1)}
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    result = {"seconds": seconds, "ename": reply.get("ename") if reply.get("status") == "error" else None,
              "stopped": False, "held": False, "predicted": None, "stop_seconds": None,
              "warning_seconds": None, "warning_exception": None, "second_abridgement": False,
              "beside": beside[0][:400] if beside else None}
    for error in seen["errors"]:
        if error.get("ename") != HELD_ENAME:
            continue
        text = ANSI.sub("", "\n".join(error.get("traceback") or []))
        stopped = STOPPED.search(text)
        result.update(held=not stopped, stopped=bool(stopped),
                      predicted=(error.get("evalue") or "").split(" predicted")[0],
                      stop_seconds=float(stopped.group(1)) if stopped else 0.0,
                      second_abridgement="second run abridged otherwise" in text)
    for line in ANSI.sub("", "".join(seen["texts"])).splitlines():
        stopped = STOPPED_LINE.search(line)
        if stopped and not (result["stopped"] or result["held"]):
            result.update(stopped=True, predicted=stopped.group(2), stop_seconds=float(stopped.group(1)),
                          second_abridgement="second run abridged otherwise" in line)
        likely = LIKELY.search(line)
        if likely and result["warning_seconds"] is None:
            result.update(warning_exception=likely.group(1), warning_seconds=float(likely.group(3)))
    return {"kernel": result, "wall_seconds": round(time.monotonic() - started, 1)}


def judged_in_kernel(item: dict, version: str, run: dict) -> dict:
    row = {"case": item["case"], "library": item["library"], "version": version,
           "target_seconds": (item.get("target_seconds") or {}).get(version),
           "wall_seconds": run.get("wall_seconds"), "error": run.get("error")}
    k = run.get("kernel")
    if k is None:
        row.update(outcome="error", held=False, warned=False)
        return row
    held = k["stopped"] or k["held"]
    warned = not held and k["warning_seconds"] is not None
    row.update(kernel=k, held=held, warned=warned, second_abridgement=held and k["second_abridgement"],
               seconds_to_verdict=k["stop_seconds"] if held else k["warning_seconds"],
               verdict={"crash": held, "exception": k["predicted"] if held else k["warning_exception"]})
    if version == "buggy":
        if held:
            row["outcome"] = "held" if k["predicted"] == item["exception"] else "held, other exception"
        else:
            row["outcome"] = "warned" if warned else "missed"
    else:
        row["outcome"] = "false hold" if held else ("false warning" if warned else "pass")
    return row


def ratio(a: int, b: int) -> float | None:
    return round(a / b, 3) if b else None


def totals(rows: list[dict]) -> dict:
    buggy = [r for r in rows if r["version"] == "buggy"]
    fixed = [r for r in rows if r["version"] == "fixed"]
    correct = sum(r["outcome"] == "held" for r in buggy)
    holds = sum(r["held"] for r in rows)
    warned_buggy = sum(r["outcome"] == "warned" for r in buggy)
    timed = [r for r in rows if r.get("seconds_to_verdict") is not None and r.get("target_seconds")]
    seconds = [r["seconds_to_verdict"] for r in timed]
    return {
        "buggy": len(buggy),
        "held": correct,
        "held_other_exception": sum(r["outcome"] == "held, other exception" for r in buggy),
        "held_by_second_abridgement": sum(r["outcome"] == "held" and r.get("second_abridgement") for r in buggy),
        "warned": warned_buggy,
        "missed": sum(r["outcome"] == "missed" for r in buggy),
        "fixed": len(fixed),
        "false_holds": sum(r["outcome"] == "false hold" for r in fixed),
        "false_warnings": sum(r["outcome"] == "false warning" for r in fixed),
        "errors": sum(r["outcome"] == "error" for r in rows),
        "precision_of_holds": ratio(correct, holds),
        "recall_of_holds": ratio(correct, len(buggy)),
        "recall_of_holds_and_warnings": ratio(correct + warned_buggy, len(buggy)),
        "seconds_to_verdict_median": round(statistics.median(seconds), 1) if seconds else None,
        "seconds_to_verdict_max": max(seconds) if seconds else None,
        "target_seconds_median": round(statistics.median(r["target_seconds"] for r in timed), 1) if timed else None,
        "within_time_target": sum(r["seconds_to_verdict"] <= TARGET_RATIO * r["target_seconds"] for r in timed),
        "timed": len(timed),
        "held_within_a_tenth": sum(r["outcome"] == "held" and r.get("seconds_to_verdict") is not None
                                   and r.get("target_seconds")
                                   and r["seconds_to_verdict"] <= TENTH * r["target_seconds"] for r in buggy),
    }


def markdown(rows: list[dict], total: dict, command: str, totals_only: bool = False) -> str:
    lines = [f"`{command}`", ""]
    if not totals_only:
        lines += ["| case | version | dry-run status | crash | exception | line | verdict | outcome | s to verdict | target s |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in [] if totals_only else rows:
        d = r.get("dry_run") or {}
        v = r.get("verdict") or {}
        verdict = f"{v.get('exception')} ({v.get('detector')})" if v.get("crash") else ("no crash" if v else "-")
        lines.append(
            f"| `{r['case']}` | {r['version']} | {d.get('status', '-')} | {d.get('crash', '-')} | "
            f"{d.get('exception') or '-'} | {d.get('line') or '-'} | {verdict} | {r['outcome']} | "
            f"{r.get('seconds_to_verdict', '-')} | {r.get('target_seconds') or '-'} |")
    t = total
    lines += ["",
              f"- buggy: {t['buggy']}: held {t['held']} (another exception {t['held_other_exception']}; "
              f"{t['held_by_second_abridgement']} of them by a second abridged run), "
              f"warned {t['warned']}, missed {t['missed']}",
              f"- fixed: {t['fixed']}: false holds {t['false_holds']}, false warnings {t['false_warnings']}",
              f"- errors (no report): {t['errors']}",
              f"- precision of holds: {t['precision_of_holds']} (target 1.0); recall of holds: {t['recall_of_holds']}; "
              f"recall of holds and warnings: {t['recall_of_holds_and_warnings']}",
              f"- seconds to verdict: median {t['seconds_to_verdict_median']}, max {t['seconds_to_verdict_max']}, "
              f"against a median target cell of {t['target_seconds_median']} s; within 10 s per 60 s of the cell: "
              f"{t['within_time_target']} of {t['timed']}; holds within a tenth of the cell's time: "
              f"{t['held_within_a_tenth']} of {t['held']}"]
    problems = [r for r in rows if r.get("error") or r.get("dry_run_failure")]
    if problems and totals_only:
        lines += ["", f"{len(problems)} dry runs failed or could not report (in --out)."]
    elif problems:
        lines += ["", "Dry runs that failed or could not report:"]
        for r in problems:
            lines.append(f"- `{r['case']}` {r['version']}: {r.get('error') or r.get('dry_run_failure')}")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path, help="bench/long-cells/dev or bench/long-cells/held-out")
    parser.add_argument("--out", type=Path, help="write the rows and totals as JSON here")
    parser.add_argument("--timeout", type=float, default=300, help="seconds allowed per crane check")
    parser.add_argument("--case", action="append", help="only this case (repeatable)")
    parser.add_argument("--version", choices=["buggy", "fixed"], action="append")
    parser.add_argument("--dry-run", dest="mode", choices=["on", "auto"], default="on",
                        help="crane check's --dry-run (default on, as before the option took a value)")
    parser.add_argument("--kernel", action="store_true",
                        help="run each notebook in the crane kernel and judge what it did to the running target")
    parser.add_argument("--totals-only", action="store_true",
                        help="print no case name (no progress, no table, no problem lines): for folders whose "
                             "cases must not be read; --out still has every row")
    args = parser.parse_args()

    manifest = json.loads((args.directory / "manifest.json").read_text())
    if args.case:
        unknown = set(args.case) - {item["case"] for item in manifest}
        if unknown:
            print(f"unknown case(s): {sorted(unknown)}", file=sys.stderr)
            return 2
        manifest = [item for item in manifest if item["case"] in args.case]
    crane = crane_binary()
    with kernelspec(crane, args.kernel) as kernel_env:
        rows = []
        for item in manifest:
            for version in args.version or ["buggy", "fixed"]:
                notebook = args.directory / item["case"] / f"{version}.ipynb"
                done = len(rows) + 1
                shown = f"{done} of {len(manifest) * len(args.version or ['buggy', 'fixed'])}" if args.totals_only else f"{item['case']} {version}"
                print(f"{shown} ...", file=sys.stderr, flush=True)
                if kernel_env is not None:
                    run = in_kernel(kernel_env, notebook.resolve(), item["target_cell"], args.timeout)
                    rows.append(judged_in_kernel(item, version, run))
                else:
                    rows.append(summarize(item, version, check(crane, notebook, item["target_cell"], args.timeout, args.mode)))
    total = totals(rows)
    command = " ".join(["scripts/bench-long-cells.py", *sys.argv[1:]])
    sys.stdout.write(markdown(rows, total, command, args.totals_only))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"command": command, "rows": rows, "totals": total}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
