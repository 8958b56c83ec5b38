"""What the parts of the dry-run module (the dry run, snapshots, the replica) share: a call's
answer (one JSON document, the ``repr`` of a reply), the kernel's shell and IPython's
transformation of a cell, a class's module, qualified name and namespace read through ``type``'s own
descriptors and a module's dict through ``ModuleType``'s (a class of the user's may override the
attributes, never these), and ``ast``'s functions resolving builtins in crane's snapshot, walked
without an import.

Standard library only; joined after the fork's files and before every part that uses it.
"""

import ast
import linecache
import sys
import types


def _answer(document):
    return _Reply(_json_dumps(document, ensure_ascii=False, default=str))


_type_dict = type.__dict__
_module_of = _type_dict["__module__"].__get__
_qualname_of = _type_dict["__qualname__"].__get__
_class_dict = _type_dict["__dict__"].__get__
_module_dict = types.ModuleType.__dict__["__dict__"].__get__
# The functions of ``ast`` the module calls, resolving builtins in crane's snapshot.
_ast = _private_functions(ast)


def _join(module, qualname):
    if type(qualname) is not str:
        return None
    if type(module) is not str or module == "builtins":
        return qualname
    return module + "." + qualname


def _walk(tree):
    """``ast.walk``'s order (breadth first), without its ``from collections import deque``:
    importing from a package runs importlib's Python code, which finds the kernel's builtins."""
    todo = [tree]
    at = 0
    while at < len(todo):
        node = todo[at]
        at += 1
        todo.extend(_ast["iter_child_nodes"](node))
        yield node


_absent = object()


def _shell():
    return _kernel_shell()


def _transform(shell, code):
    return shell.transform_cell(code) if shell is not None else code


_USER_CODE_REASON = "judging whether a fork is safe here would run code defined in the notebook"
