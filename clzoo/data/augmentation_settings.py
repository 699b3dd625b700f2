"""The settings of the augmentation pipelines, and the named view recipes: no TensorFlow here.

`ViewConfig` (per-image SupCon / SimCLR views), `BatchViewConfig` (airbench's batch-wise
views) and `MixConfig` (MixUp / CutMix soft targets) are plain dataclasses, validated on
construction, that both the tf.data stream (`clzoo.data.tf_data_stream`) and the device stream
(`clzoo.data.device_stream`) read; recipes are checked by building them, so a recipe
loads where TensorFlow is not installed.
"""

import dataclasses
import functools
import math
import numbers
from dataclasses import asdict, dataclass, field, fields, replace

from clzoo.registry import Registry, check_kwargs

# Largest view side: one float32 8192x8192 view is 768 MiB, eight times the side of the largest
# input of keras-hub's image backbones (SAM, 1024); a larger one is a typo (1e23 overflowed the
# step-memory estimate).
MAX_VIEW_SIZE = 8192


def _check_whole(name, value, low):
    """A whole-number setting `>= low` (`size` also `<= MAX_VIEW_SIZE`)."""
    high = MAX_VIEW_SIZE if name == "size" else None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low \
            or (high is not None and value > high):
        expected = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"`{name}` must be a whole number {expected}. Received: {name}={value!r}")


@dataclass
class ViewConfig:
    """Parameters of the multi-view augmentation.

    Attributes:
        views: views per image. Defaults to `2`.
        size: output height and width in pixels, at most `MAX_VIEW_SIZE` (8192). Defaults to `32`.
        crop_scale: area fraction range of the random resized crop.
            Defaults to `(0.2, 1.0)` (SupCon CIFAR).
        crop_ratio: aspect ratio range. Defaults to `(3/4, 4/3)`.
        flip: random horizontal flip with p=0.5. Defaults to `True`.
        jitter: `(brightness, contrast, saturation, hue)` strengths as in
            torchvision's `ColorJitter`. Defaults to `(0.4, 0.4, 0.4, 0.1)`.
        jitter_p: probability of applying the colour jitter. Defaults to `0.8`.
        grayscale_p: probability of converting to grayscale. Defaults to `0.2`.
        randaugment_ops: RandAugment operations per view (0: off), drawn
            after the flip and before the colour jitter ("Stacked
            RandAugment", SupCon supp. sec. 10.2). Defaults to `0`.
        randaugment_magnitude: RandAugment magnitude on its 0-30 scale.
            Defaults to `9`.
        blur_p: probability of a Gaussian blur (sigma U[0.1, 2.0] pixels of a
            224 image scaled to `size`, kernel 10% of the side; SimCLR app. A).
            Defaults to `0`.
        solarize_p: probability of solarization at 0.5 (BYOL). Defaults to `0`.
        per_view: overrides per view index, e.g. `({"blur_p": 1.0},
            {"blur_p": 0.1, "solarize_p": 0.2})` for asymmetric views; view
            `v` uses `per_view[v % len(per_view)]`. Defaults to `()`.
    """

    views: int = 2
    size: int = 32
    crop_scale: tuple = (0.2, 1.0)
    crop_ratio: tuple = (3 / 4, 4 / 3)
    flip: bool = True
    jitter: tuple = field(default=(0.4, 0.4, 0.4, 0.1))
    jitter_p: float = 0.8
    grayscale_p: float = 0.2
    randaugment_ops: int = 0
    randaugment_magnitude: float = 9.0
    blur_p: float = 0.0
    solarize_p: float = 0.0
    per_view: tuple = ()

    def __post_init__(self):
        self.crop_scale, self.crop_ratio = tuple(self.crop_scale), tuple(self.crop_ratio)
        self.jitter = tuple(self.jitter)
        for name in ("views", "size", "randaugment_ops"):
            _check_whole(name, getattr(self, name), 0 if name == "randaugment_ops" else 1)
        lo, hi = self.crop_scale
        if not 0 < lo <= hi <= 1:
            raise ValueError(
                "`crop_scale` must satisfy 0 < low <= high <= 1. "
                f"Received: crop_scale={tuple(self.crop_scale)!r}"
            )
        if len(self.crop_ratio) != 2 or not 0 < self.crop_ratio[0] <= self.crop_ratio[1] < math.inf:
            raise ValueError("`crop_ratio` must satisfy 0 < low <= high (finite). "
                             f"Received: crop_ratio={self.crop_ratio!r}")
        for name in ("jitter_p", "grayscale_p", "blur_p", "solarize_p"):
            value = getattr(self, name)
            if not 0 <= value <= 1:
                raise ValueError(f"`{name}` must be in [0, 1]. Received: {name}={value!r}")
        if len(self.jitter) != 4 or min(self.jitter) < 0 or self.jitter[3] > 0.5:
            raise ValueError(
                "`jitter` must be (brightness, contrast, saturation, hue) with "
                f"non-negative values and hue <= 0.5. Received: jitter={tuple(self.jitter)!r}"
            )

        if not 0 <= self.randaugment_magnitude <= 30:
            raise ValueError(
                "`randaugment_magnitude` must be in [0, 30]. "
                f"Received: randaugment_magnitude={self.randaugment_magnitude!r}"
            )
        self.per_view = tuple(dict(o) for o in self.per_view)
        for override in self.per_view:
            unknown = (set(override) - {f.name for f in fields(self)}
                       | ({"views", "size", "per_view"} & set(override)))
            if unknown:
                raise ValueError(f"`per_view` can override view settings only. Received: {sorted(unknown)}")
            replace(self, per_view=(), **override)  # validates the values

    def for_view(self, view):
        """The settings of view number `view` (applies `per_view`)."""
        if not self.per_view:
            return self
        return replace(self, per_view=(), **self.per_view[view % len(self.per_view)])

    def to_dict(self):
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}



