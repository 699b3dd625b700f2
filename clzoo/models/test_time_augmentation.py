"""Test-time flip: an encoder whose features average the image and its mirror image.

airbench (Jordan 2024, sec. 3.7) evaluates on the image and its horizontal
flip; for a kNN on frozen features the same averaging gave +1.3 points of
CIFAR-10 kNN top-1 on a 3-epoch encoder (benchmarks/README.md). The wrapper is
a plain functional model around the same encoder (shared weights), so it saves,
loads and publishes like any clzoo encoder, at twice the inference cost.
"""

import keras
from keras import ops

from clzoo.models.image_encoder import ImageEncoder


@keras.saving.register_keras_serializable(package="clzoo")
class HorizontalFlip(keras.layers.Layer):
    """Mirror `(batch, H, W, C)` images left-right (deterministic, unlike `RandomFlip`).

    Example:

    >>> import numpy as np, clzoo
    >>> x = np.arange(4, dtype="float32").reshape(1, 1, 4, 1)
    >>> np.asarray(clzoo.models.HorizontalFlip()(x))[0, 0, :, 0].tolist()
    [3.0, 2.0, 1.0, 0.0]
    """

    def call(self, inputs):
        if len(inputs.shape) != 4:
            raise ValueError("HorizontalFlip expects images (batch, H, W, C). "
                             f"Received: shape={tuple(inputs.shape)}")
        return ops.flip(inputs, axis=2)


def _check_image_encoder(encoder, caller):
    """Refuse an encoder that does not map images `(batch, H, W, C)` to features `(batch, D)`."""
    if len(encoder.input_shape) != 4 or len(encoder.output_shape) != 2:
        raise ValueError(f"{caller} needs an encoder from images (batch, H, W, C) to "
                         f"features (batch, D). Received: {encoder.input_shape} -> "
                         f"{encoder.output_shape}")


def flip_averaged(encoder, name=None):
    """Wrap an encoder so that its features are the mean over the image and its mirror image.

    Args:
        encoder: `keras.Model` mapping images `(batch, H, W, C)` to features `(batch, D)`.
        name: model name. Defaults to `"<encoder name>_flip_averaged"`.

    Returns:
        `clzoo.models.ImageEncoder` with the encoder's input and output shapes;
        the encoder's weights are shared, not copied.

    Raises:
        ValueError: if the encoder does not take rank-4 images or does not
            return rank-2 features.

    Example:

    >>> import clzoo
    >>> encoder = clzoo.models.flip_averaged(clzoo.models.get_encoder("resnet20"))
    >>> encoder.output_shape
    (None, 64)
    """
    _check_image_encoder(encoder, "flip_averaged")
    inputs = keras.Input(shape=encoder.input_shape[1:], name="images")
    mirrored = HorizontalFlip(name="flip")(inputs)
    features = keras.layers.Average(name="flip_average")([encoder(inputs), encoder(mirrored)])
    return ImageEncoder(inputs, features, name=name or f"{encoder.name}_flip_averaged")


@keras.saving.register_keras_serializable(package="clzoo")
class ReflectTranslate(keras.layers.Layer):
    """Shift `(batch, H, W, C)` images by `(dy, dx)` pixels, filling the edge by reflection.

    Output pixel `(y, x)` is input pixel `(y - dy, x - dx)`, mirrored at the
    border: airbench's test-time translate (a crop of the image padded by
    reflection). Deterministic, unlike `RandomTranslation`.

    Args:
        dy, dx: shift in pixels (positive: down / right), `|dy| < H`, `|dx| < W`.

    Example:

    >>> import numpy as np, clzoo
    >>> x = np.arange(4, dtype="float32").reshape(1, 1, 4, 1)
    >>> np.asarray(clzoo.models.ReflectTranslate(0, 1)(x))[0, 0, :, 0].tolist()
    [1.0, 0.0, 1.0, 2.0]
    """

    def __init__(self, dy=0, dx=0, **kwargs):
        super().__init__(**kwargs)
        for label, value in (("dy", dy), ("dx", dx)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"`{label}` must be an int. Received: {label}={value!r}")
        self.dy, self.dx = dy, dx

    def call(self, inputs):
        if len(inputs.shape) != 4:
            raise ValueError("ReflectTranslate expects images (batch, H, W, C). "
                             f"Received: shape={tuple(inputs.shape)}")
        py, px = abs(self.dy), abs(self.dx)
        height, width = inputs.shape[1], inputs.shape[2]
        padded = ops.pad(inputs, [(0, 0), (py, py), (px, px), (0, 0)], mode="reflect")
        top, left = py - self.dy, px - self.dx
        return padded[:, top:top + height, left:left + width, :]

    def get_config(self):
        config = super().get_config()
        config.update({"dy": self.dy, "dx": self.dx})
        return config


