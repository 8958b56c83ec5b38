"""crane's fork, its refusals: why forking this kernel is unsafe now (``unsupported_reasons()``).

Each reason is one sentence, and any one stops every fork of crane's (a dry run, a snapshot, a
replica's child): none on a platform without fork, or where crane cannot keep the kernel's
at-fork hooks from running (``crane_atfork.py``); none of a kernel where CUDA is initialised,
where a native runtime whose threads a fork would not have is started (TensorFlow, JAX), or
where a pool's workers or queues would be shared with the kernel or missing in the fork.
"""

def unsupported_reasons():
    """Why forking this kernel is unsafe: each reason is one sentence, empty when it is safe."""
    reasons = []
    if sys.platform == "win32" or not hasattr(os, "fork"):
        return [f"this platform ({sys.platform}) has no fork"]
    if not _at_fork_hooks.found():
        reasons.append(
            "crane cannot find the interpreter's os.register_at_fork lists, so its fork would run "
            "the kernel's before-fork and after-fork hooks in the kernel"
        )
    reasons.extend(_test_refusal())
    reasons.extend(_cuda_reasons())
    reasons.extend(_native_runtime_reasons())
    reasons.extend(_shared_worker_reasons())
    return reasons


def _test_refusal():
    # A test seam: a kernel whose environment holds CRANE_TEST_REFUSE_FORK refuses forks as one
    # that touched a GPU does, on machines that have none.
    # (Read from the environment's own dict: ``os.environ.get`` is Python code that calls
    # builtins the user may have replaced.)
    data = os.environ.__dict__.get("_data")
    seam = data.get(b"CRANE_TEST_REFUSE_FORK") if type(data) is dict else None
    return [f"the kernel refuses forks for a test ({seam.decode('utf-8', 'replace')})"] if seam else []


def _cuda_reasons():
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None) if torch is not None else None
    is_initialized = getattr(cuda, "is_initialized", None)
    try:
        if is_initialized is not None and is_initialized():
            return ["CUDA is initialised in the kernel (torch): a forked process cannot use it"]
    except Exception:
        pass
    return []


def _native_runtime_reasons():
    reasons = []
    context = sys.modules.get("tensorflow.python.eager.context")
    ctx = getattr(context, "_context", None) if context is not None else None
    if ctx is not None and getattr(ctx, "_context_handle", None) is not None:
        devices = getattr(ctx, "_physical_devices", None) or []
        if any(getattr(device, "device_type", None) == "GPU" for device in devices):
            reasons.append("CUDA is initialised in the kernel (tensorflow): a forked process cannot use it")
        reasons.append(
            "the TensorFlow runtime is started in the kernel: its thread pools do not exist in a "
            "fork, so TensorFlow ops there deadlock"
        )
    bridge = sys.modules.get("jax._src.xla_bridge")
    if bridge is not None and getattr(bridge, "_backends", None):
        reasons.append(
            "the JAX runtime is started in the kernel: its threads do not exist in a fork, so "
            "JAX computations there deadlock"
        )
    return reasons


def _shared_worker_reasons():
    threading = sys.modules.get("threading")
    if threading is None:
        return []
    found = []
    for thread in threading.enumerate():
        target = getattr(thread, "_target", None)
        origin = (getattr(target, "__module__", None), getattr(target, "__qualname__", None))
        cls = type(thread)
        if origin == ("multiprocessing.pool", "Pool._handle_workers"):
            found.append(
                "a multiprocessing pool is running in the kernel: a fork would share its worker "
                "processes and queues with the kernel"
            )
        elif cls.__module__ == "concurrent.futures.process":
            found.append(
                "a process pool executor is running in the kernel: a fork would share its worker "
                "processes and queues with the kernel"
            )
        elif origin == ("concurrent.futures.thread", "_worker"):
            found.append(
                "a thread pool executor has live workers in the kernel: they do not exist in a "
                "fork, so work submitted there never runs"
            )
    return list(dict.fromkeys(found))
