"""crane's write overlay: the new files a sealed dry run writes through Python stay in its memory.

A sealed child may change nothing outside its process (``crane_seal.py``), so a cell that saves
a figure, a table or a checkpoint as it goes would be stopped at its first save, and its dry run
say nothing about the rest. Once sealed, the child's ``open`` (``builtins.open`` and ``io.open``:
what ``pathlib``, pandas, NumPy, matplotlib, pickle, joblib and zip archives write through) gives
a file opened for writing where **no file exists** a buffer in memory, kept under its absolute
path; opening that path again through ``open`` reads, extends or replaces the buffer. The real
open is never called for it: nothing reaches the disk. ``torch.save`` given a path writes through
an opened file (its documented other form, the same bytes) so that its archive is one too.

``os.stat`` and ``os.lstat`` (and what asks through them: ``os.path.exists``, ``getsize``,
``Path.exists``) answer for such a file as the disk would: a regular file of its size.

The overlay cannot make the disk agree, so what could show the difference is an attempt (the
run reads as blocked there, as without the overlay):
- listing a directory that holds a file written in memory (``os.listdir``, ``os.scandir`` and
  so ``glob`` and ``os.walk``);
- an ``OSError`` the cell raises, or that is in the chain of what it raises, once a file was
  written in memory: a native library opening the path finds nothing there and fails so;
- buffers beyond ``_OVERLAY_MAX_BYTES`` (``ENOSPC``).
A file that exists is never shadowed (a native reader would read the old one): writing over it
is trapped as before.
"""

_OVERLAY_MAX_BYTES = 256 << 20
_OVERLAY_MODES = frozenset("rwxab+t")

_overlay = None


class _Overlay:
    def __init__(self):
        self.files = {}  # absolute path -> bytes, at the last flush or close
        self.parents = set()
        self.written = 0
        self.open = _overlay_real["open"]
        self.stat = _overlay_real["stat"]
        self.lstat = _overlay_real["lstat"]


_overlay_real = {}


def install_overlay():
    """Serve new files from memory in this (sealed) child; see the module documentation."""
    global _overlay
    import builtins

    _overlay_real.update(
        open=io.open,
        stat=os.stat,
        lstat=os.lstat,
        listdir=os.listdir,
        scandir=os.scandir,
    )
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
    os.stat = _overlay_stat("stat")
    os.lstat = _overlay_stat("lstat")
    os.listdir = _overlay_listing("listdir")
    os.scandir = _overlay_listing("scandir")
    torch = sys.modules.get("torch")
    save = getattr(torch, "save", None)
    if callable(save):
        torch.save = _overlay_torch_save(save)


def overlay_raised(exc):
    """After the cell: an ``OSError`` in what it raised, once a file was written in memory, may
    be the disk lacking that file; it is an attempt at the line that raised."""
    if _overlay is None or not _overlay.files:
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
    paths = sorted(_overlay.files)
    return repr(paths[0]) if len(paths) == 1 else f"{len(paths)} files ({paths[0]!r}, ...)"


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
    """Whether the real open would create ``path``: nothing there, its directory there and
    writable."""
    try:
        _overlay.lstat(path)
        return False
    except FileNotFoundError:
        pass
    except OSError:
        return False
    parent = os.path.dirname(path)
    try:
        if not _stat.S_ISDIR(_overlay.stat(parent).st_mode):
            return False
    except OSError:
        return False
    return os.access(parent, os.W_OK | os.X_OK)


def _overlay_open(file, mode="r", buffering=-1, encoding=None, errors=None, newline=None, closefd=True, opener=None):
    path = _overlay_path(file) if opener is None and closefd and type(mode) is str else None
    if path is not None and _OVERLAY_MODES.issuperset(mode) and len(set(mode)) == len(mode):
        kind = [letter for letter in mode if letter in "rwxa"]
        if len(kind) == 1 and not ("b" in mode and "t" in mode):
            kind = kind[0]
            known = path in _overlay.files
            if known or (kind != "r" and _overlay_creatable(path)):
                if kind == "x" and known:
                    raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), file)
                initial = _overlay.files.get(path, b"") if kind in "ra" else b""
                buffer = _OverlayFile(path, file, mode, initial)
                if "b" in mode:
                    return buffer
                text = io.TextIOWrapper(
                    buffer, encoding=encoding, errors=errors, newline=newline, line_buffering=buffering == 1
                )
                text.mode = mode
                return text
    return _overlay.open(file, mode, buffering, encoding, errors, newline, closefd, opener)


class _OverlayFile(io.BytesIO):
    """A file in the dry run's memory: its bytes are the overlay's at every flush and close."""

    def __init__(self, path, name, mode, initial):
        super().__init__(initial)
        self.name = name
        self.mode = mode
        self._path = path
        self._reads = "r" in mode or "+" in mode
        self._writes = "r" not in mode or "+" in mode
        if "a" in mode:
            self.seek(0, io.SEEK_END)
        if self._writes:
            _overlay.files[path] = bytes(initial)
            _overlay.parents.add(os.path.dirname(path))

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
        if self._writes:
            _overlay.files[self._path] = self.getvalue()

    def close(self):
        if not self.closed:
            self.flush()
        super().close()


def _overlay_stat(name):
    """``os.stat``/``os.lstat`` answer for a file written in memory as the disk would once it
    was written: a regular file of its size, made now."""
    real = _overlay_real[name]

    def stat_(path, *args, **kwargs):
        if _overlay.files and not args and not kwargs.get("dir_fd"):
            known = _overlay_path(path)
            if known in _overlay.files:
                now = int(time.time())
                size = len(_overlay.files[known])
                return os.stat_result((_stat.S_IFREG | 0o644, 0, 0, 1, os.getuid(), os.getgid(), size, now, now, now))
        return real(path, *args, **kwargs)

    stat_.__name__ = name
    return stat_


def _overlay_listing(name):
    """A listing of a directory with a file written in memory would lack it: an attempt."""
    real = _overlay_real[name]

    def listing(path=".", *args, **kwargs):
        if _overlay.files and _overlay_path(path) in _overlay.parents:
            _overlay_note(f"list the directory {_overlay_path(path)!r} ({name}) with files written in the dry run's memory only")
        return real(path, *args, **kwargs)

    listing.__name__ = name
    return listing


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
