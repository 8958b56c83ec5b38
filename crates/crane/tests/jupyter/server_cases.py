"""crane's kernel under a real Jupyter Server, driven over REST and the websocket channel.

usage: server_cases.py CRANE PYTHON [CASE...]
"""

import json
import os
import signal
import sys
import time
import uuid

from harness import Server, alive, cmdline, descendants, interrupt_a_long_cell, main_on_a_server, stdout_of

CRANE_KERNEL = "crane-python3"

SETUP = "import pandas as pd\ndf = pd.DataFrame({'price': [1.0, 2.5]})\nx = 1"
# Its first line reads `x` before it binds it: nothing of it runs when it is held.
CRASH = "x = x + 1\ndf['prize'].mean()"


def held_cell_leaves_the_state_alone(server):
    kernel = server.start_kernel(CRANE_KERNEL)
    reply, _ = kernel.execute(SETUP)
    assert reply["status"] == "ok" and reply["execution_count"] == 1, reply
    reply, outputs = kernel.execute(CRASH)
    assert reply["status"] == "error", reply
    assert reply["ename"] == "CranePredictedCrash", reply
    assert "KeyError" in reply["evalue"] and "prize" in reply["evalue"], reply["evalue"]
    errors = [content for kind, content in outputs if kind == "error"]
    assert len(errors) == 1 and errors[0]["ename"] == "CranePredictedCrash", outputs
    body = "\n".join(errors[0]["traceback"])
    assert "line 2: df['prize'].mean()" in body and "PD001" in body, body
    assert not any(kind == "execute_input" for kind, _ in outputs), "a held cell does not run"
    reply, outputs = kernel.execute("print(x, df.shape)")
    assert stdout_of(outputs) == "1 (2, 1)\n", outputs
    # The held cell took no execution count.
    assert reply["execution_count"] == 2, reply


def a_held_cell_runs_the_statements_before_its_crash(server):
    kernel = server.start_kernel(CRANE_KERNEL)
    reply, _ = kernel.execute(SETUP)
    assert reply["status"] == "ok" and reply["execution_count"] == 1, reply
    # As a kernel without crane: the imports and new names before the crashing line stand.
    held = ("import numpy as np\nfrom collections import Counter\nobj1 = pd.Series([4, 7, -5])\n"
            "df['prize'].mean()\nafter = 1")
    ids = [kernel.send("shell", "execute_request", {
        "code": code, "silent": False, "store_history": True, "user_expressions": {},
        "allow_stdin": False, "stop_on_error": True}) for code in [held, "print('not reached')"]]
    replies, outputs, idle = {}, [], False
    deadline = time.time() + 60
    while (len(replies) < len(ids) or not idle) and time.time() < deadline:
        message = kernel.receive(60)
        parent = message["parent_header"].get("msg_id")
        if message["msg_type"] == "execute_reply" and parent in ids:
            replies[parent] = message["content"]
        elif parent == ids[0] and message["channel"] == "iopub":
            if message["msg_type"] == "status":
                idle = idle or message["content"]["execution_state"] == "idle"
            elif not idle:
                outputs.append((message["msg_type"], message["content"]))
    statuses = [replies[msg_id]["status"] for msg_id in ids]
    assert statuses == ["error", "aborted"], statuses
    reply = replies[ids[0]]
    assert reply["ename"] == "CranePredictedCrash" and "KeyError" in reply["evalue"], reply
    assert reply["execution_count"] == 2, reply
    errors = [content for kind, content in outputs if kind == "error"]
    assert len(errors) == 1 and errors[0]["ename"] == "CranePredictedCrash", outputs
    first = errors[0]["traceback"][0]
    assert ("crane ran lines 1-3 of this cell, which only bind new names (np, Counter, obj1), as a "
            "kernel without crane would, and held it at line 4 before it ran.") in first, first
    assert "line 4: df['prize'].mean()" in "\n".join(errors[0]["traceback"]), errors
    reply, outputs = kernel.execute("print(np.arange(3).sum(), obj1.tolist(), 'after' in globals(), x)")
    assert stdout_of(outputs) == "3 [4, 7, -5] False 1\n", outputs
    assert reply["execution_count"] == 3, reply
    # Statements that read an earlier object run too, and the object is compared with the
    # snapshot before them: unchanged, the names they bound stay.
    reply, outputs = kernel.execute("total = df['price'].sum()\nprices = df[['price']]\ndf['prize'].mean()")
    assert reply["ename"] == "CranePredictedCrash", reply
    errors = [content for kind, content in outputs if kind == "error"]
    assert ("crane ran lines 1-2 of this cell, which bind new names (total, prices) and read df from "
            "before it, as a kernel without crane would, and held it at line 3 before it ran.") in errors[0]["traceback"][0], errors
    notes = [content["data"]["text/plain"] for kind, content in outputs if kind == "display_data"]
    assert len(notes) == 1 and "left `df` as it was (compared with the snapshot before it)" in notes[0], notes
    _, outputs = kernel.execute("print(total, prices.shape)")
    assert stdout_of(outputs) == "3.5 (2, 1)\n", outputs
    # Changed in place: rolled back, and what bound new names before it runs again.
    reply, outputs = kernel.execute("n = 1\ndf.sort_values('price', ascending=False, inplace=True)\n"
                                    "df['prize'].mean()")
    assert reply["ename"] == "CranePredictedCrash", reply
    notes = [content["data"]["text/plain"] for kind, content in outputs if kind == "display_data"]
    assert len(notes) == 1 and notes[0].startswith("crane: rolled back to the state before this cell"), notes
    assert "changed `df`" in notes[0] and "Its line 1, which only binds new names (n)" in notes[0], notes
    _, outputs = kernel.execute("print(n, df['price'].tolist())")
    assert stdout_of(outputs) == "1 [1.0, 2.5]\n", outputs
    # A function of the notebook's runs as it would without crane; it changed a global its code
    # names, so the kernel is rolled back.
    kernel.execute("def grow():\n    df.loc[len(df)] = [9.0]\n    return len(df)")
    reply, outputs = kernel.execute("m = grow()\nprint(never_bound_here)")
    assert reply["ename"] == "CranePredictedCrash", reply
    assert "which binds new names (m) and read grow from before it" in reply["traceback"][0], reply["traceback"]
    notes = [content["data"]["text/plain"] for kind, content in outputs if kind == "display_data"]
    assert len(notes) == 1 and "changed `df`" in notes[0], notes
    _, outputs = kernel.execute("print(len(df), 'm' in globals())")
    assert stdout_of(outputs) == "2 False\n", outputs
    # Code that reaches the namespace by `globals()` has no fingerprint: held whole.
    kernel.execute("def sneak():\n    return globals()['df']")
    reply, _ = kernel.execute("s = sneak()\nprint(never_bound_here)")
    assert "crane held this cell before it ran" in reply["traceback"][0], reply["traceback"]
    assert ("crane did not run its line 1, which would bind s: it reads sneak from before the cell, "
            "and crane cannot fingerprint sneak to compare after it.") in reply["traceback"][1], reply["traceback"]
    # A global its code reads that has no fingerprint (a lock): not run, rather than run and
    # rolled back for want of a comparison.
    kernel.execute("import threading\nlock = threading.Lock()\ndef guarded():\n    with lock:\n        return 1")
    reply, outputs = kernel.execute("g = guarded()\nprint(never_bound_here)")
    assert "crane held this cell before it ran" in reply["traceback"][0], reply["traceback"]
    assert "crane cannot fingerprint lock to compare after it" in reply["traceback"][1], reply["traceback"]
    assert not [content for kind, content in outputs if kind == "display_data"], outputs
    # Without snapshots, data read only by subscripts, attributes and operators needs none.
    kernel.execute("%crane snapshot-keep 0")
    kernel.execute("import numpy as np\nX = np.arange(6.0).reshape(3, 2)")
    reply, _ = kernel.execute("wide, deep = X[:, :1], X[:, 1:]\nn = X.shape[0] * 2\nprint(never_bound_here)")
    assert reply["ename"] == "CranePredictedCrash", reply
    assert ("crane ran lines 1-2 of this cell, which only bind new names (wide, deep, n)"
            in reply["traceback"][0]), reply["traceback"]
    _, outputs = kernel.execute("print(wide.shape, deep.shape, n)")
    assert stdout_of(outputs) == "(3, 1) (3, 1) 6\n", outputs
    # A method of it may change it (no snapshot to compare with): held whole.
    reply, _ = kernel.execute("top = X.max()\nprint(never_bound_here)")
    assert "crane held this cell before it ran" in reply["traceback"][0], reply["traceback"]
    assert ("crane did not run its line 1, which would bind top: it reads X from before the cell, and "
            "no snapshot is kept to take it back") in reply["traceback"][1], reply["traceback"]
    # A name only that held cell binds: the hold on it says where it would have come from.
    reply, _ = kernel.execute("print(top)")
    assert ("`top` is not defined: no cell run in this kernel bound it; a cell crane held before it "
            "ran would have, on its line 1 (`top = X.max()`)") in reply["evalue"], reply["evalue"]


