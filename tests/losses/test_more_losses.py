"""InfoNCE, DCL, NSCL and epsilon-SupInfoNCE against the float64 reference."""

import keras
import numpy as np
import pytest
from keras import ops

import clzoo
from tests.losses import reference
from tests.losses.autodiff import numeric_gradient, value_and_grad

RNG = np.random.default_rng(99)
LABELS = {
    "balanced": np.array([0, 0, 1, 1, 2, 2]),
    "imbalanced": np.array([0, 0, 0, 0, 0, 1, 1, 2]),
    "all_same_class": np.array([3, 3, 3, 3]),
}


def _np(x):
    return np.asarray(ops.convert_to_numpy(x))


def _z(batch, views, dim=6):
    return RNG.normal(size=(batch, views, dim)).astype("float32")


@pytest.mark.parametrize("labels_name", sorted(LABELS))
@pytest.mark.parametrize("views", [2, 3])
@pytest.mark.parametrize("temperature", [0.01, 0.2])
def test_self_supervised_and_nscl_match_reference(labels_name, views, temperature):
    labels = LABELS[labels_name]
    z = _z(len(labels), views)
    tol = dict(rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(_np(clzoo.losses.info_nce_loss(None, z, temperature)),
                               reference.info_nce(z, temperature), **tol)
    np.testing.assert_allclose(_np(clzoo.losses.dcl_loss(None, z, temperature)),
                               reference.dcl(z, temperature), **tol)
    np.testing.assert_allclose(_np(clzoo.losses.nscl_loss(labels, z, temperature)),
                               reference.nscl(labels, z, temperature), **tol)


@pytest.mark.parametrize("epsilon", [0.0, 0.1, 0.25, 0.5])
@pytest.mark.parametrize("views", [1, 2, 3])
def test_sup_info_nce_matches_reference(epsilon, views):
    labels = LABELS["imbalanced"]
    z = _z(len(labels), views)
    np.testing.assert_allclose(
        _np(clzoo.losses.sup_info_nce_loss(labels, z, temperature=0.1, epsilon=epsilon)),
        reference.sup_info_nce(labels, z, 0.1, epsilon), rtol=1e-5, atol=1e-5)


def test_paper_identities():
    labels = np.array([0, 0, 1, 1, 1, 2])
    z = _z(6, 2)
    # epsilon = 0 is SINCERE (SINCERE paper, sec. 3.5).
    np.testing.assert_allclose(_np(clzoo.losses.sup_info_nce_loss(labels, z, epsilon=0.0)),
                               _np(clzoo.losses.sincere_loss(labels, z)), rtol=1e-6)
    # InfoNCE is SINCERE with the instance as the class.
    np.testing.assert_allclose(_np(clzoo.losses.info_nce_loss(None, z)),
                               _np(clzoo.losses.sincere_loss(np.arange(6), z)), rtol=1e-6)
    # NSCL with instance labels is DCL; and DCL >= NSCL (NSCL paper Thm. 1, lower side).
    np.testing.assert_allclose(_np(clzoo.losses.nscl_loss(np.arange(6), z)),
                               _np(clzoo.losses.dcl_loss(None, z)), rtol=1e-6)
    assert np.all(_np(clzoo.losses.dcl_loss(None, z))
                  >= _np(clzoo.losses.nscl_loss(labels, z)) - 1e-6)


def test_nscl_all_same_class_has_no_valid_anchor():
    value, grad = value_and_grad(lambda x: clzoo.losses.NSCLLoss()(np.zeros(4), x), _z(4, 2))
    assert value == 0.0 and np.all(grad == 0.0)


@pytest.mark.parametrize("cls", [clzoo.losses.InfoNCELoss, clzoo.losses.DCLLoss,
                                 clzoo.losses.NSCLLoss, clzoo.losses.SupInfoNCELoss,
                                 clzoo.losses.SpreadLoss])
def test_gradient_finite_at_low_temperature_and_round_trip(cls):
    labels = np.array([0, 0, 1, 1, 2, 2])
    z = _z(6, 2, dim=16)
    value, grad = value_and_grad(lambda x: cls(temperature=0.01)(labels, x), z)
    assert np.isfinite(value) and np.all(np.isfinite(grad)) and np.any(grad != 0)
    loss = cls(temperature=0.3)
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(loss))
    assert restored.get_config() == loss.get_config()
    np.testing.assert_allclose(_np(restored(labels, z)), _np(loss(labels, z)), rtol=1e-6)


