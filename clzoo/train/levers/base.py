"""The `Lever` base class and the `LEVERS` registry."""

import keras

from clzoo.registry import Registry

LEVERS = Registry("lever")


class Lever(keras.callbacks.Callback):
    """A training lever: a Keras callback that may set up the optimizer before training.

    The runner calls `configure(optimizer)` once the optimizer is built from the recipe,
    before `compile` on a new run and on the checkpoint's optimizer on a resumed one,
    then passes the lever to `fit` as the last callback.
    """

    def refuse(self, context):
        """Why this lever cannot run beside the run of `context` (a `clzoo.parts.PartContext`:
        the model's parts, the task, the loss class), or None (default)."""
        return None

    def configure(self, optimizer):
        """Set up `optimizer` for this lever (default: nothing). On a resumed run the
        optimizer comes from the checkpoint, already built: check it instead.

        Raises:
            ValueError: the optimizer cannot carry the lever.
        """
