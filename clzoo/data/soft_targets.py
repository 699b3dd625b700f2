"""MixUp / CutMix / label-smoothing soft targets for `clzoo.data.batches(kind="soft_targets")`.

The soft-target InfoNCE paper (Hugger & Uhlmann, sec. 4) trains with the
DeiT / timm ImageNet recipe: MixUp (alpha 0.8) and CutMix (alpha 1.0), one
of the two chosen at random for each batch (switch probability 0.5), on
label-smoothed (0.1) one-hot targets. The mixing pairs each image with a
random permutation of its batch and draws one weight per image. Smoothing is
applied before mixing, as timm does.

MixUp is Keras core's `keras.layers.MixUp`, fed draws that depend on the step
alone (`mixup_draws`), so a resumed run mixes as an uninterrupted one.
CutMix is written here on purpose: `keras.layers.CutMix` (keras 3.15.1,
`keras/src/layers/preprocessing/image_preprocessing/cut_mix.py`; KERAS_FACTS.md
lists the layer) weights the labels by the continuous box area
`(x1 - x0) * (y1 - y0) / (H * W)` while its mask keeps whole pixels, so on
32x32 images targets and pixels disagree by a few percent. Ours cuts an
integer-pixel box (timm's rule: side `sqrt(1 - lam)` of the image, centre
uniform, clipped at the border) and weights the labels by the pixels actually
pasted.
"""

import keras
import tensorflow as tf

from clzoo.data.augmentation_settings import MixConfig  # noqa: F401  (its old home)


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


class _DrawnMixUp(keras.layers.MixUp):
    """`keras.layers.MixUp` that applies the weights and partners passed in with the batch.

    The stock layer draws them from its own seed generator, so a batch would
    depend on how many came before it; `mixup_draws` makes them a function of
    the step's seed, which keeps the stream resumable. The mixing is Keras's.
    """

    def get_random_transformation(self, data, training=True, seed=None):
        # The layer converts every input to its float dtype; partners are small ints, exact in float32.
        return {"mix_weight": data["mix_weight"],
                "permutation_order": self.backend.cast(data["permutation_order"], "int32")}


def mixup_draws(seed, batch, alpha):
    """MixUp's random draws for one batch, stateless: one Beta(alpha, alpha) weight and one partner per image.

    Args:
        seed: int tensor `(2,)`.
        batch: int, images in the batch.
        alpha: positive float.

    Returns:
        `(float32 (batch,) weights in [0, 1], int32 (batch,) permutation of range(batch))`.
    """
    seeds = tf.random.split(tf.cast(seed, tf.int64), 3)
    g1 = tf.random.stateless_gamma((batch,), seeds[0], alpha)
    g2 = tf.random.stateless_gamma((batch,), seeds[1], alpha)
    partner = tf.random.experimental.stateless_shuffle(tf.range(batch), seeds[2])
    return g1 / tf.maximum(g1 + g2, 1e-12), partner


def apply_mixup(layer, images, targets, weight, partner):
    """`weight * x + (1 - weight) * x[partner]` for images and targets, through `keras.layers.MixUp`.

    Args:
        layer: a `_DrawnMixUp` built outside the tf.data function.
        images: float32 `(B, H, W, C)`.
        targets: float32 `(B, classes)`.
        weight: float32 `(B,)`; partner: int32 `(B,)`, from `mixup_draws`.

    Returns:
        `(float32 (B, H, W, C), float32 (B, classes))`.
    """
    out = layer({"images": images, "labels": targets, "mix_weight": weight,
                 "permutation_order": partner}, training=True)
    return tf.cast(out["images"], tf.float32), tf.cast(out["labels"], tf.float32)


def soft_target_mixer(mix, num_classes, seed):
    """`mix_batch(step, (images, labels)) -> (images, soft targets)` for `clzoo.data.batches`.

    Label smoothing, then with probability `mix.mix_prob` MixUp or CutMix
    (CutMix with probability `mix.switch_prob` when both are on). Every draw
    comes from `(seed, step)`, so a batch depends on its global step alone.

    Args:
        mix: `MixConfig`.
        num_classes: int.
        seed: int.

    Returns:
        a function of `(int64 step, (float32 (B, H, W, 3), int32 (B,)))`.
    """
    layer = _DrawnMixUp(name="drawn_mix_up") if mix.mixup_alpha > 0 else None

    def mix_batch(step, batch):
        images, labels = batch
        targets = smooth_labels(labels, num_classes, mix.label_smoothing)
        if layer is None and mix.cutmix_alpha == 0:
            return images, targets
        step_seed = tf.stack([tf.cast(seed, tf.int64) + 7, step])
        draws = tf.random.stateless_uniform((2,), seed=step_seed)

        def with_cutmix():
            return cutmix(images, targets, step_seed + 1, mix.cutmix_alpha)

        def with_mixup():
            weight, partner = mixup_draws(step_seed + 2, tf.shape(images)[0], mix.mixup_alpha)
            return apply_mixup(layer, images, targets, weight, partner)

        if layer is not None and mix.cutmix_alpha > 0:
            mixed = tf.cond(draws[0] < mix.switch_prob, with_cutmix, with_mixup)
        else:
            mixed = with_mixup() if layer is not None else with_cutmix()
        return tf.cond(draws[1] < mix.mix_prob, lambda: mixed, lambda: (images, targets))

    return mix_batch
