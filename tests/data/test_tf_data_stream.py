"""`clzoo.data.batches`: each kind's batches, resuming by step, MixUp against numpy, P x K balance, errors."""

import numpy as np
import pytest
import tensorflow as tf

from clzoo.data import MixConfig, ViewConfig, batches, from_arrays
from clzoo.data.soft_targets import _DrawnMixUp, apply_mixup, mixup_draws

pytestmark = pytest.mark.backends("tensorflow", "jax", "torch")  # every lane (tests/conftest.py)

VIEWS = ViewConfig(views=2, size=8)
ONE_VIEW = ViewConfig(views=1, size=8)


def _split(n=24, classes=3, size=10):
    rng = np.random.default_rng(0)
    return from_arrays(rng.integers(0, 256, (n, size, size, 3), dtype=np.uint8), np.arange(n) % classes)


def _arrays(dataset):
    return [tuple(np.asarray(part) for part in batch) for batch in dataset.as_numpy_iterator()]


KIND_ARGS = {
    "views": {"views": VIEWS},
    "soft_targets": {"views": ONE_VIEW, "mix": MixConfig()},
    "balanced": {"views": VIEWS, "samples_per_class": 2},
}


@pytest.mark.parametrize("kind, shapes", [
    ("views", ((5, 2, 8, 8, 3), (5,))),
    ("soft_targets", ((5, 8, 8, 3), (5, 3))),
])
def test_each_kind_gives_its_shapes_dtypes_and_count(kind, shapes):
    split = _split(23)  # 4 steps of 5 per epoch, 3 images left out of each
    dataset = batches(split, kind, batch_size=5, epochs=2, **KIND_ARGS[kind])
    assert int(dataset.cardinality()) == 8
    got = _arrays(dataset)
    assert len(got) == 8
    for x, y in got:
        assert (x.shape, y.shape) == shapes and x.dtype == np.float32
        assert 0.0 <= x.min() and x.max() <= 1.0
    if kind == "views":
        assert got[0][1].dtype == np.int32
    else:
        np.testing.assert_allclose(np.concatenate([y for _, y in got]).sum(1), 1.0, atol=1e-5)


def test_soft_targets_without_views_are_the_images_themselves():
    split = _split(6, size=7)
    plain = MixConfig(mixup_alpha=0.0, cutmix_alpha=0.0, label_smoothing=0.0)
    x, y = _arrays(batches(split, "soft_targets", 6, shuffle=False, mix=plain))[0]
    np.testing.assert_allclose(x, split.images / 255.0, atol=1e-6)
    np.testing.assert_array_equal(y, np.eye(3, dtype=np.float32)[split.labels])


# What "balanced" adds to "views", P x K sampling, is tf.data and NumPy alone: the tensorflow lane
# resumes it; every lane resumes the two kinds whose Keras layers run inside tf.data.
@pytest.mark.large
@pytest.mark.parametrize("kind", [pytest.param("balanced", marks=pytest.mark.backends("tensorflow")),
                                  "soft_targets", "views"])
def test_a_stream_resumed_at_any_step_gives_the_uninterrupted_batches(kind):
    split = _split(24)
    full = _arrays(batches(split, kind, 6, seed=3, epochs=3, **KIND_ARGS[kind]))
    assert len(full) == 12
    for start in (1, 4, 5, 11, 12):  # 4 steps per epoch: within, at and across epoch boundaries
        resumed = _arrays(batches(split, kind, 6, seed=3, epochs=3, start_step=start, **KIND_ARGS[kind]))
        assert len(resumed) == 12 - start
        for a, b in zip(resumed, full[start:]):
            for part_a, part_b in zip(a, b):
                np.testing.assert_array_equal(part_a, part_b)
    other = _arrays(batches(split, kind, 6, seed=4, epochs=3, **KIND_ARGS[kind]))
    assert not np.array_equal(other[0][0], full[0][0])
    assert not np.array_equal(full[0][0], full[4][0])  # epochs differ


def test_shuffle_false_visits_the_images_in_order_and_true_reshuffles_each_epoch():
    split = _split(12, classes=12)
    in_order = _arrays(batches(split, "views", 4, epochs=2, views=VIEWS, shuffle=False))
    np.testing.assert_array_equal(np.concatenate([y for _, y in in_order]), np.tile(np.arange(12), 2))
    shuffled = np.concatenate([y for _, y in _arrays(batches(split, "views", 4, epochs=2, views=VIEWS))])
    assert sorted(shuffled[:12]) == list(range(12)) and sorted(shuffled[12:]) == list(range(12))
    assert not np.array_equal(shuffled[:12], shuffled[12:])