def a_held_cell_runs_slices_of_data_past_a_change(server):
    """Without a rollback to compare against (`snapshot-keep 0`; a kernel that cannot fork is
    the same), a held cell's statement that only slices an array nothing but the namespace
    reaches runs past the statement before it that changes an object from before the cell:
    the next cells read what a kernel without crane would have bound, and the change stays
    undone. An array another object holds is not sliced ahead."""
    kernel = server.start_kernel(CRANE_KERNEL)
    reply, _ = kernel.execute("%crane snapshot-keep 0")
    assert reply["status"] == "ok", reply
    reply, _ = kernel.execute("import numpy as np\nX = np.arange(40.).reshape(8, 5)\nlog = []")
    assert reply["status"] == "ok", reply
    reply, outputs = kernel.execute("log.append('compiled')\nX_wide = X[:, :3]\nX_new = X_wide[:2] * 2\nlog[5]")
    assert reply["ename"] == "CranePredictedCrash" and "IndexError" in reply["evalue"], reply
    first = reply["traceback"][0]
    assert ("crane ran lines 2-3 of this cell, which only bind new names (X_wide, X_new), as a kernel "
            "without crane would, and held the rest of it before it ran (the crash is predicted at "
            "line 4). Line 1 did not run") in first, first
    _, outputs = kernel.execute("print(X_wide.shape, X_new[1].tolist(), log)")
    assert stdout_of(outputs) == "(8, 3) [10.0, 12.0, 14.0] []\n", outputs
    # A first line whose name the statement left out reads runs as it would alone, and the
    # slice past that statement runs too.
    reply, _ = kernel.execute("entry = 'fit'\nlog.append(entry)\nX_top = X_new[:1]\nlog[5]")
    assert reply["ename"] == "CranePredictedCrash", reply
    first = reply["traceback"][0]
    assert "crane ran lines 1 and 3 of this cell, which only bind new names (entry, X_top)" in first, reply["traceback"]
    _, outputs = kernel.execute("print(entry, X_top.shape, log)")
    assert stdout_of(outputs) == "fit (1, 3) []\n", outputs
    reply, _ = kernel.execute("holder = {'data': X}")
    assert reply["status"] == "ok", reply
    reply, _ = kernel.execute("log.append('again')\nX_more = X[:, :2]\nlog[5]")
    assert reply["ename"] == "CranePredictedCrash", reply
    assert "crane ran" not in reply["traceback"][0], reply["traceback"]
    # The hold says why the slice did not run.
    assert ("Line 2 (X_more) did not run on its own either: something besides the notebook's "
            "namespace refers to `X` or to memory it shares.") in reply["traceback"], reply["traceback"]
    _, outputs = kernel.execute("print('X_more' in globals(), log)")
    assert stdout_of(outputs) == "False []\n", outputs


