"""Encoder + projection head applied to every view of a multi-view batch."""

import keras
from keras import ops

from clzoo.models.auxiliary_classifier import AIRBENCH_LOGIT_SCALE, AuxiliaryPart
from clzoo.steps.fit_labels import check_labels
from clzoo.steps.grad_cache import GradCacheStep
from clzoo.steps.jax_step_guard import guard_jax_step
from clzoo.steps.parts import check_parts
from clzoo.steps.queue_step import QueuePart


def model_parts(queue_size=None, momentum=None, encoder_chunk_size=None, auxiliary_classes=None,
                auxiliary=(1.0, 0.2, AIRBENCH_LOGIT_SCALE)):
    """The parts `ContrastiveModel`'s arguments ask for, each checked by its own class and the
    rules between them by `check_parts`: a `QueuePart`, a `GradCacheStep`, an `AuxiliaryPart`.

    Args:
        queue_size, momentum, encoder_chunk_size, auxiliary_classes: as `ContrastiveModel`.
        auxiliary: `(weight, label_smoothing, logit_scale)` of the auxiliary classifier.

    Returns:
        a tuple of `clzoo.steps.parts.ModelPart`, in that order, without those not asked for.

    Raises:
        ValueError: a part's own setting out of range (the argument named), or parts that do
            not combine (`check_parts`).

    Example:

    >>> from clzoo.models.contrastive_model import model_parts
    >>> [type(part).__name__ for part in model_parts(queue_size=64, encoder_chunk_size=8)]
    ['QueuePart', 'GradCacheStep']
    """
    classifier = None if auxiliary_classes is None else AuxiliaryPart(auxiliary_classes, *auxiliary)
    check_parts(queue_size, momentum, encoder_chunk_size, classifier is not None)
    parts = (None if queue_size is None else QueuePart(queue_size, momentum),
             None if encoder_chunk_size is None else GradCacheStep(encoder_chunk_size), classifier)
    return tuple(part for part in parts if part is not None)


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

    The optional arguments build the model's parts (`model.parts`, see
    `model_parts`): the queue (`clzoo.steps.queue_step.QueuePart`), GradCache's
    step (`clzoo.steps.grad_cache.GradCacheStep`) and the auxiliary classifier
    (`clzoo.models.auxiliary_classifier.AuxiliaryPart`). Each checks its own
    settings; `build`, `call`, `fit`, `train_step`, `compute_loss` and
    `compile` call every part's hooks (`clzoo.steps.parts.ModelPart`).

    Args:
        encoder: `keras.Model` mapping `(batch, H, W, C)` images to
            `(batch, features)`.
        projection_head: layer mapping `(batch, features)` to `(batch, dim)`.
        queue_size: None, or K: keep the last K key embeddings and labels
            (`MemoryQueue`) and, in `fit`, contrast each anchor against
            batch + queue (the loss's `memory` argument: queue entries are
            positives or noise by label, never anchors, no gradient). Needs
            an embedding loss. `evaluate` uses the batch only. Defaults to
            `None`.
        momentum: None, or MoCo's EMA coefficient in `[0, 1)`: keys come
            from a momentum copy of encoder + head (`MomentumEncoder`);
            None enqueues the model's own embeddings (cross-batch memory).
            Needs `queue_size`. Defaults to `None`.
        learnable_temperature: None or a `clzoo.losses.LearnableTemperature`
            the model owns (weight trained by `fit`, saved with the model).
            A loss compiled with `temperature="learnable"` reads this layer;
            when the model has none, `compile` adopts the loss's own layer
            (which needs the model not yet built). Defaults to `None`.
        encoder_chunk_size: None, or M: GradCache (Gao et al. 2021) in
            `fit`: embed the batch's `batch * views` images in sub-batches
            of M images without keeping activations, take the loss and its
            gradient with respect to the `(batch, views, dim)` embeddings,
            then re-run each sub-batch with gradients and back-propagate its
            cached embedding gradients (`clzoo.steps.grad_cache`). Peak
            activation memory is that of M images instead of the batch, for
            one extra forward pass. Weight gradients equal the full-batch
            ones when nothing in encoder or head depends on the sub-batch:
            batch norm in training mode does, as each sub-batch is then
            normalized with its own statistics and the moving statistics
            are updated once per sub-batch (ghost batch norm with M images);
            use a GroupNorm / LayerNorm encoder, batch norm in inference
            mode (`trainable=False`), or M equal to the batch for
            full-batch statistics. With `momentum`, the key encoder still
            embeds the whole batch at once (forward only, no activations
            kept). On TensorFlow the batch size must be static (a dataset
            batched with `drop_remainder=True`). `evaluate` and `predict`
            are unchanged. Defaults to `None`.
        auxiliary_classes: None, or C: a linear classifier on the encoder's
            features (`auxiliary_classifier`, C logits, airbench94's: no
            bias, logits times `auxiliary_logit_scale`) trained beside the
            contrastive loss with label-smoothed cross-entropy on every view
            (`clzoo.models.auxiliary_classifier`): `fit` minimises
            `contrastive + auxiliary_weight * CE`; labels must be one class id
            per sample. `evaluate` reports the contrastive loss alone.
            Defaults to `None`.
        auxiliary_weight: the cross-entropy's weight. Defaults to `1.0`.
        auxiliary_label_smoothing: Defaults to `0.2` (airbench94's).
        auxiliary_logit_scale: the fixed factor on the classifier's logits.
            Defaults to `1 / 9` (airbench94's).

    Raises:
        ValueError: `queue_size` or `encoder_chunk_size` not None or a
            positive integer; `momentum` without `queue_size` or outside
            `[0, 1)`; `queue_size` with a projection head that has no
            `output_dim`; `auxiliary_*` out of range (see
            `auxiliary_classifier.check_auxiliary`) or with `encoder_chunk_size`.
            In `fit` with `encoder_chunk_size`: `x` that is not one
            `(batch, views, H, W, C)` tensor, or a TensorFlow batch size
            unknown when the step is traced.

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
    ...     encoder_chunk_size=4)
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

    def __init__(self, encoder, projection_head, queue_size=None, momentum=None,
                 learnable_temperature=None, encoder_chunk_size=None, auxiliary_classes=None,
                 auxiliary_weight=1.0, auxiliary_label_smoothing=0.2,
                 auxiliary_logit_scale=AIRBENCH_LOGIT_SCALE, **kwargs):
        super().__init__(**kwargs)
        self._auxiliary_given = (auxiliary_weight, auxiliary_label_smoothing, auxiliary_logit_scale)
        self.parts = model_parts(queue_size, momentum, encoder_chunk_size, auxiliary_classes,
                                 self._auxiliary_given)
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
    # as given (unchecked) when the classifier is off
    auxiliary_weight = property(lambda self: self._setting(AuxiliaryPart, "weight", self._auxiliary_given[0]))
    auxiliary_label_smoothing = property(
        lambda self: self._setting(AuxiliaryPart, "label_smoothing", self._auxiliary_given[1]))
    auxiliary_logit_scale = property(
        lambda self: self._setting(AuxiliaryPart, "logit_scale", self._auxiliary_given[2]))

    @property
    def encoder_chunk_size(self):
        """GradCache's images per sub-batch M, or None; settable between `fit`s (a step strategy
        holds no weights; the next `fit` traces its step anew)."""
        return self._setting(GradCacheStep, "chunk_size")

    @encoder_chunk_size.setter
    def encoder_chunk_size(self, chunk_size):
        check_parts(self.queue_size, self.momentum, chunk_size, self.auxiliary_classifier is not None)
        step = () if chunk_size is None else (GradCacheStep(chunk_size),)
        self.parts = tuple(part for part in self.parts if not isinstance(part, GradCacheStep)) + step
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
            x = _fit_device_stream(x, kwargs)
        elif not args and isinstance(stream, dict):
            _fit_tf_data_stream(stream, kwargs)
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
        """Keras' training step, or a part's in its place (GradCache's, `clzoo.steps.grad_cache`,
        with `encoder_chunk_size`)."""
        for part in self.parts:
            logs = part.train_step(self, *args)
            if logs is not None:
                return logs
        return super().train_step(*args)

    def make_train_function(self, force=False):
        """Keras' train function; on JAX, see `jax_step_guard.guard_jax_step`."""
        super().make_train_function(force)
        self.train_function = guard_jax_step(self, self.train_function)

    def make_test_function(self, force=False):
        """Keras' test function, with the same label guard as `make_train_function`."""
        super().make_test_function(force)
        self.test_function = guard_jax_step(self, self.test_function)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """Keras' loss; with a queue and `training`, over batch + queue, then the batch's keys enqueued.

        Keys are the momentum encoder's embeddings of `x` (after its momentum
        update) or, without one, `y_pred` itself (no gradient). See
        `clzoo.steps.queue_step.contrast_with_queue`.

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
        learnable temperature, so the saved compile config applies as it is)."""
        self.compile(**keras.saving.deserialize_keras_object(_portable(config)))
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
            "queue_size": self.queue_size,
            "momentum": self.momentum,
            "encoder_chunk_size": self.encoder_chunk_size,
        })
        if self.auxiliary_classifier is not None:
            config.update(auxiliary_classes=self.auxiliary_classes,
                          auxiliary_weight=self.auxiliary_weight,
                          auxiliary_label_smoothing=self.auxiliary_label_smoothing,
                          auxiliary_logit_scale=self.auxiliary_logit_scale)
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


