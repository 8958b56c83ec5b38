
# The columns a pandas frame may have, read from the code that made it: a missing column looked
# up by a name the code gives is missing from the full run's frame too, when every column that
# frame could hold is a name the code writes out (the keys of the records a loop appended, a
# frame's ``columns=``, the keys of a Keras history the abridged fit padded) and what was done
# to it after keeps or drops columns only. Which iterations ran changes the frame's rows and
# values, never those names. Concatenated after ``crane_contracts.py``; ``abridged_verdict``
# asks ``_column_absent`` about a ``KeyError`` the failing statement's walk left uncertain.
#
# Everything is allowed by name: a use of the frame, of the list of records or of a record that
# is not one of the forms below makes the answer ``None`` (nothing decided). The frame's class
# and its lookup are read from the traceback (the pandas ``__getitem__`` that raised, and what
# it was asked), never by running code of the user's.

# Methods of a frame whose result holds some of its columns and no other.
_COLUMNS_KEPT = frozenset(
    (
        "copy", "sort_values", "sort_index", "head", "tail", "round", "abs", "fillna", "dropna",
        "query", "astype", "clip", "nlargest", "nsmallest", "sample", "drop_duplicates",
        "set_index", "drop", "select_dtypes", "where", "mask", "replace", "rank", "cumsum",
        "cumprod", "cummax", "cummin", "diff", "shift", "pct_change", "interpolate", "ffill",
        "bfill", "isna", "notna", "isnull", "notnull", "truncate",
    )
)
# What a frame's ``groupby`` gives with these: its columns but the keys, or fewer.
_GROUP_REDUCTIONS = frozenset(("sum", "mean", "median", "min", "max", "first", "last", "std", "var", "count", "size", "nunique", "prod"))
# Methods that may take ``inplace=True`` and then keep or drop columns only.
_INPLACE_KEPT = frozenset(
    ("sort_values", "sort_index", "fillna", "dropna", "set_index", "drop", "query", "replace", "clip", "where", "mask", "interpolate", "ffill", "bfill")
)
# Calls that read what they are given and change none of it.
_READING_BUILTINS = frozenset(("print", "len", "display", "repr", "str", "list", "sorted", "type", "isinstance", "id", "bool"))


def _column_absent(exc, innermost):
    """``(name, columns, sources)`` where ``exc`` is the ``KeyError`` of a pandas frame asked for a
    column by a name the failing statement writes out (``table["rmse"]``,
    ``hist.loc[best, "val_accuracy"]``), the innermost notebook frame's walk found nothing
    changed but what that statement reads, and every column the frame held by ``name`` could
    have is one of ``columns`` (``_Columns``), which lack that name; ``sources`` says in words
    where they come from. ``None`` otherwise."""
    if type(exc) is not KeyError or len(exc.args) != 1 or type(exc.args[0]) is not str:
        return None
    if not _only_direct(innermost):
        return None
    frame = _frame_asked(exc, exc.args[0])
    if frame is None:
        return None
    names = {
        node.id
        for statement in innermost.body
        for node in ast.walk(statement)
        if isinstance(node, ast.Name) and getattr(node, "lineno", None) == innermost.line
        and innermost.scope.get(node.id) is frame
    }
    if len(names) != 1:
        return None
    (name,) = names
    found = _under_guard(_Columns, innermost)
    columns = _under_guard(found.of_name, name) if found is not None else None
    if columns is None or exc.args[0] in columns:
        return None
    return name, columns, sorted(found.sources)


