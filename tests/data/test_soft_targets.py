"""MixUp / CutMix / label smoothing targets: sums, agreement with the mixed pixels, seeds."""

import numpy as np
import pytest

from clzoo.data import MixConfig, batches
from clzoo.data.split import Split

pytestmark = pytest.mark.backends("tensorflow", "jax", "torch")  # every lane (tests/conftest.py)


def _split(n=16, classes=None):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(n, 8, 8, 3), dtype=np.uint8)
    classes = classes or n
    return Split(images, (np.arange(n) % classes).astype(np.int32), [str(c) for c in range(classes)])


def _batches(split, **kwargs):
    return [(x.numpy(), y.numpy()) for x, y in batches(split, "soft_targets", **kwargs)]


def _partners(targets, labels):
    """Each row's own weight and partner index, from targets over one class per sample."""
    own = targets[np.arange(len(labels)), labels]
    others = targets.copy()
    others[np.arange(len(labels)), labels] = 0
    return own, others.argmax(1), others.max(1)


def test_mixup_targets_sum_to_one_and_match_the_mixed_pixels():
    split = _split(16)  # one class per image: a target row names the partner
    mix = MixConfig(mixup_alpha=0.8, cutmix_alpha=0.0, label_smoothing=0.0)
    batches = _batches(split, batch_size=8, mix=mix, shuffle=False)
    mixed_rows = 0
    for b, (x, t) in enumerate(batches):
        np.testing.assert_allclose(t.sum(1), 1.0, atol=1e-6)
        originals = split.images[8 * b:8 * b + 8].astype(np.float32) / 255.0
        labels = split.labels[8 * b:8 * b + 8]
        own, partner, weight = _partners(t, labels)
        for i in range(8):
            j = np.flatnonzero(labels == partner[i])[0] if weight[i] > 0 else i
            expected = own[i] * originals[i] + (1 - own[i]) * originals[j]
            np.testing.assert_allclose(x[i], expected, atol=1e-5)
            mixed_rows += weight[i] > 0.01
    assert mixed_rows >= 8  # most rows really mixed


def test_cutmix_pixels_come_from_the_two_images_in_the_target_proportions():
    split = _split(16)
    mix = MixConfig(mixup_alpha=0.0, cutmix_alpha=1.0, label_smoothing=0.0)
    x, t = _batches(split, batch_size=16, mix=mix, shuffle=False)[0]
    originals = split.images.astype(np.float32) / 255.0
    own, partner, weight = _partners(t, split.labels)
    np.testing.assert_allclose(t.sum(1), 1.0, atol=1e-6)
    assert (weight > 0).sum() >= 8
    for i in range(16):
        from_self = np.all(np.isclose(x[i], originals[i], atol=1e-6), axis=-1)
        from_partner = np.all(np.isclose(x[i], originals[partner[i]], atol=1e-6), axis=-1)
        assert np.all(from_self | from_partner)
        if weight[i] > 0:
            # The target weight is exactly the pasted pixel fraction (a whole box).
            pasted = from_partner & ~from_self
            assert np.mean(pasted) == pytest.approx(weight[i], abs=1e-6)
            rows, cols = np.flatnonzero(pasted.any(1)), np.flatnonzero(pasted.any(0))
            assert pasted.sum() == len(rows) * len(cols)


def test_label_smoothing_alone():
    split = _split(8, classes=4)
    x, t = _batches(split, batch_size=8, mix=MixConfig(0.0, 0.0, label_smoothing=0.1), shuffle=False)[0]
    expected = np.full((8, 4), 0.025)
    expected[np.arange(8), split.labels] = 0.925
    np.testing.assert_allclose(t, expected, atol=1e-6)
    np.testing.assert_allclose(x, split.images / 255.0, atol=1e-6)


def test_seeded_pipelines_repeat_and_the_switch_uses_both_mixes():
    split = _split(64, classes=8)
    a = _batches(split, batch_size=8, seed=5)
    b = _batches(split, batch_size=8, seed=5)
    c = _batches(split, batch_size=8, seed=6)
    for (xa, ta), (xb, tb) in zip(a, b):
        np.testing.assert_array_equal(xa, xb)
        np.testing.assert_array_equal(ta, tb)
    assert not all(np.array_equal(ta, tc) for (_, ta), (_, tc) in zip(a, c))
    for _, t in a:
        np.testing.assert_allclose(t.sum(1), 1.0, atol=1e-5)
        assert t.min() >= 0.1 / 8 - 1e-6  # smoothing keeps every class above eps / classes


def test_bad_settings():
    with pytest.raises(ValueError, match="switch_prob"):
        MixConfig(switch_prob=1.5)
    with pytest.raises(ValueError, match="mixup_alpha"):
        MixConfig(mixup_alpha=-1)
    split = _split(8)
    with pytest.raises(ValueError, match="Labels must lie in"):
        batches(split, "soft_targets", batch_size=4, num_classes=4)
    with pytest.raises(ValueError, match="batch_size"):
        batches(split, "soft_targets", batch_size=9)