def good_cells_match_a_plain_kernel(server):
    cells = [
        "print('hello')\nimport sys\nprint('to stderr', file=sys.stderr)",
        "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2], 'b': ['x', 'y']})\ndf",
        "from IPython.display import display, Markdown\ndisplay(Markdown('**hi**'))\n[i * i for i in range(5)]",
        "for i in range(3):\n    print(i)",
    ]
    runs = {}
    for name in (CRANE_KERNEL, "python3"):
        kernel = server.start_kernel(name)
        runs[name] = [kernel.execute(cell) for cell in cells]
        kernel.close()
    for (crane_reply, crane_out), (plain_reply, plain_out) in zip(runs[CRANE_KERNEL], runs["python3"]):
        assert crane_reply["status"] == plain_reply["status"] == "ok"
        assert crane_reply["execution_count"] == plain_reply["execution_count"]
        assert encode_outputs(crane_out) == encode_outputs(plain_out), (crane_out, plain_out)


def encode_outputs(outputs):
    """The outputs as text, each run of stream messages merged per stream: ipykernel flushes
    stdout and stderr separately, so their order relative to each other is not the kernel's
    to keep (a plain kernel sends them either way round)."""
    merged, streams = [], {}

    def flush():
        for name in sorted(streams):
            merged.append(("stream", {"name": name, "text": streams[name]}))
        streams.clear()

    for kind, content in outputs:
        if kind == "stream":
            streams[content["name"]] = streams.get(content["name"], "") + content["text"]
            continue
        flush()
        merged.append((kind, content))
    flush()
    return json.dumps(merged, sort_keys=True)


def shell_requests_answer_as_a_plain_kernel_does(server):
    requests = [
        ("complete_request", {"code": "import collections\ncollections.Ord", "cursor_pos": 31}),
        ("inspect_request", {"code": "len", "cursor_pos": 3, "detail_level": 0}),
        ("is_complete_request", {"code": "for i in range(3):"}),
        ("history_request", {"output": False, "raw": True, "hist_access_type": "tail", "n": 5}),
        ("comm_info_request", {}),
    ]
    answers = {}
    for name in (CRANE_KERNEL, "python3"):
        kernel = server.start_kernel(name)
        kernel.execute("value = 41 + 1")
        answers[name] = []
        for msg_type, content in requests:
            msg_id = kernel.send("shell", msg_type, content)
            reply = kernel.until(lambda m: m["parent_header"].get("msg_id") == msg_id
                                 and m["channel"] == "shell", timeout=30)
            answers[name].append((reply["msg_type"], reply["content"]))
        kernel.close()
    for crane, plain in zip(answers[CRANE_KERNEL], answers["python3"]):
        if crane[0] == "history_reply":
            # The history database is shared: each kernel's own last entry must be its cell.
            crane = crane[1]["history"][-1][1:]
            plain = plain[1]["history"][-1][1:]
        if crane[0] == "complete_reply":
            # IPython gives Jedi 400 ms to infer each match's type and says '<unknown>' when
            # it runs out: on a loaded machine the types differ between any two kernels.
            crane, plain = without_inferred_types(crane), without_inferred_types(plain)
        assert crane == plain, (crane, plain)
    completions = answers[CRANE_KERNEL][0][1]["matches"]
    assert "OrderedDict" in completions, completions


def without_inferred_types(reply):
    msg_type, content = reply
    content = dict(content)
    metadata = dict(content.get("metadata", {}))
    metadata["_jupyter_types_experimental"] = [
        {k: v for k, v in match.items() if k not in ("type", "signature")}
        for match in metadata.get("_jupyter_types_experimental", [])
    ]
    content["metadata"] = metadata
    return msg_type, content


def the_debugger_answers_on_control(server):
    kernel = server.start_kernel(CRANE_KERNEL)
    msg_id = kernel.send("control", "debug_request", {
        "type": "request", "seq": 1, "command": "initialize",
        "arguments": {"clientID": "test", "adapterID": "python", "pathFormat": "path",
                      "linesStartAt1": True, "columnsStartAt1": True}})
    reply = kernel.until(lambda m: m["parent_header"].get("msg_id") == msg_id
                         and m["msg_type"] == "debug_reply", timeout=30)
    assert reply["channel"] == "control" and reply["content"]["success"] is True, reply["content"]
    assert reply["content"]["command"] == "initialize", reply["content"]


