# The api_docs request and call signatures: the docstrings and signatures of the library
# callables a cell calls.


def api_docs(request):
    """Docstrings and signatures of the library functions, methods and classes a cell calls."""
    try:
        with _quiet():
            return _Reply(_dumps(_api_docs_request(_parse_request(request))))
    except BaseException as exc:
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        return _Reply(_json_dumps({"docs": [], "error": f"probe failed: {type(exc).__name__}"}))


def _api_docs_request(request):
    callees = request.get("callees")
    callees = [c for c in callees if type(c) is str] if type(callees) is list else []
    budget_chars = request.get("budget_chars", 4000)
    budget_chars = budget_chars if type(budget_chars) is int and budget_chars > 0 else 4000
    run = _Run(float(request.get("budget_ms", DEFAULT_BUDGET_MS)) if _type_in(request.get("budget_ms"), (int, float)) else DEFAULT_BUDGET_MS)
    namespace = _user_namespace()
    found = []
    for callee in list(dict.fromkeys(callees))[:MAX_EXPRESSIONS]:
        if run.expired():
            break
        fired = _guard.fired
        try:
            obj = _evaluate(_ast["parse"](callee.strip(), mode="eval").body, namespace)
            documented = _library_callable(obj)
            if documented is None:
                continue
            doc = _inspect["getdoc"](documented)
            if type(doc) is not str or not doc.strip():
                continue
            item = {"callee": callee, "name": _callable_name(documented), "signature": _library_signature(documented), "doc": doc}
        except _UserCode:
            _guard.rearm()
            continue
        except Exception:
            continue
        if _guard.fired != fired:
            _guard.rearm()
            continue
        found.append(item)
    share = budget_chars // max(len(found), 1)
    docs = []
    for item in found:
        text, truncated = _truncate_lines(item["doc"], share)
        item["doc"] = text
        if truncated:
            item["truncated"] = True
        if item["signature"] is None:
            del item["signature"]
        docs.append(item)
    return {"docs": docs}


def _library_callable(obj):
    """The library function, method or class behind ``obj``, or None for user code."""
    cls = type(obj)
    if _inherits(cls, type):
        return obj if _is_library_class(obj) else None
    if cls is types.MethodType:
        function = obj.__func__
        module = _static_get(function, "__module__")
        return obj if _module_is_library(module) else None
    if cls is types.FunctionType:
        return obj if _module_is_library(obj.__module__) else None
    if _is_library_class(cls) and (
        _kind_of(obj) in ("builtin", "function") or _lookup(cls, "__call__")[0] is not None
    ):
        return obj
    return None


# Call signatures: what a call of a library callable binds its arguments to.

MAX_SIGNATURE_PARAMETERS = 64
# Wrappers whose own code binds the arguments to the wrapped function's signature before doing
# anything else, so that a call the signature refuses raises its TypeError: scikit-learn's
# validate_params calls inspect.Signature.bind (or, with validation off, the function itself).
_BINDING_WRAPPERS = {
    (
        "sklearn.utils._param_validation",
        "validate_params.<locals>.decorator.<locals>.wrapper",
    ): "signature_bind",
}


class _NoSignature(Exception):
    """A library callable whose shown signature is not certainly what a call binds to."""


def _plain_parameters(function):
    """The parameters of a library ``def`` that is no wrapper, in signature syntax without
    default values: ``(self, x, y=, *, sample_weight=)``. Read from the code object and the
    defaults, which is how the interpreter binds a call: ``inspect.signature`` shows a default
    of ``inspect.Parameter.empty`` (torch.fx does this) as none."""
    namespace = _instance_dict(function)
    if "__wrapped__" in namespace:
        raise _NoSignature("a wrapper (__wrapped__): it may accept what its signature does not show")
    if "__signature__" in namespace:
        raise _NoSignature("sets __signature__: it may accept what its signature does not show")
    code = function.__code__
    names = code.co_varnames
    positional = code.co_argcount
    posonly = code.co_posonlyargcount
    keyword_only = code.co_kwonlyargcount
    defaults = function.__defaults__ or ()
    kwdefaults = function.__kwdefaults__ or {}
    var_positional = bool(code.co_flags & inspect.CO_VARARGS)
    var_keyword = bool(code.co_flags & inspect.CO_VARKEYWORDS)
    if positional + keyword_only + var_positional + var_keyword > MAX_SIGNATURE_PARAMETERS:
        raise _NoSignature(f"more than {MAX_SIGNATURE_PARAMETERS} parameters")
    items = []
    first_default = positional - len(defaults)
    for index in range(positional):
        items.append(names[index] + ("=" if index >= first_default else ""))
        if index == posonly - 1:
            items.append("/")
    cursor = positional + keyword_only
    if var_positional:
        items.append("*" + names[cursor])
        cursor += 1
    elif keyword_only:
        items.append("*")
    for index in range(positional, positional + keyword_only):
        items.append(names[index] + ("=" if names[index] in kwdefaults else ""))
    if var_keyword:
        items.append("**" + names[cursor])
    return "(" + ", ".join(items) + ")"


