"""Patch whitening: a frozen 2x2 convolution fitted to the training images (airbench's stem).

airbench (Jordan 2024, sec. 3.2; 35 -> 21 epochs to 94% in its ablations) starts
with a convolution whose filters are the eigenvectors of the covariance of the
training set's 2x2 patches, each divided by the square root of its eigenvalue,
and the same filters negated: the stem's outputs are decorrelated, unit-variance
patch coordinates from the first step. The filters are fitted once by `adapt`,
stay frozen, and are weights of the layer, so a saved encoder carries them and
needs no data when it is loaded.
"""

import keras
import numpy as np
from keras import ops


def _identity_filters(kernel_size, channels):
    """`[I, -I]` as `(k, k, C, 2 k k C)` filters: the whitening of already white patches."""
    dim = kernel_size * kernel_size * channels
    eye = np.eye(dim, dtype="float32").reshape(kernel_size, kernel_size, channels, dim)
    return np.concatenate([eye, -eye], axis=-1)


def _patch_covariance(images, kernel_size, chunk=256):
    """The uncentred covariance `E[p p^T]` (float64) of the `k x k x C` patches of `(N, H, W, C)`
    images, patches flattened in (row, column, channel) order, summed `chunk` images at a time."""
    n, height, width, channels = images.shape
    k, dim = kernel_size, kernel_size * kernel_size * images.shape[-1]
    total, count = np.zeros((dim, dim)), 0
    for start in range(0, n, chunk):
        part = images[start:start + chunk]
        shifts = [part[:, dy:height - k + 1 + dy, dx:width - k + 1 + dx]
                  for dy in range(k) for dx in range(k)]
        patches = np.stack(shifts, axis=3).reshape(-1, dim).astype("float64")
        total += patches.T @ patches
        count += len(patches)
    return total / count


