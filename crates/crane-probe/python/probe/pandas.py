# pandas: frames, series, indexes, categoricals and groupbys, read only where the data is plain.


def _pandas():
    return _library("pandas")


_dtype_names = {}


def _dtype_str(dtype):
    """``str(dtype)``, remembered for numpy's own dtypes of plain scalars: their ``__str__`` is
    Python code in numpy, run for every column of every frame, and their hash and equality are
    C (an equal dtype prints the same)."""
    if _module_of(type(dtype)) != "numpy.dtypes" or getattr(dtype, "kind", "V") not in "biufcmMSU":
        return str(dtype)
    name = _dtype_names.get(dtype)
    if name is None:
        name = str(dtype)
        if len(_dtype_names) < 256:
            _dtype_names[dtype] = name
    return name


def _index_facts(index):
    facts = {"type": _short(type(index)), "dtype": _dtype_str(index.dtype), "nlevels": int(index.nlevels)}
    name = index.name if int(index.nlevels) == 1 else None
    facts["name"] = _label(name) if name is not None else None
    if int(index.nlevels) > 1:
        facts["names"] = [_label(n) if n is not None else None for n in list(index.names)[:MAX_ITEMS]]
    if _short(type(index)) == "RangeIndex":
        facts["range"] = [int(index.start), int(index.stop), int(index.step)]
    return facts


def _index_unique(index, run, entry):
    """Whether the index has no duplicates: exact for a RangeIndex or a small index; for a large
    one, only a duplicate seen in its head is reported."""
    if _short(type(index)) == "RangeIndex":
        return True
    n = len(index)
    if n <= NUMERIC_FULL_SCAN:
        return bool(index.is_unique)
    head = index[:NUMERIC_BLOCK_LEN * NUMERIC_BLOCKS]
    if not head.is_unique:
        return False
    run.mark_sampled(entry)
    return None


def _column_label(name):
    if type(name) is str:
        return _truncate(name, MAX_STR)[0]
    value = _scalar_json(name, limit=MAX_STR)
    if value is _NO_JSON or type(value) is bytes:
        return _label(name, limit=MAX_STR)
    return value


def _column_key(label):
    if type(label) is str:
        return label
    return _json_dumps(label, ensure_ascii=False)


def _series_sample(pd, np, series, numeric, run, entry):
    ranges = _sample_ranges(len(series), numeric)
    if ranges is None:
        return series
    run.mark_sampled(entry)
    positions = np.concatenate([np.arange(start, stop) for start, stop in ranges])
    return series.take(positions)


def _numeric_unique(pd, np, values, kind, stats, peeked=None):
    """The distinct count of a low-cardinality numeric sample, else None. `peeked`: the
    distinct non-NaN count of its first `PEEK_ELEMENTS` values, when the caller knows it."""
    if len(values) == 0:
        return 0
    if kind == "b":
        n_true = stats.get("n_true", 0)
        return int(n_true > 0) + int(n_true < len(values))
    if kind in "iu":
        low, high = stats.get("min"), stats.get("max")
        if type(low) is int and type(high) is int and high - low <= 4 * CARDINALITY_HEAD:
            counts = np.bincount((values - low).astype(np.intp, copy=False))
            n_unique = int(np.count_nonzero(counts))
            return n_unique if n_unique <= LOW_CARDINALITY else None
    if kind not in "iuf":
        return None
    # Most columns are not low-cardinality, and a few dozen elements usually show it cheaply.
    if peeked is None:
        first = values[:PEEK_ELEMENTS]
        if kind == "f":
            first = first[~np.isnan(first)]
        peeked = len(np.unique(first))
    if peeked > LOW_CARDINALITY:
        return None
    head = values[:CARDINALITY_HEAD]
    if len(pd.unique(head)) > LOW_CARDINALITY:
        return None
    n_unique = len(pd.unique(values))
    return n_unique if n_unique <= LOW_CARDINALITY else None