def _frame_asked(exc, key):
    """The frame, exactly pandas' ``DataFrame``, whose lookup the innermost notebook frame's
    statement made and that raised: the next frame on the traceback is pandas' ``__getitem__``
    of that frame asked ``key``, or of its ``.loc`` or ``.at`` asked ``(row, key)``, with a row
    index that is not a ``MultiIndex`` (so the pair is a row and a column)."""
    pandas = sys.modules.get("pandas")
    if pandas is None:
        return None
    frames = list(_frames_of(exc))
    last = max(
        (i for i, tb in enumerate(frames) if tb.tb_frame.f_code.co_filename == FILENAME or _is_cell_file(tb.tb_frame.f_code.co_filename)),
        default=None,
    )
    if last is None or last + 1 >= len(frames):
        return None
    called = frames[last + 1].tb_frame
    module = called.f_globals.get("__name__")
    if type(module) is not str or not module.startswith("pandas.") or called.f_code.co_name != "__getitem__":
        return None
    receiver, asked = called.f_locals.get("self"), called.f_locals.get("key")
    frame_class = _module_dict(pandas).get("DataFrame")
    if type(receiver) is frame_class:
        return receiver if type(asked) is str and asked == key else None
    if _qualname_of(type(receiver)) not in ("_LocIndexer", "_AtIndexer"):
        return None
    frame = _under_guard(getattr, receiver, "obj")
    if type(frame) is not frame_class or type(asked) is not tuple or len(asked) != 2:
        return None
    if type(asked[1]) is not str or asked[1] != key:
        return None
    index = _under_guard(getattr, frame, "index")
    multi = _module_dict(pandas).get("MultiIndex")
    return frame if index is not None and multi is not None and not isinstance(index, multi) else None


