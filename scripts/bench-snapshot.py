"""What a kernel snapshot costs, in a real ipykernel holding SIZE of numpy data (every page
touched): a snapshot's take as the proxy pays it before a cell (crane's call request: reap,
refusal checks, socket, fork), and a takeover's latency (from `takeover` on the snapshot's
socket until the kernel it became answers a cell on its new ports).

usage: .venv/bin/python scripts/bench-snapshot.py [--runs N] [--sizes 100M,2G] [--unchanged]

With --unchanged, the cell between the take and the takeover changes nothing (`pass`), so the
snapshot shares every page with the kernel and the run needs SIZE of memory, not twice SIZE (for
a large SIZE on a machine shared with others).

The module is the one crane injects (crates/crane-probe/python: guard, channel, fork, seal,
dry run, snapshot, in that order), installed as crane installs it and called through crane's
own shell message. Each takeover's kernel is the kernel of the next round (this process is a
child subreaper, as the proxy is, and ends the kernel it replaces).
"""

import argparse
import ctypes
import json
import os
import pathlib
import socket
import statistics
import time

from jupyter_client import BlockingKernelClient, KernelManager

PYTHON = pathlib.Path(__file__).resolve().parent.parent / "crates/crane-probe/python"
PARTS = ("crane_guard.py", "crane_channel.py", "crane_atfork.py", "crane_fork.py", "crane_fork_refusals.py",
         "crane_fork_child.py", "crane_proc.py", "crane_fds.py", "crane_allowlist.py", "crane_seal.py",
         "crane_common.py", "crane_cell_run.py", "crane_dryrun.py", "crane_abridge.py", "crane_dependence.py",
         "crane_memory.py", "crane_snapshot.py", "crane_takeover.py", "crane_snapshot_files.py")
MODULE = "_crane_dryrun"


def size_bytes(text):
    units = {"M": 10**6, "G": 10**9}
    return int(float(text[:-1]) * units[text[-1]])


def p90(values):
    return sorted(values)[max(0, int(len(values) * 0.9) - 1)]


def run(client, code, timeout=300):
    msg_id = client.execute(code)
    while True:
        reply = client.get_shell_msg(timeout=timeout)
        if reply["parent_header"].get("msg_id") == msg_id:
            assert reply["content"]["status"] == "ok", reply["content"]
            return reply["content"]


def call(client, function, request):
    message = client.session.msg("crane_call_request", {
        "module": MODULE, "digest": "bench", "function": function, "request": request})
    started = time.perf_counter()
    client.shell_channel.send(message)
    while True:
        reply = client.get_shell_msg(timeout=120)
        if reply["parent_header"].get("msg_id") == message["header"]["msg_id"]:
            elapsed = (time.perf_counter() - started) * 1000
            assert reply["content"]["status"] == "ok", reply["content"]
            return json.loads(reply["content"]["text"]), elapsed


def take_over(path):
    started = time.perf_counter()
    with socket.socket(socket.AF_UNIX) as control:
        control.connect(path)
        control.sendall(b"takeover\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = control.recv(4096)
            if not chunk:
                break
            data += chunk
    answer = json.loads(data)
    assert answer["status"] == "serving", answer
    client = BlockingKernelClient(connection_file=answer["connection_file"])
    client.load_connection_file()
    client.start_channels()
    run(client, "pass")
    return client, answer["pid"], (time.perf_counter() - started) * 1000


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--sizes", default="100M,2G")
    parser.add_argument("--unchanged", action="store_true", help="the cell after the take changes no page")
    args = parser.parse_args()
    ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    source = "".join((PYTHON / part).read_text() for part in PARTS)
    for size in args.sizes.split(","):
        manager = KernelManager(kernel_name="python3")
        manager.start_kernel()
        client = manager.client()
        client.start_channels()
        client.wait_for_ready(timeout=60)
        run(client, f"import types, sys\nm = types.ModuleType({MODULE!r})\n"
                    f"exec(compile({source!r}, '<crane-dryrun-module>', 'exec'), m.__dict__)\n"
                    f"m.DIGEST = 'bench'\nsys.modules[{MODULE!r}] = m\nassert m.serve_calls()\n"
                    f"del m, types, sys")
        run(client, f"import numpy as np\ndata = np.ones({size_bytes(size) // 8})")
        forks, takes, takeovers = [], [], []
        owned, adopted = manager, None
        for _ in range(args.runs):
            answer, took = call(client, "take", {"drop": []})
            assert answer["status"] == "taken", answer
            forks.append(answer["fork_ms"])
            takes.append(took)
            # The cell after the snapshot changes every page: the snapshot keeps the old ones.
            run(client, "pass" if args.unchanged else "data += 1")
            new, pid, latency = take_over(answer["socket"])
            takeovers.append(latency)
            client.stop_channels()
            if owned is not None:
                owned.shutdown_kernel(now=True)
                owned = None
            else:
                os.kill(adopted, 9)
                os.waitpid(adopted, 0)
            client, adopted = new, pid
            # The kernel is the snapshot: the state from before the cell.
            run(client, "assert float(data[0]) == 1.0, data[0]")
        print(
            f"{size}: fork {statistics.median(forks):.1f} / {p90(forks):.1f} ms, "
            f"take (call round trip) {statistics.median(takes):.1f} / {p90(takes):.1f} ms, "
            f"takeover {statistics.median(takeovers):.1f} / {p90(takeovers):.1f} ms "
            f"(median / p90, {args.runs} runs)", flush=True
        )
        client.shutdown()
        client.stop_channels()
        time.sleep(1)
        try:
            os.kill(adopted, 9)
            os.waitpid(adopted, 0)
        except (OSError, TypeError):
            pass


if __name__ == "__main__":
    main()
