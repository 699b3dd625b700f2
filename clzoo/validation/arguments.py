"""Validation of loss arguments: numbers, temperatures, positive integers, flags.

Each validator returns the value in its canonical Python type, or raises a
`ValueError` that names the argument and ends with "Received: name=value".
"""

import math

import numpy as np
from keras import ops

from clzoo.validation import checks as K


def validate_number(value, name, low=None, high=None, low_open=False, what="a number"):
    """Return `value` as a float in `[low, high]` (or `(low, high]`), else a `ValueError` naming it.

    Python and NumPy scalars are accepted (`np.float32(0.1)`, `np.int64(4)`);
    bools, strings, arrays, NaN and infinities are refused.
    """
    ok = K.is_number(value) and math.isfinite(float(value))
    if ok and low is not None:
        ok = value > low if low_open else value >= low
    if ok and high is not None:
        ok = value <= high
    if not ok:
        raise ValueError(f"`{name}` must be {what}. Received: {name}={value!r}")
    return float(value)



def validate_temperature(temperature, name="temperature"):
    """Return `temperature` as a float, or raise a `ValueError` naming it.

    A scalar backend tensor (the value of a `LearnableTemperature`) is
    returned as it is.
    """
    if ops.is_tensor(temperature) and not isinstance(temperature, np.ndarray) \
            and len(temperature.shape) == 0:
        return temperature
    return validate_number(temperature, name, low=0.0, low_open=True,
                           what="a positive, finite number")



def validate_positive_int(value, name, allow_none=True):
    """Return `value` (None or a positive Python / NumPy integer) as an int, else a `ValueError`."""
    if value is None and allow_none:
        return None
    if not K.is_number(value, integral=True) or value < 1:
        raise ValueError(f"`{name}` must be None or a positive integer. Received: {name}={value!r}")
    return int(value)



def validate_bool(value, name):
    """Return `value` (a Python or NumPy bool) as a bool, else a `ValueError` naming it."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"`{name}` must be True or False. Received: {name}={value!r}")
    return bool(value)



def validate_chunk_size(chunk_size):
    """Return `chunk_size` (None or a positive int) or raise a `ValueError` naming it."""
    return validate_positive_int(chunk_size, "chunk_size")
