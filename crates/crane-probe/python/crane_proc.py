"""What crane's fork reads of the system, and the C library functions it calls: ``/proc`` files
and their fields, this process's address space, the machine's available memory, a child's
private memory (the parent's memory watch), and ``_libc``, which calls C only while the kernel's
builtins are the interpreter's own (``ctypes``' lookup is Python code that finds them).

Standard library only; joined into the dry-run module after ``crane_fork.py``, whose imports it
uses.
"""

_libc_functions = {}


def _libc(name):
    """The C library's function ``name`` through ctypes, looked up once. ``ctypes``' lookup
    (and its import) is Python code that finds the kernel's builtins: it is done only while
    they are the interpreter's own, else this raises OSError."""
    found = _libc_functions.get(name)
    if found is None:
        if not _builtins_intact():
            raise OSError("the kernel's builtins were replaced since crane's injection")
        import ctypes

        found = _libc_functions[name] = getattr(ctypes.CDLL(None, use_errno=True), name)
    return found


def _read_proc(path):
    try:
        with io.open(path, "rb") as file:
            return file.read().decode("ascii", "replace")
    except OSError:
        return ""


def _proc_field_kb(text, field):
    for line in text.splitlines():
        if line.startswith(field + ":"):
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                return int(parts[1]) * 1024
    return 0


def vm_size():
    return _proc_field_kb(_read_proc("/proc/self/status"), "VmSize")


def available_memory():
    available = _proc_field_kb(_read_proc("/proc/meminfo"), "MemAvailable")
    if available:
        return available
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return 1 << 31


def _private_memory(pid):
    """Memory only the child maps: pages it copied on write and pages it allocated."""
    rollup = _read_proc(f"/proc/{pid}/smaps_rollup")
    return _proc_field_kb(rollup, "Private_Dirty") + _proc_field_kb(rollup, "Private_Clean")
