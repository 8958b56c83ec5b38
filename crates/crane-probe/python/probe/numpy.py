# numpy: arrays and numpy scalars, with their sampled value facts.


def _numpy():
    return _library("numpy")


def _scan_cost(n, numeric, mapped=False):
    """The work of scanning the deterministic sample of `n` elements."""
    ranges = _sample_ranges(n, numeric, mapped)
    scanned = n if ranges is None else sum(stop - start for start, stop in ranges)
    return scanned if numeric else scanned * OBJECT_ELEMENT_COST


def _sample_ranges(n, numeric, mapped=False):
    """``None`` when ``n`` elements are scanned whole, else the ``(start, stop)`` blocks of the
    deterministic sample (fewer for a memory-mapped file, where each block is a disk read)."""
    full, blocks, length = (
        (NUMERIC_FULL_SCAN, NUMERIC_BLOCKS, NUMERIC_BLOCK_LEN)
        if numeric
        else (OBJECT_FULL_SCAN, OBJECT_BLOCKS, OBJECT_BLOCK_LEN)
    )
    if mapped:
        blocks = MAPPED_BLOCKS
    if n <= full:
        return None
    span = n - length
    return [(i * span // (blocks - 1), i * span // (blocks - 1) + length) for i in range(blocks)]


def _array_sample(np, array, size, numeric, run, entry):
    """The array itself when small, else its deterministic sample as a flat array."""
    mapped = _find_class(type(array), "numpy", "memmap") is not None
    ranges = _sample_ranges(size, numeric, mapped)
    if ranges is None:
        return array
    run.mark_sampled(entry)
    # A contiguous array is sliced as a flat view (memcpy); flatiter copies element-wise.
    flat = array.reshape(-1) if array.flags.c_contiguous else array.flat
    return np.concatenate([flat[start:stop] for start, stop in ranges])


def _numeric_stats(np, values, facts):
    """min/max/has_nan/has_inf of a numeric array (NaN-aware, no allocation but the reductions)."""
    kind = values.dtype.kind
    if values.size == 0:
        return
    if kind == "f":
        with np.errstate(all="ignore"):
            lowest = np.fmin.reduce(values, axis=None)
            highest = np.fmax.reduce(values, axis=None)
            has_nan = bool(np.isnan(values.min())) or bool(np.isnan(lowest))
        facts["has_nan"] = has_nan
        facts["has_inf"] = bool(np.isinf(lowest)) or bool(np.isinf(highest))
        facts["min"] = _number(float(lowest), 6)
        facts["max"] = _number(float(highest), 6)
    elif kind in "iu":
        facts["min"] = _number(int(values.min()))
        facts["max"] = _number(int(values.max()))
    elif kind == "b":
        facts["n_true"] = int(np.count_nonzero(values))
    elif kind == "c":
        facts["has_nan"] = bool(np.isnan(values).any())
    elif kind in "Mm":
        nat = np.isnat(values)
        facts["nulls"] = int(np.count_nonzero(nat))
        valid = values[~nat] if facts["nulls"] else values
        if valid.size:
            facts["min"] = str(valid.min())
            facts["max"] = str(valid.max())


def _summarize_ndarray(obj, entry, run):
    np = _numpy()
    cls = type(obj)
    names = _class_names(cls)
    entry["S"]["shape"] = _shape_list(obj.shape)
    entry["S"]["ndim"] = int(obj.ndim)
    entry["R"]["dtype"] = str(obj.dtype)
    if ("numpy", "memmap") in names:
        entry["R"]["memmap"] = True
    masked = ("numpy", "MaskedArray") in names
    if masked:
        entry["R"]["masked"] = True
    if np is None:
        return
    size = int(obj.size)
    if size <= SMALL_VALUE_ITEMS and obj.dtype.kind not in "OV":
        value = _small_value(obj.tolist())
        if value is not _NO_JSON:
            entry["V"]["value"] = value
    mapped = ("numpy", "memmap") in names
    cost = _scan_cost(size, obj.dtype.kind in "fiubcMm", mapped)
    plain = type(obj) is np.ndarray and obj.dtype.kind in "fiubMm"
    run.defer(entry, lambda: _array_values(np, obj, size, masked, entry, run), cost, plain=plain)


def _array_values(np, obj, size, masked, entry, run):
    facts = entry["V"]
    kind = obj.dtype.kind
    if masked:
        ma = np.ma
        n_masked = int(ma.count_masked(obj))
        facts["n_masked"] = n_masked
        data = ma.MaskedArray.compressed(obj) if size <= NUMERIC_FULL_SCAN else None
        if data is None:
            run.mark_sampled(entry)
            sample = _array_sample(np, np.asarray(obj.data), size, True, run, entry)
            mask = _array_sample(np, ma.getmaskarray(obj), size, True, run, entry)
            data = sample[~mask]
        if kind in "fiubcMm":
            _numeric_stats(np, data, facts)
        return
    if kind in "fiubcMm":
        _numeric_stats(np, _array_sample(np, obj, size, True, run, entry), facts)
    elif kind in "OUS":
        sample = _array_sample(np, obj, size, False, run, entry)
        head = sample.flat[0 : min(ELEMENT_SCAN, sample.size)]
        if kind == "O":
            entry["R"]["element_types"] = _element_types(head)[0]
        if "value" not in facts:
            facts["examples"] = [_label(x) for x in head[:3]]


def _summarize_numpy_scalar(obj, entry, run):
    entry["R"]["dtype"] = str(obj.dtype)
    value = _scalar_json(obj)
    if value is not _NO_JSON:
        entry["V"]["value"] = value