def dry_runs_hold_what_they_see_crash_and_auto_keeps_them_for_long_cells(server):
    kernel = server.start_kernel(CRANE_KERNEL)
    kernel.execute("import time\nsettled = []\ndef settle(n, last=2):\n    settled.append(n)\n"
                   "    if n >= last:\n        raise RuntimeError(f'cannot settle {n}')\n    return n")
    # A fast cell with a snapshot before it is not dry-run under `auto`: it raises for real
    # and `rollback auto` takes its assignment back (it comes after a call of a function from
    # before the cell that appends to a list from before it, which the comparison with the
    # snapshot finds changed, so it does not run again).
    reply, outputs = kernel.execute("settle(1)\nstate = 'before'\nsettle(3)")
    assert reply["ename"] == "RuntimeError", reply
    lines = [c["data"]["text/plain"] for kind, c in outputs if kind == "display_data"]
    assert any("changed `settled`" in line for line in lines), lines
    _, outputs = kernel.execute("print(globals().get('state'))")
    assert stdout_of(outputs) == "None\n", outputs
    # A cell that looks long (a loop) runs for real at once, with its dry run beside it from
    # its snapshot, abridged to the loop's first and last iteration: the rules cannot see into
    # settle(), the run beside it sees the last iteration raise within seconds, and crane stops
    # the real run (30 s in full) and rolls it back.
    started = time.time()
    reply, outputs = kernel.execute("state = 'before'\nfor n in range(60):\n    time.sleep(0.5)\n    settle(n, 59)")
    took = time.time() - started
    assert reply["status"] == "error" and reply["ename"] == "CranePredictedCrash", reply
    assert reply["evalue"].startswith("RuntimeError predicted at line 4"), reply
    assert not any(kind == "error" and c["ename"] == "KeyboardInterrupt" for kind, c in outputs), outputs
    assert not any(kind == "stream" and "KeyboardInterrupt" in c["text"] for kind, c in outputs), outputs
    lines = [c["data"]["text/plain"] for kind, c in outputs if kind == "display_data"]
    assert any(line.startswith("crane: stopped this cell") and "RuntimeError" in line and "2 of 60 iterations" in line
               for line in lines), outputs
    assert took < 20, took
    _, outputs = kernel.execute("%crane status")
    assert "the last cell's dry run beside it crashed first, and crane stopped the cell" in stdout_of(outputs), outputs
    _, outputs = kernel.execute("print(globals().get('state'))")
    assert stdout_of(outputs) == "None\n", "the stopped cell is rolled back"
    # The real run raises first (its second iteration) while the run beside it is still in its
    # last (30 s): that run is ended, and `rollback auto` takes the snapshot it ran from.
    started = time.time()
    reply, outputs = kernel.execute("state = 'before'\nfor n in range(10):\n    time.sleep(0.3 if n == 0 else 30 if n == 9 else 0)\n    settle(n, 1)")
    assert reply["ename"] == "RuntimeError" and time.time() - started < 15, (reply, time.time() - started)
    lines = [c["data"]["text/plain"] for kind, c in outputs if kind == "display_data"]
    assert any(line.startswith("crane: rolled back to the state before this cell")
               and "Its line 1, which only binds new names (state), ran again after the rollback" in line
               for line in lines), outputs
    _, outputs = kernel.execute("print(globals().get('state'))")
    assert stdout_of(outputs) == "before\n", "its first line ran again, as it ran before the error"
    # A loop that reads input: the run beside it reads end-of-file, which stops nothing.
    reply, outputs = kernel.execute("for n in range(2):\n    answer = input('?')\nprint(answer)", stdin=["a", "b"])
    assert reply["status"] == "ok" and stdout_of(outputs) == "b\n", (reply, outputs)
    # One that passes runs once, for real: its run beside it changes nothing of the kernel's.
    reply, outputs = kernel.execute("runs = globals().get('runs', 0) + 1\ntotal = 0\nfor n in range(3):\n    total += n\nprint(runs, total)")
    assert reply["status"] == "ok" and stdout_of(outputs) == "1 3\n", (reply, outputs)
    # `on` dry-runs every cell before it runs: the fast one is held.
    kernel.execute("%crane dry-run on")
    reply, outputs = kernel.execute("settle(3)")
    assert reply["ename"] == "CranePredictedCrash", reply
    assert "dry run" in "\n".join(reply["traceback"]), reply["traceback"]
    # Still running when the 2 s budget ends, with nothing to abridge: the fork is killed and
    # the cell runs for real.
    started = time.time()
    reply, outputs = kernel.execute("time.sleep(2.5)\nprint('slept')")
    assert reply["status"] == "ok" and stdout_of(outputs) == "slept\n", (reply, outputs)
    assert time.time() - started >= 4.5, "the budget is spent before the real run"


KERAS_SETUP = """import numpy as np
import keras
from keras import layers
rng = np.random.default_rng(0)
X = rng.random((200, 8)).astype('float32')
y = rng.integers(0, 3, size=200)
model = keras.Sequential([keras.Input((8,)), layers.Dense(16, activation='relu'), layers.Dense(3, activation='softmax')])
model.compile(optimizer='adam', loss='sparse_categorical_crossentropy')
model.fit(X, y, epochs=2, verbose=0)"""


def a_keras_fit_is_held_by_its_run_in_the_replica(server):
    kernel = server.start_kernel(CRANE_KERNEL)
    # The replica starts (it imports TensorFlow and Keras), rebuilds the model and runs the
    # fit: more than the default 10 s a check may take on a loaded 2-core machine (timings in
    # docs/benchmarks.md).
    reply, outputs = kernel.execute("%crane check-timeout 25")
    assert reply["status"] == "ok" and stdout_of(outputs) == "crane: check timeout 25 s\n", outputs
    reply, _ = kernel.execute(KERAS_SETUP, timeout=300)
    assert reply["status"] == "ok", reply
    # TensorFlow's runtime has started: no fork, no snapshot. A fit of 1000 epochs is long: the
    # replica runs it, with the model trained in the cell above, and sees its callback read the
    # key a fit without validation lacks at the end of the first epoch.
    cell = (
        "history = model.fit(X, y, epochs=1000, verbose=0, callbacks=["
        "keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: logs['val_loss'])])"
    )
    reply, outputs = kernel.execute(cell, timeout=300)
    assert reply["status"] == "error" and reply["ename"] == "CranePredictedCrash", reply
    assert "KeyError" in reply["evalue"], reply["evalue"]
    body = "\n".join(reply["traceback"])
    assert "replica" in body, body
    assert not any(kind == "execute_input" for kind, _ in outputs), "a held cell does not run"
    reply, outputs = kernel.execute("%crane status")
    assert "the replica (where cells run ahead when the kernel cannot be forked) is ready" in stdout_of(outputs), outputs
    # A fit whose time the model's and the data's sizes bound within the dry-run budget (7
    # steps of 32 samples) is not run ahead: it runs for real, once, and its own error shows.
    cell = "history = model.fit(X, y, epochs=1, verbose=0)\nbest = min(history.history['val_loss'])"
    reply, outputs = kernel.execute(cell, timeout=300)
    assert reply["status"] == "error" and reply["ename"] == "KeyError", reply
    reply, outputs = kernel.execute("%crane status")
    assert "not run ahead in the replica" in stdout_of(outputs), outputs
    reply, _ = kernel.execute(cell.replace("verbose=0)", "verbose=0, validation_split=0.2)"), timeout=300)
    assert reply["status"] == "ok", reply


