"""airbench's augmentation, done on whole batches: alternating flip and reflect-pad translate.

airbench (Jordan 2024, sec. 3.6) augments with a horizontal flip and a random
translation of up to 2 pixels (a crop of the image padded by reflection), and
its flip alternates: every image is mirrored in every other epoch (a random
half of the images in even epochs, the other half in odd ones), which in its
ablation saves a tenth of the epochs against a flip drawn afresh each epoch.
Both run here as a few vectorized ops on the batch (a mask and two gathers),
not as per-image branches, so the pipeline costs far less than the per-image
`ViewConfig` views. Every draw is a function of the seed, the epoch and the
position in the epoch, so a run resumes by step (`clzoo.data.batches`).
"""

import tensorflow as tf

from clzoo.data.augmentation_settings import FLIPS, MAX_VIEWS, BatchViewConfig  # noqa: F401  (their old home)


def image_coins(count, seed):
    """`(count,)` bool: each image's own flip coin for the run (the alternating flip's phase)."""
    key = tf.stack([tf.cast(seed, tf.int64), tf.constant(-1, tf.int64)])
    return tf.random.stateless_uniform([count], key) < 0.5


def _flip_mask(config, seed, epoch, position, coins, view):
    """`(B,)` bool: which images of the batch are mirrored in view `view` of `epoch`."""
    if config.flip == "none":
        mask = tf.zeros(tf.shape(coins), tf.bool)
    elif config.flip == "random":
        key = tf.stack([seed * 1_000_003 + epoch, position * 16 + 15])
        mask = tf.random.stateless_uniform(tf.shape(coins), key) < 0.5
    else:  # the image's coin, inverted in odd epochs
        mask = tf.math.logical_xor(coins, tf.math.floormod(epoch, 2) == 1)
    return tf.math.logical_xor(mask, view % 2 == 1)


def _translate(images, shifts, pad):
    """Shift each image of `(B, H, W, C)` by its `(dy, dx)` in `shifts` `(B, 2)`, reflect-padded."""
    height, width = tf.shape(images)[1], tf.shape(images)[2]
    padded = tf.pad(images, [[0, 0], [pad, pad], [pad, pad], [0, 0]], mode="REFLECT")
    rows = pad - shifts[:, :1] + tf.range(height)[None]  # (B, H)
    cols = pad - shifts[:, 1:] + tf.range(width)[None]  # (B, W)
    images = tf.gather(padded, rows, axis=1, batch_dims=1)
    return tf.gather(images, cols, axis=2, batch_dims=1)


def batch_views(images, seed, epoch, position, coins, config):
    """The views of one batch: `(B, views, H, W, C)` float32 in [0, 1].

    Args:
        images: `(B, H, W, C)` uint8 images of the batch.
        seed: int64 scalar, the run's seed.
        epoch: int64 scalar, the batch's epoch.
        position: int64 scalar, the batch's first position in its epoch.
        coins: `(B,)` bool, the images' own flip coins (`image_coins` of the
            split, gathered): the alternating flip belongs to the image.
        config: `BatchViewConfig`.
    """
    images = tf.image.convert_image_dtype(images, tf.float32)
    out = []
    for view in range(config.views):
        mirrored = _flip_mask(config, seed, epoch, position, coins, view)
        view_images = tf.where(mirrored[:, None, None, None], tf.reverse(images, [2]), images)
        if config.translate:
            shifts = tf.random.stateless_uniform(
                (tf.shape(coins)[0], 2), tf.stack([seed * 1_000_003 + epoch, position * 16 + view]),
                minval=-config.translate, maxval=config.translate + 1, dtype=tf.int32)
            view_images = _translate(view_images, shifts, config.translate)
        out.append(view_images)
    return tf.stack(out, axis=1)
