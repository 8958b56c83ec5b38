"""An LLM configured from the notebook (`%crane llm MODEL`): its claim alone warns, and the cell
still runs. MODEL points at the local OpenAI-compatible test server the Rust test starts.

usage: llm_case.py CRANE PYTHON MODEL
"""

import sys

from harness import Server, main_with, stdout_of


def an_llm_claim_alone_warns_and_the_cell_runs(server, model):
    kernel = server.start_kernel("crane-python3")
    kernel.execute("x = 1")
    reply, outputs = kernel.execute(f"%crane llm {model}\n%crane dry-run off")
    assert reply["status"] == "ok" and "crane: llm" in stdout_of(outputs), outputs
    reply, outputs = kernel.execute("z = x + 1\nprint(z)")
    assert outputs[0][0] == "display_data", outputs
    warning = outputs[0][1]["data"]["text/plain"]
    assert "may raise ValueError" in warning and "LLM" in warning, warning
    assert reply["status"] == "ok" and stdout_of(outputs) == "2\n", (reply, outputs)
    _, outputs = kernel.execute("%crane explain")
    assert "warned about, then ran" in stdout_of(outputs), outputs


if __name__ == "__main__":
    crane, python, model = sys.argv[1:4]
    server = Server(crane, python)
    failed = 1
    try:
        failed = main_with({"an_llm_claim_alone_warns_and_the_cell_runs":
                            an_llm_claim_alone_warns_and_the_cell_runs}, server, model,
                           cleanup=server.shutdown_kernels)
    finally:
        server.stop()
    sys.exit(1 if failed else 0)
