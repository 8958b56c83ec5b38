"""Writes the signature snapshot crane-detect compiles in: the call signatures of the public
callables of the libraries the benchmark uses, read from this environment with the probe's own
code (the same trust decisions as in a live kernel: a wrapper, a C function, a partial, a class
whose __new__ or metaclass takes the arguments first get no signature).

    .venv/bin/python scripts/snapshot-signatures.py -o crates/crane-detect/data/signatures.txt.gz

Lines (gzip-compressed text; parameters in the syntax of crates/crane-runtime/src/signature.rs):

    p <python version>
    v <library> <version>
    s <callable> <binder> <bound> <name> <parameters>   signature number 0, 1, ... in order
    f <path>[,<path>...] <number>                       a function reachable at <path>
    t <path>[,<path>...]                                a class, and the names it has
    c <number>                                          its constructor
    m <attribute> <number>                              a method of its instances

A signature: the function's ``module.qualname`` (whose library's version must match too), i
(the interpreter) or b (inspect.Signature.bind), 1 when the first parameter is filled before the
call's arguments, the name Python's messages use, the parameters. Each is written once (an
inherited method is one function). A class's names are its public paths and its
``module.qualname`` (the type name of the runtime facts).
"""

import argparse
import gzip
import importlib
import inspect
import pathlib
import pkgutil
import re
import sys
import types
import warnings

ROOT = pathlib.Path(__file__).resolve().parent.parent
CRATE = ROOT / "crates" / "crane-probe"

# Library, import name, how deep its public submodules are walked.
LIBRARIES = (
    ("pandas", "pandas", 3),
    ("numpy", "numpy", 2),
    ("sklearn", "sklearn", 2),
    ("torch", "torch", 3),
    ("tensorflow", "tensorflow", 0),
    ("keras", "keras", 2),
    ("matplotlib", "matplotlib", 2),
    ("seaborn", "seaborn", 1),
    ("statsmodels", "statsmodels", 3),
)
SKIPPED_PARTS = {"tests", "testing", "conftest", "setup", "compat", "libs"}


def probe_source():
    """The probe's source as crane joins it: the files `PROBE_SOURCE` in
    crates/crane-probe/src/lib.rs names, in its order."""
    block = (CRATE / "src" / "lib.rs").read_text().split("pub const PROBE_SOURCE", 1)[1].split(");", 1)[0]
    return "".join((CRATE / "src" / path).read_text() for path in re.findall(r'include_str!\("([^"]+)"\)', block))


def load_probe():
    source = probe_source()
    module = types.ModuleType("_crane_probe")
    exec(compile(source, "<crane-probe>", "exec"), module.__dict__)
    return module


def public_modules(package, depth):
    names = [package.__name__]
    if depth == 0 or not hasattr(package, "__path__"):
        return names
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + ".", onerror=lambda _: None):
        parts = info.name.split(".")
        if len(parts) - 1 > depth or any(p.startswith("_") or p in SKIPPED_PARTS for p in parts[1:]):
            continue
        names.append(info.name)
    return names


def public_names(module):
    declared = module.__dict__.get("__all__")
    if isinstance(declared, (list, tuple)) and all(isinstance(n, str) for n in declared):
        return [n for n in declared if not n.startswith("_")]
    return [n for n in dir(module) if not n.startswith("_")]


def entry(fact):
    binder = "b" if fact["binder"] == "signature_bind" else "i"
    return f"{fact['callable']} {binder} {int(fact['bound'])} {fact['name']} {fact['parameters']}"


class Signatures:
    """The ``s`` lines, each distinct signature once, and the number of each."""

    def __init__(self):
        self.lines = []
        self.numbers = {}

    def number(self, fact):
        text = entry(fact)
        if text not in self.numbers:
            self.numbers[text] = len(self.lines)
            self.lines.append("s " + text)
        return self.numbers[text]


def method_facts(probe, cls):
    facts = {}
    for name in dir(cls):
        if name.startswith("_"):
            continue
        try:
            raw = inspect.getattr_static(cls, name)
        except AttributeError:
            continue
        try:
            if type(raw) is types.FunctionType:
                facts[name] = probe._function_signature(raw, True)
            elif type(raw) is staticmethod and type(raw.__func__) is types.FunctionType:
                facts[name] = probe._function_signature(raw.__func__, False)
            elif type(raw) is classmethod and type(raw.__func__) is types.FunctionType:
                facts[name] = probe._function_signature(raw.__func__, True)
        except Exception:
            continue
    return facts


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", required=True)
    options = parser.parse_args()
    warnings.simplefilter("ignore")
    probe = load_probe()
    versions = {}
    functions = {}  # id -> (paths, fact)
    classes = {}  # id -> (names, cls)
    for library, import_name, depth in LIBRARIES:
        try:
            package = importlib.import_module(import_name)
        except Exception as exc:
            print(f"{library}: not importable ({type(exc).__name__}), left out", file=sys.stderr)
            continue
        versions[library] = str(getattr(package, "__version__", "unknown"))
        for module_name in public_modules(package, depth):
            try:
                module = importlib.import_module(module_name)
            except BaseException:
                continue
            for name in public_names(module):
                try:
                    obj = getattr(module, name)
                except BaseException:
                    continue
                path = f"{module_name}.{name}"
                if isinstance(obj, type):
                    if probe._library_callable(obj) is None:
                        continue
                    names, _ = classes.setdefault(id(obj), (set(), obj))
                    names.add(path)
                    names.add(probe._qualified(obj))
                    continue
                if probe._library_callable(obj) is None:
                    continue
                try:
                    fact = probe._call_signature(obj)
                except Exception:
                    continue
                paths, _ = functions.setdefault(id(obj), (set(), fact))
                paths.add(path)
    header = [f"p {sys.version.split()[0]}"]
    header += [f"v {library} {version}" for library, version in sorted(versions.items())]
    signatures = Signatures()
    lines = []
    for paths, fact in sorted(functions.values(), key=lambda item: min(item[0])):
        lines.append(f"f {','.join(sorted(paths))} {signatures.number(fact)}")
    for names, cls in sorted(classes.values(), key=lambda item: min(item[0])):
        try:
            constructor = probe._call_signature(cls)
        except Exception:
            constructor = None
        methods = method_facts(probe, cls)
        if constructor is None and not methods:
            continue
        lines.append(f"t {','.join(sorted(names))}")
        if constructor is not None:
            lines.append(f"c {signatures.number(constructor)}")
        for name, fact in sorted(methods.items()):
            lines.append(f"m {name} {signatures.number(fact)}")
    data = ("\n".join(header + signatures.lines + lines) + "\n").encode()
    with open(options.output, "wb") as out:
        out.write(gzip.compress(data, compresslevel=9, mtime=0))
    print(
        f"{len(functions)} functions, {len(classes)} classes, {len(signatures.lines)} distinct "
        f"signatures; {len(data)} bytes, "
        f"{pathlib.Path(options.output).stat().st_size} compressed",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
