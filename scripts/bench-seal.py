"""Cost of sealing a dry-run fork (crates/crane-probe/python/crane_seal.py), per dry run.

Usage: .venv/bin/python scripts/bench-seal.py [--runs N] [--sizes-mb 100,2000]

For each size, a process holding that much data (half in private numpy arrays, half in a
writable np.memmap of a file, the mappings the seal has to make private) forks N times; each
child makes its descriptors its own and runs the dry run's seal (the same source crane injects),
and reports how long each took. Prints the median and p90 in milliseconds, per size.
"""

import argparse
import json
import os
import pathlib
import statistics
import tempfile
import time

import numpy as np

PYTHON = pathlib.Path(__file__).resolve().parent.parent / "crates/crane-probe/python"
# The seal and what it builds on: the fork's descriptors and the system call allowlist.
SOURCES = [PYTHON / name for name in ("crane_fds.py", "crane_allowlist.py", "crane_seal.py")]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--sizes-mb", default="100,2000")
    args = parser.parse_args()
    namespace = {name: __import__(name) for name in ("io", "os", "sys", "time", "signal")}
    for source in SOURCES:
        exec(compile(source.read_text(), str(source), "exec"), namespace)
    for size_mb in (int(part) for part in args.sizes_mb.split(",")):
        half = size_mb * 1_000_000 // 2
        private = np.ones(half, dtype=np.uint8)
        with tempfile.TemporaryDirectory() as directory:
            shared = np.memmap(os.path.join(directory, "data.bin"), dtype=np.uint8, mode="w+", shape=(half,))
            shared[:] = 1
            costs = [seal_once(namespace) for _ in range(args.runs)]
            del shared
        del private
        for what, values in (("seal", [seal for seal, _ in costs]), ("descriptors", [own for _, own in costs])):
            values.sort()
            p90 = values[min(len(values) - 1, int(len(values) * 0.9))]
            print(f"{size_mb} MB: {what} median {statistics.median(values):.2f} ms, p90 {p90:.2f} ms ({args.runs} runs)")


def seal_once(namespace):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            started = time.perf_counter()
            namespace["privatize_descriptors"]((0, 1, 2, write))
            descriptors_ms = (time.perf_counter() - started) * 1000.0
            namespace["seal_child"]((1, 2, write), "<bench>")
            os.write(write, json.dumps({**namespace["seal_report"](), "descriptors_ms": descriptors_ms}).encode())
        finally:
            os._exit(0)
    os.close(write)
    data = b""
    while chunk := os.read(read, 65536):
        data += chunk
    os.close(read)
    os.waitpid(pid, 0)
    report = json.loads(data)
    return report["seal"]["ms"], report["descriptors_ms"]


if __name__ == "__main__":
    main()