def an_import_starts_no_replica(server):
    # A replica started at the kernel's own import of TensorFlow would import it beside the
    # kernel on the same cores, and hold hundreds of MB for a kernel that may never need it:
    # it starts at the first check that needs it (`a_keras_fit_is_held_by_its_run_in_the_replica`).
    kernel = server.start_kernel(CRANE_KERNEL)
    reply, _ = kernel.execute("import tensorflow as tf\nimport torch\nt = torch.ones(3) * 2", timeout=180)
    assert reply["status"] == "ok", reply
    reply, outputs = kernel.execute("x = t + 1")
    assert reply["status"] == "ok", reply
    reply, outputs = kernel.execute("%crane status")
    status = stdout_of(outputs)
    assert "the replica (where cells run ahead when the kernel cannot be forked) has not started" in status, status
    # No snapshot in a kernel that cannot fork (TensorFlow's runtime started): a held cell's
    # first statements that call a method of an earlier object cannot be compared after them,
    # so they do not run.
    kernel.execute("u = tf.constant(1.0) + 1\nimport numpy as np\nfrom sklearn.preprocessing import StandardScaler\n"
                   "scaler = StandardScaler()\nX = np.ones((3, 2))")
    reply, _ = kernel.execute("fitted = scaler.fit(X)\nprint(never_bound_here)")
    assert "crane held this cell before it ran" in reply["traceback"][0], reply["traceback"]
    # The hold says which lines did not run, what they would have bound, and why.
    assert ("crane did not run its line 1, which would bind fitted: it reads scaler, X from before the "
            "cell, and crane could take no snapshot before the cell (a kernel that cannot be forked refuses "
            "one), so nothing would "
            "take it back. A kernel without crane runs it before the crash") in reply["traceback"][1], reply["traceback"]
    _, outputs = kernel.execute("print(hasattr(scaler, 'mean_'))")
    assert stdout_of(outputs) == "False\n", outputs


def run_all_stops_at_a_held_cell(server):
    kernel = server.start_kernel(CRANE_KERNEL)
    cells = [SETUP, CRASH, "print('after')"]
    ids = [kernel.send("shell", "execute_request", {
        "code": code, "silent": False, "store_history": True, "user_expressions": {},
        "allow_stdin": False, "stop_on_error": True}) for code in cells]
    replies = {}
    deadline = time.time() + 60
    while len(replies) < len(ids) and time.time() < deadline:
        message = kernel.receive(60)
        parent = message["parent_header"].get("msg_id")
        if message["msg_type"] == "execute_reply" and parent in ids:
            replies[parent] = message["content"]
    statuses = [replies[msg_id]["status"] for msg_id in ids]
    assert statuses == ["ok", "error", "aborted"], statuses
    assert replies[ids[1]]["ename"] == "CranePredictedCrash"
    reply, outputs = kernel.execute("print(x)")
    assert stdout_of(outputs) == "1\n" and reply["execution_count"] == 2, (reply, outputs)


def magics_configure_crane_and_never_reach_the_kernel(server):
    kernel = server.start_kernel(CRANE_KERNEL)
    kernel.execute(SETUP)
    reply, outputs = kernel.execute("%crane policy warn")
    assert reply["status"] == "ok" and "policy warn" in stdout_of(outputs), outputs
    reply, outputs = kernel.execute("df['prize']")
    kinds = [kind for kind, _ in outputs]
    # Warned (display) and then run for real: the kernel's own KeyError.
    assert kinds[0] == "display_data" and "crane warning" in outputs[0][1]["data"]["text/plain"], outputs
    assert reply["status"] == "error" and reply["ename"] == "KeyError", reply
    kernel.execute("%crane policy stop")
    reply, _ = kernel.execute(CRASH)
    assert reply["ename"] == "CranePredictedCrash", reply
    _, outputs = kernel.execute("%crane explain")
    assert "held the cell" in stdout_of(outputs) and "PD001" in stdout_of(outputs), outputs
    reply, outputs = kernel.execute("%%crane run\nprint(x)\ny = df['prize']")
    assert reply["ename"] == "KeyError" and stdout_of(outputs) == "1\n", (reply, outputs)
    # IPython ends a magic's name at the first space: this names no magic, and crane says so.
    reply, _ = kernel.execute("%crane\tstatus")
    assert reply["ename"] == "CraneUsageError" and "by a space" in reply["evalue"], reply
    reply, outputs = kernel.execute(
        "print(sorted(k for k in globals() if 'crane' in k.lower()), [h for h in In[:-1] if 'crane' in h])")
    assert stdout_of(outputs) == "[] []\n", outputs
    reply, outputs = kernel.execute("%crane policy sometimes")
    assert reply["ename"] == "CraneUsageError", reply


