"""The global batch under `tf.distribute`: all-gather of embeddings and labels across replicas.

The one backend-specific helper of the losses (style rule 2): TensorFlow is
imported lazily, only on the TensorFlow backend. JAX with
`keras.distribution.DataParallel` hands the loss the global batch already.
"""

import keras


def replica_context():
    """The `tf.distribute` replica context when running on several replicas, else None."""
    if keras.backend.backend() != "tensorflow":
        return None  # JAX DataParallel hands the loss the global batch already.
    import tensorflow as tf

    if not tf.distribute.has_strategy():
        return None
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return None
    return context



def gather_global_batch(z, labels, views):
    """All-gather embeddings and labels across `tf.distribute` replicas.

    Returns `(z_all, labels_all, offset)` where `offset` is the index of this
    replica's first sample in the global batch. Gradients flow back to each
    replica's own slice through the all-gather.
    """
    context = replica_context()
    if context is None:
        return z, labels, 0
    import tensorflow as tf

    local = tf.shape(labels)[0]
    sizes = context.all_gather(tf.reshape(local, (1,)), axis=0)
    replica = context.replica_id_in_sync_group
    offset = tf.reduce_sum(sizes[:replica])
    return context.all_gather(z, axis=0), context.all_gather(labels, axis=0), offset
