"""Losses against batch + memory (`clzoo.losses.with_memory`, the MoCo queue) vs a NumPy reference."""

import numpy as np
import pytest
from keras import ops

import clzoo
from tests.losses.autodiff import value_and_grad


def _unit(x):
    x = np.asarray(x, np.float64)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _reference(loss, labels, z, memory, memory_labels, valid, t, epsilon=0.25):
    """Loop over anchors; columns are every batch embedding plus the valid memory entries.

    Column = (label, sample id, is_memory, unit vector). Written from the module docstring of
    `clzoo.losses.memory_bank` and each paper's pair term, without clzoo code.
    """
    batch, views, _ = z.shape
    z, memory = _unit(z), _unit(memory)
    supervised = loss in ("sincere", "supcon", "supinfonce", "nscl")
    cols = [(labels[b] if supervised else b, b, z[b, v]) for b in range(batch) for v in range(views)]
    cols += [(memory_labels[k] if supervised else -1 - k, -1 - k, memory[k])
             for k in range(len(memory)) if valid[k]]
    out = np.zeros(batch)
    for b in range(batch):
        per_view = []
        for v in range(views):
            i = b * views + v
            yi, zi = cols[i][0], z[b, v]
            e = [np.exp(zi @ c[2] / t) for c in cols]
            others = [j for j in range(len(cols)) if j != i]
            if loss in ("sincere", "supcon", "supinfonce"):
                positives = [j for j in others if cols[j][0] == yi]
            else:  # own other views only
                positives = [j for j in others if cols[j][1] == b]
            noise = sum(e[j] for j in others if cols[j][0] != yi)
            terms = []
            for p in positives:
                if loss in ("sincere", "infonce"):
                    terms.append(-np.log(e[p] / (e[p] + noise)))
                elif loss == "supinfonce":
                    terms.append(-np.log(e[p] / (e[p] * np.exp(-epsilon) + noise)))
                elif loss == "supcon":
                    terms.append(-np.log(e[p] / sum(e[j] for j in others)))
                elif noise > 0:  # dcl, nscl: decoupled, needs noise
                    terms.append(-np.log(e[p] / noise))
            if terms:
                per_view.append(np.mean(terms))
        out[b] = np.mean(per_view) if per_view else 0.0
    return out


