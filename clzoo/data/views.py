"""Random augmented views per image, in tf.data, for any Keras backend.

The SupCon CIFAR recipe (Khosla et al. reference code, `main_supcon.py`):

    RandomResizedCrop(size, scale=(0.2, 1.0))
    RandomHorizontalFlip()
    RandomApply([ColorJitter(0.4, 0.4, 0.4, 0.1)], p=0.8)
    RandomGrayscale(p=0.2)

written here with `tf.image` ops and stateless seeds. Keras's
`RandomColorJitter` parameterizes brightness additively and saturation / hue
on other scales than torchvision's `ColorJitter`, and applies the four
adjustments in a fixed order; the paper's jitter multiplies brightness by
U[1-b, 1+b], blends contrast and saturation with factors U[1-c, 1+c] and
U[1-s, 1+s], shifts hue by U[-h, h] of a turn, in a random order per image.
That is what `color_jitter` does. The crop samples area and log aspect ratio
like torchvision (10 attempts, ratio 3/4..4/3) through
`tf.image.stateless_sample_distorted_bounding_box`, as SimCLR's TF code does.

Every draw uses a seed of its own derived from a per-image seed, so views
differ per image and per view, and a run is repeatable given the seed.
"""

from dataclasses import asdict, dataclass, field

import tensorflow as tf


@dataclass
class ViewConfig:
    """Parameters of the multi-view augmentation.

    Attributes:
        views: views per image. Defaults to `2`.
        size: output height and width in pixels. Defaults to `32`.
        crop_scale: area fraction range of the random resized crop.
            Defaults to `(0.2, 1.0)` (SupCon CIFAR).
        crop_ratio: aspect ratio range. Defaults to `(3/4, 4/3)`.
        flip: random horizontal flip with p=0.5. Defaults to `True`.
        jitter: `(brightness, contrast, saturation, hue)` strengths as in
            torchvision's `ColorJitter`. Defaults to `(0.4, 0.4, 0.4, 0.1)`.
        jitter_p: probability of applying the colour jitter. Defaults to `0.8`.
        grayscale_p: probability of converting to grayscale. Defaults to `0.2`.
    """

    views: int = 2
    size: int = 32
    crop_scale: tuple = (0.2, 1.0)
    crop_ratio: tuple = (3 / 4, 4 / 3)
    flip: bool = True
    jitter: tuple = field(default=(0.4, 0.4, 0.4, 0.1))
    jitter_p: float = 0.8
    grayscale_p: float = 0.2

    def __post_init__(self):
        if int(self.views) < 1:
            raise ValueError(f"`views` must be >= 1. Received: views={self.views!r}")
        lo, hi = self.crop_scale
        if not 0 < lo <= hi <= 1:
            raise ValueError(
                "`crop_scale` must satisfy 0 < low <= high <= 1. "
                f"Received: crop_scale={tuple(self.crop_scale)!r}"
            )
        for name in ("jitter_p", "grayscale_p"):
            value = getattr(self, name)
            if not 0 <= value <= 1:
                raise ValueError(f"`{name}` must be in [0, 1]. Received: {name}={value!r}")
        if len(self.jitter) != 4 or min(self.jitter) < 0 or self.jitter[3] > 0.5:
            raise ValueError(
                "`jitter` must be (brightness, contrast, saturation, hue) with "
                f"non-negative values and hue <= 0.5. Received: jitter={tuple(self.jitter)!r}"
            )

    def to_dict(self):
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


def _uniform(seed, low, high):
    return tf.random.stateless_uniform([], seed, minval=low, maxval=high)


def _grayscale(image):
    return tf.image.grayscale_to_rgb(tf.image.rgb_to_grayscale(image))


def random_resized_crop(image, seed, size, scale, ratio):
    """Crop a random area fraction in `scale` with aspect ratio in `ratio`, resize to `size`."""
    shape = tf.shape(image)
    begin, crop_size, _ = tf.image.stateless_sample_distorted_bounding_box(
        shape,
        bounding_boxes=tf.constant([0.0, 0.0, 1.0, 1.0], shape=[1, 1, 4]),
        seed=seed,
        min_object_covered=0.0,
        aspect_ratio_range=ratio,
        area_range=scale,
        max_attempts=10,
        use_image_if_no_bounding_boxes=True,
    )
    crop = tf.slice(image, begin, crop_size)
    return tf.image.resize(crop, (size, size), method="bilinear")


def color_jitter(image, seed, brightness, contrast, saturation, hue):
    """torchvision-style colour jitter with a random order of the four adjustments.

    `image` is float32 in [0, 1]; factors as in `torchvision.transforms.ColorJitter`.
    """
    seeds = tf.random.experimental.stateless_split(seed, num=5)

    def adjust_brightness(x):
        return tf.clip_by_value(x * _uniform(seeds[0], 1 - brightness, 1 + brightness), 0, 1)

    def adjust_contrast(x):
        mean = tf.reduce_mean(tf.image.rgb_to_grayscale(x))
        factor = _uniform(seeds[1], 1 - contrast, 1 + contrast)
        return tf.clip_by_value((x - mean) * factor + mean, 0, 1)

    def adjust_saturation(x):
        gray = _grayscale(x)
        factor = _uniform(seeds[2], 1 - saturation, 1 + saturation)
        return tf.clip_by_value(gray + (x - gray) * factor, 0, 1)

    def adjust_hue(x):
        return tf.image.adjust_hue(x, _uniform(seeds[3], -hue, hue))

    branches = [adjust_brightness, adjust_contrast, adjust_saturation, adjust_hue]
    order = tf.random.experimental.stateless_shuffle(tf.range(4), seed=seeds[4])
    for step in range(4):
        image = tf.switch_case(order[step], [lambda f=f: f(image) for f in branches])
    return image


def augment_view(image, seed, config):
    """One augmented view of a uint8 `(H, W, 3)` image -> float32 `(size, size, 3)` in [0, 1]."""
    seeds = tf.random.experimental.stateless_split(seed, num=5)
    x = tf.image.convert_image_dtype(image, tf.float32)
    x = random_resized_crop(x, seeds[0], config.size, tuple(config.crop_scale),
                            tuple(config.crop_ratio))
    if config.flip:
        x = tf.cond(_uniform(seeds[1], 0.0, 1.0) < 0.5,
                    lambda: tf.image.flip_left_right(x), lambda: x)
    if config.jitter_p > 0 and any(config.jitter):
        x = tf.cond(_uniform(seeds[2], 0.0, 1.0) < config.jitter_p,
                    lambda: color_jitter(x, seeds[3], *config.jitter), lambda: x)
    if config.grayscale_p > 0:
        x = tf.cond(_uniform(seeds[4], 0.0, 1.0) < config.grayscale_p,
                    lambda: _grayscale(x), lambda: x)
    return tf.ensure_shape(tf.clip_by_value(x, 0.0, 1.0), (config.size, config.size, 3))


def multi_view(image, seed, config):
    """`config.views` independent views of one image: float32 `(views, size, size, 3)`."""
    seeds = tf.random.experimental.stateless_split(seed, num=config.views)
    return tf.stack([augment_view(image, seeds[v], config) for v in range(config.views)])
