"""The resumable `fit`: callbacks, the finish-the-interrupted-epoch split, and how a fit can end."""

import time
from dataclasses import dataclass

import keras

from clzoo.console import keras_verbose
from clzoo.train.callbacks import (
    AtomicCheckpoint,
    Forecast,
    RestoreEpochLoss,
    StopOnNaN,
    StopOnSignal,
    Throughput,
    checkpoint_progress,
)
from clzoo.train.distribute import portable_batch_norm
from clzoo.train.heartbeat import Heartbeat
from clzoo.train.history import HistoryCSV, JSONLinesHistory, StepLog

PROBE_SAMPLES = 32  # samples of the first batch that AtomicCheckpoint runs to check outputs are finite


class TrainingDiverged(RuntimeError):
    """Raised when the loss becomes NaN or infinite during training."""


class TrainingInterrupted(RuntimeError):
    """Raised after SIGTERM / SIGINT stopped `fit`; the checkpoint holds the step it reached.

    Attributes:
        signal: `"SIGTERM"` or `"SIGINT"`.
        step: the optimizer step saved in the checkpoint (None if nothing was saved).
    """

    def __init__(self, message, signal, step):
        super().__init__(message)
        self.signal, self.step = signal, step


@dataclass
class FitResult:
    seconds: float
    images_per_second: float


def resumable_fit(model, batches_from, run, plan, place, verbose=1, monitor=None, levers=()):
    """Train `model` from the step its optimizer holds to `plan.epochs * plan.steps`.

    Args:
        model: compiled (or loaded from `run.checkpoint`) model.
        batches_from: `step -> stream` of the batches from that step on: a `tf.data.Dataset`
            or a `clzoo.data.device_stream.DeviceBatches` (the same `take` / `skip`).
        run: the `RunFolder`.
        plan: `TrainingPlan` (epochs, steps per epoch, batch size, options).
        place: the `Placement` (strategy, replicas, chief).
        monitor: an optional `KNNMonitor` callback.
        levers: `clzoo.train.levers.Lever`s, the last callbacks (after the checkpoint's).

    Raises:
        TrainingDiverged: the loss became NaN; the checkpoint holds the last finite state.
        TrainingInterrupted: SIGTERM / SIGINT; the checkpoint holds the step reached.
    """
    done = int(keras.ops.convert_to_numpy(model.optimizer.iterations))
    first_epoch, offset = divmod(done, plan.steps)
    batches = batches_from(done) if done < plan.epochs * plan.steps else None
    probe = None
    if batches is not None and place.replicas == 1 and place.is_chief:
        # a new iterator (the fit still sees every batch); a few samples, since the check runs
        # eagerly and unchunked: a whole GradCache-sized batch took 15 GiB at 16,384 images
        probe = keras.tree.map_structure(lambda t: t[:PROBE_SAMPLES],
                                         next(iter(batches.take(1)))[0])
    parts = _callbacks(model, run, plan, place, done, monitor, probe, verbose)
    parts.all.extend(levers)  # last: a lever may change what fit's end does, not what is saved
    started = time.perf_counter()
    progress = [RunProgbar(plan.epochs)] if keras_verbose(verbose) else []
    fit = dict(shuffle=False, verbose=keras_verbose(verbose), callbacks=parts.all + progress)
    try:  # released however fit ends: a second signal's KeyboardInterrupt skips on_train_end
        _fit_rest(model, batches, plan, place, parts, first_epoch, offset, fit, verbose)
    finally:
        parts.signals.release()
    _raise_if_stopped(parts, run, plan.advice)
    if getattr(model.optimizer, "use_ema", False):
        # fit's end swapped the average in after the last checkpoint: the checkpoint holds what
        # encoder.keras will (`eval --space projection` measures the run's model, not the raw weights)
        parts.checkpoint.set_model(model)
        parts.checkpoint.save()
    return FitResult(time.perf_counter() - started, parts.throughput.images_per_second)


def _fit_rest(model, batches, plan, place, parts, first_epoch, offset, fit, verbose):
    """`model.fit` over the steps left: the rest of an interrupted epoch, then the other epochs."""
    if batches is None:  # resumed after the last step (killed before the encoder was saved): end as
        model.optimizer.finalize_variable_values(model.trainable_weights)  # fit does (weight average)
        return
    if offset:  # finish the interrupted epoch, then the rest on the same stream
        left = plan.steps - offset
        if place.is_chief and verbose:  # Keras's bar counts only the steps left ("22/22")
            print(f"clzoo: resuming epoch {first_epoch + 1}/{plan.epochs} at step "
                  f"{offset}/{plan.steps}: {left} steps left in it", flush=True)
        model.fit(_fit_input(batches.take(left)), epochs=first_epoch + 1, initial_epoch=first_epoch,
                  steps_per_epoch=left, **fit)
        batches, first_epoch = batches.skip(left), first_epoch + 1
    if first_epoch < plan.epochs and not parts.stopped():
        model.fit(_fit_input(batches), epochs=plan.epochs, initial_epoch=first_epoch,
                  steps_per_epoch=plan.steps, **fit)


def _fit_input(batches):
    """What `model.fit` takes: a tf.data stream as it is, the device stream as its generator."""
    return batches if hasattr(batches, "element_spec") else iter(batches)


