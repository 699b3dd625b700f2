"""CIFAR-stem ResNets: 3x3 stride-1 stem, no max-pool (He et al. 2016, sec. 4.2).

keras-hub's `ResNetBackbone` fixes the ImageNet stem and refuses CIFAR widths,
so this small family is ours. The encoder takes float images in [0, 1] and
normalizes them itself, so a saved encoder carries its preprocessing. Its batch
norms are `clzoo.models.BatchNormalization` (the Keras layer; TensorFlow's fused
kernel when training on TensorFlow, same maths, faster on CPU).
"""

import keras
from keras import layers

from clzoo.models.batch_norm import BatchNormalization
from clzoo.models.input_normalization import check_mean_std, normalized

# name -> (blocks per stage, widths per stage); stages after the first halve
# the resolution.
ARCHITECTURES = {
    # SupCon / SINCERE CIFAR encoders (basic blocks, 64..512 wide).
    "resnet18": ((2, 2, 2, 2), (64, 128, 256, 512)),
    "resnet34": ((3, 4, 6, 3), (64, 128, 256, 512)),
    # SupCon's CIFAR ResNet-50: bottleneck blocks, outputs 4 x 512 = 2048 features.
    "resnet50": ((3, 4, 6, 3), (64, 128, 256, 512)),
    # He et al. 2016 CIFAR ResNet-20 (0.27M parameters).
    "resnet20": ((3, 3, 3), (16, 32, 64)),
    # He et al.'s 6n+2 family at n=1 (0.08M parameters; CRD's resnet8): tiny data, smoke tests.
    "resnet8": ((1, 1, 1), (16, 32, 64)),
    # Narrow ResNet-10 that trains CIFAR-10 on a laptop CPU in minutes.
    "resnet10_narrow": ((1, 1, 1, 1), (32, 64, 128, 256)),
}

BOTTLENECK = {"resnet50"}
EXPANSION = 4  # bottleneck output width / inner width

# CIFAR-10 channel statistics (pixel values in [0, 1]).
CIFAR10_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR10_STD = (0.2470, 0.2435, 0.2616)


def _basic_block(x, filters, stride, name):
    shortcut = x
    x = layers.Conv2D(filters, 3, strides=stride, padding="same",
                      use_bias=False, name=f"{name}_conv1")(x)
    x = BatchNormalization(name=f"{name}_bn1")(x)
    x = layers.ReLU(name=f"{name}_relu1")(x)
    x = layers.Conv2D(filters, 3, padding="same", use_bias=False,
                      name=f"{name}_conv2")(x)
    x = BatchNormalization(name=f"{name}_bn2")(x)
    if stride != 1 or shortcut.shape[-1] != filters:
        shortcut = layers.Conv2D(filters, 1, strides=stride, use_bias=False,
                                 name=f"{name}_proj")(shortcut)
        shortcut = BatchNormalization(name=f"{name}_proj_bn")(shortcut)
    x = layers.Add(name=f"{name}_add")([x, shortcut])
    return layers.ReLU(name=f"{name}_out")(x)


def _bottleneck_block(x, filters, stride, name):
    shortcut = x
    x = layers.Conv2D(filters, 1, use_bias=False, name=f"{name}_conv1")(x)
    x = BatchNormalization(name=f"{name}_bn1")(x)
    x = layers.ReLU(name=f"{name}_relu1")(x)
    x = layers.Conv2D(filters, 3, strides=stride, padding="same", use_bias=False,
                      name=f"{name}_conv2")(x)
    x = BatchNormalization(name=f"{name}_bn2")(x)
    x = layers.ReLU(name=f"{name}_relu2")(x)
    x = layers.Conv2D(filters * EXPANSION, 1, use_bias=False, name=f"{name}_conv3")(x)
    x = BatchNormalization(name=f"{name}_bn3")(x)
    if stride != 1 or shortcut.shape[-1] != filters * EXPANSION:
        shortcut = layers.Conv2D(filters * EXPANSION, 1, strides=stride, use_bias=False,
                                 name=f"{name}_proj")(shortcut)
        shortcut = BatchNormalization(name=f"{name}_proj_bn")(shortcut)
    x = layers.Add(name=f"{name}_add")([x, shortcut])
    return layers.ReLU(name=f"{name}_out")(x)


def cifar_resnet(
    architecture="resnet18",
    input_shape=(32, 32, 3),
    mean=CIFAR10_MEAN,
    std=CIFAR10_STD,
    name=None,
):
    """Build a CIFAR-stem ResNet encoder as a functional `keras.Model`.

    Args:
        architecture: a name in `ARCHITECTURES` (`"resnet18"`, `"resnet34"`,
            `"resnet50"` (bottleneck blocks), `"resnet20"`, `"resnet8"`,
            `"resnet10_narrow"`).
            Defaults to `"resnet18"`.
        input_shape: `(height, width, channels)` of the input images.
            Defaults to `(32, 32, 3)`.
        mean, std: per-channel statistics used to normalize inputs in [0, 1].
            Defaults to CIFAR-10's.
        name: model name. Defaults to the architecture name.

    Returns:
        `keras.Model` mapping float32 images `(batch, H, W, C)` in [0, 1] to
        features `(batch, widths[-1])` (`4 * widths[-1]` for ResNet-50)
        after global average pooling.

    Raises:
        ValueError: for an unknown architecture or a `mean`/`std` whose length
            differs from the channel count.

    Example:

    >>> import clzoo
    >>> encoder = clzoo.models.cifar_resnet("resnet20")
    >>> encoder.output_shape
    (None, 64)
    """
    if architecture not in ARCHITECTURES:
        raise ValueError(
            f"`architecture` must be one of {sorted(ARCHITECTURES)}. "
            f"Received: architecture={architecture!r}"
        )
    check_mean_std(mean, std, input_shape[-1])
    blocks, widths = ARCHITECTURES[architecture]
    inputs = keras.Input(shape=input_shape, name="images")
    x = normalized(inputs, mean, std)
    x = layers.Conv2D(widths[0], 3, padding="same", use_bias=False,
                      name="stem_conv")(x)
    x = BatchNormalization(name="stem_bn")(x)
    x = layers.ReLU(name="stem_relu")(x)
    make_block = _bottleneck_block if architecture in BOTTLENECK else _basic_block
    for stage, (count, width) in enumerate(zip(blocks, widths)):
        for block in range(count):
            stride = 2 if stage > 0 and block == 0 else 1
            x = make_block(x, width, stride, f"stage{stage + 1}_block{block + 1}")
    outputs = layers.GlobalAveragePooling2D(name="pool")(x)
    return keras.Model(inputs, outputs, name=name or architecture)
