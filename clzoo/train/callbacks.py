"""Training callbacks: stop on NaN or a signal, atomic checkpoints, throughput (the logs a run
writes are `clzoo.train.history`'s)."""

import contextlib
import json
import math
import os
import signal
import sys
import tempfile
import threading
import time
import zipfile

import keras
import numpy as np

from clzoo.compat import loss_tracker
from clzoo.console import SecondSignalExit
from clzoo.files import atomic_write

PROGRESS_FILE = "clzoo_progress.json"  # extra entry in the .keras zip; Keras ignores it


class StopOnNaN(keras.callbacks.Callback):
    """Stop `fit` at the first batch whose loss is NaN or infinite, or that left a weight so.

    The loss alone can miss it: in a TensorFlow graph the fused conv + bias +
    ReLU maps NaN to 0, so NaN images can give a finite loss while their NaN
    gradients poison every weight (and the loss then stays finite on dead,
    constant features).
    With `check_weights` (the default) the model's float weights are checked
    after every batch too: one compiled reduction over them and one scalar
    read, about the cost of the loss read already made here.

    Sets `self.failed_at = (epoch, batch, loss)` and `self.reason` (`"loss"`
    or `"weights"`), which other callbacks and the runner read so that no
    checkpoint of the broken weights is written; `record` lets another check
    (the checkpoint's probe batch) stop training the same way.
    """

    def __init__(self, check_weights=True):
        super().__init__()
        self.failed_at = None
        self.reason = None
        self.check_weights = bool(check_weights)
        self._epoch = 0
        self._finite = None

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_train_begin(self, logs=None):
        self._finite = weights_finite_check(self.model) if self.check_weights else None

    def record(self, batch, value, reason="loss"):
        """Mark the run as failed at `batch` of the current epoch with `value`, and stop `fit`."""
        self.failed_at = (self._epoch, batch, float(value))
        self.reason = reason
        self.model.stop_training = True

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(float(loss)):
            self.record(batch, loss)
        elif self._finite is not None:
            self.model  # noqa: B018 (on JAX, reading it syncs the step's weights into the variables)
            if not self._finite():
                self.record(batch, float("nan") if loss is None else loss, reason="weights")


def weights_finite_check(model):
    """A function `() -> bool`: every float weight of `model` is finite (compiled once)."""
    variables = [v for v in model.weights if keras.backend.is_float_dtype(v.dtype)]
    if not variables:
        return lambda: True

    def all_finite(values):
        flat = [keras.ops.reshape(keras.ops.cast(v, "float32"), (-1,)) for v in values]
        return keras.ops.all(keras.ops.isfinite(keras.ops.concatenate(flat)))

    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        compiled = tf.function(lambda: all_finite([v.value for v in variables]))
        return lambda: bool(compiled())
    if backend == "jax":
        import jax

        compiled = jax.jit(all_finite)
        return lambda: bool(compiled([v.value for v in variables]))
    return lambda: bool(all_finite([v.value for v in variables]))


class CheckpointWriteError(OSError):
    """A checkpoint could not be written (full disk, lost mount); the previous one is intact."""


