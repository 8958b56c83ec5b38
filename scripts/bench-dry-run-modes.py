#!/usr/bin/env python3
"""Measure `--dry-run off|auto|on` of `crane check` and `crane run` on crash/fix notebook pairs.

    scripts/bench-dry-run-modes.py check bench/notebooks --out target/modes-check.json
    scripts/bench-dry-run-modes.py run bench/notebooks --version fixed --rounds 2 --out target/modes-run.json
    scripts/bench-dry-run-modes.py run bench/long-cells/dev --modes auto,off --out target/modes-long-dev.json

`check`: for each case of DIRECTORY/manifest.json, each version (buggy, fixed) and each mode,
`crane check NB --cell TARGET --dry-run MODE --format json`; a crash predicted on a buggy version
is a true positive (and counted apart when its exception is the manifest's), on a fixed one a
false positive. Seconds to a verdict are the report's `extract + detect` (the check without the
kernel's start and the cells before the target).

`run`: for each notebook, `crane run NB OUT --dry-run MODE --format json`, timed from outside
(wall time, kernel start included); the modes take turns per notebook, their order turned by one
each notebook, so that a change of the machine's load falls on all of them. Per mode: the total
wall time, the cells held (on a fixed notebook every hold is false), the cells dry-run and how
their dry runs ended; on a buggy version, what became of the target (held before it ran, with
which exception; warned; crashed).

`--totals-only` prints no row (for a half of a benchmark nobody may look at, such as
bench/long-cells/held-out). Standard library only. Environment: CRANE (the binary; default
target/release/crane, else target/debug/crane), CRANE_PYTHON (default the repository's
.venv/bin/python).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def crane_binary() -> str:
    if os.environ.get("CRANE"):
        return os.environ["CRANE"]
    for build in ("release", "debug"):
        local = REPO / "target" / build / "crane"
        if local.exists():
            return str(local)
    raise SystemExit("no crane binary: build it (cargo build --release -p crane) or set CRANE")


def environment() -> dict:
    env = dict(os.environ, MPLBACKEND="Agg", NO_COLOR="1")
    env.pop("CRANE_LLM", None)
    venv_python = REPO / ".venv" / "bin" / "python"
    if "CRANE_PYTHON" not in env and venv_python.exists():
        env["CRANE_PYTHON"] = str(venv_python)
    return env


def invoke(command: list[str], timeout: float) -> dict:
    started = time.monotonic()
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=environment())
    except subprocess.TimeoutExpired:
        return {"error": f"crane ran longer than {timeout:.0f} s", "wall_seconds": round(time.monotonic() - started, 2)}
    wall = round(time.monotonic() - started, 2)
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return {"error": f"exit {proc.returncode}, no JSON: {' | '.join(tail)}", "wall_seconds": wall}
    warnings = [line[len("warning: "):] for line in proc.stderr.splitlines() if line.startswith("warning: ")]
    return {"exit": proc.returncode, "report": report, "wall_seconds": wall, "warnings": warnings}


def check_row(crane: str, item: dict, version: str, notebook: Path, mode: str, timeout: float) -> dict:
    result = invoke([crane, "check", str(notebook), "--cell", str(item["target_cell"]), "--dry-run", mode,
                     "--format", "json", "--quiet", "--isolated"], timeout)
    row = {"case": item["case"], "version": version, "mode": mode, "wall_seconds": result["wall_seconds"],
           "exit": result.get("exit"), "error": result.get("error")}
    report = result.get("report")
    if report is None:
        return row
    verdict = report.get("verdict") or {}
    dry = [f for f in report.get("findings", []) if f.get("detector") == "dry_run"]
    timings = report.get("timings_ms", {})
    row.update(
        crash=bool(verdict.get("crash")),
        exception=verdict.get("exception"),
        detector=verdict.get("detector"),
        dry_run=dry[0].get("status") if dry else None,
        dry_run_diagnosis=(dry[0].get("diagnosis") or "")[:300] if dry else None,
        seconds_to_verdict=round((timings.get("extract", 0) + timings.get("detect", 0)) / 1000, 3),
    )
    return row


def check_totals(rows: list[dict], manifest: dict) -> dict:
    buggy = [r for r in rows if r["version"] == "buggy"]
    fixed = [r for r in rows if r["version"] == "fixed"]
    tp = sum(bool(r.get("crash")) for r in buggy)
    fp = sum(bool(r.get("crash")) for r in fixed)
    fn, tn = len(buggy) - tp, len(fixed) - fp
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / len(buggy) if buggy else None
    f1 = 2 * precision * recall / (precision + recall) if precision and recall else None
    seconds = [r["seconds_to_verdict"] for r in rows if r.get("seconds_to_verdict") is not None]
    return {
        "n": len(rows), "tp": tp, "fp": fp, "fn": fn, "tn": tn,
        "tp_with_exception": sum(bool(r.get("crash")) and r.get("exception") == manifest[r["case"]]["exception"]
                                 for r in buggy),
        "precision": round(precision, 3) if precision is not None else None,
        "recall": round(recall, 3) if recall is not None else None,
        "f1": round(f1, 3) if f1 is not None else None,
        "accuracy": round((tp + tn) / len(rows), 3) if rows else None,
        "dry_runs": dict(collections.Counter(r.get("dry_run") or "none" for r in rows)),
        "exit_codes": dict(collections.Counter(str(r.get("exit")) for r in rows)),
        "errors": sum(bool(r.get("error")) for r in rows),
        "seconds_to_verdict_median": round(statistics.median(seconds), 3) if seconds else None,
        "seconds_to_verdict_p90": round(sorted(seconds)[int(0.9 * (len(seconds) - 1))], 3) if seconds else None,
        "seconds_to_verdict_total": round(sum(seconds), 1),
        "wall_seconds_total": round(sum(r["wall_seconds"] for r in rows), 1),
    }


def run_row(crane: str, item: dict, version: str, notebook: Path, mode: str, timeout: float, out: Path) -> dict:
    result = invoke([crane, "run", str(notebook), str(out), "--dry-run", mode, "--format", "json", "--isolated"],
                    timeout)
    row = {"case": item["case"], "version": version, "mode": mode, "wall_seconds": result["wall_seconds"],
           "exit": result.get("exit"), "error": result.get("error"), "warnings": result.get("warnings", [])}
    summary = result.get("report")
    if summary is None:
        return row
    cells = summary.get("cells", [])
    target = next((c for c in cells if c.get("cell") == item["target_cell"]), {})
    row.update(
        cells=len(cells),
        held=sum(c.get("fate") == "held" for c in cells),
        crashed=sum(c.get("fate") == "crashed" for c in cells),
        dry_runs=dict(collections.Counter(c["dry_run"]["status"] for c in cells if c.get("dry_run"))),
        check_seconds=round(summary.get("check_ms", 0) / 1000, 2),
        execute_seconds=round(summary.get("execute_ms", 0) / 1000, 2),
        target_fate=target.get("fate"),
        target_exception=(target.get("verdict") or {}).get("exception"),
        target_dry_run=(target.get("dry_run") or {}).get("status"),
        target_warned=any("may crash" in warning for warning in target.get("warnings", [])),
    )
    return row


def run_totals(rows: list[dict], manifest: dict) -> dict:
    buggy = [r for r in rows if r["version"] == "buggy"]
    fixed = [r for r in rows if r["version"] == "fixed"]
    dry_runs = collections.Counter()
    for r in rows:
        dry_runs.update(r.get("dry_runs", {}))
    return {
        "notebooks": len(rows),
        "wall_seconds_total": round(sum(r["wall_seconds"] for r in rows), 1),
        "check_seconds_total": round(sum(r.get("check_seconds", 0) for r in rows), 1),
        "execute_seconds_total": round(sum(r.get("execute_seconds", 0) for r in rows), 1),
        "cells": sum(r.get("cells", 0) for r in rows),
        "cells_dry_run": sum(dry_runs.values()),
        "dry_runs": dict(dry_runs),
        "fixed_cells_held": sum(r.get("held", 0) for r in fixed),
        "fixed_cells_crashed": sum(r.get("crashed", 0) for r in fixed),
        "buggy_targets_held": sum(r.get("target_fate") == "held" for r in buggy),
        "buggy_targets_held_with_exception": sum(r.get("target_fate") == "held" and r.get("target_exception")
                                                 == manifest[r["case"]]["exception"] for r in buggy),
        "buggy_targets_warned": sum(r.get("target_warned", False) for r in buggy),
        "buggy_targets_crashed": sum(r.get("target_fate") == "crashed" for r in buggy),
        "errors": sum(bool(r.get("error")) for r in rows),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["check", "run"])
    parser.add_argument("directory", type=Path, help="a folder with manifest.json (bench/notebooks, bench/long-cells/dev)")
    parser.add_argument("--modes", default="off,auto,on", help="comma-separated --dry-run values")
    parser.add_argument("--version", choices=["buggy", "fixed"], action="append")
    parser.add_argument("--case", action="append", help="only this case (repeatable)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=900, help="seconds allowed per crane command")
    parser.add_argument("--totals-only", action="store_true", help="print and write no row, only totals")
    parser.add_argument("--out", type=Path, help="write rows and totals as JSON here")
    args = parser.parse_args()

    items = json.loads((args.directory / "manifest.json").read_text())
    if args.case:
        items = [item for item in items if item["case"] in args.case]
    manifest = {item["case"]: item for item in items}
    modes = args.modes.split(",")
    crane = crane_binary()
    load_at_start = [round(x, 2) for x in os.getloadavg()]
    rows: list[dict] = []
    turn = 0
    with tempfile.TemporaryDirectory() as scratch:
        for round_ in range(args.rounds):
            for item in items:
                for version in args.version or ["buggy", "fixed"]:
                    notebook = args.directory / item["case"] / f"{version}.ipynb"
                    order = modes[turn % len(modes):] + modes[:turn % len(modes)]
                    turn += 1
                    for mode in order:
                        if not args.totals_only:
                            print(f"[{round_ + 1}] {item['case']} {version} {mode} ...", file=sys.stderr, flush=True)
                        if args.command == "check":
                            row = check_row(crane, item, version, notebook, mode, args.timeout)
                        else:
                            out = Path(scratch) / f"{item['case']}-{version}-{mode}.ipynb"
                            row = run_row(crane, item, version, notebook, mode, args.timeout, out)
                        row["round"] = round_ + 1
                        rows.append(row)
    totals_of = check_totals if args.command == "check" else run_totals
    totals = {mode: totals_of([r for r in rows if r["mode"] == mode], manifest) for mode in modes}
    if args.command == "run" and "off" in modes:
        for mode in modes:
            totals[mode]["wall_vs_off"] = round(totals[mode]["wall_seconds_total"]
                                                / max(totals["off"]["wall_seconds_total"], 1e-9), 3)
    command = " ".join(["scripts/bench-dry-run-modes.py", *sys.argv[1:]])
    load = os.getloadavg()
    result = {"command": command, "crane": crane, "load_at_start": load_at_start,
              "load_at_end": [round(x, 2) for x in load], "totals": totals}
    if not args.totals_only:
        result["rows"] = rows
        for row in rows:
            print(json.dumps(row), file=sys.stderr)
    print(json.dumps({k: v for k, v in result.items() if k != "rows"}, indent=2))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
