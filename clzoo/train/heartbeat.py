"""A line at least every 30 s of training where Keras' live bar cannot show (a log file)."""

import time

import keras


class Heartbeat(keras.callbacks.Callback):
    """Off a terminal (a log file, a batch job), a line at least every `seconds` of an epoch: Keras
    prints one line per epoch there, and a 31-minute epoch printed nothing. The line gives the step,
    the epoch's running loss and the epoch's own rate (Keras' `images_per_second` is a mean since
    the start).

    Args:
        epochs: the run's epochs (for "epoch 3/40").
        batch_size: global images per step.
        seconds: the longest silence. Defaults to 30.
        enabled: False on a terminal, where the live bar moves, or when quiet.
        clock: seconds, monotonic (tests pass their own).
    """

    def __init__(self, epochs, batch_size, seconds=30, enabled=True, clock=time.monotonic):
        super().__init__()
        self.epochs, self.batch_size, self.seconds = epochs, batch_size, seconds
        self.enabled, self.clock = enabled, clock

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch, self._steps = epoch, 0
        self._start = self._last = self.clock()

    def on_train_batch_end(self, batch, logs=None):
        if not self.enabled:
            return
        self._steps += 1
        now = self.clock()
        if now - self._last < self.seconds:
            return
        from clzoo.eval.plan import rate_text

        self._last = now
        rate = self._steps * self.batch_size / max(now - self._start, 1e-9)
        loss = (logs or {}).get("loss")
        shown = f"loss {float(loss):.4f}, " if loss is not None else ""
        planned = (self.params or {}).get("steps")
        print(f"epoch {self._epoch + 1}/{self.epochs} step {batch + 1}"
              f"{f'/{planned}' if planned else ''}: {shown}{rate_text(rate)} images/s this epoch",
              flush=True)
