"""SGD with Nesterov momentum, a bias learning-rate multiplier and Lookahead: airbench's optimizer."""

import math

import keras
from keras import ops


def _number(label, value, low, high=None, low_open=False):
    bad = (isinstance(value, bool) or not isinstance(value, (int, float))
           or not math.isfinite(value))
    if not bad:
        bad = value <= low if low_open else value < low
        bad = bad or (high is not None and value >= high)
    if bad:
        bound = f"> {low}" if low_open else f">= {low}"
        raise ValueError(f"`{label}` must be a number {bound}{f' and < {high}' if high else ''}. "
                         f"Received: {label}={value!r}")
    return float(value)


def _is_offset(variable):
    """A batch-norm offset (Keras names it `beta`): the variables airbench trains faster."""
    return getattr(variable, "name", "").split(":")[0].split("/")[-1] == "beta"


@keras.saving.register_keras_serializable(package="clzoo")
class LookaheadSGD(keras.optimizers.Optimizer):
    """SGD (coupled weight decay, optionally Nesterov) whose weights are pulled to a slow copy.

    For every variable `w` with gradient `g`, at step `t` (1-based) of `total_steps`,
    with `m = bias_learning_rate_multiplier` and `k = offset_weight_decay_multiplier`
    for batch-norm offsets (variables named `beta`) and `m = k = 1` for the others:

        g <- g + (k * weight_decay / m) * w
        v <- momentum * v + g
        w <- w - m * learning_rate * (g + momentum * v)   (Nesterov; else w - m * lr * v)

    so with `k = 1` every variable decays at the same rate per step (airbench's
    `weight_decay / lr` per parameter group) while the offsets move `m` times
    faster; `k > 1` holds the offsets `k` times harder to zero (left free, they
    drift negative under SINCERE until few features stay on: benchmarks/README.md). Every
    `lookahead_every` steps (Zhang et al. 2019, with airbench's decay ramp):

        d = lookahead_alpha * (t / total_steps) ** 3
        slow <- d * slow + (1 - d) * w;   w <- slow

    and at the last step the weights become the slow copy (after that step's
    pull, when it is a Lookahead step). So Lookahead does little early and
    averages more as the learning rate falls, and training ends on the slow
    weights. Steps past `total_steps` (a `fit` continued beyond the run) keep training,
    with the pull at its full decay `lookahead_alpha`. Batch-norm moving statistics are
    not averaged (airbench averages them too): they follow the fast weights. Slow weights
    and velocities are optimizer variables, so a checkpoint resumes them.

    Args:
        learning_rate: float or `keras.optimizers.schedules.LearningRateSchedule`.
            Defaults to `0.1`.
        momentum: float in `[0, 1)`. Defaults to `0.9` (airbench94: 0.85).
        nesterov: Nesterov momentum. Defaults to `True`.
        weight_decay: coupled L2 coefficient. Defaults to `5e-4`.
        bias_learning_rate_multiplier: learning-rate factor of the batch-norm
            offsets (variables named `beta`; > 0). Defaults to `1.0` (airbench94: 64).
        offset_weight_decay_multiplier: float >= 0, the offsets' decay per step
            relative to the other weights' (`0`: the offsets do not decay).
            Defaults to `1.0` (airbench94).
        lookahead_every: steps between Lookahead updates, `0` for none.
            Defaults to `5` (airbench94).
        lookahead_alpha: the largest slow-weight decay, in `[0, 1)`.
            Defaults to `0.95 ** 5` (airbench94).
        total_steps: steps of the whole run (the decay ramp's length; >= 1).
            Required when `lookahead_every` > 0.
        **kwargs: `keras.optimizers.Optimizer` arguments (`clipnorm`, `name`, ...).

    Raises:
        ValueError: a momentum, decay or alpha out of range or not finite, a
            `bias_learning_rate_multiplier` <= 0, an `offset_weight_decay_multiplier` < 0,
            `lookahead_every` not an int >= 0, Lookahead without `total_steps`, or
            `lookahead_every` > `total_steps` (the run would end on its first weights).

    Example:

    >>> import keras, clzoo
    >>> model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    >>> model.compile(optimizer=clzoo.optimizers.LookaheadSGD(0.1, total_steps=100), loss="mse")
    >>> model.optimizer.lookahead_every
    5

    Reference:
    - [Zhang et al., Lookahead Optimizer: k steps forward, 1 step back, 2019](https://arxiv.org/abs/1907.08610)
    - [Jordan, 94% on CIFAR-10 in 3.29 Seconds on a Single GPU, 2024, sec. 3.4-3.5
      (bias learning rate, Lookahead)](https://arxiv.org/abs/2404.00498)
    """

    def __init__(self, learning_rate=0.1, momentum=0.9, nesterov=True, weight_decay=5e-4,
                 bias_learning_rate_multiplier=1.0, offset_weight_decay_multiplier=1.0,
                 lookahead_every=5, lookahead_alpha=0.95**5, total_steps=None,
                 name="lookahead_sgd", **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.momentum = _number("momentum", momentum, 0.0, 1.0)
        self.sgd_weight_decay = _number("weight_decay", weight_decay, 0.0)
        self.bias_learning_rate_multiplier = _number(
            "bias_learning_rate_multiplier", bias_learning_rate_multiplier, 0.0, low_open=True)
        self.offset_weight_decay_multiplier = _number(
            "offset_weight_decay_multiplier", offset_weight_decay_multiplier, 0.0)
        self.lookahead_alpha = _number("lookahead_alpha", lookahead_alpha, 0.0, 1.0)
        if isinstance(lookahead_every, bool) or not isinstance(lookahead_every, int) or lookahead_every < 0:
            raise ValueError("`lookahead_every` must be an int >= 0 (0: no Lookahead). "
                             f"Received: lookahead_every={lookahead_every!r}")
        if lookahead_every and (isinstance(total_steps, bool) or not isinstance(total_steps, int)
                                or total_steps < 1):
            raise ValueError("Lookahead needs `total_steps`, the run's steps (an int >= 1). "
                             f"Received: total_steps={total_steps!r}")
        if lookahead_every and lookahead_every > total_steps:  # no pull: training would end on
            raise ValueError(                                 # the slow copy, i.e. the first weights
                f"`lookahead_every` ({lookahead_every}) must be at most `total_steps` ({total_steps}): "
                "the run ends on the slow weights, which a run without a Lookahead step never updates. "
                "Lower it, or pass 0 for no Lookahead.")
        self.nesterov, self.lookahead_every, self.total_steps = bool(nesterov), lookahead_every, total_steps

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        self.velocities = [self.add_variable_from_reference(v, "velocity") for v in variables]
        self._offsets = [_is_offset(v) for v in variables]
        self.slow_weights = []
        if self.lookahead_every:
            # filled with the weights at the first step (an assign here would not run inside a
            # TensorFlow graph, where Keras builds the optimizer)
            self.slow_weights = [self.add_variable_from_reference(v, "slow") for v in variables]

    def update_step(self, gradient, variable, learning_rate):
        index = self._get_variable_index(variable)
        learning_rate = ops.cast(learning_rate, variable.dtype)
        offset = self._offsets[index]
        scale = self.bias_learning_rate_multiplier if offset else 1.0
        decay = self.sgd_weight_decay * (self.offset_weight_decay_multiplier if offset else 1.0)
        learning_rate = learning_rate * scale
        gradient = ops.cast(gradient, variable.dtype)
        if decay:
            gradient = gradient + (decay / scale) * variable
        velocity = self.velocities[index]
        self.assign(velocity, self.momentum * velocity + gradient)
        step = (gradient + self.momentum * velocity) if self.nesterov else velocity
        updated = variable - learning_rate * step
        if self.lookahead_every:
            updated = self._lookahead(self.slow_weights[index], variable, updated)
        self.assign(variable, updated)

    def _lookahead(self, slow, previous, fast):
        """The fast weights after this step's Lookahead (the slow copy updated alongside)."""
        dtype = previous.dtype
        slow_value = ops.where(ops.equal(self.iterations, 0), ops.convert_to_tensor(previous),
                               ops.convert_to_tensor(slow))
        t = ops.cast(self.iterations + 1, "float32")
        total = float(self.total_steps)
        last = ops.equal(t, total)  # past it (fit on beyond the run): Lookahead goes on at full decay
        pull = ops.equal(ops.mod(t, float(self.lookahead_every)), 0.0)
        sync = ops.logical_or(pull, last)
        # at the last step: that step's pull when it is one (then the copy changes nothing),
        # else the slow weights as they are (decay 1)
        ramp = self.lookahead_alpha * ops.power(ops.minimum(t / total, 1.0), 3)
        decay = ops.where(ops.logical_and(last, ops.logical_not(pull)), 1.0, ramp)
        decay = ops.cast(decay, dtype)
        pulled = decay * slow_value + (1.0 - decay) * fast
        self.assign(slow, ops.where(sync, pulled, slow_value))
        return ops.where(sync, pulled, fast)

    def get_config(self):
        config = super().get_config()
        config.update({
            "momentum": self.momentum, "nesterov": self.nesterov,
            "weight_decay": self.sgd_weight_decay,
            "bias_learning_rate_multiplier": self.bias_learning_rate_multiplier,
            "offset_weight_decay_multiplier": self.offset_weight_decay_multiplier,
            "lookahead_every": self.lookahead_every, "lookahead_alpha": self.lookahead_alpha,
            "total_steps": self.total_steps,
        })
        return config
