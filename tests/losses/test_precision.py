"""On JAX every product of a loss (logits, their gradients, label similarities) asks for full
float32 precision, forward and backward, unchunked and chunked (`clzoo.losses.precision`).

On a CPU the precision changes nothing, so the test reads the traced program: on a GPU JAX's
default would run these products in TensorFloat-32 (on an H100, 133 of `tests/losses`' 608
checks against float64 references failed that way).
"""

import numpy as np
import pytest

import clzoo

pytestmark = pytest.mark.backends("jax")

RNG = np.random.default_rng(0)
Z = RNG.normal(size=(8, 2, 16)).astype("float32")
Y = np.arange(8) % 3
MULTI_HOT = (RNG.random((8, 4)) < 0.5).astype("float32")
LOSSES = {
    "SupConLoss": (clzoo.losses.SupConLoss, {}, Y),
    "SINCERELoss chunked": (clzoo.losses.SINCERELoss, {"chunk_size": 4}, Y),
    "InfoNCELoss": (clzoo.losses.InfoNCELoss, {}, Y),
    "DCLLoss chunked": (clzoo.losses.DCLLoss, {"chunk_size": 4}, Y),
    "SupConLoss cosine labels": (clzoo.losses.SupConLoss, {"label_similarity": "cosine"},
                                 MULTI_HOT),
}


def _products(fn, x):
    """The precision setting of every `dot_general` in the traced forward + backward pass."""
    import jax

    text = str(jax.make_jaxpr(jax.value_and_grad(fn))(x))
    return [part.split("preferred_element_type")[0] for part in text.split("dot_general")[1:]]


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_every_product_of_the_loss_is_at_full_precision(name):
    cls, kwargs, labels = LOSSES[name]
    loss = cls(**kwargs)
    products = _products(lambda z: loss(labels, z), Z)
    assert len(products) >= 3  # forward and backward were both read
    assert all("Precision.HIGHEST, Precision.HIGHEST" in p for p in products), products


def test_soft_target_pair_scores_are_at_full_precision():
    targets = np.eye(3, dtype="float32")[Y]
    loss = clzoo.losses.SoftTargetInfoNCELoss()
    scores = RNG.normal(size=(8, 3)).astype("float32")
    products = _products(lambda s: loss(targets, s), scores)
    assert products and all("Precision.HIGHEST, Precision.HIGHEST" in p for p in products), products
