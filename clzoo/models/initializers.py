"""Dirac (identity) initialization of convolutions: airbench's second lever (21 -> 18 epochs)."""

import keras
import numpy as np


@keras.saving.register_keras_serializable(package="clzoo")
class DiracInitializer(keras.initializers.Initializer):
    """Identity filters for the first `in_channels` outputs of a conv kernel, `base` for the rest.

    A kernel `(kh, kw, in, out)` with `out >= in` starts with output `i < in`
    equal to input `i` (a 1 at the centre tap of filter `i`, channel `i`), as
    `torch.nn.init.dirac_` applied to the first `in` filters in airbench94
    (Jordan 2024, sec. 3.3); the other `out - in` filters are drawn from `base`.
    A block then starts close to a (pooled, normalized) identity map. For
    `out < in` the first `out` inputs pass through.

    Args:
        base: initializer of the remaining filters (name or instance).
            Defaults to `"glorot_uniform"` (Keras' `Conv2D` default).

    Raises:
        ValueError: a shape other than `(kh, kw, in, out)` with odd `kh`, `kw`.

    Example:

    >>> import clzoo
    >>> kernel = clzoo.models.DiracInitializer()((3, 3, 2, 4))
    >>> [float(kernel[1, 1, i, i]) for i in range(2)]
    [1.0, 1.0]

    Reference:
    - [Jordan, 94% on CIFAR-10 in 3.29 Seconds on a Single GPU, 2024, sec. 3.3
      (identity initialization)](https://arxiv.org/abs/2404.00498)
    """

    def __init__(self, base="glorot_uniform"):
        self.base = keras.initializers.get(base)

    def __call__(self, shape, dtype=None):
        if len(shape) != 4 or shape[0] % 2 == 0 or shape[1] % 2 == 0:
            raise ValueError("DiracInitializer needs a conv kernel (kh, kw, in, out) with odd kh "
                             f"and kw. Received: shape={tuple(shape)}")
        kh, kw, channels_in, channels_out = shape
        kernel = np.array(keras.ops.convert_to_numpy(self.base(shape, dtype=dtype)))
        identity = min(channels_in, channels_out)
        kernel[..., :identity] = 0.0
        kernel[kh // 2, kw // 2, np.arange(identity), np.arange(identity)] = 1.0
        return keras.ops.convert_to_tensor(kernel, dtype=dtype)

    def get_config(self):
        return {"base": keras.initializers.serialize(self.base)}
