"""A kernel that dies under the crane kernel, through a real Jupyter Server: the snapshot taken
before the killing cell becomes the kernel (a segfault, an abort, `os._exit`, a SIGKILL, a
real out-of-memory kill in a memory cgroup), the frontend keeps its session and gets crane's
error with the death's words, the same cell run again is held, and nothing is left running;
and a cell whose dry run foresees it would exhaust the memory cgroup is held before it runs.

usage: death_cases.py CRANE PYTHON [CASE...]
"""

import os
import signal
import time

from harness import alive, main_on_a_server, stdout_of
from snapshot_cases import CRANE_KERNEL, children, proxy_of, real_kernel

SETUP = "import numpy as np, os\nbig = np.arange(10_000_000); x = 41"
BEFORE = "42 49999995000000\n"
READ = "print(x, big.sum())"


def oom_score_adj(pid):
    with open(f"/proc/{pid}/oom_score_adj") as f:
        return int(f.read())


def ok(kernel, code):
    reply, outputs = kernel.execute(code)
    assert reply["status"] == "ok", (code, reply, outputs)
    return reply, outputs


def settle(server, kernel, old=None):
    """Once the proxy reaped what it must: the proxy's only child is the kernel (not `old`)."""
    proxy = proxy_of(server, kernel)
    deadline = time.time() + 20
    while time.time() < deadline:
        left = [pid for pid in children(proxy) if alive(pid)]
        if len(left) == 1 and left[0] != old:
            return left[0]
        time.sleep(0.2)
    raise AssertionError(f"the proxy's children after a death: {children(proxy)}")


def started(server, kernel):
    """A kernel that has run the first cells: its real kernel and the snapshot before cell 2."""
    ok(kernel, "%crane dry-run off")
    ok(kernel, SETUP)
    ok(kernel, "x += 1")
    return real_kernel(server, kernel)


def dies(server, kernel, code, *words, held=True):
    """Run `code`, which kills the kernel: crane's error names the death, the kernel is the
    snapshot from before it (same kernel id, no restart), and the dead kernel and its other
    snapshots are gone; run again (`held`), it is held with the same words. The new real
    kernel."""
    old = real_kernel(server, kernel)
    # Snapshots from before earlier cells (the killing cell takes its own as it is sent).
    snapshots = [pid for pid in children(old) if alive(pid)]
    assert snapshots, "a snapshot before an earlier cell"
    states = []
    reply, outputs = kernel.execute(code, on_message=lambda m: m["msg_type"] == "status"
                                    and states.append(m["content"]["execution_state"]))
    assert reply["status"] == "error" and reply["ename"] == "CraneKernelDied", reply
    evalue = reply["evalue"]
    for word in words:
        assert word in evalue, (word, evalue)
    assert evalue.endswith("crane returned it to the snapshot taken before this cell: "
                           "the next cell sees the state from before it"), evalue
    errors = [content for kind, content in outputs if kind == "error"]
    assert errors and errors[0]["evalue"] == evalue, outputs
    assert "restarting" not in states and "dead" not in states, states
    assert states[-1] == "idle", states
    new = settle(server, kernel)
    assert new != old and not alive(old), (old, new)
    # The snapshot before the killing cell is the kernel; the dead kernel's others were ended.
    assert new not in snapshots, (new, snapshots)
    deadline = time.time() + 10
    while time.time() < deadline and any(alive(pid) for pid in snapshots):
        time.sleep(0.2)
    assert not [pid for pid in snapshots if alive(pid)], snapshots
    if held:
        # Also after a cell that cannot change the state.
        ok(kernel, "x")
        again, _ = kernel.execute(code)
        assert again["ename"] == "CranePredictedCrash", again
        assert evalue.split("; crane returned")[0] in again["evalue"], (evalue, again)
        assert real_kernel(server, kernel) == new
    reply, outputs = ok(kernel, READ)
    assert stdout_of(outputs) == BEFORE, outputs
    # The frontend's kernel is the one it started: no new id, no restart.
    assert [k["id"] for k in kernel.server.request("GET", "/api/kernels")] == [kernel.id]
    return new, reply


