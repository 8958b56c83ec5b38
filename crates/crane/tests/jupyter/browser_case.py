"""JupyterLab in headless Chromium (Debian's chromium, driven by Playwright): a notebook on the
crane kernel, two cells typed and run, the held-cell message seen in the output area, and a
screenshot kept; then, in a second notebook, a cell that changes a frame in place and then
raises, rolled back by itself, the frame as it was, and a second screenshot.

usage: browser_case.py CRANE PYTHON HELD.png ROLLBACK.png
"""

import json
import shutil
import sys

from playwright.sync_api import sync_playwright

from harness import Server

CELLS = [
    "import pandas as pd\ndf = pd.DataFrame({'price': [1.0, 2.5], 'qty': [3, 4]})\ndf",
    "total = (df['price'] * df['quantity']).sum()",
]
# The rules cannot know the assertion fails: the cell runs, changes df in place, raises, and
# `rollback auto` takes the change back.
ROLLBACK_CELLS = [
    "import pandas as pd\ndf = pd.DataFrame({'price': [1.0, 2.5], 'qty': [3, 4]})\ndf.shape",
    "df['price'] *= 100  # to cents\nassert df['price'].max() < 100, 'prices over a dollar'",
    "df['price'].tolist()",
]


def chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    sys.exit("no chromium on PATH (Debian: apt-get install chromium)")


def open_notebook(page, server, name):
    notebook = {"cells": [], "metadata": {"kernelspec": {
        "name": "crane-python3", "display_name": "Python 3 (crane)", "language": "python"}},
        "nbformat": 4, "nbformat_minor": 5}
    server.request("PUT", f"/api/contents/{name}",
                   {"type": "notebook", "format": "json", "content": notebook})
    page.goto(f"http://127.0.0.1:{server.port}/lab/tree/{name}?token={server.token}")
    # This notebook's panel, not one opened before (JupyterLab keeps those, hidden).
    page.locator(".lm-TabBar-tab.lm-mod-current", has_text=name).first.wait_for(timeout=120_000)
    current(page).locator(".jp-Cell").first.wait_for(timeout=120_000)
    # The kernel is connected when the status bar names it and says it is idle.
    page.get_by_text("Python 3 (crane) | Idle").wait_for(timeout=120_000)


def current(page):
    """The notebook panel in view: Lumino hides the others with `lm-mod-hidden`, which
    Playwright's `:visible` does not always see."""
    return page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")


def run_cells(page, cells, expected):
    """Types and runs each cell of the notebook in view, waiting for a text in its output; its
    cells."""
    notebook = current(page)
    for index, (source, seen) in enumerate(zip(cells, expected)):
        notebook.locator(".jp-Cell .cm-content").nth(index).click()
        page.keyboard.insert_text(source)
        page.keyboard.press("Shift+Enter")
        output = notebook.locator(".jp-Cell").nth(index).locator(".jp-OutputArea-output")
        # Attached, not visible: JupyterLab may window the cells out of view.
        output.filter(has_text=seen).first.wait_for(state="attached", timeout=60_000)
    return notebook.locator(".jp-Cell")


def main():
    crane, python, held_png, rollback_png = sys.argv[1:5]
    server = Server(crane, python, lab=True)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=chromium(), args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1100, "height": 720})
            open_notebook(page, server, "held.ipynb")
            # A clean screenshot: no file browser, no news prompt.
            page.keyboard.press("Control+b")
            news = page.get_by_role("button", name="No")
            if news.count():
                news.first.click()
            cells = run_cells(page, CELLS, ["price", "CranePredictedCrash"])
            text = cells.nth(1).locator(".jp-OutputArea").inner_text()
            assert "KeyError" in text and "quantity" in text, text
            page.screenshot(path=held_png)

            open_notebook(page, server, "rollback.ipynb")
            cells = run_cells(page, ROLLBACK_CELLS, ["(2, 2)", "rolled back", "[1.0, 2.5]"])
            failed = cells.nth(1).locator(".jp-OutputArea").inner_text()
            assert "AssertionError" in failed and "rolled back to the state before this cell" in failed, failed
            cells.nth(2).scroll_into_view_if_needed()
            page.screenshot(path=rollback_png)
            browser.close()
        print(json.dumps({"held_output": text.splitlines()[:3], "rolled_back": failed.splitlines()[-3:]}))
        print("2 passed, 0 failed")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
