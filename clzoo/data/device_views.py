"""The views' pixels on the accelerator: `keras.ops` on whole batches, no TensorFlow.

Given the host-side draws of `clzoo.data.device_view_draws` (source coordinates and
colour factors per image), a batch of uint8 images already on the device
becomes its views in a few batched ops:

- `sample`: a bilinear resampling written as two small matrix products per
  image (`(size, H)` and `(size, W)` interpolation matrices with two non-zeros
  per row), which covers the random resized crop, the flip and airbench's
  reflect-padded translate at once;
- `color_jitter`: torchvision's `ColorJitter` (brightness, contrast and
  saturation factors, hue shift) in a random order per image, as
  `clzoo.data.tf_data_views.color_jitter` does in tf.data;
- grayscale and solarization as masked blends.

Keras' preprocessing layers are not used here: they draw from stateful seed
generators (a run could not resume by step) and some draw one crop per batch
(`RandomCrop`), and `RandomColorJitter` scales its factors otherwise than the
SupCon code (see `clzoo.data.tf_data_views`).
"""

import numpy as np
from keras import ops

_GRAY = (0.2989, 0.5870, 0.1140)  # tf.image.rgb_to_grayscale's weights (ITU-R 601)


def _interpolation(coordinates, length):
    """`(B, size, length)` float32 bilinear weights of source `coordinates` `(B, size)`."""
    low = ops.floor(coordinates)
    weight = coordinates - low
    low = ops.cast(low, "int32")
    high = ops.minimum(low + 1, length - 1)
    return (ops.one_hot(low, length) * (1.0 - weight)[..., None]
            + ops.one_hot(high, length) * weight[..., None])


def sample(images, rows, cols):
    """Resample `(B, H, W, C)` float images at source `rows` `(B, S)` and `cols` `(B, T)`.

    Returns `(B, S, T, C)`: output pixel `(i, j)` is the bilinear value of the
    source at `(rows[:, i], cols[:, j])` (integer coordinates copy pixels exactly).
    """
    height, width = images.shape[1], images.shape[2]
    rows, cols = ops.convert_to_tensor(rows, "float32"), ops.convert_to_tensor(cols, "float32")
    along_rows = ops.einsum("bsh,bhwc->bswc", _interpolation(rows, height), images)
    return ops.einsum("btw,bswc->bstc", _interpolation(cols, width), along_rows)


def _gray(images):
    weights = ops.convert_to_tensor(_GRAY, dtype=images.dtype)
    return ops.sum(images * weights, axis=-1, keepdims=True)


def _per_image(values):
    return values[:, None, None, None]


def _blend(images, which, factors):
    """Brightness, contrast or saturation, per image by `which` `(B,)` in {0, 1, 2}, in one pass.

    All three are `clip(ref + (x - ref) * factor)` (torchvision's `_blend`), with `ref` 0,
    the image's mean gray or the pixel's gray; `which` 3 (hue) gives a value that is discarded.
    """
    gray = _gray(images)
    mean = ops.mean(gray, axis=(1, 2, 3), keepdims=True)
    kind = _per_image(which)
    ref = ops.where(kind == 0, 0.0, ops.where(kind == 1, mean, gray))
    factor = ops.take_along_axis(factors, ops.minimum(which, 2)[:, None], axis=1)[:, 0]
    return ops.clip(ref + (images - ref) * _per_image(factor), 0.0, 1.0)


def _hue(images, shift):
    hsv = ops.image.rgb_to_hsv(images)
    hue = ops.mod(hsv[..., :1] + shift, 1.0)
    return ops.image.hsv_to_rgb(ops.concatenate([hue, hsv[..., 1:]], axis=-1))


def color_jitter(images, factors, order, strengths):
    """torchvision's ColorJitter per image: the four adjustments in each image's `order` `(B, 4)`.

    Each of the four places of the order is one blend pass (brightness, contrast and
    saturation share a form) plus the hue shift for the images whose hue falls there. With
    `order` a NumPy array (eager backends) the hue's HSV round trip runs on those images
    only; with a tensor (JAX's jit: static shapes) on the whole batch, then selected.

    Args:
        images: `(B, H, W, 3)` float32 in [0, 1].
        factors: `(B, 4)` float32: brightness, contrast, saturation factors and hue shift.
        order: `(B, 4)` int32: a permutation of `0..3` per image (NumPy or tensor).
        strengths: the config's `(brightness, contrast, saturation, hue)`; an adjustment of
            strength 0 is the identity and is skipped.
    """
    active = ops.convert_to_tensor([bool(s) for s in strengths])
    for slot in range(4):
        step = order[:, slot]
        which = ops.convert_to_tensor(step, "int32")
        out = images
        if any(strengths[:3]):
            out = _masked(ops.take(active, which) & (which < 3), _blend(images, which, factors), out)
        if strengths[3]:
            out = _with_hue(images, out, factors, step, which)
        images = out
    return images


def _with_hue(images, out, factors, step, which):
    """`out` with the hue shift of `images` where the slot's adjustment is 3: only those images
    when `step` (its host copy) is a NumPy array, else the whole batch, selected by `which`."""
    if not isinstance(step, np.ndarray):
        return _masked(which == 3, _hue(images, _per_image(factors[:, 3])), out)
    (rows,) = np.nonzero(step == 3)
    if not len(rows):
        return out
    shifted = _hue(ops.take(images, rows, axis=0), _per_image(ops.take(factors[:, 3], rows)))
    source = np.arange(len(step))
    source[rows] = len(step) + np.arange(len(rows))  # row b of the result: out's, or its shifted one
    return ops.take(ops.concatenate([out, shifted], axis=0), source, axis=0)


def _masked(mask, changed, images):
    return ops.where(_per_image(mask), changed, images)


def per_image_view(images, draws, config):
    """One `ViewConfig` view of a float32 `(B, H, W, 3)` batch in [0, 1] from its `draws`.

    Crop, resize and flip (`sample`), then the colour jitter with probability
    `jitter_p`, grayscale, and solarization at 0.5; `(B, size, size, 3)` in [0, 1].
    RandAugment and the Gaussian blur have no device form (`why_no_device_form`).
    """
    out = sample(images, draws["rows"], draws["cols"])
    if config.jitter_p > 0 and any(config.jitter):
        jittered = color_jitter(out, draws["factors"], draws["order"], config.jitter)
        out = _masked(draws["jitter"], jittered, out)
    if config.grayscale_p > 0:
        out = _masked(draws["grayscale"], ops.repeat(_gray(out), 3, axis=-1), out)
    if config.solarize_p > 0:
        out = _masked(draws["solarize"], ops.where(out < 0.5, out, 1.0 - out), out)
    return ops.clip(out, 0.0, 1.0)


def why_no_device_form(config):
    """`None` when every setting of `config` (a ViewConfig or BatchViewConfig) runs on the
    device, else a short reason naming the setting that does not."""
    from clzoo.data.augmentation_settings import BatchViewConfig

    if isinstance(config, BatchViewConfig):
        return None
    for view in range(max(len(config.per_view), 1)):
        settings = config.for_view(view)
        if settings.randaugment_ops:
            return "views.randaugment_ops (RandAugment) has no device form"
        if settings.blur_p:
            return "views.blur_p (the Gaussian blur) has no device form"
    return None
