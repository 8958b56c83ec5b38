"""Execute every crash/fix pair live and check that it behaves as manifest.json says.

For each case and each variant a fresh ipykernel is started with the case folder as working
directory; the code cells that have an execution_count run in ascending execution_count order,
then the target cell. A buggy notebook passes when every earlier cell runs clean and the target
raises exactly the manifest's exception with `message_contains` in its message; a fixed one
passes when all of that runs clean, and (unless --to-target) so do its remaining unexecuted
cells after the target. The bundled example notebook is checked the same way.

    .venv/bin/python bench/notebooks/verify.py              # everything, 2 kernels at a time
    .venv/bin/python bench/notebooks/verify.py --case pandas_header_trailing_space
    .venv/bin/python bench/notebooks/verify.py --static     # structure only, no kernels

Exit status: 0 when every check passes, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from jupyter_client import KernelManager

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.dont_write_bytecode = True
from build import EXAMPLE_EXPECTED, EXAMPLE_PATH, EXAMPLE_TARGET  # noqa: E402

MANIFEST_KEYS = {"case", "library", "target_cell", "exception", "message_contains", "diagnosis",
                 "needs_runtime", "category"}
SLOW_SECONDS = 5.0


@dataclass
class Job:
    label: str
    notebook: Path
    target: int
    expect_exception: str | None  # None: the target must run clean
    message_contains: str = ""
    run_rest: bool = False


@dataclass
class Outcome:
    job: Job
    problems: list[str] = field(default_factory=list)
    target_error: tuple[str, str] | None = None
    seconds_after_imports: float = 0.0


def code_cells(nb: nbformat.NotebookNode) -> list:
    return [cell for cell in nb.cells if cell.cell_type == "code"]


def static_problems(notebook: Path, target: int) -> list[str]:
    try:
        nb = nbformat.read(notebook, as_version=4)
        nbformat.validate(nb)
    except Exception as error:  # any read or schema failure is a finding, not a crash
        return [f"{notebook.name}: invalid notebook: {error}"]
    problems = []
    if (nb.nbformat, nb.nbformat_minor) != (4, 5):
        problems.append(f"{notebook.name}: nbformat {nb.nbformat}.{nb.nbformat_minor}, want 4.5")
    cells = code_cells(nb)
    if not 0 <= target < len(cells):
        return problems + [f"{notebook.name}: target {target} outside {len(cells)} code cells"]
    if cells[target].execution_count is not None:
        problems.append(f"{notebook.name}: target cell has execution_count {cells[target].execution_count}")
    counts = [cell.execution_count for cell in cells if cell.execution_count is not None]
    if len(set(counts)) != len(counts):
        problems.append(f"{notebook.name}: repeated execution counts {counts}")
    if not counts:
        problems.append(f"{notebook.name}: no executed cell before the target")
    return problems


def run(job: Job, timeout: float) -> Outcome:
    outcome = Outcome(job)
    nb = nbformat.read(job.notebook, as_version=4)
    cells = code_cells(nb)
    executed = [i for _, i in sorted((c.execution_count, i) for i, c in enumerate(cells)
                                     if c.execution_count is not None)]
    rest = [i for i in range(job.target + 1, len(cells)) if cells[i].execution_count is None]

    env = dict(os.environ, MPLBACKEND="Agg")
    km = KernelManager(kernel_name="python3")
    km.start_kernel(cwd=str(job.notebook.parent), env=env,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=120)
        started = None
        running = None

        def execute(index: int) -> tuple[str, str] | None:
            nonlocal running
            running = index
            reply = kc.execute_interactive(cells[index].source, timeout=timeout,
                                           output_hook=lambda msg: None, allow_stdin=False)
            content = reply["content"]
            if content["status"] == "ok":
                return None
            return content.get("ename", content["status"]), content.get("evalue", "")

        for position, index in enumerate(executed):
            error = execute(index)
            if position == 0:
                started = time.monotonic()
            if error:
                outcome.problems.append(f"executed cell {index} failed: {error[0]}: {error[1][:200]}")
                return outcome

        outcome.target_error = execute(job.target)
        if job.expect_exception is None:
            if outcome.target_error:
                outcome.problems.append(f"target raised {outcome.target_error[0]}: {outcome.target_error[1][:300]}")
        elif outcome.target_error is None:
            outcome.problems.append(f"target ran clean, expected {job.expect_exception}")
        else:
            ename, evalue = outcome.target_error
            if ename != job.expect_exception:
                outcome.problems.append(f"target raised {ename}, expected {job.expect_exception}: {evalue[:300]}")
            elif job.message_contains not in evalue:
                outcome.problems.append(f"message lacks {job.message_contains!r}: {evalue[:300]}")

        if job.run_rest and not outcome.problems:
            for index in rest:
                error = execute(index)
                if error:
                    outcome.problems.append(f"later cell {index} failed: {error[0]}: {error[1][:200]}")
                    break
        if started is not None:
            outcome.seconds_after_imports = time.monotonic() - started
    except TimeoutError:
        outcome.problems.append(f"cell {running} ran longer than {timeout:.0f}s")
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return outcome


def load_manifest() -> list[dict]:
    manifest = json.loads((HERE / "manifest.json").read_text(encoding="utf-8"))
    for entry in manifest:
        missing = MANIFEST_KEYS - entry.keys()
        if missing:
            raise SystemExit(f"manifest entry {entry.get('case')} lacks {sorted(missing)}")
    return manifest


def jobs_for(manifest: list[dict], to_target: bool) -> list[Job]:
    jobs = []
    for entry in manifest:
        folder = HERE / entry["case"]
        jobs.append(Job(f"{entry['case']} buggy", folder / "buggy.ipynb", entry["target_cell"],
                        entry["exception"], entry["message_contains"]))
        jobs.append(Job(f"{entry['case']} fixed", folder / "fixed.ipynb", entry["target_cell"],
                        None, run_rest=not to_target))
    return jobs


def example_job() -> Job:
    return Job("examples/titanic_like", EXAMPLE_PATH, EXAMPLE_TARGET,
               EXAMPLE_EXPECTED["exception"], EXAMPLE_EXPECTED["message_contains"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", help="only this case (repeatable)")
    parser.add_argument("--jobs", type=int, default=2, help="kernels run at the same time")
    parser.add_argument("--timeout", type=float, default=300, help="seconds allowed per cell")
    parser.add_argument("--static", action="store_true", help="check structure only, start no kernel")
    parser.add_argument("--to-target", action="store_true",
                        help="stop fixed notebooks at the target instead of running their later cells")
    args = parser.parse_args()

    manifest = load_manifest()
    if args.case:
        unknown = set(args.case) - {entry["case"] for entry in manifest}
        if unknown:
            print(f"unknown case(s): {sorted(unknown)}", file=sys.stderr)
            return 1
        manifest = [entry for entry in manifest if entry["case"] in args.case]
    jobs = jobs_for(manifest, args.to_target)
    if not args.case:
        jobs.append(example_job())

    failures = 0
    for job in jobs:
        for problem in static_problems(job.notebook, job.target):
            print(f"FAIL {job.label}: {problem}")
            failures += 1
    if failures or args.static:
        print(f"static: {len(jobs) - failures} passed, {failures} failed")
        return 1 if failures else 0

    slow = []
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for outcome in pool.map(lambda job: run(job, args.timeout), jobs):
            seconds = outcome.seconds_after_imports
            if seconds > SLOW_SECONDS:
                slow.append(f"{outcome.job.label} ({seconds:.1f}s)")
            if outcome.problems:
                failures += 1
                print(f"FAIL {outcome.job.label}: " + "; ".join(outcome.problems), flush=True)
            else:
                got = f"{outcome.target_error[0]}" if outcome.target_error else "clean"
                print(f"ok   {outcome.job.label}: {got} ({seconds:.1f}s after imports)", flush=True)

    if slow:
        print("slower than %.0fs after imports: %s" % (SLOW_SECONDS, ", ".join(slow)))
    print(f"{len(jobs) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
