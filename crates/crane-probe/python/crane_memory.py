"""crane's memory argument: whether a dry run that ran out of memory proves that the real run
of the cell would too.

A fork that runs out of memory proves nothing by itself: pages it copied on write cost memory
in the fork but not in the kernel, and its budget is only part of what the machine has. What
the real run cannot escape is one allocation that the kernel can never get. This part owns:

- ``memory_room()``, in the kernel before the fork: what the machine and the kernel's memory
  cgroup can still give (an upper bound: free memory, the page cache and the kernel memory that
  can be reclaimed, free swap; a cgroup's limit less what it uses, its reclaimable page cache
  and slab given back), the machine's memory and swap, Linux's overcommit policy, and what the
  kernel process holds;
- ``failing_request(exc)``, in the child: the allocation a ``MemoryError`` names (numpy's
  ``_ArrayMemoryError`` carries the shape and data type), and whether the operation that asked
  for it writes every byte of it;
- ``judged_request(request, room)``, in the kernel after the fork: the request with what could
  still be given and, when it is certain, why the real run fails as well (docs/dry-run.md,
  "Memory exhaustion foreseen").

Standard library only; joined into the dry-run module after ``crane_fork.py``.
"""

# numpy's Python functions that write every element of the array they allocate: the fills
# (an empty array then ``copyto``) and the outer product (a ufunc computes every element).
_NUMPY_FILLS = frozenset({"ones", "full", "ones_like", "full_like", "zeros_like", "outer"})
_NUMPY_NUMERIC = frozenset({"numpy.core.numeric", "numpy._core.numeric"})
_NUMPY_EXCEPTIONS = frozenset({"numpy.core._exceptions", "numpy._core._exceptions"})
# Instructions whose result numpy computes element by element when the operands are arrays:
# arithmetic, comparisons and advanced indexing (a copy of every selected element).
_COMPUTING_INSTRUCTIONS = frozenset(
    {"BINARY_OP", "COMPARE_OP", "BINARY_SUBSCR", "UNARY_NEGATIVE", "UNARY_INVERT", "UNARY_POSITIVE"}
)


def memory_room():
    """What can still be given, read in the kernel before a fork (bytes; ``None`` where
    unknown): ``available`` (the upper bound above) and ``where`` (the machine or the cgroup
    that bounds it), ``total`` (memory and swap), ``overcommit`` (the mode) and
    ``commit_room``, ``held`` and ``mapped`` (``_held_and_mapped``), and ``budget``, what the
    fork's memory limit is drawn from."""
    meminfo = _read_proc("/proc/meminfo")

    def field(name):
        return _proc_field_kb(meminfo, name)

    reclaimable = max(field("KReclaimable"), field("SReclaimable"))
    machine = field("MemFree") + field("Active(file)") + field("Inactive(file)") + reclaimable + field("SwapFree")
    available, where = machine, "the machine"
    cgroup = _cgroup_room(field("SwapFree"))
    if cgroup is not None and cgroup[0] < available:
        available, where = cgroup[0], f"its memory cgroup ({_size(cgroup[1])} limit)"
    try:
        overcommit = int(_read_proc("/proc/sys/vm/overcommit_memory").strip())
    except ValueError:
        overcommit = None
    commit_room = None
    if "CommitLimit:" in meminfo and "Committed_AS:" in meminfo:
        commit_room = field("CommitLimit") - field("Committed_AS")
    held, mapped = _held_and_mapped()
    return {
        "available": available if meminfo else None,
        "held": held,
        "mapped": mapped,
        "where": where,
        "total": _machine_total() or (field("MemTotal") + field("SwapTotal")) or None,
        "overcommit": overcommit,
        "commit_room": commit_room,
        # What is available without pushing anything out, in the machine and in the cgroup.
        "budget": min(available_memory(), cgroup[0]) if cgroup is not None else available_memory(),
    }


