"""How many sealed dry runs a seal decides nothing for: the seal of a git revision against the
working tree's, cell by cell, on the same kernels.

    .venv/bin/python scripts/bench-seal-verdicts.py [--base REV] [--limit N] [--notebook PART] [--out FILE]

For each notebook the gallery corpus keeps (`.cache/gallery/kept.json`, made by
`scripts/gallery.py build`; sorted, the first `--limit`) a plain ipykernel starts in a copy of
its folder, and both versions of the dry-run module (crane_guard, crane_channel, crane_fork and the
files it is concatenated with, the seal's, crane_dryrun, read from `--base` with `git show` and from the working tree)
are injected under private names. Each code cell is dry-run, sealed, by the base module and by
the working tree's (taking turns first), then run for real, so the next cell sees the state the
notebook builds. A dry run ends passed, raised (the cell's own exception), blocked (the seal saw
an attempt: inconclusive), or another way (timed out, died, unsupported). Prints, per version,
the count of each, and every cell whose ending differs between the versions, with the first
attempt the seal named. Needs jupyter_client (in the project's environment).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from jupyter_client.manager import start_new_kernel

ROOT = Path(__file__).resolve().parent.parent
PYTHON = "crates/crane-probe/python"
BASE_FILES = ["crane_guard.py", "crane_channel.py", "crane_fork.py", "crane_seal.py", "crane_dryrun.py"]
NEW_FILES = ["crane_guard.py", "crane_channel.py", "crane_atfork.py", "crane_fork.py", "crane_fork_refusals.py",
             "crane_fork_child.py", "crane_proc.py", "crane_fds.py", "crane_allowlist.py", "crane_seal.py",
             "crane_common.py", "crane_cell_run.py", "crane_dryrun.py"]

INJECT = """
import sys as _s, types as _t
_m = _t.ModuleType({name!r})
_s.modules[{name!r}] = _m
exec(compile({source!r}, {name!r}, 'exec'), _m.__dict__)
del _s, _t, _m
"""

RUN = """
import sys as _s, json as _j
print('CRANE-RESULT', _j.dumps(_j.loads(repr(_s.modules[{name!r}].run(_j.dumps({{"code": {code!r}, "seal": True, "timeout_s": {timeout}}}))))))
del _s, _j
"""


def source(revision, files):
    parts = []
    for name in files:
        path = f"{PYTHON}/{name}"
        if revision is None:
            parts.append((ROOT / path).read_text())
        else:
            parts.append(subprocess.run(["git", "show", f"{revision}:{path}"], cwd=ROOT, check=True,
                                        capture_output=True, text=True).stdout)
    return "".join(parts)


def execute(client, code, timeout):
    client.execute(code, store_history=False)
    out, error = [], None
    while True:
        message = client.get_iopub_msg(timeout=timeout)
        kind, content = message["msg_type"], message["content"]
        if kind == "stream":
            out.append(content["text"])
        elif kind == "error":
            error = content["ename"]
        elif kind == "status" and content["execution_state"] == "idle":
            return "".join(out), error


def ending(document):
    status = document.get("status")
    if status == "completed":
        attempts = (document.get("seal") or {}).get("attempts") or []
        if attempts:
            return "blocked", attempts[0].get("what", "")
        return ("raised", document.get("exception")) if document.get("exception") else ("passed", "")
    return status or "?", ""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", default="HEAD")
    parser.add_argument("--limit", type=int, default=40)
    parser.add_argument("--timeout", type=float, default=30)
    parser.add_argument("--notebook", action="append", help="only notebooks whose folder contains this (repeatable)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    versions = {"base": source(args.base, BASE_FILES), "new": source(None, NEW_FILES)}
    kept = json.loads((ROOT / ".cache/gallery/kept.json").read_text())
    notebooks = [ROOT / ".cache/gallery/work" / name[: -len(".py")] / "notebook.ipynb" for name in sorted(kept)]
    notebooks = [notebook for notebook in notebooks if notebook.exists()
                 and (not args.notebook or any(part in str(notebook.parent) for part in args.notebook))][: args.limit]
    counts = {version: {} for version in versions}
    differing, rows = [], []
    for number, notebook in enumerate(notebooks):
        cells = [cell for cell in json.loads(notebook.read_text())["cells"] if cell["cell_type"] == "code"]
        with tempfile.TemporaryDirectory() as directory:
            work = Path(directory) / "nb"
            shutil.copytree(notebook.parent, work)
            manager, client = start_new_kernel(kernel_name="python3", cwd=str(work),
                                               env={**os.environ, "MPLBACKEND": "Agg"})
            try:
                for version, text in versions.items():
                    execute(client, INJECT.format(name=f"_crane_bench_{version}", source=text), 120)
                for index, cell in enumerate(cells):
                    code = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
                    order = list(versions) if (number + index) % 2 == 0 else list(reversed(list(versions)))
                    endings = {}
                    for version in order:
                        out, error = execute(client, RUN.format(name=f"_crane_bench_{version}", code=code,
                                                                timeout=args.timeout), args.timeout + 60)
                        line = next((l for l in out.splitlines() if l.startswith("CRANE-RESULT ")), None)
                        endings[version] = ending(json.loads(line[len("CRANE-RESULT "):])) if line else ("harness", error)
                        counts[version][endings[version][0]] = counts[version].get(endings[version][0], 0) + 1
                    name = f"{notebook.parent.relative_to(ROOT / '.cache/gallery/work')} cell {index}"
                    rows.append({"cell": name, **{version: list(value) for version, value in endings.items()}})
                    if endings["base"][0] != endings["new"][0]:
                        differing.append((name, endings["base"], endings["new"]))
                    execute(client, code, 600)
            finally:
                client.stop_channels()
                manager.shutdown_kernel(now=True)
        print(f"[{number + 1}/{len(notebooks)}] {notebook.parent.name}", file=sys.stderr)
    for version in versions:
        total = sum(counts[version].values())
        print(f"{version}: {total} dry runs: " + ", ".join(f"{key} {value}" for key, value in sorted(counts[version].items())))
    for name, base, new in differing:
        print(f"differs: {name}: base {base[0]} {base[1]!s:.80} / new {new[0]} {new[1]!s:.160}")
    if args.out:
        args.out.write_text(json.dumps({"counts": counts, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