def _fit_tf_data_stream(stream, kwargs):
    """`steps_per_epoch` for a `clzoo.data.batches` stream fitted for several epochs; a fit
    longer than the stream refused with the `epochs` to build it with."""
    epochs = kwargs.get("epochs", 1) - kwargs.get("initial_epoch", 0)
    if kwargs.get("steps_per_epoch") is None and epochs > 1:
        kwargs["steps_per_epoch"] = stream["steps_per_epoch"]
    steps = kwargs.get("steps_per_epoch")
    if steps is not None and epochs * steps > stream["batches"]:
        needed = -(-(stream["start_step"] + epochs * steps) // stream["steps_per_epoch"])
        raise ValueError(f"fit asks for {epochs * steps} steps ({epochs} epochs of {steps}) but the "
                         f"stream holds {stream['batches']} batches: build it with "
                         f"clzoo.data.batches(..., epochs={needed})")


def _fit_device_stream(stream, kwargs):
    """The stream's generator for `fit`, `steps_per_epoch` defaulting to one of its epochs; a fit
    longer than the stream is refused here (Keras would stop with a warning when it runs dry)."""
    facts = stream.clzoo_stream
    if kwargs.get("steps_per_epoch") is None:
        kwargs["steps_per_epoch"] = facts["steps_per_epoch"]
    steps = kwargs["steps_per_epoch"]
    wanted = (kwargs.get("epochs", 1) - kwargs.get("initial_epoch", 0)) * steps
    if wanted > facts["batches"]:
        epochs = -(-(facts["start_step"] + wanted) // facts["steps_per_epoch"])
        raise ValueError(f"fit asks for {wanted} steps ({kwargs.get('epochs', 1)} epochs of {steps}) but "
                         f"the stream holds {facts['batches']} batches: build it with "
                         f"device_batches(..., epochs={epochs})")
    return iter(stream)