def test_balanced_batches_hold_p_classes_of_k_images_each():
    labels = np.array([0] * 6 + [1] * 3 + [2] * 5 + [3] * 10)
    rng = np.random.default_rng(1)
    split = from_arrays(rng.integers(0, 256, (24, 10, 10, 3), dtype=np.uint8), labels)
    got = _arrays(batches(split, "balanced", 6, seed=2, epochs=2, views=VIEWS, samples_per_class=3))
    assert len(got) == 8  # an epoch is N // batch_size steps, as for the other kinds
    for x, y in got:
        assert x.shape == (6, 2, 8, 8, 3)
        assert y[0] == y[1] == y[2] != y[3] == y[4] == y[5]  # grouped by class
    assert len({tuple(y) for _, y in got}) > 1


def test_mixup_through_keras_equals_a_numpy_reference():
    rng = np.random.default_rng(2)
    images = rng.random((5, 4, 4, 3), dtype=np.float32)
    targets = np.eye(5, dtype=np.float32)
    weight = np.array([0.0, 0.3, 0.5, 0.9, 1.0], np.float32)
    partner = np.array([3, 0, 4, 1, 2], np.int32)
    layer = _DrawnMixUp(name="drawn_mix_up")
    data = tf.data.Dataset.from_tensors((images, targets, weight, partner))
    mixed, mixed_targets = next(data.map(lambda *a: apply_mixup(layer, *a)).as_numpy_iterator())
    w = weight[:, None, None, None]
    np.testing.assert_allclose(mixed, w * images + (1 - w) * images[partner], atol=1e-6)
    w = weight[:, None]
    np.testing.assert_allclose(mixed_targets, w * targets + (1 - w) * targets[partner], atol=1e-6)


def test_mixup_draws_are_a_permutation_and_beta_weights_fixed_by_the_seed():
    weight, partner = (np.asarray(a) for a in mixup_draws(tf.constant([3, 4]), 400, 0.8))
    again, _ = mixup_draws(tf.constant([3, 4]), 400, 0.8)
    other, _ = mixup_draws(tf.constant([3, 5]), 400, 0.8)
    np.testing.assert_array_equal(weight, np.asarray(again))
    assert not np.array_equal(weight, np.asarray(other))
    assert sorted(partner) == list(range(400))
    assert 0.0 <= weight.min() and weight.max() <= 1.0
    assert abs(weight.mean() - 0.5) < 0.05 and abs(weight.var() - 1 / (4 * 2.6)) < 0.03  # Beta(0.8, 0.8)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"kind": "pairs"}, ValueError,
     "`kind` must be one of 'views', 'soft_targets', 'balanced'. Received: kind='pairs'"),
    ({"batch_size": 0}, ValueError, "batch_size=0"),
    ({"batch_size": 25}, ValueError, r"between 1 and the 24 training images. Received: batch_size=25"),
    ({"batch_size": 4.0}, ValueError, "batch_size=4.0"),
    ({"epochs": 0}, ValueError, "`epochs` must be an int >= 1"),
    ({"seed": "0"}, ValueError, "`seed` must be an int"),
    ({"start_step": 7}, ValueError, r"`start_step` must be an int in \[0, 6\]"),
    ({"shuffle": 1}, ValueError, "shuffle=1"),
    ({"views": 2}, ValueError, "`views` must be a clzoo.data.ViewConfig"),
    ({"mix": MixConfig()}, ValueError, "`mix` is used only with kind='soft_targets'"),
    ({"samples_per_class": 2}, ValueError, "`samples_per_class` is used only with kind='balanced'"),
    ({"kind": "soft_targets", "views": VIEWS}, ValueError, "views=1"),
    ({"kind": "soft_targets", "mix": {"mixup_alpha": 0.2}}, ValueError,
     "`mix` must be a clzoo.data.MixConfig"),
    ({"kind": "soft_targets", "num_classes": 2}, ValueError, r"Labels must lie in \[0, 2\)"),
    ({"kind": "balanced"}, ValueError, "needs `samples_per_class`"),
    ({"kind": "balanced", "samples_per_class": 5}, ValueError, "multiple of `samples_per_class`"),
    ({"kind": "balanced", "samples_per_class": 2, "shuffle": False}, ValueError, "shuffle=False"),
    ({"kind": "balanced", "samples_per_class": 1}, ValueError, "exceeds the 3 classes"),
])
def test_bad_arguments_are_refused_naming_the_argument(kwargs, error, match):
    arguments = {"kind": "views", "batch_size": 8, "epochs": 2, **kwargs}
    with pytest.raises(error, match=match):
        batches(_split(24), **arguments)


def test_a_split_must_be_a_split():
    with pytest.raises(TypeError, match="`split` must be a clzoo.data.Split"):
        batches((np.zeros((4, 8, 8, 3), np.uint8), np.zeros(4)), batch_size=2)
