"""Chunked losses (hand-written block gradients) against the float64 reference, values and gradients.

Every loss that takes `chunk_size`, with `sample_weight`, for chunk sizes
that divide the `N = 10` embeddings, do not, and exceed them, eagerly and
compiled; with hard labels, with multi-hot / soft label rows
(`label_similarity`, float32 pair weights) and with memory-queue columns
(`with_memory`, empty slots included). The gradient reference is a central
finite difference of the independent NumPy loss, so a wrong hand-written
gradient fails whether or not the loss is chunked. Runs in every backend
lane (the folder rule in `tests/losses/conftest.py`).
"""

import functools
import itertools

import numpy as np
import pytest

import clzoo
from tests.losses import reference
from tests.losses.autodiff import numeric_gradient, value_and_grad
from tests.losses.test_memory_bank import _reference as memory_reference

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


def half_matrix(*factors):
    """Every combination of the factors' values, as params: the large tier (CI) keeps those whose
    value indices sum to an even number, the slow tier the rest. With three or more factors every
    pair of values of any two factors still meets in CI's half; with two, every value does."""
    params = []
    for indices in itertools.product(*(range(len(values)) for values in factors)):
        tier = pytest.mark.large if sum(indices) % 2 == 0 else pytest.mark.slow
        params.append(pytest.param(*(values[i] for values, i in zip(factors, indices)), marks=tier))
    return params


TEMPERATURES = (0.5, 0.02)  # 0.5: the shared-exponential path; 0.02 (2 / t > 80): the row-maximum path


@pytest.mark.parametrize("name, temperature", half_matrix(sorted(CASES), TEMPERATURES))
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


# Multi-hot rows (a sample with no label, one sharing none) and soft rows (MixUp-style): the
# float32 label weights `w_ij` of SupCon / SINCERE with `label_similarity`.
LABEL_ROWS = {
    "multi_hot": np.array([[1, 0, 1, 0], [1, 0, 1, 0], [1, 1, 0, 0], [0, 0, 0, 1], [0, 1, 0, 1]],
                          "float32"),
    "soft": np.array([[0.7, 0.3, 0.0], [0.3, 0.7, 0.0], [1.0, 0.0, 0.0], [0.0, 0.4, 0.6],
                      [0.05, 0.05, 0.9]], "float32"),
}

# name -> (loss class, its keyword arguments, reference(label_rows, z, temperature, kind))
WEIGHTED = {
    "SINCERELoss": (clzoo.losses.SINCERELoss, {}, reference.multi_label_sincere),
    "SupConLoss": (clzoo.losses.SupConLoss, {}, reference.multi_label_supcon),
    "SupConLoss_in": (clzoo.losses.SupConLoss, {"variant": "in"},
                      lambda y, z, t, kind: reference.multi_label_supcon(y, z, t, kind, variant="in")),
}


def _check_chunks(make_loss, call, want, want_grad, temperature, settings):
    """Every `(chunk_size, compiled)` of `settings` against the float64 value and gradient."""
    z = _embeddings()
    scale = max(1.0, float(np.abs(want_grad).max()))
    for chunk_size, compiled in settings:
        loss = make_loss(chunk_size)
        value, grad = value_and_grad(lambda x, loss=loss: call(loss, x), z, compiled=compiled)
        np.testing.assert_allclose(value, want, rtol=2e-5 / temperature * 0.1 + 1e-5,
                                   err_msg=f"chunk_size={chunk_size}")
        np.testing.assert_allclose(grad, want_grad, rtol=2e-3, atol=2e-4 * scale,
                                   err_msg=f"chunk_size={chunk_size}")


@pytest.mark.parametrize("name, kind, rows, temperature",
                         half_matrix(sorted(WEIGHTED), ("cosine", "jaccard"), sorted(LABEL_ROWS),
                                     TEMPERATURES))
def test_chunked_label_similarity_matches_reference(name, kind, rows, temperature):
    cls, kwargs, ref = WEIGHTED[name]
    y = LABEL_ROWS[rows]

    def weighted(z):
        return float(np.sum(ref(y, z, temperature, kind) * WEIGHTS) / len(y))

    z = _embeddings()
    _check_chunks(
        lambda chunk: cls(temperature=temperature, chunk_size=chunk, label_similarity=kind, **kwargs),
        lambda loss, x: loss(y, x, sample_weight=WEIGHTS), weighted(z), numeric_gradient(weighted, z),
        temperature, [(None, False), (3, False), (4, True), (16, True)])


MEMORY = np.random.default_rng(11).normal(size=(6, 4)).astype("float32")
MEMORY_LABELS = np.array([2, 1, 0, 3, 1, 2], "int32")
MEMORY_VALID = np.array([1, 1, 1, 1, 0, 0], bool)  # two empty slots: neither positive nor noise

# name -> (loss class and keyword arguments, name in `test_memory._reference`)
QUEUED = {
    "SINCERELoss": ((clzoo.losses.SINCERELoss, {}), "sincere"),
    "SupConLoss": ((clzoo.losses.SupConLoss, {}), "supcon"),
    "SupInfoNCELoss": ((clzoo.losses.SupInfoNCELoss, {"epsilon": 0.25}), "supinfonce"),
    "NSCLLoss": ((clzoo.losses.NSCLLoss, {}), "nscl"),
    "DCLLoss": ((clzoo.losses.DCLLoss, {}), "dcl"),
    "InfoNCELoss": ((clzoo.losses.InfoNCELoss, {}), "infonce"),
    # Class ids through the weighted form: the hard loss, empty slots left out.
    "SINCERELoss_cosine": ((clzoo.losses.SINCERELoss, {"label_similarity": "cosine"}), "sincere"),
    "SupConLoss_jaccard": ((clzoo.losses.SupConLoss, {"label_similarity": "jaccard"}), "supcon"),
}


@pytest.mark.parametrize("name, temperature", half_matrix(sorted(QUEUED), TEMPERATURES))
def test_chunked_memory_columns_match_reference(name, temperature):
    (cls, kwargs), ref_name = QUEUED[name]

    def weighted(z):
        per_sample = memory_reference(ref_name, LABELS, z, MEMORY, MEMORY_LABELS, MEMORY_VALID,
                                      temperature)
        return float(np.sum(per_sample * WEIGHTS) / len(LABELS))

    def call(loss, x):
        with clzoo.losses.with_memory(MEMORY, MEMORY_LABELS, MEMORY_VALID):
            return loss(LABELS, x, sample_weight=WEIGHTS)

    z = _embeddings()
    _check_chunks(lambda chunk: cls(temperature=temperature, chunk_size=chunk, **kwargs), call,
                  weighted(z), numeric_gradient(weighted, z), temperature,
                  [(None, False), (3, False), (4, True), (16, True)])


@pytest.mark.backends("jax")
def test_jax_loops_over_blocks_outside_jit_and_maps_inside():
    """Eager JAX (also under `jax.grad`) loops over cached ops; `jit` keeps the one `lax.map`."""
    import jax
    import jax.numpy as jnp

    from clzoo.losses.blockwise import _runs_eagerly

    seen = []

    def record(z):
        seen.append(_runs_eagerly(z))
        return jnp.sum(z)

    z = jnp.ones((4, 3))
    record(z)
    jax.grad(record)(z)
    jax.value_and_grad(record)(z)
    jax.jit(record)(z)
    jax.jit(jax.grad(record))(z)
    assert seen == [True, True, True, False, False]