class AtomicCheckpoint(keras.callbacks.Callback):
    """Save the whole model (weights and optimizer state) to `path`, atomically.

    Saves at each epoch end and, with `every_steps`, whenever the optimizer's
    step count is a multiple of it. The model is written to a temporary file
    beside `path` and renamed over it, so `path` always holds the last
    complete checkpoint, even after `kill -9` or a full disk. The optimizer's
    `iterations` inside it is the global step a resumed run starts from.
    Nothing is saved when `nan_guard` reports a failure, a weight is not
    finite, or the model's outputs on `probe` are not (training then stops
    as for a NaN loss).

    Args:
        path: the `.keras` file.
        nan_guard: a `StopOnNaN` to consult. Optional.
        every_steps: also save every this many optimizer steps. Optional.
        saving: context manager factory wrapped around each save (e.g.
            `portable_batch_norm(model)`). Optional.
        enabled: False on non-chief workers of a multi-worker run.
        throwaway: save anyway, into a temporary folder deleted at once,
            leaving `path` alone: the non-chief processes of a JAX run over
            several processes, where `model.save` is a collective that every
            process must call (`Placement.collective_saves`).
        single_replica: also store the running epoch loss (its metric
            variables are per replica when there are several).
        probe: a batch of model inputs whose outputs must be finite. Optional.

    Raises:
        CheckpointWriteError: (an `OSError`) when the file cannot be written.
    """

    def __init__(self, path, nan_guard=None, every_steps=None, saving=None, enabled=True,
                 single_replica=True, probe=None, throwaway=False):
        super().__init__()
        if every_steps is not None and (isinstance(every_steps, bool) or int(every_steps) < 1):
            raise ValueError(f"`every_steps` must be a positive integer or None. "
                             f"Received: every_steps={every_steps!r}")
        self.path = path
        self.nan_guard = nan_guard
        self.every_steps = int(every_steps) if every_steps else None
        self.saving = saving or (lambda: contextlib.nullcontext())
        self.enabled = enabled
        self.throwaway = throwaway
        self.single_replica = single_replica
        self.probe = probe
        self.saved_epoch = None
        self.saved_step = None
        self.refused_step = None

    def _healthy(self):
        """Finite weights, and (with `probe`) finite outputs on the probe batch: a model whose
        weights are finite can still map every input to NaN (e.g. a zero-variance batch norm)."""
        if not all(np.all(np.isfinite(keras.ops.convert_to_numpy(w))) for w in self.model.weights):
            return False
        if self.probe is None:
            return True
        outputs = keras.ops.convert_to_numpy(self.model(self.probe, training=False))
        return bool(np.all(np.isfinite(outputs)))

    def save(self):
        """Save now (as at an epoch end); returns whether it saved."""
        if not self.enabled or (self.nan_guard is not None and self.nan_guard.failed_at is not None):
            return False
        step = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))
        if not self._healthy():
            self.refused_step = step
            if self.nan_guard is not None:
                self.nan_guard.record(step, float("nan"))
            self.model.stop_training = True
            return False
        progress = {"step": step}
        tracker = loss_tracker(self.model)
        if tracker is not None and self.single_replica:
            progress["epoch_loss_state"] = [float(keras.ops.convert_to_numpy(v))
                                            for v in tracker.variables]
            # every running metric of the epoch (a model part's too: the online probe's top-1)
            # the other running metrics (a model part's: the online probe's top-1), in order
            progress["epoch_metric_state"] = [
                [metric.name, [np.asarray(keras.ops.convert_to_numpy(v)).tolist() for v in metric.variables]]
                for metric in self.model.metrics if metric is not tracker]

        def write(tmp):
            with self.saving():
                self.model.save(tmp)
            with zipfile.ZipFile(tmp, "a") as archive:
                archive.writestr(PROGRESS_FILE, json.dumps(progress))

        try:
            if self.throwaway:
                with tempfile.TemporaryDirectory(prefix="clzoo-throwaway-") as folder:
                    write(os.path.join(folder, "checkpoint.keras"))
            else:
                atomic_write(self.path, write, suffix=".keras")
        except OSError as error:
            raise CheckpointWriteError(f"Could not write checkpoint {self.path}: "
                                       f"{error.strerror or error}. {self._kept()}") from None
        self.saved_step = step
        return True

    def _kept(self):
        """What a failed save leaves: the last complete checkpoint, or none (nothing was written)."""
        if self.saved_step is not None:
            return f"The last complete checkpoint (step {self.saved_step}) is intact; free space and resume."
        if not self.throwaway and os.path.isfile(self.path):
            return "The previous checkpoint is intact; free space and resume."
        return "No checkpoint was written yet; free space and run it again with --resume."

    def on_train_begin(self, logs=None):
        # Count steps here rather than read the optimizer's counter (a device sync) every batch.
        self._step = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))

    def on_train_batch_end(self, batch, logs=None):
        self._step += 1
        if self.every_steps:
            step = self._step
            # An epoch's last step is saved by on_epoch_end, after the epoch's history line.
            epoch_end = self.params and self.params.get("steps") == batch + 1
            if step % self.every_steps == 0 and step != self.saved_step and not epoch_end:
                self.save()

    def on_epoch_end(self, epoch, logs=None):
        if self.save():
            self.saved_epoch = epoch


def checkpoint_progress(path):
    """The `{"step", "epoch_loss_state"}` record inside a checkpoint written by `AtomicCheckpoint`."""
    with zipfile.ZipFile(path) as archive:
        if PROGRESS_FILE not in archive.namelist():
            return {}
        return json.loads(archive.read(PROGRESS_FILE))


class RestoreEpochLoss(keras.callbacks.Callback):
    """Put back the running epoch metrics (the loss, a part's top-1) a checkpoint saved mid-epoch,
    once, at the first epoch start.

    `fit` resets its metrics at each epoch start; without this the epoch a
    run resumed in would log the mean of its remaining steps only.
    """

    def __init__(self, state, metrics=()):
        super().__init__()
        self.state, self.metrics = state, list(metrics or ())

    def on_epoch_begin(self, epoch, logs=None):
        tracker = loss_tracker(self.model)
        if self.state and tracker is not None:
            for variable, value in zip(tracker.variables, self.state):
                variable.assign(value)
        others = [metric for metric in self.model.metrics if metric is not tracker]
        for metric, (name, values) in zip(others, self.metrics):
            if metric.name == name and len(values) == len(metric.variables):
                for variable, value in zip(metric.variables, values):
                    variable.assign(np.asarray(value, dtype=variable.dtype))
        self.state, self.metrics = None, []


