"""InfoNCE, DCL, NSCL and epsilon-SupInfoNCE against the float64 reference."""

import keras
import numpy as np
import pytest
from keras import ops

import clzoo
from tests.losses import reference
from tests.losses.autodiff import value_and_grad

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
                                 clzoo.losses.NSCLLoss, clzoo.losses.SupInfoNCELoss])
def test_gradient_finite_at_low_temperature_and_round_trip(cls):
    labels = np.array([0, 0, 1, 1, 2, 2])
    z = _z(6, 2, dim=16)
    value, grad = value_and_grad(lambda x: cls(temperature=0.01)(labels, x), z)
    assert np.isfinite(value) and np.all(np.isfinite(grad)) and np.any(grad != 0)
    loss = cls(temperature=0.3)
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(loss))
    assert restored.get_config() == loss.get_config()
    np.testing.assert_allclose(_np(restored(labels, z)), _np(loss(labels, z)), rtol=1e-6)


@pytest.mark.parametrize("cls", [clzoo.losses.InfoNCELoss, clzoo.losses.DCLLoss,
                                 clzoo.losses.NSCLLoss])
def test_one_view_is_refused(cls):
    with pytest.raises(ValueError, match="at least 2 views.*views=1"):
        cls()(np.zeros(4), _z(4, 1))


@pytest.mark.parametrize("epsilon", [-0.1, float("nan"), "0.1"])
def test_bad_epsilon(epsilon):
    with pytest.raises(ValueError, match="epsilon"):
        clzoo.losses.SupInfoNCELoss(epsilon=epsilon)
