"""Multi-label and soft positives (`label_similarity`) of SupCon and SINCERE, on the current backend.

Runs in every backend lane (the folder rule in `tests/losses/conftest.py`).
"""

import keras
import numpy as np
import pytest
from keras import ops

import clzoo
from tests.losses import reference
from tests.losses.autodiff import numeric_gradient, value_and_grad

L = clzoo.losses
RNG = np.random.default_rng(77)

# name -> (function, reference(label_rows, z, temperature, kind), extra kwargs)
LOSSES = {
    "supcon_out": (L.sup_con_loss, reference.multi_label_supcon, {"variant": "out"}),
    "supcon_in": (L.sup_con_loss, reference.multi_label_supcon, {"variant": "in"}),
    "sincere": (L.sincere_loss, reference.multi_label_sincere, {}),
}
CLASSES = {"supcon_out": L.SupConLoss, "supcon_in": L.SupConLoss, "sincere": L.SINCERELoss}

LABEL_ROWS = {
    # One or two labels per sample, one sample whose only label no other sample has.
    "multi_hot": np.array([[1, 0, 1, 0, 0], [1, 0, 1, 0, 0], [1, 1, 0, 0, 0], [0, 1, 0, 1, 0],
                           [0, 0, 0, 0, 1], [0, 0, 1, 1, 0]], "float32"),
    # MixUp-style mixtures and label smoothing.
    "soft": np.array([[0.7, 0.3, 0.0], [0.3, 0.7, 0.0], [1.0, 0.0, 0.0], [0.0, 0.4, 0.6],
                      [0.05, 0.05, 0.9]], "float32"),
}


def _z(batch, views, dim=6):
    return RNG.normal(size=(batch, views, dim)).astype("float32")


def _np(x):
    return np.asarray(ops.convert_to_numpy(x))


def _call(name, y, z, **kwargs):
    fn, _, extra = LOSSES[name]
    return _np(fn(y, z, **extra, **kwargs))


def _reference(name, y, z, temperature, kind):
    _, ref, extra = LOSSES[name]
    return ref(y, z, temperature, kind, **extra)


@pytest.mark.parametrize("name", sorted(LOSSES))
@pytest.mark.parametrize("kind", ["cosine", "jaccard"])
@pytest.mark.parametrize("rows", sorted(LABEL_ROWS))
@pytest.mark.parametrize("temperature, views", [(0.01, 2), (0.2, 1)])  # both logsumexp paths
def test_matches_loop_reference(name, kind, rows, temperature, views):
    y = LABEL_ROWS[rows]
    z = _z(len(y), views)
    got = _call(name, y, z, temperature=temperature, label_similarity=kind)
    want = _reference(name, y, z, temperature, kind)
    assert got.shape == (len(y),) and np.all(np.isfinite(got))
    np.testing.assert_allclose(got, want, rtol=2e-6 / temperature + 1e-5, atol=1e-4)


@pytest.mark.large
@pytest.mark.parametrize("name", sorted(LOSSES))
@pytest.mark.parametrize("kind", ["cosine", "jaccard"])
@pytest.mark.parametrize("temperature, views", [(0.01, 3), (0.1, 1), (0.1, 2)])
def test_one_hot_rows_reduce_exactly_to_hard_labels(name, kind, temperature, views):
    ids = np.array([0, 2, 0, 1, 2, 2, 3])  # class 1 and 3 seen once
    z = _z(len(ids), views)
    hard = _call(name, ids, z, temperature=temperature)
    for y in (np.eye(4, dtype="float32")[ids], np.eye(4, dtype="int32")[ids], ids):
        soft = _call(name, y, z, temperature=temperature, label_similarity=kind)
        np.testing.assert_array_equal(soft, hard)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_gradient_matches_finite_differences_of_reference(name):
    y = LABEL_ROWS["multi_hot"]
    z = _z(len(y), 2, dim=3).astype("float64")
    fn, _, extra = LOSSES[name]
    _, grad = value_and_grad(lambda x: ops.mean(fn(y, x, temperature=0.5, label_similarity="cosine",
                                                   **extra)), z)
    numeric = numeric_gradient(lambda x: _reference(name, y, x, 0.5, "cosine").mean(), z)
    np.testing.assert_allclose(grad, numeric, atol=2e-4, rtol=2e-3)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_no_positive_gives_zero_with_finite_gradient(name):
    # One view; samples 2 and 3 share no label with any other: no positives for them.
    y = np.array([[1, 1, 0, 0], [0, 1, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0]], "float32")
    z = _z(4, 1)
    per_sample = _call(name, y, z, label_similarity="cosine")
    assert per_sample[2] == 0.0 and per_sample[3] == 0.0 and per_sample[0] > 0
    fn, _, extra = LOSSES[name]
    value, grad = value_and_grad(
        lambda x: ops.mean(fn(y, x, temperature=0.01, label_similarity="jaccard", **extra)), z)
    assert np.isfinite(value) and np.all(np.isfinite(grad))


