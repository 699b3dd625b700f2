"""MemoryQueue, MomentumEncoder and ContrastiveModel(queue_size, momentum) inside fit."""

import json
import os
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest
from keras import ops

import clzoo
from tests.parts.queue_model import SHAPE, batches, queue_state, tiny_model

pytestmark = pytest.mark.backends("tensorflow", "jax", "torch")  # every lane (tests/conftest.py)

HERE = Path(__file__).parent


def _np(x):
    return ops.convert_to_numpy(x)


def test_queue_fills_in_order_then_wraps_around():
    queue = clzoo.models.MemoryQueue(size=5, dim=2)
    keys = np.arange(24, dtype="float32").reshape(12, 2)  # entry j is (2j, 2j + 1), label 100 + j
    labels = 100 + np.arange(12)
    queue.enqueue(keys[:3], labels[:3])
    embeddings, got_labels, valid = map(_np, queue.contents())
    assert got_labels.tolist() == [100, 101, 102, 0, 0] and valid.tolist() == [1, 1, 1, 0, 0]
    queue.enqueue(keys[3:7], labels[3:7])  # entries 3..6: slots 3, 4, 0, 1 (oldest out first)
    embeddings, got_labels, valid = map(_np, queue.contents())
    assert got_labels.tolist() == [105, 106, 102, 103, 104] and valid.all()
    np.testing.assert_array_equal(embeddings[0], keys[5])
    assert int(_np(queue.pointer.value)) == 2 and int(_np(queue.count.value)) == 5
    queue.enqueue(keys[7:], labels[7:])  # 5 more entries, then more than K at once
    assert _np(queue.labels.value).tolist() == [110, 111, 107, 108, 109]
    # 12 > K at once: entries 12..23 written in turn, the last 5 (labels 107..111, entries
    # 19..23) survive at the slots they reach, j mod 5.
    queue.enqueue(keys, labels)
    assert _np(queue.labels.value).tolist() == [108, 109, 110, 111, 107]
    assert int(_np(queue.pointer.value)) == (12 + 12) % 5


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="tf.function with an unknown batch")
def test_enqueue_with_an_unknown_batch_size_wraps_the_same_way():
    import tensorflow as tf

    queue = clzoo.models.MemoryQueue(size=5, dim=2)
    enqueue = tf.function(queue.enqueue, input_signature=[tf.TensorSpec((None, 2)),
                                                          tf.TensorSpec((None,), tf.int64)])
    keys = np.arange(24, dtype="float32").reshape(12, 2)
    labels = 100 + np.arange(12)
    for part in (slice(0, 3), slice(3, 7), slice(7, 12)):
        enqueue(keys[part], labels[part])
    assert _np(queue.labels.value).tolist() == [110, 111, 107, 108, 109]
    enqueue(keys, labels)  # more than K at once
    assert _np(queue.labels.value).tolist() == [108, 109, 110, 111, 107]
    np.testing.assert_array_equal(_np(queue.embeddings.value)[3], keys[11])  # label 111
    assert (int(_np(queue.pointer.value)), int(_np(queue.count.value))) == (4, 5)


def _run_steps(model, x, y, batch=4):
    losses = [float(model.train_on_batch(x[i:i + batch], y[i:i + batch]))
              for i in range(0, len(x), batch)]
    return losses


