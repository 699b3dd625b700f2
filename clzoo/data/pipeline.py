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


def eval_dataset(images, size=None, batch_size=512):
    """Batches of float32 images in [0, 1] (resized to `size` if given), no labels."""
    images = np.asarray(images)

    def prepare(x):
        x = tf.image.convert_image_dtype(x, tf.float32)
        if size is not None and tuple(images.shape[1:3]) != (size, size):
            x = tf.image.resize(x, (size, size))
        return x

    return (tf.data.Dataset.from_tensor_slices(images).batch(batch_size)
            .map(prepare, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE))
