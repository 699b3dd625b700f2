"""MixUp / CutMix / label-smoothing soft targets in tf.data (for `SoftTargetInfoNCELoss` and CE baselines).

The soft-target InfoNCE paper (Hugger & Uhlmann, sec. 4) trains with the
DeiT / timm ImageNet recipe: MixUp (alpha 0.8) and CutMix (alpha 1.0), one
of the two chosen at random for each batch (switch probability 0.5), on
label-smoothed (0.1) one-hot targets. The mixing pairs each image with a
random permutation of its batch and draws one weight per image. MixUp is
Keras core's `MixUp` layer. CutMix is written here: Keras's `CutMix` sets
the label weight from the continuous box area while its mask keeps whole
pixels, so on 32x32 images targets and pixels disagree by a few percent;
ours cuts an integer-pixel box (timm's rule: side `sqrt(1 - lam)` of the
image, centre uniform, clipped at the border) and sets the weight from the
pixels actually pasted. Smoothing is applied before mixing, as timm does.
"""

import dataclasses

import keras
import numpy as np
import tensorflow as tf

from clzoo.data.pipeline import shuffled_positions
from clzoo.data.views import ViewConfig, augment_view


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


def cutmix(images, targets, seed, alpha):
    """CutMix with a random partner per image; targets weighted by the pasted pixel fraction.

    Args:
        images: float `(B, H, W, C)`.
        targets: float `(B, classes)`.
        seed: int tensor `(2,)` for the stateless draws.
        alpha: Beta(alpha, alpha) of the kept area.

    Returns:
        `(mixed images, mixed targets)`.
    """
    shape = tf.shape(images)
    batch, height, width = shape[0], shape[1], shape[2]
    seeds = tf.random.split(tf.cast(seed, tf.int64), 5)
    # Beta(a, a) from two Gammas.
    g1 = tf.random.stateless_gamma((batch,), seeds[0], alpha)
    g2 = tf.random.stateless_gamma((batch,), seeds[1], alpha)
    lam = g1 / tf.maximum(g1 + g2, 1e-12)
    ratio = tf.sqrt(1.0 - lam)
    h_f, w_f = tf.cast(height, tf.float32), tf.cast(width, tf.float32)
    cut_h, cut_w = tf.cast(ratio * h_f, tf.int32), tf.cast(ratio * w_f, tf.int32)
    cy = tf.random.stateless_uniform((batch,), seeds[2], 0, height, dtype=tf.int32)
    cx = tf.random.stateless_uniform((batch,), seeds[3], 0, width, dtype=tf.int32)
    y0, y1 = tf.clip_by_value(cy - cut_h // 2, 0, height), tf.clip_by_value(cy + cut_h // 2, 0, height)
    x0, x1 = tf.clip_by_value(cx - cut_w // 2, 0, width), tf.clip_by_value(cx + cut_w // 2, 0, width)
    rows = tf.range(height)[None, :, None]
    cols = tf.range(width)[None, None, :]
    inside = ((rows >= y0[:, None, None]) & (rows < y1[:, None, None])
              & (cols >= x0[:, None, None]) & (cols < x1[:, None, None]))
    partner = tf.random.experimental.stateless_shuffle(tf.range(batch), seeds[4])
    mixed = tf.where(inside[..., None], tf.gather(images, partner), images)
    pasted = tf.reduce_mean(tf.cast(inside, tf.float32), axis=[1, 2])[:, None]
    return mixed, (1.0 - pasted) * targets + pasted * tf.gather(targets, partner)


def smooth_labels(labels, num_classes, epsilon):
    """Label-smoothed one-hot targets `(1 - epsilon) onehot + epsilon / classes` (Szegedy et al. 2016).

    Args:
        labels: int tensor `(batch,)`.
        num_classes: int.
        epsilon: float in [0, 1].

    Returns:
        float32 `(batch, num_classes)`, rows summing to 1.
    """
    one_hot = tf.one_hot(tf.cast(labels, tf.int32), num_classes, dtype=tf.float32)
    return one_hot * (1.0 - epsilon) + epsilon / num_classes


def _checked(split, num_classes, mix):
    """`(mix, num_classes, labels)` with defaults filled in; labels must lie in `[0, num_classes)`."""
    num_classes = int(num_classes or len(split.class_names))
    labels = np.asarray(split.labels)
    if labels.size and (labels.min() < 0 or labels.max() >= num_classes):
        raise ValueError(
            f"Labels must lie in [0, {num_classes}). Received: min={labels.min()}, max={labels.max()}"
        )
    return mix or MixConfig(), num_classes, labels


def soft_target_dataset(split, num_classes=None, batch_size=128, mix=None, views=None, seed=0,
                        shuffle=True, drop_remainder=True):
    """Batches of `(images, soft targets)` with MixUp / CutMix / label smoothing.

    Args:
        split: `clzoo.data.Split` (uint8 images, int labels).
        num_classes: Defaults to `len(split.class_names)`.
        batch_size: images per batch (mixing partners come from the same batch).
        mix: `MixConfig`. Defaults to `MixConfig()`.
        views: a `ViewConfig` for per-image augmentation before mixing (one
            view is drawn), or None for none. Defaults to `None`.
        seed: fixes shuffling, augmentation and mixing; a pipeline rebuilt
            with the same seed yields the same batches.
        shuffle, drop_remainder: as `contrastive_dataset`.

    Returns:
        `tf.data.Dataset` of `(float32 (batch, H, W, 3) in [0, 1],
        float32 (batch, classes))`; every target row sums to 1.

    Example:

    >>> import clzoo
    >>> split = clzoo.data.load_split("digits", "train")
    >>> images, targets = next(iter(clzoo.data.soft_target_dataset(split, batch_size=8)))
    >>> tuple(images.shape), tuple(targets.shape)
    ((8, 32, 32, 3), (8, 10))
    """
    mix, num_classes, labels = _checked(split, num_classes, mix)
    if batch_size < 1 or (drop_remainder and batch_size > len(split)):
        raise ValueError(f"`batch_size` must be in [1, {len(split)}]. Received: batch_size={batch_size!r}")
    if views is not None and not isinstance(views, ViewConfig):
        raise ValueError(f"`views` must be a ViewConfig or None. Received: {views!r}")
    data = tf.data.Dataset.from_tensor_slices((split.images, labels))
    if shuffle:
        data = data.shuffle(len(split), seed=seed, reshuffle_each_iteration=True)
    seeds = tf.data.Dataset.random(seed=seed + 1).batch(2)

    def prepare(pair, image_seed):
        image, label = pair
        if views is not None:
            image = augment_view(image, image_seed, views)
        else:
            image = tf.image.convert_image_dtype(image, tf.float32)
        return image, label

    data = tf.data.Dataset.zip((data, seeds)).map(prepare, num_parallel_calls=tf.data.AUTOTUNE,
                                                  deterministic=True)
    data = data.batch(batch_size, drop_remainder=drop_remainder)
    mixup = keras.layers.MixUp(alpha=mix.mixup_alpha, seed=seed) if mix.mixup_alpha > 0 else None

    def apply_mixup(images, targets):
        out = mixup({"images": images, "labels": targets}, training=True)
        return tf.cast(out["images"], tf.float32), tf.cast(out["labels"], tf.float32)

    def mix_batch(step, batch):
        images, batch_labels = batch
        targets = smooth_labels(batch_labels, num_classes, mix.label_smoothing)
        if mixup is None and mix.cutmix_alpha == 0:
            return images, targets
        batch_seed = tf.stack([tf.cast(seed, tf.int64), step])
        draws = tf.random.stateless_uniform((2,), seed=batch_seed)

        def apply_cutmix():
            return cutmix(images, targets, batch_seed + 1, mix.cutmix_alpha)

        if mixup is not None and mix.cutmix_alpha > 0:
            mixed = tf.cond(draws[0] < mix.switch_prob, apply_cutmix,
                            lambda: apply_mixup(images, targets))
        else:
            mixed = apply_mixup(images, targets) if mixup is not None else apply_cutmix()
        return tf.cond(draws[1] < mix.mix_prob, lambda: mixed, lambda: (images, targets))

    # Sequential map: the mixing layers draw from one seed generator in order.
    data = data.enumerate().map(mix_batch)
    return data.prefetch(tf.data.AUTOTUNE)


def mixup(images, targets, seed, alpha):
    """MixUp with a random partner per image and one Beta(alpha, alpha) weight per image, stateless.

    Same mixing as `keras.layers.MixUp`, but every draw comes from `seed`, so
    a batch can be recomputed from its step alone (resumable training).

    Args:
        images: float `(B, H, W, C)`.
        targets: float `(B, classes)`.
        seed: int tensor `(2,)`.
        alpha: positive float.

    Returns:
        `(mixed images, mixed targets)`.
    """
    batch = tf.shape(images)[0]
    seeds = tf.random.split(tf.cast(seed, tf.int64), 3)
    g1 = tf.random.stateless_gamma((batch,), seeds[0], alpha)
    g2 = tf.random.stateless_gamma((batch,), seeds[1], alpha)
    lam = g1 / tf.maximum(g1 + g2, 1e-12)
    partner = tf.random.experimental.stateless_shuffle(tf.range(batch), seeds[2])
    return (lam[:, None, None, None] * images + (1.0 - lam[:, None, None, None]) * tf.gather(images, partner),
            lam[:, None] * targets + (1.0 - lam[:, None]) * tf.gather(targets, partner))


def soft_target_batches(split, num_classes=None, batch_size=128, mix=None, views=None, seed=0,
                        epochs=1, start_step=0):
    """The whole soft-target training run as one stream of batches, resumable at any step.

    As `soft_target_dataset` (label smoothing, then MixUp or CutMix per
    batch), with the data order of `training_batches`: every draw is a
    function of `(seed, epoch, position)` or `(seed, step)`, so a run resumed
    at `start_step` sees the batches an uninterrupted one would. MixUp here is
    the stateless `mixup`.

    Args:
        split, num_classes, batch_size, mix, views, seed: as `soft_target_dataset`.
        epochs: epochs in the whole run. Defaults to `1`.
        start_step: global step to start from.

    Returns:
        `tf.data.Dataset` of `(float32 (batch, H, W, 3) in [0, 1],
        float32 (batch, classes))`, `epochs * (N // batch_size) - start_step` batches.

    Raises:
        ValueError: for labels outside `[0, num_classes)`, a batch size outside
            `[1, N]` or `start_step` out of range.

    Example:

    >>> import clzoo
    >>> split = clzoo.data.load_split("digits", "train")
    >>> ds = clzoo.data.soft_target_batches(split, batch_size=100, epochs=2, start_step=3)
    >>> int(ds.cardinality())
    25
    """
    mix, num_classes, labels = _checked(split, num_classes, mix)
    if views is not None and not isinstance(views, ViewConfig):
        raise ValueError(f"`views` must be a ViewConfig or None. Received: {views!r}")
    stream, total = shuffled_positions(len(split), batch_size, seed, epochs, start_step)
    images = tf.constant(split.images)
    label_tensor = tf.constant(labels.astype(np.int32))

    def load(epoch, position, index):
        image = tf.gather(images, index)
        if views is not None:
            image = augment_view(image, tf.stack([epoch * 1_000_003 + seed, position]), views)
        else:
            image = tf.image.convert_image_dtype(image, tf.float32)
        return image, tf.gather(label_tensor, index)

    data = stream.map(load, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    data = data.batch(batch_size, drop_remainder=True)

    def mix_batch(step, batch):
        batch_images, batch_labels = batch
        targets = smooth_labels(batch_labels, num_classes, mix.label_smoothing)
        if mix.mixup_alpha == 0 and mix.cutmix_alpha == 0:
            return batch_images, targets
        step_seed = tf.stack([tf.cast(seed, tf.int64) + 7, step])
        draws = tf.random.stateless_uniform((2,), seed=step_seed)

        def apply_cutmix():
            return cutmix(batch_images, targets, step_seed + 1, mix.cutmix_alpha)

        def apply_mixup():
            return mixup(batch_images, targets, step_seed + 2, mix.mixup_alpha)

        if mix.mixup_alpha > 0 and mix.cutmix_alpha > 0:
            mixed = tf.cond(draws[0] < mix.switch_prob, apply_cutmix, apply_mixup)
        else:
            mixed = apply_mixup() if mix.mixup_alpha > 0 else apply_cutmix()
        return tf.cond(draws[1] < mix.mix_prob, lambda: mixed, lambda: (batch_images, targets))

    steps = tf.data.Dataset.range(int(start_step), total + int(start_step))
    data = tf.data.Dataset.zip((steps, data)).map(mix_batch, num_parallel_calls=tf.data.AUTOTUNE,
                                                  deterministic=True)
    data = data.apply(tf.data.experimental.assert_cardinality(total))
    return data.prefetch(tf.data.AUTOTUNE)
