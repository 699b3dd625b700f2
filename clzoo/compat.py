"""Workarounds for Keras internals, each with the upstream issue it answers; nothing else uses
private Keras API."""

import keras
import numpy as np


def prebuild_for_multi_worker(model, element_spec, local_batch):
    """Make Keras 3's TensorFlow `fit` run under MultiWorkerMirroredStrategy.

    - Keras 3's `fit` reduces the first distributed batch with
      `strategy.reduce("MEAN", (x, y))` before building, which
      MultiWorkerMirroredStrategy rejects for a tuple (ValueError: PerReplica
      to Tensor): build metrics, loss and optimizer here from symbolic shapes
      (`Model._symbolic_build`) and skip that first-batch build.
    - It then reduces each step's logs with `strategy.reduce("MEAN", v, axis=0)`,
      which fails on scalars (tensorflow/tensorflow#72388): hand it
      shape-`(1,)` logs instead.
    """
    batch = tuple(np.zeros((local_batch, *spec.shape[1:]), spec.dtype.as_numpy_dtype)
                  for spec in element_spec)
    model._symbolic_build(data_batch=batch)
    model._maybe_symbolic_build = lambda iterator=None, data_batch=None: None
    train_step = model.train_step
    model.train_step = lambda data: {name: keras.ops.reshape(value, (1,))
                                     for name, value in train_step(data).items()}


def batch_norm_layers(model):
    """Every `BatchNormalization` layer of `model`, nested ones included (`_flatten_layers`)."""
    return [layer for layer in model._flatten_layers()
            if isinstance(layer, keras.layers.BatchNormalization)]


def loss_tracker(model):
    """The running-mean loss metric `fit` shows (`Model._loss_tracker`), or None.

    A checkpoint taken mid-epoch stores its state so that a resumed epoch
    logs the mean over all its steps, not only the ones after the restart.
    """
    return getattr(model, "_loss_tracker", None)


def restore_jax_state(model, state):
    """Put a JAX step's input `state` back into `model`'s variables after the step was refused.

    Keras' JAX `fit` / `evaluate` detach the variables' values while the
    epoch runs (`_purge_model_variables`) and only reattach them at its
    end, so an error raised between steps would leave a model whose
    variables hold nothing. `state` is the tuple the step function received:
    4 parts in `fit`, 3 in `evaluate`.
    """
    keys = (("trainable_variables", "non_trainable_variables", "optimizer_variables",
             "metrics_variables") if len(state) == 4
            else ("trainable_variables", "non_trainable_variables", "metrics_variables"))
    model._jax_state = dict(zip(keys, state))
    model._jax_state_synced = False
    model.jax_state_sync()


def keep_jax_variables(model, run):
    """Return `run()`; on JAX, put `model`'s variable values back if it raises.

    Keras' JAX `predict` detaches the variables (`_purge_model_variables`) and
    donates their buffers to the step, so an exception inside its loop leaves
    a model with no values; they are copied first (an encoder's weights).
    Other backends just run `run()`.
    """
    if keras.backend.backend() != "jax":
        return run()
    values = [keras.ops.copy(v._value) for v in model.variables]
    try:
        return run()
    except BaseException:
        for variable, value in zip(model.variables, values):
            variable._value = value
        raise


def unscale_loss_for_distribution(loss):
    """`loss` times the number of `tf.distribute` replicas (Keras' `compute_loss` divided by it).

    The value `fit`'s loss tracker logs (Keras' trainers do the same through
    `keras.src.losses.loss.unscale_loss_for_distribution`, which has no public
    name); used by GradCache's own training step.
    """
    from keras.src.losses.loss import unscale_loss_for_distribution as unscale

    return unscale(loss)


def jax_scale_loss(model, loss, optimizer_variables):
    """`model.optimizer.scale_loss(loss)` inside a stateless JAX step (a `LossScaleOptimizer` reads
    its scale from `optimizer_variables`), as Keras' `JAXTrainer.compute_loss_and_updates` does."""
    if model.optimizer is None:
        return loss
    mapping = list(zip(model.optimizer.variables, optimizer_variables))
    with keras.StatelessScope(state_mapping=mapping):
        return model.optimizer.scale_loss(loss)


def jax_update_metrics(model, metrics_variables, unscaled_loss, x, y, y_pred, sample_weight):
    """`(logs, metrics_variables)` after one JAX train step: the loss tracker and compiled metrics
    updated statelessly (`JAXTrainer._update_metrics_variables`, private in Keras 3.15)."""
    return model._update_metrics_variables(metrics_variables, unscaled_loss, x, y, y_pred,
                                           sample_weight)


def jax_distributed_client():
    """The coordination-service client that `jax.distributed.initialize()` made, or None.

    JAX has no public accessor for it (jax._src.distributed.global_state); its barrier with a
    timeout is what `clzoo.train.distribute.finish_together` needs (a device collective gives
    up after 30 s).
    """
    try:
        from jax._src import distributed

        return distributed.global_state.client
    except (ImportError, AttributeError):  # moved in a later JAX: the caller's collective fallback
        return None


def added_losses(model):
    """The model's `add_loss` and regularizer losses, each as Keras' `compute_loss` adds it to the
    compiled loss (`Trainer._aggregate_additional_loss`: summed, cast to floatx and, on TensorFlow,
    scaled for `tf.distribute`). For a train step that calls its loss itself, with an argument
    Keras' compiled loss cannot pass (`clzoo.parts.queue`: the memory queue)."""
    return [model._aggregate_additional_loss(loss) for loss in model.losses]


def in_symbolic_build():
    """True inside Keras' `compute_output_spec` (its `SymbolicScope`): the shapes of a first `fit`
    are traced there, and on torch on tensors of ones when the meta device cannot run a function
    (an input check's host read), so a check there would judge Keras' ones, not the user's data."""
    from keras.src.backend.common.symbolic_scope import in_symbolic_scope

    return in_symbolic_scope()


def jit_compile_for_this_backend(model):
    """Turn off a loaded model's saved `jit_compile=True` where this backend's "auto" would not
    compile (torch; TensorFlow without a GPU): the compile config keeps the value of the backend
    that wrote it, and a JAX checkpoint's `True` sent torch's next `fit` through `torch.compile`
    (minutes a step). A saved `False` stays. Set `model.jit_compile = True` to compile anyway.

    Returns:
        `model`.
    """
    resolve = getattr(model, "_resolve_auto_jit_compile", None)  # Keras' own rule for "auto"
    if getattr(model, "compiled", False) and resolve is not None and model.jit_compile and not resolve():
        model.jit_compile = False
    return model
