"""`ContrastiveModel.fit` / `evaluate` labels checked before Keras' data adapters read them.

Keras reports string labels as "Invalid dtype: str32" and ragged ones from deep
inside NumPy or its adapters, naming neither the labels nor what is expected.
"""

import numpy as np

_EXPECTED = ("`y` (the labels given to {method}) must be numeric class ids of shape (batch,) or "
             "(batch, 1), or label rows (batch, classes) for a loss with `label_similarity`. "
             "Received: {what}; {hint}")
_STRINGS = "map class names to integer ids first: ids = np.unique(y, return_inverse=True)[1]"
_RAGGED = ("give one id per sample, or pad to multi-hot rows (batch, classes) for a loss with "
           "label_similarity")


def _ragged_lengths(y):
    lengths = sorted({len(row) if hasattr(row, "__len__") else 1 for row in y})
    return f"a ragged list (rows of {lengths[0]} to {lengths[-1]} labels)"


def _array_problem(y):
    """`(what, hint)` for labels given as an array or list, or None when they are usable."""
    if isinstance(y, (list, tuple)):
        try:
            y = np.asarray(y)
        except ValueError:  # rows of different lengths
            return _ragged_lengths(y), _RAGGED
        if y.dtype == object and y.ndim == 1 and any(hasattr(r, "__len__") for r in y):
            return _ragged_lengths(y), _RAGGED
    if not isinstance(y, np.ndarray):
        return None
    if y.dtype.kind in "USO":
        return f"dtype {y.dtype} (strings or objects), shape {y.shape}", _STRINGS
    if y.dtype.kind == "c":
        return f"complex dtype {y.dtype}, shape {y.shape}", "pass real class ids"
    return None


def _tf_problem(y):
    """`(what, hint)` for TensorFlow labels (tensors, ragged tensors, dataset specs), or None."""
    module = type(y).__module__
    if not module.startswith("tensorflow"):
        return None
    import tensorflow as tf

    if isinstance(y, (tf.RaggedTensor, tf.RaggedTensorSpec)):
        return f"a ragged tensor of dtype {y.dtype.name}", _RAGGED
    if isinstance(y, (tf.SparseTensor, tf.SparseTensorSpec)):
        return f"a sparse tensor of dtype {y.dtype.name}", "pass a dense tensor"
    dtype = getattr(y, "dtype", None)
    if dtype is not None and dtype == tf.string:
        return f"a string tensor of shape {tuple(y.shape)}", _STRINGS
    return None


def _dataset_labels(x):
    """The label spec of a `tf.data.Dataset` of `(x, y, ...)` tuples, else None."""
    spec = getattr(x, "element_spec", None)
    if isinstance(spec, tuple) and len(spec) > 1:
        return spec[1]
    return None


def check_labels(x, y, method="fit"):
    """Refuse string, object, complex, ragged or sparse labels with one clear `ValueError`.

    `y` as given to `fit` / `evaluate`, or, when `x` is a `tf.data.Dataset`,
    the label part of its element spec. Other inputs (generators,
    `PyDataset`) are left to the loss's own checks.
    """
    if y is None:
        y = _dataset_labels(x)
    if y is None:
        return
    problem = _array_problem(y) or _tf_problem(y)
    if problem is not None:
        what, hint = problem
        raise ValueError(_EXPECTED.format(method=method, what=what, hint=hint))