FLIPS = ("alternating", "random", "none")
MAX_VIEWS = 8  # seed keys: position * 16 + view for the shifts, + 15 for the random flip


@dataclass
class BatchViewConfig:
    """airbench's batch-wise views (recipe `views: {recipe: airbench, ...}`).

    Attributes:
        views: views per image, 1 to 8. View `v` of an image is mirrored when
            view 0 is not, for odd `v`. Defaults to `1`.
        size: height and width of the images (no resize; the data must have
            it), at most `MAX_VIEW_SIZE` (8192). Defaults to `32`.
        translate: largest shift in pixels, drawn per image and view from
            `[-translate, translate]` on each axis (reflection padding);
            `0` for none. Defaults to `2` (airbench94).
        flip: `"alternating"` (airbench), `"random"` (p = 0.5 per image and
            epoch) or `"none"`. Defaults to `"alternating"`.
    """

    views: int = 1
    size: int = 32
    translate: int = 2
    flip: str = "alternating"

    def __post_init__(self):
        for name, low in (("views", 1), ("size", 1), ("translate", 0)):
            _check_whole(name, getattr(self, name), low)
        if self.views > MAX_VIEWS:
            raise ValueError(f"`views` must be at most {MAX_VIEWS} (each view draws from a seed of "
                             f"its own). Received: views={self.views!r}")
        if self.translate >= self.size:
            raise ValueError(f"`translate` must be below the image size {self.size}. "
                             f"Received: translate={self.translate!r}")
        if self.flip not in FLIPS:
            raise ValueError(f"`flip` must be one of {', '.join(map(repr, FLIPS))}. "
                             f"Received: flip={self.flip!r}")

    def to_dict(self):
        return asdict(self)



@dataclasses.dataclass
class MixConfig:
    """Soft-target settings (defaults: the DeiT / soft-target InfoNCE ImageNet recipe).

    Attributes:
        mixup_alpha: Beta(alpha, alpha) of MixUp; 0 disables MixUp. Defaults to `0.8`.
        cutmix_alpha: Beta(alpha, alpha) of CutMix's area; 0 disables it. Defaults to `1.0`.
        switch_prob: probability that a batch uses CutMix when both are on. Defaults to `0.5`.
        mix_prob: probability that a batch is mixed at all. Defaults to `1.0`.
        label_smoothing: epsilon of label smoothing, `(1 - eps) onehot + eps / classes`.
            Defaults to `0.1`.
    """

    mixup_alpha: float = 0.8
    cutmix_alpha: float = 1.0
    switch_prob: float = 0.5
    mix_prob: float = 1.0
    label_smoothing: float = 0.1

    def __post_init__(self):
        for name in ("mixup_alpha", "cutmix_alpha"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and value >= 0):
                raise ValueError(f"`{name}` must be a number >= 0. Received: {name}={value!r}")
        for name in ("switch_prob", "mix_prob", "label_smoothing"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and 0 <= value <= 1):
                raise ValueError(f"`{name}` must be in [0, 1]. Received: {name}={value!r}")



