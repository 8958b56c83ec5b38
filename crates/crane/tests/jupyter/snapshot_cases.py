"""Snapshots of the crane kernel under a real Jupyter Server: taken before the cells that can
change state, idle, kept within their number and memory budget, gone with the kernel; a
snapshot that takes over (`%crane rollback`, `%crane undo`) is the kernel from then on.

usage: snapshot_cases.py CRANE PYTHON [CASE...]
"""

import os
import signal
import sys
import time

from harness import Server, alive, cmdline, descendants, interrupt_a_long_cell, main_on_a_server, stdout_of

CRANE_KERNEL = "crane-python3"


def children(pid):
    return [child for child in descendants(pid) if parent_of(child) == pid]


def direct_children(pid):
    """The children of `pid`'s main thread, read as fast as /proc allows."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return set(f.read().split())
    except OSError:
        return set()


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


def proxy_of(server, kernel):
    proxies = [pid for pid in server.processes() if kernel.id in cmdline(pid) and "serve" in cmdline(pid)]
    assert len(proxies) == 1, proxies
    return proxies[0]


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
    # The first cell needs no fork: the state before it is a fresh start.
    reply, _ = kernel.execute("import pandas as pd\ndf = pd.DataFrame({'a': [1.0, 2.0]})")
    assert reply["status"] == "ok", reply
    assert "the state before it is a fresh start" in crane(kernel, "%crane status")
    assert snapshots_of(server, kernel) == []
    reply, _ = kernel.execute("df['z'] = 0")
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
    assert "2 snapshot(s) kept" in listing and "before cell [2] `df['z'] = 0`" in listing, listing
    assert "before cell [1] `import pandas as pd`: " in listing and "a fresh start" in listing, listing
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
    # Once a take was answered through crane's call message, the next is not waited for: the
    # cell goes right behind it, and still gets its snapshot.
    ok(kernel, "df['b'] = df['a'] * 2")
    status = crane(kernel, "%crane status")
    assert "has a snapshot from before it" in status and "the cell sent right behind the request" in status, status
    # An interrupt sent at once, while the snapshot may still be forking, stops the cell, not
    # the fork (no check: the cell goes to the kernel at once, behind the snapshot's request).
    ok(kernel, "%crane policy off")
    pid = real_kernel(server, kernel)
    for _ in range(3):
        before = direct_children(pid)
        msg_id = kernel.send("shell", "execute_request", {
            "code": "df['c'] = 1\nimport time\nfor _ in range(300):\n    time.sleep(0.1)", "silent": False,
            "store_history": True, "user_expressions": {}, "allow_stdin": False, "stop_on_error": True})
        # The moment the kernel forks the snapshot: the interrupt comes while the kernel is
        # still answering the snapshot's request (or just after), before the cell began.
        deadline = time.time() + 10
        while direct_children(pid) <= before and time.time() < deadline:
            pass
        kernel.interrupt()
        reply = kernel.until(lambda m: m["msg_type"] == "execute_reply"
                             and m["parent_header"].get("msg_id") == msg_id, timeout=30)
        assert reply["content"]["status"] == "error", reply["content"]
        assert reply["content"]["ename"] == "KeyboardInterrupt", reply["content"]
        assert "has a snapshot from before it" in crane(kernel, "%crane status")
    reply, outputs = ok(kernel, "print(df['b'].sum())")
    assert stdout_of(outputs) == "6.0\n", outputs


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
    # The fresh start before the first cell holds no memory, and stays.
    assert "1 snapshot(s) kept" in listing, listing
    assert "before cell [1] `import numpy as np`" in listing and "a fresh start" in listing, listing
    kernel.execute("small = 1")
    assert len(snapshots_of(server, kernel)) == 1, "the dropped snapshots are gone"


def a_failed_first_cell_returns_to_a_fresh_kernel(server):
    kernel = server.start_kernel(CRANE_KERNEL)
    ok(kernel, "%crane dry-run off")
    old = real_kernel(server, kernel)
    # Quick, so rolled back by itself: to a fresh start, the state before a first cell.
    # (`exec` may change anything: a cell that only bound new names would keep them, and the
    # statements before it would run again after the rollback.)
    reply, outputs = kernel.execute("exec('y = 2')\nx = 1\nimport json\nraise ValueError('first')")
    assert reply["status"] == "error" and reply["execution_count"] == 1, reply
    notes = texts(outputs, "display_data")
    assert len(notes) == 1 and notes[0].startswith("crane: rolled back to the state before this cell"), notes
    assert "started afresh behind crane, as it was before its first cell" in notes[0], notes
    new = real_kernel(server, kernel)
    assert new != old and not alive(old), (old, new)
    reply, outputs = ok(kernel, "print('x' in globals(), 'json' in globals())")
    assert stdout_of(outputs) == "False False\n", outputs
    assert reply["execution_count"] == 1, reply
    # That cell was the fresh kernel's first (no fork before it); the next ones get forks, and
    # an undo past them returns to a fresh kernel again.
    assert snapshots_of(server, kernel) == []
    ok(kernel, "items = [0]")
    ok(kernel, "items.append(1)")
    assert len(snapshots_of(server, kernel)) == 2
    answer = crane(kernel, "%crane undo 3")
    assert "undone: the state before cell [1]" in answer and "started afresh" in answer, answer
    newer = real_kernel(server, kernel)
    assert newer != new and not alive(new), (new, newer)
    reply, outputs = ok(kernel, "print('items' in globals())")
    assert stdout_of(outputs) == "False\n", outputs
    assert reply["execution_count"] == 1, reply
    reply, outputs = ok(kernel, "name = input('who? ')\nprint('hello', name)", stdin=["ada"])
    assert stdout_of(outputs) == "hello ada\n", outputs
    proxy = proxy_of(server, kernel)
    server.shutdown_kernels()
    deadline = time.time() + 20
    while time.time() < deadline and (alive(newer) or alive(proxy)):
        time.sleep(0.2)
    assert not alive(newer) and not alive(proxy), "a kernel outlived its shutdown"


def a_request_that_can_change_state_ends_the_fresh_start(server):
    kernel = server.start_kernel(CRANE_KERNEL)
    ok(kernel, "%crane dry-run off\n%crane rollback off")
    # A frontend extension's silent code changes the kernel before the first cell: the state
    # before that cell is no fresh start, and gets a fork.
    reply, _ = kernel.execute("helper = 41", silent=True, store_history=False)
    assert reply["status"] == "ok", reply
    reply, _ = kernel.execute("helper += 1\nraise ValueError('after')")
    assert reply["status"] == "error", reply
    assert "has a snapshot from before it" in crane(kernel, "%crane status")
    assert len(snapshots_of(server, kernel)) == 1
    assert "rolled back" in crane(kernel, "%crane rollback")
    _, outputs = ok(kernel, "print(helper)")
    assert stdout_of(outputs) == "41\n", outputs


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


def ok(kernel, code, **options):
    reply, outputs = kernel.execute(code, **options)
    assert reply["status"] == "ok", (code, reply, outputs)
    return reply, outputs


def texts(outputs, kind):
    return [content["data"]["text/plain"] for k, content in outputs if k == kind]


def a_failed_cell_is_rolled_back(server):
    kernel = server.start_kernel(CRANE_KERNEL)
    ok(kernel, "%crane dry-run off")
    ok(kernel, "%crane rollback off")
    ok(kernel, "import pandas as pd\n"
               "df = pd.DataFrame({'a': [1.0, 2.0, 3.0], 'b': ['x', 'y', 'z']}, index=[10, 20, 30])\n"
               "expected = df.copy()\n"
               "events = []")
    old = real_kernel(server, kernel)
    reply, outputs = kernel.execute("df['a'] *= 10\ndf.loc[20, 'b'] = 'changed'\ndf['c'] = 1\n"
                                    "events.append('ran')\nraise ValueError('halfway')")
    assert reply["status"] == "error" and reply["ename"] == "ValueError", reply
    failed_count = reply["execution_count"]
    kinds = [kind for kind, _ in outputs]
    assert "error" in kinds, outputs
    notes = texts(outputs, "display_data")
    assert any("state before this cell is kept" in note and "%crane rollback" in note for note in notes), outputs
    # The error first, as without crane; crane's line after it.
    assert kinds.index("error") < kinds.index("display_data"), kinds
    answer = crane(kernel, "%crane rollback")
    assert "rolled back to the state before cell" in answer, answer
    new = real_kernel(server, kernel)
    assert new != old and not alive(old), (old, new)
    reply, outputs = ok(kernel, "print(df.equals(expected), df.dtypes.equals(expected.dtypes), "
                                "list(df.index), list(df.columns), df.loc[20, 'b'], events)")
    assert stdout_of(outputs) == "True True [10, 20, 30] ['a', 'b'] y []\n", outputs
    # The execution count is as before the failed cell: this cell has the failed cell's number.
    assert reply["execution_count"] == failed_count, (reply, failed_count)
    reply, outputs = ok(kernel, "df")
    assert any("10" in text for text in texts(outputs, "execute_result")), outputs
    reply, outputs = ok(kernel, "from IPython.display import display\ndisplay(df.shape)")
    assert "(3, 2)" in texts(outputs, "display_data"), outputs
    reply, outputs = ok(kernel, "name = input('who? ')\nprint('hello', name)", stdin=["ada"])
    assert stdout_of(outputs) == "hello ada\n", outputs
    reply, started = interrupt_a_long_cell(kernel)
    assert reply["content"]["ename"] == "KeyboardInterrupt", reply["content"]
    assert time.time() - started < 10
    reply, outputs = ok(kernel, "print('still here', df['a'].sum())")
    assert stdout_of(outputs) == "still here 6.0\n", outputs
    # The interrupted cell raised with a snapshot too: a second takeover, of the kernel a
    # takeover made, returns to before it.
    answer = crane(kernel, "%crane rollback")
    assert "rolled back" in answer, answer
    newer = real_kernel(server, kernel)
    assert newer != new and not alive(new), (new, newer)
    new = newer
    reply, outputs = ok(kernel, "print(df['a'].sum(), df.equals(expected))")
    assert stdout_of(outputs) == "6.0 True\n", outputs
    assert "no rollback" in crane(kernel, "%crane rollback")
    proxy = proxy_of(server, kernel)
    server.shutdown_kernels()
    deadline = time.time() + 20
    while time.time() < deadline and (alive(new) or alive(proxy)):
        time.sleep(0.2)
    assert not alive(new) and not alive(proxy) and not alive(old), "a kernel outlived its shutdown"


MUTATE_AND_RAISE = ("df['a'] *= 10\ndf.loc[20, 'b'] = 'changed'\ndf['c'] = 1\n"
                    "events.append('ran')\n{middle}raise ValueError('halfway')")
SAME_AS_BEFORE = ("print(df.equals(expected), df.dtypes.equals(expected.dtypes), list(df.index), "
                  "list(df.columns), events)")


def a_quick_failed_cell_is_rolled_back_by_itself(server):
    kernel = server.start_kernel(CRANE_KERNEL)
    # A dry run would see the crash and hold the cell: the cell must run for real.
    ok(kernel, "%crane dry-run off")
    status = crane(kernel, "%crane status")
    assert "rollback auto (cells that raised within 3 s)" in status, status
    assert "%crane rollback auto [SECONDS]" in status, status
    ok(kernel, "import pandas as pd, time\n"
               "df = pd.DataFrame({'a': [1.0, 2.0, 3.0], 'b': ['x', 'y', 'z']}, index=[10, 20, 30])\n"
               "expected = df.copy()\n"
               "events = []")
    old = real_kernel(server, kernel)
    reply, outputs = kernel.execute(MUTATE_AND_RAISE.format(middle=""))
    assert reply["status"] == "error" and reply["ename"] == "ValueError", reply
    failed_count = reply["execution_count"]
    kinds = [kind for kind, _ in outputs]
    notes = texts(outputs, "display_data")
    assert kinds.index("error") < kinds.index("display_data"), kinds
    assert len(notes) == 1 and notes[0].startswith("crane: rolled back to the state before this cell"), notes
    new = real_kernel(server, kernel)
    assert new != old and not alive(old), (old, new)
    # No magic: the next cell sees the frame as it was, with the failed cell's number.
    reply, outputs = ok(kernel, SAME_AS_BEFORE)
    assert stdout_of(outputs) == "True True [10, 20, 30] ['a', 'b'] []\n", outputs
    assert reply["execution_count"] == failed_count, (reply, failed_count)
    assert "no rollback" in crane(kernel, "%crane rollback")

    # Over the time set: kept, offered, and the next cell sees the partial changes.
    assert "rollback auto (cells that raised within 0.5 s)" in crane(kernel, "%crane rollback auto 0.5")
    reply, outputs = kernel.execute(MUTATE_AND_RAISE.format(middle="time.sleep(1.5)\n"))
    assert reply["status"] == "error", reply
    notes = texts(outputs, "display_data")
    assert len(notes) == 1 and "the state before this cell is kept; `%crane rollback` returns to it" in notes[0], notes
    assert "not rolled back by itself: it ran" in notes[0] and "over the 0.5 s" in notes[0], notes
    assert real_kernel(server, kernel) == new
    _, outputs = ok(kernel, "print(df['a'].sum(), events)")
    assert stdout_of(outputs) == "60.0 ['ran']\n", outputs
    assert "rolled back" in crane(kernel, "%crane rollback")
    _, outputs = ok(kernel, SAME_AS_BEFORE)
    assert stdout_of(outputs) == "True True [10, 20, 30] ['a', 'b'] []\n", outputs

    # Interrupted within the time set: kept, since what it did until then may be wanted.
    ok(kernel, "%crane rollback auto")
    new = real_kernel(server, kernel)
    msg_id = kernel.send("shell", "execute_request", {
        "code": "df['a'] *= 10\nfor _ in range(600):\n    time.sleep(0.1)", "silent": False,
        "store_history": True, "user_expressions": {}, "allow_stdin": False, "stop_on_error": True})
    kernel.until(lambda m: m["msg_type"] == "execute_input"
                 and m["parent_header"].get("msg_id") == msg_id, timeout=30)
    time.sleep(0.5)
    kernel.interrupt()
    note = kernel.until(lambda m: m["msg_type"] == "display_data"
                        and m["parent_header"].get("msg_id") == msg_id, timeout=30)
    text = note["content"]["data"]["text/plain"]
    assert "is kept" in text and "it was interrupted" in text, text
    assert real_kernel(server, kernel) == new
    _, outputs = ok(kernel, "print(df['a'].sum())")
    assert stdout_of(outputs) == "60.0\n", outputs

    # Off: offered only, whatever the time.
    assert "rollback off (offered only)" in crane(kernel, "%crane rollback off")
    reply, outputs = kernel.execute("df['a'] = 0.0\nraise ValueError('again')")
    assert reply["status"] == "error", reply
    notes = texts(outputs, "display_data")
    assert notes == ["crane: the state before this cell is kept; `%crane rollback` returns to it."], notes
    assert real_kernel(server, kernel) == new
    _, outputs = ok(kernel, "print(df['a'].sum())")
    assert stdout_of(outputs) == "0.0\n", outputs


def a_rollback_names_what_it_cannot_undo(server):
    import tempfile
    folder = tempfile.mkdtemp(prefix="crane-effects-")
    # A file that exists: the dry run's seal blocks writing over it (a new file would be
    # written in the fork's memory, the cell dry-run to its error and held).
    with open(os.path.join(folder, "out.txt"), "w") as f:
        f.write("old")
    kernel = server.start_kernel(CRANE_KERNEL)
    ok(kernel, f"import pandas as pd, os\nfolder = {folder!r}\ndf = pd.DataFrame({{'a': [1.0, 2.0]}})")
    # Dry-run first (`on`: the cell does not look long): the seal blocks the write in the fork
    # (so the cell is not held), the cell runs for real, writes and raises, and is rolled back;
    # the write stays.
    ok(kernel, "%crane dry-run on")
    reply, outputs = kernel.execute("df['a'] *= 10\nwith open(os.path.join(folder, 'out.txt'), 'w') as f:\n"
                                    "    f.write('partial')\nraise ValueError('after the write')")
    assert reply["status"] == "error" and reply["ename"] == "ValueError", reply
    # `on` says first why the dry run decided nothing.
    [inconclusive, note] = texts(outputs, "display_data")
    assert "dry run" in inconclusive and "line 2" in inconclusive, inconclusive
    assert note.startswith("crane: rolled back to the state before this cell"), note
    assert "A rollback does not undo what was done outside the kernel" in note, note
    assert "line 2 `open(os.path.join(folder, 'out.txt'), 'w')` writes or removes files" in note, note
    assert f"its dry run tried to open '{folder}/out.txt' for writing (line 2)" in note, note
    with open(os.path.join(folder, "out.txt")) as f:
        assert f.read() == "partial"
    _, outputs = ok(kernel, "print(df['a'].sum())")
    assert stdout_of(outputs) == "3.0\n", outputs
    # Offered, and named again by the rollback itself; a frame written to CSV and a connection.
    ok(kernel, "%crane dry-run off\n%crane rollback off")
    reply, outputs = kernel.execute("import sqlite3\ncon = sqlite3.connect(os.path.join(folder, 'runs.db'))\n"
                                    "df.to_csv(os.path.join(folder, 'out.csv'))\nraise ValueError('x')")
    assert reply["status"] == "error", reply
    [note] = texts(outputs, "display_data")
    assert "is kept" in note and "line 2 `sqlite3.connect(os.path.join(folder, 'runs.db'))`" in note, note
    assert "line 3 `df.to_csv(os.path.join(folder, 'out.csv'))` writes or removes files" in note, note
    answer = crane(kernel, "%crane rollback")
    assert "rolled back" in answer and "df.to_csv(os.path.join(folder, 'out.csv'))" in answer, answer
    assert os.path.exists(os.path.join(folder, "out.csv"))
    # An undo names what the cells it takes back did; a cell that only computes names nothing.
    ok(kernel, "df.to_json(os.path.join(folder, 'out.json'))")
    ok(kernel, "df['a'] += 1")
    answer = crane(kernel, "%crane undo 2")
    assert "undone" in answer and "line 1 `df.to_json(os.path.join(folder, 'out.json'))`" in answer, answer
    ok(kernel, "df['a'] += 1")
    answer = crane(kernel, "%crane undo")
    assert "undone" in answer and "does not undo" not in answer, answer


def undo_returns_before_the_last_cells(server):
    kernel = server.start_kernel(CRANE_KERNEL)
    ok(kernel, "%crane dry-run off")
    ok(kernel, "items = [0]")
    ok(kernel, "items.append(1)")
    ok(kernel, "items.append(2)")
    answer = crane(kernel, "%crane undo 2")
    assert "undone: the state before cell [2]" in answer, answer
    reply, outputs = ok(kernel, "print(items)")
    assert stdout_of(outputs) == "[0]\n", outputs
    assert reply["execution_count"] == 2, reply
    # Nothing older is kept: the takeover ended the kernel the other snapshots were forks of.
    assert "no undo" in crane(kernel, "%crane undo 3")
    # A second takeover ends the kernel the first one made; that kernel's connection file and
    # directory go with it (the harness looks for them once the kernels are shut down).
    ok(kernel, "items.append(3)")
    answer = crane(kernel, "%crane undo")
    assert "undone" in answer, answer
    reply, outputs = ok(kernel, "print(items)")
    assert stdout_of(outputs) == "[0]\n", outputs
    # A restart from the frontend after a takeover: a fresh kernel behind a new proxy.
    taken_over = real_kernel(server, kernel)
    kernel.restart()
    kernel.wait_ready()
    deadline = time.time() + 20
    while time.time() < deadline and alive(taken_over):
        time.sleep(0.2)
    assert not alive(taken_over), "the kernel a takeover made outlived the restart"
    reply, outputs = kernel.execute("print('items' in globals())")
    assert stdout_of(outputs) == "False\n", outputs


def an_undo_queued_behind_a_cell_keeps_that_cells_idle(server):
    """`%crane undo` sent while a cell runs waits for it and then switches kernels: the cell's
    idle, which the kernel sends just after its reply, still reaches the frontend."""
    kernel = server.start_kernel(CRANE_KERNEL)
    ok(kernel, "%crane dry-run off")
    ok(kernel, "step = 0")
    ok(kernel, "step = 1")
    running = kernel.send("shell", "execute_request", {
        "code": "import time\nstep = 99\ntime.sleep(2)", "silent": False,
        "store_history": True, "user_expressions": {}, "allow_stdin": False,
        "stop_on_error": True})
    time.sleep(0.5)
    undo = kernel.send("shell", "execute_request", {
        "code": "%crane undo", "silent": False, "store_history": True,
        "user_expressions": {}, "allow_stdin": False, "stop_on_error": True})
    states = []
    deadline = time.time() + 30
    while time.time() < deadline and (undo, "idle") not in states:
        message = kernel.receive(max(0.1, deadline - time.time()))
        parent = message["parent_header"].get("msg_id")
        if message["msg_type"] == "status" and parent in (running, undo):
            states.append((parent, message["content"]["execution_state"]))
    assert (running, "idle") in states, states
    assert (undo, "idle") in states, states
    reply, outputs = ok(kernel, "print(step)")
    assert stdout_of(outputs) == "1\n", outputs


def a_rollback_gives_back_the_seeded_random_stream(server):
    """A rollback returns `random` to the state before the cell: neither crane's fork nor the
    handshake with the kernel it made draws from it (a `kernel_info` reply's banner would)."""
    kernel = server.start_kernel(CRANE_KERNEL)
    ok(kernel, "%crane dry-run off")
    ok(kernel, "%crane rollback auto 60")
    ok(kernel, "import random\nrandom.seed(0)\nitems = []")
    reply, outputs = kernel.execute("items.append(random.random())\n1 / 0")
    assert reply["status"] == "error", reply
    assert any("rolled back" in text for text in texts(outputs, "display_data")), outputs
    _, outputs = ok(kernel, "print(items, random.random())")
    assert stdout_of(outputs) == "[] 0.8444218515250481\n", outputs


def a_stopped_proxy_removes_the_files_of_the_kernel_a_takeover_made(server):
    kernel = server.start_kernel(CRANE_KERNEL)
    ok(kernel, "%crane dry-run off")
    ok(kernel, "items = [0]")
    ok(kernel, "items.append(1)")
    assert "undone" in crane(kernel, "%crane undo")
    # The kernel the takeover made has its connection file in the snapshot's directory. A
    # proxy told to stop kills that kernel, which cannot remove the file itself: the proxy does.
    proxy = [pid for pid in server.processes() if kernel.id in cmdline(pid) and "serve" in cmdline(pid)]
    assert len(proxy) == 1, proxy
    os.kill(proxy[0], signal.SIGTERM)
    deadline = time.time() + 10
    while time.time() < deadline and alive(proxy[0]):
        time.sleep(0.1)
    assert not alive(proxy[0])
    tmp = server.env["TMPDIR"]
    left = [name for name in os.listdir(tmp) if name.startswith("crane-snapshot-")]
    assert not left, [(name, os.listdir(os.path.join(tmp, name))) for name in left]


def litter(server):
    """crane's snapshot directories in the kernels' TMPDIR that hold more or less than a
    snapshot's socket (a live snapshot's), with what each holds."""
    tmp = server.env["TMPDIR"]
    found = [(name, os.listdir(os.path.join(tmp, name))) for name in os.listdir(tmp)
             if name.startswith("crane-snapshot-")]
    return [(name, held) for name, held in found if held != ["control"]]


def a_snapshot_that_dies_taking_over_leaves_no_directory(server):
    """A snapshot that fails to become the kernel after it wrote its connection file (with the
    kernel's key) into its directory: raising, it removes the directory itself; killed by a
    signal, the proxy removes it once the process is gone, while it serves on."""
    kernel = server.start_kernel(CRANE_KERNEL)
    ok(kernel, "%crane dry-run off")
    ok(kernel, "x = 1")
    # Read by the takeover only (an ipykernel application builds its kernel once, at its start).
    ok(kernel, "import os, signal\nfrom ipykernel.kernelapp import IPKernelApp\n"
               "IPKernelApp.init_kernel = lambda app: 1 / 0")
    for death in ("1 / 0", "os.kill(os.getpid(), signal.SIGKILL)"):
        ok(kernel, f"IPKernelApp.init_kernel = lambda app: {death}")
        ok(kernel, "x += 1")
        said = crane(kernel, "%crane undo")
        assert "crane: no undo: the snapshot did not become a kernel" in said, said
        deadline = time.time() + 5
        while time.time() < deadline and litter(server):
            time.sleep(0.1)
        assert not litter(server), (death, litter(server))
    _, outputs = ok(kernel, "print(x)")
    assert stdout_of(outputs) == "3\n", outputs


def a_takeover_after_blas_torch_and_a_thread(server):
    kernel = server.start_kernel(CRANE_KERNEL)
    ok(kernel, "%crane dry-run off")
    ok(kernel, "%crane rollback off")
    ok(kernel, "import numpy as np, torch, threading\n"
               "a = np.random.rand(300, 300); b = a @ a\n"
               "t = torch.rand(200, 200); u = (t @ t).sum().item()\n"
               "th = threading.Thread(target=lambda: print('from a thread')); th.start(); th.join()\n"
               "state = 1", timeout=120)
    reply, _ = kernel.execute("state = 2\nraise RuntimeError('x')")
    assert reply["status"] == "error", reply
    assert "rolled back" in crane(kernel, "%crane rollback")
    reply, outputs = ok(kernel, "c = a @ a\nv = (t @ t).sum().item()\n"
                                "th = threading.Thread(target=lambda: print('thread again')); th.start(); th.join()\n"
                                "print(state, bool(np.allclose(b, c)), abs(u - v) < 1e-3 * abs(u))", timeout=120)
    assert stdout_of(outputs) == "thread again\n1 True True\n", outputs


def a_widget_comm_keeps_working_after_a_takeover(server):
    kernel = server.start_kernel(CRANE_KERNEL)
    ok(kernel, "%crane dry-run off")
    ok(kernel, "%crane rollback off")
    reply, outputs = ok(kernel, "import ipywidgets as w\ns = w.IntSlider(value=3)\ns")
    opens = [m for m in getattr(kernel, "others", []) if m["msg_type"] == "comm_open"]
    opens += [{"content": c} for kind, c in outputs if kind == "comm_open"]
    slider = [m["content"]["comm_id"] for m in opens
              if m["content"]["data"].get("state", {}).get("_model_name") == "IntSliderModel"]
    assert slider, f"no IntSlider comm_open among {outputs}"
    reply, _ = kernel.execute("s.value = 5\nraise ValueError('after the slider')")
    assert reply["status"] == "error", reply
    assert "rolled back" in crane(kernel, "%crane rollback")
    _, outputs = ok(kernel, "print(s.value)")
    assert stdout_of(outputs) == "3\n", outputs
    # Frontend -> the new kernel, through the comm opened before the takeover.
    kernel.send("shell", "comm_msg", {"comm_id": slider[0], "data": {
        "method": "update", "state": {"value": 7}, "buffer_paths": []}})
    _, outputs = ok(kernel, "print(s.value)")
    assert stdout_of(outputs) == "7\n", outputs
    # The new kernel -> frontend.
    updates = []
    kernel.execute("s.value = 9", on_message=lambda m: updates.append(m)
                   if m["msg_type"] == "comm_msg" else None)
    values = [m["content"]["data"].get("state", {}).get("value") for m in updates
              if m["content"]["comm_id"] == slider[0]]
    assert 9 in values, updates
    reply = kernel.send("shell", "comm_info_request", {})
    info = kernel.until(lambda m: m["msg_type"] == "comm_info_reply", timeout=30)
    assert slider[0] in info["content"]["comms"], info["content"]


def a_worker_pool_takes_no_snapshot(server):
    kernel = server.start_kernel(CRANE_KERNEL)
    ok(kernel, "%crane dry-run off")
    ok(kernel, "import multiprocessing\npool = multiprocessing.Pool(1)")
    ok(kernel, "y = 2")
    status = crane(kernel, "%crane status")
    assert "no snapshot before the last cell: a multiprocessing pool is running" in status, status
    reply, _ = kernel.execute("raise ValueError('no snapshot')")
    assert reply["status"] == "error"
    assert "no rollback" in crane(kernel, "%crane rollback")
    ok(kernel, "pool.terminate()")


def a_failed_cell_keeps_what_a_rerun_would_redo(server):
    kernel = server.start_kernel(CRANE_KERNEL)
    # The cells must run for real, not be held by a dry run; a machine under load must not
    # push a quick failure past the time `rollback auto` takes back.
    ok(kernel, "%crane dry-run off")
    ok(kernel, "%crane rollback auto 60")
    old = real_kernel(server, kernel)
    # A first cell whose imports stand, as without crane, though it raised within 3 s.
    reply, outputs = kernel.execute("%matplotlib inline\nimport matplotlib.pyplot as plt\n"
                                    "import numpy as np\nplt.style.use('no-such-style-here')")
    assert reply["status"] == "error" and reply["ename"] == "OSError", reply
    notes = texts(outputs, "display_data")
    assert notes == ["crane: kept the state as without crane: the part of this cell that ran only bound new "
                     "names (plt, np); `%crane rollback` returns to the state before it."], notes
    assert real_kernel(server, kernel) == old
    _, outputs = ok(kernel, "print(np.arange(3).sum(), plt.__name__)")
    assert stdout_of(outputs) == "3 matplotlib.pyplot\n", outputs
    # The kernel's own post-mortem: the state is the kernel's.
    reply, outputs = ok(kernel, "%tb")
    errors = [content for kind, content in outputs if kind == "error"]
    assert errors and errors[0]["ename"] == "OSError", outputs
    ok(kernel, "import pandas as pd")
    for failing, after, printed in [
        ("obj1 = pd.Series([4, 7, -5, 3], index=['d', 'b', 'a', 'c'])\n"
         "obj2 = pd.Series([1, 2, 3], index=['x', 'y', 'z'])\nobj2[[0, 1, 2]]",
         "print(obj1.iloc[[0, 1, 2]].tolist())", "[4, 7, -5]\n"),
        ("a = 'this is a string'\na[10] = 'f'", "print(a.replace('string', 'text'))", "this is a text\n"),
        ("tup = tuple(['foo', [1, 2], True])\ntup[2] = False", "tup[1].append(3)\nprint(tup)",
         "('foo', [1, 2, 3], True)\n"),
        # A library's setting set to a constant stays set, as without crane.
        ("import os\nos.environ['CRANE_CASE_SETTING'] = 'legacy'\nimport no_such_module_here",
         "print(os.environ['CRANE_CASE_SETTING'])", "legacy\n"),
    ]:
        reply, outputs = kernel.execute(failing)
        assert reply["status"] == "error", (failing, reply, outputs)
        notes = texts(outputs, "display_data")
        assert len(notes) == 1 and notes[0].startswith("crane: kept the state as without crane"), notes
        _, outputs = ok(kernel, after)
        assert stdout_of(outputs) == printed, (after, outputs)
    assert real_kernel(server, kernel) == old
    # A frame changed in place before the error is rolled back, as before.
    ok(kernel, "df = pd.DataFrame({'a': [1.0], 'b': [2.0]})\nfresh_list = []")
    reply, outputs = kernel.execute("df.drop(columns='a', inplace=True)\nkept_name = 1\n"
                                    "raise ValueError('after the drop')")
    assert reply["status"] == "error", reply
    failed_count = reply["execution_count"]
    notes = texts(outputs, "display_data")
    assert len(notes) == 1 and notes[0].startswith("crane: rolled back to the state before this cell"), notes
    _, outputs = ok(kernel, "print(list(df.columns))")
    assert stdout_of(outputs) == "['a', 'b']\n", outputs
    # The failed state went with the rollback: crane answers the post-mortem magics.
    _, outputs = ok(kernel, "%tb")
    errors = [content for kind, content in outputs if kind == "error"]
    assert len(errors) == 1 and errors[0]["ename"] == "ValueError", outputs
    assert "after the drop" in errors[0]["evalue"], errors
    _, outputs = ok(kernel, "%debug")
    assert "%crane rollback off" in stdout_of(outputs), outputs
    # A name the rolled-back cell bound is held with the reason.
    reply, outputs = kernel.execute("print(kept_name)")
    assert reply["status"] == "error" and reply["ename"] == "CranePredictedCrash", reply
    assert (f"`kept_name` is not defined: it was bound by In [{failed_count}] (line 2), "
            "which raised and was rolled back") in reply["evalue"], reply["evalue"]
    reply, outputs = kernel.execute("print(never_bound_name)")
    assert "no cell run in this kernel bound it" in reply["evalue"], reply["evalue"]
    # An attribute a rolled-back cell set: the hold names where the object was bound and the
    # cell that used it and was rolled back.
    reply, _ = ok(kernel, "class Holder:\n    pass\nholder = Holder()")
    bound_count = reply["execution_count"]
    reply, _ = kernel.execute("holder.extra = 1\nraise ValueError('after the attribute')")
    assert reply["status"] == "error", reply
    set_count = reply["execution_count"]
    reply, _ = kernel.execute("print(holder.extra)")
    assert reply["ename"] == "CranePredictedCrash", reply
    assert (f"(`holder`: In [{bound_count}] bound it on line 3; In [{set_count}], which used it after "
            "that, raised and was rolled back)") in reply["evalue"], reply["evalue"]
    # A rolled-back cell's statements before its first change run again, their outputs not
    # shown twice: the kernel holds what a plain kernel holds after them, and nothing of the rest.
    reply, outputs = kernel.execute("%matplotlib inline\nimport json\nfrom collections import OrderedDict as OD\n"
                                    "def twice(v):\n    return 2 * v\nprint('shown once')\n"
                                    "df.drop(columns='b', inplace=True)\nraise ValueError('after the drop')")
    assert reply["status"] == "error", reply
    assert stdout_of(outputs) == "shown once\n", outputs
    notes = texts(outputs, "display_data")
    assert len(notes) == 1 and notes[0].startswith("crane: rolled back to the state before this cell"), notes
    assert ("Its lines 1-6, which only bind new names (json, OD, twice), ran again after the rollback, "
            "as they ran before the error.") in notes[0], notes
    reply, outputs = ok(kernel, "print(json.dumps([1]), OD.__name__, twice(2), list(df.columns))")
    assert stdout_of(outputs) == "[1] OrderedDict 4 ['a', 'b']\n", outputs


def failed_note(kernel, code):
    """crane's one line under a cell that raised."""
    reply, outputs = kernel.execute(code)
    assert reply["status"] == "error", reply
    notes = texts(outputs, "display_data")
    assert len(notes) == 1, notes
    return notes[0]


def a_failed_cell_that_read_objects_keeps_them_when_unchanged(server):
    kernel = server.start_kernel(CRANE_KERNEL)
    ok(kernel, "%crane dry-run off")
    ok(kernel, "%crane rollback auto 60")
    ok(kernel, "import numpy as np\nimport pandas as pd\nfrom sklearn.pipeline import make_pipeline\n"
               "from sklearn.preprocessing import StandardScaler\n"
               "from sklearn.linear_model import LinearRegression\n"
               "X = np.arange(12.0).reshape(6, 2)\ny = np.arange(6.0)\nscaler = StandardScaler()\n"
               "df = pd.DataFrame({'a': [1, 2], 's': ['x', 'y']})\n"
               "class Box:\n    pass\nbox = Box()")
    old = real_kernel(server, kernel)
    # A pipeline built around an earlier transformer, a slice of an earlier array: the objects
    # are as they were (compared with the snapshot), so the names bound before the error stay.
    reply, outputs = kernel.execute("full = make_pipeline(scaler, LinearRegression())\n"
                                    "left = X[:, :1]\nfull.predict(X)")
    assert reply["status"] == "error" and reply["ename"] == "NotFittedError", reply
    notes = texts(outputs, "display_data")
    assert notes == ["crane: kept the state as without crane: the part of this cell that ran only bound new "
                     "names (full, left) and left scaler, X as they were (compared with the snapshot before "
                     "it); `%crane rollback` returns to the state before it."], notes
    assert real_kernel(server, kernel) == old
    _, outputs = ok(kernel, "print(type(full).__name__, left.shape)")
    assert stdout_of(outputs) == "Pipeline (6, 1)\n", outputs
    reply, outputs = kernel.execute("total = df['a'].sum()\nraise KeyError('missing')")
    assert reply["status"] == "error" and reply["ename"] == "KeyError", reply
    notes = texts(outputs, "display_data")
    assert len(notes) == 1 and "left `df` as it was" in notes[0], notes
    _, outputs = ok(kernel, "print(total)")
    assert stdout_of(outputs) == "3\n", outputs
    # A fit changes the transformer the pipeline holds: rolled back, and the line says which.
    note = failed_note(kernel, "fitted = make_pipeline(scaler, LinearRegression())\n"
                               "fitted.fit(X, y)\nraise ValueError('after the fit')")
    assert note.startswith("crane: rolled back to the state before this cell"), note
    assert "The part of it that ran changed `scaler`, which existed before it." in note, note
    _, outputs = ok(kernel, "print(hasattr(scaler, 'mean_'))")
    assert stdout_of(outputs) == "False\n", outputs
    # An object of the notebook's own class is read through its class's code too.
    note = failed_note(kernel, "held = [box]\nraise ValueError('after the list')")
    assert "left `box` as it was" in note, note
    # Its method changes a global the cell never names: the code names it, so it is compared.
    ok(kernel, "counter = [0]\nclass Counting:\n    def fit(self, X):\n        counter.append(len(X))\n"
               "        return self\ncounting = Counting()\n"
               "class Sneaky:\n    def poke(self):\n        globals()['counter'] = 5\nsneaky = Sneaky()")
    note = failed_note(kernel, "fitted_too = counting.fit(X)\nraise ValueError('after the count')")
    assert "changed `counter`" in note, note
    _, outputs = ok(kernel, "print(counter)")
    assert stdout_of(outputs) == "[0]\n", outputs
    # A name the cell binds itself that the notebook's code names too (here as an attribute,
    # `self.factor`): absent before the cell, the cell's own now, not a change.
    ok(kernel, "class Scaled:\n    def __init__(self):\n        self.factor = 2\n"
               "    def scale(self, X):\n        return X * self.factor\nscaled = Scaled()")
    note = failed_note(kernel, "factor = 3\nboth = [scaled]\nraise ValueError('after the factor')")
    assert "left `scaled` as it was" in note, note
    _, outputs = ok(kernel, "print(factor, len(both))")
    assert stdout_of(outputs) == "3 1\n", outputs
    # Code that reaches the namespace by `globals()`: crane cannot list what it changes.
    note = failed_note(kernel, "poked = sneaky.poke()\nraise ValueError('after the poke')")
    assert note.startswith("crane: rolled back to the state before this cell"), note
    assert "changed" not in note, note
    _, outputs = ok(kernel, "print(counter)")
    assert stdout_of(outputs) == "[0]\n", outputs
    # An array changed in place through a name the cell bound to a slice of it: rolled back.
    note = failed_note(kernel, "view = X[:, :1]\nview[0, 0] = 99.0\nraise ValueError('after the write')")
    assert "changed `X`" in note, note
    _, outputs = ok(kernel, "print(X[0, 0])")
    assert stdout_of(outputs) == "0.0\n", outputs


CASES = {
    "a_failed_cell_that_read_objects_keeps_them_when_unchanged": a_failed_cell_that_read_objects_keeps_them_when_unchanged,
    "a_stopped_proxy_removes_the_files_of_the_kernel_a_takeover_made": a_stopped_proxy_removes_the_files_of_the_kernel_a_takeover_made,
    "a_snapshot_that_dies_taking_over_leaves_no_directory": a_snapshot_that_dies_taking_over_leaves_no_directory,
    "a_rollback_names_what_it_cannot_undo": a_rollback_names_what_it_cannot_undo,
    "a_quick_failed_cell_is_rolled_back_by_itself": a_quick_failed_cell_is_rolled_back_by_itself,
    "a_failed_cell_is_rolled_back": a_failed_cell_is_rolled_back,
    "undo_returns_before_the_last_cells": undo_returns_before_the_last_cells,
    "a_rollback_gives_back_the_seeded_random_stream": a_rollback_gives_back_the_seeded_random_stream,
    "an_undo_queued_behind_a_cell_keeps_that_cells_idle": an_undo_queued_behind_a_cell_keeps_that_cells_idle,
    "a_takeover_after_blas_torch_and_a_thread": a_takeover_after_blas_torch_and_a_thread,
    "a_worker_pool_takes_no_snapshot": a_worker_pool_takes_no_snapshot,
    "a_widget_comm_keeps_working_after_a_takeover": a_widget_comm_keeps_working_after_a_takeover,
    "a_state_changing_cell_gets_an_idle_snapshot": a_state_changing_cell_gets_an_idle_snapshot,
    "the_last_three_are_kept": the_last_three_are_kept,
    "a_snapshot_over_the_budget_is_dropped_and_said": a_snapshot_over_the_budget_is_dropped_and_said,
    "a_started_tensorflow_runtime_takes_no_snapshot": a_started_tensorflow_runtime_takes_no_snapshot,
    "a_failed_first_cell_returns_to_a_fresh_kernel": a_failed_first_cell_returns_to_a_fresh_kernel,
    "a_request_that_can_change_state_ends_the_fresh_start": a_request_that_can_change_state_ends_the_fresh_start,
    "a_failed_cell_keeps_what_a_rerun_would_redo": a_failed_cell_keeps_what_a_rerun_would_redo,
}


if __name__ == "__main__":
    main_on_a_server(CASES)