# Bad chunk sizes: test_contract.py (for every embedding loss).
@pytest.mark.parametrize("cls", [clzoo.losses.InfoNCELoss, clzoo.losses.DCLLoss,
                                 clzoo.losses.NSCLLoss])
def test_one_view_is_refused(cls):
    with pytest.raises(ValueError, match="at least 2 views.*views=1"):
        cls()(np.zeros(4), _z(4, 1))


@pytest.mark.parametrize("epsilon", [-0.1, float("nan"), "0.1"])
def test_bad_epsilon(epsilon):
    with pytest.raises(ValueError, match="epsilon"):
        clzoo.losses.SupInfoNCELoss(epsilon=epsilon)


@pytest.mark.parametrize("alpha", [0.0, 0.25, 1.0])
@pytest.mark.parametrize("views", [2, 3])
@pytest.mark.parametrize("labels_name", sorted(LABELS))
def test_spread_matches_reference(alpha, views, labels_name):
    labels = LABELS[labels_name]
    z = _z(len(labels), views)
    np.testing.assert_allclose(
        _np(clzoo.losses.spread_loss(labels, z, temperature=0.5, alpha=alpha)),
        reference.spread(labels, z, 0.5, alpha), rtol=1e-5, atol=1e-5)


def test_spread_alpha_one_is_attract_only():
    # alpha = 1 gives L_attract, which is SINCERE (Perfectly Balanced eq. 2).
    labels = np.array([0, 0, 1, 1, 1, 2])
    z = _z(6, 2)
    np.testing.assert_allclose(_np(clzoo.losses.spread_loss(labels, z, 0.5, alpha=1.0)),
                               _np(clzoo.losses.sincere_loss(labels, z, 0.5)), rtol=1e-6)


@pytest.mark.parametrize("alpha", [-0.1, 1.5, float("nan")])
def test_bad_alpha(alpha):
    with pytest.raises(ValueError, match="alpha"):
        clzoo.losses.SpreadLoss(alpha=alpha)


def test_spread_one_view_is_refused():
    with pytest.raises(ValueError, match="at least 2 views"):
        clzoo.losses.SpreadLoss()(np.zeros(4), _z(4, 1))


def _soft_targets(batch, classes, smoothing=0.1, rng=None):
    rng = RNG if rng is None else rng  # read at call time: tests/conftest.py reseeds RNG per test
    hard = np.eye(classes)[rng.integers(0, classes, batch)]
    lam = rng.uniform(0.3, 1.0, size=(batch, 1))
    mixed = lam * hard + (1 - lam) * hard[rng.permutation(batch)]  # MixUp of labels
    return ((1 - smoothing) * mixed + smoothing / classes).astype("float32")


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("temperature", [0.1, 1.0])
@pytest.mark.parametrize("noise_probs", [None, [0.5, 0.2, 0.2, 0.1]])
def test_soft_target_info_nce_matches_reference(temperature, noise_probs, seed):
    # Its own generator: the draw must not depend on which tests ran first in this worker.
    rng = np.random.default_rng(seed)
    targets = _soft_targets(6, 4, rng=rng)
    logits = rng.normal(size=(6, 4)).astype("float32")
    got = _np(clzoo.losses.soft_target_info_nce_loss(targets, logits, temperature, noise_probs))
    # float32 on logits / 0.1 resolves ~4e-6 absolute (worst of 1,200 draws); a loss near 0
    # cannot also hold rtol 1e-5, which failed 11% of draws alone.
    np.testing.assert_allclose(got, reference.soft_target_info_nce(targets, logits, temperature,
                                                                   noise_probs), rtol=1e-5, atol=1e-5)


