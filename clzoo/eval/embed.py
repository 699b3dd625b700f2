"""Embeddings of a frozen encoder over a set of images."""

import numpy as np

from clzoo._console import keras_verbose
from clzoo.data.pipeline import eval_dataset


def embed(encoder, images, batch_size=512, size=None, normalize=True, verbose=True):
    """Run a frozen encoder over uint8 images and return its features.

    Args:
        encoder: `keras.Model` mapping float images in [0, 1] `(batch, H, W, 3)`
            to features `(batch, D)`.
        images: uint8 array `(N, H, W, 3)`.
        batch_size: images per forward pass. Defaults to `512`.
        size: resize images to `size x size` first. Defaults to `None` (as is).
        normalize: L2-normalize each feature vector. Defaults to `True`.
        verbose: show a progress bar (on a terminal only). Defaults to `True`.

    Returns:
        float32 array `(N, D)`.
    """
    dataset = eval_dataset(images, size=size, batch_size=batch_size)
    features = encoder.predict(dataset, verbose=keras_verbose(verbose, plain=0))
    features = np.asarray(features, dtype=np.float32)
    if not np.all(np.isfinite(features)):
        raise ValueError("The encoder produced non-finite features (NaN or inf).")
    if normalize:
        norms = np.linalg.norm(features, axis=1, keepdims=True)
        features = features / np.maximum(norms, 1e-12)
    return features
