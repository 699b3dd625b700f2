"""Embeddings of a frozen encoder over a set of images."""

import numpy as np

from clzoo.console import is_quiet, keras_verbose
from clzoo.data.pipeline import eval_dataset
from clzoo.eval._checks import unit_rows


def check_encoder_fits(encoder, images, size=None):
    """Refuse images the encoder cannot take, before any forward pass (`ValueError` naming both).

    Compares the encoder's input shape `(H, W, C)` with the images' after the
    resize to `size` (if any); unknown (None) encoder axes match anything.
    """
    expected = getattr(encoder, "input_shape", None)
    shape = np.shape(images)
    if not isinstance(expected, tuple) or len(shape) < 2:  # several inputs: left to Keras
        return
    given = tuple(shape[1:])
    if size is not None and len(given) == 3:
        given = (size, size, given[2])
    fits = len(expected) - 1 == len(given) and all(
        e is None or e == g for e, g in zip(expected[1:], given))
    if not fits:
        resized = f" (resized to {size}x{size})" if size is not None else ""
        raise ValueError(
            f"The encoder takes images of shape {tuple(expected[1:])} (H, W, C) but the data's "
            f"images have shape {tuple(shape[1:])}{resized}, i.e. {given}: evaluate it on data "
            f"of its own shape (channels: {expected[-1]}), or an encoder built for {tuple(shape[1:])}")


BATCH_PIXELS = 512 * 64 * 64  # pixels per evaluation batch: 512 images of 64 px, 41 of 224 px


def predict_images(model, images, batch_size=512, size=None, verbose=False):
    """`model.predict` over images in fixed-shape batches, so its predict function is not retraced.

    Every batch holds the same number of images (the last is padded with
    black images whose outputs are dropped): `batch_size`, or for a set
    smaller than that its size rounded up to a power of two (tiny sets are
    not padded to 512), and at most `BATCH_PIXELS` pixels per batch at the larger of the images'
    and the input's size (512 images up to 64 px, 41 at ImageNet's 224: a batch's pixels and
    activations stay bounded; at least 32 images). Keras' predict function is then traced once per
    model and batch shape, not again for every last partial batch, and
    repeated calls (train and test sets, a kNN monitor every few epochs)
    reuse it instead of filling the log with TensorFlow retracing warnings.

    Args:
        model: `keras.Model` taking float images in [0, 1] `(batch, H, W, 3)`.
        images: uint8 `(N, H, W, 3)`, or float in [0, 1].
        batch_size: images per forward pass. Defaults to `512`.
        size: resize to `size x size` first. Defaults to `None` (as is).
        verbose: progress: Keras' bar on a terminal, else a plain line per tenth of a pass
            longer than 10 s (`clzoo.eval.progress.PlainProgress`). Defaults to `False`.

    Returns:
        The model's outputs for the `N` images, `(N, ...)` (numpy).

    Example:

    >>> import numpy as np, keras
    >>> from clzoo.eval.embed import predict_images
    >>> inputs = keras.Input((8, 8, 3))
    >>> model = keras.Model(inputs, keras.layers.GlobalAveragePooling2D()(inputs))
    >>> predict_images(model, np.full((5, 8, 8, 3), 255, np.uint8)).shape
    (5, 3)
    """
    n = len(images)
    if n == 0:
        raise ValueError("`images` is empty: nothing to embed.")
    side = max(int(size or 0), int(images.shape[1]))  # the batch is decoded, then resized
    batch = min(int(batch_size), max(32, BATCH_PIXELS // side**2), 1 << (n - 1).bit_length())
    dataset = eval_dataset(images, size=size, batch_size=batch, pad=True)
    level = keras_verbose(verbose, plain=0)
    callbacks = []
    if verbose and not level and not is_quiet():  # off a terminal: plain lines on a long pass
        from clzoo.eval.progress import PlainProgress

        callbacks.append(PlainProgress(f"embedding {n:,} images", n, -(-n // batch), batch))
    return np.asarray(model.predict(dataset, verbose=level, callbacks=callbacks))[:n]


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

    Raises:
        ValueError: images the encoder cannot take (`check_encoder_fits`), or
            non-finite features.
    """
    check_encoder_fits(encoder, images, size)
    features = predict_images(encoder, images, batch_size=batch_size, size=size, verbose=verbose)
    features = np.asarray(features, dtype=np.float32)
    if not np.all(np.isfinite(features)):
        raise ValueError("The encoder produced non-finite features (NaN or inf).")
    return unit_rows(features) if normalize else features


def projection_encoder(model):
    """A `keras.Model`: images -> the L2-normalized projection-head embeddings of `model`.

    This is the space the contrastive loss shapes (the loss normalizes before
    its dot products), as opposed to the encoder features used by probes.

    Args:
        model: a `clzoo.models.ContrastiveModel` (anything with `.encoder`
            and `.projection_head`), e.g. loaded from a run's `checkpoint.keras`.

    Returns:
        `keras.Model` mapping float images in [0, 1] `(B, H, W, 3)` to
        float32 `(B, dim)` unit vectors.

    Raises:
        ValueError: `model` has no encoder or no projection head.
    """
    import keras

    encoder = getattr(model, "encoder", None)
    head = getattr(model, "projection_head", None)
    if encoder is None or head is None:
        raise ValueError("`model` must have an `encoder` and a `projection_head` (a "
                         f"clzoo.models.ContrastiveModel). Received: {type(model).__name__}")
    from clzoo.models.image_encoder import ImageEncoder
    from clzoo.models.projection_head import L2Normalize

    inputs = keras.Input(encoder.input_shape[1:])
    outputs = L2Normalize(name="l2_normalize")(head(encoder(inputs)))
    return ImageEncoder(inputs, outputs, name="encoder_and_projection_head")


def projection_embeddings(model, images, batch_size=512, size=None, verbose=False):
    """L2-normalized projection-head embeddings of a `ContrastiveModel` over uint8 images.

    Args:
        model: `clzoo.models.ContrastiveModel` (see `projection_encoder`).
        images: uint8 `(N, H, W, 3)`.
        batch_size: images per forward pass. Defaults to `512`.
        size: resize to `size x size` first. Defaults to `None` (as is).
        verbose: progress bar. Defaults to `False`.

    Returns:
        float32 `(N, dim)`, each row of unit L2 norm.

    Raises:
        ValueError: `model` has no projection head.

    Example:

    >>> import numpy as np, keras, clzoo
    >>> keras.utils.set_random_seed(0)  # a 3-unit ReLU head can be all zero for 1 seed in 8
    >>> inputs = keras.Input((8, 8, 3))
    >>> encoder = keras.Model(inputs, keras.layers.GlobalAveragePooling2D()(inputs))
    >>> model = clzoo.models.ContrastiveModel(encoder, clzoo.models.ProjectionHead(output_dim=4))
    >>> z = clzoo.eval.projection_embeddings(model, np.full((2, 8, 8, 3), 200, np.uint8))
    >>> z.shape, bool(np.allclose(np.linalg.norm(z, axis=1), 1, atol=1e-5))
    ((2, 4), True)
    """
    return embed(projection_encoder(model), images, batch_size=batch_size, size=size,
                 normalize=True, verbose=verbose)
