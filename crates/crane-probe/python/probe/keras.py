# TensorFlow and Keras: tensors, models and layers, datasets, Keras iterators and training
# histories.


def _summarize_tf_tensor(obj, entry, run):
    shape = _get(obj, "shape")
    if type(shape) is tuple:
        dims = _shape_list(shape)
    else:
        dims = _shape_list(shape) if shape is not None and _get(shape, "rank") is not None else None
    if dims is not None:
        entry["S"]["shape"] = dims
        entry["S"]["ndim"] = len(dims)
    dtype = _get(obj, "dtype")
    name = _get(dtype, "name") if dtype is not None else None
    if type(name) is str:
        entry["R"]["dtype"] = name
    elif dtype is not None:
        entry["R"]["dtype"] = str(dtype)
    if _find_class(type(obj), "tensorflow", "Variable") is not None:
        entry["R"]["variable"] = True
        trainable = _get(obj, "trainable")
        if type(trainable) is bool:
            entry["R"]["trainable"] = trainable
    names = _class_names(type(obj))
    eager = ("tensorflow", "_EagerTensorBase") in names or ("tensorflow", "Variable") in names
    if not eager or dims is None or any(d is None for d in dims):
        return
    numel = 1
    for d in dims:
        numel *= d
    np = _numpy()
    if np is None or numel > NUMERIC_FULL_SCAN:
        return

    def values():
        array = obj.numpy()
        if numel <= SMALL_VALUE_ITEMS and array.dtype.kind not in "OV":
            value = _small_value(array.tolist(), depth=len(dims) + 1)
            if value is not _NO_JSON:
                entry["V"]["value"] = value
        if array.dtype.kind in "fiub":
            _numeric_stats(np, array, entry["V"])

    run.defer(entry, values, numel)


def _name_of(thing):
    if thing is None:
        return None
    if type(thing) is str:
        return thing
    name = _static_get(thing, "__name__")
    if type(name) is str:
        return name
    name = _static_get(thing, "name")
    if type(name) is str:
        return name
    return _short(type(thing))


def _keras_layer_facts(layer, shapes=False):
    facts = {"type": _short(type(layer))}
    name = _static_get(layer, "name")
    if type(name) is str:
        facts["name"] = _truncate(name, MAX_EXAMPLE_STR)[0]
    if shapes:
        output = _static_get(layer, "output")
        shape = _get(output, "shape") if output is not None and not _opaque(output) else None
        if shape is not None:
            facts["output_shape"] = _shape_list(shape)
    for key in ("units", "filters", "kernel_size", "rate", "output_dim", "input_dim"):
        value = _small_value(_static_get(layer, key))
        if value is not _NO_JSON and value is not None:
            facts[key] = value
    activation = _static_get(layer, "activation")
    if activation is not None:
        facts["activation"] = _name_of(activation)
    return facts


