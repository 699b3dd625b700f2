"""The arguments of a training stream, checked before any batch is made (both pipelines).

`clzoo.data.batches` (tf.data) and `clzoo.data.device_batches` (on the device) take the
same arguments and refuse the same values, with the same one-line messages.
"""

import numpy as np

from clzoo.data.augmentation_settings import BatchViewConfig, MixConfig, ViewConfig
from clzoo.data.split import Split

KINDS = ("views", "soft_targets", "balanced")
_ONLY_FOR = {"mix": "soft_targets", "num_classes": "soft_targets", "samples_per_class": "balanced"}


def _is_int(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


SEEDS = 2**32  # seeds are 0 .. 2**32 - 1, as NumPy's and Keras' `set_random_seed` take them


def check_stream(split, kind, batch_size, seed, epochs, start_step, views, mix, num_classes,
                 samples_per_class, shuffle):
    """Batches left to yield from `start_step`; raises for every argument `batches` refuses."""
    if not isinstance(split, Split):
        raise TypeError("`split` must be a clzoo.data.Split (from clzoo.data.load_split or "
                        f"clzoo.data.from_arrays). Received: {type(split).__name__}")
    if kind not in KINDS:
        raise ValueError(f"`kind` must be one of {', '.join(map(repr, KINDS))}. Received: kind={kind!r}")
    for name, value in (("mix", mix), ("num_classes", num_classes),
                        ("samples_per_class", samples_per_class)):
        if value is not None and kind != _ONLY_FOR[name]:
            raise ValueError(f"`{name}` is used only with kind={_ONLY_FOR[name]!r}. "
                             f"Received: kind={kind!r}, {name}={value!r}")
    n = len(split)
    if not _is_int(batch_size) or not 1 <= batch_size <= n:
        raise ValueError(f"`batch_size` must be an int between 1 and the {n} training images. "
                         f"Received: batch_size={batch_size!r}")
    if not _is_int(seed) or not 0 <= seed < SEEDS:  # NumPy's seeds; the device stream's draws
        raise ValueError(f"`seed` must be an int in [0, 2**32). Received: seed={seed!r}")
    if not _is_int(epochs) or epochs < 1:
        raise ValueError(f"`epochs` must be an int >= 1. Received: epochs={epochs!r}")
    total = int(epochs) * (n // batch_size)
    if not _is_int(start_step) or not 0 <= start_step <= total:
        raise ValueError(f"`start_step` must be an int in [0, {total}] ({epochs} epochs of "
                         f"{n // batch_size} steps). Received: start_step={start_step!r}")
    if not isinstance(shuffle, bool):
        raise ValueError(f"`shuffle` must be True or False. Received: shuffle={shuffle!r}")
    if isinstance(views, BatchViewConfig) and kind != "views":
        raise ValueError(f"a BatchViewConfig (airbench's batch-wise views) works with kind='views' "
                         f"only. Received: kind={kind!r}")
    if views is not None and not isinstance(views, (ViewConfig, BatchViewConfig)):
        raise ValueError("`views` must be a clzoo.data.ViewConfig, a clzoo.data.BatchViewConfig or "
                         f"None. Received: views={views!r}")
    if isinstance(views, BatchViewConfig) and tuple(split.images.shape[1:3]) != (views.size,) * 2:
        raise ValueError(f"BatchViewConfig does not resize: the images must be {views.size}x"
                         f"{views.size}. Received: images of shape {tuple(split.images.shape[1:])}")
    if kind == "soft_targets":
        _check_soft_targets(split, views, mix, num_classes)
    if kind == "balanced":
        _check_balanced(split, batch_size, samples_per_class, shuffle)
    return total - int(start_step)


def _check_soft_targets(split, views, mix, num_classes):
    if views is not None and views.views != 1:
        raise ValueError("kind='soft_targets' draws one view per image: `views` must have views=1. "
                         f"Received: views.views={views.views!r}")
    if mix is not None and not isinstance(mix, MixConfig):
        raise ValueError(f"`mix` must be a clzoo.data.MixConfig or None. Received: mix={mix!r}")
    if num_classes is not None and (not _is_int(num_classes) or num_classes < 1):
        raise ValueError("`num_classes` must be a positive int or None. "
                         f"Received: num_classes={num_classes!r}")
    classes = int(num_classes or len(split.class_names))
    labels = np.asarray(split.labels)
    if labels.size and (labels.min() < 0 or labels.max() >= classes):
        raise ValueError(f"Labels must lie in [0, {classes}) (`num_classes`={classes}). "
                         f"Received: min={labels.min()}, max={labels.max()}")


def _check_balanced(split, batch_size, samples_per_class, shuffle):
    if not _is_int(samples_per_class) or samples_per_class < 1:
        raise ValueError("kind='balanced' needs `samples_per_class`, a positive int (K of a P x K "
                         f"batch). Received: samples_per_class={samples_per_class!r}")
    if batch_size % samples_per_class:
        raise ValueError(f"kind='balanced' needs `batch_size` a multiple of `samples_per_class` "
                         f"(P x K). Received: batch_size={batch_size}, "
                         f"samples_per_class={samples_per_class}")
    if not shuffle:
        raise ValueError("kind='balanced' draws its classes at random; shuffle=False is not "
                         "available there. Received: shuffle=False")


def check_shard(shard, batch_size):
    """`(index, count)` of a valid `shard` (`(0, 1)` for None): this process's rows
    `[index * B / count, (index + 1) * B / count)` of every global batch of `batch_size` B.

    Raises:
        ValueError: not `(index, count)` with `0 <= index < count`, or `count` not dividing
            `batch_size`, naming `shard`.
    """
    if shard is None:
        return 0, 1
    try:
        index, count = (int(v) for v in shard)
        valid = [int(v) for v in shard] == list(shard) and 0 <= index < count
    except (TypeError, ValueError):
        valid = False
    if not valid:
        raise ValueError(f"`shard` must be (index, count) with 0 <= index < count. Received: {shard!r}")
    if batch_size % count:
        raise ValueError(f"`shard` count {count} must divide batch_size {batch_size}")
    return index, count
