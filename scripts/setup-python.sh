#!/usr/bin/env bash
# Creates the project-local Python environment (.venv) that crane's example, tests and
# benchmarks run their Jupyter kernels in. Idempotent: does nothing when the requirement
# files have not changed since the last successful run.
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
venv=.venv
stamp="$venv/.crane-setup-stamp"
want=$(cat python/requirements.txt "$0" | sha256sum | cut -d' ' -f1)

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && "$venv/bin/python" -c 'import ipykernel' 2>/dev/null; then
  echo "python environment up to date: $venv"
  exit 0
fi

if ! "$python" -c 'import venv, ensurepip' 2>/dev/null; then
  echo "error: $python cannot create virtual environments; install the venv module (Debian: apt-get install python3-venv)" >&2
  exit 1
fi

echo "creating $venv with $("$python" --version)"
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check --no-input)
"${pip[@]}" install --quiet --upgrade pip
echo "installing kernel and data-science packages (first run takes several minutes)"
"${pip[@]}" install --quiet -r python/requirements.txt
"$venv/bin/python" - <<'PY'
import ipykernel, numpy, pandas, sklearn, matplotlib, torch
torch.zeros(2) + 1
print("ok: ipykernel", ipykernel.__version__, "numpy", numpy.__version__, "pandas", pandas.__version__,
      "sklearn", sklearn.__version__, "torch", torch.__version__)
PY
"$venv/bin/python" -c 'import tensorflow as tf; print("ok: tensorflow", tf.__version__)' 2>&1 | tail -1
echo "$want" > "$stamp"
echo "python environment ready: $venv"
