#!/usr/bin/env python3
"""Measure crane's replica on the crash/fix pairs of kernels that cannot fork (bench/replica).

For each case of the directory's manifest.json and each version (buggy, fixed), runs

    crane check CASE/VERSION.ipynb --cell TARGET --dry-run on --format json --quiet --isolated

one at a time, with a timeout, and records the dry-run finding (detector `dry_run`: `status`,
`crash`, `exception`, `line`), the verdict, and the seconds crane took to judge the target:
`timings_ms.extract + timings_ms.detect` of the JSON report, i.e. the check's wall time minus
starting the kernel and executing the cells before the target (`execute_prior`). Every notebook
of the corpus refuses a fork before its target (TensorFlow's runtime started, or the
CRANE_TEST_REFUSE_FORK seam), so a dry-run finding comes from the replica (status `replicated`,
`replica_approximate`, or `inconclusive`) or says why nothing ran (`unsupported`). A finding with
status `observed` would mean the kernel was forked after all, and is counted apart.

A version is *held* when the verdict predicts a crash that `crane run` and the crane kernel hold
(every crash finding but those that may be artefacts: `replica_approximate`,
`abridged_uncertain`), *warned* when it is not held but a dry-run finding reports a crash. On a
buggy version a hold is correct when its exception is the manifest's (`held`; `held, other
exception` counts apart); a buggy version neither held nor warned is *missed*. Any hold or
warning of a fixed version is false. Precision and recall are given for the verdict and for the
replica's own findings (`replicated` crashes, whatever else the rules said).

The replica's cost is read from /proc while crane runs (the JSON report does not give it): the
process tree under crane is sampled every --sample-interval seconds; the replica is the
interpreter whose command line serves crane's module (`module.serve()`), its runs are its
children (forks). Reported per notebook:

- `replica_rss_peak_mb`: peak resident memory (VmRSS) of the replica's own process;
- `replica_pss_peak_mb`: peak proportional set size (Pss, /proc/PID/smaps_rollup) summed over
  the replica and its forks, which counts pages a fork shares with the replica once;
- `fork_rss_peak_mb`: peak VmRSS of a fork of the replica (a run: the rebuilt objects and the
  cell);
- `replica_startup_cpu_s`: CPU seconds (utime + stime) the replica's process spent before its
  first fork appeared: starting the interpreter, loading crane's module, importing the
  libraries the kernel had imported (its start-up cost, with no other work in it, since the
  replica runs nothing of the user's itself);
- `replica_spawn_to_fork_s`: wall seconds from the replica's start (its /proc start time) to
  its first fork, which also holds waiting for the kernel's cells and its export;
- `kernel_rss_peak_mb`: the kernel's peak VmRSS, for comparison.

Samples miss what lives shorter than the interval: peaks are lower bounds.

    scripts/bench-replica.py bench/replica/dev --out target/replica-dev.json
    scripts/bench-replica.py bench/replica/dev --case NAME --version buggy

Prints a markdown table and totals to stdout; writes everything as JSON to --out. Standard
library only. Environment: CRANE (the crane binary; default target/release/crane, else
target/debug/crane, else `crane` on PATH), CRANE_PYTHON (the kernel's interpreter; default the
repository's .venv/bin/python when it exists).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# How a check's report is judged against a manifest is bench-long-cells.py's, for both corpora.
_spec = importlib.util.spec_from_file_location("bench_long_cells", REPO / "scripts" / "bench-long-cells.py")
LONG_CELLS = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(LONG_CELLS)
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
REPLICA_MARK = "module.serve()"


# ---------------------------------------------------------------------------------------------
# /proc


def boot_time() -> float:
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("btime "):
            return float(line.split()[1])
    return 0.0


BOOT_TIME = boot_time()


def read_stat(pid: int) -> dict | None:
    """ppid, CPU seconds, start time (epoch seconds) of a process, from /proc/PID/stat."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2:].split()
    # fields[0] is field 3 (state): ppid is field 4, utime 14, stime 15, starttime 22.
    return {
        "ppid": int(fields[1]),
        "cpu": (int(fields[11]) + int(fields[12])) / CLOCK_TICKS,
        "start": BOOT_TIME + int(fields[19]) / CLOCK_TICKS,
    }


