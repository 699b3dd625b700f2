"""Encoder + projection head applied to every view of a multi-view batch."""

import keras
from keras import ops

from clzoo.models.jax_step_guard import guard_jax_step


@keras.saving.register_keras_serializable(package="clzoo")
class ContrastiveModel(keras.Model):
    """Multi-view contrastive model: `(batch, views, H, W, C) -> (batch, views, dim)`.

    Views are folded into the batch axis, so batch norm sees every view of
    the batch at once (as the SupCon reference code does by concatenating
    views), then encoded, projected and unfolded. `model.encoder` is the
    network to keep for transfer; the head is dropped after training.

    Args:
        encoder: `keras.Model` mapping `(batch, H, W, C)` images to
            `(batch, features)`.
        projection_head: layer mapping `(batch, features)` to `(batch, dim)`.

    Example:

    >>> import numpy as np, clzoo
    >>> model = clzoo.models.ContrastiveModel(
    ...     clzoo.models.cifar_resnet("resnet20"),
    ...     clzoo.models.ProjectionHead(hidden_dims=(64,), output_dim=16))
    >>> tuple(model(np.zeros((2, 2, 32, 32, 3), "float32")).shape)
    (2, 2, 16)
    """

    def __init__(self, encoder, projection_head, **kwargs):
        super().__init__(**kwargs)
        self.encoder = encoder
        self.projection_head = projection_head

    def build(self, input_shape):
        """Build the encoder and the head for multi-view inputs `(batch, views, H, W, C)`."""
        folded = (None,) + tuple(input_shape[2:])
        if not self.encoder.built:
            self.encoder.build(folded)
        if not self.projection_head.built:
            self.projection_head.build(self.encoder.compute_output_shape(folded))

    def call(self, inputs, training=None):
        if len(inputs.shape) != 5:
            raise ValueError(
                "ContrastiveModel expects a multi-view batch of shape "
                f"(batch, views, H, W, C). Received: shape={tuple(inputs.shape)}"
            )
        views = inputs.shape[1]
        folded = ops.reshape(inputs, (-1,) + tuple(inputs.shape[2:]))
        features = self.encoder(folded, training=training)
        embeddings = self.projection_head(features, training=training)
        return ops.reshape(embeddings, (-1, views, embeddings.shape[-1]))

    def make_train_function(self, force=False):
        """Keras' train function; on JAX, see `jax_step_guard.guard_jax_step`."""
        super().make_train_function(force)
        self.train_function = guard_jax_step(self, self.train_function)

    def make_test_function(self, force=False):
        """Keras' test function, with the same label guard as `make_train_function`."""
        super().make_test_function(force)
        self.test_function = guard_jax_step(self, self.test_function)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[1], self.projection_head.output_dim)

    def get_config(self):
        config = super().get_config()
        config.update({
            "encoder": keras.saving.serialize_keras_object(self.encoder),
            "projection_head": keras.saving.serialize_keras_object(
                self.projection_head),
        })
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        config["projection_head"] = keras.saving.deserialize_keras_object(
            config["projection_head"])
        return cls(**config)