LOSSES = {
    "sincere": clzoo.losses.SINCERELoss(temperature=0.2),
    "supcon": clzoo.losses.SupConLoss(temperature=0.2),
    "supinfonce": clzoo.losses.SupInfoNCELoss(temperature=0.2, epsilon=0.25),
    "nscl": clzoo.losses.NSCLLoss(temperature=0.2),
    "dcl": clzoo.losses.DCLLoss(temperature=0.2),
    "infonce": clzoo.losses.InfoNCELoss(temperature=0.2),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
@pytest.mark.parametrize("chunk_size", [None, 4])
@pytest.mark.parametrize("given", ["argument", "with_memory"])
def test_loss_over_batch_and_memory_matches_reference(name, chunk_size, given):
    rng = np.random.default_rng(7)
    labels = np.array([0, 0, 1, 2, 2, 3])  # class 3 appears once: its positives come from memory
    z = rng.normal(size=(6, 2, 5)).astype("float32")
    memory = rng.normal(size=(7, 5)).astype("float32")
    memory_labels = np.array([3, 1, 0, 4, 3, 2, 1], "int32")
    valid = np.array([1, 1, 1, 1, 1, 0, 0], bool)  # two empty slots: neither positive nor noise
    loss = LOSSES[name].__class__.from_config({**LOSSES[name].get_config(), "chunk_size": chunk_size})
    if given == "argument":  # the explicit form (issue 60 item 2), as ContrastiveModel passes its queue
        got = ops.convert_to_numpy(loss.call(labels, z, memory=(memory, memory_labels, valid)))
    else:
        with clzoo.losses.with_memory(memory, memory_labels, valid):
            got = ops.convert_to_numpy(loss.call(labels, z))
    want = _reference(name, labels, z, memory, memory_labels, valid, 0.2)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    # And the memory changes the value (it is really used), and leaves when the context ends.
    plain = ops.convert_to_numpy(loss.call(labels, z))
    assert not np.allclose(plain, got)
    np.testing.assert_allclose(plain, _reference(name, labels, z, memory, memory_labels,
                                                 np.zeros(7, bool), 0.2), rtol=1e-4, atol=1e-5)


def test_no_gradient_through_memory_and_only_batch_anchors():
    rng = np.random.default_rng(1)
    labels = np.array([0, 1, 1, 0])
    z = rng.normal(size=(4, 2, 5)).astype("float32")
    memory_labels = np.array([0, 1, 0, 1])

    def memory_from_batch(v):  # the memory is a function of z: a gradient would flow if allowed
        with clzoo.losses.with_memory(ops.reshape(v[:, 0, :], (4, 5)) * 2.0, memory_labels):
            return ops.sum(clzoo.losses.sincere_loss(labels, v))

    def constant_memory(v):
        with clzoo.losses.with_memory(z[:, 0, :] * 2.0, memory_labels):
            return ops.sum(clzoo.losses.sincere_loss(labels, v))

    value, grad = value_and_grad(memory_from_batch, z)
    value_const, grad_const = value_and_grad(constant_memory, z)
    np.testing.assert_allclose(value, value_const, rtol=1e-6)
    np.testing.assert_allclose(grad, grad_const, rtol=1e-5, atol=1e-7)
    with clzoo.losses.with_memory(z[:, 0, :], memory_labels):
        assert tuple(clzoo.losses.sincere_loss(labels, z).shape) == (4,)  # anchors: the batch


def test_memory_arguments_are_checked():
    z = np.ones((4, 2, 5), "float32")
    with pytest.raises(ValueError, match="labels"):
        with clzoo.losses.with_memory(np.ones((3, 5)), np.zeros(4)):
            pass
    with pytest.raises(ValueError, match="valid"):
        with clzoo.losses.with_memory(np.ones((3, 5)), None, np.ones(2, bool)):
            pass
    with pytest.raises(ValueError, match="embeddings"):
        with clzoo.losses.with_memory(np.ones(5), None):
            pass
    with pytest.raises(ValueError, match="embedding dim"):
        with clzoo.losses.with_memory(np.ones((3, 4)), None):
            clzoo.losses.sincere_loss(np.arange(4), z)


def test_an_explicit_memory_is_checked_and_wins_over_the_context():
    rng = np.random.default_rng(3)
    labels, z = np.array([0, 0, 1, 1]), rng.normal(size=(4, 2, 5)).astype("float32")
    memory = (rng.normal(size=(3, 5)).astype("float32"), np.array([0, 1, 2]))
    with pytest.raises(ValueError, match=r"`memory` must be a tuple \(embeddings, labels, valid\)"):
        clzoo.losses.SINCERELoss()(labels, z, memory=np.ones((3, 5)))
    with pytest.raises(ValueError, match="`labels` of the memory must have shape"):
        clzoo.losses.sincere_loss(labels, z, memory=(np.ones((3, 5)), np.zeros(4)))
    explicit = ops.convert_to_numpy(clzoo.losses.sincere_loss(labels, z, memory=memory))
    with clzoo.losses.with_memory(np.ones((2, 5), "float32"), np.array([0, 1])):
        inside = ops.convert_to_numpy(clzoo.losses.sincere_loss(labels, z, memory=memory))
    np.testing.assert_allclose(inside, explicit, rtol=1e-6)
    reduced = float(clzoo.losses.SINCERELoss()(labels, z, sample_weight=np.ones(4), memory=memory))
    assert reduced == pytest.approx(float(np.mean(explicit)), rel=1e-6)