def a_silenced_rule_lets_the_cell_run(server):
    kernel = server.start_kernel(CRANE_KERNEL)
    kernel.execute(SETUP)
    # A dry run would see the real crash and hold the cell: only the rules are silenced here.
    kernel.execute("%crane dry-run off")
    reply, outputs = kernel.execute("%crane ignore PD001")
    assert reply["status"] == "ok" and "crane: ignore PD001" in stdout_of(outputs), outputs
    reply, outputs = kernel.execute(CRASH)
    assert reply["status"] == "error" and reply["ename"] == "KeyError", reply
    _, outputs = kernel.execute("%crane status")
    assert "ignore PD001" in stdout_of(outputs), outputs
    kernel.execute("%crane ignore off")
    reply, _ = kernel.execute(CRASH)
    assert reply["ename"] == "CranePredictedCrash", reply
    reply, _ = kernel.execute(CRASH + "  # crane: ignore[missing-column]")
    assert reply["ename"] == "KeyError", reply
    reply, outputs = kernel.execute("%crane ignore PD999")
    assert reply["ename"] == "CraneUsageError", reply


def input_reaches_the_frontend(server):
    kernel = server.start_kernel(CRANE_KERNEL)
    reply, outputs = kernel.execute("name = input('who? ')\nprint('hello', name)", stdin=["ada"])
    assert reply["status"] == "ok", reply
    assert stdout_of(outputs) == "hello ada\n", outputs


def widget_comm_round_trip(server):
    kernel = server.start_kernel(CRANE_KERNEL)
    reply, outputs = kernel.execute("import ipywidgets as w\ns = w.IntSlider(value=3)\ns")
    assert reply["status"] == "ok", reply
    opens = [m for m in getattr(kernel, "others", []) if m["msg_type"] == "comm_open"]
    opens += [{"content": c} for kind, c in outputs if kind == "comm_open"]
    slider = [m["content"]["comm_id"] for m in opens
              if m["content"]["data"].get("state", {}).get("_model_name") == "IntSliderModel"]
    assert slider, f"no IntSlider comm_open among {outputs}"
    # Frontend -> kernel: the user drags the slider.
    kernel.send("shell", "comm_msg", {"comm_id": slider[0], "data": {
        "method": "update", "state": {"value": 7}, "buffer_paths": []}})
    _, outputs = kernel.execute("print(s.value)")
    assert stdout_of(outputs) == "7\n", outputs
    # Kernel -> frontend: the value changes in code.
    updates = []
    kernel.execute("s.value = 9", on_message=lambda m: updates.append(m)
                   if m["msg_type"] == "comm_msg" else None)
    values = [m["content"]["data"].get("state", {}).get("value") for m in updates
              if m["content"]["comm_id"] == slider[0]]
    assert 9 in values, updates


def interrupt_stops_a_long_cell(server):
    kernel = server.start_kernel(CRANE_KERNEL)
    kernel.execute("%crane dry-run off")
    reply, started = interrupt_a_long_cell(kernel)
    assert reply["content"]["status"] == "error", reply
    assert reply["content"]["ename"] == "KeyboardInterrupt", reply["content"]
    assert time.time() - started < 10
    reply, outputs = kernel.execute("print('still here')")
    assert stdout_of(outputs) == "still here\n", outputs


def interrupt_during_a_check_ends_the_cell_unrun(server):
    kernel = server.start_kernel(CRANE_KERNEL)
    kernel.execute("x = 1")
    # The rules are silent and dry runs are on, so the check dry-runs the cell in a fork for
    # up to 2 s before it runs.
    kernel.execute("%crane dry-run on")
    msg_id = kernel.send("shell", "execute_request", {
        "code": "import time\nfor _ in range(50):\n    time.sleep(0.1)\nx = 2", "silent": False, "store_history": True,
        "user_expressions": {}, "allow_stdin": False, "stop_on_error": True})
    time.sleep(0.8)
    kernel.interrupt()
    seen = []
    reply = kernel.until(lambda m: m["msg_type"] == "execute_reply"
                         and m["parent_header"].get("msg_id") == msg_id, timeout=30, keep=seen)
    assert reply["content"]["ename"] == "KeyboardInterrupt", reply["content"]
    assert not any(m["msg_type"] == "execute_input" and m["parent_header"].get("msg_id") == msg_id
                   for m in seen), "the interrupted cell must not run"
    reply, outputs = kernel.execute("print(x)")
    assert stdout_of(outputs) == "1\n" and reply["execution_count"] == 2, (reply, outputs)


def an_abandoned_check_lets_the_cell_run(server):
    server.install("crane-hasty", "--check-timeout", "0.001")
    kernel = server.start_kernel("crane-hasty")
    kernel.execute(SETUP)
    # The cell's own effects stay: a rollback is only offered.
    kernel.execute("%crane rollback off")
    reply, outputs = kernel.execute(CRASH)
    # No check finishes in a millisecond: the cell runs and raises for real, uninterrupted.
    assert reply["status"] == "error" and reply["ename"] == "KeyError", reply
    reply, outputs = kernel.execute("print(x)")
    assert stdout_of(outputs) == "2\n", outputs


def kernel_processes(server, kernel):
    """The proxy serving `kernel` (its connection file names the kernel id) and all below it."""
    proxies = [pid for pid in server.processes() if kernel.id in cmdline(pid) and "serve" in cmdline(pid)]
    return set(proxies + [child for pid in proxies for child in descendants(pid)])


def restart_brings_up_a_fresh_kernel(server):
    kernel = server.start_kernel(CRANE_KERNEL)
    kernel.execute("x = 5")
    before = kernel_processes(server, kernel)
    assert len(before) >= 2, f"a proxy and its kernel: {before}"
    kernel.restart()
    kernel.wait_ready()
    _, outputs = kernel.execute("print(globals().get('x'))")
    assert stdout_of(outputs) == "None\n", outputs
    after = kernel_processes(server, kernel)
    assert len(after) >= 2 and before.isdisjoint(after), (before, after)
    assert not any(alive(pid) for pid in before), "the old proxy or kernel is still running"


