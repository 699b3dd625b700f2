"""Hostile soft targets: the checks hold eagerly, in tf.function / jax.jit and in `fit`.

Runs in every backend lane (`pytestmark`; see `tests/conftest.py`).
"""

import keras
import numpy as np
import pytest

import clzoo
from tests.hostile._util import compiled, runtime_error, to_numpy
from tests.losses import reference

pytestmark = pytest.mark.backends("tensorflow", "jax", "torch")  # every lane (tests/conftest.py)

LOSS = clzoo.losses.SoftTargetInfoNCELoss
LOGITS = np.random.default_rng(3).normal(size=(4, 3)).astype("float32")
GOOD = np.array([[0.9, 0.05, 0.05], [0.05, 0.9, 0.05], [0.5, 0.5, 0.0], [0, 0, 1]], "float32")

BAD = {
    "row_sums_to_half": (np.array([[0.25, 0.25, 0], [0, 1, 0], [0, 0, 1], [1, 0, 0]]), "sums to 0.5"),
    "row_sums_to_two": (np.array([[1, 1, 0], [0, 1, 0], [0, 0, 1], [1, 0, 0]]), "sums to 2"),
    "all_zero_row": (np.array([[0, 0, 0], [0, 1, 0], [0, 0, 1], [1, 0, 0]]), "sums to 0"),
    "negative_entry": (np.array([[1.5, -0.5, 0], [0, 1, 0], [0, 0, 1], [1, 0, 0]]), "negative entry"),
    "nan_entry": (np.array([[np.nan, 1, 0], [0, 1, 0], [0, 0, 1], [1, 0, 0]]), "NaN or inf"),
    "inf_entry": (np.array([[np.inf, 0, 0], [0, 1, 0], [0, 0, 1], [1, 0, 0]]), "NaN or inf"),
    "logits_as_targets": (LOGITS, "row 0"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_targets_are_refused_eagerly_naming_the_cause(case):
    targets, cause = BAD[case]
    with pytest.raises(ValueError, match=rf"`y_true` must hold soft targets.*{cause}"):
        LOSS()(targets.astype("float32"), LOGITS)


@pytest.mark.parametrize("case", ["row_sums_to_half", "negative_entry", "nan_entry"])
def test_bad_targets_are_refused_inside_compiled_steps(case):
    fn = compiled(lambda t, x: LOSS()(t, x))
    with pytest.raises(runtime_error(), match=r"`y_true` must hold soft targets"):
        to_numpy(fn(BAD[case][0].astype("float32"), LOGITS))


def _classifier():
    model = keras.Sequential([keras.Input((5,)), keras.layers.Dense(3)])
    model.compile(optimizer="sgd", loss=LOSS())
    return model


def test_bad_targets_stop_fit_with_the_message():
    model = _classifier()
    x = np.random.default_rng(0).normal(size=(8, 5)).astype("float32")
    targets = np.tile(BAD["row_sums_to_half"][0], (2, 1)).astype("float32")
    with pytest.raises(runtime_error(), match=r"`y_true` must hold soft targets"):
        model.fit(x, targets, batch_size=8, epochs=1, verbose=0)
    model = _classifier()  # (a JAX model is not reusable after a failed step)
    weights = [w.copy() for w in model.get_weights()]
    model.fit(x, np.tile(GOOD, (2, 1)), batch_size=8, epochs=1, verbose=0)  # good targets train
    assert any(not np.array_equal(a, b) for a, b in zip(weights, model.get_weights()))


def test_validate_targets_off_computes_without_checks():
    targets = BAD["row_sums_to_two"][0].astype("float32")
    assert np.all(np.isfinite(to_numpy(LOSS(validate_targets=False, reduction=None)(targets, LOGITS))))
    got = to_numpy(LOSS(validate_targets=False, reduction=None)(GOOD, LOGITS))
    np.testing.assert_allclose(got, reference.soft_target_info_nce(GOOD, LOGITS, 1.0), rtol=1e-5)


def test_good_targets_match_the_reference_compiled():
    got = to_numpy(compiled(lambda t, x: clzoo.losses.soft_target_info_nce_loss(t, x))(GOOD, LOGITS))
    np.testing.assert_allclose(got, reference.soft_target_info_nce(GOOD, LOGITS, 1.0), rtol=1e-5)


@pytest.mark.parametrize("targets, logits, match", [
    (np.array([0, 1, 2, 0]), LOGITS, r"Integer class ids \(batch,\) belong to the hard-label losses"),
    (GOOD[:3], LOGITS, r"same shape.*y_true.shape=\(3, 3\)"),
    (GOOD[:, :2], LOGITS, r"same shape.*y_true.shape=\(4, 2\)"),
    (np.zeros((0, 3), "float32"), np.zeros((0, 3), "float32"), r"`y_true` has an empty batch 0"),
    (np.zeros((4, 0), "float32"), np.zeros((4, 0), "float32"), r"`y_true` has classes 0"),
    (np.full((4, 3), "a"), LOGITS, r"`y_true` must be numeric"),
    (GOOD, LOGITS.astype("complex64"), r"`y_pred` must be numeric"),
    (GOOD[None], LOGITS[None], r"must both have shape \(batch, classes\)"),
])
def test_bad_layouts_are_refused(targets, logits, match):
    with pytest.raises(ValueError, match=match):
        LOSS()(targets, logits)


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_validate_targets_must_be_a_bool(value):
    with pytest.raises(ValueError, match=r"`validate_targets` must be True or False"):
        LOSS(validate_targets=value)
