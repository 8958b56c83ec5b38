"""What a kernel snapshot costs in the kernel: the snapshot module's `take` (fork, bookkeeping)
and `drop` (kill, reap) in a process holding SIZE of numpy data with every page touched.

usage: .venv/bin/python scripts/bench-snapshot.py [--runs N] [--sizes 100M,2G]

The module is the one crane injects (crates/crane-probe/python: guard, channel, dry run,
snapshot, in that order), run here as a plain module; crane's call request adds about 2 ms.
"""

import argparse
import json
import pathlib
import statistics
import time
import types

import numpy as np

PYTHON = pathlib.Path(__file__).resolve().parent.parent / "crates/crane-probe/python"
PARTS = ("crane_guard.py", "crane_channel.py", "crane_dryrun.py", "crane_snapshot.py")


def load():
    module = types.ModuleType("_crane_snapshot_bench")
    source = "".join((PYTHON / part).read_text() for part in PARTS)
    exec(compile(source, "<crane-snapshot-module>", "exec"), module.__dict__)
    return module


def size_bytes(text):
    units = {"M": 10**6, "G": 10**9}
    return int(float(text[:-1]) * units[text[-1]])


def p90(values):
    return sorted(values)[max(0, int(len(values) * 0.9) - 1)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--sizes", default="100M,2G")
    args = parser.parse_args()
    module = load()
    for size in args.sizes.split(","):
        data = np.ones(size_bytes(size) // 8)
        forks, takes, drops = [], [], []
        for _ in range(args.runs):
            started = time.perf_counter()
            answer = json.loads(repr(module.take("{}")))
            takes.append((time.perf_counter() - started) * 1000)
            forks.append(answer["fork_ms"])
            started = time.perf_counter()
            module.drop(json.dumps({"pids": [answer["pid"]]}))
            drops.append((time.perf_counter() - started) * 1000)
        rollup = open("/proc/self/smaps_rollup").read().split()
        rss, huge = (int(rollup[rollup.index(field) + 1]) for field in ("Rss:", "AnonHugePages:"))
        print(
            f"{size}: RSS {rss // 1000} MB, {100 * huge // rss}% in huge pages; fork {statistics.median(forks):.1f} / {p90(forks):.1f} ms, "
            f"take {statistics.median(takes):.1f} / {p90(takes):.1f} ms, "
            f"drop {statistics.median(drops):.1f} / {p90(drops):.1f} ms (median / p90, {args.runs} runs)"
        )
        del data


if __name__ == "__main__":
    main()
