"""An exponential moving average of the weights (Polyak averaging), through Keras' optimizer EMA."""

from clzoo.train.levers.base import LEVERS, Lever
from clzoo.train.precision import inner_optimizer


@LEVERS.register("ema", description="exponential moving average of the trainable weights; the "
                 "run ends on the average (Polyak and Juditsky 1992; Keras' optimizer `use_ema`)")
class WeightAverage(Lever):
    """Keep an exponential moving average of the trainable weights and end the run on it.

    After every step, `average = momentum * average + (1 - momentum) * weights` (the
    first step copies the weights), kept by the optimizer (Keras' `use_ema`, so it is
    saved in the checkpoint and a resumed run continues it). The weights train as they
    would without the lever; once the last step of the run is done they are replaced by
    the average, so the saved encoder is the averaged one. The online kNN monitor reads
    the training weights. Batch-norm statistics are not averaged: they are those of the
    training weights (the average of recent steps is close to them at a high momentum).

    Args:
        momentum: float in `[0, 1)`, the average's decay per step (an average over about
            `1 / (1 - momentum)` steps). Defaults to `0.99`.
        total_steps: the run's steps (the runner fills it). Before it, `fit`'s own end
            (a signal, a NaN stop, a resumed epoch's first part) keeps the training
            weights. None: every `fit` ends on the average.

    Raises:
        ValueError: `momentum` outside `[0, 1)` or not a number; `configure` on an
            optimizer that is built without an average (a checkpoint of a run without
            this lever) or with another momentum.

    Example:

    >>> import numpy as np, keras
    >>> from clzoo.train.levers import build_levers
    >>> (lever,) = build_levers([{"name": "ema", "momentum": 0.5}], total_steps=2)
    >>> model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1, use_bias=False)])
    >>> optimizer = keras.optimizers.SGD(1.0)
    >>> lever.configure(optimizer)
    >>> model.compile(optimizer=optimizer, loss="mse")
    >>> _ = model.layers[0].kernel.assign([[0.0]])
    >>> _ = model.fit(np.ones((1, 1)), np.ones((1, 1)), epochs=2, verbose=0, callbacks=[lever])
    >>> float(model.layers[0].kernel.numpy()[0, 0])  # steps 2.0 then 0.0; average 0.5*2 + 0.5*0
    1.0
    """

    def __init__(self, momentum=0.99, total_steps=None):
        super().__init__()
        if isinstance(momentum, bool) or not isinstance(momentum, (int, float)) or not 0 <= momentum < 1:
            raise ValueError(f"ema momentum must be a number in [0, 1). Received: momentum={momentum!r}")
        self.momentum, self.total_steps = float(momentum), total_steps

    def configure(self, optimizer):
        if optimizer.built:  # a checkpoint's optimizer: the average must be there already
            if not optimizer.use_ema or abs(optimizer.ema_momentum - self.momentum) > 1e-12:
                raise ValueError(f"the checkpoint's optimizer has no weight average with momentum "
                                 f"{self.momentum} (use_ema={optimizer.use_ema}); resume with "
                                 "the recipe the run started with")
            return
        optimizer.use_ema, optimizer.ema_momentum = True, self.momentum

    def _finished(self):
        if self.total_steps is None:
            return True
        return int(self.model.optimizer.iterations.numpy()) >= self.total_steps

    def _averaging(self):
        """The optimizer that keeps the average: a LossScaleOptimizer's inner one (training.precision)."""
        return inner_optimizer(self.model.optimizer)

    def on_epoch_begin(self, epoch, logs=None):
        self._averaging().use_ema = True

    def on_epoch_end(self, epoch, logs=None):
        # Keras replaces the weights by the average when `fit` returns (after the epoch
        # loop, before `on_train_end` on TensorFlow); only the run's last step may.
        self._averaging().use_ema = self._finished()