def _numeric_column_values(pd, np, column, run, entry, facts):
    """Value facts of one numeric column held as a numpy array (numpy dtypes only)."""
    kind = column.dtype.kind
    values = _array_sample(np, column, len(column), True, run, entry)
    stats = {}
    _numeric_stats(np, values, stats)
    if kind == "f":
        facts["nulls"] = int(np.count_nonzero(np.isnan(values))) if stats.get("has_nan") else 0
    elif kind in "iub":
        facts["nulls"] = 0
    for key in ("nulls", "min", "max", "has_nan", "has_inf"):
        if key in stats:
            facts[key] = stats[key]
    if kind in "Mm" and "nulls" in stats:
        facts["has_nan"] = stats["nulls"] > 0
    n_unique = _numeric_unique(pd, np, values, kind, stats)
    if n_unique is not None:
        facts["n_unique"] = n_unique


def _series_values(pd, np, series, run, entry, facts, examples=True):
    """Value facts of one column or series: nulls, range, NaN/inf, distinct count, examples."""
    dtype = series.dtype
    kind = getattr(dtype, "kind", "O")
    is_numpy = _module_of(type(dtype)).partition(".")[0] == "numpy"
    name = _dtype_str(dtype)
    if name == "category":
        codes = _array_sample(np, series.cat.codes.to_numpy(), len(series), True, run, entry)
        facts["nulls"] = int(np.count_nonzero(codes < 0))
        categories = series.cat.categories
        facts["n_unique"] = len(categories)
        facts["examples"] = [_label(x) for x in categories[:3]]
        return
    if is_numpy and kind in "fiubMm":
        _numeric_column_values(pd, np, series.to_numpy(), run, entry, facts)
        return
    numeric = kind in "fiub"
    sample = _series_sample(pd, np, series, numeric, run, entry)
    nulls = sample.isna()
    null_count = int(nulls.sum())
    facts["nulls"] = null_count
    valid = sample[~nulls] if null_count else sample
    if numeric:
        if len(valid):
            facts["min"] = _scalar_json(valid.min(), digits=6)
            facts["max"] = _scalar_json(valid.max(), digits=6)
        facts["has_nan"] = null_count > 0
        return
    if kind in "Mm":
        if len(valid):
            facts["min"] = _scalar_json(valid.min())
            facts["max"] = _scalar_json(valid.max())
        facts["has_nan"] = null_count > 0
        return
    try:
        facts["n_unique"] = int(valid.nunique())
    except Exception:
        pass
    if examples:
        seen = []
        for item in valid.iloc[:50]:
            label = _label(item)
            if label not in seen:
                seen.append(label)
            if len(seen) >= 3:
                break
        facts["examples"] = seen
        if name == "object":
            entry_types = _element_types(valid.iloc[:ELEMENT_SCAN])[0]
            if len(entry_types) > 1 or (entry_types and entry_types[0] != "builtins.str"):
                facts["element_types"] = entry_types


# Plain pandas data holds nothing that can run user code: exact pandas types, dtypes of
# numbers, dates, booleans or strings, and labels that are plain scalars.
_PLAIN_LABELS = (str, int, float, bool)
PLAIN_LABEL_SCAN = 10_000


def _plain_dtype(dtype):
    name = _dtype_str(dtype)
    if name in ("str", "string"):
        return True
    if name == "category":
        return _plain_dtype(dtype.categories.dtype)
    return _module_of(type(dtype)).partition(".")[0] in ("numpy", "pandas") and getattr(dtype, "kind", "O") in "fiubMm"


def _plain_index(index):
    if not _is_library_class(type(index)) or int(index.nlevels) != 1:
        return False
    if _plain_dtype(index.dtype):
        return True
    if str(index.dtype) != "object" or len(index) > PLAIN_LABEL_SCAN:
        return False
    return all(_type_in(label, _PLAIN_LABELS) for label in index.to_numpy())


