"""nbclient (as papermill and `jupyter execute` use it) running notebooks on crane's kernel.

usage: nbclient_cases.py CRANE PYTHON [CASE...]
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time

import nbformat
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from harness import alive, descendants, main_with

CELLS = [
    "import pandas as pd\ndf = pd.DataFrame({'price': [1.0, 2.5]})",
    "print(df['price'].sum())",
    "df['prize'].mean()",
    "print('after', df.shape, len(In))",
]


def notebook():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    return nb


def no_kernel_left():
    deadline = time.time() + 10
    while time.time() < deadline and any(alive(pid) for pid in descendants(os.getpid())):
        time.sleep(0.1)
    left = [pid for pid in descendants(os.getpid()) if alive(pid)]
    assert not left, f"processes left behind: {left}"


def stops_at_the_held_cell():
    nb = notebook()
    client = NotebookClient(nb, kernel_name="crane-python3", timeout=60)
    try:
        client.execute()
        raise AssertionError("nbclient ran past the held cell")
    except CellExecutionError as error:
        assert error.ename == "CranePredictedCrash", error.ename
        assert "KeyError" in error.evalue, error.evalue
    assert nb.cells[1].outputs[0]["text"] == "3.5\n", nb.cells[1].outputs
    assert nb.cells[2].outputs[0]["ename"] == "CranePredictedCrash"
    assert nb.cells[3].outputs == [] and nb.cells[3].execution_count is None
    no_kernel_left()


def allow_errors_runs_on_with_the_state_intact():
    nb = notebook()
    NotebookClient(nb, kernel_name="crane-python3", timeout=60, allow_errors=True).execute()
    assert nb.cells[2].outputs[0]["ename"] == "CranePredictedCrash"
    # The kernel's own history: '' and three cells; the held cell never reached it.
    assert nb.cells[3].outputs[0]["text"] == "after (2, 1) 4\n", nb.cells[3].outputs
    no_kernel_left()


def resident_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def a_large_cell_is_not_kept_by_the_proxy():
    """Three large cells, each followed by checked cells: the proxy's resident memory does not
    grow with each (its sockets' buffers, sized by the largest message, are reused; what it
    keeps of a cell is bounded). malloc is told to map every block over 128 kB on its own,
    so a freed copy leaves the resident size."""
    manager = KernelManager(kernel_name="crane-python3")
    manager.start_kernel(env=dict(os.environ, MALLOC_MMAP_THRESHOLD_="131072"))
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        run = lambda code: client.execute_interactive(code, timeout=120, output_hook=lambda m: None)  # noqa: E731
        proxy = manager.provisioner.process.pid
        for code in [*CELLS[:2], "%crane dry-run off"]:
            assert run(code)["content"]["status"] == "ok"
        size = 8_000_000
        resident = []
        for name in ("s", "t", "u"):
            assert run(f"{name} = '" + "a" * size + "'")["content"]["status"] == "ok"
            for _ in range(3):
                assert run(f"print(df['price'].sum() + len({name}))")["content"]["status"] == "ok"
            # The least of a second's samples: a snapshot's entry (which keeps its cell) goes
            # when the take reply that drops it is read, which may come just after a cell's reply.
            samples = []
            for _ in range(6):
                samples.append(resident_bytes(proxy))
                time.sleep(0.2)
            resident.append(min(samples))
        # A buffer may first reach the cells' size with the second of them (which of the
        # proxy's sockets carries the largest message first varies); a cell kept would grow
        # the proxy with every one.
        grown = [after - before for before, after in zip(resident, resident[1:])]
        assert min(grown) < size // 2, f"the proxy grew by {grown} bytes with each further {size}-byte cell"
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    no_kernel_left()


STOPPED_CELLS = [
    "import time\nstate = 'kept'\ndef settle(n, last=2):\n    if n >= last:\n"
    "        raise RuntimeError(f'cannot settle {n}')\n    return n",
    "state = 'changed'\nfor n in range(60):\n    time.sleep(0.5)\n    settle(n, 59)",
    "print(state)",
]


def a_stopped_cell_ends_as_a_predicted_crash():
    """A loop of 60 half-second iterations whose last raises: its dry run beside it, abridged
    to the first and last iteration, crashes first, and crane stops the real run. The notebook
    nbclient saves holds crane's error for it, not the interrupt crane used."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in STOPPED_CELLS]
    client = NotebookClient(nb, kernel_name="crane-python3", timeout=60)
    started = time.time()
    try:
        client.execute()
        raise AssertionError("nbclient ran past the stopped cell")
    except CellExecutionError as error:
        # From the execute_reply: status error, crane's ename and evalue.
        assert error.ename == "CranePredictedCrash", (error.ename, error.evalue)
        assert error.evalue.startswith("RuntimeError predicted at line 4: "), error.evalue
    assert time.time() - started < 25, "stopped well before its 30 s"
    outputs = nb.cells[1].outputs
    errors = [output for output in outputs if output["output_type"] == "error"]
    assert len(errors) == 1 and errors[0]["ename"] == "CranePredictedCrash", outputs
    assert errors[0]["evalue"].startswith("RuntimeError predicted at line 4: "), errors
    body = "\n".join(errors[0]["traceback"])
    assert "crane stopped this cell after" in body and "rolled back to the state before the cell" in body, body
    assert "line 4: settle(n, 59)" in body and "evidence:" in body, body
    assert "KeyboardInterrupt" not in str(outputs), outputs
    notes = [output["data"]["text/plain"] for output in outputs if output["output_type"] == "display_data"]
    assert any(note.startswith("crane: stopped this cell") for note in notes), outputs
    # Run All stopped there.
    assert nb.cells[2].outputs == [] and nb.cells[2].execution_count is None, nb.cells[2]
    no_kernel_left()


