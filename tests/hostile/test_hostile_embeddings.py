"""Hostile embeddings, sample weights and hyperparameters; the LOSSES registry.

Runs in every backend lane (`pytestmark`; see `tests/conftest.py`).
"""

import json
import os

import keras
import numpy as np
import pytest

import clzoo
from tests.hostile._util import BACKEND, compiled, embeddings, runtime_error, to_numpy

pytestmark = pytest.mark.backends("tensorflow", "jax", "torch")  # every lane (tests/conftest.py)

L = clzoo.losses
EMBEDDING_LOSSES = [cls for cls in L.ALL_OBJECTS if cls is not L.SoftTargetInfoNCELoss]
NAMES = [cls.__name__ for cls in EMBEDDING_LOSSES]
Z = embeddings(4, 2, 8)
Y = np.array([0, 0, 1, 1])


@pytest.mark.parametrize("shape, what", [((4, 2, 0), "dim 0"), ((4, 0), "dim 0"),
                                         ((0, 2, 8), "an empty batch 0"), ((0, 8), "an empty batch 0"),
                                         ((4, 0, 8), "views 0")])
@pytest.mark.parametrize("loss", ["SupConLoss", "InfoNCELoss", "SpreadLoss"])
def test_empty_axes_are_refused(loss, shape, what):
    y = np.zeros(shape[0], "int64")
    with pytest.raises(ValueError, match=rf"`y_pred` has {what}.*y_pred.shape"):
        L.LOSSES.get(loss)()(y, np.zeros(shape, "float32"))


@pytest.mark.parametrize("z", [Z.astype("complex64"), Z.astype("complex128"),
                               np.full((4, 2, 8), "x"), Z > 0, Z.astype(object)])
@pytest.mark.parametrize("loss", NAMES)
def test_complex_string_and_bool_embeddings_are_refused(loss, z):
    with pytest.raises(ValueError, match=r"`y_pred` must be (numeric|real)"):
        L.LOSSES.get(loss)()(Y, z)


@pytest.mark.parametrize("shape", [(8,), (4, 2, 2, 2)])
def test_embedding_rank_is_refused(shape):
    with pytest.raises(ValueError, match=r"`y_pred` must be embeddings.*y_pred.shape"):
        L.SupConLoss()(Y, np.ones(shape, "float32"))


@pytest.mark.parametrize("weight", [np.ones((4, 2)), np.ones(3), np.ones(5), np.ones((4, 1, 1)),
                                    np.ones((1, 4)), np.ones((2, 2))])
@pytest.mark.parametrize("loss", ["SupConLoss", "InfoNCELoss", "SoftTargetInfoNCELoss"])
def test_sample_weight_of_the_wrong_shape_is_refused(loss, weight):
    y, z = (np.eye(2, dtype="float32")[Y], Z[:, 0, :2]) if loss == "SoftTargetInfoNCELoss" else (Y, Z)
    with pytest.raises(ValueError, match=r"`sample_weight` must be a scalar or one weight per sample"
                                         r".*sample_weight.shape"):
        L.LOSSES.get(loss)()(y, z, sample_weight=weight)


@pytest.mark.parametrize("weight", [[-1.0, 1, 1, 1], [1, 1, np.nan, 1], [1, np.inf, 1, 1],
                                    [0, 0, -1e-9, 0]])
@pytest.mark.parametrize("loss", ["SupConLoss", "InfoNCELoss", "SoftTargetInfoNCELoss"])
def test_negative_or_non_finite_sample_weight_is_refused(loss, weight):
    y, z = (np.eye(2, dtype="float32")[Y], Z[:, 0, :2]) if loss == "SoftTargetInfoNCELoss" else (Y, Z)
    with pytest.raises(ValueError, match=r"`sample_weight` must be finite and non-negative"):
        L.LOSSES.get(loss)()(y, z, sample_weight=np.array(weight, "float32"))


@pytest.mark.parametrize("weight", [np.array(["a"] * 4), np.ones(4, "complex64")])
def test_string_or_complex_sample_weight_is_refused(weight):
    with pytest.raises(ValueError, match=r"`sample_weight` must be numeric"):
        L.SupConLoss()(Y, Z, sample_weight=weight)


@pytest.mark.parametrize("weight", [2.0, np.array([1.0, 0.0, 2.0, 0.5]),
                                    np.array([[1.0], [0.0], [2.0], [0.5]])])
def test_valid_sample_weights_match_the_weighted_mean(weight):
    per_sample = to_numpy(L.sup_con_loss(Y, Z))
    want = np.mean(per_sample * np.reshape(weight, (-1,)))
    np.testing.assert_allclose(to_numpy(L.SupConLoss()(Y, Z, sample_weight=weight)), want, rtol=1e-6)