def _plain_attrs(obj):
    """Whether the ``attrs`` of a frame or series hold only plain values: pandas deep-copies
    them in almost every operation (a column, a slice, a head), which would call a held
    object's ``__deepcopy__``. Read from the instance's raw dict, never through the property."""
    attrs = _instance_dict(obj).get("_attrs")
    return attrs is None or (type(attrs) is dict and _plain_value(attrs, 3))


def _plain_value(value, depth):
    if value is None or _type_in(value, _PLAIN_LABELS):
        return True
    if depth == 0 or not _type_in(value, (dict, list, tuple)) or len(value) > SMALL_VALUE_ITEMS:
        return False
    if type(value) is dict:
        return all(_plain_value(k, 0) and _plain_value(v, depth - 1) for k, v in value.items())
    return all(_plain_value(item, depth - 1) for item in value)


def _plain_pandas(obj):
    """Whether summarizing this DataFrame or Series can run no user code at all."""
    if not _is_library_class(type(obj)) or not _plain_attrs(obj) or not _plain_index(obj.index):
        return False
    if _find_class(type(obj), "pandas", "DataFrame") is not None:
        # A wide frame has many columns but few distinct dtypes (which hash in C).
        return _plain_index(obj.columns) and all(_plain_dtype(d) for d in set(obj.dtypes.tolist()))
    return _plain_dtype(obj.dtype)


def _summarize_dataframe(obj, entry, run):
    pd, np = _pandas(), _numpy()
    rows, width = (int(d) for d in obj.shape)
    entry["S"]["shape"] = [rows, width]
    columns = obj.columns
    listed = min(width, MAX_COLUMNS)
    dtypes = obj.dtypes
    # Plain lists: positional lookups on a pandas Index or Series cost microseconds each.
    labels = [_column_label(name) for name in list(columns[:listed])]
    listed_dtypes = list(dtypes.iloc[:listed])
    entry["R"]["columns"] = [
        {"name": label, "dtype": _dtype_str(dtype)} for label, dtype in zip(labels, listed_dtypes)
    ]
    if width > listed:
        entry["R"]["columns_truncated"] = width - listed
        counts = dtypes.value_counts()
        entry["R"]["dtype_counts"] = {
            str(dtype): int(count) for dtype, count in list(counts.items())[:MAX_NAMES]
        }
    if int(columns.nlevels) > 1:
        entry["R"]["columns_nlevels"] = int(columns.nlevels)
    if not columns.is_unique:
        duplicated = columns[columns.duplicated()].unique()
        entry["R"]["duplicated_columns"] = [_column_label(x) for x in duplicated[:MAX_NAMES]]
    entry["R"]["index"] = _index_facts(obj.index)
    run.defer(
        entry,
        lambda: _dataframe_values(pd, np, obj, labels, listed_dtypes, entry, run),
        plain=_plain_pandas(obj),
    )


def _unguarded_if(plain):
    """The guard paused for work on plain data (see `_plain_pandas`), else left on."""
    return _guard.paused() if plain else contextlib.nullcontext()


