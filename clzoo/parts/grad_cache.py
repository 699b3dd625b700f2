"""GradCache training steps of `ContrastiveModel` (Gao et al. 2021), one per Keras backend.

A contrastive loss couples every embedding of the batch, so the batch cannot be
split into independent micro-batches; but the loss only needs the embeddings,
not the encoder's activations. One step therefore runs in three passes:

1. embed the batch in sub-batches of `encoder_chunk_size` images, keeping no
   activations (no tape, `torch.no_grad`, plain forward on JAX);
2. compute the loss and its gradient with respect to the embeddings (and to the
   weights the loss reads directly: a learnable temperature, weight
   regularizers); the loss may chunk itself (`clzoo.losses` `chunk_size`);
3. re-run each sub-batch with gradients and back-propagate its slice of the
   cached embedding gradient, summing the weight gradients over sub-batches.

Between passes 1 and 3 the encoder's and head's non-trainable variables (batch
norm moving statistics, seed-generator states of dropout or in-model
augmentation) go back to their values before the step, so pass 3 recomputes
exactly the activations of pass 1 and updates the statistics once per
sub-batch, not twice.

Reference:
- [Gao et al., Scaling Deep Contrastive Learning Batch Size under Memory
  Limited Setup, RepL4NLP 2021, sec. 3 (gradient cache)](https://arxiv.org/abs/2101.06983)
"""

import keras
from keras import ops

from clzoo import compat
from clzoo.parts.base import PARTS, ModelPart
from clzoo.validation.arguments import validate_positive_int


def chunk_bounds(total, chunk_size):
    """`[(start, stop), ...]` covering `range(total)` in pieces of `chunk_size` (the last may be shorter)."""
    return [(start, min(start + chunk_size, total)) for start in range(0, total, chunk_size)]


def folded_images(model, x):
    """The images `(batch * views, H, W, C)` of a multi-view batch `x`, sample-major.

    Raises:
        ValueError: `x` is not one tensor of shape `(batch, views, H, W, C)`, or its batch size is
            not known when the step is traced (TensorFlow `fit` on arrays or on a dataset batched
            without `drop_remainder=True`).
    """
    shape = getattr(x, "shape", None)
    if shape is None or isinstance(x, (list, tuple, dict)):
        raise ValueError("`encoder_chunk_size` (GradCache) needs `x` to be one tensor of shape "
                         f"(batch, views, H, W, C). Received: x of type {type(x).__name__}")
    if len(shape) != 5:
        raise ValueError("ContrastiveModel expects a multi-view batch of shape (batch, views, H, W, "
                         f"C). Received: shape={tuple(shape)}")
    if shape[0] is None or any(size is None for size in shape[1:]):
        raise ValueError(
            "`encoder_chunk_size` (GradCache) splits the batch into sub-batches when the training "
            "step is traced, so the batch size must be known then; on TensorFlow pass a "
            "tf.data.Dataset batched with drop_remainder=True (clzoo.data.contrastive_dataset does), "
            "or arrays whose length is a multiple of batch_size. "
            f"Received: x.shape={tuple(shape)}")
    return ops.reshape(x, (-1,) + tuple(shape[2:]))


def embed(model, images):
    """Encoder then projection head on images `(n, H, W, C)`, in training mode -> `(n, dim)`."""
    return model.projection_head(model.encoder(images, training=True), training=True)


def own_state(model):
    """The encoder's and head's non-trainable variables (restored between the two passes)."""
    return model.encoder.non_trainable_variables + model.projection_head.non_trainable_variables


def _unfold(x, parts):
    embeddings = ops.concatenate(parts, axis=0) if len(parts) > 1 else parts[0]
    return ops.reshape(embeddings, (x.shape[0], x.shape[1], embeddings.shape[-1]))


def _add(total, part):
    """Gradient sums where `None` means zero (TensorFlow's unconnected gradients)."""
    return [a if b is None else (b if a is None else a + b) for a, b in zip(total, part)]


