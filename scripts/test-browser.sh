#!/usr/bin/env bash
# The browser test of crane's kernel: JupyterLab in headless Chromium (Debian's chromium,
# driven by Playwright for Python; no browser is downloaded), a notebook on the crane kernel,
# two cells typed and run, the held cell's CranePredictedCrash seen in the output area; then a
# cell that changes a frame and raises, rolled back by itself. Writes the screenshots
# docs/jupyter-held-cell.png and docs/jupyter-rollback.png. Not part of test.sh (a browser, ~30 s).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null; then
  echo "error: no chromium; install it (Debian: apt-get update && apt-get install -y chromium)" >&2
  exit 1
fi
bash scripts/setup-python.sh >/dev/null
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r python/requirements-browser.txt
cargo build --locked --quiet
root=$PWD
cd crates/crane/tests/jupyter
"$root/.venv/bin/python" browser_case.py "$root/target/debug/crane" "$root/.venv/bin/python" \
  "$root/docs/jupyter-held-cell.png" "$root/docs/jupyter-rollback.png"