@pytest.mark.large
@pytest.mark.parametrize("momentum", [None, 0.9])
def test_fit_contrasts_batch_with_the_queue_of_earlier_steps(momentum):
    x, y = batches(16)
    model = tiny_model(queue_size=10, momentum=momentum, learning_rate=0.0)  # weights stay fixed
    z = _np(model(x))  # keys = outputs: no batch norm, shadows equal the weights
    losses = _run_steps(model, x, y)
    loss = clzoo.losses.SINCERELoss(temperature=0.2)
    keys = z.reshape(-1, 3)
    key_labels = np.repeat(y, 2)
    for t, got in enumerate(losses):  # step t sees the last (up to) 10 entries of steps < t
        seen = keys[:8 * t][-10:]
        with clzoo.losses.with_memory(seen if t else None, key_labels[:8 * t][-10:]):
            want = float(loss(y[4 * t:4 * t + 4], z[4 * t:4 * t + 4]))
        np.testing.assert_allclose(got, want, rtol=1e-5)
    state = queue_state(model)
    slots = [(32 - 10 + k) for k in range(10)]  # entries 22..31 in slots j mod 10
    order = np.argsort([s % 10 for s in slots])
    np.testing.assert_allclose(state["embeddings"], keys[22:][order], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(state["labels"], key_labels[22:][order])
    assert int(state["count"]) == 10 and int(state["pointer"]) == 2


def test_momentum_encoder_is_an_exponential_moving_average():
    x, y = batches(8)
    model = tiny_model(queue_size=10, momentum=0.5, learning_rate=0.5)
    shadow = [_np(v.value) for v in model.trainable_variables]
    for i in (0, 4):
        before = [_np(v.value) for v in model.trainable_variables]
        shadow = [0.5 * s + 0.5 * b for s, b in zip(shadow, before)]  # update, then keys
        model.train_on_batch(x[i:i + 4], y[i:i + 4])
        got = [_np(v.value) for v in model.momentum_encoder.weights]
        for g, s in zip(got, shadow):
            np.testing.assert_allclose(g, s, rtol=1e-5, atol=1e-6)
        assert not np.allclose(_np(model.trainable_variables[0].value), before[0])  # it trained


def test_save_and_resume_restore_queue_and_shadows(tmp_path):
    x, y = batches(12)
    model = tiny_model(queue_size=10, momentum=0.9)
    model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    model.save(tmp_path / "checkpoint.keras")
    loaded = keras.saving.load_model(tmp_path / "checkpoint.keras")
    assert (loaded.queue_size, loaded.momentum) == (10, 0.9)
    for a, b in zip(model.weights, loaded.weights):
        np.testing.assert_array_equal(_np(a.value), _np(b.value))
    assert int(queue_state(loaded)["count"]) == 10
    # Resumed and uninterrupted runs take the same next step (same queue, optimizer, shadows).
    np.testing.assert_allclose(_run_steps(loaded, x[:4], y[:4]), _run_steps(model, x[:4], y[:4]),
                               rtol=1e-6)
    for key, value in queue_state(model).items():
        np.testing.assert_allclose(queue_state(loaded)[key], value, rtol=1e-6)


def test_queue_arguments_are_checked():
    encoder = keras.Sequential([keras.layers.Flatten(), keras.layers.Dense(6)])
    head = clzoo.models.ProjectionHead(hidden_dims=(5,), output_dim=3)
    with pytest.raises(ValueError, match="queue_size"):
        clzoo.models.ContrastiveModel(encoder, head, queue_size=0)
    with pytest.raises(ValueError, match="needs a queue"):
        clzoo.models.ContrastiveModel(encoder, head, momentum=0.99)
    with pytest.raises(ValueError, match="momentum"):
        clzoo.models.ContrastiveModel(encoder, head, queue_size=4, momentum=1.0)
    with pytest.raises(ValueError, match="size"):
        clzoo.models.MemoryQueue(size=-1, dim=3)
    model = tiny_model(loss=keras.losses.MeanSquaredError())
    x, y = batches(4)
    with pytest.raises(ValueError, match="embedding loss"):
        model.train_on_batch(x, np.zeros((4, 2, 3), "float32"))


def test_self_supervised_loss_uses_queue_as_negatives():
    x, y = batches(8)
    model = tiny_model(queue_size=6, momentum=None, learning_rate=0.0,
                       loss=clzoo.losses.InfoNCELoss(temperature=0.2))
    z = _np(model(x))
    losses = _run_steps(model, x, y)
    with clzoo.losses.with_memory(z[:4].reshape(-1, 3)[-6:], None):
        want = float(clzoo.losses.InfoNCELoss(temperature=0.2)(None, z[4:]))
    np.testing.assert_allclose(losses[1], want, rtol=1e-5)


def _distributed(mode):
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", PYTHONPATH=str(HERE.parents[1]))
    env.pop("XLA_FLAGS", None)
    out = subprocess.run([sys.executable, str(HERE / "queue_distributed_check.py"), mode],
                         cwd=HERE.parents[1], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


@pytest.mark.large
@pytest.mark.backends("tensorflow")  # its processes pick their own backends: once is enough
@pytest.mark.parametrize("mode", ["mirrored", "data_parallel"])
def test_two_devices_match_one_device(mode):
    """TF MirroredStrategy (2 logical CPUs) and JAX DataParallel (2 host devices): same losses,
    queue and shadows as one device on the same global batch; every replica holds the same queue."""
    result = _distributed(mode)
    single, multi = result["single"], result["multi"]
    assert multi["replicas"] == 2
    if mode == "mirrored":
        assert multi["replicas_equal"]
    np.testing.assert_allclose(multi["loss"], single["loss"], rtol=1e-5)
    assert multi["queue"]["labels"] == single["queue"]["labels"]
    # float32 sums in another order over 2 devices: 2.3e-5 measured (AMD EPYC); unaveraged or
    # local-only gradients would differ by ~1e-2
    np.testing.assert_allclose(multi["queue"]["embeddings"], single["queue"]["embeddings"], atol=1e-4)
    for a, b in zip(multi["shadow"], single["shadow"]):
        np.testing.assert_allclose(a, b, atol=1e-4)


def test_queue_recipe_validates_and_builds_the_model():
    from clzoo.train import load_recipe
    from clzoo.train.recipe import RecipeError
    from clzoo.train.tasks import build_model

    path = HERE.parents[1] / "recipes" / "supcon" / "cifar10_queue_small.yaml"
    recipe = load_recipe(path)
    queue = recipe.model.queue
    assert (queue.size, queue.momentum, recipe.training.batch_size) == (4096, 0.99, 32)
    for override, message in (("model.momentum=1.0", r"momentum = 1.0: must be a number in \[0, 1\)"),
                              ("model.queue_size=0", "size = 0: must be None or a positive integer"),
                              # queue_size=null alone turns the whole queue off (momentum with it)
                              ("model.queue_size=null,model.momentum=0.9", "the model.queue part is off"),
                              ("loss.name=SoftTargetInfoNCELoss", "embedding loss")):
        with pytest.raises(RecipeError, match=message):
            load_recipe(path, override.split(","))
    assert load_recipe(path, ["model.queue_size=null"]).model.queue is None
    model = build_model(load_recipe(path, ["model.queue_size=64", "model.embedding_dim=8"]))
    assert model.memory_queue.size == 64 and model.memory_queue.dim == 8
    assert model.momentum_encoder.momentum == 0.99


def test_queue_keeps_64_bit_class_ids_apart():
    """Ids 0 and 2^32 are different classes; an int32 queue would merge them."""
    x, y = batches(8)
    wide = np.where(y == 0, 0, 2**32 + y.astype("int64"))
    if keras.backend.backend() == "jax" and not __import__("jax").config.jax_enable_x64:
        with pytest.raises(ValueError, match="outside int32"):
            tiny_model(learning_rate=0.0).fit(x, wide, batch_size=4, epochs=1, verbose=0)
        return
    dense, big = tiny_model(learning_rate=0.0), tiny_model(learning_rate=0.0)
    want = _run_steps(dense, x, y.astype("int64"))
    np.testing.assert_allclose(_run_steps(big, x, wide), want, rtol=1e-5)
    assert sorted(set(queue_state(big)["labels"].tolist())) == sorted(set(wide.tolist()))


def test_an_unbuilt_model_with_a_momentum_encoder_fits_and_shadows_are_copies():
    """`fit` builds the model inside a traced step: the shadows must copy values there, not alias them."""
    keras.utils.set_random_seed(0)
    encoder = keras.Sequential([keras.layers.Flatten(), keras.layers.Dense(6)])
    head = clzoo.models.ProjectionHead(hidden_dims=(5,), output_dim=3)
    model = clzoo.models.ContrastiveModel(encoder, head, queue_size=8, momentum=0.5)
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss=clzoo.losses.SupConLoss())
    x, y = batches(8)
    history = model.fit(x, y, batch_size=4, epochs=2, verbose=0).history["loss"]
    assert np.all(np.isfinite(history))
    shadow = _np(model.momentum_encoder.shadows[0][0].value)
    weight = _np(encoder.trainable_variables[0].value)
    assert not np.allclose(shadow, weight)  # an EMA lags the trained weights


@pytest.mark.parametrize("model_kwargs, recipe_overrides, words", [
    ({"momentum": 0.99}, ["model.momentum=0.99"], r"needs a queue|the model\.queue part is off"),
    ({"encoder_chunk_size": 4, "auxiliary_classes": 3},
     ["model.encoder_chunk_size=4", "model.auxiliary_cross_entropy_weight=0.5"],
     "does not run under GradCache"),
])
def test_a_rule_between_parts_is_one_check_for_the_model_and_the_recipe(model_kwargs, recipe_overrides,
                                                                         words):
    """Issue 60 item 2, issue 70 item 2: each rule lives in one part's `refuse` hook; the model
    names its arguments or parts, the recipe its keys."""
    import clzoo
    from clzoo.train.recipe import RecipeError, load_recipe

    encoder = clzoo.models.get_encoder("resnet10_narrow", input_shape=(8, 8, 3))
    with pytest.raises(ValueError, match=words) as raised:
        clzoo.models.ContrastiveModel(encoder, clzoo.models.ProjectionHead(hidden_dims=(5,), output_dim=3),
                                      **model_kwargs)
    assert "model." not in str(raised.value)
    with pytest.raises(RecipeError, match=words) as raised:
        load_recipe(None, recipe_overrides)
    from clzoo.train.recipe_upgrade import canonical_key

    key = recipe_overrides[0].split("=")[0]  # as given, or in today's spelling
    section = canonical_key(key).rsplit(".", 1)[0]  # the part's section: model.grad_cache
    assert key in str(raised.value) or section in str(raised.value)


def test_a_queue_step_passes_its_queue_to_the_loss_and_adds_the_layers_losses(monkeypatch):
    """Issue 60 item 2: the queue reaches the loss as its `memory` argument, not through the
    thread-local `with_memory` state (blinded here: a step that went through it would see no
    memory), and the step's loss is Keras' `compute_loss` with the queue: the compiled loss plus
    the layers' added (regularizer) losses."""
    from clzoo.losses import memory_bank as memory_module

    monkeypatch.setattr(memory_module, "active_memory", lambda: None)
    keras.utils.set_random_seed(0)
    encoder = keras.Sequential([keras.layers.Flatten(),
                                keras.layers.Dense(6, kernel_regularizer=keras.regularizers.L2(0.1))])
    head = clzoo.models.ProjectionHead(hidden_dims=(5,), output_dim=3)
    model = clzoo.models.ContrastiveModel(encoder, head, queue_size=10)
    model.build((None,) + SHAPE)
    loss = clzoo.losses.SINCERELoss(temperature=0.2)
    model.compile(optimizer=keras.optimizers.SGD(0.0), loss=loss)
    x, y = batches(8)
    model.train_on_batch(x[:4], y[:4])  # fills the queue with the first batch's keys
    contents = tuple(_np(t) for t in model.memory_queue.contents())
    got = float(model.train_on_batch(x[4:], y[4:]))
    penalty = 0.1 * float(np.sum(_np(encoder.layers[-1].kernel.value) ** 2))
    want = float(loss(y[4:], _np(model(x[4:])), memory=contents)) + penalty
    assert got == pytest.approx(want, rel=1e-5)
    assert penalty > 0.01 and contents[0].shape == (10, 3)


def test_loss_weights_with_a_queue_are_refused():
    model = tiny_model(queue_size=10, momentum=None)
    with pytest.raises(ValueError, match="scale the loss instead of passing loss_weights"):
        model.compile(optimizer="sgd", loss=clzoo.losses.SINCERELoss(), loss_weights=2.0)
