"""One input contract for every encoder clzoo builds or ships: uint8 `[0, 255]` or float `[0, 1]` images.

Keras casts a functional model's inputs to the `Input` dtype before its first
layer, so a uint8 CIFAR array (what PIL and `np.asarray` give) would reach a
float encoder as values in [0, 255] and give wrong features without a word
(`supcon_airbench_cifar10`: probe 86.0% -> 41.0%). `ImageEncoder` rescales
integer pixels inside the model, before that cast, and refuses, before any
backend work, images of another size or channel count than the encoder was
built for, other integer dtypes and float arrays outside [0, 1].
"""

import keras
import numpy as np
from keras import ops

from clzoo.compat import keep_jax_variables

# Float images may overshoot [0, 1] by this much (rounding, resampling) before they are refused.
_FLOAT_SLACK = 1e-3
_CONTRACT = "uint8 in [0, 255] or float in [0, 1]"


def _expected(model):
    size = "x".join("?" if d is None else str(d) for d in model.input_shape[1:3])
    return f"images (batch, {', '.join(str(d) for d in model.input_shape[1:])}) ({size} pixels, "\
        f"{_CONTRACT})"


def _pixel_problem(images):
    """What is wrong with the dtype or value range of NumPy `images` (None when they are fine)."""
    if images.dtype.kind in "iub" and images.dtype != np.uint8:
        return f"dtype={images.dtype}; cast 0..255 pixels with images.astype('uint8')."
    if images.dtype.kind not in "uf":
        return f"dtype={images.dtype}."
    if images.dtype.kind == "f" and images.size:
        low, high = float(np.min(images)), float(np.max(images))
        if not (low >= -_FLOAT_SLACK and high <= 1 + _FLOAT_SLACK):
            return (f"float pixels in [{low:g}, {high:g}]: pass 0..255 pixels as uint8, or divide "
                    "them by 255.")
    return None


def check_images(model, images):
    """Refuse, with what was expected, an array `model` cannot take; no-op for symbolic tensors.

    Args:
        model: a `keras.Model` from images `(batch, H, W, C)`.
        images: anything; only a NumPy array is checked: its rank, the height /
            width / channels the model was built for, its dtype (uint8 or float)
            and that float pixels lie in [0, 1] (within 1e-3).

    Raises:
        ValueError: naming the received shape, dtype or value range.

    Example:

    >>> import numpy as np, clzoo
    >>> from clzoo.models.image_encoder import check_images
    >>> check_images(clzoo.models.get_encoder("resnet8"), np.zeros((1, 32, 32, 3), np.uint8))
    """
    if not isinstance(images, np.ndarray):
        return
    shape, want = images.shape, model.input_shape
    if len(shape) != len(want) or any(w is not None and s != w for s, w in zip(shape[1:], want[1:])):
        raise ValueError(f"{model.name} takes {_expected(model)}. Received: shape={shape}. "
                         "Resize the images first (clzoo.eval.embed(..., size=N) resizes uint8 images).")
    problem = _pixel_problem(images)
    if problem:
        raise ValueError(f"{model.name} takes {_expected(model)}. Received: {problem}")


def unit_float_images(images):
    """float32 images in [0, 1] from uint8 `[0, 255]` or float `[0, 1]` pixels (the contract outside a model).

    For runtimes that take the exported float32 signature (SavedModel, ONNX,
    LiteRT): uint8 is divided by 255, float is checked, anything else refused.

    Args:
        images: array-like `(N, H, W, C)` (any shape: only dtype and values are checked).

    Returns:
        float32 array of the same shape, in [0, 1].

    Raises:
        ValueError: another dtype, or float pixels outside [0, 1].

    Example:

    >>> import numpy as np
    >>> from clzoo.models.image_encoder import unit_float_images
    >>> unit_float_images(np.array([[0, 255]], np.uint8)).tolist()
    [[0.0, 1.0]]
    """
    images = np.asarray(images)
    problem = _pixel_problem(images)
    if problem:
        raise ValueError(f"Expected images as {_CONTRACT}. Received: {problem}")
    return images.astype(np.float32) / (255.0 if images.dtype == np.uint8 else 1.0)


@keras.saving.register_keras_serializable(package="clzoo")
class ImageEncoder(keras.Model):
    """A functional encoder from images `(batch, H, W, C)` to features `(batch, D)` with one input contract.

    uint8 pixels in [0, 255] are divided by 255 inside the model, so they give
    the same features as the float images in [0, 1] the layers see; in
    `predict` and eager calls on NumPy arrays, a wrong size, channel count,
    dtype or float range is refused with a `ValueError` before any backend
    work (on JAX, a refused `predict` would otherwise leave the model's
    variables detached). Build one with `as_image_encoder(model)`; every
    encoder from `get_encoder`, `flip_averaged`, `test_time_averaged` and
    `Encoder.from_preset` is one. A model that wraps an encoder casts its input
    to float before the encoder runs: make the wrapper one too
    (`as_image_encoder(wrapper)`), or its uint8 inputs reach the layers as 0..255.

    Example:

    >>> import numpy as np, clzoo
    >>> encoder = clzoo.models.get_encoder("resnet8")
    >>> pixels = np.random.default_rng(0).integers(0, 256, (2, 32, 32, 3), dtype=np.uint8)
    >>> a = encoder.predict(pixels, verbose=0)
    >>> b = encoder.predict(pixels.astype("float32") / 255, verbose=0)
    >>> bool(np.allclose(a, b, atol=1e-5))
    True
    """

    def call(self, inputs, training=None, mask=None):
        if not hasattr(inputs, "dtype"):  # a list or dict of one tensor: Keras' own handling
            return super().call(inputs, training=training, mask=mask)
        dtype = keras.backend.standardize_dtype(inputs.dtype)
        if dtype == "uint8":
            inputs = ops.cast(inputs, "float32") / 255.0
        elif "int" in dtype or dtype == "bool":
            raise ValueError(f"{self.name} takes {_expected(self)}. Received: dtype={dtype}; "
                             "cast 0..255 pixels to uint8.")
        return super().call(inputs, training=training, mask=mask)

    def __call__(self, *args, **kwargs):
        if args:
            check_images(self, args[0])
        return super().__call__(*args, **kwargs)

    def predict(self, x, *args, **kwargs):
        check_images(self, x)
        return keep_jax_variables(self, lambda: super(ImageEncoder, self).predict(x, *args, **kwargs))


def as_image_encoder(model):
    """`model` as an `ImageEncoder` (the same layers and weights), or `model` if it already is one.

    Args:
        model: a functional `keras.Model` from images `(batch, H, W, C)` to
            features `(batch, D)`.

    Returns:
        `ImageEncoder` sharing `model`'s layers and weights.

    Raises:
        ValueError: `model` is not a functional model from rank-4 images to
            rank-2 features.
    """
    if isinstance(model, ImageEncoder):
        return model
    inputs, outputs = getattr(model, "inputs", None), getattr(model, "outputs", None)
    if (not inputs or not outputs or len(inputs) != 1 or len(outputs) != 1
            or len(model.input_shape) != 4 or len(model.output_shape) != 2):
        raise ValueError("An image encoder is a functional keras.Model from images (batch, H, W, C) "
                         f"to features (batch, D). Received: {type(model).__name__} {model.name!r}")
    encoder = ImageEncoder(inputs[0], outputs[0], name=model.name)
    if not model.trainable:  # setting True would unfreeze layers the user froze
        encoder.trainable = False
    return encoder
