"""One resumable stream of training batches for every kind of example: `clzoo.data.batches`.

A training run is one `tf.data` stream of `epochs * (N // batch_size)` batches.
Every random draw (epoch order, each image's augmentation, each batch's
mixing or class choice) is a function of `seed` and a position in the run, so
the stream built with `start_step=s` yields exactly the batches an
uninterrupted stream yields from step `s` on: a checkpointed run resumes
where it stopped. Kinds:

- `"views"`: `views.views` augmented views of each image, integer labels
  (`ContrastiveModel`).
- `"soft_targets"`: one image (augmented if `views` is given), label-smoothed
  MixUp / CutMix soft targets (`SoftTargetInfoNCELoss`, cross-entropy).
- `"balanced"`: P x K batches (P classes, K images of each) of views, so every
  anchor has a positive.
"""

import numpy as np
import tensorflow as tf

from clzoo.data.batch_views import BatchViewConfig, batch_views, image_coins
from clzoo.data.sampler import class_balanced_indices
from clzoo.data.soft_targets import MixConfig, soft_target_mixer
from clzoo.data.split import Split
from clzoo.data.views import ViewConfig, augment_view, multi_view

KINDS = ("views", "soft_targets", "balanced")
_EPOCH_STRIDE = 1_000_003  # view seed of (epoch, position): (epoch * stride + seed, position)
_ONLY_FOR = {"mix": "soft_targets", "num_classes": "soft_targets", "samples_per_class": "balanced"}


