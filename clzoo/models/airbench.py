"""Wide-and-shallow CIFAR encoders after airbench (Jordan 2024, "94% on CIFAR-10 in 3.29 Seconds").

Three blocks of (3x3 conv, 2x2 max-pool, batch norm, GELU, 3x3 conv, batch
norm, GELU) after a 2x2 "whitening" stem convolution, ending in global max
pooling. Compared with a CIFAR ResNet-20 it has 8x the parameters but fewer
layers at full resolution, so it does more useful work per second on a CPU
(benchmarks/README.md, "Where the CPU time goes"). The stem is an ordinary
trainable convolution here (airbench freezes it to the patch-PCA whitening of
the training set; a saved encoder then carries no data-dependent init).
"""

import keras
from keras import layers

from clzoo.models.batch_norm import BatchNormalization
from clzoo.models.resnet import CIFAR10_MEAN, CIFAR10_STD

# name -> widths of the three blocks (airbench94: 64, 256, 256; stem 24 channels).
ARCHITECTURES = {
    "airbench": (64, 256, 256),
    "airbench_half": (32, 128, 128),
}
STEM_WIDTH = 24


def _block(x, width, name):
    x = layers.Conv2D(width, 3, padding="same", use_bias=False, name=f"{name}_conv1")(x)
    x = layers.MaxPooling2D(2, name=f"{name}_pool")(x)
    x = BatchNormalization(name=f"{name}_bn1")(x)
    x = layers.Activation("gelu", name=f"{name}_gelu1")(x)
    x = layers.Conv2D(width, 3, padding="same", use_bias=False, name=f"{name}_conv2")(x)
    x = BatchNormalization(name=f"{name}_bn2")(x)
    return layers.Activation("gelu", name=f"{name}_gelu2")(x)


def airbench_net(architecture="airbench", input_shape=(32, 32, 3), mean=CIFAR10_MEAN,
                 std=CIFAR10_STD, name=None):
    """Build an airbench-style encoder as a functional `keras.Model`.

    Args:
        architecture: `"airbench"` (widths 64, 256, 256; 2.0M parameters,
            256-d features) or `"airbench_half"` (32, 128, 128; 0.5M, 128-d).
            Defaults to `"airbench"`.
        input_shape: `(height, width, channels)`; height and width >= 16.
            Defaults to `(32, 32, 3)`.
        mean, std: per-channel statistics used to normalize inputs in [0, 1].
            Defaults to CIFAR-10's.
        name: model name. Defaults to the architecture name.

    Returns:
        `keras.Model` mapping float32 images `(batch, H, W, C)` in [0, 1] to
        features `(batch, widths[-1])` after global max pooling.

    Raises:
        ValueError: for an unknown architecture, an image smaller than 16 pixels
            or a `mean` / `std` whose length differs from the channel count.

    Example:

    >>> import clzoo
    >>> clzoo.models.get_encoder("airbench_half").output_shape
    (None, 128)
    """
    if architecture not in ARCHITECTURES:
        raise ValueError(f"`architecture` must be one of {sorted(ARCHITECTURES)}. "
                         f"Received: architecture={architecture!r}")
    if min(input_shape[:2]) < 16:
        raise ValueError("airbench encoders pool three times after a 2x2 stem: images need "
                         f"height and width >= 16. Received: input_shape={tuple(input_shape)}")
    channels = input_shape[-1]
    if len(mean) != channels or len(std) != channels:
        raise ValueError(f"`mean` and `std` need one value per channel ({channels}). "
                         f"Received: mean={mean!r}, std={std!r}")
    inputs = keras.Input(shape=input_shape, name="images")
    x = layers.Normalization(mean=list(mean), variance=[s * s for s in std],
                             name="normalize")(inputs)
    x = layers.Conv2D(STEM_WIDTH, 2, padding="valid", name="stem_conv")(x)
    x = layers.Activation("gelu", name="stem_gelu")(x)
    for index, width in enumerate(ARCHITECTURES[architecture]):
        x = _block(x, width, f"block{index + 1}")
    outputs = layers.GlobalMaxPooling2D(name="pool")(x)
    return keras.Model(inputs, outputs, name=name or architecture)