# Named view recipes: (description with source, ViewConfig fields). `size` is the caller's,
# else the recipe's own `size` (digits: 16), else 32.
def _from_settings(name, settings, size=None, views=2):
    settings = dict(settings)
    own_size = settings.pop("size", 32)
    size = int(own_size if size is None else size)
    if name == "simclr" and size >= 96:
        settings["blur_p"] = 0.5
    return ViewConfig(views=views, size=size, **settings)


_RECIPES = {  # name: (description, ViewConfig fields)
    "supcon": ("SupCon / SINCERE CIFAR views: crop 0.2-1, flip, jitter 0.4/0.4/0.4/0.1 p=0.8, "
               "grayscale p=0.2 (SupCon reference code)", {}),
    "simclr": ("SimCLR views: crop 0.08-1, flip, jitter 0.8/0.8/0.8/0.2 p=0.8, grayscale p=0.2, "
               "Gaussian blur p=0.5 for images of 96 px and up (SimCLR app. A)",
               {"crop_scale": (0.08, 1.0), "jitter": (0.8, 0.8, 0.8, 0.2)}),
    "randaugment": ("crop 0.2-1, flip, RandAugment N=2 M=9 (SupCon supp. sec. 10.2)",
                    {"jitter_p": 0.0, "grayscale_p": 0.0, "randaugment_ops": 2}),
    "stacked_randaugment": ("Stacked RandAugment: RandAugment N=2 M=9 before the SupCon jitter and "
                            "grayscale (SupCon supp. sec. 10.2)", {"randaugment_ops": 2}),
    "asymmetric": ("BYOL-style asymmetric pair: SimCLR views, view 1 always blurred, view 2 blurred "
                   "p=0.1 and solarized p=0.2 (Grill et al. 2020, Table 6)",
                   {"crop_scale": (0.08, 1.0), "jitter": (0.4, 0.4, 0.2, 0.1),
                    "per_view": ({"blur_p": 1.0}, {"blur_p": 0.1, "solarize_p": 0.2})}),
    "digits": ("Grey 8x8 digits (the quickstart, recipes/sincere_digits.yaml): 16 px views, crop 0.8-1 "
               "(keeps the strokes), no flip (a mirrored digit is another symbol), brightness / "
               "contrast jitter 0.4 p=0.8, no saturation, hue or grayscale (grey images)",
               {"size": 16, "crop_scale": (0.8, 1.0), "flip": False, "jitter": (0.4, 0.4, 0.0, 0.0),
                "grayscale_p": 0.0}),
}

VIEW_RECIPES = Registry("view recipe")
for _name, (_description, _settings) in _RECIPES.items():
    VIEW_RECIPES.register(_name, functools.partial(_from_settings, _name, _settings),
                          description=_description)


def view_recipe(name, size=None, views=2):
    """The `ViewConfig` of a named view recipe.

    Deviations from the papers' pipelines: crops and colour ops are
    `tf.image` ops with stateless seeds (repeatable per image and view);
    RandAugment leaves out equalize and sharpness (no stateless TF op) and
    fills warped borders with grey; the blur is skipped below 96 px for
    `simclr`, as SimCLR does on CIFAR.

    Args:
        name: a name in the `VIEW_RECIPES` registry (`supcon`, `simclr`, `randaugment`,
            `stacked_randaugment`, `asymmetric`, `digits`).
        size: output side in pixels. Defaults to the recipe's own size: `16`
            for `digits`, `32` for the others.
        views: views per image. Defaults to `2`.

    Example:

    >>> from clzoo.data.tf_data_views import view_recipe
    >>> view_recipe("simclr", size=96).blur_p
    0.5
    >>> view_recipe("digits").size, view_recipe("digits").flip
    (16, False)
    """
    return VIEW_RECIPES.get(name)(size=size, views=views)


BATCH_VIEWS = "airbench"  # the views recipe name of BatchViewConfig


def views_from_config(spec):
    """`ViewConfig` from a recipe's `views` section: fields, optionally on top of `recipe: <name>`.

    `recipe: airbench` gives a `BatchViewConfig` instead (airbench's batch-wise
    alternating flip and translate; fields `views`, `size`, `translate`, `flip`).

    Raises:
        ValueError: an unknown view recipe or field, or a value `ViewConfig` refuses.
    """
    spec = dict(spec or {})
    name = spec.pop("recipe", None)
    if name == BATCH_VIEWS:
        check_kwargs(BatchViewConfig, spec, "views")
        return BatchViewConfig(**spec)
    check_kwargs(ViewConfig, spec, "views")
    if name is None:
        return ViewConfig(**spec)
    base = view_recipe(name, size=spec.get("size"), views=spec.get("views", 2)).to_dict()
    return ViewConfig(**{**base, **spec})
