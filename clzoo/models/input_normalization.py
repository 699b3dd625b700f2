"""The encoders' first layer: pixels in [0, 1] normalized by per-channel mean and std, checked."""

import math

from keras import layers


def check_mean_std(mean, std, channels):
    """Refuse (`ValueError`) a `mean` / `std` that is not one finite number per channel, or a
    `std` that is not positive (a zero std maps every image to inf or NaN)."""
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                  for v in (*mean, *std))
    if len(mean) != channels or len(std) != channels or not numbers:
        raise ValueError(f"`mean` and `std` need one finite number per channel ({channels}). "
                         f"Received: mean={mean!r}, std={std!r}")
    if min(std) <= 0:
        raise ValueError(f"`std` must be positive (the pixels are divided by it). Received: std={std!r}")


def normalized(inputs, mean, std):
    """`(inputs - mean) / std` per channel, as a Keras `Normalization` layer named "normalize".

    Args:
        inputs: a Keras tensor `(batch, H, W, C)`.
        mean, std: `C` numbers each; `std` positive.

    Raises:
        ValueError: as `check_mean_std`.
    """
    check_mean_std(mean, std, inputs.shape[-1])
    return layers.Normalization(mean=list(mean), variance=[s * s for s in std],
                                name="normalize")(inputs)
