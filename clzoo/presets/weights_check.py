"""Check a weights file's declared arrays against the model before any array is read.

An HDF5 dataset declares its shape in a few bytes; a chunked, compressed dataset of a
huge declared shape fits in a few KB, checksums and all, and would make a load allocate
what it declares. The built model says how much there is to read: no dataset Keras reads
for it may be larger than the model's largest weight, nor all of them together larger than
all of its. Links (soft, external) and external or virtual datasets, which point at data
outside what was checked, are refused.
"""

import math

# Top-level groups of a `.weights.h5` that loading an uncompiled model does not read.
UNREAD_GROUPS = ("optimizer",)


def check_weights_file(path, model):
    """Refuse `path` (a Keras `.weights.h5`) when it declares more than `model` holds.

    Args:
        path: the weights file, not yet loaded.
        model: the built `keras.Model` it is for.

    Raises:
        ValueError: a dataset larger than any weight of `model`, a total larger
            than all of them, or a link / external dataset; the message names it.

    Example:

    >>> import tempfile, pathlib, keras
    >>> from clzoo.presets.weights_check import check_weights_file
    >>> model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "m.weights.h5"
    >>> model.save_weights(path)
    >>> check_weights_file(path, model)  # 15 floats declared, 15 held: nothing to say
    >>> check_weights_file(path, keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)]))
    Traceback (most recent call last):
    ...
    ValueError: ...larger than the model's largest weight (16 bytes)
    """
    import h5py
    import numpy as np

    sizes = [math.prod(v.shape) * np.dtype(v.dtype).itemsize for v in model.weights]
    largest, budget = max(sizes, default=0), sum(sizes)
    with h5py.File(path, "r") as weights:
        declared = list(_datasets(weights, path))
    for name, shape, size in declared:
        if size > largest:
            raise ValueError(f"{path}: the array {name} declares shape {shape} ({size:,} bytes), "
                             f"larger than the model's largest weight ({largest:,} bytes)")
    total = sum(size for _, _, size in declared)
    if total > budget:
        raise ValueError(f"{path} declares {total:,} bytes of arrays, more than the model's "
                         f"{budget:,} bytes of weights")


# Config keys that size a layer's weights: each such size is a dimension of one of its arrays.
SIZE_KEYS = ("filters", "units", "kernel_size", "output_dim", "hidden_dim", "intermediate_dim",
             "mlp_dim", "embedding_dim", "input_dim", "num_heads", "key_dim", "depth_multiplier")


def check_config_sizes(config, weights_path, where):
    """Refuse a Keras `config` (before it is built) that sizes a layer larger than any array of
    its weights file: a tampered `config.json` declaring 3,000,000 filters would allocate them
    (1.2 GB) before the weights could disagree.

    Raises:
        ValueError: the first such size, with its key and the largest dimension in the file.
    """
    import h5py

    with h5py.File(weights_path, "r") as weights:
        shapes = [shape or () for _, shape, _ in _datasets(weights, weights_path)]
    largest = max((dim for shape in shapes for dim in shape), default=0)
    # a kernel's spatial size is a leading dimension of a rank-3+ array (a 1-D to 3-D conv kernel)
    spatial = max((dim for shape in shapes if len(shape) >= 3 for dim in shape[:-2]), default=largest)
    stack = [config]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key in SIZE_KEYS:
                bound = spatial if key == "kernel_size" else largest
                value = item.get(key)
                sizes = value if isinstance(value, (list, tuple)) else [value]
                if any(isinstance(v, int) and not isinstance(v, bool) and v > bound for v in sizes):
                    raise ValueError(f"{where} sets {key} = {value!r}, larger than the arrays in "
                                     f"{weights_path.name} hold ({bound:,}): it does not describe "
                                     "these weights")
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _datasets(group, path, prefix=""):
    """`(name, shape, declared bytes)` of every dataset Keras reads, walking links by hand."""
    import h5py

    for key in group:
        name = f"{prefix}{key}"
        if not prefix and key in UNREAD_GROUPS:
            continue
        link = group.get(key, getlink=True)
        if not isinstance(link, h5py.HardLink):
            raise ValueError(f"{path}: {name} is a {type(link).__name__}; weights files hold "
                             "their arrays themselves")
        item = group[key]
        if isinstance(item, h5py.Group):
            yield from _datasets(item, path, name + "/")
        elif isinstance(item, h5py.Dataset):
            if item.external or item.is_virtual:
                raise ValueError(f"{path}: {name} keeps its data outside the file; weights files "
                                 "hold their arrays themselves")
            yield name, item.shape, math.prod(item.shape or ()) * item.dtype.itemsize
