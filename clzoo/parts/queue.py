"""One training step's loss with a memory queue: keys, loss over batch + queue, then enqueue."""

from keras import ops

from clzoo.compat import added_losses
from clzoo.losses import distributed
from clzoo.losses.base import ContrastiveLoss
from clzoo.parts.base import PARTS, ModelPart
from clzoo.parts.memory_queue import MemoryQueue
from clzoo.parts.momentum import MomentumEncoder, check_momentum
from clzoo.validation import checks as K
from clzoo.validation.arguments import validate_positive_int
from clzoo.validation.labels import standardize_labels

MAX_QUEUE = 1_000_000  # keys: 4 bytes x dim each, and the loss's logits grow with it


@PARTS.register("queue", description="MoCo-style memory of the last keys and labels (+ momentum key encoder)")
class QueuePart(ModelPart):
    """`model.queue: {size, momentum}` in a recipe: a memory of the last K keys and labels
    (`MemoryQueue`), filled by a momentum key encoder (`MomentumEncoder`) or, with `momentum`
    None, by the model's own embeddings; `fit`'s loss is over batch + queue
    (`contrast_with_queue`).

    Args:
        size: keys (and their labels) kept; each anchor meets batch + queue.
        momentum: the EMA key encoder's coefficient in `[0, 1)`; None: the model's own
            embeddings are enqueued (no key encoder).

    Raises:
        ValueError: `size` not an integer in `[1, 1,000,000]`, `momentum` outside `[0, 1)`;
            beside a task other than contrastive or a loss that takes no memory (`refuse`).

    Example:

    >>> from clzoo.parts.queue import QueuePart
    >>> QueuePart(4096, 0.99).size
    4096

    Reference:
    - [He et al., Momentum Contrast (MoCo), 2020, sec. 3.2 (queue) and eq. 2 (momentum
      update)](https://arxiv.org/abs/1911.05722)
    - [Wang et al., Cross-Batch Memory for Embedding Learning, 2020, eq. 6 (the model's own
      embeddings as memory)](https://arxiv.org/abs/1912.06798)
    """

    def __init__(self, size, momentum=None):
        self.size = validate_positive_int(size, "size", allow_none=False)
        if self.size > MAX_QUEUE:
            raise ValueError(f"`size` must be at most {MAX_QUEUE:,} keys. Received: size={size!r}")
        self.momentum = None if momentum is None else check_momentum(momentum)

    def refuse(self, context):
        loss = context.loss
        if context.task != "contrastive" or (
                loss is not None and not (isinstance(loss, type) and issubclass(loss, ContrastiveLoss))):
            named = getattr(loss, "__name__", "unknown")
            return f"a queue needs task contrastive and an embedding loss (not {named} / task {context.task})"
        return None

    def attach(self, model):
        model.memory_queue = MemoryQueue(self.size, _output_dim(model.projection_head),
                                         name="memory_queue")
        if self.momentum is not None:
            model.momentum_encoder = MomentumEncoder(self.momentum, name="momentum_encoder")

    def build(self, model, features_shape):
        if model.momentum_encoder is not None:
            model.momentum_encoder.track([model.encoder, model.projection_head])

    def batch_loss(self, model, x, y, y_pred, sample_weight):
        return contrast_with_queue(model, x, y, y_pred, sample_weight)

    def check_compile(self, loss_weights):
        if loss_weights is not None:
            raise ValueError("A model with a queue (queue_size) calls its one loss with the queue; "
                             f"scale the loss instead of passing loss_weights. Received: "
                             f"loss_weights={loss_weights!r}")


def queue_bytes(size, embedding_dim, anchors):
    """Bytes a memory queue of `size` keys needs beside `anchors` anchors a step: its float32 keys
    and int32 labels, and the float32 anchor x queue logits with their exp and gradient."""
    return 4 * size * (embedding_dim + 1 + 3 * anchors)


