"""ImageNet ResNets and Vision Transformers from keras-hub, wrapped as clzoo encoders.

A clzoo encoder takes float images in [0, 1] and returns pooled features
`(batch, D)`; these wrappers add the normalization in front of the keras-hub
backbone and the pooling after it (global average pooling for ResNets, the
class token for ViTs). Random initialization by default; `preset=` loads
keras-hub weights (`from_preset`, e.g. a local folder or `hf://...`), which
then expect ImageNet statistics.
"""

import keras
from keras import layers

from clzoo.models.input_normalization import check_mean_std, normalized

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

# depth -> (block type, blocks per stage)
_RESNETS = {18: ("basic_block", (2, 2, 2, 2)), 34: ("basic_block", (3, 4, 6, 3)),
            50: ("bottleneck_block", (3, 4, 6, 3))}


KERAS_HUB_MISSING = ("the keras-hub backbones (hub_resnet18, hub_resnet50, vit_small_patch4) need keras-hub, "
                     "which is not installed: pip install \"clzoo[keras-hub]\" (it brings TensorFlow, "
                     "which keras-hub requires through tensorflow-text)")


def _keras_hub():
    try:
        import keras_hub
    except ImportError as error:
        if error.name != "keras_hub":  # installed, but something it imports is not
            raise
        raise ModuleNotFoundError(KERAS_HUB_MISSING, name="keras_hub") from None
    return keras_hub


def _wrap(backbone, input_shape, mean, std, pool, name):
    inputs = keras.Input(shape=input_shape, name="images")
    x = normalized(inputs, mean, std)
    x = backbone(x)
    x = layers.GlobalAveragePooling2D(name="pool")(x) if pool == "avg" else x[:, 0]
    return keras.Model(inputs, x, name=name)


def hub_resnet(depth=50, input_shape=(224, 224, 3), preset=None, mean=IMAGENET_MEAN, std=IMAGENET_STD,
               name=None):
    """ImageNet-stem ResNet-18/34/50 (7x7 stride-2 stem + max-pool) from keras-hub.

    Args:
        depth: 18, 34 or 50. Defaults to `50`.
        input_shape: `(H, W, 3)`. Defaults to `(224, 224, 3)`.
        preset: None (random weights) or a keras-hub preset handle.
        mean, std: input normalization. Defaults to ImageNet's.

    Returns:
        `keras.Model`: float images in [0, 1] -> `(batch, 512)` (`2048` for ResNet-50).
    """
    if depth not in _RESNETS:
        raise ValueError(f"`depth` must be 18, 34 or 50. Received: depth={depth!r}")
    check_mean_std(mean, std, input_shape[-1])
    keras_hub = _keras_hub()
    if preset is not None:
        backbone = keras_hub.models.ResNetBackbone.from_preset(preset)
    else:
        block, blocks = _RESNETS[depth]
        backbone = keras_hub.models.ResNetBackbone(
            input_conv_filters=[64], input_conv_kernel_sizes=[7],
            stackwise_num_filters=[64, 128, 256, 512], stackwise_num_blocks=list(blocks),
            stackwise_num_strides=[1, 2, 2, 2], block_type=block, image_shape=tuple(input_shape))
    return _wrap(backbone, input_shape, mean, std, "avg", name or f"hub_resnet{depth}")


MAX_VIT_PARAMETERS = 2_000_000_000  # ViT-g/14 has 1.0 billion; 8 GB of float32 weights here


def check_vit_size(patch_size=4, num_layers=6, hidden_dim=192, mlp_dim=384, **_):
    """Refuse (`ValueError`) a ViT whose transformer would exceed `MAX_VIT_PARAMETERS`
    (`num_layers * (4 * hidden_dim**2 + 2 * hidden_dim * mlp_dim)` plus the patch embedding),
    before any weight is made: it would end in an allocation error deep in the backend."""
    embedding = patch_size ** 2 * 3 * hidden_dim
    parameters = num_layers * (4 * hidden_dim ** 2 + 2 * hidden_dim * mlp_dim) + embedding
    if parameters > MAX_VIT_PARAMETERS:
        raise ValueError(f"a ViT of num_layers={num_layers}, hidden_dim={hidden_dim}, mlp_dim={mlp_dim} "
                         f"has about {parameters:,} parameters, over the {MAX_VIT_PARAMETERS:,} clzoo "
                         "builds (ViT-g/14 has 1.0 billion)")


def vit(input_shape=(32, 32, 3), patch_size=4, num_layers=6, num_heads=3, hidden_dim=192,
        mlp_dim=384, preset=None, mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5), name=None):
    """Vision Transformer from keras-hub; features are the class token.

    The defaults are a small ViT with 4x4 patches for 32x32 images (64 tokens
    + class token, about 1.8M parameters), the kind the Perfectly Balanced
    paper trains on CIFAR (its app. F.1 does not give the sizes).

    Returns:
        `keras.Model`: float images in [0, 1] -> `(batch, hidden_dim)`.
    """
    if input_shape[0] % patch_size or input_shape[1] % patch_size:
        raise ValueError(f"Image size {input_shape[:2]} must be a multiple of patch_size={patch_size}.")
    check_mean_std(mean, std, input_shape[-1])
    check_vit_size(patch_size, num_layers, hidden_dim, mlp_dim)
    keras_hub = _keras_hub()
    if preset is not None:
        backbone = keras_hub.models.ViTBackbone.from_preset(preset)
    else:
        backbone = keras_hub.models.ViTBackbone(
            image_shape=tuple(input_shape), patch_size=patch_size, num_layers=num_layers,
            num_heads=num_heads, hidden_dim=hidden_dim, mlp_dim=mlp_dim)
    return _wrap(backbone, input_shape, mean, std, "cls", name or f"vit_patch{patch_size}")
