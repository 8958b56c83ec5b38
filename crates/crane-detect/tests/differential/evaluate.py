"""Runs generated programs in CPython for crane's differential tests.

Reads a JSON list of programs from stdin; each program is {"setup": str, "statements": [str]}.
The setup runs first (imports, arrays); then the statements run one by one in one namespace,
stopping at the first exception. Writes, per program, the names the statements bound with their
values (repr for plain values, the shape for numpy arrays and torch tensors) and the failing
statement with its exception class.
"""
import json
import warnings
import resource
import signal
import sys

# A generated `'ab' * 2**40` must fail with MemoryError, not exhaust the machine.
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


class Timeout(Exception):
    pass


def on_alarm(signum, frame):
    raise Timeout()


signal.signal(signal.SIGALRM, on_alarm)
warnings.simplefilter("ignore")

PLAIN = (type(None), bool, int, float, str, list, tuple)


def plain(value, depth=0):
    if depth > 20 or not isinstance(value, PLAIN):
        return False
    if type(value) in (list, tuple):
        return all(plain(item, depth + 1) for item in value)
    return type(value) in PLAIN


def describe(value):
    shape = getattr(value, "shape", None)
    module = type(value).__module__
    if module.startswith(("numpy", "torch")) and shape is not None:
        try:
            return {"shape": [int(d) for d in shape]}
        except TypeError:
            return None
    # A tuple subclass (torch.Size) behaves as the tuple of its items, which is what crane holds.
    if isinstance(value, tuple) and type(value) is not tuple:
        value = tuple(value)
    if plain(value):
        try:
            return {"repr": repr(value)}
        except Exception:
            return None
    return None


def run(program):
    namespace = {}
    exec(program.get("setup", ""), namespace)
    before = set(namespace)
    result = {"values": {}, "error": None}
    for index, statement in enumerate(program["statements"]):
        signal.setitimer(signal.ITIMER_REAL, 1.0)
        try:
            exec(statement, namespace)
        except Timeout:
            result["error"] = [index, "Timeout"]
            break
        except BaseException as error:  # noqa: BLE001 - every crash is a verdict here
            result["error"] = [index, type(error).__name__]
            break
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    for name, value in namespace.items():
        if name in before and name not in program.get("rebinds", []):
            continue
        if name.startswith("__"):
            continue
        described = describe(value)
        result["values"][name] = described or {"type": type(value).__qualname__}
    return result


def main():
    programs = json.load(sys.stdin)
    results = []
    for program in programs:
        try:
            results.append(run(program))
        except BaseException as error:  # noqa: BLE001
            results.append({"values": {}, "error": [-1, type(error).__name__]})
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
