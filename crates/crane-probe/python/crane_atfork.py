"""crane's fork and the kernel's at-fork hooks: no hook of ``os.register_at_fork`` runs because
of crane's fork, in the kernel or in the child.

Hooks registered with ``os.register_at_fork`` belong to the kernel's own forks. Run for crane's,
a ``before`` or ``after_in_parent`` hook would act in the kernel (IPython's stops its
history-saving thread until the next stored cell; a user's may count, log or flush), and an
``after_in_child`` hook would make the fork another state than the kernel's (``random`` reseeds
its generator there, so a cell that depends on ``random.seed`` would not draw what the kernel
draws, and a snapshot that takes over would not continue the kernel's stream). ``crane_fork.py``
(concatenated after this part) empties the lists around its ``os.fork`` (``_at_fork_hooks``) and
calls ``_after_fork_in_child`` first thing in the child.
"""

import gc
import os
import sys


def _before_sentinel():
    pass


def _after_in_parent_sentinel():
    pass


def _after_in_child_sentinel():
    pass


class _AtForkHooks:
    """The interpreter's lists of ``before``, ``after_in_parent`` and ``after_in_child`` hooks,
    emptied around crane's fork. Python can unregister none, but the interpreter keeps each kind
    in a plain list that ``os.fork`` copies before calling its entries; the lists are found once
    as the referrers of sentinels registered for this."""

    def __init__(self):
        self.lists = None
        try:
            os.register_at_fork(
                before=_before_sentinel,
                after_in_parent=_after_in_parent_sentinel,
                after_in_child=_after_in_child_sentinel,
            )
            self.registered = True
        except (AttributeError, TypeError):
            self.registered = False

    def found(self):
        if self.lists is None and self.registered:
            lists = [
                self._list_holding(sentinel)
                for sentinel in (_before_sentinel, _after_in_parent_sentinel, _after_in_child_sentinel)
            ]
            if all(found is not None for found in lists):
                self.lists = lists
        return self.lists is not None

    @staticmethod
    def _list_holding(sentinel):
        holders = [
            referrer
            for referrer in gc.get_referrers(sentinel)
            if type(referrer) is list and any(item is sentinel for item in referrer)
        ]
        return holders[0] if len(holders) == 1 else None

    def suspend(self):
        """Empty the lists; ``resume`` puts their entries back, the same objects in order."""
        saved = [lst[:] for lst in self.lists]
        for lst in self.lists:
            del lst[:]
        return saved

    def resume(self, saved):
        # Hooks registered meanwhile by another thread stay, after the kernel's own.
        for lst, entries in zip(self.lists, saved):
            lst[0:0] = entries


def _after_fork_in_child():
    """What the child needs of the standard library's ``after_in_child`` hooks (CPython 3.11:
    threading, logging, concurrent.futures; ``random``'s reseed is what is not wanted), each
    only where its module is loaded: threading forgets the threads the fork does not have and
    makes this one its main thread; logging's module lock and every handler's lock, and
    ``concurrent.futures``' shutdown lock, which another thread of the kernel may have held at
    the fork, are made new. The handlers' locks are reset through the lock objects themselves,
    never through a method a handler class of the user's could override."""
    threading = sys.modules.get("threading")
    after_fork = getattr(threading, "_after_fork", None) if threading is not None else None
    if after_fork is not None:
        after_fork()
    locks = []
    logging = sys.modules.get("logging")
    if logging is not None:
        handlers = getattr(logging, "_at_fork_reinit_lock_weakset", None)
        for handler in list(handlers) if handlers is not None else ():
            instance = getattr(handler, "__dict__", None)
            if type(instance) is dict:
                locks.append(instance.get("lock"))
        locks.append(getattr(logging, "_lock", None))
    futures_thread = sys.modules.get("concurrent.futures.thread")
    if futures_thread is not None:
        locks.append(getattr(futures_thread, "_global_shutdown_lock", None))
    for lock in locks:
        reinit = getattr(type(lock), "_at_fork_reinit", None) if lock is not None else None
        if reinit is not None and type(lock).__module__ in ("_thread", "threading"):
            reinit(lock)


_at_fork_hooks = _AtForkHooks()
