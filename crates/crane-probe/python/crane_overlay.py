"""crane's write overlay: what a sealed dry run creates through Python stays in its memory.

A sealed child may change nothing outside its process (``crane_seal.py``), so a cell that saves
a figure, a table or a checkpoint as it goes would be stopped at its first save, and its dry run
say nothing about the rest. Once sealed, the child gives a file opened for writing through
Python's ``open`` (``builtins.open``, ``io.open`` and every module's own name for the real one:
what ``pathlib``, pandas, NumPy, matplotlib, pickle, joblib and zip archives write through)
where **nothing exists** a buffer in memory, kept under its absolute path, and a directory made
there (``os.mkdir``, so ``os.makedirs`` and ``tempfile.mkdtemp``) an entry in memory; opening
that path again through ``open`` reads, extends or replaces the buffer. ``os.stat``/``os.lstat``
(so ``os.path.exists``, ``isdir``, ``getsize``, ``Path.exists``) answer for these as the disk
would, ``os.listdir``/``os.scandir`` list a directory made in memory, and ``os.remove``,
``os.rmdir`` and ``shutil.rmtree`` remove them; ``tempfile.TemporaryFile`` is a buffer with no
name. ``torch.save`` given a path writes through an
opened file (its documented other form, the same bytes). The real calls are never made for these
paths: nothing reaches the disk.

The overlay cannot make the disk agree, so what could show the difference is an attempt (the
run reads as blocked there, as without the overlay):
- listing a real directory that holds something made in memory;
- an ``OSError`` the cell raises, or that is in the chain of what it raises, once something was
  made in memory: a native library opening the path finds nothing there and fails so;
- buffers beyond ``_OVERLAY_MAX_BYTES`` (``ENOSPC``).
What exists is never shadowed (a native reader would read the old file): writing over it is
trapped as before.
"""

_OVERLAY_MAX_BYTES = 256 << 20
_OVERLAY_MODES = frozenset("rwxab+t")
_OVERLAY_TEMPORARY_MODES = frozenset(("w+b", "wb+", "w+", "w+t", "wt+", "wb", "w"))
# The calls of ``os`` the overlay answers for (``install_overlay`` keeps the real ones).
_OVERLAY_OS_CALLS = ("stat", "lstat", "listdir", "scandir", "mkdir", "rmdir", "remove", "unlink")

_overlay = None
_overlay_real = {}


class _Overlay:
    def __init__(self):
        self.files = {}  # absolute path -> bytes, at the last flush or close
        self.dirs = set()  # absolute paths of directories made in memory
        self.parents = set()  # real directories that hold something made in memory
        self.written = 0

    def made(self):
        return bool(self.files or self.dirs)

    def known(self, path):
        return path in self.files or path in self.dirs

    def add(self, path):
        parent = os.path.dirname(path)
        if parent not in self.dirs:
            self.parents.add(parent)

    def children(self, path):
        return sorted(
            os.path.basename(known) for known in (*self.files, *self.dirs) if os.path.dirname(known) == path and known != path
        )


def install_overlay():
    """Serve what the cell creates from memory in this (sealed) child; see the module
    documentation."""
    global _overlay
    import builtins
    import shutil
    import tempfile

    _overlay_real.update({name: getattr(os, name) for name in _OVERLAY_OS_CALLS})
    _overlay_real.update(open=io.open, rmtree=shutil.rmtree, TemporaryFile=tempfile.TemporaryFile)
    _overlay = _Overlay()
    # The open of every module that kept its own name for it (IPython's, the cell's ``open``,
    # ``tarfile``'s), as ``builtins`` and ``io`` have it.
    real = _overlay_real["open"]
    for module in list(sys.modules.values()):
        if isinstance(module, types.ModuleType):
            try:
                namespace = object.__getattribute__(module, "__dict__")
            except Exception:
                continue
            if type(namespace) is dict:
                for name in [name for name, value in namespace.items() if value is real]:
                    namespace[name] = _overlay_open
    builtins.open = io.open = _overlay_open
    os.stat, os.lstat = _overlay_stat("stat"), _overlay_stat("lstat")
    os.listdir, os.scandir = _overlay_listing("listdir"), _overlay_listing("scandir")
    os.mkdir, os.rmdir = _overlay_mkdir, _overlay_rmdir
    os.remove, os.unlink = _overlay_removing("remove"), _overlay_removing("unlink")
    shutil.rmtree = _overlay_rmtree
    tempfile.TemporaryFile = _overlay_temporary_file
    torch = sys.modules.get("torch")
    save = getattr(torch, "save", None)
    if callable(save):
        torch.save = _overlay_torch_save(save)


