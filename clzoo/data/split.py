"""A labelled split as arrays: `Split`, and `from_arrays` that checks arrays a user brings.

Every source (`clzoo.data.sources`) and every label set (`clzoo.data.label_sets`) gives a
`Split`; it lives here, below both, so neither imports the other for it.
"""

from dataclasses import dataclass

import numpy as np


@dataclass
class Split:
    """One split of a labelled image dataset.

    Attributes:
        images: uint8 array `(N, H, W, 3)`.
        labels: int32 array `(N,)`, values in `[0, len(class_names))`.
        class_names: list of class names, index = label.
        fine_labels: for a derived coarse label set, the original labels
            `(N,)`; else None.
        fine_class_names: names of the fine labels, or None.
        paths: for an image folder (no derived label set), the file of each
            row, str `(N,)` in row order; else None.
        fingerprint: for a tfds split in ArrayRecord files, held or streamed,
            the digest of its records (`TfdsImages.fingerprint`), which a
            resumed run compares; else None.
        labelled: False for an unlabelled image folder (`clzoo.data.unlabelled`): every label is
            0 and `class_names` is `["(unlabelled)"]`; True otherwise.
    """

    images: np.ndarray
    labels: np.ndarray
    class_names: list
    fine_labels: np.ndarray = None
    fine_class_names: list = None
    paths: list = None
    fingerprint: str = None
    labelled: bool = True

    def __len__(self):
        return len(self.labels)

    def as_dataset(self):
        """`tf.data.Dataset` of `(uint8 (H, W, 3) image, int32 label)` pairs (class names: `class_names`)."""
        import tensorflow as tf

        return tf.data.Dataset.from_tensor_slices((self.images, self.labels))


def from_arrays(images, labels, class_names=None):
    """A `Split` from in-memory arrays, checked; nothing is coerced silently.

    Args:
        images: uint8 `(N, H, W, 3)` (or `(N, H, W)` / `(N, H, W, 1)` grey,
            repeated to RGB).
        labels: int `(N,)` (or `(N, 1)`, the `keras.datasets` form) in
            `[0, len(class_names))`.
        class_names: Defaults to `["0", "1", ...]` up to the largest label.

    Raises:
        ValueError: one line naming the argument, the dtype and shape
            received and what to do: float images (even whole numbers in
            0..255: cast them yourself), flat `(N, H*W)` rows, channels
            first or other than 1 / 3; labels that are not integer ids, a
            label/image count mismatch, labels out of range.

    Example:

    >>> import numpy as np, clzoo
    >>> split = clzoo.data.from_arrays(np.zeros((2, 8, 8, 3), np.uint8), [0, 1])
    >>> len(split), split.class_names
    (2, ['0', '1'])
    """
    images = _checked_images(images)
    labels = _checked_labels(labels)
    if len(labels) != len(images):
        raise ValueError(f"{len(images)} images but {len(labels)} labels.")
    classes = list(class_names) if class_names is not None else [
        str(i) for i in range(int(labels.max()) + 1 if labels.size else 0)]
    if labels.size and (labels.min() < 0 or labels.max() >= len(classes)):
        raise ValueError(
            f"Labels must lie in [0, {len(classes)}) (one per class name). "
            f"Received: min={labels.min()}, max={labels.max()}"
        )
    return Split(images, labels.astype(np.int32), classes)


_IMAGES_EXPECTED = ("`images` must be uint8 of shape (N, H, W) or (N, H, W, C) with C = 1 or 3 "
                    "(values 0..255). Received: {what}; {hint}")


def _checked_images(images):
    """uint8 `(N, H, W, 3)` from `images`, or a `ValueError` saying what was received and what to do."""
    try:
        images = np.asarray(images)
    except ValueError:  # a list of images of different sizes
        raise ValueError(_IMAGES_EXPECTED.format(what="images of different shapes",
                                                 hint="resize them to one (H, W) first")) from None
    shape_hint = _image_shape_hint(images.shape)
    dtype_hint = None if images.dtype == np.uint8 else _image_dtype_hint(images)
    if shape_hint or dtype_hint:
        what = f"{images.dtype} array of shape {images.shape}"
        hint = "; ".join(h for h in (dtype_hint, shape_hint) if h)
        raise ValueError(_IMAGES_EXPECTED.format(what=what, hint=hint))
    if images.ndim == 3:
        images = images[..., None]
    return np.repeat(images, 3, axis=-1) if images.shape[-1] == 1 else images


def _image_shape_hint(shape):
    """What to do with an image array of `shape`, or None when the shape is accepted."""
    if len(shape) == 3 or (len(shape) == 4 and shape[-1] in (1, 3)):
        return None
    if len(shape) == 2:
        side, grey = _square_side(shape[1]), _square_side(shape[1] / 3)
        if side:
            return f"flat rows of {shape[1]} pixels: reshape to (N, {side}, {side})"
        if grey:
            return f"flat rows of {shape[1]} values: reshape to (N, {grey}, {grey}, 3)"
        return "one row per image: reshape to (N, H, W) or (N, H, W, C)"
    if len(shape) == 4 and shape[1] in (1, 3):
        return "channels first: np.transpose(images, (0, 2, 3, 1))"
    if len(shape) == 4 and shape[-1] == 4:
        return "RGBA: drop (or composite) the alpha channel, e.g. images[..., :3]"
    if len(shape) == 4:
        return f"{shape[-1]} channels: give 1 (grey) or 3 (RGB)"
    return f"rank {len(shape)}: one (H, W) or (H, W, C) image per row"


def _square_side(n):
    side = int(round(n ** 0.5)) if n >= 1 else 0
    return side if side > 1 and side * side == n else None


def _image_dtype_hint(images):
    """What to do with non-uint8 pixel values (never done silently: the scale is the user's)."""
    if images.dtype.kind not in "fiub":
        return f"dtype {images.dtype} is not pixel values"
    if images.size == 0:
        return "cast to uint8"
    if images.dtype.kind == "b":
        return "booleans: images.astype(np.uint8) * 255"
    if images.dtype.kind == "f" and not np.all(np.isfinite(images)):
        return "it holds NaN or inf"
    low, high = images.min(), images.max()
    if images.dtype.kind == "f" and low >= 0 and high <= 1:
        return ("floats in [0, 1]: (images * 255).round().astype(np.uint8) (or images.astype(np.uint8) "
                "if they are already 0..255 levels)")
    whole = images.dtype.kind != "f" or np.all(images == np.round(images))
    if whole and low >= 0 and high <= 255:
        return f"whole numbers in [{low}, {high}]: cast them with images.astype(np.uint8)"
    return f"values in [{low}, {high}]: rescale to 0..255, then images.astype(np.uint8)"


def _checked_labels(labels):
    """int `(N,)` labels (an `(N, 1)` column is flattened), or a `ValueError` naming `labels`."""
    try:
        labels = np.asarray(labels)
    except ValueError:
        raise ValueError("`labels` must be integer class ids of shape (N,). Received: a ragged "
                         "list; give one id per image") from None
    if labels.ndim == 2 and labels.shape[1] == 1:
        labels = labels[:, 0]
    if labels.ndim == 1 and np.issubdtype(labels.dtype, np.integer):
        return labels
    hint = ""
    if labels.dtype.kind in "USO":
        hint = "; map class names to ids: np.unique(labels, return_inverse=True)[1]"
    elif labels.dtype.kind == "f":
        hint = "; cast whole-number floats with labels.astype(int)"
    raise ValueError(f"`labels` must be integer class ids of shape (N,) or (N, 1). Received: "
                     f"{labels.dtype} array of shape {labels.shape}{hint}")