def test_partial_overlap_weighs_less_than_a_full_positive():
    # Anchor 0 has two positives; making one of them partial (one of two labels shared) moves the
    # anchor's weighted mean towards the full positive's pair term.
    z = _z(4, 1)
    full = np.array([[1, 1, 0], [1, 1, 0], [1, 1, 0], [0, 0, 1]], "float32")
    half = np.array([[1, 1, 0], [1, 1, 0], [1, 0, 0], [0, 0, 1]], "float32")
    for name in LOSSES:
        a = _call(name, full, z, label_similarity="cosine")
        b = _call(name, half, z, label_similarity="cosine")
        assert abs(a[0] - b[0]) > 1e-3, name
        assert a[3] == b[3] == 0.0  # no overlap, no positive, either way


@pytest.mark.parametrize("cls", [L.SupConLoss, L.SINCERELoss])
def test_hard_default_still_refuses_multi_hot(cls):
    with pytest.raises(ValueError, match="never argmaxed"):
        cls()(LABEL_ROWS["multi_hot"], _z(6, 2))


@pytest.mark.parametrize("cls", [L.SupConLoss, L.SINCERELoss])
@pytest.mark.parametrize("bad", ["negative", "nan", "inf"])
def test_bad_label_rows_are_refused(cls, bad):
    y = LABEL_ROWS["soft"].copy()
    y[1, 2] = {"negative": -0.5, "nan": np.nan, "inf": np.inf}[bad]
    with pytest.raises(ValueError, match=r"`y_true` label rows .*finite, non-negative and not all "
                                         r"zero.*row 1"):
        cls(label_similarity="cosine")(y, _z(5, 2))


@pytest.mark.parametrize("cls", [L.SupConLoss, L.SINCERELoss])
def test_bad_arguments(cls):
    with pytest.raises(ValueError, match="label_similarity='dice'"):
        cls(label_similarity="dice")
    with pytest.raises(ValueError, match=r"y_true.*\(4 samples\)"):
        cls(label_similarity="cosine")(LABEL_ROWS["soft"], _z(4, 2))
    with pytest.raises(ValueError, match="string"):
        cls(label_similarity="cosine")(np.array([["a", "b"]] * 4), _z(4, 2))


def test_max_positives_cannot_be_combined():
    with pytest.raises(ValueError, match="max_positives=2, label_similarity='cosine'"):
        L.SupConLoss(max_positives=2, label_similarity="cosine")


@pytest.mark.large
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_config_round_trip_and_chunks(name):
    _, _, extra = LOSSES[name]
    loss = CLASSES[name](temperature=0.2, label_similarity="jaccard", **extra)
    config = loss.get_config()
    assert config["label_similarity"] == "jaccard"
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(loss))
    assert restored.get_config() == config
    y = LABEL_ROWS["multi_hot"]
    z = _z(6, 2)
    np.testing.assert_allclose(_np(restored(y, z)), _np(loss(y, z)), rtol=1e-6)
    chunked = CLASSES[name](temperature=0.2, label_similarity="jaccard", chunk_size=5, **extra)
    np.testing.assert_allclose(_np(chunked(y, z)), _np(loss(y, z)), rtol=1e-5)


@pytest.mark.parametrize("cls", [L.SupConLoss, L.SINCERELoss])
def test_fit_with_multi_hot_labels(cls):
    keras.utils.set_random_seed(0)
    inputs = keras.Input((2, 8))
    model = keras.Model(inputs, keras.layers.Dense(4)(inputs))
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss=cls(temperature=0.2, label_similarity="cosine"))
    x = RNG.normal(size=(32, 2, 8)).astype("float32")
    y = (RNG.random((32, 5)) < 0.4).astype("float32")
    y[np.arange(32), RNG.integers(0, 5, 32)] = 1  # at least one label each: zero rows are refused
    before = model.evaluate(x, y, batch_size=16, verbose=0)
    history = model.fit(x, y, batch_size=16, epochs=3, verbose=0)
    after = model.evaluate(x, y, batch_size=16, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    assert after < before


@pytest.mark.backends("tensorflow", "jax", "torch")
@pytest.mark.parametrize("kept", [True, False], ids=["kept_logits", "recomputed"])
def test_noise_weights_derived_from_the_positive_weights_equal_explicit_ones(kept):
    from clzoo.losses import row_ops

    rng = np.random.default_rng(3)
    z = rng.normal(size=(6, 4)).astype("float32") / 2
    weight = rng.uniform(size=(6, 6)).astype("float32") * (1 - np.eye(6, dtype="float32"))
    not_self = ~np.eye(6, dtype=bool)

    def loss(noise_from_positive):
        def fn(x):
            block = (None, None, ops.matmul(x, ops.transpose(x))) if kept else (
                x, x, ops.matmul(x, ops.transpose(x)))
            noise = not_self if noise_from_positive else np.where(not_self, 1 - weight, 0)
            return ops.sum(row_ops.mean_noise_contrastive(
                block, ops.convert_to_tensor(noise), ops.convert_to_tensor(weight),
                noise_from_positive=noise_from_positive))
        return fn

    derived, explicit = value_and_grad(loss(True), z), value_and_grad(loss(False), z)
    np.testing.assert_array_equal(derived[0], explicit[0])
    np.testing.assert_allclose(derived[1], explicit[1], rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="noise_from_positive"):
        row_ops.mean_noise_contrastive((None, None, ops.convert_to_tensor(z @ z.T)),
                                       ops.convert_to_tensor(weight), ops.convert_to_tensor(weight),
                                       noise_from_positive=True)
