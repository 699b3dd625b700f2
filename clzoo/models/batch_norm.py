"""Batch normalization that runs TensorFlow's fused kernel when training on TensorFlow.

Keras 3's `BatchNormalization` computes the batch moments and the normalization
from separate ops; on TensorFlow (CPU) that is 2-4x slower, forward and
backward, than the one fused kernel (`FusedBatchNormV3`, oneDNN) for the
(batch, H, W, C) activations of a CIFAR ResNet, and it was the largest part of
the gap to a PyTorch training step (benchmarks/README.md, `train_step.py`).
"""

import keras
from keras import ops

# TensorFlow's fused kernel raises a smaller epsilon to this; below it the Keras ops run instead.
FUSED_MIN_EPSILON = 1.001e-5


@keras.saving.register_keras_serializable(package="clzoo")
class BatchNormalization(keras.layers.BatchNormalization):
    """`keras.layers.BatchNormalization` with TensorFlow's fused kernel for training.

    Same arguments, weights (gamma, beta, moving mean, moving variance),
    maths and saved format as the Keras layer (Ioffe & Szegedy 2015, alg. 1:
    batch mean and biased batch variance normalize, the moving averages take
    `momentum * moving + (1 - momentum) * batch`). When training on the
    TensorFlow backend a float32 `(batch, H, W, C)` input normalized over its
    last axis with center (and no mask, renorm or synchronization) goes
    through `tf.nn.fused_batch_norm`, with or without scale (airbench's frozen
    scale is `scale=False`); an `epsilon` below 1.001e-5 (which the kernel
    would raise silently), every other case and every other backend run the
    Keras layer unchanged.

    Example:

    >>> import numpy as np, clzoo
    >>> layer = clzoo.models.BatchNormalization()
    >>> y = layer(np.random.rand(4, 2, 2, 3).astype("float32"), training=True)
    >>> tuple(y.shape)
    (4, 2, 2, 3)
    """

    def _fused(self, inputs, training, mask):
        return (keras.backend.backend() == "tensorflow" and bool(training) and self.trainable
                and mask is None and not self.renorm and not self.synchronized
                and self.center and self.epsilon >= FUSED_MIN_EPSILON and len(inputs.shape) == 4
                and self.axis % 4 == 3 and inputs.dtype == "float32"
                and self.compute_dtype == "float32")

    def call(self, inputs, training=None, mask=None):
        if not self._fused(inputs, training, mask):
            return super().call(inputs, training=training, mask=mask)
        import tensorflow as tf

        gamma = self.gamma if self.scale else tf.ones_like(self.beta)
        outputs, mean, variance = tf.compat.v1.nn.fused_batch_norm(
            inputs, gamma, self.beta, epsilon=self.epsilon, is_training=True)
        # The kernel returns the unbiased (n - 1) batch variance; Keras averages the biased one.
        count = ops.cast(ops.prod(ops.shape(inputs)[:3]), variance.dtype)
        variance = variance * (count - 1.0) / count
        self.moving_mean.assign(self.moving_mean * self.momentum + mean * (1.0 - self.momentum))
        self.moving_variance.assign(
            self.moving_variance * self.momentum + variance * (1.0 - self.momentum))
        return outputs