@PARTS.register("grad_cache", description="GradCache: the same gradients with less memory")
class GradCacheStep(ModelPart):
    """`model.grad_cache: {chunk_size: M}` in a recipe: GradCache's step in place of Keras'
    (`train_step`), embedding the batch's images M at a time.

    Args:
        chunk_size: images (views included) embedded at a time without keeping activations,
            then back-propagated chunk by chunk: one extra forward pass; batch norm statistics
            per chunk.

    Raises:
        ValueError: `chunk_size` not a positive integer.

    Example:

    >>> from clzoo.parts.grad_cache import GradCacheStep
    >>> GradCacheStep(128).chunk_size
    128

    Reference:
    - [Gao et al., Scaling Deep Contrastive Learning Batch Size under Memory Limited Setup,
      2021, sec. 3 (gradient cache)](https://arxiv.org/abs/2101.06983)
    """

    def __init__(self, chunk_size):
        self.chunk_size = validate_positive_int(chunk_size, "chunk_size", allow_none=False)

    def refuse(self, context):
        if context.task != "contrastive":
            return f"GradCache needs task contrastive (not task {context.task})"
        return None

    def train_step(self, model, *args):
        return train_step(model, *args)


def train_step(model, *args):
    """One GradCache training step of a `ContrastiveModel` with `encoder_chunk_size` set.

    Args:
        model: the `ContrastiveModel` (compiled; `model.encoder_chunk_size` = M images).
        *args: Keras' `train_step` arguments on the backend: `(data,)` on TensorFlow and
            PyTorch, `(state, data)` on JAX; `data` is `(x, y)` or `(x, y, sample_weight)`
            with `x` float `(batch, views, H, W, C)`.

    Returns:
        what Keras' own `train_step` returns there: the logs dict (TensorFlow, PyTorch) or
        `(logs, state)` (JAX).

    Raises:
        ValueError: from `folded_images` (not one 5-d tensor, or a batch size unknown when
            the step is traced), or an unsupported backend.

    Example (what `fit` runs; see `ContrastiveModel` for a `fit` call):

    >>> from clzoo.parts.grad_cache import chunk_bounds
    >>> chunk_bounds(12, 5)  # 6 samples x 2 views, encoder_chunk_size=5
    [(0, 5), (5, 10), (10, 12)]
    """
    data = args[-1]
    model._step_input_shape = tuple(data[0].shape if isinstance(data, (tuple, list)) else data.shape)
    backend = keras.backend.backend()
    if backend == "tensorflow":
        return _tf_train_step(model, *args)
    if backend == "torch":
        return _torch_train_step(model, *args)
    if backend == "jax":
        return _jax_train_step(model, *args)
    raise ValueError("`encoder_chunk_size` (GradCache) runs on the tensorflow, jax and torch "
                     f"backends. Received: backend {backend!r}")


def _loss_and_log(model, x, y, y_pred, sample_weight):
    """Pass 2's loss (scaled for the optimizer), with the loss tracker updated as `fit` does."""
    loss = model.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight, training=True)
    compat.loss_tracker(model).update_state(compat.unscale_loss_for_distribution(loss),
                                            sample_weight=x.shape[0])
    return model.optimizer.scale_loss(loss) if model.optimizer is not None else loss


def _tf_after(dependencies, images):
    """`images` read only once `dependencies` exist: in a graph, TensorFlow would otherwise run the
    sub-batches side by side and hold all their activations at once (no memory saved)."""
    import tensorflow as tf

    with tf.control_dependencies([d for d in dependencies if d is not None]):
        return tf.identity(images)


def _tf_train_step(model, data):
    import tensorflow as tf

    x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
    images = folded_images(model, x)
    bounds = chunk_bounds(images.shape[0], model.encoder_chunk_size)
    state = own_state(model)
    saved = [tf.identity(v.value) for v in state]
    parts = []
    for a, b in bounds:
        parts.append(tf.stop_gradient(embed(model, _tf_after(parts[-1:], images[a:b]))))
    y_pred = _unfold(x, parts)
    for variable, value in zip(state, saved):  # pass 3 must see the statistics pass 1 saw
        variable.assign(value)
    weights = model.trainable_weights
    with tf.GradientTape() as tape:
        tape.watch(y_pred)
        loss = _loss_and_log(model, x, y, y_pred, sample_weight)
    cached, *grads = tape.gradient(loss, [y_pred] + weights)
    cached = tf.reshape(cached, (images.shape[0], -1))
    for a, b in bounds:
        part_images = _tf_after([cached] + grads, images[a:b])
        with tf.GradientTape() as tape:
            part = embed(model, part_images)
        grads = _add(grads, tape.gradient(part, weights, output_gradients=cached[a:b]))
    model.optimizer.apply_gradients(zip(grads, weights))
    return model.compute_metrics(x, y, y_pred, sample_weight=sample_weight)


