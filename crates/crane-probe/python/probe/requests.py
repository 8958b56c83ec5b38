# The requests crane sends (settle, summarize): parsing, the answer's JSON, library versions and
# registries, and shrinking an answer to its size budget.


class _quiet:
    """Warnings ignored and user code refused while the probe works. Output is left alone:
    replacing ``sys.stdout`` would swallow what the user's other threads print meanwhile."""

    __slots__ = ("warnings",)

    def __enter__(self):
        self.warnings = _IgnoredWarnings()
        self.warnings.__enter__()
        try:
            _guard.__enter__()
        except BaseException:
            self.warnings.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        try:
            _guard.__exit__(*exc)
        finally:
            self.warnings.__exit__(*exc)
        return False


def _dumps(document):
    try:
        return _dumps_strict(document)
    except ValueError:
        return _dumps_strict(_finite(document))


def _dumps_strict(document):
    return _json_dumps(
        document,
        ensure_ascii=False,
        allow_nan=False,
        default=lambda o: "<" + _qualified(type(o)) + ">",
    )


def _finite(value):
    if type(value) is float:
        return _number(value)
    if type(value) is dict:
        return {k: _finite(v) for k, v in value.items()}
    if _type_in(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def settle(request):
    """Once crane's start-up work in the kernel is done: the channel's handler follows this call
    with one full collection (``_collect``). That work (its modules injected) allocates enough
    to advance the collector's schedule, which would move a full collection into the user's
    first cell; after one now the schedule starts afresh, as in a kernel without crane.
    Nothing of the user's exists yet but what a startup file made."""
    return _Reply(_json_dumps({"settled": True}))


def summarize(request):
    """Summaries of the objects denoted by ``request["expressions"]`` as one JSON document."""
    try:
        with _quiet():
            document = _summarize_request(_parse_request(request))
            return _Reply(_dumps(document))
    except BaseException as exc:
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        return _Reply(_json_dumps({"variables": {}, "missing": [], "error": f"probe failed: {type(exc).__name__}"}))


def _summarize_request(request):
    budget_ms = request.get("budget_ms", DEFAULT_BUDGET_MS)
    max_bytes = request.get("max_bytes", DEFAULT_MAX_BYTES)
    budget_ms = float(budget_ms) if _type_in(budget_ms, (int, float)) else DEFAULT_BUDGET_MS
    max_bytes = int(max_bytes) if type(max_bytes) is int else DEFAULT_MAX_BYTES
    work = request.get("work", DEFAULT_WORK)
    work = work if type(work) is int and work >= 0 else DEFAULT_WORK
    expressions = request.get("expressions")
    expressions = [e for e in expressions if type(e) is str] if type(expressions) is list else []
    run = _Run(budget_ms, work)
    modules_before = len(sys.modules)
    namespace = _user_namespace()
    variables = {}
    missing = []
    objects = {}
    parsed = {}
    evaluated = {}
    for expression in list(dict.fromkeys(expressions))[:MAX_EXPRESSIONS]:
        node = _parse_expression(expression)
        if node is None:
            continue
        parsed[expression] = node
        if run.structure_expired():
            variables[expression] = {"type": "", "kind": "other", "error": "time budget exhausted", "S": {}, "R": {}, "V": {}}
            continue
        try:
            obj = _evaluate(node, namespace, evaluated)
        except _Missing as exc:
            if exc.name not in missing:
                missing.append(exc.name)
            continue
        except _Absent as exc:
            variables[expression] = exc.entry
            continue
        except _Refused as exc:
            entry = _entry(type(exc.owner), "other") if exc.owner is not None else {"type": "", "kind": "other", "S": {}, "R": {}, "V": {}}
            if exc.owner is not None:
                entry["type"] = ""
                entry["R"]["owner_type"] = _qualified(type(exc.owner))
            entry["error"] = exc.reason
            variables[expression] = entry
            continue
        except _Raised as exc:
            message = _truncate(str(exc.exc), MAX_STR)[0] if _is_library_class(type(exc.exc)) else ""
            variables[expression] = {
                "type": "",
                "kind": "other",
                "error": f"raises {type(exc.exc).__name__}: {message}",
                "S": {},
                "R": {"raises": type(exc.exc).__name__, "owner_type": _qualified(type(exc.owner))},
                "V": {},
            }
            continue
        except _UserCode:
            _guard.rearm()
            variables[expression] = {"type": "", "kind": "other", "error": "not evaluated: would run user code", "S": {}, "R": {}, "V": {}}
            continue
        except Exception as exc:
            variables[expression] = {"type": "", "kind": "other", "error": f"evaluation failed: {type(exc).__name__}", "S": {}, "R": {}, "V": {}}
            continue
        objects[expression] = obj
        variables[expression] = _summarize_object(obj, run)
        _note_call_signature(obj, variables[expression])
    _note_attributes(parsed, variables)
    # Taken from the run: each computation's closure holds the run, and a run holding them
    # would make a cycle that keeps the user's objects referenced until the collector runs
    # (an array would look shared to `crane_alone` meanwhile).
    deferred, run.deferred = run.deferred, []
    for entry, compute, cost, plain in deferred:
        reason = run.out_of_budget(cost)
        if reason is not None:
            entry["V"]["skipped"] = reason
            continue
        fired = _guard.fired
        try:
            with _unguarded_if(plain):
                compute()
        except _UserCode:
            pass
        except Exception as exc:
            entry["V"]["error"] = type(exc).__name__
        if _guard.fired != fired:
            _guard.rearm()
            entry["V"] = {"skipped": "would run user code"}
    document = {"variables": variables, "missing": missing, "libraries": _library_versions()}
    registries = _registries()
    if registries:
        document["registries"] = registries
    elapsed = (_perf() - run.start) * 1000.0
    document["cost"] = {"ms": round(elapsed, 2), "bytes": 0, "sampled": run.sampled}
    if len(sys.modules) != modules_before:
        document["cost"]["modules_added"] = len(sys.modules) - modules_before
    return _bounded(document, max_bytes)


def _source(node):
    """The structure of an expression, the same for two that read the same; None when it is
    too deeply nested to print. (``ast.dump``'s copy: ``ast.unparse`` is a class of Python
    code that finds the kernel's builtins.)"""
    try:
        return _ast["dump"](node)
    except RecursionError:
        return None


_VERSIONED_LIBRARIES = (
    "numpy", "pandas", "sklearn", "scipy", "torch", "torchvision", "tensorflow", "keras",
    "matplotlib", "seaborn", "statsmodels", "lightgbm", "xgboost", "polars",
)


def _library_versions():
    """``__version__`` of the libraries the user imported (never importing one)."""
    versions = {}
    for name in _VERSIONED_LIBRARIES:
        module = sys.modules.get(name)
        if module is None or not _is_a(module, types.ModuleType):
            continue
        version = _module_dict(module).get("__version__")
        if _is_a(version, str):
            # torch's is a str subclass; str.__str__ makes a plain copy.
            versions[name] = _truncate(str.__str__(version), 40)[0]
    return versions


# Registries a library keeps in a module dict and code may extend (`register_scale`).
_REGISTRIES = (("matplotlib.scale", "_scale_mapping"),)


def _registries():
    """The names in each registry of a module the user imported (never importing one)."""
    found = {}
    for module_name, attribute in _REGISTRIES:
        module = sys.modules.get(module_name)
        if module is None or not _is_a(module, types.ModuleType):
            continue
        mapping = _module_dict(module).get(attribute)
        if type(mapping) is not dict or len(mapping) > MAX_NAMES:
            continue
        names = [str.__str__(name) for name in mapping if _is_a(name, str)]
        if len(names) == len(mapping):
            found[module_name] = sorted(names)
    return found


def _note_attributes(parsed, variables):
    """``R.attributes`` of each object whose attributes the requested expressions use."""
    by_source = {_source(node): expression for expression, node in parsed.items()}
    for expression, node in parsed.items():
        if not isinstance(node, ast.Attribute):
            continue
        owner = by_source.get(_source(node.value))
        if owner not in variables or expression not in variables:
            continue
        owner_entry = variables[owner]
        entry = variables[expression]
        if entry.get("kind") == "absent":
            presence = "absent"
        elif entry.get("error") and entry.get("type") == "":
            continue
        elif entry.get("kind") in ("method", "builtin", "function"):
            presence = "method"
        else:
            presence = "attribute"
        owner_entry.setdefault("R", {}).setdefault("attributes", {})[node.attr] = presence


def _shrink(entry, level):
    if level == 1:
        columns = entry.get("V", {}).get("columns")
        if type(columns) is dict:
            for facts in columns.values():
                facts.pop("examples", None)
        entry.get("V", {}).pop("examples", None)
        entry.get("R", {}).pop("repr", None)
        entry.get("R", {}).pop("fields", None)
    elif level == 2:
        columns = entry.get("R", {}).get("columns")
        if type(columns) is list and len(columns) > 10:
            entry["R"]["columns_truncated"] = entry["R"].get("columns_truncated", 0) + len(columns) - 10
            del columns[10:]
            kept = {_column_key(c["name"]) for c in columns}
            stats = entry.get("V", {}).get("columns")
            if type(stats) is dict:
                for key in [k for k in stats if k not in kept]:
                    del stats[key]
    elif level == 3:
        entry["V"] = {k: v for k, v in entry.get("V", {}).items() if _type_in(v, (bool, int, float))}
    elif level == 4:
        if "call_signature" in entry.get("R", {}):
            del entry["R"]["call_signature"]
            entry["R"]["call_signature_unknown"] = "dropped: size budget"
        for section in ("S", "R"):
            entry[section] = {
                k: v for k, v in entry.get(section, {}).items() if _type_in(v, (bool, int, float, str))
            }
    else:
        entry["S"], entry["R"], entry["V"] = {}, {}, {}
        entry["error"] = "dropped: size budget"


def _bounded(document, max_bytes):
    text = _dumps(document)
    level = 1
    while len(text.encode("utf-8")) > max_bytes and level <= 5:
        sizes = sorted(
            document["variables"].items(), key=lambda item: -len(_dumps(item[1]))
        )
        for _, entry in sizes:
            _shrink(entry, level)
            text = _dumps(document)
            if len(text.encode("utf-8")) <= max_bytes:
                break
        level += 1
    if len(text.encode("utf-8")) > max_bytes:
        document["variables"] = {}
        document["error"] = "size budget exceeded"
        text = _dumps(document)
    # `text` is the document as it stands.
    document["cost"]["bytes"] = len(text.encode("utf-8"))
    return document
