"""The data `clzoo.eval.evaluate` accepts, made into a (train, test) pair of `Split`s."""

from pathlib import Path

import numpy as np


def train_test_split(images, labels, test_size=0.2, class_names=None, seed=0):
    """Stratified train/test split of in-memory images, as two `clzoo.data.Split`s.

    Each class keeps its proportion in both parts (scikit-learn's
    `train_test_split` with `stratify=labels`), so a kNN memory or probe
    sees every test class.

    Args:
        images: uint8 `(N, H, W, 3)` (grey `(N, H, W)` is repeated to RGB).
        labels: int `(N,)` class ids.
        test_size: fraction in (0, 1) or a number of test images. Defaults to `0.2`.
        class_names: names by label id. Defaults to `["0", "1", ...]`.
        seed: shuffling seed. Defaults to `0`.

    Returns:
        `(train, test)` `Split`s.

    Raises:
        ValueError: bad images or labels (see `clzoo.data.from_arrays`), a
            class with fewer than two images, or a `test_size` that leaves a
            part with fewer images than there are classes.

    Example:

    >>> import numpy as np, clzoo
    >>> images = np.zeros((10, 8, 8, 3), np.uint8)
    >>> train, test = clzoo.eval.train_test_split(images, np.arange(10) % 2, test_size=0.4)
    >>> len(train), len(test), np.bincount(test.labels).tolist()
    (6, 4, [2, 2])
    """
    from sklearn import model_selection

    from clzoo.data import from_arrays

    whole = from_arrays(images, labels, class_names)
    counts = np.bincount(whole.labels)
    if counts[counts > 0].min() < 2:
        raise ValueError("Every class needs at least two images to appear in both parts. "
                         f"Received: class sizes {counts.tolist()}")
    try:
        train, test = model_selection.train_test_split(
            np.arange(len(whole)), test_size=test_size, random_state=seed, stratify=whole.labels)
    except ValueError as error:  # sklearn's message names no argument
        raise ValueError(f"`test_size`={test_size!r} cannot split {len(whole)} images of "
                         f"{int(np.sum(counts > 0))} classes: {error}") from None
    return tuple(from_arrays(whole.images[np.sort(part)], whole.labels[np.sort(part)],
                             whole.class_names) for part in (train, test))


def _is_arrays(value):
    """`(images, labels)` of arrays, as opposed to a pair of splits."""
    return (isinstance(value, (tuple, list)) and len(value) == 2
            and all(isinstance(v, (np.ndarray, list)) for v in value)
            and np.ndim(value[0]) >= 2)  # flat (N, H*W) images reach from_arrays' message


def _as_split(value, name, class_names=None):
    from clzoo.data import Split, from_arrays

    if isinstance(value, Split):
        return value
    if _is_arrays(value):
        return from_arrays(value[0], value[1], class_names)
    raise ValueError(f"`{name}` must be a clzoo.data.Split or an (images, labels) pair of arrays. "
                     f"Received: {type(value).__name__}")


def resolve_data(data, train=None, class_names=None):
    """`(train_split, test_split, description)` of what `evaluate` was given.

    Args:
        data: a data spec string / path (`clzoo.data.load_split`) or the
            `clzoo.data.sources.DataSource` resolved from one, a pair
            `(train, test)` of `Split`s or of `(images, labels)` arrays (the
            `keras.datasets` `load_data()` form), or one `Split` / `(images,
            labels)`: the test set, with `train` given.
        train: the training `Split` or `(images, labels)`; with a spec it
            replaces the spec's train split (already loaded by the caller).
        class_names: names for array data.

    Raises:
        ValueError: an unrecognised `data`, or a test set without `train`.
    """
    from clzoo.data import Split
    from clzoo.data.sources import DataSource, data_source
    from clzoo.data.split_overlap import check_splits_apart

    if isinstance(data, (str, Path, DataSource)):
        source = data_source(str(data) if isinstance(data, Path) else data)
        train = _as_split(train, "train") if train is not None else source.load("train", stream="auto")
        test = source.load("test", stream="auto")
        check_splits_apart(train, test, str(source))
        return train, test, str(source)
    if isinstance(data, Split) or _is_arrays(data):
        if train is None:
            raise ValueError("`data` is one set of images: pass the training set as `train=`, or "
                             "split it with clzoo.eval.train_test_split(images, labels).")
        kind = "Split" if isinstance(data, Split) else "arrays"
        train, test = _as_split(train, "train", class_names), _as_split(data, "data", class_names)
        check_splits_apart(train, test, f"the in-memory {kind}")
        return train, test, f"in-memory {kind}"
    if isinstance(data, (tuple, list)) and len(data) == 2:
        if train is not None:
            raise ValueError("`train` was given twice: in `data=(train, test)` and as `train=`.")
        first, second = (_as_split(v, f"data[{i}]", class_names) for i, v in enumerate(data))
        kind = "Splits" if isinstance(data[0], Split) else "arrays"
        check_splits_apart(first, second, f"the in-memory {kind}")
        return first, second, f"in-memory {kind}"
    raise ValueError("`data` must be a data spec string, a clzoo.data.Split, (images, labels), "
                     f"or a (train, test) pair of them. Received: {type(data).__name__}")


def data_loading(split):
    """`"memory"` for a split held as an array, `"stream"` for one left in its files (an image
    folder's `FileImages`, a tfds split's `TfdsImages`: decoded a batch at a time)."""
    return "memory" if isinstance(split.images, np.ndarray) else "stream"


def data_line(train, test):
    """The line `clzoo eval` prints of where its splits are: held, or streamed from their files.

    Example:

    >>> import numpy as np
    >>> from clzoo.data import from_arrays
    >>> from clzoo.eval.splits import data_line
    >>> split = from_arrays(np.zeros((2, 4, 4, 3), np.uint8), [0, 1])
    >>> data_line(split, split)
    'data: train and test held in memory'
    """
    train_how, test_how = data_loading(train), data_loading(test)
    if train_how == test_how == "memory":
        return "data: train and test held in memory"
    if train_how == test_how:
        return "data: train and test streamed from their files (decoded, they exceed the memory budget)"
    streamed, held = ("train", "test") if train_how == "stream" else ("test", "train")
    return (f"data: {streamed} streamed from its files (decoded, it exceeds the memory budget); "
            f"{held} held in memory")
