"""clzoo's BatchNormalization (TensorFlow's fused kernel when training) against Keras' own layer."""

import keras
import numpy as np
import pytest

from clzoo.models import BatchNormalization

pytestmark = pytest.mark.backends("tensorflow", "jax", "torch")  # every lane (tests/conftest.py)


def _pair(shape, seed=0):
    rng = np.random.default_rng(seed)
    ours, theirs = BatchNormalization(momentum=0.8), keras.layers.BatchNormalization(momentum=0.8)
    for layer in (ours, theirs):
        layer.build(shape)
    gamma, beta = rng.normal(size=shape[-1]), rng.normal(size=shape[-1])
    for layer in (ours, theirs):
        layer.gamma.assign(gamma.astype("float32"))
        layer.beta.assign(beta.astype("float32"))
    return ours, theirs


@pytest.mark.parametrize("shape", [(16, 6, 6, 5), (32, 7)])
def test_training_outputs_and_moving_statistics_match_keras(shape):
    ours, theirs = _pair(shape)
    rng = np.random.default_rng(1)
    for _ in range(2):  # the second call sees moving statistics the first one updated
        x = rng.normal(3.0, 2.0, shape).astype("float32")
        np.testing.assert_allclose(keras.ops.convert_to_numpy(ours(x, training=True)),
                                   keras.ops.convert_to_numpy(theirs(x, training=True)), atol=2e-5)
    for name in ("moving_mean", "moving_variance"):  # biased batch variance, as Keras averages it
        np.testing.assert_allclose(keras.ops.convert_to_numpy(getattr(ours, name)),
                                   keras.ops.convert_to_numpy(getattr(theirs, name)), rtol=1e-5)
    x = rng.normal(size=shape).astype("float32")
    np.testing.assert_allclose(keras.ops.convert_to_numpy(ours(x, training=False)),
                               keras.ops.convert_to_numpy(theirs(x, training=False)), atol=1e-5)


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="the fused kernel is TensorFlow's")
def test_gradients_match_keras_on_tensorflow():
    import tensorflow as tf

    shape = (16, 6, 6, 5)
    ours, theirs = _pair(shape)
    rng = np.random.default_rng(2)
    x = tf.constant(rng.normal(1.0, 2.0, shape).astype("float32"))
    cotangent = tf.constant(rng.normal(size=shape).astype("float32"))
    grads = []
    for layer in (ours, theirs):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(layer(x, training=True) * cotangent)
        grads.append(tape.gradient(loss, [x, layer.gamma, layer.beta]))
    for got, want in zip(*grads):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-4)
    # The fused kernel is what ran (a fallback to Keras' ops would pass the comparisons above too).
    graph = tf.function(lambda t: ours(t, training=True)).get_concrete_function(x).graph
    assert any(op.type.startswith("FusedBatchNorm") for op in graph.get_operations())


def test_config_round_trip():
    layer = BatchNormalization(momentum=0.7, epsilon=1e-4, name="bn")
    clone = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(layer))
    assert type(clone) is BatchNormalization
    assert (clone.momentum, clone.epsilon) == (0.7, 1e-4)
