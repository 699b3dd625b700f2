"""Plain evaluation batches (training batches: `clzoo.data.batches` / `device_batches`).

A `tf.data` pipeline where TensorFlow is installed (what every figure so far was
measured with); without it, a `keras.utils.PyDataset` of the same batches, resized
with `keras.ops.image.resize` (bilinear, half-pixel centres, as `tf.image.resize`).
"""

import numpy as np


def eval_dataset(images, size=None, batch_size=512, pad=False):
    """Batches of float32 images in [0, 1] (resized to `size` if given), no labels.

    Args:
        images: uint8 `(N, H, W, 3)` (or float in [0, 1]), or a file-backed
            `clzoo.data.file_images.FileImages` (decoded one batch at a time).
        size: resize to `size x size`. Defaults to `None` (as is).
        batch_size: images per batch. Defaults to `512`.
        pad: append black images so that every batch holds `batch_size`
            images: one static input shape, so a compiled predict function is
            traced once per model instead of once more for the last partial
            batch. Drop the outputs past `N`. Defaults to `False`.

    Returns:
        a `tf.data.Dataset`, or where TensorFlow is not installed a `keras.utils.PyDataset`
        (either goes to `model.predict`).
    """
    from clzoo.data.device_stream import tensorflow_installed

    if not hasattr(images, "subset"):  # a file-backed split (`FileImages`) is decoded per batch
        images = np.asarray(images)
    if not tensorflow_installed():
        return _ArrayBatches(images, size, batch_size, pad)
    import tensorflow as tf

    def prepare(x):
        x = tf.image.convert_image_dtype(x, tf.float32)
        if size is not None and tuple(images.shape[1:3]) != (size, size):
            x = tf.image.resize(x, (size, size))
        return x

    # Batches sliced from the array itself: a `from_tensor_slices` would copy the whole split
    # into a tensor beside it (the in-memory path's peak was 4.5x the decoded split).
    batches = -(-len(images) // batch_size)

    def batch(index):
        return _padded(images[index * batch_size:(index + 1) * batch_size], batch_size if pad else 0)

    def sliced(index):
        x = tf.numpy_function(batch, [index], tf.as_dtype(images.dtype), stateful=False)
        x.set_shape((batch_size if pad else None, *images.shape[1:]))
        return x

    return (tf.data.Dataset.range(batches).map(sliced, num_parallel_calls=tf.data.AUTOTUNE)
            .map(prepare, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE))


def _padded(batch, batch_size):
    """`batch` with black images appended up to `batch_size` (0: as it is)."""
    if len(batch) >= batch_size:
        return batch
    blank = np.zeros((batch_size - len(batch), *batch.shape[1:]), batch.dtype)
    return np.concatenate([batch, blank])


def _to_float(batch):
    if batch.dtype == np.uint8:
        return batch.astype(np.float32) / 255.0
    return batch.astype(np.float32)


def _array_batches():
    import keras

    class ArrayBatches(keras.utils.PyDataset):
        """`eval_dataset`'s batches without TensorFlow: NumPy slices, converted and resized per batch."""

        def __init__(self, images, size, batch_size, pad):
            super().__init__()
            self.images, self.size, self.batch_size, self.pad = images, size, int(batch_size), pad

        def __len__(self):
            return -(-len(self.images) // self.batch_size)

        def __getitem__(self, index):
            batch = self.images[index * self.batch_size:(index + 1) * self.batch_size]
            batch = _to_float(_padded(batch, self.batch_size if self.pad else 0))
            if self.size is not None and tuple(batch.shape[1:3]) != (self.size, self.size):
                batch = keras.ops.image.resize(batch, (self.size, self.size), interpolation="bilinear",
                                               antialias=False)
            return (batch,)  # PyDataset's form of inputs without targets

    return ArrayBatches


def _ArrayBatches(images, size, batch_size, pad):  # noqa: N802  (a class, built on first use)
    return _array_batches()(images, size, batch_size, pad)
