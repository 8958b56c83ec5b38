#!/usr/bin/env python3
"""`crane run IN OUT` against `papermill IN OUT` on the runnable pairs in bench/notebooks: both
run each notebook top to bottom in a fresh kernel in the case's folder, and the written
notebooks are compared cell by cell (execution counts, output types, stream text, error
names, the MIME types of rich outputs; the time and thread id that absl/TensorFlow log lines
start with are left out). The fixed notebooks must come out the same; on the
buggy ones papermill runs into the crash while crane stops before it, so only the cells above
the target are compared, and the script reports whether crane held the target back.

Usage: .venv/bin/python scripts/compare-papermill.py [--crane target/debug/crane] [--from I] [--cases N]
(papermill is in python/requirements.txt; about 10 minutes for all pairs on 2 cores)
"""
import argparse, json, os, re, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = os.path.join(ROOT, ".venv", "bin", "python")
os.environ.setdefault("CRANE_PYTHON", PYTHON)


def code_cells(path):
    with open(path) as f:
        return [c for c in json.load(f)["cells"] if c["cell_type"] == "code"]


# absl/TensorFlow log lines start with the time and thread id: `I0000 00:00:1796161327.666028    3888 `.
ABSL_PREFIX = re.compile(r"^([IWEF])\d{4} [\d:.]+\s+\d+ ", re.MULTILINE)


def shape(cell):
    """What must agree: the count and, per output, its type and content that does not vary."""
    outputs = []
    for output in cell.get("outputs", []):
        kind = output["output_type"]
        if kind == "stream":
            text = output["text"] if isinstance(output["text"], str) else "".join(output["text"])
            outputs.append((kind, output["name"], ABSL_PREFIX.sub(r"\1 ", text)))
        elif kind == "error":
            outputs.append((kind, output["ename"]))
        else:
            outputs.append((kind, tuple(sorted(output.get("data", {})))))
    return cell.get("execution_count"), outputs


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--crane", default=os.path.join(ROOT, "target", "debug", "crane"))
    parser.add_argument("--from", dest="start", type=int, default=0, help="first case (0-based)")
    parser.add_argument("--cases", type=int, default=None, help="number of cases")
    args = parser.parse_args()
    with open(os.path.join(ROOT, "bench", "notebooks", "manifest.json")) as f:
        cases = json.load(f)
    end = None if args.cases is None else args.start + args.cases
    manifest = cases[args.start : end]
    same, differ, held, started = 0, [], 0, time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        for case in manifest:
            folder = os.path.join(ROOT, "bench", "notebooks", case["case"])
            for variant in ("fixed", "buggy"):
                source = os.path.join(folder, f"{variant}.ipynb")
                paper = os.path.join(tmp, f"{case['case']}-{variant}-papermill.ipynb")
                ours = os.path.join(tmp, f"{case['case']}-{variant}-crane.ipynb")
                subprocess.run([PYTHON, "-m", "papermill", source, paper, "--cwd", folder],
                               capture_output=True)
                run = subprocess.run([args.crane, "run", source, ours, "--order", "visual",
                                      "--quiet", "--format", "json"], capture_output=True, text=True)
                expected, got = code_cells(paper), code_cells(ours)
                if variant == "buggy":
                    target = case["target_cell"]
                    held += json.loads(run.stdout)["cells"][target]["fate"] == "held" if run.stdout else 0
                    expected, got = expected[:target], got[:target]
                mismatches = [i for i, (a, b) in enumerate(zip(expected, got)) if shape(a) != shape(b)]
                if len(expected) != len(got):
                    mismatches.append("cell count")
                if mismatches:
                    differ.append(f"{case['case']}/{variant}: cells {mismatches}")
                else:
                    same += 1
                print(f"{case['case']}/{variant}: {'differs' if mismatches else 'same'}", flush=True)
    print(f"{same} of {2 * len(manifest)} notebooks give papermill's outputs "
          f"(buggy ones: the cells above the target); crane held {held} of {len(manifest)} "
          f"buggy targets back; {time.monotonic() - started:.0f} s")
    for line in differ:
        print("differs:", line)
    return 0 if not differ else 1


if __name__ == "__main__":
    sys.exit(main())
