"""Chunked losses (hand-written block gradients) against the float64 reference, values and gradients.

Every loss that takes `chunk_size`, with `sample_weight`, for chunk sizes
that divide the `N = 10` embeddings, do not, and exceed them, eagerly and
compiled; the gradient reference is a central finite difference of the
independent NumPy loss. `test_other_backends.py` re-runs this module under
the two other backends.
"""

import functools

import numpy as np
import pytest

import clzoo
from tests.losses import reference
from tests.losses.autodiff import value_and_grad

LABELS = np.array([0, 0, 1, 2, 2])
WEIGHTS = np.array([1.0, 0.5, 2.0, 0.0, 1.5], dtype="float32")

# name -> (loss class and its keyword arguments, reference(labels, z, temperature) per sample)
CASES = {
    "SINCERELoss": ((clzoo.losses.SINCERELoss, {}), reference.sincere),
    "SupConLoss": ((clzoo.losses.SupConLoss, {}), reference.supcon),
    "SupConLoss_in": ((clzoo.losses.SupConLoss, {"variant": "in"}),
                      lambda y, z, t: reference.supcon(y, z, t, variant="in")),
    "SupInfoNCELoss": ((clzoo.losses.SupInfoNCELoss, {"epsilon": 0.3}),
                       lambda y, z, t: reference.sup_info_nce(y, z, t, 0.3)),
    "InfoNCELoss": ((clzoo.losses.InfoNCELoss, {}), lambda y, z, t: reference.info_nce(z, t)),
    "DCLLoss": ((clzoo.losses.DCLLoss, {}), lambda y, z, t: reference.dcl(z, t)),
    "NSCLLoss": ((clzoo.losses.NSCLLoss, {}), reference.nscl),
    "SpreadLoss": ((clzoo.losses.SpreadLoss, {"alpha": 0.3}),
                   lambda y, z, t: reference.spread(y, z, t, 0.3)),
}


@functools.cache
def _embeddings():
    return np.random.default_rng(7).normal(size=(len(LABELS), 2, 4))


def _weighted_reference(name, z, temperature):
    return float(np.sum(CASES[name][1](LABELS, z, temperature) * WEIGHTS) / len(LABELS))


def _numeric_gradient(name, z, temperature, eps=1e-6):
    grad = np.zeros_like(z)
    for idx in np.ndindex(z.shape):
        up, down = z.copy(), z.copy()
        up[idx] += eps
        down[idx] -= eps
        grad[idx] = (_weighted_reference(name, up, temperature)
                     - _weighted_reference(name, down, temperature)) / (2 * eps)
    return grad


# 0.5: the shared-exponential path; 0.02 (2 / t > 80): the row-maximum path.
@pytest.mark.parametrize("temperature", [0.5, 0.02])
@pytest.mark.parametrize("name", sorted(CASES))
def test_chunked_value_and_gradient_match_reference(name, temperature):
    (cls, kwargs), _ = CASES[name]
    z = _embeddings()
    want = _weighted_reference(name, z, temperature)
    want_grad = _numeric_gradient(name, z, temperature)
    scale = max(1.0, float(np.abs(want_grad).max()))
    # None: one block; 3 and 4 do not divide N = 10; 5 does; 16 is one short block.
    for chunk_size, compiled in [(None, False), (3, False), (4, True), (5, False), (16, True)]:
        loss = cls(temperature=temperature, chunk_size=chunk_size, **kwargs)
        value, grad = value_and_grad(lambda x, loss=loss: loss(LABELS, x, sample_weight=WEIGHTS), z,
                                     compiled=compiled)
        np.testing.assert_allclose(value, want, rtol=2e-5 / temperature * 0.1 + 1e-5,
                                   err_msg=f"chunk_size={chunk_size}")
        np.testing.assert_allclose(grad, want_grad, rtol=2e-3, atol=2e-4 * scale,
                                   err_msg=f"chunk_size={chunk_size}")
