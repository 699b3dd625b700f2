"""The steps of `ContrastiveModel`: refuse ids JAX would wrap or a label head's classes cannot hold,
and report a failed loss check plainly (JAX's wrapped host callback, TensorFlow's graph assert)."""

import itertools

import keras

from clzoo.parts.base import ModelPart
from clzoo.validation import checks as K
from clzoo.validation.sample_weights import check_host_sample_weight


def _checked_batch(data, parts=()):
    if not isinstance(data, (tuple, list)):
        return data
    if len(data) > 1 and data[1] is not None:
        for part in parts:  # a label head's ids, checked where a stream's batches reach the host
            part.check_labels(data[1])
    if K.index_dtype() != "int64" and len(data) > 1 and data[1] is not None:
        for labels in keras.tree.flatten(data[1]):
            K.check_int32_ids(labels)
    if len(data) > 2 and data[2] is not None:
        # The loss refuses it too, but only inside the step, after JAX took the state.
        for weight in keras.tree.flatten(data[2]):
            check_host_sample_weight(weight)
    return data


def _restore(model, state):
    from clzoo import compat  # the one module allowed private Keras API (ground floor)

    compat.restore_jax_state(model, state)


def guard_jax_step(model, step_function, parts=()):
    """`step_function(state, iterator)` with every batch's labels checked on the host first.

    Each of `parts` checks the labels too (`ModelPart.check_labels`: a label head's class ids),
    on JAX and on torch (`(data,)` in, its batch on the host before the step), so a `tf.data`
    stream or a generator is held to what `fit` checks for arrays.

    JAX without `jax_enable_x64` converts an int64 NumPy `y` to int32 when it
    enters the jitted train / test step, wrapping ids outside int32 modulo
    2^32 before any loss can see them. The check is one min / max per batch
    of NumPy integer labels, made before the step runs; on a refusal the
    step's input state goes back into `model`, which stays usable. A loss
    check that fails inside the step comes back as the loss's own
    `InputCheckError` (a `ValueError`) instead of JAX's wrapped callback
    traceback; the step had already taken the weights (JAX donates its input
    state), so reload the model or its checkpoint after that one. On
    TensorFlow a loss check failed inside the graph comes back as the same
    one-line `InputCheckError`; torch (eager) raises it as it is.

    NumPy sample weights are checked on the host the same way (finite and
    non-negative), so that a refused batch leaves the model usable.

    Raises (when the returned function runs):
        ValueError: from `clzoo.validation.checks.check_int32_ids`, naming `y_true` and the id;
            a negative or non-finite `sample_weight`.
    """
    if step_function is None or getattr(step_function, "_clzoo_step_guard", False):
        return step_function
    if keras.backend.backend() == "tensorflow":
        return _tf_guarded(step_function)
    if keras.backend.backend() == "torch":
        return _torch_guarded(step_function, parts)
    if keras.backend.backend() != "jax":
        return step_function

    def guarded(state, iterator):
        batches = list(itertools.islice(iterator, model.steps_per_execution))
        try:
            for batch in batches:
                _checked_batch(batch, parts)
        except ValueError:
            _restore(model, state)
            raise
        try:
            return step_function(state, iter(batches))
        except Exception as error:  # jax.errors.JaxRuntimeError around a failed loss check
            message = K.input_check_message(error)
            if message is None:
                raise
            raise K.InputCheckError(message) from None  # the message, not JAX's callback traceback

    guarded._clzoo_step_guard = True
    return guarded


def _tf_guarded(step_function):
    """TensorFlow: a loss check failed inside the graph comes back as its one-line
    `InputCheckError`, not a 51-line `InvalidArgumentError` of graph nodes."""
    import tensorflow as tf

    def guarded(iterator):
        try:
            return step_function(iterator)
        except tf.errors.InvalidArgumentError as error:
            message = K.input_check_message(error)
            if message is None:
                raise
            raise K.InputCheckError(message) from None

    guarded._clzoo_step_guard = True
    return guarded


def _torch_guarded(step_function, parts):
    """torch: the parts' label checks on the batch before the (eager or compiled) step."""
    if not any(type(part).check_labels is not ModelPart.check_labels for part in parts):
        return step_function

    def guarded(data):
        _checked_batch(data[0], parts)
        return step_function(data)

    guarded._clzoo_step_guard = True
    return guarded
