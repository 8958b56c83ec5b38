"""crane's replica, its stand-ins: a large array, frame, series or tensor, copied as a sample of
its rows and rebuilt to its real shape.

In the kernel (``_standin_of``), rows are sampled exactly (evenly, first and last, and a row
holding each column's first missing value) and pickled with the shape, and for a frame or series
its dtypes, columns and range index; in the replica (``_rebuilt``) they are repeated to the real
shape. Only numpy's, pandas' and torch's own classes, found by identity (``_data_kind``): their
methods are called to measure and sample them. A crash that reads a stand-in is approximate.
"""

# Rows of a stand-in copied exactly.
STANDIN_ROWS = 256
# Above this many elements the rows holding missing values are not looked for.
NAN_SCAN_ELEMENTS = 50_000_000


_DATA_CLASSES = (("numpy", ("ndarray",)), ("pandas", ("DataFrame", "Series")), ("torch", ("Tensor",)), ("torch.nn", ("Parameter",)))


def _data_kind(cls):
    """``"ndarray"``, ``"DataFrame"``, ``"Series"``, ``"Tensor"`` or ``"Parameter"`` for exactly
    these library classes, by identity (a class of the user's may take their names), else
    None: their methods are called to measure and sample them."""
    for module, names in _DATA_CLASSES:
        found = sys.modules.get(module)
        if found is not None and issubclass(type(found), types.ModuleType):
            namespace = _module_dict(found)
            for name in names:
                if namespace.get(name) is cls:
                    return name
    return None


class _StandIn:
    """How a stand-in is rebuilt in the replica: ``kind`` and what it needs, pickled."""

    def __init__(self, kind, sample, shape, extra):
        self.kind = kind
        self.sample = sample
        self.shape = shape
        self.extra = extra


def _standin_of(value):
    """``(stand-in, description)`` for a large array, frame, series or tensor, else None."""
    qualname = _data_kind(type(value))
    if qualname == "ndarray":
        if value.ndim == 0 or value.dtype.hasobject and value.shape[0] == 0:
            return None
        rows = _sample_rows(value.shape[0], _nan_rows_numpy(value))
        sample = value[rows]
        return _StandIn("ndarray", sample, tuple(value.shape), None), _described("array", value.shape, rows)
    if qualname in ("DataFrame", "Series"):
        rows = _sample_rows(len(value), _nan_rows_pandas(value))
        sample = value.iloc[rows]
        index = value.index
        extra = None
        if _qualname_of(type(index)) == "RangeIndex":
            extra = ("range", index.start, index.stop, index.step, index.name)
        return _StandIn(qualname, sample, (len(value),), extra), _described(
            "frame" if qualname == "DataFrame" else "series", (len(value),), rows, exact_index=extra is not None
        )
    if qualname in ("Tensor", "Parameter"):
        if value.dim() == 0 or value.device.type != "cpu":
            return None
        detached = value.detach()
        rows = _sample_rows(detached.shape[0], [])
        sample = detached[rows].clone()
        extra = (bool(value.requires_grad), qualname == "Parameter")
        return _StandIn("tensor", sample, tuple(detached.shape), extra), _described("tensor", tuple(detached.shape), rows)
    return None


def _described(what, shape, rows, exact_index=True):
    text = f"a stand-in {what} of the same shape {tuple(shape)}, dtypes"
    if what in ("frame", "series"):
        text += ", columns" if what == "frame" else ""
        text += " and index" if exact_index else " (its index repeated)"
    return text + f", its values {len(rows)} real rows repeated"


def _sample_rows(length, extra):
    if length <= 0:
        return []
    count = min(length, STANDIN_ROWS)
    if count == 1:
        rows = {0}
    else:
        rows = {round(i * (length - 1) / (count - 1)) for i in range(count)}
    rows.update(row for row in extra if 0 <= row < length)
    return sorted(rows)


def _nan_rows_numpy(array):
    if array.size > NAN_SCAN_ELEMENTS or array.dtype.kind not in "fc" or array.ndim == 0:
        return []
    missing = array != array
    if array.ndim == 1:
        found = missing.nonzero()[0]
        return [int(found[0])] if len(found) else []
    flat = missing.reshape(array.shape[0], -1)
    columns = flat.any(axis=0).nonzero()[0]
    return [int(flat[:, column].argmax()) for column in columns[:STANDIN_ROWS]]


def _nan_rows_pandas(value):
    if value.size > NAN_SCAN_ELEMENTS:
        return []
    missing = value.isna()
    if missing.ndim == 1:
        found = missing.to_numpy().nonzero()[0]
        return [int(found[0])] if len(found) else []
    matrix = missing.to_numpy()
    columns = matrix.any(axis=0).nonzero()[0]
    return [int(matrix[:, column].argmax()) for column in columns[:STANDIN_ROWS]]


def _known_size(value):
    """Bytes of a large array, frame, series or tensor, read from the library (None: unknown)."""
    qualname = _data_kind(type(value))
    try:
        if qualname == "ndarray":
            return int(value.nbytes)
        if qualname in ("DataFrame", "Series"):
            return int(value.memory_usage(deep=False, index=True).sum()) if qualname == "DataFrame" else int(value.memory_usage(deep=False, index=True))
        if qualname in ("Tensor", "Parameter"):
            return int(value.element_size()) * int(value.nelement())
    except _UserCode:
        raise
    except Exception:
        return None
    return None


def _rebuilt(standin):
    if type(standin) is not _StandIn:
        return standin
    import numpy

    sample, shape = standin.sample, standin.shape
    if standin.kind == "ndarray":
        if len(sample) == 0:
            return numpy.zeros(shape, dtype=sample.dtype)
        return numpy.resize(sample, shape)
    if standin.kind in ("DataFrame", "Series"):
        positions = numpy.resize(numpy.arange(len(sample)), shape[0])
        made = sample.take(positions)
        if standin.extra is not None and standin.extra[0] == "range":
            import pandas

            _, start, stop, step, name = standin.extra
            made.index = pandas.RangeIndex(start, stop, step, name=name)
        return made
    if standin.kind == "tensor":
        import torch

        requires_grad, parameter = standin.extra
        positions = torch.arange(shape[0]) % max(len(sample), 1)
        made = sample[positions] if len(sample) else torch.zeros(shape, dtype=sample.dtype)
        if parameter:
            return torch.nn.Parameter(made, requires_grad=requires_grad)
        return made.requires_grad_(requires_grad) if made.is_floating_point() else made
    raise ValueError(f"unknown stand-in {standin.kind}")