def a_killed_proxy_takes_its_kernel_along(server):
    kernel = server.start_kernel(CRANE_KERNEL)
    kernel.execute("x = 1")
    # A snapshot, which outlives the kernel, dies with the proxy too.
    kernel.execute("x += 1")
    proxy = [pid for pid in server.processes() if kernel.id in cmdline(pid) and "serve" in cmdline(pid)]
    processes = kernel_processes(server, kernel)
    assert len(proxy) == 1 and len(processes) >= 3, (proxy, processes)
    server.litter_expected = True
    os.kill(proxy[0], signal.SIGKILL)
    deadline = time.time() + 10
    while time.time() < deadline and any(alive(pid) for pid in processes):
        time.sleep(0.1)
    left = [pid for pid in processes if alive(pid)]
    assert not left, f"the kernel outlived its killed proxy: {left}"


def timings_say_where_each_cell_went(server):
    server.install("crane-timed", "--timings", "--dry-run", "off")
    since = len(server.read_log())
    kernel = server.start_kernel("crane-timed")
    kernel.execute(SETUP)
    reply, outputs = kernel.execute("print(df['price'].sum())")
    assert reply["status"] == "ok" and stdout_of(outputs) == "3.5\n", (reply, outputs)
    _, outputs = kernel.execute("%crane status")
    status = stdout_of(outputs)
    assert "the last check took" in status and "probe" in status and "detectors" in status, status
    # One line per cell the kernel ran (the magics cell never reached it), in the server's log.
    lines = timing_lines(server, since, 2)
    assert len(lines) == 2, lines
    assert "ms of it in the kernel's probe" in lines[1] and "the kernel ran it in" in lines[1], lines[1]


def crane_is_ready_before_the_first_cell(server):
    # The probe (and its call handler) go into the kernel when it starts, not on the first check:
    # this cell reads nothing the probe is asked about, yet finds both there.
    server.install("crane-ready", "--timings", "--dry-run", "off")
    since = len(server.read_log())
    kernel = server.start_kernel("crane-ready")
    # crane's start-up work ends with one full collection (`settle`; a fresh ipykernel has made
    # one by its first cell): the collector's schedule starts afresh, and collection is on with
    # no callback of crane's left.
    reply, _ = kernel.execute(
        "import sys\nshell = sys.modules['IPython'].get_ipython()\n"
        "ready = '_crane_probe' in sys.modules, 'crane_call_request' in shell.kernel.shell_handlers\n"
        "collector = sys.modules['gc'].get_stats()[2]['collections'] >= 2, sys.modules['gc'].isenabled(), sys.modules['gc'].callbacks")
    assert reply["status"] == "ok", reply
    reply, outputs = kernel.execute("print(ready, collector)")
    assert stdout_of(outputs) == "(True, True) (True, True, [])\n", (reply, outputs)
    lines = timing_lines(server, since, 2)
    assert len(lines) == 2 and "no probe" in lines[0], lines


def send_as(kernel, msg_id, content):
    """Send an execute_request under `msg_id`: the same id and content make the same message,
    signed the same, as a replay is. Returns the reply and the outputs, as `execute` does."""
    kernel.send("shell", "execute_request", content, msg_id=msg_id)
    reply, idle, outputs = None, False, []
    while reply is None or not idle:
        message = kernel.until(lambda m: m["parent_header"].get("msg_id") == msg_id, timeout=60)
        if message["msg_type"] == "execute_reply":
            reply = message["content"]
        elif message["msg_type"] == "status":
            idle = message["content"]["execution_state"] == "idle"
        else:
            outputs.append((message["msg_type"], message["content"]))
    return reply, outputs


def answers_within(kernel, msg_id, seconds):
    """The messages answering `msg_id` that arrive within `seconds`."""
    found, deadline = [], time.time() + seconds
    while time.time() < deadline:
        try:
            message = kernel.receive(max(0.05, deadline - time.time()))
        except TimeoutError:
            break
        if message["parent_header"].get("msg_id") == msg_id:
            found.append(message)
    return found


def cell(code):
    return {"code": code, "silent": False, "store_history": True, "user_expressions": {},
            "allow_stdin": False, "stop_on_error": True}


def replayed_requests_are_dropped_as_the_kernel_drops_them(server):
    kernel = server.start_kernel(CRANE_KERNEL)
    kernel.execute(SETUP)
    # A replayed magic changes nothing and gets no answer.
    warn = uuid.uuid4().hex
    reply, _ = send_as(kernel, warn, cell("%crane policy warn"))
    assert reply["status"] == "ok", reply
    kernel.execute("%crane policy stop")
    kernel.send("shell", "execute_request", cell("%crane policy warn"), msg_id=warn)
    assert answers_within(kernel, warn, 1.5) == [], "a replayed magic was answered"
    _, outputs = kernel.execute("%crane status")
    assert "policy stop" in stdout_of(outputs), outputs
    # A replayed held cell is not held again.
    held = uuid.uuid4().hex
    reply, _ = send_as(kernel, held, cell(CRASH))
    assert reply["ename"] == "CranePredictedCrash", reply
    kernel.send("shell", "execute_request", cell(CRASH), msg_id=held)
    assert answers_within(kernel, held, 1.5) == [], "a replayed held cell was answered"
    # A replayed cell does not run again, and nothing behind it waits for it.
    once = uuid.uuid4().hex
    reply, _ = send_as(kernel, once, cell("x = x + 1"))
    assert reply["status"] == "ok", reply
    kernel.send("shell", "execute_request", cell("x = x + 1"), msg_id=once)
    reply, outputs = kernel.execute("print(x)", timeout=20)
    assert stdout_of(outputs) == "2\n", outputs


