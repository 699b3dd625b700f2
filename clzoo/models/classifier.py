"""Encoder + MLP head -> class logits, for soft-target InfoNCE and cross-entropy baselines."""

import keras
from keras import layers


def build_classifier(encoder, num_classes, hidden_dims=(), name="classifier"):
    """Classifier on top of an encoder: `encoder -> [Dense -> BatchNorm -> ReLU]* -> Dense(num_classes)`.

    The output is unnormalized logits, what `SoftTargetInfoNCELoss` and
    `keras.losses.CategoricalCrossentropy(from_logits=True)` take (the
    soft-target InfoNCE paper trains its classifiers this way, sec. 4).

    Args:
        encoder: `keras.Model`, images -> features `(B, D)`.
        num_classes: positive int.
        hidden_dims: widths of hidden layers. Defaults to `()` (a linear head).
        name: model name.

    Returns:
        `keras.Model` images -> float logits `(B, num_classes)`; the encoder
        is reachable as `model.get_layer(encoder.name)`.

    Example:

    >>> import clzoo
    >>> model = clzoo.models.build_classifier(clzoo.models.get_encoder("resnet20"), 10)
    >>> model.output_shape
    (None, 10)
    """
    if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 1:
        raise ValueError(f"`num_classes` must be a positive integer. Received: {num_classes!r}")
    inputs = keras.Input(encoder.input_shape[1:], name="images")
    x = encoder(inputs)
    for i, width in enumerate(hidden_dims):
        x = layers.Dense(int(width), use_bias=False, name=f"head_hidden_{i}")(x)
        x = layers.BatchNormalization(name=f"head_bn_{i}")(x)
        x = layers.ReLU(name=f"head_relu_{i}")(x)
    logits = layers.Dense(num_classes, name="logits")(x)
    return keras.Model(inputs, logits, name=name)
