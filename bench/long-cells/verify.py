"""Execute long-cell crash/fix pairs for real and check their ground truth; time the targets.

For each case of a directory (a manifest.json next to case folders) and each version, one at a
time, a fresh ipykernel is started with the case folder as working directory; the code cells that
have an execution_count run in ascending execution_count order, then the target cell, timed. A
buggy notebook passes when every earlier cell runs clean and the target raises exactly the
manifest's exception with `message_contains` in its message after at least --min-seconds; a fixed
one when the target runs clean, for at least --min-seconds, and so do its later cells.

    .venv/bin/python bench/long-cells/verify.py bench/long-cells/dev
    .venv/bin/python bench/long-cells/verify.py DIR --case NAME --record bench/long-cells/target_seconds.json

Prints one line per notebook (with the 1-minute load average before and after it) and a summary;
exits non-zero on any mismatch. --record merges the measured seconds ({"buggy": s, "fixed": s})
into a JSON file keyed by case name.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import nbformat
from jupyter_client import KernelManager

MANIFEST_KEYS = {"case", "library", "target_cell", "exception", "message_contains", "diagnosis",
                 "needs_runtime", "category"}


def code_cells(nb):
    return [cell for cell in nb.cells if cell.cell_type == "code"]


def static_problems(notebook: Path, target: int, executed_in_order: bool = False) -> list[str]:
    """What breaks the corpus's format (shared by bench/replica/verify.py, whose cells above the
    target must also have run top to bottom: `executed_in_order`)."""
    nb = nbformat.read(notebook, as_version=4)
    nbformat.validate(nb)
    problems = []
    if (nb.nbformat, nb.nbformat_minor) != (4, 5):
        problems.append(f"nbformat {nb.nbformat}.{nb.nbformat_minor}")
    cells = code_cells(nb)
    if cells[target].execution_count is not None:
        problems.append("target has an execution count")
    if executed_in_order and [c.execution_count for c in cells[:target]] != list(range(1, target + 1)):
        problems.append("cells above the target are not executed in order")
    if any(cell.get("outputs") for cell in cells):
        problems.append("a cell has outputs")
    if any(not cell.get("id") for cell in nb.cells):
        problems.append("a cell lacks an id")
    return problems


def run(notebook: Path, target: int, expect: str | None, contains: str, timeout: float,
        before_target=None, env_drop=()) -> dict:
    """Execute the notebook's history, then its target, timed, in a fresh plain kernel. The
    result's `problems` say where it differs from `expect` (an exception name, or None for a
    clean run of the target and the cells after it); `before_target(kc)` may add problems of
    the kernel's state before the target; `env_drop` names variables the kernel must not get."""
    nb = nbformat.read(notebook, as_version=4)
    cells = code_cells(nb)
    executed = [i for _, i in sorted((c.execution_count, i) for i, c in enumerate(cells)
                                     if c.execution_count is not None)]
    rest = [i for i in range(target + 1, len(cells)) if cells[i].execution_count is None]
    result = {"problems": [], "prior_seconds": None, "seconds": None, "error": None}
    env = dict(os.environ, MPLBACKEND="Agg")
    for name in env_drop:
        env.pop(name, None)
    km = KernelManager(kernel_name="python3")
    km.kernel_cmd = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    km.start_kernel(cwd=str(notebook.parent), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=120)

        def execute(index):
            reply = kc.execute_interactive(cells[index].source, timeout=timeout,
                                           output_hook=lambda msg: None, allow_stdin=False)
            content = reply["content"]
            if content["status"] == "ok":
                return None
            return content.get("ename", content["status"]), content.get("evalue", "")

        started = time.monotonic()
        for index in executed:
            error = execute(index)
            if error:
                result["problems"].append(f"executed cell {index} failed: {error[0]}: {error[1][:200]}")
                return result
        result["prior_seconds"] = round(time.monotonic() - started, 1)
        if before_target is not None:
            result["problems"].extend(before_target(kc))
        started = time.monotonic()
        error = execute(target)
        result["seconds"] = round(time.monotonic() - started, 1)
        result["error"] = error
        if expect is None:
            if error:
                result["problems"].append(f"target raised {error[0]}: {error[1][-300:]}")
            else:
                for index in rest:
                    later = execute(index)
                    if later:
                        result["problems"].append(f"later cell {index} failed: {later[0]}: {later[1][:200]}")
                        break
        elif error is None:
            result["problems"].append(f"target ran clean, expected {expect}")
        elif error[0] != expect:
            result["problems"].append(f"target raised {error[0]}, expected {expect}: {error[1][-300:]}")
        elif contains not in error[1]:
            result["problems"].append(f"message lacks {contains!r}: {error[1][-300:]}")
    except TimeoutError:
        result["problems"].append(f"a cell ran longer than {timeout:.0f}s")
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--case", action="append", help="only this case (repeatable)")
    parser.add_argument("--version", choices=["buggy", "fixed"], action="append")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--min-seconds", type=float, default=30.0)
    parser.add_argument("--record", type=Path, help="merge measured target seconds into this JSON file")
    args = parser.parse_args()

    manifest = json.loads((args.directory / "manifest.json").read_text())
    for item in manifest:
        missing = MANIFEST_KEYS - item.keys()
        if missing:
            print(f"FAIL {item.get('case')}: manifest lacks {sorted(missing)}")
            return 1
    if args.case:
        manifest = [item for item in manifest if item["case"] in args.case]
    versions = args.version or ["buggy", "fixed"]
    failures, total = 0, 0
    for item in manifest:
        for version in versions:
            total += 1
            notebook = args.directory / item["case"] / f"{version}.ipynb"
            label = f"{item['case']} {version}"
            problems = static_problems(notebook, item["target_cell"])
            load_before = os.getloadavg()[0]
            outcome = {"seconds": None, "error": None, "problems": []}
            if not problems:
                expect = item["exception"] if version == "buggy" else None
                outcome = run(notebook, item["target_cell"], expect, item["message_contains"], args.timeout)
                problems = outcome["problems"]
            seconds = outcome["seconds"]
            if seconds is not None and seconds < args.min_seconds:
                problems.append(f"target took {seconds}s, under {args.min_seconds}s")
            load_after = os.getloadavg()[0]
            got = f"{outcome['error'][0]}" if outcome["error"] else "clean"
            status = "FAIL" if problems else "ok  "
            print(f"{status} {label}: {got} in {seconds}s (load {load_before:.1f} -> {load_after:.1f})"
                  + ("; " + "; ".join(problems) if problems else ""), flush=True)
            failures += bool(problems)
            if args.record and seconds is not None and not problems:
                data = json.loads(args.record.read_text()) if args.record.exists() else {}
                data.setdefault(item["case"], {})[version] = seconds
                args.record.write_text(json.dumps(dict(sorted(data.items())), indent=2) + "\n")
    print(f"{total - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