class _Columns:
    """The column names a frame may have, from the innermost notebook frame's body (its walk,
    ``innermost``): for a name, the union over every statement of the body that binds it or
    adds a column to it, where every use of it is one the analysis allows."""

    def __init__(self, innermost):
        self.body = innermost.body
        self.scope = innermost.scope
        self.line = innermost.line
        self.calls = innermost.calls
        self.parents = {}
        for statement in self.body:
            for node in ast.walk(statement):
                for child in ast.iter_child_nodes(node):
                    self.parents[child] = node
        self.pending = set()
        # Where the columns found come from, in words (``_column_absent``'s grounds).
        self.sources = set()
        # The global names code of the notebook's defined outside this body reads or binds (a
        # function adding a column to a global frame it is not given), and whether the body
        # reaches names by strings (``exec``, ``globals()``): what the analysis cannot see.
        self.elsewhere = _notebook_globals(innermost.scope)
        self.dynamic = any(
            isinstance(node, ast.Name) and node.id in _DYNAMIC_NAMES
            for statement in self.body for node in ast.walk(statement)
        )

    def _hidden(self, name):
        """Whether code the analysis does not see may use ``name``."""
        return self.dynamic or name in self.elsewhere

    def _uses(self, name):
        return [node for statement in self.body for node in ast.walk(statement) if isinstance(node, ast.Name) and node.id == name]

    def _bound_before(self, name):
        """Whether a statement at the body's top level, before the failing line, binds
        ``name`` (the value before the cell, which the analysis does not see, is then never
        what the failing statement reads)."""
        return any(
            isinstance(statement, ast.Assign) and statement.end_lineno < self.line
            and any(isinstance(target, ast.Name) and target.id == name for target in statement.targets)
            for statement in self.body
        )

    def _notebook_callee(self, call):
        """Whether ``call`` may run code of the notebook's: a callee not found (but Python's
        own reading builtins), or a function or class the notebook defined."""
        func = call.func
        if isinstance(func, ast.Name) and func.id in _READING_BUILTINS and self.scope.get(func.id) is _UNKNOWN:
            return False
        if isinstance(func, ast.Attribute) and type(_attribute_path(func.value, self.scope)) in (list, dict, set):
            # A method of Python's own containers (``parts.append(frame)``).
            return False
        callee = _attribute_path(func, self.scope) if isinstance(func, (ast.Name, ast.Attribute)) else None
        if callee is None:
            return True
        if isinstance(callee, (types.BuiltinFunctionType, types.BuiltinMethodType)):
            return False
        if isinstance(callee, (types.FunctionType, type)):
            module = callee.__dict__.get("__module__") if isinstance(callee, type) else callee.__module__
        else:
            module = _module_of(type(callee))
        return type(module) is not str or module == "__main__" or _names_notebook(callee)

    def of_name(self, name, before=None):
        """The columns the frame ``name`` may hold where the failing statement reads it, or
        (``before``: the line of an ``append`` of it) where a statement before that line at any
        depth bound it."""
        if name in self.pending:
            return frozenset()
        if self._hidden(name) or not (self._bound_before(name) if before is None else self._bound_at_any_depth(name, before)):
            return None
        self.pending.add(name)
        try:
            columns = set()
            for use in self._uses(name):
                found = self._frame_use(use, name)
                if found is None:
                    return None
                columns |= found
            return frozenset(columns)
        finally:
            self.pending.discard(name)

    def _frame_use(self, node, name):
        """The columns a use of the frame's ``name`` may add, ``set()`` for a use that adds
        none, ``None`` for one the analysis does not allow."""
        parent = self.parents.get(node)
        if isinstance(node.ctx, ast.Store):
            if isinstance(parent, ast.Assign) and parent.targets == [node]:
                return self._of(parent.value)
            return None
        if isinstance(node.ctx, ast.Del):
            return set()
        if isinstance(parent, ast.Subscript) and parent.value is node:
            if isinstance(parent.ctx, ast.Store):
                key = _written(parent.slice)
                self.sources.add(f"the columns stored into {name} by name")
                return {key} if type(key) is str else None
            return set()
        if isinstance(parent, ast.Attribute) and parent.value is node:
            return self._attribute_use(parent)
        if isinstance(parent, ast.Call) and node in parent.args or isinstance(parent, ast.keyword):
            call = parent if isinstance(parent, ast.Call) else self.parents.get(parent)
            return None if call is None or self._notebook_callee(call) else set()
        if isinstance(parent, (ast.List, ast.Tuple)) and isinstance(node.ctx, ast.Load):
            # Among the frames a call is given (``pd.concat([a, b])``), and only there.
            call = self.parents.get(parent)
            if isinstance(call, ast.Call) and parent in call.args and not self._notebook_callee(call):
                return set()
            return None
        if isinstance(parent, (ast.Compare, ast.BoolOp, ast.UnaryOp, ast.FormattedValue, ast.comprehension, ast.Expr)):
            return set()
        return None

    def _attribute_use(self, attribute):
        outer = self.parents.get(attribute)
        if isinstance(attribute.ctx, ast.Store):
            return set() if attribute.attr == "index" else None
        if attribute.attr in ("loc", "iloc", "at", "iat") and isinstance(outer, ast.Subscript):
            if not isinstance(outer.ctx, ast.Store):
                return set()
            if attribute.attr in ("iloc", "iat"):
                return set()
            if isinstance(outer.slice, ast.Tuple) and len(outer.slice.elts) == 2:
                self.sources.add("the columns stored into it by name")
                key = _written(outer.slice.elts[1])
                return {key} if type(key) is str else None
            return set()
        if isinstance(outer, ast.Call) and outer.func is attribute:
            keywords = {keyword.arg: keyword.value for keyword in outer.keywords}
            inplace = keywords.get("inplace")
            if inplace is not None and not (isinstance(inplace, ast.Constant) and inplace.value is False):
                if attribute.attr == "reset_index" and _true(keywords.get("drop")):
                    return set()
                return set() if attribute.attr in _INPLACE_KEPT else None
            if attribute.attr == "insert":
                self.sources.add("the columns inserted by name")
                key = _written(outer.args[1]) if len(outer.args) > 1 else None
                return {key} if type(key) is str else None
            # Methods that may name columns in place; any other keeps them (``pop`` and
            # ``update`` among them) or returns a new frame.
            return None if attribute.attr in ("eval", "__setitem__", "setdefault", "rename_axis", "set_axis") else set()
        if isinstance(attribute.ctx, ast.Load):
            return set()
        return None

    def _of(self, node):
        """The columns the frame ``node`` evaluates to may have, or ``None``."""
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, (ast.Name, ast.Attribute)):
                pandas = sys.modules.get("pandas")
                callee = _attribute_path(func, self.scope)
                if pandas is not None and callee is not None:
                    if callee is _module_dict(pandas).get("DataFrame"):
                        return self._made(node)
                    if callee is _module_dict(pandas).get("concat"):
                        return self._concatenated(node)
            if isinstance(func, ast.Attribute):
                if func.attr in _COLUMNS_KEPT:
                    return self._receiver(func.value)
                if func.attr == "reset_index" and any(k.arg == "drop" and _true(k.value) for k in node.keywords):
                    return self._receiver(func.value)
                if func.attr == "assign" and not node.args and all(k.arg for k in node.keywords):
                    inner = self._receiver(func.value)
                    self.sources.add("the names assign gives")
                    return None if inner is None else inner | {k.arg for k in node.keywords}
                if func.attr == "rename":
                    return self._renamed(node)
                if func.attr in ("agg", "aggregate") and _grouped(func.value):
                    self.sources.add("the names a grouped aggregation writes out")
                    return _aggregated(node)
                if func.attr in _GROUP_REDUCTIONS and isinstance(func.value, ast.Call):
                    group = func.value
                    if (
                        isinstance(group.func, ast.Attribute) and group.func.attr == "groupby"
                        and not any(k.arg == "as_index" for k in group.keywords)
                    ):
                        return self._receiver(group.func.value)
            return None
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            value = node.value
            if isinstance(value, ast.Attribute) and value.attr in ("loc", "iloc"):
                value = value.value
            if isinstance(node.slice, (ast.List, ast.Tuple)) and node.value is value:
                keys = [_written(element) for element in node.slice.elts]
                if all(type(key) is str for key in keys):
                    return set(keys)
            return self._receiver(value)
        # A name alone would be the same object under a second name, what is done through
        # either not followed.
        return None

    def _receiver(self, node):
        """The columns of the frame ``node`` a method or a subscript is applied to."""
        return self.of_name(node.id) if isinstance(node, ast.Name) else self._of(node)

    def _made(self, call):
        """``pd.DataFrame(...)``: the names in ``columns=``, or the keys of the records it is
        given (a dictionary display, a list of them, a name of a list of them, a padded Keras
        history)."""
        keywords = {keyword.arg: keyword.value for keyword in call.keywords}
        if None in keywords:
            return None
        if "columns" in keywords:
            columns = keywords["columns"]
            if isinstance(columns, (ast.List, ast.Tuple)):
                keys = [_written(element) for element in columns.elts]
                if all(type(key) is str for key in keys):
                    self.sources.add("the names its columns= gives")
                    return set(keys)
            return None
        data = call.args[0] if call.args else keywords.get("data")
        if data is None or len(call.args) > 1:
            return None
        if isinstance(data, (ast.Dict, ast.List)):
            self.sources.add("the keys of the dictionaries written out that made it")
        if isinstance(data, ast.Dict):
            return _display_keys(data)
        if isinstance(data, ast.List):
            found = set()
            for element in data.elts:
                keys = _display_keys(element) if isinstance(element, ast.Dict) else None
                if keys is None:
                    return None
                found |= keys
            return found
        if isinstance(data, ast.Name):
            return self._records(data.id)
        if isinstance(data, ast.Attribute) and isinstance(data.value, ast.Name) and data.attr == "history":
            return self._history(data.value.id)
        return None

    def _concatenated(self, call):
        """``pd.concat`` of frames stacked as rows: the union of their columns."""
        if len(call.args) != 1 or any(keyword.arg not in ("ignore_index", "sort", "join", "copy") for keyword in call.keywords):
            return None
        if isinstance(call.args[0], ast.Name):
            return self._items(call.args[0].id, self._frame_item)
        if not isinstance(call.args[0], (ast.List, ast.Tuple)):
            return None
        found = set()
        for element in call.args[0].elts:
            columns = self._receiver(element)
            if columns is None:
                return None
            found |= columns
        return found

    def _renamed(self, call):
        keywords = {keyword.arg: keyword.value for keyword in call.keywords}
        mapping = keywords.get("columns")
        if call.args or set(keywords) - {"columns"} or not isinstance(mapping, ast.Dict):
            return None
        pairs = [(_written(key), _written(value)) for key, value in zip(mapping.keys, mapping.values)]
        if not all(type(key) is str and type(value) is str for key, value in pairs):
            return None
        inner = self._receiver(call.func.value)
        if inner is None or (isinstance(call.func.value, ast.Name) and call.func.value.id in self.pending):
            return None
        renamed = dict(pairs)
        return {renamed.get(column, column) for column in inner}

    def _history(self, name):
        """The keys of the history a Keras ``fit`` the abridgement shortened and padded gave
        ``name``, bound by that one statement: its metrics' names, which the fit's settings
        decide whichever epochs ran."""
        bindings = [
            statement for statement in self.body for statement in ast.walk(statement)
            if isinstance(statement, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.With))
            and any(isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store) for node in ast.walk(statement))
        ]
        if len(bindings) != 1 or not isinstance(bindings[0], ast.Assign) or not self.calls.get(bindings[0].lineno, {}).get("padded"):
            return None
        history = _attribute_path(ast.Attribute(ast.Name(name, ast.Load()), "history", ast.Load()), self.scope)
        if type(history) is not dict or not all(type(key) is str for key in history):
            return None
        self.sources.add(
            f"the metrics of the Keras history {name} holds, named by the fit's settings"
        )
        return set(history)

    def _records(self, name):
        """The keys of the records a list ``name`` holds (``_items`` of ``_record``s)."""
        self.sources.add(f"the keys written out in the records appended to {name}")
        return self._items(name, self._record)

    def _frame_item(self, node):
        """The columns of a frame appended to a list: a name of one (bound before the
        ``append``) or an expression that makes one."""
        return self.of_name(node.id, node.lineno) if isinstance(node, ast.Name) else self._of(node)

    def _items(self, name, item):
        """The union of ``item`` over what a list ``name`` holds: bound to ``[]`` (or a list of
        displays ``item`` reads) before the failing line, grown only by ``append``, otherwise
        only read or given to a library's call."""
        if self._hidden(name) or not self._bound_before(name):
            return None
        found = set()
        for use in self._uses(name):
            parent = self.parents.get(use)
            if isinstance(use.ctx, ast.Store):
                if not (isinstance(parent, ast.Assign) and parent.targets == [use] and isinstance(parent.value, ast.List)):
                    return None
                for element in parent.value.elts:
                    keys = item(element)
                    if keys is None:
                        return None
                    found |= keys
                continue
            if isinstance(parent, ast.Attribute) and parent.value is use:
                call = self.parents.get(parent)
                if parent.attr == "append" and isinstance(call, ast.Call) and call.func is parent and len(call.args) == 1:
                    keys = item(call.args[0])
                    if keys is None:
                        return None
                    found |= keys
                    continue
                if isinstance(call, ast.Call) and call.func is parent:
                    return None
                continue
            if isinstance(parent, ast.Subscript) and parent.value is use and isinstance(parent.ctx, ast.Load):
                continue
            if isinstance(parent, ast.Call) and use in parent.args:
                if self._notebook_callee(parent):
                    return None
                continue
            if isinstance(parent, (ast.Compare, ast.BoolOp, ast.UnaryOp, ast.FormattedValue, ast.comprehension)):
                continue
            return None
        return found

    def _record(self, node):
        if isinstance(node, ast.Dict):
            return _display_keys(node)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
            if node.args or any(keyword.arg is None for keyword in node.keywords) or _attribute_path(node.func, self.scope) not in (None, dict):
                return None
            return {keyword.arg for keyword in node.keywords}
        if not isinstance(node, ast.Name) or self._hidden(node.id) or not self._bound_at_any_depth(node.id, node.lineno):
            return None
        found = set()
        for use in self._uses(node.id):
            parent = self.parents.get(use)
            if isinstance(use.ctx, ast.Store):
                if not (isinstance(parent, ast.Assign) and parent.targets == [use] and isinstance(parent.value, ast.Dict)):
                    return None
                keys = _display_keys(parent.value)
                if keys is None:
                    return None
                found |= keys
            elif isinstance(parent, ast.Subscript) and parent.value is use:
                if isinstance(parent.ctx, ast.Store):
                    key = _written(parent.slice)
                    if type(key) is not str:
                        return None
                    found.add(key)
            elif isinstance(parent, ast.Call) and use in parent.args and isinstance(parent.func, ast.Attribute) and parent.func.attr == "append":
                continue
            elif isinstance(parent, ast.Attribute) and parent.value is use:
                if parent.attr not in ("get", "keys", "values", "items"):
                    return None
            elif not isinstance(parent, (ast.Compare, ast.FormattedValue, ast.Call)):
                return None
            elif isinstance(parent, ast.Call) and self._notebook_callee(parent):
                return None
        return found

    def _bound_at_any_depth(self, name, before):
        """Whether a statement at any depth, ending before line ``before``, binds ``name``."""
        return any(
            isinstance(node, ast.Assign) and node.end_lineno < before
            and any(isinstance(target, ast.Name) and target.id == name for target in node.targets)
            for statement in self.body for node in ast.walk(statement)
        )