def overlay_raised(exc):
    """After the cell: an ``OSError`` in what it raised, once something was made in memory, may
    be the disk lacking it; it is an attempt at the line that raised."""
    if _overlay is None or not _overlay.made():
        return
    seen, error = set(), exc
    while error is not None and id(error) not in seen and not isinstance(error, OSError):
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    if error is None or id(error) in seen:
        return
    frame, tb = None, exc.__traceback__
    while tb is not None:
        frame, tb = tb.tb_frame, tb.tb_next
    _overlay_note(f"{type(error).__name__} after writing {_overlay_named()} in the dry run's memory only", frame)


def _overlay_note(what, frame=None):
    if _seal_state is not None:
        _seal_state.note(what, frame if frame is not None else sys._getframe(2))


def _overlay_named():
    paths = sorted(_overlay.files) or sorted(_overlay.dirs)
    count = len(_overlay.files) + len(_overlay.dirs)
    return repr(paths[0]) if count == 1 else f"{count} files and directories ({paths[0]!r}, ...)"


def _overlay_path(file):
    if isinstance(file, int) or not isinstance(file, (str, bytes, os.PathLike)):
        return None
    try:
        path = os.fsdecode(os.fspath(file))
    except (TypeError, ValueError):
        return None
    if not path or "\0" in path:
        return None
    return os.path.abspath(path)


def _overlay_creatable(path):
    """Whether the real call would create ``path``: nothing there, its directory there (made
    in memory, or real and writable)."""
    if _overlay.known(path):
        return False
    try:
        _overlay_real["lstat"](path)
        return False
    except FileNotFoundError:
        pass
    except OSError:
        return False
    return _overlay_writable_dir(os.path.dirname(path))


def _overlay_writable_dir(path):
    """Whether ``path`` is a directory the cell could create files in: made in memory, or real
    and writable."""
    if path in _overlay.dirs:
        return True
    try:
        if not _stat.S_ISDIR(_overlay_real["stat"](path).st_mode):
            return False
    except OSError:
        return False
    return os.access(path, os.W_OK | os.X_OK)


def _overlay_open(file, mode="r", buffering=-1, encoding=None, errors=None, newline=None, closefd=True, opener=None):
    path = _overlay_path(file) if opener is None and closefd and type(mode) is str else None
    if path is not None and _OVERLAY_MODES.issuperset(mode) and len(set(mode)) == len(mode):
        kind = [letter for letter in mode if letter in "rwxa"]
        if len(kind) == 1 and not ("b" in mode and "t" in mode):
            kind = kind[0]
            known = path in _overlay.files
            if path in _overlay.dirs:
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), file)
            if known or (kind != "r" and _overlay_creatable(path)):
                if kind == "x" and known:
                    raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), file)
                initial = _overlay.files.get(path, b"") if kind in "ra" else b""
                return _overlay_wrap(_OverlayFile(path, file, mode, initial), mode, buffering, encoding, errors, newline)
    return _overlay_real["open"](file, mode, buffering, encoding, errors, newline, closefd, opener)


def _overlay_wrap(buffer, mode, buffering, encoding, errors, newline):
    if "b" in mode:
        return buffer
    text = io.TextIOWrapper(buffer, encoding=encoding, errors=errors, newline=newline, line_buffering=buffering == 1)
    text.mode = mode
    return text


def _overlay_temporary_file(
    mode="w+b", buffering=-1, encoding=None, newline=None, suffix=None, prefix=None, dir=None, *, errors=None
):
    """``tempfile.TemporaryFile``: a file with no name, gone when closed; in memory where the
    real one could be made."""
    import tempfile

    where = _overlay_path(dir if dir is not None else tempfile.gettempdir())
    if where is not None and type(mode) is str and mode in _OVERLAY_TEMPORARY_MODES and _overlay_writable_dir(where):
        return _overlay_wrap(_OverlayFile(None, -1, mode, b""), mode, buffering, encoding, errors, newline)
    return _overlay_real["TemporaryFile"](mode, buffering, encoding, newline, suffix, prefix, dir, errors=errors)


class _OverlayFile(io.BytesIO):
    """A file in the dry run's memory: its bytes are the overlay's at every flush and close."""

    def __init__(self, path, name, mode, initial):
        super().__init__(initial)
        self.name = name
        self.mode = mode
        self._path = path  # None: a file with no name (``TemporaryFile``)
        self._reads = "r" in mode or "+" in mode
        self._writes = "r" not in mode or "+" in mode
        if "a" in mode:
            self.seek(0, io.SEEK_END)
        if self._writes and path is not None:
            _overlay.files[path] = bytes(initial)
            _overlay.add(path)

    def readable(self):
        return self._reads

    def writable(self):
        return self._writes

    def read(self, size=-1):
        if not self._reads:
            raise io.UnsupportedOperation("read")
        return super().read(size)

    def write(self, data):
        if not self._writes:
            raise io.UnsupportedOperation("write")
        size = memoryview(data).nbytes
        if _overlay.written + size > _OVERLAY_MAX_BYTES:
            _overlay_note(f"write more than {_OVERLAY_MAX_BYTES} bytes of new files", sys._getframe(1))
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), self.name)
        _overlay.written += size
        if "a" in self.mode:
            self.seek(0, io.SEEK_END)
        return super().write(data)

    def flush(self):
        super().flush()
        if self._writes and self._path is not None:
            _overlay.files[self._path] = self.getvalue()

    def close(self):
        if not self.closed:
            self.flush()
        super().close()


