"""One registry of encoders by name: `get_encoder("resnet18")`, `list_encoders()`."""

import functools
import inspect

from clzoo.models import backbones
from clzoo.models.airbench import ARCHITECTURES as AIRBENCH
from clzoo.models.airbench import airbench_net
from clzoo.models.image_encoder import as_image_encoder
from clzoo.models.input_normalization import check_mean_std
from clzoo.models.resnet import ARCHITECTURES, cifar_resnet
from clzoo.registry import Registry, check_kwargs

_CIFAR_DESCRIPTIONS = {
    "resnet18": "CIFAR-stem ResNet-18 (SupCon / SINCERE CIFAR encoder), 512-d, 11.2M params",
    "resnet34": "CIFAR-stem ResNet-34, 512-d, 21.3M params",
    "resnet50": "CIFAR-stem ResNet-50 (bottleneck, SupCon's CIFAR encoder), 2048-d, 23.5M params",
    "resnet20": "He et al. CIFAR ResNet-20, 64-d, 0.27M params (trains on a CPU)",
    "resnet8": "He et al. CIFAR ResNet-8 (n=1), 64-d, 0.08M params (tiny data, smoke tests)",
    "resnet10_narrow": "narrow ResNet-10, 256-d, 1.2M params (trains on a CPU)",
}

ENCODERS = Registry("encoder")
for _name in ARCHITECTURES:
    ENCODERS.register(_name, functools.partial(cifar_resnet, _name),
                      description=_CIFAR_DESCRIPTIONS[_name])
_AIRBENCH_DESCRIPTIONS = {
    "airbench": "airbench-style wide-and-shallow net (Jordan 2024), 256-d, 2.0M params (fast on a CPU)",
    "airbench_half": "airbench at half width, 128-d, 0.5M params",
}
for _name in AIRBENCH:
    ENCODERS.register(_name, functools.partial(airbench_net, _name),
                      description=_AIRBENCH_DESCRIPTIONS[_name])
ENCODERS.register("hub_resnet18", functools.partial(backbones.hub_resnet, 18),
                  description="ImageNet-stem ResNet-18 from keras-hub, 512-d")
ENCODERS.register("hub_resnet50", functools.partial(backbones.hub_resnet, 50),
                  description="ImageNet-stem ResNet-50 from keras-hub, 2048-d")
ENCODERS.register("vit_small_patch4", backbones.vit, check=backbones.check_vit_size,
                  description="ViT with 4x4 patches (6 layers, 3 heads, width 192) from keras-hub")


def list_encoders():
    """`{name: description}` of every registered encoder."""
    return ENCODERS.describe()


def get_encoder(architecture, input_shape=(32, 32, 3), **kwargs):
    """Build a registered encoder: images `(B, H, W, 3)` (uint8 or float in [0, 1]) -> features `(B, D)`.

    Args:
        architecture: a name in the `ENCODERS` registry (see `list_encoders()`).
        input_shape: `(H, W, 3)`. Defaults to `(32, 32, 3)`.
        **kwargs: passed to the builder (`name=`, and `preset=` for keras-hub ones).

    Raises:
        ValueError: for an unknown name (the message lists the known ones).

    Example:

    >>> import clzoo
    >>> clzoo.models.get_encoder("resnet20").output_shape
    (None, 64)
    """
    return as_image_encoder(ENCODERS.get(architecture)(input_shape=tuple(input_shape), **kwargs))


def check_encoder_options(architecture, options, section="encoder_options"):
    """Refuse builder keyword arguments that `architecture` does not take, or of another type.

    `options` are the extra keyword arguments of `get_encoder` (a recipe's
    `model.encoder_options`), e.g. `{"num_layers": 2}` for `"vit_small_patch4"`;
    `input_shape` and `name` are set by the caller, never options. A value must have its
    default's type (an int where the default is an int; a float default takes an int too, a
    tuple default a list), and an integer whose default is positive (a size or a count: a
    ViT's `num_layers`, `num_heads`, `patch_size`) must be positive; other values are checked
    by the builder.

    Args:
        architecture: a `list_encoders()` name.
        options: `{argument: value}`.
        section: what the messages call the options (`"encoder"` for a recipe's
            `model.encoder: {name, **options}`). Defaults to `"encoder_options"`.

    Raises:
        ValueError: naming the section, the option, the architecture and what it takes.

    Example:

    >>> import clzoo
    >>> clzoo.models.check_encoder_options("vit_small_patch4", {"num_layers": 2})
    >>> clzoo.models.check_encoder_options("resnet20", {"depth": 8})
    Traceback (most recent call last):
    ...
    ValueError: unknown encoder_options argument 'depth' of resnet20; known: mean, std.
    """
    builder = ENCODERS.get(architecture)
    check_kwargs(builder, options, section, owner=architecture, skip=("input_shape", "name"))
    params = inspect.signature(builder).parameters
    for key, value in options.items():
        default = params[key].default
        if not _same_kind(value, default):
            raise ValueError(f"{section} {key!r} of {architecture} takes a value like its "
                             f"default {default!r}, not {value!r}.")
        if type(default) is int and default > 0 and value <= 0:
            raise ValueError(f"{section} {key!r} of {architecture} is a size or a count: a positive "
                             f"integer like its default {default!r}, not {value!r}.")
    if "mean" in options or "std" in options:  # every builder takes both (pixels in [0, 1])
        try:
            check_mean_std(options.get("mean", params["mean"].default),
                           options.get("std", params["std"].default), 3)
        except ValueError as error:
            raise ValueError(f"{architecture}: {error}") from None
    check = ENCODERS.entry(architecture).metadata.get("check")
    if check is not None:  # sizes the builder could not allocate, before any weight is made
        check(**options)


def _same_kind(value, default):
    """`value` fits where `default` stands: anything for None, numbers for a float, a list or
    tuple for a tuple, else the default's own type (bool and int kept apart)."""
    if default is None or default is inspect.Parameter.empty:
        return True
    if isinstance(value, bool) != isinstance(default, bool):
        return False
    if isinstance(default, float):
        return isinstance(value, (int, float))
    return isinstance(value, (list, tuple) if isinstance(default, tuple) else type(default))