def test_time_averaged(encoder, translate=0, name=None):
    """Average an encoder's features over test-time views: mirror, and optional ±`translate` px.

    `translate=0` is `flip_averaged`. With `translate=t`, airbench's
    `infer_mirror_translate` (Jordan 2024, sec. 3.7): half the weight on the
    image and its mirror image, a quarter each on the pair shifted by
    `(-t, -t)` and by `(+t, +t)` pixels (reflect-padded) with their mirrors;
    6 encoder passes per image.

    Args:
        encoder: `keras.Model` mapping images `(batch, H, W, C)` to features `(batch, D)`.
        translate: shift in pixels, an int `>= 0` and below the image size. Defaults to `0`.
        name: model name. Defaults to `"<encoder name>_test_time_averaged"`.

    Returns:
        `clzoo.models.ImageEncoder` with the encoder's input and output shapes, sharing its weights.

    Raises:
        ValueError: as `flip_averaged`, or a `translate` that is not such an int.

    Example:

    >>> import clzoo
    >>> encoder = clzoo.models.test_time_averaged(clzoo.models.get_encoder("resnet20"), 1)
    >>> encoder.output_shape
    (None, 64)
    """
    if isinstance(translate, bool) or not isinstance(translate, int) or translate < 0:
        raise ValueError(f"`translate` must be an int >= 0. Received: translate={translate!r}")
    if not translate:
        return flip_averaged(encoder, name=name)
    _check_image_encoder(encoder, "test_time_averaged")
    sides = [s for s in encoder.input_shape[1:3] if s is not None]
    if sides and translate >= min(sides):
        raise ValueError(f"`translate` must be below the image size {min(sides)}. "
                         f"Received: translate={translate!r}")
    inputs = keras.Input(shape=encoder.input_shape[1:], name="images")
    base = flip_averaged(encoder, name="mirror")
    parts = [base(inputs)]
    for sign, label in ((-1, "up_left"), (1, "down_right")):
        shifted = ReflectTranslate(sign * translate, sign * translate, name=f"shift_{label}")(inputs)
        parts.append(base(shifted))
    pairs = keras.layers.Average(name="translate_average")(parts[1:])
    features = keras.layers.Average(name="test_time_average")([parts[0], pairs])
    return ImageEncoder(inputs, features, name=name or f"{encoder.name}_test_time_averaged")


def bare_encoder(encoder):
    """The one-view encoder inside a test-time averaged one (`flip_averaged`,
    `test_time_averaged`), or `encoder` itself when it averages no views.

    For a quick look on a CPU: the airbench presets run their encoder 6 times per
    image; the bare encoder runs once, and its features (and metrics) differ from
    the preset's: label them as such.

    Args:
        encoder: a `keras.Model` from images `(batch, H, W, C)` to features `(batch, D)`.

    Returns:
        a `keras.Model` with the same input and output shapes, sharing the weights.

    Example:

    >>> import clzoo
    >>> inner = clzoo.models.get_encoder("resnet8")
    >>> clzoo.models.bare_encoder(clzoo.models.test_time_averaged(inner, 1)) is inner
    True
    """
    names = {layer.name: layer for layer in encoder.layers}
    if "test_time_average" in names and "mirror" in names:
        return bare_encoder(names["mirror"])
    if "flip_average" in names and "flip" in names:
        inner = [layer for layer in encoder.layers if isinstance(layer, keras.Model)]
        if len(inner) == 1:
            return inner[0]
    return encoder
