"""tf.data pipelines: multi-view training batches and plain evaluation batches."""

import numpy as np
import tensorflow as tf

from clzoo.data.views import ViewConfig, multi_view


def contrastive_dataset(split, config=None, batch_size=256, seed=0, shuffle=True,
                        drop_remainder=True):
    """Batches of `(views, labels)` for `ContrastiveModel.fit`.

    Args:
        split: a `clzoo.data.Split` (uint8 images `(N, H, W, 3)`, labels `(N,)`).
        config: `ViewConfig`. Defaults to the SupCon CIFAR views.
        batch_size: images per batch (each gives `config.views` views).
            Defaults to `256`.
        seed: int; fixes shuffling and every augmentation draw, so an epoch
            is repeatable. Defaults to `0`.
        shuffle: reshuffle each epoch. Defaults to `True`.
        drop_remainder: drop the last partial batch. Defaults to `True`.

    Returns:
        `tf.data.Dataset` of `(float32 (batch, views, size, size, 3) in [0, 1],
        int32 (batch,))`.

    Raises:
        ValueError: if `batch_size` is not positive or exceeds the split size
            with `drop_remainder=True`.
    """
    config = config or ViewConfig()
    if batch_size < 1:
        raise ValueError(f"`batch_size` must be positive. Received: batch_size={batch_size!r}")
    if drop_remainder and batch_size > len(split):
        raise ValueError(
            f"`batch_size` ({batch_size}) exceeds the {len(split)} training images; "
            "lower it or pass drop_remainder=False."
        )
    images = tf.data.Dataset.from_tensor_slices((split.images, split.labels))
    if shuffle:
        images = images.shuffle(len(split), seed=seed, reshuffle_each_iteration=True)
    # One independent random stream per image, reproducible from `seed`.
    seeds = tf.data.Dataset.random(seed=seed + 1).batch(2)
    dataset = tf.data.Dataset.zip((images, seeds)).map(
        lambda pair, s: (multi_view(pair[0], s, config), pair[1]),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )
    return dataset.batch(batch_size, drop_remainder=drop_remainder).prefetch(tf.data.AUTOTUNE)


def shuffled_positions(n, batch_size, seed, epochs, start_step):
    """`(epoch, position, index)` of every image a run visits from `start_step` on, and its step count.

    Epoch `e` visits `index` in an order fixed by `(seed, e)`; the last
    `n % batch_size` images of each shuffled epoch are dropped so that
    batches never span two epochs.

    Returns:
        `(tf.data.Dataset of int64 triples, remaining steps)`.

    Raises:
        ValueError: if `batch_size` is not in `[1, n]` or `start_step` is out of range.
    """
    if isinstance(batch_size, bool) or not 1 <= int(batch_size) <= n:
        raise ValueError(f"`batch_size` must be between 1 and the {n} training images. "
                         f"Received: batch_size={batch_size!r}")
    steps = n // batch_size
    per_epoch = steps * batch_size
    total = int(epochs) * steps
    if not 0 <= int(start_step) <= total:
        raise ValueError(f"`start_step` must be in [0, {total}] ({epochs} epochs of {steps} steps). "
                         f"Received: start_step={start_step!r}")
    first_epoch, offset = divmod(int(start_step), steps)

    def epoch_order(epoch):
        order = tf.random.experimental.stateless_shuffle(
            tf.range(n, dtype=tf.int64), seed=tf.stack([tf.constant(int(seed), tf.int64), epoch]))
        return tf.data.Dataset.from_tensor_slices(
            (tf.fill([per_epoch], epoch), tf.range(per_epoch, dtype=tf.int64), order[:per_epoch]))

    stream = (tf.data.Dataset.range(first_epoch, int(epochs)).flat_map(epoch_order)
              .skip(offset * batch_size))
    return stream, total - int(start_step)


def training_batches(split, config=None, batch_size=256, seed=0, epochs=1, start_step=0):
    """The whole training run as one stream of `(views, labels)` batches, resumable at any step.

    Epoch `e` visits the images in an order fixed by `(seed, e)` and draws
    every view from a seed fixed by `(seed, e, position)`, so the batch at a
    global step is the same whether the run started at 0 or resumed from a
    checkpoint at `start_step`. Batches never span two epochs (the last
    `len(split) % batch_size` images of each shuffled epoch are dropped).

    Args:
        split: a `clzoo.data.Split` (uint8 images `(N, H, W, 3)`, labels `(N,)`).
        config: `ViewConfig`. Defaults to the SupCon CIFAR views.
        batch_size: global images per batch. Defaults to `256`.
        seed: int. Defaults to `0`.
        epochs: epochs in the whole run. Defaults to `1`.
        start_step: global step to start from (`0 <= start_step <= epochs * steps`).

    Returns:
        `tf.data.Dataset` of `(float32 (batch, views, size, size, 3) in [0, 1],
        int32 (batch,))`, `epochs * (N // batch_size) - start_step` batches.

    Raises:
        ValueError: if `batch_size` is not in `[1, N]` or `start_step` is out of range.

    Example:

    >>> import numpy as np, clzoo
    >>> split = clzoo.data.from_arrays(np.zeros((10, 8, 8, 3), np.uint8), np.arange(10) % 2)
    >>> ds = clzoo.data.training_batches(split, clzoo.data.ViewConfig(size=8), batch_size=4,
    ...                                  epochs=3, start_step=1)
    >>> int(ds.cardinality())
    5
    """
    config = config or ViewConfig()
    stream, total = shuffled_positions(len(split), batch_size, seed, epochs, start_step)
    images = tf.constant(split.images)
    labels = tf.constant(np.asarray(split.labels, dtype=np.int32))
    seed = int(seed)

    def load(epoch, position, index):
        view_seed = tf.stack([epoch * 1_000_003 + seed, position])
        return multi_view(tf.gather(images, index), view_seed, config), tf.gather(labels, index)

    dataset = stream.map(load, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    dataset = dataset.batch(batch_size, drop_remainder=True)
    dataset = dataset.apply(tf.data.experimental.assert_cardinality(total))
    options = tf.data.Options()
    # Each worker keeps its slice of every global batch (MultiWorkerMirroredStrategy).
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    return dataset.with_options(options).prefetch(tf.data.AUTOTUNE)


def eval_dataset(images, size=None, batch_size=512, pad=False):
    """Batches of float32 images in [0, 1] (resized to `size` if given), no labels.

    Args:
        images: uint8 `(N, H, W, 3)` (or float in [0, 1]).
        size: resize to `size x size`. Defaults to `None` (as is).
        batch_size: images per batch. Defaults to `512`.
        pad: append black images so that every batch holds `batch_size`
            images: one static input shape, so a compiled predict function is
            traced once per model instead of once more for the last partial
            batch. Drop the outputs past `N`. Defaults to `False`.
    """
    images = np.asarray(images)

    def prepare(x):
        x = tf.image.convert_image_dtype(x, tf.float32)
        if size is not None and tuple(images.shape[1:3]) != (size, size):
            x = tf.image.resize(x, (size, size))
        return x

    dataset = tf.data.Dataset.from_tensor_slices(images)
    padding = -len(images) % batch_size if pad else 0
    if padding:
        blank = tf.zeros(images.shape[1:], images.dtype)
        dataset = dataset.concatenate(tf.data.Dataset.from_tensors(blank).repeat(padding))
    return (dataset.batch(batch_size, drop_remainder=pad)
            .map(prepare, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE))
