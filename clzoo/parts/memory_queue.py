"""A labelled first-in-first-out queue of past embeddings (MoCo's dictionary, with labels)."""

import keras
from keras import ops

from clzoo.validation import checks as K
from clzoo.validation.arguments import validate_positive_int


@keras.saving.register_keras_serializable(package="clzoo")
class MemoryQueue(keras.layers.Layer):
    """The last `size` key embeddings and their labels, as non-trainable state.

    Slots are written in order: the `j`-th entry enqueued since the start
    goes to slot `j mod size`, so until the queue is full slots
    `0 .. count - 1` hold entries and the rest are empty (flagged invalid);
    afterwards each enqueue overwrites the oldest entries. One `enqueue` of
    `n` entries writes them in their given order (for a `(batch, views, dim)`
    batch: sample-major, `b * views + v`); with `n > size` only the last
    `size` survive. The state lives in four variables (`embeddings`,
    `labels`, `pointer`: next slot, `count`: filled slots), saved with the
    model, and updated with `aggregation="only_first_replica"` so that every
    `tf.distribute` replica holds the same queue (each replica enqueues the
    same all-gathered global batch).

    `ContrastiveModel(queue_size=...)` owns one and passes its contents to
    the loss as its `memory` argument (`clzoo.losses.memory_bank` says how entries
    enter each loss: positives or noise by label, never anchors).

    Args:
        size: number of slots K, a positive int.
        dim: embedding size, a positive int.

    Raises:
        ValueError: naming `size` or `dim` when not a positive integer.

    Example:

    >>> import numpy as np, clzoo
    >>> queue = clzoo.models.MemoryQueue(size=3, dim=2)
    >>> queue.enqueue(np.eye(2, dtype="float32"), np.array([5, 7]))
    >>> embeddings, labels, valid = queue.contents()
    >>> np.asarray(labels).tolist(), np.asarray(valid).tolist()
    ([5, 7, 0], [True, True, False])

    Reference:
    - [He et al., Momentum Contrast (MoCo), 2020, sec. 3.2 "Dictionary as a
      queue"](https://arxiv.org/abs/1911.05722)
    - [Wang et al., Cross-Batch Memory for Embedding Learning, 2020,
      sec. 4](https://arxiv.org/abs/1912.06798)
    """

    def __init__(self, size, dim, **kwargs):
        super().__init__(**kwargs)
        self.size = validate_positive_int(size, "size", allow_none=False)
        self.dim = validate_positive_int(dim, "dim", allow_none=False)
        self.build()

    def build(self, input_shape=None):
        def state(name, shape, dtype):
            return self.add_weight(shape=shape, dtype=dtype, initializer="zeros", trainable=False,
                                   autocast=False, aggregation="only_first_replica", name=name)

        self.embeddings = state("embeddings", (self.size, self.dim), "float32")
        self.labels = state("labels", (self.size,), K.index_dtype())
        self.pointer = state("pointer", (), "int32")
        self.count = state("count", (), "int32")
        self.built = True

    def contents(self):
        """`(embeddings (K, dim) float32, labels (K,) int64 (int32 on JAX without x64), valid (K,) bool)`."""
        valid = ops.arange(self.size, dtype="int32") < self.count.value
        return self.embeddings.value, self.labels.value, valid

    def enqueue(self, keys, labels):
        """Write `keys` `(n, dim)` and int labels `(n,)` into the next slots (oldest first out).

        No gradient flows into the queue. Labels are stored as int64 (int32 on
        JAX without x64, where `ContrastiveModel` refuses wider ids).

        Raises:
            ValueError: naming `keys` or `labels` for a wrong rank or dim.
        """
        keys = ops.stop_gradient(ops.cast(keys, "float32"))
        if len(keys.shape) != 2 or keys.shape[1] != self.dim:
            raise ValueError(f"`keys` must have shape (n, {self.dim}). Received: "
                             f"keys.shape={tuple(keys.shape)}")
        labels = ops.cast(labels, self.labels.dtype)
        if len(labels.shape) != 1:
            raise ValueError(f"`labels` must have shape (n,). Received: labels.shape="
                             f"{tuple(labels.shape)}")
        # A Python int where the batch size is static, an int32 scalar inside a tf.function without one.
        n = ops.shape(keys)[0]
        keys, labels = keys[-self.size:], labels[-self.size:]  # only the last K can survive
        kept = ops.shape(keys)[0]
        slots = (self.pointer.value + (n - kept) + ops.arange(kept, dtype="int32")) % self.size
        slots = ops.expand_dims(slots, -1)
        self.embeddings.assign(ops.scatter_update(self.embeddings.value, slots, keys))
        self.labels.assign(ops.scatter_update(self.labels.value, slots, labels))
        self.pointer.assign((self.pointer.value + n) % self.size)
        self.count.assign(ops.minimum(self.count.value + n, self.size))

    def call(self, inputs=None):
        return self.contents()

    def get_config(self):
        config = super().get_config()
        config.update({"size": self.size, "dim": self.dim})
        return config
