"""SINCERE and SupCon against the independent float64 reference, on the current backend.

Every module of `tests/losses/` runs in each backend lane (`tests/lanes.py`, `tests/losses/conftest.py`).
"""

import keras
import numpy as np
import pytest
from keras import ops

import clzoo
from tests.losses import reference
from tests.losses.autodiff import numeric_gradient, value_and_grad

RNG = np.random.default_rng(1234)

# name -> (class, function, reference(labels, z, temperature))
LOSSES = {
    "sincere": (clzoo.losses.SINCERELoss, clzoo.losses.sincere_loss, reference.sincere),
    "supcon": (clzoo.losses.SupConLoss, clzoo.losses.sup_con_loss, reference.supcon),
}

LABEL_SETS = {
    "balanced": np.array([0, 0, 1, 1, 2, 2]),
    "imbalanced": np.array([0, 0, 0, 0, 0, 1, 1, 2]),
    "class_seen_once": np.array([0, 0, 1, 1, 2]),
    "all_same_class": np.array([3, 3, 3, 3]),
}


def _embeddings(batch, views, dim=6):
    return RNG.normal(size=(batch, views, dim)).astype("float32")


def _np(x):
    return np.asarray(ops.convert_to_numpy(x))


@pytest.mark.parametrize("name", sorted(LOSSES))
@pytest.mark.parametrize("labels_name", sorted(LABEL_SETS))
@pytest.mark.parametrize("views", [1, 2, 3])
@pytest.mark.parametrize("temperature", [0.01, 0.1, 0.5])
def test_matches_reference(name, labels_name, views, temperature):
    _, fn, ref = LOSSES[name]
    labels = LABEL_SETS[labels_name]
    z = _embeddings(len(labels), views)
    got = _np(fn(labels, z, temperature=temperature))
    want = ref(labels, z, temperature)
    assert got.shape == (len(labels),)
    assert np.all(np.isfinite(got))
    # float32 logits at temperature 0.01 reach 100: compare relatively.
    np.testing.assert_allclose(got, want, rtol=2e-5 / temperature * 0.1 + 1e-5, atol=1e-4)


@pytest.mark.parametrize("variant", ["out", "in"])
@pytest.mark.parametrize("max_positives", [None, 1, 2, 4])
@pytest.mark.parametrize("views", [1, 2, 3])
def test_supcon_variants_match_reference(variant, max_positives, views):
    labels = LABEL_SETS["imbalanced"]
    z = _embeddings(len(labels), views)
    got = _np(clzoo.losses.sup_con_loss(labels, z, temperature=0.2, base_temperature=0.07,
                                        variant=variant, max_positives=max_positives))
    want = reference.supcon(labels, z, 0.2, 0.07, variant, max_positives)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_label_formats_agree(name):
    _, fn, _ = LOSSES[name]
    labels = np.array([0, 2, 1, 2, 0, 1])
    z = _embeddings(6, 2)
    flat = _np(fn(labels, z))
    column = _np(fn(labels[:, None], z))
    one_hot = _np(fn(np.eye(3, dtype="float32")[labels], z))
    as_float = _np(fn(labels.astype("float32"), z))
    np.testing.assert_allclose(column, flat, rtol=1e-6)
    np.testing.assert_allclose(one_hot, flat, rtol=1e-6)
    np.testing.assert_allclose(as_float, flat, rtol=1e-6)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_two_dim_input_is_one_view(name):
    _, fn, _ = LOSSES[name]
    labels = np.array([0, 0, 1, 1, 1])
    z = _embeddings(5, 1)
    np.testing.assert_allclose(_np(fn(labels, z[:, 0])), _np(fn(labels, z)), rtol=1e-6)


@pytest.mark.parametrize("name", sorted(LOSSES))
@pytest.mark.parametrize("views", [1, 2])
def test_gradient_matches_finite_differences_of_reference(name, views):
    cls, _, ref = LOSSES[name]
    labels = np.array([0, 0, 1, 2, 2])
    z = _embeddings(len(labels), views, dim=4).astype("float64")
    loss = cls(temperature=0.5)
    _, grad = value_and_grad(lambda x: loss(labels, x), z)
    numeric = numeric_gradient(lambda x: ref(labels, x, 0.5).mean(), z)
    np.testing.assert_allclose(grad, numeric, atol=2e-4, rtol=2e-3)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_class_seen_once_gives_zero_with_finite_gradient(name):
    cls, fn, _ = LOSSES[name]
    labels = np.array([0, 1, 1, 2])  # classes 0 and 2 appear once, one view
    z = _embeddings(4, 1)
    per_sample = _np(fn(labels, z))
    assert per_sample[0] == 0.0 and per_sample[3] == 0.0
    assert per_sample[1] > 0 and per_sample[2] > 0
    value, grad = value_and_grad(lambda x: cls(temperature=0.01)(labels, x), z)
    assert np.isfinite(value) and np.all(np.isfinite(grad))
    # No sample has a positive at all: loss and gradient are exactly zero.
    value, grad = value_and_grad(lambda x: cls()(np.arange(4), x), z)
    assert value == 0.0
    assert np.all(grad == 0.0)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_low_temperature_values_and_gradients_are_finite(name):
    cls, _, ref = LOSSES[name]
    labels = np.array([0, 0, 1, 1, 2, 2, 2, 3])
    z = _embeddings(8, 2, dim=16)
    value, grad = value_and_grad(lambda x: cls(temperature=0.01)(labels, x), z)
    assert np.isfinite(value) and np.all(np.isfinite(grad))
    np.testing.assert_allclose(value, ref(labels, z, 0.01).mean(), rtol=1e-4)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_sample_weight_and_reduction(name):
    cls, fn, _ = LOSSES[name]
    labels = np.array([0, 0, 1, 1, 1, 2])
    z = _embeddings(6, 2)
    per_sample = _np(fn(labels, z))
    weights = np.array([1.0, 0.0, 2.0, 0.5, 1.0, 3.0], dtype="float32")
    got = float(_np(cls()(labels, z, sample_weight=weights)))
    np.testing.assert_allclose(got, np.sum(per_sample * weights) / 6, rtol=1e-5)
    got_sum = float(_np(cls(reduction="sum")(labels, z)))
    np.testing.assert_allclose(got_sum, per_sample.sum(), rtol=1e-5)
    assert _np(cls(reduction="none")(labels, z)).shape == (6,)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_permutation_and_view_order_invariance(name):
    _, fn, _ = LOSSES[name]
    labels = np.array([0, 0, 1, 1, 2, 2, 2])
    z = _embeddings(7, 3)
    base = _np(fn(labels, z))
    perm = RNG.permutation(7)
    np.testing.assert_allclose(_np(fn(labels[perm], z[perm])), base[perm], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(fn(labels, z[:, ::-1])), base, rtol=1e-5, atol=1e-6)


