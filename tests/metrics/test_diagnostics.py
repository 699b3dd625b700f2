"""`clzoo.metrics` against loop-based NumPy references, and inside `fit`, on the current backend.

Runs in every backend lane (`pytestmark`; see `tests/conftest.py`).
"""

import itertools

import keras
import numpy as np
import pytest
from keras import ops

import clzoo

pytestmark = pytest.mark.backends("tensorflow", "jax", "torch")  # every lane (tests/conftest.py)

M = clzoo.metrics
RNG = np.random.default_rng(11)


def _unit(z):
    z = np.asarray(z, np.float64)
    return z / np.linalg.norm(z, axis=-1, keepdims=True)


def ref_alignment(z, w):
    """Wang and Isola L_align, alpha = 2: weighted mean over view pairs of one sample."""
    z = _unit(z)
    total = count = 0.0
    for b in range(z.shape[0]):
        for v, u in itertools.combinations(range(z.shape[1]), 2):
            total += w[b] * np.sum((z[b, v] - z[b, u]) ** 2)
            count += w[b]
    return total / count


def ref_uniformity(z, w):
    """Wang and Isola L_uniform, t = 2, over pairs of embeddings of different samples."""
    z = _unit(z)
    total = count = 0.0
    for (b, v), (c, u) in itertools.permutations(np.ndindex(z.shape[:2]), 2):
        if b != c:
            total += w[b] * w[c] * np.exp(-2 * np.sum((z[b, v] - z[c, u]) ** 2))
            count += w[b] * w[c]
    return np.log(total / count)


def ref_top1(z, w):
    z = _unit(z)
    rows = list(np.ndindex(z.shape[:2]))
    hits = total = 0.0
    for i, (b, v) in enumerate(rows):
        best = max((j for j in range(len(rows)) if j != i), key=lambda j: z[b, v] @ z[rows[j]])
        hits += w[b] * (rows[best][0] == b)
        total += w[b]
    return hits / total


def ref_positives(labels, views, w):
    counts, weights = [], []
    for b in range(len(labels)):
        for _ in range(views):
            counts.append(views * np.sum(labels == labels[b]) - 1)
            weights.append(w[b])
    counts, weights = np.array(counts, float), np.array(weights)
    return np.sum(weights * counts) / weights.sum(), np.sum(weights * (counts == 0)) / weights.sum()


def _result(metric, y, z, w=None, batches=1):
    metric.reset_state()
    for part in np.array_split(np.arange(len(z)), batches):
        metric.update_state(None if y is None else y[part], z[part], None if w is None else w[part])
    return float(ops.convert_to_numpy(metric.result()))


@pytest.mark.parametrize("views", [2, 3])
@pytest.mark.parametrize("weighted", [False, True])
def test_against_references(views, weighted):
    z = RNG.normal(size=(7, views, 5)).astype("float32")
    labels = np.array([0, 1, 1, 2, 2, 2, 3])
    w = RNG.random(7).astype("float32") if weighted else None
    ww = np.ones(7) if w is None else w
    np.testing.assert_allclose(_result(M.Alignment(), None, z, w), ref_alignment(z, ww), rtol=1e-5)
    np.testing.assert_allclose(_result(M.Uniformity(), None, z, w), ref_uniformity(z, ww), rtol=1e-5)
    np.testing.assert_allclose(_result(M.ContrastiveAccuracy(), None, z, w), ref_top1(z, ww), rtol=1e-6)
    mean, share = ref_positives(labels, views, ww)
    np.testing.assert_allclose(_result(M.MeanPositives(), labels, z, w), mean, rtol=1e-6)
    np.testing.assert_allclose(_result(M.AnchorsWithoutPositives(), labels, z, w), share, rtol=1e-6)


def test_pooling_over_batches_and_one_view_positives():
    # One view: a class seen once has no positive; two batches pool as one.
    labels = np.array([0, 0, 1, 2, 2, 2])
    z = RNG.normal(size=(6, 4)).astype("float32")
    assert _result(M.AnchorsWithoutPositives(), labels[:3], z[:3]) == pytest.approx(1 / 3)
    mean_a, share_a = ref_positives(labels[:3], 1, np.ones(3))
    mean_b, share_b = ref_positives(labels[3:], 1, np.ones(3))
    assert _result(M.MeanPositives(), labels, z, batches=2) == pytest.approx((mean_a + mean_b) / 2)
    assert _result(M.AnchorsWithoutPositives(), labels, z, batches=2) == pytest.approx(
        (share_a + share_b) / 2)
    z3 = RNG.normal(size=(6, 2, 4)).astype("float32")
    assert _result(M.Alignment(), None, z3, batches=2) == pytest.approx(
        ref_alignment(z3, np.ones(6)), rel=1e-5)


def test_one_hot_labels_and_errors():
    z = RNG.normal(size=(4, 2, 3)).astype("float32")
    ids = np.array([0, 1, 1, 2])
    assert _result(M.MeanPositives(), np.eye(3)[ids], z) == _result(M.MeanPositives(), ids, z)
    with pytest.raises(ValueError, match="views >= 2"):
        M.ContrastiveAccuracy().update_state(None, z[:, 0])
    with pytest.raises(ValueError, match="views >= 2"):
        M.Alignment().update_state(None, z[:, :1])
    with pytest.raises(ValueError, match="never argmaxed"):
        M.MeanPositives().update_state(np.array([[1, 1, 0]] * 4), z)
    with pytest.raises(ValueError, match="sample_weight"):
        M.Alignment().update_state(None, z, np.ones(3))


@pytest.mark.large
def test_in_fit_history_and_serialization(tmp_path):
    keras.utils.set_random_seed(0)
    encoder = keras.Sequential([keras.Input((4, 4, 1)), keras.layers.Flatten(), keras.layers.Dense(8)])
    model = clzoo.models.ContrastiveModel(encoder, clzoo.models.ProjectionHead((8,), 4))
    metrics = [M.Alignment(), M.Uniformity(), M.ContrastiveAccuracy(), M.MeanPositives(),
               M.AnchorsWithoutPositives()]
    model.compile(optimizer="sgd", loss=clzoo.losses.SINCERELoss(), metrics=metrics)
    rng = np.random.default_rng(11)  # its own generator: the data must not depend on test order
    x = rng.random((32, 2, 4, 4, 1)).astype("float32")
    y = rng.integers(0, 4, size=(32,))
    history = model.fit(x, y, batch_size=32, epochs=1, verbose=0, shuffle=False)
    z = np.asarray(ops.convert_to_numpy(model(x)))
    # One batch; the logged values are those of the embeddings before the step's update.
    for name in ("alignment", "uniformity", "contrastive_accuracy"):
        assert name in history.history
    ones = np.ones(32)
    assert history.history["mean_positives"][0] == pytest.approx(ref_positives(y, 2, ones)[0], rel=1e-6)
    evaluated = model.evaluate(x, y, batch_size=32, return_dict=True, verbose=0)
    assert evaluated["alignment"] == pytest.approx(ref_alignment(z, ones), rel=1e-4)
    assert evaluated["uniformity"] == pytest.approx(ref_uniformity(z, ones), rel=1e-4)
    assert evaluated["contrastive_accuracy"] == pytest.approx(ref_top1(z, ones), abs=1e-6)
    model.save(tmp_path / "m.keras")
    restored = keras.saving.load_model(tmp_path / "m.keras")
    again = restored.evaluate(x, y, batch_size=32, return_dict=True, verbose=0)
    assert again["uniformity"] == pytest.approx(evaluated["uniformity"], rel=1e-5)
