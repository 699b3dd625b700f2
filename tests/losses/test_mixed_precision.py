"""`training.precision: mixed_*` (issue 71 item 1): every loss computes in float32 whatever the Keras
dtype policy, so half-precision model outputs give float32 values equal to float32 on the rounded inputs.

Runs in every backend lane (the folder rule in `tests/losses/conftest.py`).
"""

import keras
import numpy as np
import pytest
from keras import ops

import clzoo
from clzoo.train.precision import dtype_policy

L = clzoo.losses
EMBEDDING = [L.SINCERELoss, L.SupConLoss, L.SupInfoNCELoss, L.SpreadLoss, L.NSCLLoss, L.DCLLoss,
             L.InfoNCELoss]
HALF = {"mixed_bfloat16": "bfloat16", "mixed_float16": "float16"}


@pytest.mark.parametrize("policy", sorted(HALF))
@pytest.mark.parametrize("cls", EMBEDDING + [L.SoftTargetInfoNCELoss], ids=lambda c: c.__name__)
def test_every_loss_computes_in_float32_under_a_mixed_policy(cls, policy):
    rng = np.random.default_rng(3)
    if cls is L.SoftTargetInfoNCELoss:
        y_true = rng.dirichlet(np.ones(4), size=6).astype("float32")
        z = rng.normal(size=(6, 4)).astype("float32")
    else:
        y_true = np.array([0, 0, 1, 1, 2, 2])
        z = rng.normal(size=(6, 2, 5)).astype("float32")
    half = ops.cast(z, HALF[policy])  # what a model under the policy outputs
    rounded = ops.convert_to_numpy(ops.cast(half, "float32"))
    with dtype_policy(policy):
        loss = cls(temperature=0.1, reduction="none")
        value = loss(y_true, half)
    assert keras.config.dtype_policy().name == "float32"  # restored
    assert ops.dtype(value) == "float32"
    # float32 on the rounded inputs, not a half-precision computation (off by ~1e-2 here)
    expected = ops.convert_to_numpy(cls(temperature=0.1, reduction="none")(y_true, rounded))
    np.testing.assert_allclose(ops.convert_to_numpy(value), expected, rtol=1e-5, atol=1e-5)


def test_the_policy_is_restored_after_an_error_and_unknown_names_refused():
    with pytest.raises(RuntimeError):
        with dtype_policy("mixed_bfloat16"):
            assert keras.config.dtype_policy().name == "mixed_bfloat16"
            raise RuntimeError
    assert keras.config.dtype_policy().name == "float32"
    with pytest.raises(ValueError, match="training.precision must be one of float32, mixed_bfloat16"):
        with dtype_policy("bfloat16"):
            pass