class Throughput(keras.callbacks.Callback):
    """Measure training images per second (excluding the first, compiling batch).

    Adds `images_per_second` (the running mean since training started) to
    the batch logs, so the progress bar shows it, and to the epoch logs, so
    the CSV, TensorBoard and JSON-lines histories record it.
    """

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
        if logs is not None:
            logs["images_per_second"] = self.images_per_second

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None and self.seconds:
            logs["images_per_second"] = self.images_per_second

    @property
    def images_per_second(self):
        return self.images / self.seconds if self.seconds else float("nan")


class Forecast(keras.callbacks.Callback):
    """Print once, after `after` timed steps, the measured speed and how long training has left.

    The speed is `throughput`'s (the first, compiling step excluded), so the
    estimate covers the optimizer steps only, not the evaluation after them.
    """

    def __init__(self, throughput, steps_left, batch_size, after=5, enabled=True):
        super().__init__()
        self.throughput, self.steps_left, self.batch_size = throughput, steps_left, batch_size
        self.after, self.enabled, self._seen = after, enabled, 0

    def on_train_batch_end(self, batch, logs=None):
        if not self.enabled:
            return
        self._seen += 1
        left = self.steps_left - self._seen
        if self._seen != self.after + 1 or left <= 0:
            return
        from clzoo.eval.plan import duration, rate_text

        rate = self.throughput.images_per_second
        start = "\n" if sys.stdout.isatty() else ""  # off the live progress bar's line
        print(f"{start}clzoo: {rate_text(rate)} images/s over {self.after} steps; the {left:,} steps "
              f"left take {duration(left * self.batch_size / rate)} (training only)", flush=True)


class StopOnSignal(keras.callbacks.Callback):
    """Finish the current step and stop `fit` on SIGTERM or SIGINT (a scheduler's pre-emption, Ctrl-C).

    `fit` then ends its epoch early, so `AtomicCheckpoint.on_epoch_end` saves
    the state at that step; the runner reports `received` and a resumed run
    continues from there. A second signal does not wait for the step (it may
    never end: an image read that does not return): it raises KeyboardInterrupt,
    and if the run is still in `fit` a few seconds later (the main thread blocked
    in C, where Python's handler cannot run) the process exits
    (`clzoo.console.SecondSignalExit`). Handlers are installed for the duration of
    `fit` only, and only from the main thread (Python's rule for signal handlers);
    `release` restores them where `fit` raised.
    """

    SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __init__(self):
        super().__init__()
        self.received = None
        self._previous = {}
        self._hard_stop = SecondSignalExit()

    def _handle(self, signum, frame):
        if self.received is not None:  # the second: stop now (the step may never finish)
            self._restore_handlers()
            raise KeyboardInterrupt(f"{signal.Signals(signum).name} again while stopping")
        self.received = signal.Signals(signum).name
        if self.model is not None:
            self.model.stop_training = True

    def on_train_begin(self, logs=None):
        if threading.current_thread() is threading.main_thread():
            self._previous = {s: signal.signal(s, self._handle) for s in self.SIGNALS}
            self._hard_stop.arm()

    def on_epoch_begin(self, epoch, logs=None):
        self._steps = 0

    def on_train_batch_end(self, batch, logs=None):
        self._steps = batch + 1
        if self.received:
            self.model.stop_training = True

    def on_epoch_end(self, epoch, logs=None):
        """An epoch cut short says so: `partial_epoch_steps` in its logs (history.jsonl / .csv, the
        card's curve) and one line, since its loss is the mean of the steps run (on its own line:
        a live bar, `verbose=1`, leaves the cursor at its end)."""
        planned = (self.params or {}).get("steps")
        if self.received and logs is not None and planned and 0 < getattr(self, "_steps", 0) < planned:
            logs["partial_epoch_steps"] = self._steps
            if self.params.get("verbose"):
                print(("\n" if self.params.get("verbose") == 1 else "")
                      + f"epoch {epoch + 1} stopped by {self.received} after {self._steps} of its "
                      f"{planned} steps: its logged loss is the mean of those steps", flush=True)

    def on_train_end(self, logs=None):
        self.release()

    def release(self):
        """Put back the handlers `fit` started with and disarm the hard exit (idempotent)."""
        self._restore_handlers()
        self._hard_stop.release()

    def _restore_handlers(self):
        for number, handler in self._previous.items():
            signal.signal(number, handler)
        self._previous = {}