def _summarize_keras_model(obj, entry, run):
    built = _static_get(obj, "built")
    if type(built) is bool:
        entry["V"]["built"] = built
    compiled = _static_get(obj, "compiled")
    if type(compiled) is not bool:
        compiled = _static_get(obj, "_is_compiled")
    if type(compiled) is bool:
        entry["V"]["compiled"] = compiled
    layers = _static_get(obj, "layers")
    if type(layers) is list:
        entry["S"]["n_layers"] = len(layers)
        if layers:
            entry["S"]["first_layer"] = _keras_layer_facts(layers[0])
            entry["S"]["last_layer"] = _keras_layer_facts(layers[-1])
            entry["S"]["layers"] = [_keras_layer_facts(layer, shapes=bool(built)) for layer in layers[:MAX_LAYERS_LISTED]]
            if len(layers) > MAX_LAYERS_LISTED:
                entry["S"]["layers_truncated"] = len(layers) - MAX_LAYERS_LISTED
            activation = entry["S"]["last_layer"].get("activation")
            if activation is not None:
                entry["R"]["last_activation"] = activation
    if built:
        count = _static_get(obj, "count_params")
        try:
            entry["S"]["n_params"] = int(count())
        except Exception:
            pass
        for side, key in (("inputs", "input_shape"), ("outputs", "output_shape")):
            tensors = _static_get(obj, side)
            if _type_in(tensors, (list, tuple)) and tensors:
                entry["S"][key] = _shape_list(_get(tensors[0], "shape"))
                if len(tensors) > 1:
                    entry["S"]["n_" + side] = len(tensors)
    # Keras 3 on TensorFlow keeps each step function it traced on the model until the next
    # compile: a later call with inputs of another shape retraces it with that dimension
    # relaxed, so a width the weights refuse fails in TensorFlow's kernel, not in Keras' check.
    if ("keras", "TensorFlowTrainer") in _class_names(type(obj)):
        entry["R"]["backend"] = "tensorflow"
    traced = [step for step in ("train", "test", "predict") if _static_get(obj, step + "_function") is not None]
    if traced:
        entry["R"]["traced"] = traced
    if compiled:
        optimizer = _static_get(obj, "optimizer")
        if optimizer is not None:
            entry["R"]["optimizer"] = _short(type(optimizer))
        loss = _static_get(obj, "loss")
        if loss is not None:
            entry["R"]["loss"] = (
                _name_of(loss) if type(loss) is not dict else {k: _name_of(v) for k, v in loss.items()}
            )
        config = _static_get(obj, "_compile_config")
        settings = _static_get(config, "config") if config is not None else None
        metrics = settings.get("metrics") if type(settings) is dict else None
        if _type_in(metrics, (list, tuple)):
            entry["R"]["metrics"] = [_name_of(m) for m in metrics[:MAX_ITEMS]]
        elif metrics is not None:
            entry["R"]["metrics"] = [_name_of(metrics)]


def _summarize_keras_layer(obj, entry, run):
    entry["R"].update(_keras_layer_facts(obj))
    built = _static_get(obj, "built")
    if type(built) is bool:
        entry["V"]["built"] = built
    if built:
        count = _static_get(obj, "count_params")
        try:
            entry["S"]["n_params"] = int(count())
        except Exception:
            pass


def _summarize_tf_dataset(obj, entry, run):
    spec = _get(obj, "element_spec")
    if spec is not None:
        entry["R"]["element_spec"] = _truncate(repr(spec), 300)[0]
    cardinality = _get(obj, "cardinality")
    try:
        entry["S"]["n_samples"] = int(cardinality())
    except Exception:
        pass


def _summarize_keras_iterator(obj, entry, run):
    namespace = _instance_dict(obj)
    n = namespace.get("n", namespace.get("samples"))
    batch_size = namespace.get("batch_size")
    if type(n) is int:
        entry["S"]["n_samples"] = n
    if type(batch_size) is int:
        entry["S"]["batch_size"] = batch_size
        if type(n) is int and batch_size > 0:
            entry["S"]["n_batches"] = -(-n // batch_size)
            entry["S"]["len"] = entry["S"]["n_batches"]
    image_shape = namespace.get("image_shape")
    if image_shape is not None:
        entry["S"]["image_shape"] = _shape_list(image_shape)
    for key in ("class_mode", "color_mode", "data_format", "subset"):
        value = namespace.get(key)
        if type(value) is str:
            entry["R"][key] = value
    if type(namespace.get("shuffle")) is bool:
        entry["R"]["shuffle"] = namespace["shuffle"]
    x = namespace.get("x")
    if x is not None and _get(x, "shape") is not None:
        entry["S"]["x_shape"] = _shape_list(_get(x, "shape"))
    class_indices = namespace.get("class_indices")
    if type(class_indices) is dict:
        entry["V"]["n_classes"] = namespace.get("num_classes", len(class_indices))
        entry["V"]["classes"] = [_label(k) for k in list(class_indices)[:MAX_NAMES]]


def _summarize_history(obj, entry, run):
    namespace = _instance_dict(obj)
    history = namespace.get("history")
    epochs = namespace.get("epoch")
    if type(history) is dict:
        entry["V"]["history_keys"] = [_label(k) for k in list(history)[:MAX_NAMES]]
        last = {}
        for key, values in list(history.items())[:MAX_NAMES]:
            if type(values) is list and values:
                value = _scalar_json(values[-1], digits=6)
                if value is not _NO_JSON:
                    last[_column_key(_label(key))] = value
        if last:
            entry["V"]["last"] = last
    if type(epochs) is list:
        entry["V"]["epochs"] = len(epochs)