def test_soft_target_info_nce_gradient_and_fit():
    targets = _soft_targets(8, 3)
    logits = RNG.normal(size=(8, 3))
    loss = clzoo.losses.SoftTargetInfoNCELoss(noise_probs=[0.6, 0.3, 0.1])
    _, grad = value_and_grad(lambda x: loss(targets, x), logits)
    numeric = numeric_gradient(
        lambda x: reference.soft_target_info_nce(targets, x, 1.0, [0.6, 0.3, 0.1]).mean(), logits)
    np.testing.assert_allclose(grad, numeric, atol=1e-4, rtol=1e-3)
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(loss))
    assert restored.get_config() == loss.get_config()
    model = keras.Sequential([keras.Input((5,)), keras.layers.Dense(3)])
    model.compile(optimizer="sgd", loss=loss)
    history = model.fit(RNG.normal(size=(16, 5)), _soft_targets(16, 3), epochs=2, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))


@pytest.mark.parametrize("kwargs, match", [
    ({"noise_probs": [0.5, 0.6]}, "noise_probs=.*sum"),
    ({"noise_probs": [1.0, 0.0]}, "noise_probs"),
    ({"temperature": 0}, "temperature=0"),
])
def test_soft_target_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        clzoo.losses.SoftTargetInfoNCELoss(**kwargs)


def test_soft_target_bad_inputs():
    loss = clzoo.losses.SoftTargetInfoNCELoss(noise_probs=[0.5, 0.5])
    logits = np.zeros((2, 3), "float32")
    with pytest.raises(ValueError, match="one probability per class \\(3\\)"):
        loss(np.eye(3, dtype="float32")[:2], logits)
    with pytest.raises(ValueError, match="row 0 sums to 0.5"):
        clzoo.losses.SoftTargetInfoNCELoss()(np.array([[0.2, 0.3, 0.0], [0, 0, 1]], "float32"), logits)
    with pytest.raises(ValueError, match="same shape"):
        clzoo.losses.SoftTargetInfoNCELoss()(np.eye(4, dtype="float32")[:2], logits)
    with pytest.raises(ValueError, match="\\(batch, classes\\)"):
        clzoo.losses.SoftTargetInfoNCELoss()(np.zeros(2), logits)


CHUNKABLE = {
    "InfoNCELoss": lambda c: clzoo.losses.InfoNCELoss(chunk_size=c),
    "DCLLoss": lambda c: clzoo.losses.DCLLoss(chunk_size=c),
    "SupConLoss": lambda c: clzoo.losses.SupConLoss(chunk_size=c, max_positives=3),
    "SupConLoss_in": lambda c: clzoo.losses.SupConLoss(chunk_size=c, variant="in"),
    "SINCERELoss": lambda c: clzoo.losses.SINCERELoss(chunk_size=c),
    "SupInfoNCELoss": lambda c: clzoo.losses.SupInfoNCELoss(chunk_size=c),
    "SpreadLoss": lambda c: clzoo.losses.SpreadLoss(chunk_size=c, alpha=0.3),
    "NSCLLoss": lambda c: clzoo.losses.NSCLLoss(chunk_size=c),
}


