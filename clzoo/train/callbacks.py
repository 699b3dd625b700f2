"""Training callbacks: stop on NaN, atomic checkpoints, throughput."""

import math
import time

import keras
import numpy as np

from clzoo.data.cache import atomic_write


class StopOnNaN(keras.callbacks.Callback):
    """Stop `fit` at the first batch whose loss is NaN or infinite.

    Sets `self.failed_at = (epoch, batch, loss)`, which other callbacks and
    the runner read so that no checkpoint of the broken weights is written.
    """

    def __init__(self):
        super().__init__()
        self.failed_at = None
        self._epoch = 0

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(float(loss)):
            self.failed_at = (self._epoch, batch, float(loss))
            self.model.stop_training = True


class AtomicCheckpoint(keras.callbacks.Callback):
    """Save the whole model to `path` at each epoch end, atomically.

    The model is written to a temporary file beside `path` and renamed over
    it, so `path` always holds the last complete checkpoint. Nothing is saved
    when `nan_guard` reports a failure or a weight is not finite.
    """

    def __init__(self, path, nan_guard=None):
        super().__init__()
        self.path = path
        self.nan_guard = nan_guard
        self.saved_epoch = None

    def on_epoch_end(self, epoch, logs=None):
        if self.nan_guard is not None and self.nan_guard.failed_at is not None:
            return
        if not all(np.all(np.isfinite(keras.ops.convert_to_numpy(w)))
                   for w in self.model.weights):
            return
        atomic_write(self.path, lambda tmp: self.model.save(tmp), suffix=".keras")
        self.saved_epoch = epoch


class Throughput(keras.callbacks.Callback):
    """Measure training images per second (excluding the first, compiling batch)."""

    def __init__(self, batch_size):
        super().__init__()
        self.batch_size = batch_size
        self.images = 0
        self.seconds = 0.0
        self._start = None
        self._first = True

    def on_train_batch_begin(self, batch, logs=None):
        self._start = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        if self._first:
            self._first = False
            return
        self.seconds += time.perf_counter() - self._start
        self.images += self.batch_size

    @property
    def images_per_second(self):
        return self.images / self.seconds if self.seconds else float("nan")
