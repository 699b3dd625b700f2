"""Check a weights file's declared arrays against the model before any array is read.

An HDF5 dataset declares its shape in a few bytes; a chunked, compressed dataset of a
huge declared shape fits in a few KB, checksums and all, and would make a load allocate
what it declares. The built model says how much there is to read: no dataset may be
larger than the model's largest weight, nor all of them together larger than all of its.
"""

import math


def check_weights_file(path, model):
    """Refuse `path` (a Keras `.weights.h5`) when it declares more than `model` holds.

    Args:
        path: the weights file, not yet loaded.
        model: the built `keras.Model` it is for.

    Raises:
        ValueError: a dataset larger than any weight of `model`, or a total larger
            than all of them; the message names the dataset and both sizes.
    """
    import h5py
    import numpy as np

    sizes = [math.prod(v.shape) * np.dtype(v.dtype).itemsize for v in model.weights]
    largest, budget = max(sizes, default=0), sum(sizes)
    declared = []

    def visit(name, item):
        if isinstance(item, h5py.Dataset):
            declared.append((name, item.shape, math.prod(item.shape or ()) * item.dtype.itemsize))

    with h5py.File(path, "r") as weights:
        weights.visititems(visit)
    for name, shape, size in declared:
        if size > largest:
            raise ValueError(f"{path}: the array {name} declares shape {shape} ({size:,} bytes), "
                             f"larger than the model's largest weight ({largest:,} bytes)")
    total = sum(size for _, _, size in declared)
    if total > budget:
        raise ValueError(f"{path} declares {total:,} bytes of arrays, more than the model's "
                         f"{budget:,} bytes of weights")