def killing_cells_return_to_the_snapshot_before_them(server):
    kernel = server.start_kernel(CRANE_KERNEL)
    first = started(server, kernel)
    proxy = proxy_of(server, kernel)
    # The OOM killer takes the kernel, never the snapshot that can replace it.
    snapshot = [pid for pid in children(first) if alive(pid)][0]
    assert oom_score_adj(first) == min(oom_score_adj(proxy) + 500, 1000), first
    assert oom_score_adj(snapshot) == oom_score_adj(proxy), snapshot
    segfault = "import ctypes; x += 1; ctypes.string_at(0)"
    new, _ = dies(server, kernel, segfault, "killed by SIGSEGV (signal 11): a segmentation fault")
    assert oom_score_adj(new) == min(oom_score_adj(proxy) + 500, 1000), new
    # `%%crane run` runs it all the same.
    new, _ = dies(server, kernel, "%%crane run\n" + segfault, "SIGSEGV", held=False)
    dies(server, kernel, "x += 1; os.abort()", "killed by SIGABRT (signal 6): an abort")
    dies(server, kernel, "x += 1; os._exit(1)", "exited with code 1 without being asked to")
    new, _ = dies(server, kernel, "x += 1; os.kill(os.getpid(), 9)", "killed by SIGKILL (signal 9)")


def a_death_without_a_snapshot_starts_afresh(server):
    kernel = server.start_kernel(CRANE_KERNEL)
    ok(kernel, "%crane dry-run off")
    # The first cell's snapshot is the fresh start.
    old = real_kernel(server, kernel)
    first = "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)"
    reply, _ = kernel.execute(first)
    assert reply["ename"] == "CraneKernelDied", reply
    assert "crane started a fresh kernel, the state before this cell" in reply["evalue"], reply
    assert not alive(old)
    # The fresh start is the state it ran against: run again, it is held.
    reply, _ = kernel.execute(first)
    assert reply["ename"] == "CranePredictedCrash", reply
    reply, outputs = ok(kernel, "y = 1\nprint(1 + 1)")
    assert stdout_of(outputs) == "2\n" and reply["execution_count"] == 1, (reply, outputs)
    # Killed from outside while idle: the next cell says so, once, on a fresh kernel.
    old = real_kernel(server, kernel)
    os.kill(old, signal.SIGKILL)
    settle(server, kernel, old)
    reply, outputs = ok(kernel, "print(globals().get('y'))")
    assert stdout_of(outputs) == "None\n", outputs
    notes = [c["data"]["text/plain"] for kind, c in outputs if kind == "display_data"]
    assert any("the kernel died while no cell ran and was restarted: the kernel process was "
               "killed by SIGKILL" in note for note in notes), outputs
    _, outputs = ok(kernel, "print(2)")
    assert not [kind for kind, _ in outputs if kind == "display_data"], outputs
    # Snapshots off: a death in a cell says there was none, and starts afresh.
    ok(kernel, "%crane snapshot-keep 0")
    ok(kernel, "z = 3")
    reply, _ = kernel.execute("import os; os._exit(3)")
    assert reply["ename"] == "CraneKernelDied", reply
    assert "exited with code 3" in reply["evalue"], reply
    assert "kept no state from before this cell (snapshot-keep is 0)" in reply["evalue"], reply
    _, outputs = ok(kernel, "print(globals().get('z'))")
    assert stdout_of(outputs) == "None\n", outputs


class MemoryCgroup:
    """A memory cgroup of the test's own (v1 or v2, as the machine has), or none."""

    def __init__(self, limit):
        self.dir = None
        name = f"crane-death-cases-{os.getpid()}"
        for root, v2 in (("/sys/fs/cgroup/memory", False), ("/sys/fs/cgroup", True),
                         ("/sys/fs/cgroup/unified", True)):
            limit_file = "memory.max" if v2 else "memory.limit_in_bytes"
            if v2 and not os.path.exists(os.path.join(root, "cgroup.controllers")):
                continue
            if not v2 and not os.path.exists(os.path.join(root, limit_file)):
                continue
            path = os.path.join(root, name)
            try:
                os.mkdir(path)
                with open(os.path.join(path, limit_file), "w") as f:
                    f.write(str(limit))
            except OSError:
                continue
            if not v2:
                try:
                    with open(os.path.join(path, "memory.memsw.limit_in_bytes"), "w") as f:
                        f.write(str(limit))
                except OSError:
                    pass
            self.dir = path
            return

    def add(self, pid):
        with open(os.path.join(self.dir, "cgroup.procs"), "w") as f:
            f.write(str(pid))

    def remove(self):
        for _ in range(100):
            try:
                os.rmdir(self.dir)
                return
            except OSError:
                time.sleep(0.1)


