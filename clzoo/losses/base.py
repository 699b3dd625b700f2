"""The loss classes' base: a keras-style wrapper deriving `call` and `get_config` from a function.

Every clzoo loss is a function twin (`sup_con_loss(y_true, y_pred, ...)`)
plus a thin `keras.losses.Loss` class. As keras' `LossFunctionWrapper` does,
the class stores the function's keyword arguments as same-named attributes
and derives `call` (the function on those attributes) and `get_config` (Keras'
config plus those attributes) from them, so a concrete loss class writes only
its signature, its docstring and one `super().__init__(**own_arguments(locals()))`
(the paragraphs the loss docstrings share come from `clzoo.losses.docstrings`).
The one hook is the class attribute `function`; `validate_options` (identity
by default) checks the loss's own arguments.
"""

import keras
from keras import ops

from clzoo.losses.fused.dispatch import validate_kernel
from clzoo.losses.learnable_temperature import LearnableTemperature
from clzoo.validation import checks as K
from clzoo.validation.arguments import validate_bool, validate_chunk_size, validate_temperature
from clzoo.validation.inputs import check_finite_embeddings, embedding_tensor
from clzoo.validation.sample_weights import reduce_per_sample, standardize_sample_weight

# The `LearnableTemperature` arguments a loss takes with temperature="learnable".
LEARNABLE_ARGUMENTS = ("temperature_init", "min_temperature", "max_temperature")


def own_arguments(local_variables):
    """The arguments of a loss `__init__`, from its `locals()`: all but `self` and `__class__`."""
    return {key: value for key, value in local_variables.items()
            if key not in ("self", "__class__")}


class FunctionLoss(keras.losses.Loss):
    """A `keras.losses.Loss` that applies its `function` with its stored keyword arguments.

    Subclasses set `function` (`function(y_true, y_pred, **options)` returning
    the per-sample loss `(batch,)`) and, where the options need checks,
    `validate_options(**options) -> dict`. Each option is stored as a
    same-named attribute, read again by `call` (so changing the attribute
    changes the loss) and added to `get_config`, so `from_config(get_config())`
    rebuilds the same loss.

    Args:
        reduction, name, dtype: as `keras.losses.Loss`.
        **options: the keyword arguments of `function`.
    """

    function = None

    def __init__(self, reduction="sum_over_batch_size", name=None, dtype=None, **options):
        super().__init__(name=name, reduction=reduction, dtype=dtype)
        self._option_names = ()
        if options:  # a subclass with arguments of its own to check first stores them itself
            self.store_options(options)

    @staticmethod
    def validate_options(**options):
        """The loss's own keyword arguments, checked (`ValueError` naming one); identity here."""
        return options

    def store_options(self, options):
        """Validate `options` and keep each as a same-named attribute."""
        self._option_names = tuple(options)
        for key, value in self.validate_options(**options).items():
            setattr(self, key, value)

    def options(self):
        """`{name: current value}` of the function's keyword arguments."""
        return {key: getattr(self, key) for key in self._option_names}

    def call(self, y_true, y_pred):
        return self.function(y_true, y_pred, **self.options())

    def get_config(self):
        config = super().get_config()
        config.update(self.options())
        return config


