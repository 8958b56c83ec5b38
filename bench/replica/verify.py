"""Execute the replica corpus's crash/fix pairs for real and check their ground truth.

For each case of a directory (a manifest.json next to case folders) and each version, one at a
time, a fresh ipykernel is started with the case folder as working directory; the code cells that
have an execution_count run in ascending execution_count order, then the target cell. A buggy
notebook passes when every earlier cell runs clean and the target raises exactly the manifest's
exception with `message_contains` in its message; a fixed one when the target runs clean, and so
do its later cells. Before the target, the kernel must be one crane refuses to fork: a Keras
case's TensorFlow runtime has started (its eager context handle exists, as crane's own check
reads it), a torch case's environment holds CRANE_TEST_REFUSE_FORK; and every name the manifest
lists under `stand_in` holds more than 64 MiB (the replica's exact-copy bound).

    .venv/bin/python bench/replica/verify.py bench/replica/dev
    .venv/bin/python bench/replica/verify.py bench/replica/held-out --case NAME --version buggy

Prints one line per notebook (seconds of the cells before the target, of the target, and the
1-minute load average before and after) and a summary; exits non-zero on any mismatch.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import sys
from pathlib import Path

# The corpus's format and the real execution are those of bench/long-cells: one code for both.
_spec = importlib.util.spec_from_file_location(
    "long_cells_verify", Path(__file__).resolve().parents[1] / "long-cells" / "verify.py")
_long_cells = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_long_cells)
static_problems, run = _long_cells.static_problems, _long_cells.run

MANIFEST_KEYS = {"case", "library", "target_cell", "exception", "message_contains", "diagnosis",
                 "needs_runtime", "category", "crash_position", "stand_in"}
EXACT_BYTES = 64 << 20

TF_STARTED = ("getattr(getattr(__import__('sys').modules.get('tensorflow.python.eager.context'), "
              "'_context', None), '_context_handle', None) is not None")
SEAM = "'CRANE_TEST_REFUSE_FORK' in __import__('os').environ"


def precondition_problems(kc, item: dict, timeout: float) -> list[str]:
    expressions = {"tf": TF_STARTED, "seam": SEAM}
    names = item["stand_in"]
    if names:
        expressions["sizes"] = ("str({n: int(getattr(get_ipython().user_ns.get(n), 'nbytes', 0)) "
                                f"for n in {names!r}}})")
    reply = kc.execute_interactive("", silent=True, store_history=False, user_expressions=expressions,
                                   timeout=timeout, output_hook=lambda msg: None, allow_stdin=False)
    results = reply["content"].get("user_expressions", {})

    def value(key):
        result = results.get(key, {})
        if result.get("status") != "ok":
            return None
        return ast.literal_eval(result["data"]["text/plain"])

    problems = []
    if item["library"] == "tensorflow" and value("tf") is not True:
        problems.append("TensorFlow's runtime has not started before the target")
    if item["library"] == "torch" and value("seam") is not True:
        problems.append("CRANE_TEST_REFUSE_FORK is not set before the target")
    if names:
        sizes = value("sizes")
        sizes = ast.literal_eval(sizes) if isinstance(sizes, str) else None
        if not isinstance(sizes, dict):
            problems.append("the stand-in sizes could not be read")
        else:
            small = [f"{n} ({sizes.get(n, 0) / 2**20:.0f} MiB)" for n in names if sizes.get(n, 0) <= EXACT_BYTES]
            if small:
                problems.append("not over 64 MiB: " + ", ".join(small))
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--case", action="append", help="only this case (repeatable)")
    parser.add_argument("--version", choices=["buggy", "fixed"], action="append")
    parser.add_argument("--timeout", type=float, default=300)
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
            problems = static_problems(notebook, item["target_cell"], executed_in_order=True)
            load_before = os.getloadavg()[0]
            outcome = {"prior_seconds": None, "seconds": None, "error": None, "problems": []}
            if not problems:
                expect = item["exception"] if version == "buggy" else None
                outcome = run(notebook, item["target_cell"], expect, item["message_contains"], args.timeout,
                              before_target=lambda kc: precondition_problems(kc, item, args.timeout),
                              env_drop=("CRANE_TEST_REFUSE_FORK",))
                problems = outcome["problems"]
            load_after = os.getloadavg()[0]
            got = f"{outcome['error'][0]}" if outcome["error"] else "clean"
            status = "FAIL" if problems else "ok  "
            print(f"{status} {label}: {got}; before target {outcome['prior_seconds']}s, target "
                  f"{outcome['seconds']}s (load {load_before:.1f} -> {load_after:.1f})"
                  + ("; " + "; ".join(problems) if problems else ""), flush=True)
            failures += bool(problems)
    print(f"{total - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