def _dataframe_values(pd, np, obj, labels, dtypes, entry, run):
    facts = entry["V"]
    # Its index and attrs (deep-copied by every selection) plain: reading it runs no user code.
    index_plain = _plain_attrs(obj) and _plain_index(obj.index)
    with _unguarded_if(index_plain):
        unique = _index_unique(obj.index, run, entry)
    if unique is not None:
        facts["index_unique"] = unique
    columns = {}
    facts["columns"] = columns
    has_nan = False
    has_inf = False
    iloc = obj.iloc
    listed = len(labels)
    with _unguarded_if(index_plain):
        batched = _numeric_batches(pd, np, obj, dtypes)
    rows = int(obj.shape[0])
    for position in range(listed):
        dtype = dtypes[position]
        numeric = getattr(dtype, "kind", "O") in "fiubMm"
        if run.out_of_budget(_scan_cost(rows, numeric)):
            facts["columns_skipped"] = listed - position
            break
        label = _column_key(labels[position])
        if label in columns:
            continue
        column_facts = {}
        try:
            if position in batched:
                column_facts = batched[position]
            else:
                with _unguarded_if(index_plain and _plain_dtype(dtype)):
                    _series_values(pd, np, iloc[:, position], run, entry, column_facts)
        except Exception as exc:
            column_facts["error"] = type(exc).__name__
        columns[label] = column_facts
        has_nan = has_nan or bool(column_facts.get("has_nan")) or column_facts.get("nulls", 0) > 0
        has_inf = has_inf or bool(column_facts.get("has_inf"))
    facts["has_nan"] = has_nan
    facts["has_inf"] = has_inf


def _numeric_batches(pd, np, obj, dtypes):
    """Value facts of the numpy-typed numeric columns of a small frame, computed one dtype at a
    time on a 2-D block (selecting and reducing column by column costs far more than the data of
    a small frame); empty for a large frame, where a block would copy much memory and the
    per-column overhead does not matter. The facts equal those of `_numeric_column_values`."""
    rows, width = (int(d) for d in obj.shape)
    groups = {}
    numeric = 0
    for position, dtype in enumerate(dtypes):
        if getattr(dtype, "kind", "O") in "fiub" and _module_of(type(dtype)).partition(".")[0] == "numpy":
            groups.setdefault(dtype, []).append(position)
            numeric += 1
    batched = {}
    if rows == 0:
        return batched
    # A frame of numeric columns only converts to one array far faster than columns are
    # selected; the columns of the array's (common) dtype are exact in it.
    whole = None
    if numeric == width and rows * width <= BATCH_ELEMENTS:
        whole = obj.to_numpy()
        if whole.shape != (rows, width):
            whole = None
    for dtype, positions in groups.items():
        if len(positions) < BATCH_COLUMNS or rows * len(positions) > BATCH_ELEMENTS:
            continue
        if whole is not None and whole.dtype == dtype:
            block = whole[:, positions]
        else:
            block = obj.iloc[:, positions].to_numpy()
        if block.dtype != dtype or block.shape != (rows, len(positions)):
            continue
        for position, facts in zip(positions, _block_values(pd, np, block)):
            batched[position] = facts
    return batched


def _block_values(pd, np, block):
    """Per-column value facts of a 2-D numeric block (one dtype, at least one row)."""
    kind = block.dtype.kind
    width = block.shape[1]
    first = np.sort(block[:PEEK_ELEMENTS], axis=0)
    if kind == "f":
        with np.errstate(all="ignore"):
            lowest = np.fmin.reduce(block, axis=0)
            highest = np.fmax.reduce(block, axis=0)
        nan_counts = np.count_nonzero(np.isnan(block), axis=0)
        infinite = np.isinf(lowest) | np.isinf(highest)
        # NaN sorts last: count the distinct values before it.
        valid = ~np.isnan(first)
        peeked = valid[0].astype(np.intp) + np.count_nonzero(valid[1:] & (first[1:] != first[:-1]), axis=0)
    else:
        lowest = block.min(axis=0)
        highest = block.max(axis=0)
        peeked = 1 + np.count_nonzero(first[1:] != first[:-1], axis=0)
    n_true = np.count_nonzero(block, axis=0) if kind == "b" else None
    out = []
    for j in range(width):
        stats = {}
        if kind == "f":
            stats["has_nan"] = bool(nan_counts[j])
            stats["has_inf"] = bool(infinite[j])
            stats["min"] = _number(float(lowest[j]), 6)
            stats["max"] = _number(float(highest[j]), 6)
            stats["nulls"] = int(nan_counts[j])
        elif kind in "iu":
            stats["min"] = _number(int(lowest[j]))
            stats["max"] = _number(int(highest[j]))
            stats["nulls"] = 0
        else:
            stats["n_true"] = int(n_true[j])
            stats["nulls"] = 0
        facts = {key: stats[key] for key in ("nulls", "min", "max", "has_nan", "has_inf") if key in stats}
        n_unique = _numeric_unique(pd, np, block[:, j], kind, stats, peeked=int(peeked[j]))
        if n_unique is not None:
            facts["n_unique"] = n_unique
        out.append(facts)
    return out