def test_supcon_equals_sincere_with_one_positive():
    # Distinct labels, two views: each anchor's only positive is its other view,
    # so SupCon's denominator is exactly SINCERE's positive + noise.
    labels = np.arange(6)
    z = _embeddings(6, 2)
    # atol: the two sum the same logits (|s / T| up to 1 / 0.07 = 14) in different orders, so
    # float32 leaves ~1e-6 absolute; a loss near 0 (one was 0.008) makes that over 1e-5 relative.
    np.testing.assert_allclose(_np(clzoo.losses.sup_con_loss(labels, z)),
                               _np(clzoo.losses.sincere_loss(labels, z)), rtol=1e-5, atol=1e-5)


def test_sincere_is_not_larger_than_supcon():
    # SupCon's denominator holds SINCERE's plus the other positives.
    labels = np.array([0, 0, 0, 1, 1, 2])
    z = _embeddings(6, 2)
    assert np.all(_np(clzoo.losses.sincere_loss(labels, z))
                  <= _np(clzoo.losses.sup_con_loss(labels, z)) + 1e-6)


def test_base_temperature_rescales():
    labels = np.array([0, 0, 1, 1])
    z = _embeddings(4, 2)
    plain = _np(clzoo.losses.sup_con_loss(labels, z, temperature=0.1))
    scaled = _np(clzoo.losses.sup_con_loss(labels, z, temperature=0.1, base_temperature=0.07))
    np.testing.assert_allclose(scaled, plain * 0.1 / 0.07, rtol=1e-6)


def test_mixed_precision_inputs_give_float32_logits():
    labels = np.array([0, 0, 1, 1])
    z = _embeddings(4, 2)
    for dtype in ("float16", "bfloat16"):
        half = ops.cast(z, dtype)
        got = _np(ops.cast(clzoo.losses.sincere_loss(labels, half, temperature=0.01), "float32"))
        assert np.all(np.isfinite(got))
        want = reference.sincere(labels, _np(ops.cast(half, "float32")), 0.01)
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)


# ---- invalid arguments and inputs -------------------------------------------------
# Bad temperature, rank, label count and sample weights are checked for
# every registered loss in test_contract.py.

@pytest.mark.parametrize("kwargs, match", [
    ({"variant": "middle"}, "variant='middle'"),
    ({"base_temperature": 0.0}, "base_temperature=0.0"),
    ({"max_positives": 0}, "max_positives=0"),
    ({"max_positives": 1.5}, "max_positives=1.5"),
])
def test_supcon_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        clzoo.losses.SupConLoss(**kwargs)


# ---- serialization and training ----------------------------------------------------

@pytest.mark.parametrize("loss", [
    clzoo.losses.SINCERELoss(temperature=0.2),
    clzoo.losses.SupConLoss(temperature=0.2, base_temperature=0.07, variant="in", max_positives=3),
])
def test_config_round_trip(loss):
    config = loss.get_config()
    clone = type(loss).from_config(config)
    assert clone.get_config() == config
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(loss))
    assert type(restored) is type(loss) and restored.get_config() == config
    labels = np.array([0, 0, 1, 1])
    z = _embeddings(4, 2)
    np.testing.assert_allclose(_np(restored(labels, z)), _np(loss(labels, z)), rtol=1e-6)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_compile_fit_and_save(tmp_path, name):
    cls, _, _ = LOSSES[name]
    keras.utils.set_random_seed(0)
    inputs = keras.Input((2, 8))
    model = keras.Model(inputs, keras.layers.Dense(4)(inputs))
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss=cls(temperature=0.2))
    x = RNG.normal(size=(32, 2, 8)).astype("float32")
    y = RNG.integers(0, 4, size=(32, 1))
    before = model.evaluate(x, y, verbose=0)
    history = model.fit(x, y, batch_size=16, epochs=5, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    assert model.evaluate(x, y, verbose=0) < before
    path = tmp_path / "model.keras"
    model.save(path)
    restored = keras.saving.load_model(path)
    assert type(restored.loss) is cls
    np.testing.assert_allclose(restored.evaluate(x, y, verbose=0),
                               model.evaluate(x, y, verbose=0), rtol=1e-5)