def _overlay_stat(name):
    """``os.stat``/``os.lstat`` answer for what was made in memory as the disk would: a regular
    file of its size, or a directory, made now."""
    real = _overlay_real[name]

    def stat_(path, *args, **kwargs):
        if _overlay.made() and not args and kwargs.get("dir_fd") is None:
            known = _overlay_path(path)
            if known is not None and _overlay.known(known):
                now = int(time.time())
                if known in _overlay.dirs:
                    mode, size = _stat.S_IFDIR | 0o755, 0
                else:
                    mode, size = _stat.S_IFREG | 0o644, len(_overlay.files[known])
                return os.stat_result((mode, 0, 0, 1, os.getuid(), os.getgid(), size, now, now, now))
        return real(path, *args, **kwargs)

    stat_.__name__ = name
    return stat_


def _overlay_listing(name):
    """A directory made in memory lists what is in it; a real one that holds something made in
    memory would lack it: an attempt."""
    real = _overlay_real[name]

    def listing(path=".", *args, **kwargs):
        known = _overlay_path(path) if _overlay.made() and not isinstance(path, bytes) else None
        if known in _overlay.dirs:
            names = _overlay.children(known)
            if name == "listdir":
                return names
            return _OverlayScan([_OverlayEntry(entry, os.path.join(path, entry)) for entry in names])
        if known in _overlay.parents:
            _overlay_note(f"list the directory {known!r} ({name}) with files written in the dry run's memory only")
        return real(path, *args, **kwargs)

    listing.__name__ = name
    return listing


class _OverlayEntry:
    """What ``os.scandir`` gives for an entry of a directory made in memory."""

    def __init__(self, name, path):
        self.name = name
        self.path = path

    def __fspath__(self):
        return self.path

    def __repr__(self):
        return f"<DirEntry {self.name!r}>"

    def is_dir(self, *, follow_symlinks=True):
        return _overlay_path(self.path) in _overlay.dirs

    def is_file(self, *, follow_symlinks=True):
        return _overlay_path(self.path) in _overlay.files

    def is_symlink(self):
        return False

    def is_junction(self):
        return False

    def inode(self):
        return 0

    def stat(self, *, follow_symlinks=True):
        return os.stat(self.path)


class _OverlayScan:
    def __init__(self, entries):
        self._entries = iter(entries)

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._entries)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self._entries = iter(())


def _overlay_mkdir(path, mode=0o777, *, dir_fd=None):
    known = _overlay_path(path) if dir_fd is None else None
    if known is not None:
        if _overlay.known(known):
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), path)
        if _overlay_creatable(known):
            _overlay.dirs.add(known)
            _overlay.add(known)
            return None
    return _overlay_real["mkdir"](path, mode, dir_fd=dir_fd)


def _overlay_rmdir(path, *, dir_fd=None):
    known = _overlay_path(path) if dir_fd is None else None
    if known in _overlay.dirs:
        if _overlay.children(known):
            raise OSError(errno.ENOTEMPTY, os.strerror(errno.ENOTEMPTY), path)
        _overlay.dirs.discard(known)
        return None
    return _overlay_real["rmdir"](path, dir_fd=dir_fd)


def _overlay_removing(name):
    real = _overlay_real[name]

    def remove(path, *, dir_fd=None):
        known = _overlay_path(path) if dir_fd is None else None
        if known in _overlay.files:
            del _overlay.files[known]
            return None
        return real(path, dir_fd=dir_fd)

    remove.__name__ = name
    return remove


def _overlay_rmtree(path, *args, **kwargs):
    known = _overlay_path(path)
    if known in _overlay.dirs:
        inside = known + os.sep
        _overlay.dirs = {entry for entry in _overlay.dirs if entry != known and not entry.startswith(inside)}
        _overlay.files = {entry: data for entry, data in _overlay.files.items() if not entry.startswith(inside)}
        return None
    return _overlay_real["rmtree"](path, *args, **kwargs)


def _overlay_torch_save(save):
    def torch_save(obj, f, *args, **kwargs):
        path = _overlay_path(f)
        if path is not None and (path in _overlay.files or _overlay_creatable(path)):
            with _overlay_open(f, "wb") as opened:
                return save(obj, opened, *args, **kwargs)
        return save(obj, f, *args, **kwargs)

    torch_save.__name__ = "save"
    torch_save.__wrapped__ = save
    return torch_save