class RunProgbar(keras.callbacks.ProgbarLogger):
    """Keras' progress bar, numbering epochs out of the run's: a resumed run fits the rest of an
    epoch, then the others, and Keras' own bar said "Epoch 3/3" then "Epoch 4/4" of a 4-epoch run.
    An epoch stopped early (Ctrl-C, a NaN) ends its bar at the step reached: Keras' showed "78/78"
    for an epoch stopped at step 7."""

    def __init__(self, epochs):
        super().__init__()
        self.run_epochs = epochs

    def set_params(self, params):
        super().set_params(params)
        self.epochs = self.run_epochs

    def on_epoch_end(self, epoch, logs=None):
        if self.model.stop_training and self.target and self.seen < self.target:
            self.progbar.update(self.seen, list((logs or {}).items()), finalize=True)
            return
        super().on_epoch_end(epoch, logs)


@dataclass
class TrainingPlan:
    epochs: int
    steps: int
    batch_size: int
    checkpoint_every_steps: int = None
    log_every_steps: int = None
    advice: str = "Try a lower training.learning_rate."  # the NaN stop's (divergence_advice)


@dataclass
class _Callbacks:
    nan_guard: StopOnNaN
    signals: StopOnSignal
    checkpoint: AtomicCheckpoint
    throughput: Throughput
    all: list

    def stopped(self):
        return self.nan_guard.failed_at is not None or self.signals.received is not None


def _callbacks(model, run, plan, place, done, monitor, probe=None, verbose=1):
    chief = place.is_chief
    nan_guard, signals = StopOnNaN(), StopOnSignal()
    # Under collective saves every process saves (the save gathers arrays); only the chief keeps it.
    checkpoint = AtomicCheckpoint(run.checkpoint, nan_guard, every_steps=plan.checkpoint_every_steps,
                                  saving=lambda: portable_batch_norm(model),
                                  enabled=chief or place.collective_saves, throwaway=not chief,
                                  single_replica=place.replicas == 1, probe=probe)
    throughput = Throughput(plan.batch_size)
    history = JSONLinesHistory(run / "history.jsonl", enabled=chief)
    step_log = StepLog(run / "steps.jsonl", every=plan.log_every_steps or plan.steps,
                       enabled=chief)
    first_epoch, offset = divmod(done, plan.steps)
    history.truncate(first_epoch)
    step_log.truncate(done)
    # Order matters: the history line of an epoch is written before its checkpoint.
    forecast = Forecast(throughput, plan.epochs * plan.steps - done, plan.batch_size,
                        enabled=chief and verbose > 0)
    heartbeat = Heartbeat(plan.epochs, plan.batch_size,
                          enabled=chief and keras_verbose(verbose) == 2)  # off a terminal
    callbacks = [signals, nan_guard, throughput, forecast, heartbeat, step_log, history, checkpoint]
    if monitor is not None:
        callbacks.insert(3, monitor)
    if offset:
        progress = checkpoint_progress(run.checkpoint)
        callbacks.insert(0, RestoreEpochLoss(progress.get("epoch_loss_state"),
                                             progress.get("epoch_metric_state")))
    if chief:
        run.truncate_csv(first_epoch)
        callbacks += [HistoryCSV(run / "history.csv", run / "history.jsonl"), *_tensorboard(run, verbose)]
    return _Callbacks(nan_guard, signals, checkpoint, throughput, callbacks)


def _tensorboard(run, verbose):
    """Keras' TensorBoard callback (its writer is TensorFlow's); without TensorFlow, none, and a note."""
    from clzoo.data.device_stream import tensorflow_installed

    if tensorflow_installed():
        return [keras.callbacks.TensorBoard(str(run / "tensorboard"), update_freq="epoch",
                                            write_graph=False)]
    if verbose:
        print("note: no tensorboard/ logs (Keras' TensorBoard writer needs TensorFlow, not installed "
              "here); history.csv and history.jsonl hold the same curves")
    return []


def _raise_if_stopped(parts, run, advice):
    saved = parts.checkpoint.saved_step
    where = f"{run.checkpoint} (step {saved})" if saved is not None else "none (nothing was saved)"
    if parts.checkpoint.refused_step is not None:
        raise TrainingDiverged(
            f"Training stopped: the model's outputs on a probe batch are not finite at step "
            f"{parts.checkpoint.refused_step} (the loss still was). Last good checkpoint: {where}. "
            f"{advice}")
    if parts.nan_guard.failed_at is not None:
        epoch, batch, loss = parts.nan_guard.failed_at
        what = (f"the loss became {loss}" if parts.nan_guard.reason != "weights" else
                f"a weight became NaN or inf while the loss was still {loss} (NaN or inf in the "
                "input images, or a setting too large)")
        raise TrainingDiverged(
            f"Training stopped: {what} at epoch {epoch + 1}, batch {batch + 1}. "
            f"Last good checkpoint: {where}. {advice}")
    if parts.signals.received is not None:
        raise TrainingInterrupted(
            f"Training stopped by {parts.signals.received}. Checkpoint: {where}. Continue with "
            f"clzoo train --resume {run.path}", parts.signals.received, saved)