def _grouped(node):
    """Whether ``node`` is a ``groupby`` call that leaves its keys in the index."""
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "groupby"
        and not any(keyword.arg == "as_index" for keyword in node.keywords)
    )


def _aggregated(call):
    """The names a grouped ``agg`` written out gives its columns, as a string looks them up:
    the keys of a dictionary of columns (the outer level where a list of functions makes two),
    or the names of a named aggregation (``agg(total=("amount", "sum"))``)."""
    if len(call.args) == 1 and not call.keywords and isinstance(call.args[0], ast.Dict):
        return _display_keys(call.args[0])
    if not call.args and call.keywords and all(keyword.arg for keyword in call.keywords):
        return {keyword.arg for keyword in call.keywords}
    return None


def _true(node):
    return isinstance(node, ast.Constant) and node.value is True


def _written(node):
    """The string ``node`` writes out, else ``None``."""
    return node.value if isinstance(node, ast.Constant) and type(node.value) is str else None


def _display_keys(node):
    """The keys of a dictionary display, all written-out strings; ``None`` otherwise (a
    ``**`` unpacking, a computed key)."""
    keys = [_written(key) if key is not None else None for key in node.keys]
    return set(keys) if all(type(key) is str for key in keys) else None


# Names through which code reaches variables by strings or runs code the analysis never reads.
_DYNAMIC_NAMES = frozenset(("exec", "eval", "globals", "locals", "vars", "setattr", "get_ipython", "__import__"))


def _notebook_globals(scope):
    """The global names that the functions and the classes' methods the notebook defined,
    bound in ``scope``, read or bind (``_code_names``)."""
    names = set()
    for _, value in scope.items():
        functions = [value]
        if isinstance(value, type) and _module_of(value) == "__main__":
            functions = [
                member.__func__ if type(member) in (staticmethod, classmethod) else member
                for member in _class_dict(value).values()
            ]
        for function in functions:
            if type(function) is types.FunctionType and _names_notebook(function):
                names |= _code_names(function.__code__)
    return names


def _names_notebook(callee):
    """Whether ``callee`` is a function or class whose code is the notebook's."""
    code = getattr(callee, "__code__", None)
    filename = getattr(code, "co_filename", None) if code is not None else None
    return type(filename) is str and (filename == FILENAME or _is_cell_file(filename))
