"""JupyterLab in headless Chromium (Debian's chromium, driven by Playwright): a notebook on the
crane kernel, two cells typed and run, the held-cell message seen in the output area, and a
screenshot kept.

usage: browser_case.py CRANE PYTHON SCREENSHOT.png
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


def chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    sys.exit("no chromium on PATH (Debian: apt-get install chromium)")


def main():
    crane, python, screenshot = sys.argv[1:4]
    server = Server(crane, python, lab=True)
    try:
        notebook = {"cells": [], "metadata": {"kernelspec": {
            "name": "crane-python3", "display_name": "Python 3 (crane)", "language": "python"}},
            "nbformat": 4, "nbformat_minor": 5}
        server.request("PUT", "/api/contents/held.ipynb",
                       {"type": "notebook", "format": "json", "content": notebook})
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=chromium(), args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1100, "height": 720})
            page.goto(f"http://127.0.0.1:{server.port}/lab/tree/held.ipynb?token={server.token}")
            page.wait_for_selector(".jp-Notebook", timeout=120_000)
            # The kernel is connected when the status bar names it and says it is idle.
            page.get_by_text("Python 3 (crane) | Idle").wait_for(timeout=120_000)
            # A clean screenshot: no file browser, no news prompt.
            page.keyboard.press("Control+b")
            news = page.get_by_role("button", name="No")
            if news.count():
                news.first.click()
            expected = ["price", "CranePredictedCrash"]
            for index, (source, seen) in enumerate(zip(CELLS, expected)):
                page.locator(".jp-Cell .cm-content").nth(index).click()
                page.keyboard.insert_text(source)
                page.keyboard.press("Shift+Enter")
                output = page.locator(".jp-Cell").nth(index).locator(".jp-OutputArea-output")
                output.filter(has_text=seen).wait_for(timeout=60_000)
            text = output.inner_text()
            assert "KeyError" in text and "quantity" in text, text
            page.screenshot(path=screenshot)
            browser.close()
        print(json.dumps({"held_output": text.splitlines()[:3]}))
        print("1 passed, 0 failed")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