def refuse_over_memory(size, embedding_dim, anchors, available):
    """Refuse a queue that needs over half of `available` bytes (None: unknown, not refused).

    Raises:
        ValueError: naming `model.queue.size` and the bytes it needs.
    """
    needed = queue_bytes(size, embedding_dim, anchors)
    if available is not None and needed > available / 2:
        raise ValueError(f"model.queue.size = {size}: the queue needs about {needed / 2**30:.1f} GiB "
                         f"(size x (embedding_dim {embedding_dim} + 1 + 3 x {anchors} anchors) x 4 "
                         f"bytes), over half of the {available / 2**30:.1f} GiB available; use a "
                         "smaller queue")


def _output_dim(projection_head):
    dim = getattr(projection_head, "output_dim", None)
    if dim is None:
        raise ValueError("`queue_size` needs a projection head with an `output_dim` attribute "
                         "(the queue's embedding size). Received: "
                         f"{type(projection_head).__name__}")
    return dim


def contrast_with_queue(model, x, y, y_pred, sample_weight=None):
    """The step's loss over batch + `model.memory_queue`, then the batch's keys enqueued.

    Order within one step (MoCo, Algorithm 1): momentum update of the key
    encoder (if any), keys of `x`, loss of the batch against the queue as it
    was before this step (passed to the loss as its `memory` argument, as
    pytorch-metric-learning's `CrossBatchMemory` does), then the keys and
    labels of the *global* batch enqueued (all-gathered across
    `tf.distribute` replicas in global sample order, so every replica
    writes the same entries; JAX `DataParallel` already sees the global
    batch). Runs inside `fit`'s compiled step on every backend: the queue
    and shadow weights are non-trainable variables assigned in
    `compute_loss`, which Keras' trainers carry over on TensorFlow, JAX and
    PyTorch. The loss is what Keras' `compute_loss` gives, with the memory
    added: the compiled loss plus the layers' added losses (`compat.added_losses`).

    Args:
        model: a `ContrastiveModel` with a `memory_queue`.
        x: the multi-view batch `(batch, views, H, W, C)`.
        y: its labels (as the loss takes them), or None.
        y_pred: the model's embeddings `(batch, views, dim)`.
        sample_weight: as `fit` passes it, or None.

    Returns:
        the scalar loss.

    Raises:
        ValueError: when the compiled loss is not one clzoo embedding loss
            (`clzoo.losses.base.ContrastiveLoss`).
    """
    loss_fn = getattr(model, "loss", None)
    if not isinstance(loss_fn, ContrastiveLoss):
        raise ValueError("`queue_size` needs the model compiled with one clzoo embedding loss "
                         "(SINCERELoss, SupConLoss, SupInfoNCELoss, NSCLLoss, DCLLoss, InfoNCELoss, "
                         f"SpreadLoss). Received: loss={loss_fn!r}")
    if model.momentum_encoder is not None:
        model.momentum_encoder.update([model.encoder, model.projection_head])
        keys = model.key_embeddings(x)
    else:
        keys = ops.stop_gradient(y_pred)
    loss = loss_fn(y, y_pred, sample_weight, memory=model.memory_queue.contents())
    for added in added_losses(model):
        loss = loss + ops.cast(added, loss.dtype)
    model.memory_queue.enqueue(*_global_keys(keys, y if loss_fn.uses_labels else None))
    return loss


def _global_keys(keys, y):
    """Keys `(batch, views, dim)` and labels of the global batch, flattened sample-major."""
    views, dim = keys.shape[1], keys.shape[2]
    batch = ops.shape(keys)[0]  # a Python int, or an int32 scalar when the batch size is not static
    if y is None:
        labels = ops.zeros((batch,), K.index_dtype())
    else:  # 64-bit ids stay 64-bit where the backend has int64 (never truncated to int32)
        labels = ops.cast(standardize_labels(y, batch), K.index_dtype())
    flat = ops.reshape(keys, (-1, dim))
    labels = ops.repeat(labels, views, axis=0)
    context = distributed.replica_context()
    if context is not None:
        # all_gather loses the static dim; the gathered rows have the local `dim`.
        flat = ops.reshape(context.all_gather(flat, axis=0), (-1, dim))
        labels = ops.reshape(context.all_gather(labels, axis=0), (-1,))
    return flat, labels