def an_out_of_memory_kill_returns_to_the_snapshot_before_it(server):
    cgroup = MemoryCgroup(600 << 20)
    if cgroup.dir is None:
        assert os.geteuid() != 0, "root could not make a memory cgroup"
        print("skipped: only root can make the memory cgroup this case needs")
        return
    try:
        kernel = server.start_kernel(CRANE_KERNEL)
        first = started(server, kernel)
        cgroup.add(first)
        grow = ("import time\nchunks = []\nx += 1\nwhile True:\n"
                "    chunks.append(bytearray(50 << 20))\n    time.sleep(0.02)")
        new, _ = dies(server, kernel, grow, "killed by the out-of-memory killer (SIGKILL)",
                      "600 MB limit of its memory cgroup")
        # The snapshot was in the cgroup too (forked after the move): the OOM killer had the
        # choice, and took the kernel.
        with open(f"/proc/{new}/cgroup") as f:
            assert os.path.basename(cgroup.dir) in f.read(), new
        server.shutdown_kernels()
    finally:
        cgroup.remove()


def a_cell_that_would_exhaust_memory_is_held_with_its_size(server):
    """In a memory cgroup, a cell whose dry run asks numpy for more than the cgroup can still
    give, and writes all of it, is held with its size: the kernel never runs it, keeps its
    state and its process; the fixed cell runs; nothing of the dry run is left."""
    cgroup = MemoryCgroup(512 << 20)
    if cgroup.dir is None:
        assert os.geteuid() != 0, "root could not make a memory cgroup"
        print("skipped: only root can make the memory cgroup this case needs")
        return
    try:
        kernel = server.start_kernel(CRANE_KERNEL)
        first = started(server, kernel)
        cgroup.add(first)
        ok(kernel, "%crane dry-run on")
        before = {pid for pid in children(first) if alive(pid)}
        # 800 MB, every byte written by numpy.ones: past the 512 MB cgroup.
        reply, outputs = kernel.execute("x += 1\nfilled = np.ones(100_000_000)")
        assert reply["status"] == "error" and reply["ename"] == "CranePredictedCrash", reply
        evalue = reply["evalue"]
        assert evalue.startswith("MemoryError predicted: The cell needs more than 0.8 GB; 0."), evalue
        assert "GB available in its memory cgroup (0.5 GB limit)" in evalue, evalue
        assert "numpy.ones writes every byte it allocates" in evalue, evalue
        # Not run: the same kernel, its state, no process added (a held cell takes no snapshot,
        # and the dry run's fork is gone).
        assert real_kernel(server, kernel) == first
        assert {pid for pid in children(first) if alive(pid)} <= before, (before, children(first))
        assert not [pid for pid in children(first) if not alive(pid)], children(first)
        _, outputs = ok(kernel, READ)
        assert stdout_of(outputs) == BEFORE, outputs
        # The fixed cell (80 MB) runs.
        _, outputs = ok(kernel, "filled = np.ones(10_000_000)\nprint(int(filled.sum()))")
        assert stdout_of(outputs) == "10000000\n", outputs
        assert real_kernel(server, kernel) == first
        server.shutdown_kernels()
    finally:
        cgroup.remove()


CASES = {
    "killing_cells_return_to_the_snapshot_before_them": killing_cells_return_to_the_snapshot_before_them,
    "a_death_without_a_snapshot_starts_afresh": a_death_without_a_snapshot_starts_afresh,
    "an_out_of_memory_kill_returns_to_the_snapshot_before_it": an_out_of_memory_kill_returns_to_the_snapshot_before_it,
    "a_cell_that_would_exhaust_memory_is_held_with_its_size": a_cell_that_would_exhaust_memory_is_held_with_its_size,
}


if __name__ == "__main__":
    main_on_a_server(CASES)