def _summarize_series(obj, entry, run):
    pd, np = _pandas(), _numpy()
    n = len(obj)
    entry["S"]["shape"] = [n]
    entry["S"]["len"] = n
    entry["R"]["dtype"] = str(obj.dtype)
    entry["R"]["name"] = _column_label(obj.name) if obj.name is not None else None
    entry["R"]["index"] = _index_facts(obj.index)

    def values():
        unique = _index_unique(obj.index, run, entry)
        if unique is not None:
            entry["V"]["index_unique"] = unique
        _series_values(pd, np, obj, run, entry, entry["V"])

    run.defer(
        entry,
        values,
        _scan_cost(n, getattr(obj.dtype, "kind", "O") in "fiubMm"),
        plain=_plain_pandas(obj),
    )


def _summarize_index(obj, entry, run):
    pd, np = _pandas(), _numpy()
    n = len(obj)
    entry["S"]["len"] = n
    entry["R"].update(_index_facts(obj))
    entry["R"]["dtype"] = str(obj.dtype)

    def values():
        unique = _index_unique(obj, run, entry)
        if unique is not None:
            entry["V"]["unique"] = unique
        if int(obj.nlevels) == 1 and _short(type(obj)) != "RangeIndex":
            _series_values(pd, np, obj.to_series(index=None), run, entry, entry["V"])
        elif _short(type(obj)) != "RangeIndex":
            entry["V"]["examples"] = [_label(x) for x in obj[:3]]

    run.defer(entry, values, _scan_cost(n, getattr(obj.dtype, "kind", "O") in "fiubMm"))


def _summarize_categorical(obj, entry, run):
    n = len(obj)
    entry["S"]["len"] = n
    entry["R"]["dtype"] = "category"
    categories = obj.categories
    entry["R"]["ordered"] = bool(obj.ordered)
    entry["R"]["categories_dtype"] = str(categories.dtype)
    entry["V"]["n_unique"] = len(categories)
    entry["V"]["examples"] = [_label(x) for x in categories[:MAX_ITEMS]]

    def values():
        codes = obj.codes
        entry["V"]["nulls"] = int((codes == -1).sum())

    run.defer(entry, values, n)


def _summarize_groupby(obj, entry, run):
    keys = _get(obj, "keys")
    if keys is not None:
        entry["R"]["keys"] = (
            [_label(k) for k in keys[:MAX_ITEMS]] if type(keys) is list else [_label(keys)]
        )
    grouped = _get(obj, "obj")
    if grouped is not None:
        entry["R"]["obj_type"] = _short(type(grouped))
        entry["S"]["obj_shape"] = _shape_list(_get(grouped, "shape"))
    selection = _instance_dict(obj).get("_selection")
    if selection is not None:
        entry["R"]["selection"] = (
            [_label(s) for s in selection[:MAX_ITEMS]] if type(selection) is list else _label(selection)
        )

    def groups():
        size = len(grouped) if grouped is not None else 0
        if size > NUMERIC_FULL_SCAN:
            entry["V"]["skipped"] = "n_groups: object too large"
            return
        entry["S"]["n_groups"] = int(obj.ngroups)

    shape = _get(grouped, "shape") if grouped is not None else None
    rows = shape[0] if type(shape) is tuple and shape and type(shape[0]) is int else 0
    run.defer(entry, groups, rows * OBJECT_ELEMENT_COST)
