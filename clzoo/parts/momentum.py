"""MoCo's momentum (EMA) key encoder: shadow weights of a stack of layers."""

import keras
from keras import ops

from clzoo.validation.arguments import validate_number


def _copy_of(variable):
    """Initializer giving `variable`'s current value; no host copy, so it also works while `fit`
    builds the model inside a traced step (where `convert_to_numpy` is impossible)."""
    return lambda shape, dtype=None: ops.copy(ops.cast(variable.value, dtype or variable.dtype))


def check_momentum(momentum):
    """MoCo's EMA coefficient m (He et al. 2020, eq. 2) as a float in `[0, 1)`.

    Raises:
        ValueError: naming `momentum`, for a value that is not a finite number in `[0, 1)`.

    Example:

    >>> from clzoo.parts.momentum import check_momentum
    >>> check_momentum(0.99)
    0.99
    """
    value = validate_number(momentum, "momentum", low=0.0, high=1.0, what="a number in [0, 1)")
    if value >= 1.0:
        raise ValueError(f"`momentum` must be a number in [0, 1). Received: momentum={momentum!r}")
    return value


class MomentumEncoder(keras.layers.Layer):
    """Exponential moving average of other layers' trainable weights, and keys computed with it.

    Holds one non-trainable shadow variable per trainable variable of the
    tracked layers (for `ContrastiveModel`: encoder, then projection head).
    `update(layers)` does MoCo's momentum update (He et al. 2020, eq. 2)

        theta_k <- momentum * theta_k + (1 - momentum) * theta_q

    and `apply(layers, x)` runs the layers in order with `theta_k` in place
    of their trainable weights (`Layer.stateless_call`), in training mode,
    so batch norm normalizes with the key batch's statistics as in MoCo; the
    layers' own moving statistics are read but never updated by it. Nothing
    here has a gradient. Shadows start equal to the layers' weights.

    `ContrastiveModel(momentum=...)` calls `update` then `apply` once per
    training step, before its loss: the keys of step t come from
    `theta_k(t) = m theta_k(t-1) + (1 - m) theta_q(t)`, where `theta_q(t)`
    are the weights of step t's forward pass, the order of MoCo's
    Algorithm 1 (update after step t-1's optimizer step, then encode).

    Args:
        momentum: float in `[0, 1)`; MoCo uses 0.999. Defaults to `0.999`.

    Raises:
        ValueError: naming `momentum` outside `[0, 1)`.

    Example:

    >>> import numpy as np, keras, clzoo
    >>> dense = keras.layers.Dense(2)
    >>> dense.build((None, 3))
    >>> ema = clzoo.models.MomentumEncoder(momentum=0.9)
    >>> ema.track([dense])
    >>> ema.update([dense])
    >>> tuple(ema.apply([dense], np.ones((4, 3), "float32")).shape)
    (4, 2)

    Reference:
    - [He et al., Momentum Contrast for Unsupervised Visual Representation
      Learning, CVPR 2020, eq. 2 and Algorithm 1](https://arxiv.org/abs/1911.05722)
    """

    def __init__(self, momentum=0.999, **kwargs):
        super().__init__(**kwargs)
        self.momentum = check_momentum(momentum)
        self.shadows = []

    def track(self, layers):
        """Create the shadow variables of `layers` (built), initialized to their current weights."""
        if self.shadows:
            return
        for i, layer in enumerate(layers):
            if not layer.built:
                raise ValueError(f"MomentumEncoder.track needs built layers. Received: layer {i} "
                                 f"({layer.name}) is not built")
            self.shadows.append([
                self.add_weight(shape=v.shape, dtype=v.dtype, trainable=False, autocast=False,
                                initializer=_copy_of(v),
                                aggregation="only_first_replica", name=f"shadow_{i}_{j}")
                for j, v in enumerate(layer.trainable_variables)])
        self.built = True

    def _check(self, layers):
        counts = [len(layer.trainable_variables) for layer in layers]
        if counts != [len(s) for s in self.shadows]:
            raise ValueError("MomentumEncoder was tracked on layers with "
                             f"{[len(s) for s in self.shadows]} trainable variables; received layers "
                             f"with {counts}")

    def update(self, layers):
        """One momentum step of every shadow towards `layers`' current trainable weights."""
        self._check(layers)
        m = self.momentum
        for layer, shadows in zip(layers, self.shadows):
            for shadow, source in zip(shadows, layer.trainable_variables):
                target = ops.stop_gradient(ops.cast(source.value, shadow.dtype))
                shadow.assign(m * shadow.value + (1.0 - m) * target)

    def apply(self, layers, inputs):
        """`layers` applied in order to `inputs` with the shadow weights (training mode), no gradient."""
        self._check(layers)
        outputs = inputs
        for layer, shadows in zip(layers, self.shadows):
            outputs, _ = layer.stateless_call(
                [s.value for s in shadows], [v.value for v in layer.non_trainable_variables],
                outputs, training=True)
        return ops.stop_gradient(outputs)

    def call(self, inputs=None):
        raise NotImplementedError("Use MomentumEncoder.update(layers) and .apply(layers, x).")

    def get_config(self):
        config = super().get_config()
        config.update({"momentum": self.momentum})
        return config