DYING_CELLS = [
    "%crane dry-run off",
    "import numpy as np, os\nbig = np.arange(10_000_000); x = 41",
    "x += 1",
    "import ctypes; x += 1; ctypes.string_at(0)",
    "print(x, big.sum())",
]


def a_segfault_returns_to_the_state_before_the_cell():
    """The kernel dies in a cell: nbclient gets crane's error for it (not a dead kernel), and
    the next cell runs in the snapshot taken before it."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in DYING_CELLS]
    NotebookClient(nb, kernel_name="crane-python3", timeout=60, allow_errors=True).execute()
    errors = [output for output in nb.cells[3].outputs if output["output_type"] == "error"]
    assert len(errors) == 1 and errors[0]["ename"] == "CraneKernelDied", nb.cells[3].outputs
    assert "killed by SIGSEGV (signal 11)" in errors[0]["evalue"], errors
    assert "returned it to the snapshot taken before this cell" in errors[0]["evalue"], errors
    printed = "".join(o["text"] for o in nb.cells[4].outputs if o["output_type"] == "stream" and o["name"] == "stdout")
    assert printed == "42 49999995000000\n", nb.cells[4].outputs
    no_kernel_left()


# A client that starts crane's kernel, waits until it answers, prints the pids of crane's
# process and of what it started, and dies without shutting the kernel down.
DYING_CLIENT = """
import os, sys, time
from jupyter_client.manager import KernelManager
sys.path.insert(0, sys.argv[1])
from harness import descendants
manager = KernelManager(kernel_name="crane-python3")
manager.start_kernel()
client = manager.client()
client.start_channels()
client.wait_for_ready(timeout=60)
client.execute_interactive("x = 1", timeout=60)
crane = manager.provisioner.process.pid
print(crane, *descendants(crane), flush=True)
os._exit(0)
"""


def a_kernel_whose_client_died_goes_with_it():
    """A kernel manager that dies (killed, crashed) leaves no crane kernel behind: the proxy
    serves only while the process that started it lives, as ipykernel does."""
    here = os.path.dirname(os.path.abspath(__file__))
    # To a file, not a pipe: a kernel left behind would hold a pipe open for ever.
    with tempfile.TemporaryFile("w+") as out:
        subprocess.run([sys.executable, "-c", DYING_CLIENT, here], stdout=out, timeout=120, check=True)
        out.seek(0)
        printed = out.read().split()
    pids = [int(pid) for pid in printed]
    assert len(pids) >= 2, printed  # crane, and the kernel it started
    deadline = time.time() + 15
    while time.time() < deadline and any(alive(pid) for pid in pids):
        time.sleep(0.2)
    left = [pid for pid in pids if alive(pid)]
    for pid in left:
        os.kill(pid, 9)
    assert not left, f"left behind by a dead client: {left}"


CASES = {
    "a_kernel_whose_client_died_goes_with_it": a_kernel_whose_client_died_goes_with_it,
    "a_segfault_returns_to_the_state_before_the_cell": a_segfault_returns_to_the_state_before_the_cell,
    "a_large_cell_is_not_kept_by_the_proxy": a_large_cell_is_not_kept_by_the_proxy,
    "stops_at_the_held_cell": stops_at_the_held_cell,
    "allow_errors_runs_on_with_the_state_intact": allow_errors_runs_on_with_the_state_intact,
    "a_stopped_cell_ends_as_a_predicted_crash": a_stopped_cell_ends_as_a_predicted_crash,
}


if __name__ == "__main__":
    crane, python = sys.argv[1], sys.argv[2]
    prefix = tempfile.mkdtemp(prefix="crane-nbclient-test-")
    subprocess.run([crane, "kernel", "install", "--prefix", prefix, "--python", python],
                   check=True, capture_output=True)
    os.environ["JUPYTER_PATH"] = os.path.join(prefix, "share", "jupyter")
    os.environ.pop("CRANE_LLM", None)
    failed = main_with(CASES, only=sys.argv[3:])
    shutil.rmtree(prefix, ignore_errors=True)
    sys.exit(1 if failed else 0)
