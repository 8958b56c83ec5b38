#!/usr/bin/env bash
# The wheel end to end, as a user would meet it: build it, install it into a fresh virtual
# environment that has only ipykernel and the data libraries, install the kernelspec from
# there, and run the example notebook through that kernelspec with nbclient (from the project's
# .venv, standing in for the user's Jupyter). Slow (a release build): not part of test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-python.sh >/dev/null
rm -rf target/wheels
bash scripts/build-wheel.sh
wheel=$(ls target/wheels/crane_nb-*.whl)
env=target/wheel-test/env
rm -rf target/wheel-test
python3 -m venv "$env"
pin() { grep -E "^$1==" python/requirements.txt; }
"$env/bin/python" -m pip install --quiet --disable-pip-version-check \
  "$(pin ipykernel)" "$(pin numpy)" "$(pin pandas)" "$(pin scikit-learn)" "$wheel"
test "$(command -v "$env/bin/crane")" = "$env/bin/crane"
"$env/bin/crane" --version
# The default interpreter is the active environment's.
VIRTUAL_ENV="$PWD/$env" PATH="$PWD/$env/bin:$PATH" crane kernel install --sys-prefix
grep -q "\"$PWD/$env/bin/python\"" "$env/share/jupyter/kernels/crane-python3/kernel.json"
JUPYTER_PATH="$PWD/$env/share/jupyter" .venv/bin/python - examples/titanic_like.ipynb <<'PY'
import os, sys, time
import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

nb = nbformat.read(sys.argv[1], as_version=4)
for cell in nb.cells:
    cell.outputs, cell.execution_count = [], None
client = NotebookClient(nb, kernel_name="crane-python3", timeout=120, resources={"metadata": {"path": "examples"}})
try:
    client.execute()
    sys.exit("the example ran past its crashing cell")
except CellExecutionError as error:
    assert error.ename == "CranePredictedCrash", error.ename
    print("held:", error.evalue)
codes = [cell for cell in nb.cells if cell.cell_type == "code"]
assert all(cell.execution_count for cell in codes[:3]), [c.execution_count for c in codes]
assert codes[3].outputs[0]["ename"] == "CranePredictedCrash"
time.sleep(1)
left = [p for p in os.listdir("/proc") if p.isdigit() and "kernel serve" in open(f"/proc/{p}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace") and str(os.getpid()) in open(f"/proc/{p}/stat").read().split()[3:4]]
assert not left, f"kernel processes left behind: {left}"
print("wheel test passed: crane from the wheel held the example's crashing cell")
PY
"$env/bin/crane" kernel uninstall crane-python3 --prefix "$PWD/$env"