def _held_and_mapped():
    """This process's anonymous memory (resident or swapped) and its address space: in the
    kernel before a fork, and in the child where an allocation failed. What the kernel holds
    before the cell less what the child holds there is what the real run freed by then (the
    fork could not give that back: the kernel still maps it), and the same for its address
    space; pages copied on write are counted once in each."""
    status = _read_proc("/proc/self/status")
    return _proc_field_kb(status, "RssAnon") + _proc_field_kb(status, "VmSwap"), _proc_field_kb(status, "VmSize")


def _machine_total():
    """RAM and swap as the kernel's overcommit check counts them (``sysinfo``, which a
    container's ``/proc/meminfo`` may not show); ``None`` where it cannot be called."""
    try:
        sysinfo = _libc("sysinfo")
        ctypes = sys.modules["ctypes"]
        ulong = ctypes.c_ulong

        class SysInfo(ctypes.Structure):
            _fields_ = [
                ("uptime", ctypes.c_long),
                ("loads", ulong * 3),
                ("totalram", ulong),
                ("freeram", ulong),
                ("sharedram", ulong),
                ("bufferram", ulong),
                ("totalswap", ulong),
                ("freeswap", ulong),
                ("procs", ctypes.c_ushort),
                ("pad", ctypes.c_ushort),
                ("totalhigh", ulong),
                ("freehigh", ulong),
                ("mem_unit", ctypes.c_uint),
                ("reserved", ctypes.c_char * 256),
            ]

        info = SysInfo()
        if sysinfo(ctypes.byref(info)) != 0:
            return None
        return (info.totalram + info.totalswap) * (info.mem_unit or 1)
    except Exception:
        return None


def _cgroup_room(swap_free):
    """``(room, limit)`` of the tightest memory cgroup above this process, or ``None``: for
    each limited level, its limit less its usage, with its reclaimable page cache and the
    machine's free swap added (an upper bound of what it can still give)."""
    mounts = _read_proc("/proc/self/mountinfo")
    best = None
    for line in _read_proc("/proc/self/cgroup").splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        v1 = "memory" in parts[1].split(",")
        v2 = parts[0] == "0" and parts[1] == ""
        if not v1 and not v2:
            continue
        root = _cgroup_mount(mounts, v2)
        if root is None:
            continue
        directory = root.rstrip("/") + "/" + parts[2].strip("/")
        while True:
            room = _cgroup_level_room(directory.rstrip("/"), v2, swap_free)
            if room is not None and (best is None or room[0] < best[0]):
                best = room
            if len(directory.rstrip("/")) <= len(root.rstrip("/")):
                break
            directory = directory.rstrip("/").rpartition("/")[0]
        if best is not None:
            return best
    return best


def _cgroup_level_room(directory, v2, swap_free):
    limit_file, usage_file = ("memory.max", "memory.current") if v2 else ("memory.limit_in_bytes", "memory.usage_in_bytes")
    try:
        limit = int(_read_proc(directory + "/" + limit_file).strip())
        usage = int(_read_proc(directory + "/" + usage_file).strip())
    except ValueError:
        return None  # no such level, or v2's "max": no limit here
    if limit >= 1 << 62:
        return None  # v1's "no limit"
    stat = {}
    for entry in _read_proc(directory + "/memory.stat").splitlines():
        key, _, value = entry.partition(" ")
        if value.strip().isdigit():
            stat[key] = int(value)
    if v2:
        cache = stat.get("file", 0) - stat.get("shmem", 0) + stat.get("slab_reclaimable", 0)
    else:
        cache = stat.get("total_active_file", 0) + stat.get("total_inactive_file", 0)
    return (max(0, limit - usage) + max(0, cache) + swap_free, limit)


def _cgroup_mount(mountinfo, v2):
    for line in mountinfo.splitlines():
        before, separator, after = line.partition(" - ")
        if not separator:
            continue
        fields, mount = after.split(), before.split()
        if len(fields) < 1 or len(mount) < 5:
            continue
        options = fields[2].split(",") if len(fields) > 2 else []
        if (v2 and fields[0] == "cgroup2") or (not v2 and fields[0] == "cgroup" and "memory" in options):
            return mount[4]
    return None