def _function_signature(function, bound):
    """``R.call_signature`` of a library ``def`` (or a wrapper known to bind its arguments)."""
    namespace = _instance_dict(function)
    binder = "interpreter"
    wrapped = namespace.get("__wrapped__")
    if wrapped is not None:
        code = function.__code__
        origin = (function.__globals__.get("__name__"), getattr(code, "co_qualname", code.co_name))
        binder = _BINDING_WRAPPERS.get(origin)
        if binder is None or type(wrapped) is not types.FunctionType or "__signature__" in namespace:
            raise _NoSignature("a wrapper (__wrapped__): it may accept what its signature does not show")
        function = wrapped
    parameters = _plain_parameters(function)
    module = function.__module__
    return {
        "callable": f"{module}.{function.__qualname__}" if type(module) is str else function.__qualname__,
        "name": function.__qualname__,
        "parameters": parameters,
        "bound": bound,
        "binder": binder,
    }


def _call_signature(obj):
    """What a call of the library callable ``obj`` binds its arguments to; ``_NoSignature``
    when that is not certain (a C function, a wrapper, a partial, a class whose ``__new__``
    or metaclass takes the arguments first)."""
    cls = type(obj)
    if _inherits(cls, type):
        owner, _ = _lookup(cls, "__call__")
        if owner is not type:
            raise _NoSignature("its metaclass defines __call__")
        owner, _ = _lookup(obj, "__new__")
        if owner is not object:
            raise _NoSignature("the class defines __new__")
        owner, init = _lookup(obj, "__init__")
        if type(init) is not types.FunctionType:
            raise _NoSignature("its __init__ is not a Python function")
        fact = _function_signature(init, True)
        fact["callable"] = _qualified(obj)
        return fact
    if cls is types.MethodType:
        function = obj.__func__
        if type(function) is not types.FunctionType:
            raise _NoSignature("not a Python function")
        return _function_signature(function, True)
    if cls is types.FunctionType:
        return _function_signature(obj, False)
    if _qualified(cls) == "functools.partial":
        raise _NoSignature("functools.partial: its bound arguments can be given again")
    raise _NoSignature("not a Python function: inspect.signature may not be what a call accepts")


# Data objects that can be called (a torch module, a Keras model) are judged by their facts.
_SIGNED_KINDS = frozenset(("function", "method", "builtin", "class", "other"))


def _note_call_signature(obj, entry):
    if entry.get("error") or entry.get("kind") not in _SIGNED_KINDS or _library_callable(obj) is None:
        return
    fired = _guard.fired
    try:
        entry["R"]["call_signature"] = _call_signature(obj)
    except _NoSignature as exc:
        entry["R"]["call_signature_unknown"] = str(exc)
    except _UserCode:
        entry["R"]["call_signature_unknown"] = "reading it would run user code"
    except Exception as exc:
        entry["R"]["call_signature_unknown"] = f"inspect.signature failed: {type(exc).__name__}"
    if _guard.fired != fired:
        _guard.rearm()
        entry["R"].pop("call_signature", None)
        entry["R"]["call_signature_unknown"] = "reading it would run user code"


def _callable_name(obj):
    if _is_a(obj, type):
        return _qualified(obj)
    if type(obj) is types.MethodType:
        obj = obj.__func__
    module = _static_get(obj, "__module__")
    qualname = _static_get(obj, "__qualname__") or _static_get(obj, "__name__")
    if type(qualname) is not str:
        return _qualified(type(obj))
    return f"{module}.{qualname}" if type(module) is str else qualname


def _library_signature(obj):
    """The signature without annotations (they cost tokens and say little to a reader)."""
    try:
        signature = inspect.signature(obj)
        signature = signature.replace(
            parameters=[p.replace(annotation=p.empty) for p in signature.parameters.values()],
            return_annotation=signature.empty,
        )
        text = str(signature)
    except Exception:
        return None
    return _truncate(text, 400)[0]


def _truncate_lines(text, limit):
    if len(text) <= limit:
        return text, False
    cut = text.rfind("\n", 0, limit)
    if cut < limit // 2:
        cut = limit
    return text[:cut].rstrip() + "\n\u2026", True