# One-anchor blocks, the extreme the float64 checks of test_chunked.py (blocks of 3, 4, 5 and 16
# anchors) leave out, and SupCon's max_positives chunked.
@pytest.mark.large
@pytest.mark.parametrize("name", sorted(CHUNKABLE))
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_chunked_equals_full_in_value_and_gradient(name, compiled):
    chunk_size = 1
    labels = np.array([0, 0, 1, 1, 1, 2, 3])
    z = _z(7, 2, dim=8)
    full_value, full_grad = value_and_grad(lambda x: CHUNKABLE[name](None)(labels, x), z)
    value, grad = value_and_grad(lambda x: CHUNKABLE[name](chunk_size)(labels, x), z,
                                 compiled=compiled)
    np.testing.assert_allclose(value, full_value, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(grad, full_grad, rtol=1e-5, atol=1e-6)
    per_sample = _np(CHUNKABLE[name](chunk_size).call(labels, z))
    np.testing.assert_allclose(per_sample, _np(CHUNKABLE[name](None).call(labels, z)),
                               rtol=1e-6, atol=1e-6)


@pytest.mark.large
@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
@pytest.mark.parametrize("name", sorted(CHUNKABLE))
def test_mixed_precision_fit_is_finite_at_low_temperature(policy, name):
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(policy)
    try:
        keras.utils.set_random_seed(0)
        inputs = keras.Input((2, 8))
        outputs = keras.layers.Dense(16)(inputs)
        assert outputs.dtype == policy.split("_")[1]
        model = keras.Model(inputs, outputs)
        loss = CHUNKABLE[name](None)
        loss.temperature = 0.01
        model.compile(optimizer=keras.optimizers.SGD(0.01), loss=loss)
        x = RNG.normal(size=(32, 2, 8)).astype("float32")
        y = RNG.integers(0, 4, size=32)
        history = model.fit(x, y, batch_size=16, epochs=2, verbose=0)
        assert np.all(np.isfinite(history.history["loss"]))
        assert all(np.all(np.isfinite(w)) for w in model.get_weights())
    finally:
        keras.mixed_precision.set_global_policy(previous)


REFERENCES = {
    "InfoNCELoss": (lambda: clzoo.losses.InfoNCELoss(temperature=0.5),
                    lambda y, z: reference.info_nce(z, 0.5)),
    "DCLLoss": (lambda: clzoo.losses.DCLLoss(temperature=0.5),
                lambda y, z: reference.dcl(z, 0.5)),
    "NSCLLoss": (lambda: clzoo.losses.NSCLLoss(temperature=0.5),
                 lambda y, z: reference.nscl(y, z, 0.5)),
    "SupInfoNCELoss": (lambda: clzoo.losses.SupInfoNCELoss(temperature=0.5, epsilon=0.25),
                       lambda y, z: reference.sup_info_nce(y, z, 0.5, 0.25)),
    "SpreadLoss": (lambda: clzoo.losses.SpreadLoss(temperature=0.5, alpha=0.3),
                   lambda y, z: reference.spread(y, z, 0.5, 0.3)),
}


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_gradient_matches_finite_differences(name):
    make, ref = REFERENCES[name]
    labels = np.array([0, 0, 1, 2, 2])
    z = _z(5, 2, dim=3).astype("float64")
    _, grad = value_and_grad(lambda x: make()(labels, x), z)
    numeric = numeric_gradient(lambda x: ref(labels, x).mean(), z)
    np.testing.assert_allclose(grad, numeric, atol=2e-4, rtol=2e-3)


def test_none_labels():
    z = _z(4, 2)
    np.testing.assert_allclose(_np(clzoo.losses.InfoNCELoss()(None, z)),
                               _np(clzoo.losses.InfoNCELoss()(np.arange(4), z)), rtol=1e-6)
    assert np.isfinite(_np(clzoo.losses.DCLLoss()(None, z)))
    with pytest.raises(ValueError, match="needs class labels. Received: y_true=None"):
        clzoo.losses.SINCERELoss()(None, z)


# SupCon with max_positives keeps positives in batch order, so it is left out.
@pytest.mark.parametrize("name", sorted(set(CHUNKABLE) - {"SupConLoss"}))
def test_permutation_and_view_order_invariance_all(name):
    labels = np.array([0, 0, 1, 1, 2, 2, 2])
    z = _z(7, 3)
    loss = CHUNKABLE[name](None)
    base = _np(loss.call(labels, z))
    perm = RNG.permutation(7)
    np.testing.assert_allclose(_np(loss.call(labels[perm], z[perm])), base[perm],
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_np(loss.call(labels, z[:, ::-1])), base, rtol=1e-5, atol=1e-5)