def _torch_train_step(model, data):
    import torch

    x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
    images = folded_images(model, x)
    bounds = chunk_bounds(images.shape[0], model.encoder_chunk_size)
    state = own_state(model)
    saved = [v.value.detach().clone() for v in state]
    with torch.no_grad():
        y_pred = _unfold(x, [embed(model, images[a:b]) for a, b in bounds])
        for variable, value in zip(state, saved):  # pass 3 must see the statistics pass 1 saw
            variable.assign(value)
    model.zero_grad()
    y_pred = y_pred.detach().requires_grad_(True)
    _loss_and_log(model, x, y, y_pred, sample_weight).backward()
    cached = y_pred.grad.reshape(images.shape[0], -1)
    for a, b in bounds:  # .backward accumulates into each weight's .grad
        embed(model, images[a:b]).backward(gradient=cached[a:b])
    weights = model.trainable_weights[:]
    with torch.no_grad():
        model.optimizer.apply([v.value.grad for v in weights], weights)
    return model.compute_metrics(x, y, y_pred.detach(), sample_weight=sample_weight)


def _stateless_embed(model, trainable, non_trainable, images):
    """`embed` with the model's variables replaced by values; returns `(embeddings, non_trainable)`."""
    mapping = (list(zip(model.trainable_variables, trainable))
               + list(zip(model.non_trainable_variables, non_trainable)))
    with keras.StatelessScope(state_mapping=mapping) as scope:
        embeddings = embed(model, images)
    return embeddings, [scope.get_current_value(v) for v in model.non_trainable_variables]


def _jax_after(dependencies, images):
    """`images`, unchanged, but computed from every array in `dependencies`: a data dependence.

    XLA's CPU compiler drops `jax.lax.optimization_barrier` before it schedules, so sub-batches
    chained only by barriers ran all their forward passes first and kept every sub-batch's
    activations (the compiled step's scratch was as large as the unchunked one's). A `lax.scan`
    over sub-batches holds one at a time but ran ResNet-20 about 20x slower on CPU. One element
    of each dependency, turned into an exact 0, added to the images orders them without either
    cost. The 0 is `(x != x) * 0`, never `x * 0`: a NaN or inf in one sub-batch's gradient must
    not turn the next sub-batch's images into NaN.
    """
    leaves = [leaf for leaf in keras.tree.flatten(dependencies) if leaf is not None]
    if not leaves:
        return images
    token = sum(ops.cast(ops.reshape(leaf, (-1,))[0], images.dtype) for leaf in leaves)
    return images + ops.cast(ops.not_equal(token, token), images.dtype) * 0.0  # a bool: no gradient


def _jax_train_step(model, state, data):
    import jax

    trainable, non_trainable, optimizer_vars, metrics_vars = state
    x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
    images = folded_images(model, x)
    bounds = chunk_bounds(images.shape[0], model.encoder_chunk_size)
    parts, current = [], non_trainable
    for a, b in bounds:
        part, current = _stateless_embed(model, trainable, current, _jax_after(parts[-1:], images[a:b]))
        parts.append(part)
    y_pred = jax.lax.stop_gradient(_unfold(x, parts))

    def loss_fn(y_pred, trainable):
        loss, (_, updated, metrics) = model.stateless_compute_loss(
            trainable, current, metrics_vars, x=x, y=y, y_pred=y_pred,
            sample_weight=sample_weight, training=True)
        return compat.jax_scale_loss(model, loss, optimizer_vars), (loss, updated, metrics)

    grad_fn = jax.value_and_grad(loss_fn, argnums=(0, 1), has_aux=True)
    (_, (unscaled, updated, metrics_vars)), (cached, grads) = grad_fn(y_pred, trainable)
    # The queue and key encoder keep pass 2's update; encoder and head restart from the step's input.
    own = {id(v) for v in own_state(model)}
    current = [old if id(v) in own else new
               for v, old, new in zip(model.non_trainable_variables, non_trainable, updated)]
    cached = ops.reshape(cached, (images.shape[0], -1))
    grads = list(grads)
    for a, b in bounds:
        part_images = _jax_after([cached] + grads, images[a:b])

        def run(weights, part_images=part_images, start=current):
            return _stateless_embed(model, weights, start, part_images)
        _, backward, current = jax.vjp(run, trainable, has_aux=True)
        grads = _add(grads, backward(cached[a:b])[0])
    trainable, optimizer_vars = model.optimizer.stateless_apply(optimizer_vars, grads, trainable)
    logs, metrics_vars = compat.jax_update_metrics(model, metrics_vars, unscaled, x, y, y_pred,
                                                   sample_weight)
    return logs, (trainable, current, optimizer_vars, metrics_vars)
