"""MLP projection head of SimCLR / SupCon."""

import keras
from keras import layers, ops

from clzoo.validation.inputs import l2_normalize


@keras.saving.register_keras_serializable(package="clzoo")
class ProjectionHead(keras.layers.Layer):
    """MLP projection head: `Dense -> ReLU` per hidden width, then a linear output.

    As in SupCon's CIFAR code (`hidden_dims=(dim_in,)`, `output_dim=128`) and
    SimCLR ("a MLP with one hidden layer ... z = W2 relu(W1 h)"). The defaults
    are what `clzoo train` builds (`model.head_hidden_dims: null`,
    `model.embedding_dim: 128`).

    Args:
        hidden_dims: widths of the hidden layers; `()` gives a linear head;
            `None` gives one hidden layer as wide as the input features
            (SupCon's `dim_in`), resolved when the layer is built.
            Defaults to `None`.
        output_dim: embedding size. Defaults to `128`.
        normalize: L2-normalize the output along its last axis.
            Defaults to `True`.
        batch_norm: batch normalization after each hidden `Dense` (before
            the ReLU), as SimCLR's ImageNet head has. Defaults to `False`
            (SupCon's CIFAR head).

    Input shape: `(..., features)`. Output shape: `(..., output_dim)`.

    Raises:
        ValueError: `output_dim` or a hidden width is not a positive integer.

    Example:

    >>> import numpy as np, clzoo
    >>> head = clzoo.models.ProjectionHead(output_dim=8)
    >>> z = head(np.ones((2, 16), "float32"))
    >>> tuple(z.shape), head.hidden_dims
    ((2, 8), (16,))

    Reference:
    - [Chen et al., SimCLR, 2020, sec. 2.1](https://arxiv.org/abs/2002.05709)
    """

    def __init__(self, hidden_dims=None, output_dim=128, normalize=True, batch_norm=False,
                 **kwargs):
        super().__init__(**kwargs)
        if output_dim is None or int(output_dim) < 1:
            raise ValueError(
                f"`output_dim` must be a positive integer. Received: output_dim={output_dim!r}"
            )
        self.hidden_dims = None if hidden_dims is None else tuple(int(d) for d in hidden_dims)
        if self.hidden_dims is not None and any(d < 1 for d in self.hidden_dims):
            raise ValueError("`hidden_dims` must be positive integers. "
                             f"Received: hidden_dims={hidden_dims!r}")
        self.output_dim = int(output_dim)
        self.normalize = bool(normalize)
        self.batch_norm = bool(batch_norm)
        if self.hidden_dims is not None:
            self._make_layers()

    def _make_layers(self):
        # Same creation order with or without a deferred width: hidden, norms, output
        # (the order of the trainable variables, hence of the optimizer's slots).
        self.hidden = [
            layers.Dense(d, activation=None if self.batch_norm else "relu",
                         use_bias=not self.batch_norm, name=f"hidden_{i}")
            for i, d in enumerate(self.hidden_dims)
        ]
        self.norms = [layers.BatchNormalization(name=f"hidden_bn_{i}")
                      for i in range(len(self.hidden_dims))] if self.batch_norm else []
        self.out = layers.Dense(self.output_dim, name="output")

    def build(self, input_shape):
        shape = tuple(input_shape)
        if self.hidden_dims is None:
            self.hidden_dims = (int(shape[-1]),)
            self._make_layers()
        for i, layer in enumerate(self.hidden):
            layer.build(shape)
            shape = shape[:-1] + (layer.units,)
            if self.batch_norm:
                self.norms[i].build(shape)
        self.out.build(shape)

    def call(self, inputs, training=None):
        x = inputs
        for i, layer in enumerate(self.hidden):
            x = layer(x)
            if self.batch_norm:
                x = ops.relu(self.norms[i](x, training=training))
        x = self.out(x)
        return l2_normalize(x) if self.normalize else x

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)[:-1] + (self.output_dim,)

    def get_config(self):
        config = super().get_config()
        config.update({
            "hidden_dims": None if self.hidden_dims is None else list(self.hidden_dims),
            "output_dim": self.output_dim,
            "normalize": self.normalize,
            "batch_norm": self.batch_norm,
        })
        return config


@keras.saving.register_keras_serializable(package="clzoo")
class L2Normalize(keras.layers.Layer):
    """Unit vectors along the last axis, exact at any scale (`clzoo.validation.inputs.l2_normalize`).

    `keras.layers.UnitNormalization` squares the raw values, so float32 rows
    of 1e-30 (underflow) or 1e30 (overflow) come out as near-zero vectors.
    """

    def call(self, inputs):
        return l2_normalize(inputs)

    def compute_output_shape(self, input_shape):
        return input_shape