@keras.saving.register_keras_serializable(package="clzoo")
class PatchWhitening(keras.layers.Layer):
    """A frozen `kernel_size` x `kernel_size` convolution that whitens image patches.

    After `adapt(images)` its `2 k k C` filters are `+-v_j / sqrt(lambda_j + epsilon)`
    for the eigenpairs `(lambda_j, v_j)` of the (uncentred) covariance
    `E[p p^T]` of the `k x k x C` patches `p` of `images`, as airbench's
    `init_whiten`. The filters are a non-trainable weight; the bias is trained.
    Before `adapt` the filters are `[I, -I]` (the whitening of white patches),
    so an un-adapted layer passes each patch on unchanged.

    Args:
        kernel_size: patch side in pixels. Defaults to `2` (airbench).
        epsilon: added to each eigenvalue. Defaults to `5e-4` (airbench).
        **kwargs: `keras.layers.Layer` arguments (`name`, ...).

    Input shape: `(batch, H, W, C)` float images (normalized, as the encoder sees them).
    Output shape: `(batch, H - k + 1, W - k + 1, 2 k k C)`.

    Raises:
        ValueError: `kernel_size` not an int >= 1, `epsilon` not > 0; in `adapt`,
            images that are not `(N, H, W, C)` with the layer's channels and
            `H, W >= kernel_size`, or that hold NaN or inf.

    Example:

    >>> import numpy as np, clzoo
    >>> layer = clzoo.models.PatchWhitening()
    >>> images = np.random.default_rng(0).normal(size=(64, 8, 8, 3)).astype("float32")
    >>> layer.adapt(images * [1.0, 2.0, 3.0])
    >>> tuple(layer(images).shape)
    (64, 7, 7, 24)

    Reference:
    - [Jordan, 94% on CIFAR-10 in 3.29 Seconds on a Single GPU, 2024, sec. 3.2
      (patch-whitening initialization)](https://arxiv.org/abs/2404.00498)
    """

    def __init__(self, kernel_size=2, epsilon=5e-4, **kwargs):
        super().__init__(**kwargs)
        if isinstance(kernel_size, bool) or not isinstance(kernel_size, int) or kernel_size < 1:
            raise ValueError(f"`kernel_size` must be an int >= 1. Received: kernel_size={kernel_size!r}")
        if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or not epsilon > 0:
            raise ValueError(f"`epsilon` must be a number > 0. Received: epsilon={epsilon!r}")
        self.kernel_size, self.epsilon = kernel_size, float(epsilon)

    def build(self, input_shape):
        channels = input_shape[-1]
        filters = _identity_filters(self.kernel_size, channels)
        self.kernel = self.add_weight(shape=filters.shape, name="kernel", trainable=False,
                                      initializer=keras.initializers.Constant(filters))
        self.bias = self.add_weight(shape=(filters.shape[-1],), name="bias", initializer="zeros")

    def adapt(self, images):
        """Fit the filters to all the patches of `images` `(N, H, W, C)` (as the layer sees them)."""
        images = np.asarray(images, dtype="float32")
        k = self.kernel_size
        if images.ndim != 4 or min(images.shape[1:3]) < k or not len(images):
            raise ValueError(f"PatchWhitening.adapt needs images (N, H, W, C) with H, W >= {k}. "
                             f"Received: shape={images.shape}")
        if not self.built:
            self.build(images.shape)
        if images.shape[-1] != self.kernel.shape[2]:
            raise ValueError(f"PatchWhitening.adapt needs {self.kernel.shape[2]} channels. "
                             f"Received: shape={images.shape}")
        if not np.isfinite(images).all():
            raise ValueError("PatchWhitening.adapt: the images hold NaN or inf")
        eigenvalues, eigenvectors = np.linalg.eigh(_patch_covariance(images, k))
        scaled = eigenvectors / np.sqrt(np.maximum(eigenvalues, 0.0) + self.epsilon)
        filters = scaled.reshape(k, k, images.shape[-1], -1)
        self.kernel.assign(np.concatenate([filters, -filters], axis=-1).astype("float32"))

    def call(self, inputs):
        return ops.conv(inputs, ops.cast(self.kernel, inputs.dtype), padding="valid") + self.bias

    def compute_output_shape(self, input_shape):
        k = self.kernel_size
        shrink = [None if s is None else s - k + 1 for s in input_shape[1:3]]
        return (input_shape[0], *shrink, 2 * k * k * input_shape[-1])

    def get_config(self):
        config = super().get_config()
        config.update({"kernel_size": self.kernel_size, "epsilon": self.epsilon})
        return config


def adapt_whitening(encoder, images, limit=5000, seed=0):
    """Fit every `PatchWhitening` layer of `encoder` to `limit` images drawn at random from `images`.

    The images are a seeded random subset, not the first ones: an image folder is
    read class by class, so its first 5,000 CIFAR-10 images are all airplanes.
    Each layer sees them as the encoder feeds it (after the encoder's
    normalization): the part of the network before the layer is run on them.

    Args:
        encoder: a functional `keras.Model` taking `(batch, H, W, C)` images, its
            `PatchWhitening` layers at its top level.
        images: `(N, H, W, C)` uint8 images (scaled to [0, 1]) or float images in [0, 1].
        limit: images read (airbench94: 5,000). Defaults to `5000`.
        seed: which images (a `numpy` generator seed). Defaults to `0`.

    Returns:
        the number of layers fitted (0 when the encoder has none).
    """
    layers = [layer for layer in encoder._flatten_layers() if isinstance(layer, PatchWhitening)]
    if not layers:
        return 0
    chosen = np.random.default_rng(seed).permutation(len(images))[:limit]
    rows = np.sort(chosen)  # a file-backed split (`FileImages`) decodes only these
    images = np.asarray(images[rows] if hasattr(images, "subset") else np.asarray(images)[rows])
    images = images.astype("float32") / 255.0 if images.dtype == np.uint8 else images.astype("float32")
    for layer in layers:
        before = keras.Model(encoder.input, layer.input)
        layer.adapt(np.concatenate([ops.convert_to_numpy(before(images[i:i + 500]))
                                    for i in range(0, len(images), 500)]))
    return len(layers)
