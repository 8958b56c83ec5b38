# torch: tensors, modules and their layers, optimizers, datasets and data loaders.


def _summarize_tensor(obj, entry, run):
    entry["S"]["shape"] = _shape_list(obj.shape)
    entry["S"]["ndim"] = int(obj.dim())
    entry["R"]["dtype"] = str(obj.dtype)
    entry["R"]["device"] = str(obj.device)
    entry["R"]["requires_grad"] = bool(obj.requires_grad)
    numel = int(obj.numel())
    if obj.device.type == "meta" or (obj.device.type != "cpu" and numel > SMALL_VALUE_ITEMS):
        return
    if str(obj.layout) != "torch.strided":
        entry["R"]["layout"] = str(obj.layout)
        return
    if numel <= SMALL_VALUE_ITEMS:
        value = _small_value(obj.detach().cpu().tolist(), depth=obj.dim() + 1)
        if value is not _NO_JSON:
            entry["V"]["value"] = value
    plain = _is_library_class(type(obj))
    run.defer(entry, lambda: _tensor_values(obj, numel, entry, run), _scan_cost(numel, True), plain=plain)


def _tensor_values(obj, numel, entry, run):
    torch = _library("torch")
    if torch is None or numel == 0:
        return
    tensor = obj.detach()
    ranges = _sample_ranges(numel, True)
    if ranges is None:
        flat = tensor.reshape(-1)
    else:
        run.mark_sampled(entry)
        if tensor.is_contiguous():
            flat = tensor.view(-1)
            flat = torch.cat([flat[start:stop] for start, stop in ranges])
        else:
            # Whole rows, so that no more than the sample is ever copied.
            rows = int(tensor.shape[0])
            per_row = max(1, numel // max(rows, 1))
            length = max(1, NUMERIC_BLOCK_LEN // per_row)
            span = max(rows - length, 0)
            starts = sorted({i * span // (NUMERIC_BLOCKS - 1) for i in range(NUMERIC_BLOCKS)})
            flat = torch.cat(
                [tensor[start : start + length].reshape(-1)[: NUMERIC_BLOCK_LEN] for start in starts]
            )
    facts = entry["V"]
    if obj.is_floating_point():
        nan = torch.isnan(flat)
        has_nan = bool(nan.any())
        facts["has_nan"] = has_nan
        finite = flat[~nan] if has_nan else flat
        facts["has_inf"] = bool(torch.isinf(finite).any()) if finite.numel() else False
        if finite.numel():
            facts["min"] = _number(float(finite.min()), 6)
            facts["max"] = _number(float(finite.max()), 6)
    elif obj.dtype == torch.bool:
        facts["n_true"] = int(flat.sum())
    elif not obj.is_complex():
        facts["min"] = _number(int(flat.min()))
        facts["max"] = _number(int(flat.max()))


_LAYER_FIELDS = (
    "in_features",
    "out_features",
    "in_channels",
    "out_channels",
    "kernel_size",
    "num_embeddings",
    "embedding_dim",
    "input_size",
    "hidden_size",
    "num_layers",
    "num_features",
    "normalized_shape",
    "units",
    "filters",
)


def _layer_facts(layer):
    namespace = _instance_dict(layer)
    facts = {"type": _short(type(layer))}
    for key in _LAYER_FIELDS:
        value = namespace.get(key)
        rendered = _small_value(value)
        if value is not None and rendered is not _NO_JSON:
            facts[key] = rendered
    return facts


MAX_LAYERS_LISTED = 12


def _named_leaves(module):
    """Leaf modules with their dotted names, in registration order, read from the
    ``_modules`` dicts (no user code)."""
    named = []
    stack = [("", module)]
    seen = set()
    while stack and len(seen) < MAX_MODULES_WALKED:
        prefix, current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        children = _instance_dict(current).get("_modules")
        children = [(k, c) for k, c in children.items() if c is not None] if type(children) is dict else []
        if not children and current is not module:
            named.append((prefix, current))
        stack.extend((f"{prefix}.{k}" if prefix else str(k), c) for k, c in reversed(children))
    return named


def _torch_leaves(module, run):
    """Leaf modules in registration order, read from the ``_modules`` dicts (no user code)."""
    leaves = []
    stack = [module]
    seen = set()
    visited = 0
    while stack and visited < MAX_MODULES_WALKED:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        visited += 1
        children = _instance_dict(current).get("_modules") or {}
        children = [c for c in children.values() if c is not None]
        if not children:
            leaves.append(current)
        stack.extend(reversed(children))
    return leaves, seen


def _summarize_torch_module(obj, entry, run):
    namespace = _instance_dict(obj)
    children = [c for c in (namespace.get("_modules") or {}).values() if c is not None]
    entry["S"]["n_layers"] = len(children)
    if type(namespace.get("training")) is bool:
        entry["R"]["training"] = namespace["training"]
    leaves, modules = _torch_leaves(obj, run)
    shaped = [leaf for leaf in leaves if any(k in _instance_dict(leaf) for k in _LAYER_FIELDS)]
    chosen = shaped or leaves
    if chosen and chosen[0] is not obj:
        entry["S"]["first_layer"] = _layer_facts(chosen[0])
        entry["S"]["last_layer"] = _layer_facts(chosen[-1])
    if any(k in namespace for k in _LAYER_FIELDS):
        # A layer on its own (nn.Linear(4, 2)): its constructor facts are the contract.
        entry["S"]["layer"] = _layer_facts(obj)
    named = _named_leaves(obj)
    if len(named) > 1:
        entry["S"]["layers"] = [
            dict(name=name, **_layer_facts(leaf)) for name, leaf in named[:MAX_LAYERS_LISTED]
        ]
        if len(named) > MAX_LAYERS_LISTED:
            entry["S"]["layers_truncated"] = len(named) - MAX_LAYERS_LISTED
    n_params = 0
    n_trainable = 0
    device = dtype = None
    stack = [obj]
    seen = set()
    while stack:
        current = stack.pop()
        if id(current) in seen or len(seen) > MAX_MODULES_WALKED:
            continue
        seen.add(id(current))
        inner = _instance_dict(current)
        for parameter in (inner.get("_parameters") or {}).values():
            if parameter is None:
                continue
            count = int(parameter.numel())
            n_params += count
            if parameter.requires_grad:
                n_trainable += count
            if device is None:
                device = str(parameter.device)
                dtype = str(parameter.dtype)
        stack.extend(c for c in (inner.get("_modules") or {}).values() if c is not None)
    entry["S"]["n_params"] = n_params
    if n_trainable != n_params:
        entry["S"]["n_trainable"] = n_trainable
    if device is not None:
        entry["R"]["device"] = device
        entry["R"]["param_dtype"] = dtype


def _summarize_optimizer(obj, entry, run):
    groups = _instance_dict(obj).get("param_groups") or []
    entry["S"]["n_param_groups"] = len(groups)
    entry["S"]["n_params"] = sum(len(g.get("params", ())) for g in groups if type(g) is dict)
    if not groups or type(groups[0]) is not dict:
        return
    params = {}
    for key, value in groups[0].items():
        if key == "params":
            continue
        rendered = _small_value(value)
        if rendered is _NO_JSON:
            try:
                rendered = _number(float(value), 6)
            except Exception:
                continue
        if rendered is None or rendered is False:
            continue
        params[key] = rendered
        if len(params) >= 10:
            break
    entry["R"]["params"] = params
    if "lr" in params:
        entry["V"]["lr"] = params["lr"]


def _dataset_len(dataset):
    """The length of a dataset when library code computes it; None for user ``__len__``."""
    names = _class_names(type(dataset))
    namespace = _instance_dict(dataset)
    if ("torch", "TensorDataset") in names:
        tensors = _tensor_items(namespace.get("tensors"))
        if tensors is None:
            return None
        return int(tensors[0].shape[0]) if tensors else 0
    if ("torch", "Subset") in names:
        indices = namespace.get("indices")
        return _safe_len(indices)
    if ("torch", "ConcatDataset") in names:
        sizes = _plain_sequence(namespace.get("cumulative_sizes"))
        return int(sizes[-1]) if sizes and type(sizes[-1]) is int else 0
    return _safe_len(dataset)


def _summarize_dataset(obj, entry, run):
    names = _class_names(type(obj))
    namespace = _instance_dict(obj)
    n = _dataset_len(obj)
    if n is not None:
        entry["S"]["len"] = n
    elif _is_library_class(type(obj)) is False:
        entry["R"]["len_unknown"] = "user-defined __len__ not called"
    if ("torch", "IterableDataset") in names:
        entry["R"]["iterable"] = True
    if ("torch", "TensorDataset") in names:
        tensors = _tensor_items(namespace.get("tensors"))
        if tensors is not None:
            entry["R"]["tensors"] = [
                {"shape": _shape_list(t.shape), "dtype": str(t.dtype)} for t in tensors[:MAX_ITEMS]
            ]
    elif ("torch", "Subset") in names:
        entry["R"]["dataset_type"] = _short(type(namespace.get("dataset")))
        inner = _dataset_len(namespace.get("dataset"))
        if inner is not None:
            entry["S"]["dataset_len"] = inner
    if not _is_library_class(type(obj)):
        fields = _fields_of(obj)
        if fields:
            entry["R"]["fields"] = fields


def _summarize_dataloader(obj, entry, run):
    namespace = _instance_dict(obj)
    dataset = namespace.get("dataset")
    batch_size = namespace.get("batch_size")
    drop_last = bool(namespace.get("drop_last"))
    entry["R"]["dataset_type"] = _short(type(dataset))
    entry["R"]["drop_last"] = drop_last
    sampler = namespace.get("sampler")
    if sampler is not None:
        entry["R"]["sampler"] = _short(type(sampler))
        entry["R"]["shuffle"] = _short(type(sampler)) == "RandomSampler"
    if type(namespace.get("num_workers")) is int:
        entry["R"]["num_workers"] = namespace["num_workers"]
    collate = namespace.get("collate_fn")
    if collate is not None:
        name = _static_get(collate, "__name__")
        if type(name) is str and name != "default_collate":
            entry["R"]["collate_fn"] = name
    if type(batch_size) is int:
        entry["S"]["batch_size"] = batch_size
    if namespace.get("_dataset_kind") == 1 or _find_class(type(dataset), "torch", "IterableDataset"):
        entry["R"]["iterable"] = True
        return
    n = _dataset_len(dataset) if dataset is not None else None
    if n is None:
        entry["R"]["len_unknown"] = "dataset has a user-defined __len__"
        if not _is_library_class(type(dataset)):
            fields = _fields_of(dataset)
            if fields:
                entry["R"]["dataset_fields"] = fields
        return
    entry["S"]["n_samples"] = n
    batch_sampler = namespace.get("batch_sampler")
    if type(batch_size) is int and batch_size > 0 and (
        batch_sampler is None or _short(type(batch_sampler)) == "BatchSampler"
    ):
        batches = n // batch_size if drop_last else -(-n // batch_size)
        entry["S"]["n_batches"] = batches
        entry["S"]["len"] = batches
