"""The random draws of the device stream's views, on the host, in NumPy: tiny arrays per batch.

Every draw of a batch comes from one `numpy.random.Generator` seeded by
`(seed, epoch, position)`, so a batch is a function of the seed and its
place in the run (resumable by step) and is the same on every backend: the
JAX and the torch device streams draw identical crops, shifts and colour
factors. The pixels are then computed on the accelerator
(`clzoo.data.device_views`). The draws are not tf.data's (`clzoo.data.tf_data_views`
uses TensorFlow's stateless RNG): the same seed gives other, equally
distributed views there.

Coordinates are source pixel positions for each output row and column,
`(B, size)` float32, so one bilinear sampler serves the crop-and-resize, the
flip and the reflect-padded translate.
"""

import math

import numpy as np

_COINS, _ORDER, _BATCH = 1, 2, 3  # stream tags: the run's flip coins, epoch orders, batch draws


def generator(seed, *key):
    """`numpy.random.Generator` of `(seed, *key)` (non-negative ints; the seed taken mod 2**63)."""
    return np.random.default_rng([int(seed) % 2**63, *map(int, key)])


def epoch_order(n, seed, epoch, shuffle=True):
    """`(n,)` int64: the images of epoch `epoch` in visiting order."""
    if not shuffle:
        return np.arange(n, dtype=np.int64)
    return generator(seed, _ORDER, epoch).permutation(n)


def image_coins(n, seed):
    """`(n,)` bool: each image's flip coin for the run (the alternating flip's phase)."""
    return generator(seed, _COINS).random(n) < 0.5


def batch_generator(seed, epoch, position):
    """The generator of every draw of the batch starting at `position` of `epoch`."""
    return generator(seed, _BATCH, epoch, position)


def _reflect(index, length):
    """Reflect-pad indices (no edge repeat, as `tf.pad(mode="REFLECT")`) into `[0, length)`."""
    period = 2 * (length - 1) if length > 1 else 1
    index = np.mod(index, period)
    return np.where(index >= length, period - index, index)


def airbench_coordinates(rng, coins, epoch, config, height, width):
    """Row and column coordinates of every view of airbench's batch views (`BatchViewConfig`).

    Returns a list of `config.views` pairs `(rows, cols)`, each `(B, H)` / `(B, W)`
    float32 source indices: view `v` is mirrored when `coins xor (epoch odd) xor (v odd)`
    (alternating), shifted by a per-image `(dy, dx)` in `[-translate, translate]` with
    reflection at the border.
    """
    count = len(coins)
    if config.flip == "alternating":
        first = coins ^ bool(epoch % 2)
    elif config.flip == "random":  # one draw per batch: the odd views mirror view 0, as in tf.data
        first = rng.random(count) < 0.5
    else:
        first = np.zeros(count, bool)
    out = []
    for view in range(config.views):
        mirrored = first ^ bool(view % 2)
        shifts = (rng.integers(-config.translate, config.translate + 1, (count, 2))
                  if config.translate else np.zeros((count, 2), np.int64))
        rows = _reflect(np.arange(height)[None] - shifts[:, :1], height)
        cols = _reflect(np.arange(width)[None] - shifts[:, 1:], width)
        cols = np.where(mirrored[:, None], width - 1 - cols, cols)  # the flip comes first
        out.append((rows.astype(np.float32), cols.astype(np.float32)))
    return out


def crop_boxes(rng, count, height, width, scale, ratio, attempts=10):
    """`(count, 4)` int boxes `(top, left, h, w)`: torchvision's RandomResizedCrop sampling.

    Per image, up to `attempts` draws of an area fraction in `scale` and a log-uniform
    aspect ratio in `ratio`; the first that fits is kept, else a centre crop clamped to
    `ratio` (torchvision `RandomResizedCrop.get_params`, vectorized).
    """
    area = height * width
    targets = area * rng.uniform(scale[0], scale[1], (count, attempts))
    aspects = np.exp(rng.uniform(math.log(ratio[0]), math.log(ratio[1]), (count, attempts)))
    w = np.round(np.sqrt(targets * aspects)).astype(np.int64)
    h = np.round(np.sqrt(targets / aspects)).astype(np.int64)
    fits = (w > 0) & (w <= width) & (h > 0) & (h <= height)
    first = np.argmax(fits, axis=1)
    found = fits[np.arange(count), first]
    h, w = h[np.arange(count), first], w[np.arange(count), first]
    h_fallback, w_fallback = _centre_crop_size(height, width, ratio)
    h, w = np.where(found, h, h_fallback), np.where(found, w, w_fallback)
    u = rng.random((count, 2))
    top = np.where(found, np.floor(u[:, 0] * (height - h + 1)), (height - h) // 2).astype(np.int64)
    left = np.where(found, np.floor(u[:, 1] * (width - w + 1)), (width - w) // 2).astype(np.int64)
    return np.stack([top, left, h, w], axis=1)


def _centre_crop_size(height, width, ratio):
    in_ratio = width / height
    if in_ratio < min(ratio):
        return int(round(width / min(ratio))), width
    if in_ratio > max(ratio):
        return height, int(round(height * max(ratio)))
    return height, width


def resize_coordinates(start, length, size):
    """`(B, size)` float32 source coordinates of a bilinear resize of `[start, start + length)`
    to `size` pixels, half-pixel centres (as `tf.image.resize` and torchvision), clamped inside."""
    step = length[:, None] / size
    inside = np.clip((np.arange(size)[None] + 0.5) * step - 0.5, 0, length[:, None] - 1)
    return (start[:, None] + inside).astype(np.float32)


def view_draws(rng, count, config, height, width):
    """Every draw of one `ViewConfig` view (the SupCon / SimCLR per-image views) of `count` images.

    Returns a dict of NumPy arrays: `rows` `(B, size)`, `cols` `(B, size)` (crop, resize and
    flip), `jitter` bool `(B,)`, `factors` float32 `(B, 4)` (brightness, contrast and
    saturation multipliers, hue shift in turns), `order` int32 `(B, 4)` (the order of the four
    adjustments, torchvision's random order), `grayscale` and `solarize` bool `(B,)`.
    """
    boxes = crop_boxes(rng, count, height, width, config.crop_scale, config.crop_ratio)
    rows = resize_coordinates(boxes[:, 0], boxes[:, 2], config.size)
    cols = resize_coordinates(boxes[:, 1], boxes[:, 3], config.size)
    flips = rng.random(count) < 0.5 if config.flip else np.zeros(count, bool)
    cols = np.where(flips[:, None], cols[:, ::-1], cols)
    b, c, s, h = config.jitter
    factors = np.stack([rng.uniform(max(0, 1 - b), 1 + b, count),  # torchvision's ranges
                        rng.uniform(max(0, 1 - c), 1 + c, count),
                        rng.uniform(max(0, 1 - s), 1 + s, count), rng.uniform(-h, h, count)], axis=1)
    order = np.argsort(rng.random((count, 4)), axis=1).astype(np.int32)
    return {"rows": rows, "cols": cols,
            "jitter": rng.random(count) < config.jitter_p,
            "factors": factors.astype(np.float32), "order": order,
            "grayscale": rng.random(count) < config.grayscale_p,
            "solarize": rng.random(count) < config.solarize_p}
