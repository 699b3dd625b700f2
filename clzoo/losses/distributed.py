"""The global batch across replicas: all-gather of embeddings and labels.

The one backend-specific helper of the losses (style rule 2): under `tf.distribute` on
TensorFlow, and across `torch.distributed` processes on PyTorch (one replica per process, as
`torchrun` starts them); each backend is imported lazily, only on its own backend. JAX with
`keras.distribution.DataParallel` hands the loss the global batch already.
"""

import keras


class TorchProcesses:
    """The replica context of `torch.distributed` processes, in `tf.distribute`'s words:
    `all_gather(x, axis=0)` (differentiable for float tensors: each process's slice of the
    gradient comes back to the process that made it, summed over every process's loss),
    `replica_id_in_sync_group` (the rank) and `num_replicas_in_sync` (the world size)."""

    def __init__(self, dist):
        self._dist = dist
        self.replica_id_in_sync_group = dist.get_rank()
        self.num_replicas_in_sync = dist.get_world_size()

    def all_gather(self, x, axis=0):
        import torch

        if axis != 0:
            raise ValueError(f"TorchProcesses.all_gather gathers along axis 0. Received: axis={axis}")
        x = x.contiguous()
        sizes = [torch.zeros(1, dtype=torch.int64, device=x.device) for _ in range(self.num_replicas_in_sync)]
        self._dist.all_gather(sizes, torch.tensor([x.shape[0]], dtype=torch.int64, device=x.device))
        if len({int(size) for size in sizes}) > 1:
            raise ValueError("every process must hold the same number of rows of the global batch "
                             f"(rows per process: {[int(size) for size in sizes]}): give each process "
                             "global_batch / processes images")
        if x.is_floating_point() and x.requires_grad:
            from torch.distributed.nn.functional import all_gather

            return torch.cat(all_gather(x), dim=0)
        parts = [torch.empty_like(x) for _ in range(self.num_replicas_in_sync)]
        self._dist.all_gather(parts, x)
        return torch.cat(parts, dim=0)


def _torch_processes():
    """`TorchProcesses` when `torch.distributed` runs several processes, else None."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return None
    return TorchProcesses(dist)


def replica_context():
    """The replica context when running on several replicas, else None: `tf.distribute`'s on
    TensorFlow, `TorchProcesses` across `torch.distributed` processes on PyTorch."""
    if keras.backend.backend() == "torch":
        return _torch_processes()
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
    """All-gather embeddings and labels across replicas (`tf.distribute`, or `torch.distributed`
    processes).

    Returns `(z_all, labels_all, offset)` where `offset` is the index of this
    replica's first sample in the global batch. Gradients flow back to each
    replica's own slice through the all-gather.
    """
    context = replica_context()
    if context is None:
        return z, labels, 0
    if isinstance(context, TorchProcesses):  # equal rows per process (all_gather checks)
        offset = context.replica_id_in_sync_group * labels.shape[0]
        return context.all_gather(z), context.all_gather(labels), offset
    import tensorflow as tf

    local = tf.shape(labels)[0]
    sizes = context.all_gather(tf.reshape(local, (1,)), axis=0)
    replica = context.replica_id_in_sync_group
    offset = tf.reduce_sum(sizes[:replica])
    return context.all_gather(z, axis=0), context.all_gather(labels, axis=0), offset
