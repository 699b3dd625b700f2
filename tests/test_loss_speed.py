"""`benchmarks/loss_speed.py`'s textbook SupCon yardstick is SupCon: it must equal `SupConLoss`
(and the NumPy reference) in value and gradient, or its timing row compares unlike things."""

import sys
from pathlib import Path

import numpy as np
import pytest

import clzoo
from tests.losses import reference
from tests.losses.autodiff import value_and_grad

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from loss_speed import textbook_supcon  # noqa: E402  (benchmarks/loss_speed.py)

pytestmark = pytest.mark.backends("tensorflow", "jax", "torch")


@pytest.mark.large
def test_textbook_supcon_equals_sup_con_loss_in_value_and_gradient():
    rng = np.random.default_rng(3)
    z = rng.normal(size=(12, 2, 5))
    y = rng.integers(0, 3, size=12).astype("int32")
    want = float(np.mean(reference.supcon(y, z, 0.1)))
    value, grad = value_and_grad(lambda x: textbook_supcon(y, x), z.astype("float32"))
    _, loss_grad = value_and_grad(lambda x: clzoo.losses.SupConLoss()(y, x), z.astype("float32"))
    np.testing.assert_allclose(value, want, rtol=1e-5)
    np.testing.assert_allclose(grad, loss_grad, rtol=1e-4, atol=1e-6)