def batches(split, kind="views", batch_size=256, seed=0, epochs=1, start_step=0, *, views=None,
            mix=None, num_classes=None, samples_per_class=None, shuffle=True):
    """The whole training run as one stream of batches, resumable at any step.

    Epoch `e` visits the images in an order fixed by `(seed, e)` (or in
    order with `shuffle=False`) and augments each from a seed fixed by
    `(seed, e, position)`; soft targets are mixed and P x K classes drawn
    from `(seed, step)`. So the batch at a global step is the same whether
    the run started at 0 or resumed at `start_step`. Batches never span two
    epochs: the last `N % batch_size` images of each epoch are left out.

    Args:
        split: a `clzoo.data.Split` (uint8 images `(N, H, W, 3)`, int labels `(N,)`).
        kind: `"views"`, `"soft_targets"` or `"balanced"`. Defaults to `"views"`.
        batch_size: global images per batch, in `[1, N]`. Defaults to `256`.
        seed: int. Defaults to `0`.
        epochs: epochs in the whole run, `>= 1`. Defaults to `1`.
        start_step: global step to start from, in `[0, epochs * (N // batch_size)]`.
            Defaults to `0`.
        views: `ViewConfig`, or for `"views"` a `BatchViewConfig` (airbench's
            batch-wise flip and translate). Defaults to the SupCon CIFAR views for `"views"` and
            `"balanced"`; for `"soft_targets"`, `None` (no augmentation), else one
            view (`views=1`).
        mix: `MixConfig`, `"soft_targets"` only. Defaults to `MixConfig()`.
        num_classes: width of the soft targets, `"soft_targets"` only.
            Defaults to `len(split.class_names)`.
        samples_per_class: K of `"balanced"` (required there); `batch_size` must
            be a multiple of it (P = `batch_size // K`, at most the classes present).
        shuffle: reshuffle each epoch (`False`: in order; not for `"balanced"`).
            Defaults to `True`.

    Returns:
        `tf.data.Dataset` of `epochs * (N // batch_size) - start_step` batches:
        - `"views"`, `"balanced"`: `(float32 (B, views, size, size, 3) in [0, 1], int32 (B,))`,
          `"balanced"` rows grouped by class;
        - `"soft_targets"`: `(float32 (B, size, size, 3) in [0, 1], float32 (B, num_classes))`,
          every target row summing to 1 (`(B, H, W, 3)` when `views` is None).

    Raises:
        TypeError: `split` is not a `Split`.
        ValueError: one line naming the argument and what it accepts: an unknown
            `kind`; `batch_size`, `epochs`, `seed`, `start_step` not an int or
            out of range; `views` / `mix` of the wrong type; `mix`, `num_classes`
            or `samples_per_class` with a kind that does not use them; labels
            outside `[0, num_classes)`; a P x K batch the split cannot fill.

    Example:

    >>> import numpy as np, clzoo
    >>> split = clzoo.data.from_arrays(np.zeros((12, 8, 8, 3), np.uint8), np.arange(12) % 3)
    >>> ds = clzoo.data.batches(split, "views", batch_size=4, epochs=3, start_step=2,
    ...                         views=clzoo.data.ViewConfig(size=8))
    >>> int(ds.cardinality()), tuple(next(iter(ds))[0].shape)
    (7, (4, 2, 8, 8, 3))
    >>> images, targets = next(iter(clzoo.data.batches(split, "soft_targets", batch_size=4)))
    >>> tuple(targets.shape), bool(np.allclose(targets.numpy().sum(1), 1.0))
    ((4, 3), True)
    """
    total = _check(split, kind, batch_size, seed, epochs, start_step, views, mix, num_classes,
                   samples_per_class, shuffle)
    if kind == "balanced":
        data = _balanced(split, views or ViewConfig(), batch_size, seed, start_step, total,
                         samples_per_class)
    else:
        positions = _positions(len(split), batch_size, seed, epochs, start_step, shuffle)
        images = tf.constant(split.images)
        labels = tf.constant(np.asarray(split.labels, dtype=np.int32))
        if isinstance(views, BatchViewConfig):  # augmented batch by batch
            data = positions.batch(batch_size, drop_remainder=True).map(
                _batch_view_loader(images, labels, views, seed),
                num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        else:
            if kind == "views":
                load = _view_loader(images, labels, views or ViewConfig(), seed)
            else:
                load = _image_loader(images, labels, views, seed)
            data = positions.map(load, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
            data = data.batch(batch_size, drop_remainder=True)
        if kind == "soft_targets":
            mixer = soft_target_mixer(mix or MixConfig(), int(num_classes or len(split.class_names)),
                                      seed)
            steps = tf.data.Dataset.range(start_step, start_step + total)
            data = tf.data.Dataset.zip((steps, data)).map(
                mixer, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    data = data.apply(tf.data.experimental.assert_cardinality(total))
    options = tf.data.Options()
    # Each worker keeps its slice of every global batch (MultiWorkerMirroredStrategy).
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    return data.with_options(options).prefetch(tf.data.AUTOTUNE)


def _is_int(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _check(split, kind, batch_size, seed, epochs, start_step, views, mix, num_classes,
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
    for name, value, low in (("seed", seed, None), ("epochs", epochs, 1)):
        if not _is_int(value) or (low is not None and value < low):
            raise ValueError(f"`{name}` must be an int{'' if low is None else f' >= {low}'}. "
                             f"Received: {name}={value!r}")
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


def _positions(n, batch_size, seed, epochs, start_step, shuffle):
    """`(epoch, position, index)` of every image the run visits from `start_step` on (int64)."""
    steps = n // batch_size
    per_epoch = steps * batch_size
    first_epoch, offset = divmod(int(start_step), steps)

    def epoch_order(epoch):
        order = tf.range(n, dtype=tf.int64)
        if shuffle:
            order = tf.random.experimental.stateless_shuffle(
                order, seed=tf.stack([tf.constant(int(seed), tf.int64), epoch]))
        return tf.data.Dataset.from_tensor_slices(
            (tf.fill([per_epoch], epoch), tf.range(per_epoch, dtype=tf.int64), order[:per_epoch]))

    return (tf.data.Dataset.range(first_epoch, int(epochs)).flat_map(epoch_order)
            .skip(offset * batch_size))


def _view_loader(images, labels, views, seed):
    def load(epoch, position, index):
        view_seed = tf.stack([epoch * _EPOCH_STRIDE + seed, position])
        return multi_view(tf.gather(images, index), view_seed, views), tf.gather(labels, index)

    return load


def _batch_view_loader(images, labels, views, seed):
    coins = image_coins(int(images.shape[0]), seed)

    def load(epoch, position, index):
        batch = batch_views(tf.gather(images, index), tf.constant(int(seed), tf.int64), epoch[0],
                            position[0], tf.gather(coins, index), views)
        return batch, tf.gather(labels, index)

    return load


def _image_loader(images, labels, views, seed):
    def load(epoch, position, index):
        image = tf.gather(images, index)
        if views is None:
            image = tf.image.convert_image_dtype(image, tf.float32)
        else:
            image = augment_view(image, tf.stack([epoch * _EPOCH_STRIDE + seed, position]), views)
        return image, tf.gather(labels, index)

    return load


def _balanced(split, views, batch_size, seed, start_step, total, samples_per_class):
    """P x K batches of views: classes and images from `(seed, step)`, views from `(seed + 1, step)`."""
    images = tf.constant(split.images)
    labels = tf.constant(np.asarray(split.labels, dtype=np.int32))
    spec = tf.TensorSpec((views.views, views.size, views.size, 3), tf.float32)

    def load(step, indices):
        image_seeds = tf.random.experimental.stateless_split(
            tf.stack([tf.cast(seed, tf.int64) + 1, step]), tf.shape(indices)[0])
        batch = tf.map_fn(lambda pair: multi_view(tf.gather(images, pair[0]), pair[1], views),
                          (indices, image_seeds), fn_output_signature=spec)
        return batch, tf.gather(labels, indices)

    indices = class_balanced_indices(split.labels, batch_size // samples_per_class,
                                     samples_per_class, seed, start_step=start_step).take(total)
    steps = tf.data.Dataset.range(start_step, start_step + total)
    return tf.data.Dataset.zip((steps, indices)).map(load, num_parallel_calls=tf.data.AUTOTUNE,
                                                     deterministic=True)
