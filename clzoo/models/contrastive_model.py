"""Encoder + projection head applied to every view of a multi-view batch."""

import keras
from keras import ops

from clzoo.losses import distributed
from clzoo.models.fit_labels import check_labels
from clzoo.models.jax_step_guard import guard_jax_step
from clzoo.models.stream_fit import fit_device_stream, fit_tf_data_stream
from clzoo.parts import (
    FLAT_ARGUMENTS,
    PARTS,
    ModelPart,
    check_together,
    deserialize_part,
    part_name,
    sections_from_arguments,
    serialize_part,
)
from clzoo.parts.auxiliary import AIRBENCH_LOGIT_SCALE, AuxiliaryPart
from clzoo.parts.grad_cache import GradCacheStep
from clzoo.parts.queue import QueuePart


def model_parts(parts=(), **arguments):
    """The model's `ModelPart`s, in `PARTS` order (the order their layers are attached), checked
    together (`clzoo.parts.check_together`).

    Args:
        parts: `ModelPart`s, or `{"class_name": <PARTS name>, "config": {...}}` mappings (what
            `get_config` writes).
        **arguments: `ContrastiveModel`'s earlier flat arguments (`queue_size`, `momentum`,
            `encoder_chunk_size`, `auxiliary_*`: `clzoo.parts.FLAT_ARGUMENTS`), upgraded to parts.

    Returns:
        a tuple of `clzoo.parts.ModelPart`.

    Raises:
        ValueError: a part's own setting out of range, parts that do not run together, a part
            given both ways, an argument that names no part.

    Example:

    >>> from clzoo.models.contrastive_model import model_parts
    >>> from clzoo.parts.grad_cache import GradCacheStep
    >>> [type(part).__name__ for part in model_parts([GradCacheStep(8)], queue_size=64)]
    ['QueuePart', 'GradCacheStep']
    """
    unknown = sorted(set(arguments) - set(FLAT_ARGUMENTS))
    if unknown:
        raise TypeError(f"ContrastiveModel got an unexpected argument {unknown[0]!r}; its parts go in "
                        f"parts=[...] (clzoo.parts: {', '.join(PARTS)})")
    if isinstance(parts, (ModelPart, dict)) or not isinstance(parts, (list, tuple)):
        raise ValueError(f"`parts` must be a list of model parts. Received: parts={parts!r}")
    given = [deserialize_part(part) for part in parts]
    for name, settings in sections_from_arguments(arguments).items():
        try:
            given.append(PARTS.get(name)(**settings))
        except ValueError as error:
            spelled = ", ".join(f"{key}={value!r}" for key, value in arguments.items()
                                if FLAT_ARGUMENTS[key][0] == name)
            raise ValueError(f"ContrastiveModel({spelled}): {error}") from None
    order = {name: rank for rank, name in enumerate(PARTS)}
    given.sort(key=lambda part: order.get(part_name(part), len(order)))
    check_together(given)
    return tuple(given)


# what keras.Model's constructor takes besides a subclass's own arguments
_KERAS_ARGUMENTS = ("name", "dtype", "trainable", "autocast", "input_dim", "input_shape")


def nan_unless_finite(loss, x):
    """`loss`, or NaN when the float images `x` hold NaN or inf (one pass over the batch).

    In a TensorFlow graph the fused conv + bias + ReLU maps NaN to 0, so NaN
    images can give a finite loss while their gradients turn the weights NaN:
    the loss must say so itself.
    """
    dtype = getattr(x, "dtype", None)
    if dtype is None or not keras.backend.is_float_dtype(keras.backend.standardize_dtype(dtype)):
        return loss
    return ops.where(ops.all(ops.isfinite(x)), loss, float("nan"))


def _check_multi_view(shape):
    """Refuse what is not a multi-view batch `(batch, views, H, W, C)` (a single view included)."""
    try:
        dims = tuple(shape)
    except (TypeError, ValueError):  # a TensorFlow shape of unknown rank
        dims = None
    if dims is None or len(dims) != 5:
        hint = (" A single view (batch, H, W, C): stack views with clzoo.data.batches(..., \"views\") "
                "or add one with images[:, None]." if dims is not None and len(dims) == 4 else "")
        raise ValueError("ContrastiveModel expects a multi-view batch of shape (batch, views, H, W, C). "
                         f"Received: shape={dims}.{hint}")


