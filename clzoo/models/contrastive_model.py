"""Encoder + projection head applied to every view of a multi-view batch."""

import keras
from keras import ops


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
        learnable_temperature: None or a `clzoo.losses.LearnableTemperature`
            the model owns (weight trained by `fit`, saved with the model).
            A loss compiled with `temperature="learnable"` reads this layer;
            when the model has none, `compile` adopts the loss's own layer
            (which needs the model not yet built). Defaults to `None`.

    Example:

    >>> import numpy as np, clzoo
    >>> model = clzoo.models.ContrastiveModel(
    ...     clzoo.models.cifar_resnet("resnet20"),
    ...     clzoo.models.ProjectionHead(hidden_dims=(64,), output_dim=16))
    >>> tuple(model(np.zeros((2, 2, 32, 32, 3), "float32")).shape)
    (2, 2, 16)
    """

    def __init__(self, encoder, projection_head, learnable_temperature=None, **kwargs):
        super().__init__(**kwargs)
        self.encoder = encoder
        self.projection_head = projection_head
        if learnable_temperature is not None:
            self.learnable_temperature = learnable_temperature

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

    def compile(self, *args, **kwargs):
        """`keras.Model.compile`, binding a loss with `temperature="learnable"` to the model's
        `learnable_temperature` layer (adopting the loss's layer if the model has none), so the
        temperature is trained by `fit` and saved with the model (CLIP, Radford et al. 2021).

        Raises:
            ValueError: for a learnable-temperature loss when the model is already built and
                owns no `learnable_temperature` (Keras adds no weights to a built model).
        """
        loss = kwargs.get("loss", args[1] if len(args) > 1 else None)
        layer = getattr(loss, "temperature_layer", None)
        if layer is not None:
            own = getattr(self, "learnable_temperature", None)
            if own is not None:
                loss.temperature_layer = own
            elif self.built:
                raise ValueError(
                    "A loss with temperature='learnable' needs the model's learnable_temperature "
                    "layer, and a built model takes no new weights: compile before building, or "
                    "pass learnable_temperature=loss.temperature_layer to ContrastiveModel. "
                    f"Received: a built {type(self).__name__} without learnable_temperature")
            else:
                self.learnable_temperature = layer
        super().compile(*args, **kwargs)

    def compile_from_config(self, config):
        """Recompile a loaded model (Keras skips this for a custom `compile`; ours only adds the
        learnable temperature, so the saved compile config applies as it is)."""
        self.compile(**keras.saving.deserialize_keras_object(config))
        if getattr(self, "optimizer", None) is not None and self.built:
            self.optimizer.build(self.trainable_variables)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[1], self.projection_head.output_dim)

    def get_config(self):
        config = super().get_config()
        config.update({
            "encoder": keras.saving.serialize_keras_object(self.encoder),
            "projection_head": keras.saving.serialize_keras_object(
                self.projection_head),
        })
        layer = getattr(self, "learnable_temperature", None)
        if layer is not None:
            config["learnable_temperature"] = keras.saving.serialize_keras_object(layer)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        config["projection_head"] = keras.saving.deserialize_keras_object(
            config["projection_head"])
        if config.get("learnable_temperature") is not None:
            config["learnable_temperature"] = keras.saving.deserialize_keras_object(
                config["learnable_temperature"])
        return cls(**config)
