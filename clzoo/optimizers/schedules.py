"""Learning-rate schedules that Keras core lacks: airbench's linear warm-up then linear decay."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="clzoo")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear from `start_fraction` x peak to the peak over `warmup_steps`, then linear to
    `end_fraction` x peak at `total_steps` (and there after).

    airbench94 (Jordan 2024) warms up over 23% of the run from 0.2 x peak and
    decays to 0.07 x peak.

    Args:
        peak: the learning rate after warm-up (> 0).
        warmup_steps: int in `[0, total_steps)`.
        total_steps: int >= 1.
        start_fraction: learning rate at step 0 over the peak, >= 0. Defaults to `0.2`.
        end_fraction: learning rate at `total_steps` over the peak, >= 0. Defaults to `0.0`.

    Raises:
        ValueError: for the ranges above.

    Example:

    >>> import clzoo
    >>> schedule = clzoo.optimizers.WarmupLinearDecay(1.0, 2, 10, start_fraction=0.2)
    >>> [round(float(schedule(s)), 2) for s in (0, 1, 2, 6, 10)]
    [0.2, 0.6, 1.0, 0.5, 0.0]
    """

    def __init__(self, peak, warmup_steps, total_steps, start_fraction=0.2, end_fraction=0.0):
        for label, value in (("total_steps", total_steps), ("warmup_steps", warmup_steps)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"`{label}` must be an int. Received: {label}={value!r}")
        if total_steps < 1 or not 0 <= warmup_steps < total_steps:
            raise ValueError("Need total_steps >= 1 and 0 <= warmup_steps < total_steps. Received: "
                             f"warmup_steps={warmup_steps}, total_steps={total_steps}")
        if not peak > 0 or start_fraction < 0 or end_fraction < 0:
            raise ValueError("Need peak > 0, start_fraction >= 0 and end_fraction >= 0. Received: "
                             f"peak={peak}, start_fraction={start_fraction}, "
                             f"end_fraction={end_fraction}")
        self.peak, self.warmup_steps, self.total_steps = float(peak), warmup_steps, total_steps
        self.start_fraction, self.end_fraction = float(start_fraction), float(end_fraction)

    def __call__(self, step):
        step = ops.cast(step, "float32")
        warmup, total = float(self.warmup_steps), float(self.total_steps)
        rising = self.start_fraction + (1.0 - self.start_fraction) * step / max(warmup, 1.0)
        done = ops.minimum((step - warmup) / (total - warmup), 1.0)
        falling = 1.0 + (self.end_fraction - 1.0) * done
        return self.peak * ops.where(step < warmup, rising, falling)

    def get_config(self):
        return {"peak": self.peak, "warmup_steps": self.warmup_steps,
                "total_steps": self.total_steps, "start_fraction": self.start_fraction,
                "end_fraction": self.end_fraction}