def _check_embedding_rank(features, embeddings, inputs):
    """Refuse per-image outputs other than `(images, dim)`: the unfold to `(batch, views, dim)`
    would otherwise spread the extra axes over the batch, and the loss would blame the labels."""
    if len(features) == 2 and len(embeddings) == 2:
        return
    batch, views = inputs[0], inputs[1]
    y_pred = (batch, views) + tuple(embeddings[1:])
    raise ValueError(
        "ContrastiveModel's embeddings `y_pred` must have shape (batch, views, dim), so the encoder "
        f"and projection head must map each image to a vector. Received: encoder output shape "
        f"{tuple(features)} and projection head output shape {tuple(embeddings)} over the "
        f"images, i.e. y_pred.shape={y_pred} for inputs of shape {tuple(inputs)}; end the encoder "
        "with global pooling (keras.layers.GlobalAveragePooling2D) or Flatten")


def _portable(config):
    """`config` with Keras' backend-specific optimizer classes (the torch backend saves
    `keras.src.backend.torch.optimizers.torch_sgd.SGD`) named by their public module: loading
    then builds this backend's class and never imports another backend (on TensorFlow, importing
    torch loads Triton, whose LLVM aborts a process that loaded TensorFlow's)."""
    if isinstance(config, dict):
        config = {key: _portable(value) for key, value in config.items()}
        if str(config.get("module", "")).startswith("keras.src.backend.") \
                and ".optimizers" in str(config["module"]):
            config["module"] = "keras.optimizers"
        return config
    if isinstance(config, list):
        return [_portable(value) for value in config]
    return config


