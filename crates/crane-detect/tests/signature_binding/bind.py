# Asks Python whether each call binds: a real `def` (or a method of a real class, for calls of a
# bound method) called with literal arguments, and inspect.Signature.bind on its signature.
import inspect
import json
import sys


def outcome(run):
    try:
        run()
    except TypeError as exc:
        return str(exc)
    return None


results = []
for case in json.load(sys.stdin):
    namespace = {}
    source = f"def f{case['def']}:\n    pass\n"
    if case["bound"]:
        source = "class C:\n    " + source.replace("\n    pass", "\n        pass")
    exec(source, namespace)
    function = namespace["C"].f if case["bound"] else namespace["f"]
    arguments = ["0"] * case["positional"] + [f"{k}=0" for k in case["keywords"]]
    call = ("C()." if case["bound"] else "") + "f(" + ", ".join(arguments) + ")"
    compiled = compile(call, "<call>", "eval")
    interpreter = outcome(lambda: eval(compiled, namespace))
    signature = inspect.signature(function)
    extra = [0] if case["bound"] else []
    bind = outcome(
        lambda: signature.bind(
            *(extra + [0] * case["positional"]), **{k: 0 for k in case["keywords"]}
        )
    )
    results.append({"interpreter": interpreter, "bind": bind})
json.dump(results, sys.stdout)