def failing_request(exc):
    """The allocation a ``MemoryError`` names, read in the child: ``{"bytes", "what",
    "writes", "held", "mapped"}`` (``writes``: what writes every byte of it, or ``None``; the
    child's own memory then, ``_held_and_mapped``), or ``None`` when the exception names no
    size."""
    # numpy shows the class as ``MemoryError``: it is found by identity in numpy's module.
    cls = type(exc)
    if not any(getattr(sys.modules.get(name), "_ArrayMemoryError", None) is cls for name in _NUMPY_EXCEPTIONS):
        return None
    shape, dtype = getattr(exc, "shape", None), getattr(exc, "dtype", None)
    itemsize = getattr(dtype, "itemsize", None)
    if type(shape) is not tuple or type(itemsize) is not int or not all(type(n) is int for n in shape):
        return None
    size = itemsize
    for n in shape:
        size *= n
    held, mapped = _held_and_mapped()
    return {
        "bytes": size,
        "what": f"an array of shape {shape} and data type {dtype}",
        "writes": _writes_in_full(exc.__traceback__),
        "held": held,
        "mapped": mapped,
    }


def _writes_in_full(tb):
    """What writes every byte of the failed allocation, from where the traceback ends: a
    numpy function that fills what it allocates, or an operator on arrays evaluated in that
    frame (numpy computes every element of its result); ``None`` when neither is certain."""
    if tb is None:
        return None
    while tb.tb_next is not None:
        tb = tb.tb_next
    frame = tb.tb_frame
    code = frame.f_code
    if frame.f_globals.get("__name__") in _NUMPY_NUMERIC and code.co_name in _NUMPY_FILLS:
        return f"numpy.{code.co_name}"
    try:
        import opcode

        name = opcode.opname[code.co_code[tb.tb_lasti]]
    except (ImportError, IndexError):
        return None
    if name in _COMPUTING_INSTRUCTIONS:
        return "an array operator"
    return None


def judged_request(request, room):
    """``request`` (``failing_request``'s) with what ``room`` says could still be given, and
    ``certain``: why the real run cannot get it either, or ``None``."""
    if type(request) is not dict or type(request.get("bytes")) is not int or room.get("available") is None:
        return None
    need = request["bytes"]
    # What the real run may have freed of the kernel's memory before it asked (the fork could
    # not: the kernel still maps those pages) comes back to what it can be given.
    freed = max(0, _int(room.get("held")) - _int(request.get("held")))
    unmapped = max(0, _int(room.get("mapped")) - _int(request.get("mapped")))
    available = room["available"] + freed
    certain = None
    total, mode = room.get("total"), room.get("overcommit")
    if mode == 0 and total is not None and need > total:
        certain = (
            f"Linux's default overcommit check refuses one allocation larger than the machine's "
            f"memory and swap ({_size(total)}): the real run raises MemoryError"
        )
    elif (
        mode == 2
        and room.get("commit_room") is not None
        and _int(room.get("mapped"))
        and _int(request.get("mapped"))
        and need > room["commit_room"] + unmapped
    ):
        certain = (
            f"Linux's strict overcommit (mode 2) refuses it: {_size(max(0, room['commit_room'] + unmapped))} "
            "can still be committed: the real run raises MemoryError"
        )
    elif request.get("writes") and need > available and _int(room.get("held")) and _int(request.get("held")):
        certain = (
            f"{request['writes']} writes every byte it allocates, more than {room['where']} can still "
            "give: the real run is killed for memory or raises MemoryError"
        )
    return {
        "bytes": need,
        "what": request.get("what") or "an allocation",
        "available_bytes": available,
        "available_in": room["where"],
        "certain": certain,
    }


def _int(value):
    return value if type(value) is int else 0


def _size(n):
    """Bytes as the hold says them: GB with one decimal under 10 GB, MB under 0.1 GB."""
    if n < 100_000_000:
        return f"{n // 1_000_000} MB"
    if n < 10_000_000_000:
        return f"{n / 1e9:.1f} GB"
    return f"{n / 1e9:.0f} GB"
