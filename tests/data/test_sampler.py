"""P x K class-balanced batches: composition, determinism, small classes, errors."""

import numpy as np
import pytest

from clzoo.data import class_balanced_indices

LABELS = np.array([0] * 10 + [1] * 4 + [2] * 5 + [3] * 7 + [4] * 30)


def _take(ds, n):
    return [b.numpy() for b in ds.take(n)]


def test_every_batch_has_p_classes_with_k_samples_each():
    seen = set()
    for batch in _take(class_balanced_indices(LABELS, 3, 4, seed=0), 50):
        counts = np.bincount(LABELS[batch], minlength=5)
        assert sorted(counts[counts > 0].tolist()) == [4, 4, 4]
        for p in range(3):  # grouped by class
            assert len(set(LABELS[batch[4 * p:4 * p + 4]])) == 1
        for c in np.unique(LABELS[batch]):
            members = batch[LABELS[batch] == c]
            assert len(set(members)) == 4  # without replacement
        seen.update(LABELS[batch].tolist())
    assert seen == {0, 1, 2, 3, 4}  # every class gets drawn, the 4-image one included


def test_same_seed_same_batches_other_seed_other_batches():
    a = _take(class_balanced_indices(LABELS, 2, 3, seed=4), 5)
    b = _take(class_balanced_indices(LABELS, 2, 3, seed=4), 5)
    c = _take(class_balanced_indices(LABELS, 2, 3, seed=5), 5)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c))


def test_classes_are_drawn_uniformly():
    counts = np.zeros(5)
    for batch in _take(class_balanced_indices(LABELS, 2, 2, seed=1), 500):
        counts[np.unique(LABELS[batch])] += 1
    np.testing.assert_allclose(counts / 500, 2 / 5, atol=0.07)


def test_start_step_resumes_the_same_index_batches():
    full = _take(class_balanced_indices(LABELS, 3, 2, seed=4), 7)
    resumed = _take(class_balanced_indices(LABELS, 3, 2, seed=4, start_step=3), 4)
    np.testing.assert_array_equal(np.stack(resumed), np.stack(full[3:]))
    assert not np.array_equal(np.stack(resumed), np.stack(full[:4]))


@pytest.mark.parametrize("kwargs, match", [
    ({"classes_per_batch": 6, "samples_per_class": 2}, "exceeds the 5 classes"),
    ({"classes_per_batch": 2, "samples_per_class": 0}, "samples_per_class"),
    ({"classes_per_batch": 2.5, "samples_per_class": 2}, "classes_per_batch"),
    ({"classes_per_batch": 2, "samples_per_class": 5}, "exceeds the 4 images of class 1"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        class_balanced_indices(LABELS, **kwargs)
