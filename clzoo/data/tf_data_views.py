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
That is what `color_jitter` does (factors drawn from U[max(0, 1-x), 1+x], as
torchvision). The crop samples area and log aspect ratio as torchvision does (10
attempts, ratio 3/4..4/3, the same rule as the device stream's `view_draws`).

Every draw uses a seed of its own derived from a per-image seed, so views
differ per image and per view, and a run is repeatable given the seed.
"""

import math
from dataclasses import fields, replace

import tensorflow as tf

from clzoo.data.augmentation_settings import VIEW_RECIPES, ViewConfig, view_recipe  # noqa: F401  (their old home)


def _uniform(seed, low, high):
    return tf.random.stateless_uniform([], seed, minval=low, maxval=high)


def _grayscale(image):
    return tf.image.grayscale_to_rgb(tf.image.rgb_to_grayscale(image))


def random_resized_crop(image, seed, size, scale, ratio, attempts=10):
    """Crop a random area fraction in `scale` with aspect ratio in `ratio`, resize to `size`.

    torchvision's `RandomResizedCrop.get_params` in stateless TF ops, the rule of the device
    stream's `clzoo.data.device_view_draws.crop_boxes`: up to `attempts` draws of an area fraction
    and a log-uniform aspect ratio, the first that fits kept, else a centre crop clamped to
    `ratio`. (SimCLR's `sample_distorted_bounding_box` draws another distribution: mean area
    0.50 against torchvision's 0.55 for a 0.2-1 scale, so the two streams trained other crops.)
    """
    box = crop_box(tf.shape(image), seed, scale, ratio, attempts)
    crop = tf.slice(image, [box[0], box[1], 0], [box[2], box[3], -1])
    return tf.image.resize(crop, (size, size), method="bilinear")


def crop_box(shape, seed, scale, ratio, attempts=10):
    """int32 `[top, left, h, w]` of `random_resized_crop` for an image of `shape` `(H, W, C)`."""
    height, width = tf.cast(shape[0], tf.float32), tf.cast(shape[1], tf.float32)
    seeds = tf.random.experimental.stateless_split(seed, 3)
    targets = height * width * tf.random.stateless_uniform([attempts], seeds[0], scale[0], scale[1])
    aspects = tf.exp(tf.random.stateless_uniform([attempts], seeds[1], math.log(ratio[0]),
                                                 math.log(ratio[1])))
    w, h = tf.round(tf.sqrt(targets * aspects)), tf.round(tf.sqrt(targets / aspects))
    fits = (w > 0) & (w <= width) & (h > 0) & (h <= height)
    first = tf.argmax(tf.cast(fits, tf.int32))
    found = tf.gather(fits, first)
    low, high = min(ratio), max(ratio)
    aspect = width / height  # the fallback: the whole image, clamped to the ratio range
    h_fallback = tf.where(aspect < low, tf.round(width / low), height)
    w_fallback = tf.where(aspect > high, tf.round(height * high), width)
    h = tf.where(found, tf.gather(h, first), h_fallback)
    w = tf.where(found, tf.gather(w, first), w_fallback)
    u = tf.random.stateless_uniform([2], seeds[2])
    top = tf.where(found, tf.floor(u[0] * (height - h + 1)), tf.floor((height - h) / 2))
    left = tf.where(found, tf.floor(u[1] * (width - w + 1)), tf.floor((width - w) / 2))
    return tf.cast(tf.stack([top, left, h, w]), tf.int32)


def color_jitter(image, seed, brightness, contrast, saturation, hue):
    """torchvision-style colour jitter with a random order of the four adjustments.

    `image` is float32 in [0, 1]; factors as in `torchvision.transforms.ColorJitter`.
    """
    seeds = tf.random.experimental.stateless_split(seed, num=5)

    def adjust_brightness(x):
        return tf.clip_by_value(x * _uniform(seeds[0], max(0.0, 1 - brightness), 1 + brightness), 0, 1)

    def adjust_contrast(x):
        mean = tf.reduce_mean(tf.image.rgb_to_grayscale(x))
        factor = _uniform(seeds[1], max(0.0, 1 - contrast), 1 + contrast)
        return tf.clip_by_value((x - mean) * factor + mean, 0, 1)

    def adjust_saturation(x):
        gray = _grayscale(x)
        factor = _uniform(seeds[2], max(0.0, 1 - saturation), 1 + saturation)
        return tf.clip_by_value(gray + (x - gray) * factor, 0, 1)

    def adjust_hue(x):
        return tf.image.adjust_hue(x, _uniform(seeds[3], -hue, hue))

    branches = [adjust_brightness, adjust_contrast, adjust_saturation, adjust_hue]
    order = tf.random.experimental.stateless_shuffle(tf.range(4), seed=seeds[4])
    for step in range(4):
        image = tf.switch_case(order[step], [lambda f=f, x=image: f(x) for f in branches])
    return image


def gaussian_blur(image, seed, size):
    """SimCLR's blur: sigma ~ U[0.1, 2.0] (for 224 px, scaled to `size`), kernel 10% of the side."""
    sigma = _uniform(seed, 0.1, 2.0) * size / 224.0
    radius = max(1, int(size * 0.1) // 2)
    offsets = tf.range(-radius, radius + 1, dtype=tf.float32)
    kernel = tf.exp(-0.5 * tf.square(offsets / tf.maximum(sigma, 1e-3)))
    kernel = kernel / tf.reduce_sum(kernel)
    x = image[None]
    horizontal = tf.tile(tf.reshape(kernel, (1, -1, 1, 1)), (1, 1, 3, 1))
    vertical = tf.tile(tf.reshape(kernel, (-1, 1, 1, 1)), (1, 1, 3, 1))
    x = tf.pad(x, [[0, 0], [radius, radius], [radius, radius], [0, 0]], mode="REFLECT")
    x = tf.nn.depthwise_conv2d(x, horizontal, (1, 1, 1, 1), "VALID")
    x = tf.nn.depthwise_conv2d(x, vertical, (1, 1, 1, 1), "VALID")
    return x[0]


def _affine(image, matrix, shift=(0.0, 0.0)):
    """Warp about the image centre; `matrix` (2, 2) maps output offsets to input offsets,
    `shift` (x, y) in pixels is added to them."""
    h, w = tf.cast(tf.shape(image)[0], tf.float32), tf.cast(tf.shape(image)[1], tf.float32)
    cy, cx = (h - 1) / 2, (w - 1) / 2
    (a, b), (c, d) = matrix
    transform = tf.stack([a, b, cx - a * cx - b * cy + shift[0], c, d, cy - c * cx - d * cy + shift[1],
                          0.0, 0.0])
    out = tf.raw_ops.ImageProjectiveTransformV3(
        images=image[None], transforms=transform[None], output_shape=tf.shape(image)[:2],
        fill_value=0.5, interpolation="BILINEAR", fill_mode="CONSTANT")
    return out[0]


def rand_augment(image, seed, num_ops, magnitude):
    """RandAugment (Cubuk et al. 2020): `num_ops` operations drawn uniformly per image.

    Operations at strength `magnitude / 30`, each with a random sign where it
    has one: identity, auto-contrast, brightness, contrast, colour
    (saturation), sharpness-free posterize (bits 8 -> 4), solarize
    (threshold 1 -> 0), rotate (up to 30 degrees), shear x / y (up to 0.3),
    translate x / y (up to 45% of 100 px, i.e. 0.45 of the side scaled).
    Equalize and sharpness have no stateless tf op and are left out.
    """
    level = magnitude / 30.0
    seeds = tf.random.experimental.stateless_split(seed, num=2 * num_ops)
    bits = 8 - int(round(4 * level))

    def signed(s, scale):
        return scale * level * tf.where(_uniform(s, 0.0, 1.0) < 0.5, -1.0, 1.0)

    def op(index, x, s):
        # Each branch computes only what it needs: switch_case runs one of them.
        def auto_contrast():
            low = tf.reduce_min(x, axis=[0, 1], keepdims=True)
            high = tf.reduce_max(x, axis=[0, 1], keepdims=True)
            return (x - low) / tf.maximum(high - low, 1e-3)

        def contrast():
            mean = tf.reduce_mean(x)
            return (x - mean) * (1.0 + signed(s, 0.9)) + mean

        def colour():
            gray = _grayscale(x)
            return gray + (x - gray) * (1.0 + signed(s, 0.9))

        def posterize():
            levels = tf.bitwise.right_shift(tf.cast(x * 255, tf.int32), 8 - bits)
            return tf.cast(tf.bitwise.left_shift(levels, 8 - bits), tf.float32) / 255.0

        def rotate():
            angle = signed(s, 30.0) * math.pi / 180.0
            return _affine(x, [[tf.cos(angle), -tf.sin(angle)], [tf.sin(angle), tf.cos(angle)]])

        def translate(axis):
            offset = signed(s, 0.45) * tf.cast(tf.shape(x)[0], tf.float32)
            return _affine(x, [[1.0, 0.0], [0.0, 1.0]], (offset, 0.0) if axis == 0 else (0.0, offset))

        branches = [
            lambda: x,
            auto_contrast,
            lambda: x * (1.0 + signed(s, 0.9)),
            contrast,
            colour,
            posterize,
            lambda: tf.where(x < 1.0 - level, x, 1.0 - x),
            rotate,
            lambda: _affine(x, [[1.0, signed(s, 0.3)], [0.0, 1.0]]),
            lambda: _affine(x, [[1.0, 0.0], [signed(s, 0.3), 1.0]]),
            lambda: translate(0),
            lambda: translate(1),
        ]
        return tf.clip_by_value(tf.switch_case(index, branches), 0.0, 1.0)

    for i in range(num_ops):
        index = tf.random.stateless_uniform([], seeds[2 * i], 0, 12, dtype=tf.int32)
        image = op(index, image, seeds[2 * i + 1])
    return image


def augment_view(image, seed, config):
    """One augmented view of an image, in the order of the module docstring.

    Inside a graph (a `tf.data` map function, `tf.map_fn`) the ops are traced
    once per view settings and image shape and dtype in a process
    (`_view_function`), then reused by every later view and pipeline of the
    same settings; called eagerly, they run op by op.

    Args:
        image: uint8 `(H, W, 3)` tensor (or float32 in [0, 1]).
        seed: int32 or int64 `(2,)` stateless seed: the same seed gives the same view.
        config: `ViewConfig`; its `per_view` is not applied here (pass `config.for_view(v)`).

    Returns:
        float32 `(config.size, config.size, 3)` in [0, 1].

    Raises:
        ValueError: inside a graph, a `config` edited after construction to a
            value `ViewConfig` refuses (the traced copy is validated again).

    Source: the SupCon reference code's CIFAR views (`main_supcon.py`), the
    optional ops as in `ViewConfig`'s attributes (RandAugment, SimCLR's blur,
    BYOL's solarization).

    Example:

    >>> import numpy as np, tensorflow as tf, clzoo
    >>> image = tf.constant(np.full((32, 32, 3), 128, np.uint8))
    >>> seed = tf.constant([0, 1], tf.int64)
    >>> view = clzoo.data.augment_view(image, seed, clzoo.data.ViewConfig(size=16))
    >>> tuple(view.shape), view.dtype.name
    ((16, 16, 3), 'float32')
    >>> bool(np.array_equal(view, clzoo.data.augment_view(image, seed, clzoo.data.ViewConfig(size=16))))
    True
    """
    if tf.executing_eagerly() or type(config) is not ViewConfig:  # nothing to trace twice
        return _augment_view(image, seed, config)
    return _view_function(config)(image, seed)


_VIEW_FUNCTIONS = {}  # settings -> traced view function, oldest dropped past _MAX_VIEW_FUNCTIONS
_MAX_VIEW_FUNCTIONS = 64  # bounded: a notebook may try many settings


def _view_function(config):
    """The view ops of `config` as a `tf.function`, traced once per image shape and dtype.

    Tracing the jitter's 16 switch branches and the crop cost about 0.9 s per view on 2 cores,
    paid again by each view of each pipeline built. Keyed by the settings' `repr`, which tells
    `10` from `np.float32(10)` (they round differently); `per_view` is applied by the caller.
    """
    key = repr([(f.name, getattr(config, f.name)) for f in fields(config)
                if f.name not in ("views", "per_view")])
    function = _VIEW_FUNCTIONS.get(key)
    if function is None:
        frozen = replace(config)  # a validated copy: later edits to `config` cannot reach it
        function = tf.function(lambda image, seed: _augment_view(image, seed, frozen),
                               autograph=False, reduce_retracing=True)
        if len(_VIEW_FUNCTIONS) >= _MAX_VIEW_FUNCTIONS:
            del _VIEW_FUNCTIONS[next(iter(_VIEW_FUNCTIONS))]
        _VIEW_FUNCTIONS[key] = function
    return function


def _augment_view(image, seed, config):
    seeds = tf.random.experimental.stateless_split(seed, num=9)
    x = tf.image.convert_image_dtype(image, tf.float32)
    x = random_resized_crop(x, seeds[0], config.size, tuple(config.crop_scale),
                            tuple(config.crop_ratio))
    if config.flip:
        x = tf.cond(_uniform(seeds[1], 0.0, 1.0) < 0.5,
                    lambda: tf.image.flip_left_right(x), lambda: x)
    if config.randaugment_ops > 0:
        x = rand_augment(x, seeds[5], int(config.randaugment_ops), config.randaugment_magnitude)
    if config.jitter_p > 0 and any(config.jitter):
        x = tf.cond(_uniform(seeds[2], 0.0, 1.0) < config.jitter_p,
                    lambda: color_jitter(x, seeds[3], *config.jitter), lambda: x)
    if config.grayscale_p > 0:
        x = tf.cond(_uniform(seeds[4], 0.0, 1.0) < config.grayscale_p,
                    lambda: _grayscale(x), lambda: x)
    if config.blur_p > 0:
        x = tf.cond(_uniform(seeds[6], 0.0, 1.0) < config.blur_p,
                    lambda: gaussian_blur(x, seeds[7], config.size), lambda: x)
    if config.solarize_p > 0:
        x = tf.cond(_uniform(seeds[8], 0.0, 1.0) < config.solarize_p,
                    lambda: tf.where(x < 0.5, x, 1.0 - x), lambda: x)
    return tf.ensure_shape(tf.clip_by_value(x, 0.0, 1.0), (config.size, config.size, 3))


def multi_view(image, seed, config):
    """`config.views` independent views of one image: float32 `(views, size, size, 3)`."""
    seeds = tf.random.experimental.stateless_split(seed, num=config.views)
    return tf.stack([augment_view(image, seeds[v], config.for_view(v)) for v in range(config.views)])


