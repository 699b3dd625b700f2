"""tf.data pipeline of plain evaluation batches (training batches: `clzoo.data.batches`)."""

import numpy as np
import tensorflow as tf


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
