"""Learnable temperature: a log-parameterized logit scale held by a layer (CLIP, Radford et al. 2021)."""

import math

import keras
from keras import ops

from clzoo.validation.arguments import validate_number

# CLIP (Radford et al. 2021, sec. 2.5): "The learnable temperature parameter tau was initialized to the
# equivalent of 0.07 ... and clipped to prevent scaling the logits by more than 100".
CLIP_TEMPERATURE_INIT = 0.07
CLIP_MIN_TEMPERATURE = 0.01


@keras.saving.register_keras_serializable(package="clzoo")
class ClipValue(keras.constraints.Constraint):
    """Keep a weight in `[low, high]` after every optimizer step (CLIP clamps its logit scale so)."""

    def __init__(self, low, high):
        self.low, self.high = float(low), float(high)

    def __call__(self, w):
        return ops.clip(w, self.low, self.high)

    def get_config(self):
        return {"low": self.low, "high": self.high}


def _check(value, name, low=0.0):
    return validate_number(value, name, low=low, low_open=True, what=f"a finite number > {low}")


@keras.saving.register_keras_serializable(package="clzoo")
class LearnableTemperature(keras.layers.Layer):
    """A trainable temperature `tau = 1 / exp(log_scale)`, with `tau` kept in `[min, max]`.

    The weight is CLIP's logit scale in log form, `log_scale = log(1 / tau)`,
    initialized to `log(1 / temperature_init)`. After each optimizer step a
    weight constraint clips it so that `min_temperature <= tau <=
    max_temperature` (CLIP: logits scaled by at most 100, i.e. `tau >= 0.01`);
    `temperature()` clips as well, so a value set by hand cannot escape.

    A `keras.losses.Loss` has no weights, so an embedding loss built with
    `temperature="learnable"` owns one of these layers
    (`loss.temperature_layer`) and `clzoo.models.ContrastiveModel.compile`
    adopts it as the model's sublayer `learnable_temperature`: `fit` trains
    it with the model's optimizer, `model.save` / `keras.saving.load_model`
    store and restore it (the reloaded model recompiles the loss, which
    creates the layer, and then loads its weight).

    Args:
        temperature_init: positive float, the starting temperature.
            Defaults to `0.07` (CLIP).
        min_temperature: positive float, the lower clamp. Defaults to
            `0.01` (CLIP's logit scale of at most 100).
        max_temperature: float above `min_temperature`, the upper clamp.
            Defaults to `1.0`.
        **kwargs: `keras.layers.Layer` arguments (`name`, ...).

    Call: `layer(logits)` divides float logits of any shape by `tau`.

    Raises:
        ValueError: for a non-positive or non-finite bound or init, or an
            init outside `[min_temperature, max_temperature]`.

    Example:

    >>> import clzoo
    >>> layer = clzoo.losses.LearnableTemperature(temperature_init=0.1)
    >>> round(float(layer.temperature()), 6)
    0.1

    Reference:
    - [Radford et al., Learning Transferable Visual Models From Natural
      Language Supervision (CLIP), 2021, sec. 2.5](https://arxiv.org/abs/2103.00020)
    """

    def __init__(self, temperature_init=CLIP_TEMPERATURE_INIT, min_temperature=CLIP_MIN_TEMPERATURE,
                 max_temperature=1.0, **kwargs):
        super().__init__(**kwargs)
        self.temperature_init = _check(temperature_init, "temperature_init")
        self.min_temperature = _check(min_temperature, "min_temperature")
        self.max_temperature = _check(max_temperature, "max_temperature", low=self.min_temperature)
        if not self.min_temperature <= self.temperature_init <= self.max_temperature:
            raise ValueError(f"`temperature_init` must lie in [min_temperature, max_temperature] = "
                             f"[{self.min_temperature}, {self.max_temperature}]. "
                             f"Received: temperature_init={temperature_init!r}")
        self._bounds = (-math.log(self.max_temperature), -math.log(self.min_temperature))
        self.log_scale = self.add_weight(
            shape=(), name="log_scale", dtype="float32",
            initializer=keras.initializers.Constant(-math.log(self.temperature_init)),
            constraint=ClipValue(*self._bounds))
        self.built = True

    def temperature(self):
        """The current temperature, a float32 scalar tensor (differentiable in `log_scale`)."""
        return ops.exp(-ops.clip(ops.cast(self.log_scale, "float32"), *self._bounds))

    def call(self, logits):
        return ops.cast(logits, "float32") / self.temperature()

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update({"temperature_init": self.temperature_init,
                       "min_temperature": self.min_temperature,
                       "max_temperature": self.max_temperature})
        return config