@keras.saving.register_keras_serializable(package="clzoo")
class ContrastiveModel(keras.Model):
    """Multi-view contrastive model: `(batch, views, H, W, C) -> (batch, views, dim)`.

    Views are folded into the batch axis, so batch norm sees every view of
    the batch at once (as the SupCon reference code does by concatenating
    views), then encoded, projected and unfolded. `model.encoder` is the
    network to keep for transfer; the head is dropped after training.

    `parts` are the model's optional training parts (`clzoo.parts`, each a
    `ModelPart` registered in `clzoo.parts.PARTS`): `build`, `call`, `fit`,
    `train_step`, `compute_loss` and `compile` call every part's hooks, so the
    model never branches on which parts it has.

    Args:
        encoder: `keras.Model` mapping `(batch, H, W, C)` images to
            `(batch, features)`.
        projection_head: layer mapping `(batch, features)` to `(batch, dim)`.
        parts: list of `clzoo.parts.ModelPart`s, or their
            `{"class_name": <PARTS name>, "config": {...}}` mappings (what
            `get_config` writes): `QueuePart(size, momentum)` (MoCo's queue
            and key encoder, `clzoo.parts.queue`), `GradCacheStep(chunk_size)`
            (GradCache, `clzoo.parts.grad_cache`), `AuxiliaryPart(classes,
            weight, label_smoothing, logit_scale)` (airbench94's classifier,
            its loss added, `clzoo.parts.auxiliary`), `OnlineLinearProbe(classes)`
            (a linear probe on stop-gradient features, its top-1 logged,
            `clzoo.parts.online_probe`). Attached in `PARTS` order whatever
            the list's. Defaults to none.
        learnable_temperature: None or a `clzoo.losses.LearnableTemperature`
            the model owns (weight trained by `fit`, saved with the model).
            A loss compiled with `temperature="learnable"` reads this layer;
            when the model has none, `compile` adopts the loss's own layer
            (which needs the model not yet built). Defaults to `None`.
        **kwargs: Keras' (`name`, ...), and the earlier flat arguments, which
            build the same parts (`clzoo.parts.FLAT_ARGUMENTS`): `queue_size=K`,
            `momentum=m`, `encoder_chunk_size=M`, `auxiliary_classes=C`,
            `auxiliary_weight`, `auxiliary_label_smoothing`,
            `auxiliary_logit_scale`; saved models of earlier versions load
            through them.

    Raises:
        ValueError: a part's setting out of range (see each part), parts that
            do not run together (`ModelPart.refuse`: the auxiliary classifier
            or the online probe with GradCache), `momentum` without
            `queue_size`; `queue_size` with a projection head that has no
            `output_dim`. In `fit` with GradCache: `x` that is not one
            `(batch, views, H, W, C)` tensor, or a TensorFlow batch size
            unknown when the step is traced.
        TypeError: an argument that is neither Keras' nor a flat part argument.

    Example:

    >>> import numpy as np, clzoo
    >>> model = clzoo.models.ContrastiveModel(
    ...     clzoo.models.cifar_resnet("resnet20"),
    ...     clzoo.models.ProjectionHead(hidden_dims=(64,), output_dim=16))
    >>> tuple(model(np.zeros((2, 2, 32, 32, 3), "float32")).shape)
    (2, 2, 16)

    GradCache on a batch of 8 samples x 2 views, 4 images per sub-batch
    (a dataset batched with `drop_remainder=True`, so the batch size is
    static on TensorFlow too):

    >>> import tensorflow as tf
    >>> model = clzoo.models.ContrastiveModel(
    ...     clzoo.models.cifar_resnet("resnet20"),
    ...     clzoo.models.ProjectionHead(hidden_dims=(64,), output_dim=16),
    ...     parts=[clzoo.parts.GradCacheStep(chunk_size=4)])
    >>> model.compile(optimizer="sgd", loss=clzoo.losses.SupConLoss())
    >>> data = tf.data.Dataset.from_tensor_slices(
    ...     (np.random.rand(8, 2, 32, 32, 3).astype("float32"), np.arange(8) % 2))
    >>> history = model.fit(data.batch(8, drop_remainder=True), verbose=0)
    >>> len(history.history["loss"])
    1

    Reference:
    - [Khosla et al., Supervised Contrastive Learning, 2020, sec. 3.1
      (encoder + projection network) and 3.2 (multiviewed batch)](https://arxiv.org/abs/2004.11362)
    - [He et al., Momentum Contrast (MoCo), 2020, sec. 3.2 (queue and
      momentum key encoder)](https://arxiv.org/abs/1911.05722)
    - [Gao et al., Scaling Deep Contrastive Learning Batch Size under Memory
      Limited Setup, 2021 (GradCache)](https://arxiv.org/abs/2101.06983)
    """

    def __init__(self, encoder, projection_head, parts=(), learnable_temperature=None, **kwargs):
        flat = {key: kwargs.pop(key) for key in FLAT_ARGUMENTS if key in kwargs}
        unknown = {key: kwargs.pop(key) for key in list(kwargs) if key not in _KERAS_ARGUMENTS}
        super().__init__(**kwargs)
        self.parts = model_parts(parts, **flat, **unknown)
        self.memory_queue = self.momentum_encoder = self.auxiliary_classifier = None
        for part in self.parts:
            if part.attach_first:
                part.attach(self)
        self.encoder = encoder
        self.projection_head = projection_head
        for part in self.parts:
            if not part.attach_first:
                part.attach(self)
        if learnable_temperature is not None:
            self.learnable_temperature = learnable_temperature

    def part(self, name):
        """The model's part registered as `name` (`clzoo.parts.PARTS`), or None."""
        return next((part for part in self.parts if part_name(part) == name), None)

    def _output_parts(self):
        """The parts whose training output follows the embeddings in `call`, in that order."""
        return [part for part in self.parts if part.makes_outputs]

    def _setting(self, kind, name, default=None):
        part = next((part for part in self.parts if isinstance(part, kind)), None)
        return default if part is None else getattr(part, name)

    @property
    def momentum(self):
        """The key encoder's EMA coefficient (validated by `MomentumEncoder`), or None without one."""
        return None if self.momentum_encoder is None else self.momentum_encoder.momentum

    queue_size = property(lambda self: self._setting(QueuePart, "size"), doc="The queue's size K, or None.")
    auxiliary_classes = property(lambda self: self._setting(AuxiliaryPart, "classes"),
                                 doc="The auxiliary classifier's classes C, or None.")
    # the defaults when the classifier is off
    auxiliary_weight = property(lambda self: self._setting(AuxiliaryPart, "weight", 1.0))
    auxiliary_label_smoothing = property(lambda self: self._setting(AuxiliaryPart, "label_smoothing", 0.2))
    auxiliary_logit_scale = property(
        lambda self: self._setting(AuxiliaryPart, "logit_scale", AIRBENCH_LOGIT_SCALE))

    @property
    def encoder_chunk_size(self):
        """GradCache's images per sub-batch M, or None; settable between `fit`s (a step strategy
        holds no weights; the next `fit` traces its step anew)."""
        return self._setting(GradCacheStep, "chunk_size")

    @encoder_chunk_size.setter
    def encoder_chunk_size(self, chunk_size):
        step = () if chunk_size is None else (GradCacheStep(chunk_size),)
        parts = tuple(part for part in self.parts if not isinstance(part, GradCacheStep)) + step
        check_together(parts)
        self.parts = parts
        # Keras keeps the traced train function of the last fit (TensorFlow, JAX): it holds the old step
        self.train_function = None

    def build(self, input_shape):
        """Build the encoder and the head for multi-view inputs `(batch, views, H, W, C)`."""
        _check_multi_view(input_shape)
        folded = (None,) + tuple(input_shape[2:])
        if not self.encoder.built:
            self.encoder.build(folded)
        if not self.projection_head.built:
            features = self.encoder.compute_output_shape(folded)
            if len(features) != 2:
                _check_embedding_rank(features, self.projection_head.compute_output_shape(features),
                                      input_shape)
            self.projection_head.build(features)
        for part in self.parts:
            part.build(self, self.encoder.compute_output_shape(folded))

    def call(self, inputs, training=None):
        _check_multi_view(inputs.shape)
        views = inputs.shape[1]
        folded = ops.reshape(inputs, (-1,) + tuple(inputs.shape[2:]))
        features = self.encoder(folded, training=training)
        embeddings = self.projection_head(features, training=training)
        _check_embedding_rank(features.shape, embeddings.shape, inputs.shape)
        embeddings = ops.reshape(embeddings, (-1, views, embeddings.shape[-1]))
        if not training:
            return embeddings
        extra = tuple(part.outputs(self, features) for part in self._output_parts())
        return (embeddings, *extra) if extra else embeddings  # the extra outputs: compute_loss's

    def fit(self, x=None, y=None, *args, shuffle=None, **kwargs):
        """Keras' `fit`; `shuffle` defaults to True for arrays and False for datasets.

        clzoo's pipeline (`clzoo.data.batches`) shuffles itself, and Keras
        ignores `shuffle` for a `tf.data.Dataset` or generator with a
        warning; so it is only passed on where it applies.
        String, ragged or complex labels are refused first, not deep inside
        Keras' data adapters. Every other argument is `keras.Model.fit`'s.

        A `clzoo.data.device_batches` stream is taken as it is: its generator,
        with `steps_per_epoch` its epochs' length unless given. A
        `clzoo.data.batches` stream (all of a run's epochs in one dataset) fitted
        for several epochs takes one of its epochs per fit epoch too (Keras would
        run the whole stream in the first and replay it after).

        Raises:
            ValueError: labels `y` that are not integer class ids or label rows
                (naming the expected shape and dtype); a clzoo stream shorter than
                the steps `fit` asks for; and as `keras.Model.fit`.
        """
        check_labels(x, y, "fit")
        for part in self.parts:
            part.check_labels(y)
        if shuffle is None:
            shuffle = isinstance(x, (list, tuple, dict)) or hasattr(x, "shape")
        stream = getattr(x, "clzoo_stream", None)  # a clzoo training stream (`clzoo.data.streams`)
        if not args and isinstance(stream, dict) and stream.get("generator"):
            x = fit_device_stream(x, kwargs)
        elif not args and isinstance(stream, dict):
            fit_tf_data_stream(stream, kwargs)
        history = super().fit(x, y, *args, shuffle=shuffle, **kwargs)
        seen = getattr(self, "_step_input_shape", None)
        if not self.built and seen is not None:
            # GradCache's step calls the encoder and head, never the model, so Keras never built
            # it, and a saved model reloaded without its optimizer state
            self.build((None, *seen[1:]))
        return history

    def evaluate(self, x=None, y=None, *args, **kwargs):
        """`keras.Model.evaluate`, with the label check of `fit`."""
        check_labels(x, y, "evaluate")
        return super().evaluate(x, y, *args, **kwargs)

    def train_step(self, *args):
        """Keras' training step, or a part's in its place (GradCache's, `clzoo.parts.grad_cache`,
        with `encoder_chunk_size`)."""
        for part in self.parts:
            logs = part.train_step(self, *args)
            if logs is not None:
                return logs
        return super().train_step(*args)

    def make_train_function(self, force=False):
        """Keras' train function; on JAX and torch, see `jax_step_guard.guard_jax_step`."""
        super().make_train_function(force)
        self.train_function = guard_jax_step(self, self.train_function, self.parts)

    def get_metrics_result(self):
        """Keras' metric results (the step's and epoch's logs); across `torch.distributed`
        processes, their mean over the processes: the global batch's, as one process logs it."""
        results = super().get_metrics_result()
        processes = distributed.replica_context() if keras.backend.backend() == "torch" else None
        return results if processes is None else processes.mean_logs(results)

    def make_test_function(self, force=False):
        """Keras' test function, with the same label guard as `make_train_function`."""
        super().make_test_function(force)
        self.test_function = guard_jax_step(self, self.test_function)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """Keras' loss; with a queue and `training`, over batch + queue, then the batch's keys enqueued.

        Keys are the momentum encoder's embeddings of `x` (after its momentum
        update) or, without one, `y_pred` itself (no gradient). See
        `clzoo.parts.queue.contrast_with_queue`.

        With `auxiliary_classes`, `y_pred` is `(embeddings, logits)` in training and the
        weighted cross-entropy is added.

        The loss is NaN when `x` holds NaN or inf (see `nan_unless_finite`).
        """
        extra = ()
        if isinstance(y_pred, (tuple, list)):
            y_pred, *extra = y_pred
        steps = (part.batch_loss(self, x, y, y_pred, sample_weight) for part in self.parts)
        loss = next((loss for loss in steps if loss is not None), None) if training else None
        if loss is None:
            loss = super().compute_loss(x, y, y_pred, sample_weight, training=training)
        for part, output in zip(self._output_parts(), extra):
            loss = loss + part.added_loss(self, x, y, output, sample_weight)
        return nan_unless_finite(loss, x)

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        """Keras' metrics; outside training (`evaluate`: `y_pred` the embeddings alone) without
        the metrics a part updates only in training (the online probe's), not reported as 0."""
        logs = super().compute_metrics(x, y, y_pred, sample_weight)
        if isinstance(y_pred, (tuple, list)):
            return logs
        trained_only = {metric.name for part in self.parts for metric in part.metrics(self)}
        return {key: value for key, value in logs.items() if key not in trained_only}

    def key_embeddings(self, inputs):
        """The momentum encoder's `(batch, views, dim)` keys of a multi-view batch (no gradient)."""
        views = inputs.shape[1]
        folded = ops.reshape(inputs, (-1,) + tuple(inputs.shape[2:]))
        keys = self.momentum_encoder.apply([self.encoder, self.projection_head], folded)
        return ops.reshape(keys, (-1, views, keys.shape[-1]))

    def compile(self, *args, **kwargs):
        """`keras.Model.compile`, binding a loss with `temperature="learnable"` to the model's
        `learnable_temperature` layer (adopting the loss's layer if the model has none), so the
        temperature is trained by `fit` and saved with the model (CLIP, Radford et al. 2021).

        Raises:
            ValueError: for a learnable-temperature loss when the model is already built and
                owns no `learnable_temperature` (Keras adds no weights to a built model); for
                `loss_weights` with a queue (its step calls the loss itself, with the queue).
        """
        loss = kwargs.get("loss", args[1] if len(args) > 1 else None)
        loss_weights = kwargs.get("loss_weights", args[2] if len(args) > 2 else None)
        for part in self.parts:
            part.check_compile(loss_weights)
        layer = getattr(loss, "temperature_layer", None)
        if layer is not None:
            own = getattr(self, "learnable_temperature", None)
            if own is not None:
                loss.temperature_layer = own
            elif self.built:
                raise ValueError(
                    "A loss with temperature='learnable' needs the model's learnable_temperature "
                    "layer, and a built model takes no new weights: compile before building, or "
                    "pass learnable_temperature=loss.temperature_layer to ContrastiveModel. "
                    f"Received: a built {type(self).__name__} without learnable_temperature")
            else:
                self.learnable_temperature = layer
        super().compile(*args, **kwargs)

    def compile_from_config(self, config):
        """Recompile a loaded model (Keras skips this for a custom `compile`; ours only adds the
        learnable temperature, so the saved compile config applies as it is), save that a saved
        `jit_compile=True` is turned off where this backend's "auto" would not compile: a JAX
        checkpoint loaded on torch would `torch.compile` its next `fit`
        (`clzoo.compat.jit_compile_for_this_backend`; set `model.jit_compile = True` to keep it)."""
        from clzoo.compat import jit_compile_for_this_backend

        self.compile(**keras.saving.deserialize_keras_object(_portable(config)))
        jit_compile_for_this_backend(self)
        if getattr(self, "optimizer", None) is not None and self.built:
            self.optimizer.build(self.trainable_variables)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[1], self.projection_head.output_dim)

    def get_config(self):
        config = super().get_config()
        config.update({
            "encoder": keras.saving.serialize_keras_object(self.encoder),
            "projection_head": keras.saving.serialize_keras_object(
                self.projection_head),
            "parts": [serialize_part(part) for part in self.parts],
        })
        layer = getattr(self, "learnable_temperature", None)
        if layer is not None:
            config["learnable_temperature"] = keras.saving.serialize_keras_object(layer)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        config["projection_head"] = keras.saving.deserialize_keras_object(
            config["projection_head"])
        if config.get("learnable_temperature") is not None:
            config["learnable_temperature"] = keras.saving.deserialize_keras_object(
                config["learnable_temperature"])
        return cls(**config)
