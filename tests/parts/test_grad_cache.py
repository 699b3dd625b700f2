"""GradCache (`ContrastiveModel(encoder_chunk_size=M)`) against unchunked references, inside fit.

Every comparison fits two models from the same initial weights on the same
batches (6 samples x 2 views = 12 images, M = 5: sub-batches of 5, 5 and 2
images, so the short last one is covered) with plain SGD, and compares all
variables afterwards: equal weights after two SGD steps mean equal gradients.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf
from keras import layers, ops

import clzoo

pytestmark = pytest.mark.backends("tensorflow", "jax", "torch")  # every lane (tests/conftest.py)

BATCH, VIEWS, SIZE, CHUNK = 6, 2, 8, 5


@pytest.fixture(autouse=True)
def _seeded():
    keras.utils.set_random_seed(0)  # the same initial weights in every run of a test


def _encoder(norm, dropout=False):
    """A tiny conv encoder; `norm` in {None, "batch", "frozen_batch", "group"}."""
    inputs = keras.Input((SIZE, SIZE, 3))
    h = layers.Conv2D(4, 3, padding="same")(inputs)
    if norm in ("batch", "frozen_batch"):
        bn = layers.BatchNormalization(momentum=0.5)
        bn.trainable = norm == "batch"  # a frozen BN layer runs in inference mode in Keras 3
        h = bn(h)
    elif norm == "group":
        h = layers.GroupNormalization(groups=2)(h)
    h = layers.ReLU()(h)
    if dropout:
        h = layers.Dropout(0.3, seed=3)(h)
    return keras.Model(inputs, layers.GlobalAveragePooling2D()(h))


class _SubBatchEncoder(keras.Model):
    """Reference for batch norm in training mode: `encoder` applied to sub-batches of `size` images,
    with gradients kept through all of them (what GradCache documents it computes)."""

    def __init__(self, encoder, size):
        super().__init__()
        self.inner, self.size = encoder, size

    def call(self, images, training=None):
        total = images.shape[0]
        return ops.concatenate([self.inner(images[a:min(a + self.size, total)], training=training)
                                for a in range(0, total, self.size)], axis=0)

    def compute_output_shape(self, input_shape):
        return self.inner.compute_output_shape(input_shape)


def _model(encoder, chunk=None, **kwargs):
    head = clzoo.models.ProjectionHead(hidden_dims=(8,), output_dim=4)
    model = clzoo.models.ContrastiveModel(encoder, head, encoder_chunk_size=chunk, **kwargs)
    model.build((None, VIEWS, SIZE, SIZE, 3))
    return model


def _data(steps=2):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(steps * BATCH, VIEWS, SIZE, SIZE, 3)).astype("float32")
    y = np.tile([0, 1, 2], steps * BATCH // 3)
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH, drop_remainder=True)


def _fit(model, temperature=0.5):
    model.compile(optimizer=keras.optimizers.SGD(0.5),
                  loss=clzoo.losses.SupConLoss(temperature=temperature))
    before = [ops.convert_to_numpy(v) for v in model.trainable_variables]
    history = model.fit(_data(), epochs=1, verbose=0)
    moved = max(np.abs(ops.convert_to_numpy(v) - b).max()
                for v, b in zip(model.trainable_variables, before))
    assert moved > 1e-4, "the step must change the weights for the comparison to mean anything"
    return history.history["loss"][0]


def _pair(make_encoder, reference_encoder=lambda e: e, **kwargs):
    """(GradCache model, reference model) with equal initial weights."""
    chunked, reference = _model(make_encoder(), CHUNK, **kwargs), None
    reference = _model(reference_encoder(make_encoder()), **kwargs)
    reference.set_weights(chunked.get_weights())
    return chunked, reference


def _assert_same_variables(a, b, atol=2e-5):
    assert len(a.variables) == len(b.variables)
    for va, vb in zip(a.variables, b.variables):
        np.testing.assert_allclose(ops.convert_to_numpy(va), ops.convert_to_numpy(vb), rtol=1e-4,
                                   atol=atol, err_msg=va.path)


@pytest.mark.large
@pytest.mark.parametrize("norm", [None, "frozen_batch", "group"])
def test_weights_after_fit_equal_the_full_batch_step(norm):
    chunked, reference = _pair(lambda: _encoder(norm))
    loss_chunked, loss_reference = _fit(chunked), _fit(reference)
    np.testing.assert_allclose(loss_chunked, loss_reference, rtol=1e-5)
    _assert_same_variables(chunked, reference)


def test_learnable_temperature_gets_its_gradient_from_the_loss_pass():
    chunked = _model(_encoder(None), CHUNK, learnable_temperature=clzoo.losses.LearnableTemperature())
    reference = _model(_encoder(None), learnable_temperature=clzoo.losses.LearnableTemperature())
    reference.set_weights(chunked.get_weights())
    start = ops.convert_to_numpy(chunked.learnable_temperature.variables[0])
    for model in (chunked, reference):
        model.compile(optimizer=keras.optimizers.SGD(0.5),
                      loss=clzoo.losses.SupConLoss(temperature="learnable"))
        model.fit(_data(), epochs=1, verbose=0)
    assert not np.allclose(ops.convert_to_numpy(chunked.learnable_temperature.variables[0]), start)
    _assert_same_variables(chunked, reference)


@pytest.mark.large
def test_batch_norm_in_training_mode_uses_per_sub_batch_statistics():
    # Documented behaviour: each sub-batch of M images is normalized with its own statistics and
    # the moving statistics are updated once per sub-batch, in order; dropout draws the same masks
    # in both passes. The reference applies the encoder sub-batch by sub-batch with full autodiff.
    make = lambda: _encoder("batch", dropout=True)  # noqa: E731
    chunked, reference = _pair(make, lambda e: _SubBatchEncoder(e, CHUNK))
    full = _model(make())
    full.set_weights(chunked.get_weights())
    _fit(chunked), _fit(reference), _fit(full)
    _assert_same_variables(chunked, reference)
    differs = [not np.allclose(ops.convert_to_numpy(a), ops.convert_to_numpy(b), atol=1e-4)
               for a, b in zip(chunked.variables, full.variables)]
    assert any(differs), "per-sub-batch statistics must differ from full-batch ones here"


@pytest.mark.large
@pytest.mark.parametrize("momentum", [None, 0.9])
def test_memory_queue_and_key_encoder_match_the_unchunked_step(momentum):
    chunked, reference = _pair(lambda: _encoder("group"), queue_size=32, momentum=momentum)
    _fit(chunked), _fit(reference)
    assert int(ops.convert_to_numpy(chunked.memory_queue.count.value)) == 2 * BATCH * VIEWS
    _assert_same_variables(chunked, reference)  # weights, queue entries, shadow weights


def test_chunk_as_large_as_the_batch_is_one_sub_batch():
    chunked = _model(_encoder("batch"), BATCH * VIEWS)
    reference = _model(_encoder("batch"))
    reference.set_weights(chunked.get_weights())
    _fit(chunked), _fit(reference)
    _assert_same_variables(chunked, reference)


@pytest.mark.backends("jax")
def test_jax_step_holds_one_sub_batch_of_activations():
    # XLA's CPU compiler drops optimization barriers before scheduling: sub-batches chained only by
    # barriers were all run forward first, and the compiled step needed as much scratch memory as
    # the unchunked one (3.1 GiB for both at 2,048 ResNet-20 images). Read from the compiled step.
    import jax

    def scratch_mib(chunk):
        inputs = keras.Input((32, 32, 3))
        h = layers.Conv2D(32, 3, padding="same", activation="relu")(inputs)
        h = layers.Conv2D(32, 3, padding="same", activation="relu")(h)
        model = clzoo.models.ContrastiveModel(keras.Model(inputs, layers.GlobalAveragePooling2D()(h)),
                                              clzoo.models.ProjectionHead(output_dim=4),
                                              encoder_chunk_size=chunk)
        model.build((None, VIEWS, 32, 32, 3))
        model.compile(optimizer=keras.optimizers.SGD(0.1), loss=clzoo.losses.SupConLoss())
        model.optimizer.build(model.trainable_variables)
        state = tuple([v.value for v in group] for group in (
            model.trainable_variables, model.non_trainable_variables, model.optimizer.variables,
            model.metrics_variables))
        data = (np.zeros((64, VIEWS, 32, 32, 3), "float32"), np.zeros((64,), "int32"))
        compiled = jax.jit(model.train_step).lower(state, data).compile()
        return compiled.memory_analysis().temp_size_in_bytes / 2**20

    full, chunked = scratch_mib(None), scratch_mib(16)  # 128 images: 8 sub-batches of 16
    assert full > 8, f"the activations must dominate for the comparison to mean anything: {full}"
    assert chunked < full / 3, f"GradCache step scratch {chunked:.1f} MiB vs unchunked {full:.1f}"


@pytest.mark.backends("jax")
def test_a_non_finite_sub_batch_gradient_leaves_the_next_sub_batch_images_exact():
    # The JAX step orders sub-batches by a data dependence on the previous one's arrays; it must
    # add an exact 0 even when those hold NaN or inf (x * 0 would be NaN).
    import jax

    from clzoo.parts.grad_cache import _jax_after

    images = np.random.default_rng(0).uniform(size=(4, 8, 8, 3)).astype("float32")
    for bad in (np.nan, np.inf, -np.inf, 1.0):
        gradient = np.full((4, 16), bad, "float32")
        out = jax.jit(_jax_after)([gradient, None], images)
        np.testing.assert_array_equal(np.asarray(out), images)


@pytest.mark.parametrize("bad", [0, -4, 2.5, "4"])
def test_bad_chunk_size_is_refused(bad):
    with pytest.raises(ValueError, match="encoder_chunk_size"):
        _model(_encoder(None), bad)


@pytest.mark.backends("tensorflow")
def test_unknown_tensorflow_batch_size_is_refused_with_the_fix():
    model = _model(_encoder(None), CHUNK)
    model.compile(optimizer="sgd", loss=clzoo.losses.SupConLoss())
    # Keras batches arrays without drop_remainder when the last batch is short: shape (None, ...).
    x = np.zeros((BATCH + 2, VIEWS, SIZE, SIZE, 3), "float32")
    with pytest.raises(ValueError, match="drop_remainder=True"):
        model.fit(x, np.arange(BATCH + 2) % 2, batch_size=BATCH, verbose=0)


def test_config_round_trip_keeps_the_chunk_size():
    model = _model(_encoder(None), CHUNK)
    config = model.get_config()
    assert config["parts"] == [{"class_name": "grad_cache", "config": {"chunk_size": CHUNK}}]
    clone = clzoo.models.ContrastiveModel.from_config(config)
    assert clone.encoder_chunk_size == CHUNK
    assert clzoo.models.ContrastiveModel.from_config(_model(_encoder(None)).get_config()
                                                     ).encoder_chunk_size is None


@pytest.mark.backends("tensorflow")
@pytest.mark.parametrize("bad, message", [(0, "positive integer"), (-8, "positive integer"),
                                          (2.5, "positive integer"), ("8", "positive integer")])
def test_recipe_key_refuses_what_is_not_a_positive_int(bad, message):
    from clzoo.train.recipe import RecipeError, validate_recipe

    with pytest.raises(RecipeError, match=f"model.grad_cache.chunk_size = .*{message}"):
        validate_recipe({"model": {"encoder_chunk_size": bad}})
    with pytest.raises(RecipeError, match="model.grad_cache: .*needs task contrastive"):
        validate_recipe({"task": "soft_target", "loss": {"name": "SoftTargetCrossEntropy"},
                         "model": {"encoder_chunk_size": 8}})


@pytest.mark.backends("tensorflow")
def test_recipe_key_reaches_the_model_the_task_builds():
    from pathlib import Path
    from types import SimpleNamespace

    from clzoo.train.recipe import load_recipe
    from clzoo.train.tasks import TASKS

    path = Path(__file__).parents[2] / "recipes" / "supcon" / "cifar10_gradcache.yaml"
    recipe = load_recipe(str(path), ["model.encoder_chunk_size=64"])
    views = SimpleNamespace(size=SIZE, views=VIEWS)
    model = TASKS.get("contrastive")().build_model(recipe, views, num_classes=10)
    assert model.encoder_chunk_size == 64


@pytest.mark.large
@pytest.mark.backends("tensorflow")  # its processes pick their own backends: once is enough
@pytest.mark.parametrize("mode", ["mirrored", "data_parallel"])
def test_two_devices_with_grad_cache_match_one_unchunked_device(mode):
    """TF MirroredStrategy (2 logical CPUs, 2 local samples = 4 images per replica, sub-batches of
    3 and 1) and JAX DataParallel (2 host devices): same losses, weights and queue as the
    unchunked step on one device on the same global batch."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    here = Path(__file__).parent
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", PYTHONPATH=str(here.parents[1]))
    env.pop("XLA_FLAGS", None)
    out = subprocess.run([sys.executable, str(here / "grad_cache_distributed_check.py"), mode],
                         cwd=here.parents[1], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    result = json.loads(next(line for line in out.stdout.splitlines()
                             if line.startswith("RESULT "))[len("RESULT "):])
    assert result["replicas"] == 2
    np.testing.assert_allclose(result["multi"]["loss"], result["single"]["loss"], rtol=1e-5)
    for a, b in zip(result["multi"]["variables"], result["single"]["variables"]):
        np.testing.assert_allclose(a, b, atol=1e-4)  # summation order: 2.6e-5 measured on 2 devices


def test_a_grad_cache_model_saved_after_fit_reloads_with_its_optimizer_state(tmp_path):
    """Issue 72 item 16: GradCache's step never built the model, so a model saved after `fit`
    reloaded on TensorFlow without its optimizer state (iterations 3 -> 0, momentum slots gone)."""
    encoder = clzoo.models.get_encoder("resnet8", input_shape=(SIZE, SIZE, 3), name="encoder")
    model = clzoo.models.ContrastiveModel(encoder, clzoo.models.ProjectionHead(hidden_dims=(), output_dim=8),
                                          encoder_chunk_size=CHUNK)
    model.compile(optimizer=keras.optimizers.SGD(0.1, momentum=0.9), loss=clzoo.losses.SupConLoss())
    x = np.random.default_rng(0).random((BATCH, VIEWS, SIZE, SIZE, 3)).astype("float32")
    y = np.arange(BATCH) % 3
    model.fit(x, y, epochs=3, batch_size=BATCH, verbose=0)
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras")
    assert int(ops.convert_to_numpy(loaded.optimizer.iterations)) == 3
    slots = [ops.convert_to_numpy(v) for v in model.optimizer.variables]
    assert len(loaded.optimizer.variables) == len(slots) > 2  # iterations, learning rate and momenta
    for saved, held in zip(loaded.optimizer.variables, slots):
        np.testing.assert_array_equal(ops.convert_to_numpy(saved), held)


def test_grad_cache_set_after_a_first_fit_is_used_by_the_next(monkeypatch):
    """Issue 72 item 18: `model.encoder_chunk_size = 2` after a first `fit` was ignored on TensorFlow
    and JAX (Keras kept the traced step of the first fit)."""
    from clzoo.parts import grad_cache

    calls = []
    real = grad_cache.train_step
    monkeypatch.setattr(grad_cache, "train_step", lambda *a: (calls.append(1), real(*a))[1])
    encoder = clzoo.models.get_encoder("resnet8", input_shape=(SIZE, SIZE, 3), name="encoder")
    model = clzoo.models.ContrastiveModel(encoder, clzoo.models.ProjectionHead(hidden_dims=(), output_dim=8))
    model.compile(optimizer="sgd", loss=clzoo.losses.SupConLoss())
    x = np.random.default_rng(0).random((BATCH, VIEWS, SIZE, SIZE, 3)).astype("float32")
    y = np.arange(BATCH) % 3
    model.fit(x, y, epochs=1, batch_size=BATCH, verbose=0)
    assert not calls
    model.encoder_chunk_size = 2
    model.fit(x, y, epochs=1, batch_size=BATCH, verbose=0)
    assert calls  # traced (TensorFlow, JAX) or run (torch) by the second fit