def status_kb(pid: int, key: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def pss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def children_map() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        stat = read_stat(int(entry))
        if stat is not None:
            tree.setdefault(stat["ppid"], []).append(int(entry))
    return tree


def descendants(root: int, tree: dict[int, list[int]]) -> list[int]:
    found, stack = [], list(tree.get(root, []))
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(tree.get(pid, []))
    return found


class Monitor(threading.Thread):
    """Samples the process tree under crane's pid until stopped."""

    def __init__(self, root: int, interval: float):
        super().__init__(daemon=True)
        self.root, self.interval = root, interval
        self.done = threading.Event()
        self.replica: int | None = None
        self.replica_start: float | None = None
        self.replica_cpu_before_fork: float | None = None
        self.first_fork_at: float | None = None
        self.replica_rss = 0
        self.replica_pss = 0
        self.fork_rss = 0
        self.kernel_rss = 0
        self.forks: set[int] = set()
        self.replicas: set[int] = set()
        self.samples = 0

    def run(self) -> None:
        while not self.done.is_set():
            self.sample()
            self.done.wait(self.interval)

    def sample(self) -> None:
        tree = children_map()
        pids = descendants(self.root, tree)
        self.samples += 1
        marked = {pid for pid in pids if REPLICA_MARK in cmdline(pid)}
        # The replica's own process: marked, and its parent is not marked (its forks share its
        # command line).
        mains = [pid for pid in marked if (read_stat(pid) or {}).get("ppid") not in marked]
        for pid in mains:
            if pid not in self.replicas:
                self.replicas.add(pid)
                if self.replica is None:
                    self.replica = pid
                    stat = read_stat(pid)
                    self.replica_start = stat["start"] if stat else None
        for pid in pids:
            if pid in marked:
                continue
            text = cmdline(pid)
            if "ipykernel" in text:
                self.kernel_rss = max(self.kernel_rss, status_kb(pid, "VmRSS"))
        if self.replica is None or self.replica not in pids:
            return
        forks = descendants(self.replica, tree)
        if forks and self.first_fork_at is None:
            self.first_fork_at = time.time()
        if not forks and self.first_fork_at is None:
            stat = read_stat(self.replica)
            if stat is not None:
                self.replica_cpu_before_fork = stat["cpu"]
        self.forks.update(forks)
        self.replica_rss = max(self.replica_rss, status_kb(self.replica, "VmRSS"))
        self.fork_rss = max([self.fork_rss] + [status_kb(pid, "VmRSS") for pid in forks])
        self.replica_pss = max(self.replica_pss, sum(pss_kb(pid) for pid in [self.replica, *forks]))

    def stop(self) -> dict:
        self.done.set()
        self.join(timeout=5)
        mb = lambda kb: round(kb / 1024, 1) if kb else None  # noqa: E731
        return {
            "replica_seen": self.replica is not None,
            "replica_processes": len(self.replicas),
            "replica_forks": len(self.forks),
            "replica_rss_peak_mb": mb(self.replica_rss),
            "replica_pss_peak_mb": mb(self.replica_pss),
            "fork_rss_peak_mb": mb(self.fork_rss),
            "replica_startup_cpu_s": round(self.replica_cpu_before_fork, 2)
            if self.replica_cpu_before_fork is not None else None,
            "replica_spawn_to_fork_s": round(self.first_fork_at - self.replica_start, 1)
            if self.first_fork_at and self.replica_start else None,
            "kernel_rss_peak_mb": mb(self.kernel_rss),
            "samples": self.samples,
        }


# ---------------------------------------------------------------------------------------------
# crane


def check(crane: str, notebook: Path, cell: int, timeout: float, extra: list[str], interval: float) -> dict:
    command = [crane, "check", str(notebook), "--cell", str(cell), "--dry-run", "on", "--format", "json",
               "--quiet", "--isolated", *extra]
    env = dict(os.environ, MPLBACKEND="Agg")
    env.pop("CRANE_TEST_REFUSE_FORK", None)
    venv_python = REPO / ".venv" / "bin" / "python"
    if "CRANE_PYTHON" not in env and venv_python.exists():
        env["CRANE_PYTHON"] = str(venv_python)
    started = time.monotonic()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    monitor = Monitor(proc.pid, interval)
    monitor.start()
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return {"error": f"crane ran longer than {timeout:.0f}s", "wall_seconds": round(time.monotonic() - started, 1),
                "resources": monitor.stop()}
    wall = round(time.monotonic() - started, 1)
    resources = monitor.stop()
    try:
        report = json.loads(stdout)
    except json.JSONDecodeError:
        tail = (stderr or stdout).strip().splitlines()[-3:]
        return {"error": f"exit {proc.returncode}, no JSON report: {' | '.join(tail)}", "wall_seconds": wall,
                "resources": resources}
    if isinstance(report, list):
        report = report[0]
    return {"exit": proc.returncode, "report": report, "wall_seconds": wall, "resources": resources}


REPLICA_STATUSES = {"replicated", "replica_approximate"}
def summarize(item: dict, version: str, run: dict) -> dict:
    row = {
        "case": item["case"],
        "library": item["library"],
        "stand_in": bool(item.get("stand_in")),
        "version": version,
        "wall_seconds": run.get("wall_seconds"),
        "error": run.get("error"),
        "resources": run.get("resources"),
    }
    row = LONG_CELLS.judged(row, item, version, run, diagnosis_chars=400)
    report = run.get("report")
    finding = next((f for f in (report or {}).get("findings", []) if f.get("detector") == "dry_run"), {})
    if report is not None:
        row["timings_ms"] = report.get("timings_ms", {})
        # Whatever the report says of the replica itself, once crane check reports it.
        row["replica_report"] = {key: value for key, value in report.items() if "replica" in key} or None
    row["replica_hold"] = finding.get("status") == "replicated" and bool(finding.get("crash"))
    row["replica_warn"] = finding.get("status") == "replica_approximate" and bool(finding.get("crash"))
    row["replica_exception_matches"] = row["replica_hold"] and finding.get("exception") == item["exception"]
    return row


def ratio(a: int, b: int) -> float | None:
    return round(a / b, 3) if b else None


def spread(values: list[float]) -> dict:
    values = [v for v in values if v is not None]
    if not values:
        return {"n": 0}
    return {"n": len(values), "median": round(statistics.median(values), 2), "max": round(max(values), 2),
            "min": round(min(values), 2)}


def totals(rows: list[dict]) -> dict:
    buggy = [r for r in rows if r["version"] == "buggy"]
    fixed = [r for r in rows if r["version"] == "fixed"]
    correct = sum(r["outcome"] == "held" for r in buggy)
    correct_any = correct + sum(r["outcome"] == "held, other exception" for r in buggy)
    holds = sum(r["held"] for r in rows)
    warned_buggy = sum(r["outcome"] == "warned" for r in buggy)
    replica_holds = sum(r["replica_hold"] for r in rows)
    replica_holds_buggy = sum(r["replica_hold"] for r in buggy)
    statuses: dict[str, int] = {}
    for r in rows:
        status = (r.get("dry_run") or {}).get("status") or ("error" if r["outcome"] == "error" else "no dry-run finding")
        statuses[status] = statuses.get(status, 0) + 1
    resources = [r.get("resources") or {} for r in rows]
    return {
        "buggy": len(buggy),
        "held": correct,
        "held_other_exception": correct_any - correct,
        "warned": warned_buggy,
        "missed": sum(r["outcome"] == "missed" for r in buggy),
        "fixed": len(fixed),
        "false_holds": sum(r["outcome"] == "false hold" for r in fixed),
        "false_warnings": sum(r["outcome"] == "false warning" for r in fixed),
        "errors": sum(r["outcome"] == "error" for r in rows),
        "precision_of_holds": ratio(correct_any, holds),
        "precision_of_holds_same_exception": ratio(correct, holds),
        "recall_of_holds": ratio(correct_any, len(buggy)),
        "recall_of_holds_same_exception": ratio(correct, len(buggy)),
        "recall_of_holds_and_warnings": ratio(correct_any + warned_buggy, len(buggy)),
        "replica_holds": replica_holds,
        "replica_holds_on_buggy": replica_holds_buggy,
        "replica_holds_same_exception": sum(r.get("replica_exception_matches", False) for r in buggy),
        "replica_precision": ratio(replica_holds_buggy, replica_holds),
        "replica_recall": ratio(replica_holds_buggy, len(buggy)),
        "replica_warnings_buggy": sum(r.get("replica_warn", False) for r in buggy),
        "replica_warnings_fixed": sum(r.get("replica_warn", False) for r in fixed),
        "fork_observed": sum((r.get("dry_run") or {}).get("status") == "observed" for r in rows),
        "dry_run_statuses": dict(sorted(statuses.items())),
        "seconds_to_verdict": spread([r.get("seconds_to_verdict") for r in rows]),
        "seconds_to_verdict_keras": spread([r.get("seconds_to_verdict") for r in rows if r["library"] == "tensorflow"]),
        "seconds_to_verdict_torch": spread([r.get("seconds_to_verdict") for r in rows if r["library"] == "torch"]),
        "seconds_to_verdict_stand_in": spread([r.get("seconds_to_verdict") for r in rows if r["stand_in"]]),
        "replica_seen": sum(bool(x.get("replica_seen")) for x in resources),
        "replica_rss_peak_mb": spread([x.get("replica_rss_peak_mb") for x in resources]),
        "replica_pss_peak_mb": spread([x.get("replica_pss_peak_mb") for x in resources]),
        "fork_rss_peak_mb": spread([x.get("fork_rss_peak_mb") for x in resources]),
        "kernel_rss_peak_mb": spread([x.get("kernel_rss_peak_mb") for x in resources]),
        "replica_startup_cpu_s": spread([x.get("replica_startup_cpu_s") for x in resources]),
        "replica_spawn_to_fork_s": spread([x.get("replica_spawn_to_fork_s") for x in resources]),
    }


def fmt(s: dict, unit: str = "") -> str:
    if not s.get("n"):
        return "not measured"
    return f"median {s['median']}{unit}, min {s['min']}{unit}, max {s['max']}{unit} (n={s['n']})"


def markdown(rows: list[dict], total: dict, command: str, load: tuple[str, str]) -> str:
    lines = [f"`{command}`", "", f"load before: `{load[0]}`", f"load after: `{load[1]}`", "",
             "| case | version | dry-run status | crash | exception | line | verdict | outcome | s to verdict "
             "| replica RSS MB | fork RSS MB | start-up CPU s |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        d = r.get("dry_run") or {}
        v = r.get("verdict") or {}
        x = r.get("resources") or {}
        verdict = f"{v.get('exception')} ({v.get('detector')})" if v.get("crash") else ("no crash" if v else "-")
        name = f"`{r['case']}`" + (" (stand-in)" if r["stand_in"] else "")
        lines.append(
            f"| {name} | {r['version']} | {d.get('status', '-')} | {d.get('crash', '-')} | "
            f"{d.get('exception') or '-'} | {d.get('line') or '-'} | {verdict} | {r['outcome']} | "
            f"{r.get('seconds_to_verdict', '-')} | {x.get('replica_rss_peak_mb') or '-'} | "
            f"{x.get('fork_rss_peak_mb') or '-'} | {x.get('replica_startup_cpu_s') or '-'} |")
    t = total
    lines += ["",
              f"- buggy: {t['buggy']}: held {t['held']} (another exception {t['held_other_exception']}), "
              f"warned {t['warned']}, missed {t['missed']}",
              f"- fixed: {t['fixed']}: false holds {t['false_holds']}, false warnings {t['false_warnings']}",
              f"- errors (no report): {t['errors']}",
              f"- verdict: precision of holds {t['precision_of_holds']} (same exception "
              f"{t['precision_of_holds_same_exception']}; target 1.0); recall of holds {t['recall_of_holds']} "
              f"(same exception {t['recall_of_holds_same_exception']}); recall of holds and warnings "
              f"{t['recall_of_holds_and_warnings']}",
              f"- replica findings: {t['replica_holds']} held crashes (`replicated`), {t['replica_holds_on_buggy']} "
              f"on buggy notebooks ({t['replica_holds_same_exception']} with the manifest's exception): precision "
              f"{t['replica_precision']}, recall {t['replica_recall']}; warnings (`replica_approximate`) "
              f"{t['replica_warnings_buggy']} buggy, {t['replica_warnings_fixed']} fixed",
              f"- dry-run statuses: {', '.join(f'{k} {v}' for k, v in t['dry_run_statuses'].items())}"
              + (f"; the kernel was forked in {t['fork_observed']}" if t["fork_observed"] else ""),
              f"- seconds to verdict: {fmt(t['seconds_to_verdict'], ' s')}; Keras {fmt(t['seconds_to_verdict_keras'], ' s')}; "
              f"torch {fmt(t['seconds_to_verdict_torch'], ' s')}; stand-in cases {fmt(t['seconds_to_verdict_stand_in'], ' s')}",
              f"- replica seen in {t['replica_seen']} of {len(rows)} checks; its process's peak RSS "
              f"{fmt(t['replica_rss_peak_mb'], ' MB')}; replica + forks peak PSS {fmt(t['replica_pss_peak_mb'], ' MB')}; "
              f"a fork's peak RSS {fmt(t['fork_rss_peak_mb'], ' MB')}; the kernel's peak RSS "
              f"{fmt(t['kernel_rss_peak_mb'], ' MB')}",
              f"- replica start-up: CPU before its first run {fmt(t['replica_startup_cpu_s'], ' s')}; "
              f"wall from its start to its first run {fmt(t['replica_spawn_to_fork_s'], ' s')}"]
    problems = [r for r in rows if r.get("error") or r.get("dry_run_failure")]
    if problems:
        lines += ["", "Checks that failed or could not report:"]
        for r in problems:
            lines.append(f"- `{r['case']}` {r['version']}: {r.get('error') or r.get('dry_run_failure')}")
    undecided = [r for r in rows if (r.get("dry_run") or {}).get("status") in ("unsupported", "inconclusive")]
    if undecided:
        lines += ["", "Dry runs that decided nothing:"]
        for r in undecided:
            lines.append(f"- `{r['case']}` {r['version']}: {r['dry_run']['status']}: {r['dry_run']['diagnosis'][:300]}")
    return "\n".join(lines) + "\n"


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path, help="bench/replica/dev or bench/replica/held-out")
    parser.add_argument("--out", type=Path, help="write the rows and totals as JSON here")
    parser.add_argument("--timeout", type=float, default=600, help="seconds allowed per crane check")
    parser.add_argument("--case", action="append", help="only this case (repeatable)")
    parser.add_argument("--version", choices=["buggy", "fixed"], action="append")
    parser.add_argument("--sample-interval", type=float, default=0.1, help="seconds between /proc samples")
    parser.add_argument("--crane-arg", action="append", default=[],
                        help="an extra argument for crane check (repeatable)")
    args = parser.parse_args()

    manifest = json.loads((args.directory / "manifest.json").read_text())
    if args.case:
        unknown = set(args.case) - {item["case"] for item in manifest}
        if unknown:
            print(f"unknown case(s): {sorted(unknown)}", file=sys.stderr)
            return 2
        manifest = [item for item in manifest if item["case"] in args.case]
    crane = LONG_CELLS.crane_binary()
    load_before = uptime()
    rows = []
    for item in manifest:
        for version in args.version or ["buggy", "fixed"]:
            notebook = args.directory / item["case"] / f"{version}.ipynb"
            print(f"{item['case']} {version} ...", file=sys.stderr, flush=True)
            run = check(crane, notebook, item["target_cell"], args.timeout, args.crane_arg, args.sample_interval)
            row = summarize(item, version, run)
            print(f"  {row['outcome']}: {(row.get('dry_run') or {}).get('status')} "
                  f"{(row.get('dry_run') or {}).get('exception')} in {row.get('seconds_to_verdict')} s",
                  file=sys.stderr, flush=True)
            rows.append(row)
    load_after = uptime()
    total = totals(rows)
    command = " ".join(["scripts/bench-replica.py", *sys.argv[1:]])
    sys.stdout.write(markdown(rows, total, command, (load_before, load_after)))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"command": command, "crane": crane, "load_before": load_before,
                                        "load_after": load_after, "rows": rows, "totals": total}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
