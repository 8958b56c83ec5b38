# matplotlib: figures and axes.


def _grid_of(axes):
    spec = _get(axes, "get_subplotspec")
    try:
        subplot = spec() if spec is not None else None
        if subplot is None:
            return None
        rows, cols = subplot.get_gridspec().get_geometry()
        return [int(rows), int(cols)]
    except Exception:
        return None


def _summarize_figure(obj, entry, run):
    axes = _get(obj, "axes") or []
    entry["S"]["n_axes"] = len(axes)
    if axes:
        grid = _grid_of(axes[0])
        if grid is not None:
            entry["S"]["grid"] = grid
    size = _get(obj, "get_size_inches")
    try:
        entry["R"]["figsize"] = [_number(float(x), 4) for x in size()]
    except Exception:
        pass


def _summarize_axes(obj, entry, run):
    grid = _grid_of(obj)
    if grid is not None:
        entry["S"]["grid"] = grid
    for key in ("title", "xlabel", "ylabel"):
        getter = _get(obj, "get_" + key)
        try:
            text = getter()
        except Exception:
            continue
        if type(text) is str and text:
            entry["R"][key] = _truncate(text, MAX_STR)[0]
    for key in ("lines", "patches", "collections", "images"):
        items = _get(obj, key)
        try:
            if items is not None and len(items):
                entry["S"]["n_" + key] = len(items)
        except Exception:
            pass