@pytest.mark.large
def test_negative_sample_weight_is_caught_compiled_with_check_values():
    loss = L.SupConLoss(check_values=True)
    fn = compiled(lambda w, z: loss(np.array([0, 0, 1, 1]), z, sample_weight=w), unknown_batch=False)
    with pytest.raises(runtime_error(), match=r"`sample_weight` must be finite and non-negative"):
        to_numpy(fn(np.array([1, -1, 1, 1], "float32"), Z))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("loss", NAMES)
def test_non_finite_embeddings_are_reported_with_check_values(loss, bad):
    z = Z.copy()
    z[1, 0, 3] = bad
    with pytest.raises(ValueError, match=r"`y_pred` holds NaN or inf embeddings"):
        L.LOSSES.get(loss)(check_values=True)(Y, z)


@pytest.mark.large
def test_non_finite_embeddings_stop_a_compiled_step_with_check_values():
    z = Z.copy()
    z[2, 1, 0] = np.nan
    fn = compiled(lambda y, x: L.SupConLoss(check_values=True)(y, x))
    with pytest.raises(runtime_error(), match=r"`y_pred` holds NaN or inf embeddings"):
        to_numpy(fn(Y, z))


def test_without_check_values_a_nan_embedding_gives_a_nan_loss_not_a_number():
    z = Z.copy()
    z[0, 0, 0] = np.nan
    assert np.isnan(to_numpy(L.SupConLoss()(Y, z)))


NUMPY_HYPERPARAMETERS = [
    ("SupConLoss", {"temperature": np.float32(0.1), "base_temperature": np.float64(0.07),
                    "max_positives": np.int64(4), "chunk_size": np.int32(4)}),
    ("SupConLoss", {"temperature": np.int64(1)}),
    ("SINCERELoss", {"temperature": np.float16(0.5)}),
    ("SupInfoNCELoss", {"epsilon": np.float32(0.1)}),
    ("SpreadLoss", {"alpha": np.float32(0.25), "temperature": np.float64(0.5)}),
    ("InfoNCELoss", {"temperature": np.float32(0.2), "normalize": np.bool_(True)}),
    ("SoftTargetInfoNCELoss", {"temperature": np.float32(2.0)}),
]


@pytest.mark.parametrize("loss, kwargs", NUMPY_HYPERPARAMETERS)
def test_numpy_scalar_hyperparameters_are_accepted(loss, kwargs):
    cls = L.LOSSES.get(loss)
    plain = {k: v.item() for k, v in kwargs.items()}
    config = cls(**kwargs).get_config()
    assert config == cls(**plain).get_config()
    json.dumps(config)  # plain Python numbers, serializable
    y, z = (np.eye(2, dtype="float32")[Y], Z[:, 0, :2]) if loss == "SoftTargetInfoNCELoss" else (Y, Z)
    np.testing.assert_allclose(to_numpy(cls(**kwargs)(y, z)), to_numpy(cls(**plain)(y, z)), rtol=1e-6)


@pytest.mark.parametrize("kwargs, name", [
    ({"temperature": np.bool_(True)}, "temperature"), ({"temperature": "0.1"}, "temperature"),
    ({"temperature": np.array([0.1])}, "temperature"), ({"temperature": np.float32("nan")}, "temperature"),
    ({"temperature": 0}, "temperature"), ({"normalize": "false"}, "normalize"),
    ({"check_values": 1}, "check_values"), ({"chunk_size": 2.5}, "chunk_size"),
    ({"chunk_size": np.float32(2)}, "chunk_size"), ({"max_positives": np.int64(0)}, "max_positives"),
    ({"base_temperature": np.float32(-1)}, "base_temperature"),
])
def test_bad_hyperparameters_are_refused(kwargs, name):
    with pytest.raises(ValueError, match=rf"`{name}` must be .*Received: {name}="):
        L.SupConLoss(**kwargs)


def test_losses_registry():
    assert L.LOSSES.list() == [cls.__name__ for cls in L.ALL_OBJECTS] == list(L.ALL_OBJECTS_DICT)
    for name in L.LOSSES:
        entry = L.LOSSES.entry(name)
        assert entry.factory is L.ALL_OBJECTS_DICT[name] and entry.description
        assert entry.metadata["paper"]
    assert isinstance(L.get("SupConLoss"), L.SupConLoss)
    restored = L.get(keras.saving.serialize_keras_object(L.SINCERELoss(temperature=0.3)))
    assert restored.temperature == 0.3
    with pytest.raises(ValueError, match=r"Unknown loss 'SupConLos'.*Did you mean 'SupConLoss'"):
        L.get("SupConLos")


def test_backend_name():  # the backend this module ran on is the one it was asked to run on
    assert BACKEND == keras.backend.backend() == os.environ.get("KERAS_BACKEND", BACKEND)
