"""LARS: layer-wise adaptive rate scaling (You et al. 2017), as SimCLR and SupCon train with it."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="clzoo")
class LARS(keras.optimizers.Optimizer):
    """SGD with momentum whose step for each weight matrix is scaled by its trust ratio.

    For every variable `w` with gradient `g` (SimCLR's TensorFlow LARS, which
    SupCon's supplement sec. 10.1 trains with):

        g <- g + weight_decay * w                       (adapted variables only)
        trust = trust_coefficient * ||w|| / ||g||       (1 when either norm is 0)
        v <- momentum * v + learning_rate * trust * g
        w <- w - v

    Variables with fewer than two dimensions (biases, batch-norm scale and
    offset) are excluded from both the weight decay and the trust ratio
    (trust = 1), as in SimCLR.

    Args:
        learning_rate: float or `keras.optimizers.schedules.LearningRateSchedule`.
            SupCon: 0.5 at batch 1024 for CIFAR (supp. sec. 10.1); SimCLR
            scales it as `0.3 * batch_size / 256`. Defaults to `0.1`.
        momentum: float in `[0, 1)`. Defaults to `0.9`.
        weight_decay: L2 coefficient added to the gradient of adapted
            variables. Defaults to `1e-6` (SimCLR).
        trust_coefficient: eta of the trust ratio. Defaults to `0.001`.
        exclude_1d: leave 1-d variables un-adapted and un-decayed. Defaults to `True`.
        **kwargs: `keras.optimizers.Optimizer` arguments (`clipnorm`, `name`, ...).

    Raises:
        ValueError: for a momentum outside `[0, 1)` or a negative weight decay
            or trust coefficient.

    Example:

    >>> import keras, clzoo
    >>> model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    >>> model.compile(optimizer=clzoo.optimizers.LARS(0.1), loss="mse")
    >>> model.optimizer.trust_coefficient
    0.001
    """

    def __init__(self, learning_rate=0.1, momentum=0.9, weight_decay=1e-6, trust_coefficient=1e-3,
                 exclude_1d=True, name="lars", **kwargs):
        kwargs.pop("weight_decay", None)
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        for label, value, high in (("momentum", momentum, 1.0), ("weight_decay", weight_decay, None),
                                   ("trust_coefficient", trust_coefficient, None)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or (
                    high is not None and value >= high):
                raise ValueError(f"`{label}` must be a number >= 0{f' and < {high}' if high else ''}. "
                                 f"Received: {label}={value!r}")
        self.momentum = float(momentum)
        self.lars_weight_decay = float(weight_decay)
        self.trust_coefficient = float(trust_coefficient)
        self.exclude_1d = bool(exclude_1d)

    def build(self, variables):
        if self.built:
            return
        super().build(variables)
        self.velocities = [self.add_variable_from_reference(v, "velocity") for v in variables]

    def _adapted(self, variable):
        return not (self.exclude_1d and len(variable.shape) < 2)

    def update_step(self, gradient, variable, learning_rate):
        learning_rate = ops.cast(learning_rate, variable.dtype)
        gradient = ops.cast(gradient, variable.dtype)
        velocity = self.velocities[self._get_variable_index(variable)]
        if self._adapted(variable):
            if self.lars_weight_decay:
                gradient = gradient + self.lars_weight_decay * variable
            w_norm = ops.sqrt(ops.sum(ops.square(variable)))
            g_norm = ops.sqrt(ops.sum(ops.square(gradient)))
            usable = ops.logical_and(w_norm > 0, g_norm > 0)
            trust = ops.where(usable, self.trust_coefficient * w_norm
                              / ops.where(usable, g_norm, 1.0), 1.0)
            learning_rate = learning_rate * trust
        self.assign(velocity, self.momentum * velocity + learning_rate * gradient)
        self.assign_sub(variable, velocity)

    def get_config(self):
        config = super().get_config()
        config.update({"momentum": self.momentum, "weight_decay": self.lars_weight_decay,
                       "trust_coefficient": self.trust_coefficient, "exclude_1d": self.exclude_1d})
        return config
