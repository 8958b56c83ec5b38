"""A real Jupyter Server with crane's kernelspec installed under a temporary prefix, and a client
that speaks to its kernels over the REST API and the websocket channel, as a frontend does.

Used by server_cases.py and bench_kernel.py; every process started here is found again and
checked to be gone at the end.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid

import websocket


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def descendants(pid):
    """Pids of every process below `pid`, from /proc."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


class Server:
    """jupyter_server on a free port, with `crane kernel install --prefix` done first."""

    def __init__(self, crane, python, lab=False):
        self.dir = tempfile.mkdtemp(prefix="crane-jupyter-test-")
        prefix = self.prefix = os.path.join(self.dir, "prefix")
        self.crane, self.python = crane, python
        self.env = dict(os.environ)
        self.env.update(
            JUPYTER_PATH=os.path.join(prefix, "share", "jupyter"),
            JUPYTER_DATA_DIR=os.path.join(self.dir, "data"),
            JUPYTER_RUNTIME_DIR=os.path.join(self.dir, "runtime"),
            JUPYTER_CONFIG_DIR=os.path.join(self.dir, "config"),
            IPYTHONDIR=os.path.join(self.dir, "ipython"),
            MPLBACKEND="Agg",
            # The kernels' own: what a proxy, kernel or snapshot leaves there is seen.
            TMPDIR=os.path.join(self.dir, "tmp"),
        )
        os.makedirs(self.env["TMPDIR"])
        # Set by a case that kills a proxy, which can remove nothing.
        self.litter_expected = False
        self.env.pop("CRANE_LLM", None)
        subprocess.run(
            [crane, "kernel", "install", "--prefix", prefix, "--python", python],
            check=True, env=self.env, capture_output=True,
        )
        # Only JupyterLab's own test needs its extensions, which take long to load.
        if not lab:
            os.makedirs(self.env["JUPYTER_CONFIG_DIR"])
            disabled = {name: False for name in (
                "jupyterlab", "jupyter_lsp", "notebook_shim", "jupyter_server_terminals",
                "notebook", "nbclassic")}
            with open(os.path.join(self.env["JUPYTER_CONFIG_DIR"], "jupyter_server_config.json"), "w") as f:
                json.dump({"ServerApp": {"jpserver_extensions": disabled}}, f)
        self.port = free_port()
        self.token = uuid.uuid4().hex
        self.log = open(os.path.join(self.dir, "server.log"), "w")
        self.process = subprocess.Popen(
            [python, "-m", "jupyter_server", f"--port={self.port}", "--ip=127.0.0.1",
             f"--IdentityProvider.token={self.token}", "--ServerApp.open_browser=False",
             f"--ServerApp.root_dir={self.dir}", "--KernelRestarter.restart_limit=3",
             "--ServerApp.allow_root=True"],
            env=self.env, stdout=self.log, stderr=subprocess.STDOUT, cwd=self.dir,
        )
        self.seen = set()
        deadline = time.time() + 60
        while True:
            try:
                self.request("GET", "/api/status")
                break
            except OSError:
                if self.process.poll() is not None or time.time() > deadline:
                    raise RuntimeError("jupyter_server did not start: " + self.read_log())
                time.sleep(0.2)

    def read_log(self):
        if getattr(self, "final_log", None) is not None:
            return self.final_log
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()

    def request(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}", data=data, method=method,
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=120) as response:
            text = response.read()
            return json.loads(text) if text else None

    def install(self, name, *options):
        """Another crane kernelspec, with these `crane kernel install` options."""
        subprocess.run(
            [self.crane, "kernel", "install", "--prefix", self.prefix, "--python", self.python,
             "--name", name, *options],
            check=True, env=self.env, capture_output=True,
        )

    def start_kernel(self, name):
        kernel = self.request("POST", "/api/kernels", {"name": name})
        return Kernel(self, kernel["id"])

    def processes(self):
        """Every process below the server now (proxies, kernels, forks), remembered for `stop`."""
        pids = descendants(self.process.pid)
        self.seen.update(pids)
        return pids

    def shutdown_kernels(self):
        """Shut every kernel down and check that its proxy, kernel and forks are all gone."""
        before = self.processes()
        for kernel in self.request("GET", "/api/kernels"):
            self.request("DELETE", f"/api/kernels/{kernel['id']}")
        deadline = time.time() + 10
        while time.time() < deadline and any(alive(pid) for pid in before):
            time.sleep(0.1)
        left = [f"{pid}: {cmdline(pid)}" for pid in before if alive(pid)]
        assert not left, "processes left behind after the kernels shut down:\n" + "\n".join(left)
        tmp = self.env["TMPDIR"]
        litter = sorted(name for name in os.listdir(tmp) if name.startswith("crane-"))
        found = ", ".join(f"{name} ({', '.join(os.listdir(os.path.join(tmp, name)))})" for name in litter)
        # Removed either way: the next case is judged on what it leaves.
        for name in litter:
            shutil.rmtree(os.path.join(tmp, name), ignore_errors=True)
        expected, self.litter_expected = self.litter_expected, False
        assert expected or not litter, "crane's directories left behind after the kernels shut down: " + found

    def stop(self):
        self.shutdown_kernels()
        self.process.terminate()
        self.process.wait(timeout=30)
        deadline = time.time() + 10
        while time.time() < deadline and any(alive(pid) for pid in self.seen):
            time.sleep(0.1)
        left = [f"{pid}: {cmdline(pid)}" for pid in self.seen if alive(pid)]
        assert not left, "processes left behind:\n" + "\n".join(left)
        self.final_log = self.read_log()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class Kernel:
    """One kernel through the server's websocket channel, as JupyterLab uses it."""

    def __init__(self, server, kernel_id):
        self.server, self.id = server, kernel_id
        self.session = uuid.uuid4().hex
        self.ws = None
        self.connect()

    def connect(self):
        url = (f"ws://127.0.0.1:{self.server.port}/api/kernels/{self.id}/channels"
               f"?session_id={self.session}&token={self.server.token}")
        self.ws = websocket.create_connection(url, timeout=120)
        self.backlog = []
        self.wait_ready()

    def wait_ready(self, timeout=60):
        """kernel_info until it is answered (the kernel may still be starting)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            msg_id = self.send("shell", "kernel_info_request", {})
            try:
                self.until(lambda m: m["parent_header"].get("msg_id") == msg_id
                           and m["msg_type"] == "kernel_info_reply", timeout=5)
                return
            except TimeoutError:
                continue
        raise TimeoutError("kernel_info was never answered")

    def send(self, channel, msg_type, content, msg_id=None):
        msg_id = msg_id or uuid.uuid4().hex
        self.ws.send(json.dumps({
            "header": {"msg_id": msg_id, "msg_type": msg_type, "session": self.session,
                       "username": "test", "date": "", "version": "5.3"},
            "parent_header": {}, "metadata": {}, "content": content,
            "channel": channel, "buffers": [],
        }))
        return msg_id

    def receive(self, timeout):
        if self.backlog:
            return self.backlog.pop(0)
        self.ws.settimeout(timeout)
        try:
            return json.loads(self.ws.recv())
        except websocket.WebSocketTimeoutException:
            raise TimeoutError("no message") from None

    def until(self, predicate, timeout=60, keep=None):
        """Messages until one matches; the others go to `keep` (or are dropped)."""
        deadline = time.time() + timeout
        while True:
            left = deadline - time.time()
            if left <= 0:
                raise TimeoutError("no matching message")
            message = self.receive(left)
            if predicate(message):
                return message
            if keep is not None:
                keep.append(message)

    def execute(self, code, stdin=None, timeout=60, on_message=None, **options):
        """Run a cell; returns (reply content, outputs as (msg_type, content)). `stdin` answers
        input requests in turn."""
        content = {"code": code, "silent": False, "store_history": True,
                   "user_expressions": {}, "allow_stdin": stdin is not None,
                   "stop_on_error": True}
        content.update(options)
        msg_id = self.send("shell", "execute_request", content)
        reply, idle, outputs = None, False, []
        answers = list(stdin or [])
        deadline = time.time() + timeout
        while reply is None or not idle:
            message = self.receive(max(0.1, deadline - time.time()))
            if time.time() > deadline:
                raise TimeoutError(f"cell did not finish: {code!r}")
            if on_message:
                on_message(message)
            if message["parent_header"].get("msg_id") != msg_id:
                if message["channel"] == "iopub" and message["msg_type"] not in ("status",):
                    self.backlog_other(message)
                continue
            kind = message["msg_type"]
            if message["channel"] == "stdin" and kind == "input_request":
                self.send("stdin", "input_reply", {"value": answers.pop(0)})
            elif message["channel"] == "shell" and kind == "execute_reply":
                reply = message["content"]
            elif kind == "status":
                idle = message["content"]["execution_state"] == "idle"
            elif message["channel"] == "iopub":
                outputs.append((kind, message["content"]))
        return reply, outputs

    def backlog_other(self, message):
        self.others = getattr(self, "others", [])
        self.others.append(message)

    def interrupt(self):
        self.server.request("POST", f"/api/kernels/{self.id}/interrupt")

    def restart(self):
        self.server.request("POST", f"/api/kernels/{self.id}/restart")

    def close(self):
        self.ws.close()


def stdout_of(outputs):
    return "".join(c["text"] for kind, c in outputs if kind == "stream" and c["name"] == "stdout")


def main_with(cases, *args, cleanup=None, only=()):
    """Run `cases` (name -> function(*args)), or those named in `only`, `cleanup` after each;
    prints one line per case and the tally. Running none is a failure."""
    passed = failed = 0
    only = set(only)
    for name, case in cases.items():
        if only and name not in only:
            continue
        started = time.time()
        try:
            case(*args)
            passed += 1
            print(f"ok   {name} ({time.time() - started:.1f} s)", flush=True)
        except Exception as error:  # noqa: BLE001 - each case reports its own failure
            failed += 1
            import traceback
            print(f"FAIL {name}: {error!r}", flush=True)
            traceback.print_exc()
        if cleanup:
            try:
                cleanup()
            except AssertionError as error:
                failed += 1
                print(f"FAIL {name} (cleanup): {error}", flush=True)
    print(f"{passed} passed, {failed} failed")
    return failed or not passed


def main_on_a_server(cases):
    """`usage: DRIVER CRANE PYTHON [CASE...]`: run `cases` (each given the server) on a Jupyter
    Server, shutting kernels down after each, then check that no process is left behind; exits
    non-zero on any failure and prints the end of the server's log then."""
    crane, python = sys.argv[1], sys.argv[2]
    server = Server(crane, python)
    failed = 1
    try:
        failed = main_with(cases, server, cleanup=server.shutdown_kernels, only=sys.argv[3:])
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


def interrupt_a_long_cell(kernel):
    """Start a cell that sleeps for a minute, interrupt it once it runs: its execute reply and
    the time of the interrupt."""
    msg_id = kernel.send("shell", "execute_request", {
        "code": "import time\nfor _ in range(600):\n    time.sleep(0.1)", "silent": False,
        "store_history": True, "user_expressions": {}, "allow_stdin": False, "stop_on_error": True})
    kernel.until(lambda m: m["msg_type"] == "execute_input"
                 and m["parent_header"].get("msg_id") == msg_id, timeout=30)
    time.sleep(0.5)
    started = time.time()
    kernel.interrupt()
    reply = kernel.until(lambda m: m["msg_type"] == "execute_reply"
                         and m["parent_header"].get("msg_id") == msg_id, timeout=30)
    return reply, started