class ContrastiveLoss(FunctionLoss):
    """Base class of the embedding losses: validation, config and reduction.

    A subclass sets `function` to its function twin (which takes `temperature`,
    `normalize`, `chunk_size` and the loss's own keyword arguments) and writes
    an `__init__` that only passes its arguments on:
    `super().__init__(**own_arguments(locals()))`. `call` and `get_config`
    follow from them (`FunctionLoss`). Every embedding loss takes
    `chunk_size` and `check_values`.

    SupCon, SINCERE, epsilon-SupInfoNCE and InfoNCE also take `kernel`
    (`"auto"`: the fused Triton kernel on a CUDA device under the torch
    backend where it covers the options, `clzoo.losses.fused`).

    `chunk_size` (None, or anchors per block) computes the same loss and
    gradient blockwise: each block is recomputed in the backward pass with a
    hand-written gradient (`clzoo.losses.row_ops`), so a forward + backward pass holds
    about six `chunk_size x N` float32 buffers (`24 * chunk_size * N` bytes:
    3 GiB at 2048 x 65,536) instead of several `N x N` ones (`N = batch *
    views`), eager or compiled. It needs a static batch size (`ValueError`
    otherwise). With `label_similarity` (SupCon, SINCERE) the blocks take the
    same exact gradients but also hold the float32 label weights: 3.8 (JAX
    compiled) to 6.0 GiB (TensorFlow eager) at 2048 x 65,536 for SINCERE
    (`benchmarks/README.md`); halve `chunk_size` for the class-id footprint.

    Unlike `keras.losses.Loss`, labels reach `call` as given (Keras would
    cast them to float32, merging ids >= 2^24); they are validated by
    `standardize_labels`. `sample_weight` must be a scalar, `(batch,)` or
    `(batch, 1)`, finite and non-negative (`ValueError` naming it), inside
    `fit` / `evaluate` too (see `standardize_sample_weight`).

    Where a check cannot raise, the loss is NaN rather than a wrong number:
    TensorFlow's XLA (`jit_compile=True`) drops asserts. On JAX without
    `jax_enable_x64`, JAX itself wraps int64 ids outside int32 when a batch
    enters a jitted step, before any loss runs; `clzoo.models.ContrastiveModel`
    refuses such labels first (`ValueError`), a plain `keras.Model` cannot.

    `check_values=True` also refuses NaN / inf embeddings inside compiled
    steps (`fit`, `tf.function`, `jax.jit`). It is off by default because it
    costs a full pass over `y_pred` and, on JAX, a device-to-host callback
    per step; with it off, integer `(batch,)` labels and no `sample_weight`
    add no check at all to the step.

    `temperature="learnable"` makes the temperature a trained weight (CLIP,
    Radford et al. 2021, sec. 2.5): the loss owns a
    `clzoo.losses.LearnableTemperature` layer (`temperature_layer`, built from
    the keyword arguments `temperature_init=0.07`, `min_temperature=0.01`,
    `max_temperature=1.0`), which `clzoo.models.ContrastiveModel.compile`
    adopts as a sublayer, so `fit` trains it and `model.save` /
    `keras.saving.load_model` keep it. `temperature_value()` is the float
    or the current tensor. Not combinable with `chunk_size` (the blockwise
    recomputation does not carry the temperature's gradient).
    """

    def __init__(
        self,
        temperature=0.1,
        normalize=True,
        chunk_size=None,
        reduction="sum_over_batch_size",
        name=None,
        dtype=None,
        check_values=False,
        learnable=None,
        kernel=None,
        **options,
    ):
        super().__init__(name=name, reduction=reduction, dtype=dtype)
        self.normalize = validate_bool(normalize, "normalize")
        self.chunk_size = validate_chunk_size(chunk_size)
        self.check_values = validate_bool(check_values, "check_values")
        # None: the loss has no fused kernel (and no `kernel` argument).
        self.kernel = None if kernel is None else validate_kernel(kernel)
        self.temperature, self.temperature_layer = _temperature(temperature, self.chunk_size,
                                                                learnable or {})
        self.store_options(options)

    def temperature_value(self):
        """The temperature to divide logits by: a float, or the learnable layer's current tensor."""
        if self.temperature_layer is None:
            return self.temperature
        return self.temperature_layer.temperature()

    # Self-supervised losses set this to False and accept `y_true=None`.
    uses_labels = True
    # Keyword arguments taken through `**learnable` (recipes check them by name).
    extra_arguments = LEARNABLE_ARGUMENTS

    def __call__(self, y_true, y_pred, sample_weight=None, memory=None):
        """The reduced loss; `memory=(embeddings, labels, valid)` adds entries every anchor is also
        contrasted with (a MoCo queue: `clzoo.losses.memory_bank`), as the function twins take it."""
        with keras.name_scope(self.name):
            y_pred = embedding_tensor(y_pred, self.dtype)
            if y_true is None and self.uses_labels:
                raise ValueError(f"{type(self).__name__} needs class labels. Received: y_true=None")
            batch = y_pred.shape[0] if y_pred.shape[0] is not None else ops.shape(y_pred)[0]
            with K.collecting_checks() as checks:
                weight = standardize_sample_weight(sample_weight, batch)
                values = self.call(y_true, y_pred, memory=memory)
                if self.check_values:
                    check_finite_embeddings(y_pred)
            return reduce_per_sample(self, K.poison_unless_all(values, checks), weight)

    def call(self, y_true, y_pred, memory=None):
        kernel = {} if self.kernel is None else {"kernel": self.kernel}
        return self.function(y_true if self.uses_labels else None, y_pred,
                             temperature=self.temperature_value(), normalize=self.normalize,
                             chunk_size=self.chunk_size, memory=memory, **kernel, **self.options())

    def get_config(self):
        config = super().get_config()
        config.update({"temperature": self.temperature, "normalize": self.normalize,
                       "chunk_size": self.chunk_size, "check_values": self.check_values})
        if self.kernel is not None:
            config["kernel"] = self.kernel
        if self.temperature_layer is not None:
            config.update({key: getattr(self.temperature_layer, key) for key in LEARNABLE_ARGUMENTS})
        return config


def _temperature(temperature, chunk_size, learnable):
    """`(temperature, LearnableTemperature or None)` from the loss arguments; `ValueError` otherwise."""
    unknown = sorted(set(learnable) - set(LEARNABLE_ARGUMENTS))
    if unknown:
        raise TypeError(f"Unexpected keyword arguments: {unknown}")
    if not (isinstance(temperature, str) and temperature == "learnable"):
        if learnable:
            raise ValueError(f"{sorted(learnable)} apply only to temperature='learnable'. "
                             f"Received: temperature={temperature!r}")
        if isinstance(temperature, str):
            raise ValueError("`temperature` must be a positive, finite number or 'learnable'. "
                             f"Received: temperature={temperature!r}")
        return validate_temperature(temperature), None
    if chunk_size is not None:
        raise ValueError("temperature='learnable' cannot be combined with `chunk_size`. "
                         f"Received: chunk_size={chunk_size!r}")
    return "learnable", LearnableTemperature(**learnable, name="learnable_temperature")