def a_request_the_kernel_cannot_read_holds_up_nothing(server):
    """ipykernel goes busy and idle for an execute_request whose metadata is not an object,
    and never replies: the cells behind it still run, as on a plain kernel."""
    for name in (CRANE_KERNEL, "python3"):
        kernel = server.start_kernel(name)
        kernel.execute(SETUP)
        kernel.ws.send(json.dumps({
            "header": {"msg_id": uuid.uuid4().hex, "msg_type": "execute_request",
                       "session": kernel.session, "username": "test", "date": "", "version": "5.3"},
            "parent_header": {}, "metadata": [], "content": cell("x = 5"),
            "channel": "shell", "buffers": [],
        }))
        _, outputs = kernel.execute("print(x)", timeout=20)
        assert stdout_of(outputs) == "1\n", (name, outputs)
        kernel.close()


def a_request_without_its_optional_fields_is_checked(server):
    kernel = server.start_kernel(CRANE_KERNEL)
    kernel.execute(SETUP)
    # The protocol's defaults: silent false, store_history true, stop_on_error true.
    reply, outputs = send_as(kernel, uuid.uuid4().hex, {"code": CRASH})
    assert reply["status"] == "error" and reply["ename"] == "CranePredictedCrash", reply
    reply, outputs = send_as(kernel, uuid.uuid4().hex, {"code": "print(x)", "silent": None})
    assert stdout_of(outputs) == "1\n" and reply["execution_count"] == 2, (reply, outputs)


def a_background_threads_output_all_reaches_the_frontend(server):
    talk = ("import threading, time\n"
            "def talk():\n"
            "    for i in range(20):\n"
            "        print(f'line {i}', flush=True)\n"
            "        time.sleep(0.05)\n"
            "threading.Thread(target=talk).start()")
    lines = {}
    for name in (CRANE_KERNEL, "python3"):
        kernel = server.start_kernel(name)
        kernel.execute(SETUP)
        seen = []
        keep = lambda m: seen.append(m)  # noqa: E731
        kernel.execute(talk, on_message=keep)
        # Checked cells that read the kernel's state, while the thread writes.
        for _ in range(6):
            kernel.execute("total = df['price'].sum() + x", on_message=keep)
        time.sleep(1.5)
        kernel.execute("done = 1", on_message=keep)
        text = "".join(m["content"]["text"] for m in seen
                       if m["msg_type"] == "stream" and m["channel"] == "iopub")
        lines[name] = [line for line in text.splitlines() if line.startswith("line ")]
        kernel.close()
    expected = [f"line {i}" for i in range(20)]
    assert lines["python3"] == expected, lines["python3"]
    assert lines[CRANE_KERNEL] == expected, lines[CRANE_KERNEL]


def timing_lines(server, since, count):
    """The `--timings` lines the server's log gained after offset `since`, once there are
    `count` of them (or 10 s passed)."""
    deadline = time.time() + 10
    while True:
        lines = [line for line in server.read_log()[since:].splitlines() if "crane kernel: timings: cell" in line]
        if len(lines) >= count or time.time() > deadline:
            return lines
        time.sleep(0.1)


CASES = {
    "crane_is_ready_before_the_first_cell": crane_is_ready_before_the_first_cell,
    "held_cell_leaves_the_state_alone": held_cell_leaves_the_state_alone,
    "a_held_cell_runs_the_statements_before_its_crash": a_held_cell_runs_the_statements_before_its_crash,
    "a_held_cell_runs_slices_of_data_past_a_change": a_held_cell_runs_slices_of_data_past_a_change,
    "good_cells_match_a_plain_kernel": good_cells_match_a_plain_kernel,
    "shell_requests_answer_as_a_plain_kernel_does": shell_requests_answer_as_a_plain_kernel_does,
    "the_debugger_answers_on_control": the_debugger_answers_on_control,
    "dry_runs_hold_what_they_see_crash_and_auto_keeps_them_for_long_cells": dry_runs_hold_what_they_see_crash_and_auto_keeps_them_for_long_cells,
    "an_import_starts_no_replica": an_import_starts_no_replica,
    "run_all_stops_at_a_held_cell": run_all_stops_at_a_held_cell,
    "a_keras_fit_is_held_by_its_run_in_the_replica": a_keras_fit_is_held_by_its_run_in_the_replica,
    "magics_configure_crane_and_never_reach_the_kernel": magics_configure_crane_and_never_reach_the_kernel,
    "a_silenced_rule_lets_the_cell_run": a_silenced_rule_lets_the_cell_run,
    "input_reaches_the_frontend": input_reaches_the_frontend,
    "widget_comm_round_trip": widget_comm_round_trip,
    "interrupt_stops_a_long_cell": interrupt_stops_a_long_cell,
    "interrupt_during_a_check_ends_the_cell_unrun": interrupt_during_a_check_ends_the_cell_unrun,
    "an_abandoned_check_lets_the_cell_run": an_abandoned_check_lets_the_cell_run,
    "restart_brings_up_a_fresh_kernel": restart_brings_up_a_fresh_kernel,
    "a_killed_proxy_takes_its_kernel_along": a_killed_proxy_takes_its_kernel_along,
    "timings_say_where_each_cell_went": timings_say_where_each_cell_went,
    "replayed_requests_are_dropped_as_the_kernel_drops_them": replayed_requests_are_dropped_as_the_kernel_drops_them,
    "a_request_without_its_optional_fields_is_checked": a_request_without_its_optional_fields_is_checked,
    "a_request_the_kernel_cannot_read_holds_up_nothing": a_request_the_kernel_cannot_read_holds_up_nothing,
    "a_background_threads_output_all_reaches_the_frontend": a_background_threads_output_all_reaches_the_frontend,
}


if __name__ == "__main__":
    main_on_a_server(CASES)
