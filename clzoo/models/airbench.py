"""Wide-and-shallow CIFAR encoders after airbench (Jordan 2024, "94% on CIFAR-10 in 3.29 Seconds").

Three blocks of (3x3 conv, 2x2 max-pool, batch norm, GELU, 3x3 conv, batch
norm, GELU) after a 2x2 "whitening" stem convolution, ending in global max
pooling. Compared with a CIFAR ResNet-20 it has 8x the parameters but fewer
layers at full resolution, so it does more useful work per second on a CPU
(benchmarks/README.md, "Where the CPU time goes").

Each lever of airbench's training stack that lives in the network is an
option, off by default (so the encoders of earlier presets build as before):
`whitening` (the stem is `PatchWhitening`, fitted to the training images by
`adapt_whitening`), `dirac` (identity init of the 3x3 convolutions), and the
batch-norm settings (`batch_norm_scale=False` freezes the scale at 1;
airbench94 uses momentum 0.6 in Keras' convention, i.e. 0.4 in PyTorch's).
"""

import keras
from keras import layers

from clzoo.models.batch_norm import BatchNormalization
from clzoo.models.initializers import DiracInitializer
from clzoo.models.input_normalization import check_mean_std, normalized
from clzoo.models.resnet import CIFAR10_MEAN, CIFAR10_STD
from clzoo.models.whitening import PatchWhitening

# name -> widths of the three blocks (airbench94: 64, 256, 256; stem 24 channels).
ARCHITECTURES = {
    "airbench": (64, 256, 256),
    "airbench_half": (32, 128, 128),
}
STEM_WIDTH = 24


def _block(x, width, name, dirac, norm):
    def init():  # one per convolution: an initializer instance repeats its draws
        return DiracInitializer() if dirac else "glorot_uniform"

    x = layers.Conv2D(width, 3, padding="same", use_bias=False, kernel_initializer=init(),
                      name=f"{name}_conv1")(x)
    x = layers.MaxPooling2D(2, name=f"{name}_pool")(x)
    x = BatchNormalization(name=f"{name}_bn1", **norm)(x)
    x = layers.Activation("gelu", name=f"{name}_gelu1")(x)
    x = layers.Conv2D(width, 3, padding="same", use_bias=False, kernel_initializer=init(),
                      name=f"{name}_conv2")(x)
    x = BatchNormalization(name=f"{name}_bn2", **norm)(x)
    return layers.Activation("gelu", name=f"{name}_gelu2")(x)


def _check_levers(batch_norm_momentum, batch_norm_epsilon):
    if not 0 <= batch_norm_momentum < 1:
        raise ValueError("`batch_norm_momentum` must be in [0, 1) (Keras' convention: the weight "
                         f"of the old moving average). Received: {batch_norm_momentum!r}")
    if not batch_norm_epsilon > 0:
        raise ValueError(f"`batch_norm_epsilon` must be > 0. Received: {batch_norm_epsilon!r}")


def airbench_net(architecture="airbench", input_shape=(32, 32, 3), mean=CIFAR10_MEAN,
                 std=CIFAR10_STD, name=None, whitening=False, dirac=False,
                 batch_norm_scale=True, batch_norm_momentum=0.99, batch_norm_epsilon=1e-3):
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
        whitening: the stem is a frozen `PatchWhitening` (fit it with
            `clzoo.models.adapt_whitening`) instead of a trainable 2x2
            convolution. Defaults to `False`.
        dirac: identity init of the 3x3 convolutions (`DiracInitializer`).
            Defaults to `False`.
        batch_norm_scale: learn the batch-norm scale (`False`: frozen at 1,
            as airbench). Defaults to `True`.
        batch_norm_momentum: weight of the old moving statistics (Keras'
            convention; airbench: 0.6). Defaults to `0.99` (Keras').
        batch_norm_epsilon: defaults to `1e-3` (Keras'). Below 1.001e-5
            (airbench: 1e-12) TensorFlow runs its unfused, slower kernel (see
            `BatchNormalization`).

    Returns:
        `keras.Model` mapping float32 images `(batch, H, W, C)` in [0, 1] to
        features `(batch, widths[-1])` after global max pooling.

    Raises:
        ValueError: for an unknown architecture, an image smaller than 16 pixels,
            a `mean` / `std` whose length differs from the channel count, or a
            batch-norm momentum outside [0, 1) or epsilon <= 0.

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
    check_mean_std(mean, std, input_shape[-1])
    _check_levers(batch_norm_momentum, batch_norm_epsilon)
    norm = dict(scale=bool(batch_norm_scale), momentum=float(batch_norm_momentum),
                epsilon=float(batch_norm_epsilon))
    inputs = keras.Input(shape=input_shape, name="images")
    x = normalized(inputs, mean, std)
    if whitening:  # 2 * 2 * 2 * C filters: 24 for RGB, as the trainable stem
        x = PatchWhitening(2, name="stem_whitening")(x)
    else:
        x = layers.Conv2D(STEM_WIDTH, 2, padding="valid", name="stem_conv")(x)
    x = layers.Activation("gelu", name="stem_gelu")(x)
    for index, width in enumerate(ARCHITECTURES[architecture]):
        x = _block(x, width, f"block{index + 1}", dirac, norm)
    outputs = layers.GlobalMaxPooling2D(name="pool")(x)
    return keras.Model(inputs, outputs, name=name or architecture)
