"""Snapshots of the crane kernel under a real Jupyter Server: taken before the cells that can
change state, idle, kept within their number and memory budget, and gone with the kernel.

usage: snapshot_cases.py CRANE PYTHON [CASE...]
"""

import sys
import time

from harness import Server, alive, cmdline, descendants, main_with, stdout_of

CRANE_KERNEL = "crane-python3"


def children(pid):
    return [child for child in descendants(pid) if parent_of(child) == pid]


def parent_of(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except OSError:
        return None


def status_field(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return line.split()[1]
    return None


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def real_kernel(server, kernel):
    proxies = [pid for pid in server.processes() if kernel.id in cmdline(pid) and "serve" in cmdline(pid)]
    assert len(proxies) == 1, proxies
    kernels = [pid for pid in children(proxies[0]) if "ipykernel" in cmdline(pid)]
    assert len(kernels) == 1, kernels
    return kernels[0]


def snapshots_of(server, kernel):
    return [pid for pid in children(real_kernel(server, kernel)) if alive(pid)]


def crane(kernel, line):
    reply, outputs = kernel.execute(line)
    assert reply["status"] == "ok", (line, reply)
    return stdout_of(outputs)


def a_state_changing_cell_gets_an_idle_snapshot(server):
    kernel = server.start_kernel(CRANE_KERNEL)
    assert snapshots_of(server, kernel) == []
    reply, _ = kernel.execute("import pandas as pd\ndf = pd.DataFrame({'a': [1.0, 2.0]})")
    assert reply["status"] == "ok", reply
    assert "has a snapshot from before it" in crane(kernel, "%crane status")
    [snapshot] = snapshots_of(server, kernel)
    # One thread (the one that forked), asleep, out of the kernel's process group.
    assert status_field(snapshot, "Threads") == "1", status_field(snapshot, "Threads")
    assert status_field(snapshot, "State") == "S", status_field(snapshot, "State")
    ticks = cpu_ticks(snapshot)
    time.sleep(1.0)
    assert cpu_ticks(snapshot) == ticks, "a snapshot uses no CPU"
    listing = crane(kernel, "%crane snapshots")
    assert "1 snapshot(s) kept" in listing and "before cell [1] `import pandas as pd`" in listing, listing
    # Displays of existing objects take none, and say why.
    reply, outputs = kernel.execute("df.head()")
    assert reply["status"] == "ok" and outputs, outputs
    assert "cannot change the kernel's state" in crane(kernel, "%crane status")
    assert snapshots_of(server, kernel) == [snapshot]
    # An interrupt meant for the kernel does not reach the snapshot.
    kernel.send("shell", "execute_request", {
        "code": "import time\ntime.sleep(30)", "silent": False, "store_history": True,
        "user_expressions": {}, "allow_stdin": False, "stop_on_error": True})
    time.sleep(2.0)
    kernel.interrupt()
    kernel.until(lambda m: m["msg_type"] == "execute_reply", timeout=30)
    assert alive(snapshot), "the interrupt killed the snapshot"
    reply, outputs = kernel.execute("print(df['a'].sum())")
    assert stdout_of(outputs) == "3.0\n", outputs


def the_last_three_are_kept(server):
    kernel = server.start_kernel(CRANE_KERNEL)
    for value in range(5):
        reply, _ = kernel.execute(f"x = {value}")
        assert reply["status"] == "ok", reply
    listing = crane(kernel, "%crane snapshots")
    assert "3 snapshot(s) kept" in listing, listing
    for count in (3, 4, 5):
        assert f"before cell [{count}] `x = {count - 1}`" in listing, listing
    assert "before cell [2]" not in listing, listing
    assert len(snapshots_of(server, kernel)) == 3, snapshots_of(server, kernel)
    crane(kernel, "%crane snapshot-keep 0")
    kernel.execute("x = 6")
    assert snapshots_of(server, kernel) == []
    assert "snapshot-keep is 0" in crane(kernel, "%crane status")


def a_snapshot_over_the_budget_is_dropped_and_said(server):
    kernel = server.start_kernel(CRANE_KERNEL)
    crane(kernel, "%crane snapshot-budget 50")
    reply, _ = kernel.execute("import numpy as np\nbig = np.ones(25_000_000)")
    assert reply["status"] == "ok", reply
    # The kernel writes every page of 200 MB: the snapshot before this cell keeps the old ones.
    reply, _ = kernel.execute("big += 1")
    assert reply["status"] == "ok", reply
    deadline = time.time() + 10
    listing = ""
    while time.time() < deadline and "dropped" not in listing:
        time.sleep(0.5)
        listing = crane(kernel, "%crane snapshots")
    assert "dropped" in listing and "before cell [2] `big += 1`" in listing, listing
    assert "over the budget of 50.0 MB" in listing, listing
    # The oldest goes first: the one before cell 1 too, though it held little.
    assert "0 snapshot(s) kept" in listing and "before cell [1]" in listing, listing
    kernel.execute("small = 1")
    assert len(snapshots_of(server, kernel)) == 1, "the dropped snapshots are gone"


def a_started_tensorflow_runtime_takes_no_snapshot(server):
    kernel = server.start_kernel(CRANE_KERNEL)
    reply, _ = kernel.execute("import tensorflow as tf\nt = tf.constant([1.0]) + 1.0", timeout=180)
    assert reply["status"] == "ok", reply
    before = snapshots_of(server, kernel)
    reply, _ = kernel.execute("y = 2")
    assert reply["status"] == "ok", reply
    status = crane(kernel, "%crane status")
    assert "no snapshot before the last cell: the TensorFlow runtime is started" in status, status
    assert snapshots_of(server, kernel) == before


CASES = {
    "a_state_changing_cell_gets_an_idle_snapshot": a_state_changing_cell_gets_an_idle_snapshot,
    "the_last_three_are_kept": the_last_three_are_kept,
    "a_snapshot_over_the_budget_is_dropped_and_said": a_snapshot_over_the_budget_is_dropped_and_said,
    "a_started_tensorflow_runtime_takes_no_snapshot": a_started_tensorflow_runtime_takes_no_snapshot,
}


if __name__ == "__main__":
    crane_binary, python = sys.argv[1], sys.argv[2]
    server = Server(crane_binary, python)
    failed = 1
    try:
        failed = main_with(CASES, server, cleanup=server.shutdown_kernels, only=sys.argv[3:])
    finally:
        try:
            server.stop()
            print("no processes left behind")
        except AssertionError as error:
            print(f"FAIL orphans: {error}")
            failed += 1
        if failed:
            print(server.read_log()[-6000:])
    sys.exit(1 if failed else 0)
