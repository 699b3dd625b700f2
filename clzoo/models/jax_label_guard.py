"""Refuse 64-bit class ids before JAX (without x64) wraps them on the way into a jitted step."""

import itertools

import keras

from clzoo.losses import _checks as K


def _checked_batch(data):
    if isinstance(data, (tuple, list)) and len(data) > 1 and data[1] is not None:
        for labels in keras.tree.flatten(data[1]):
            K.check_int32_ids(labels)
    return data


def guard_jax_labels(model, step_function):
    """`step_function(state, iterator)` with every batch's labels checked on the host first.

    JAX without `jax_enable_x64` converts an int64 NumPy `y` to int32 when it
    enters the jitted train / test step, wrapping ids outside int32 modulo
    2^32 before any loss can see them. The check is one min / max per batch
    of NumPy integer labels, made before the step runs; on a refusal the
    step's input state goes back into `model`, which stays usable. Other
    backends (and JAX with x64) get `step_function` back unchanged.

    Raises (when the returned function runs):
        ValueError: from `_checks.check_int32_ids`, naming `y_true` and the id.
    """
    if (step_function is None or keras.backend.backend() != "jax" or K.index_dtype() == "int64"
            or getattr(step_function, "_clzoo_label_guard", False)):
        return step_function

    def guarded(state, iterator):
        batches = list(itertools.islice(iterator, model.steps_per_execution))
        try:
            for batch in batches:
                _checked_batch(batch)
        except ValueError:
            from clzoo.train import compat

            compat.restore_jax_state(model, state)
            raise
        return step_function(state, iter(batches))

    guarded._clzoo_label_guard = True
    return guarded
