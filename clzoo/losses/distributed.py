"""The global batch across replicas: all-gather of embeddings and labels.

The one backend-specific helper of the losses (style rule 2): under `tf.distribute` on
TensorFlow, and across `torch.distributed` processes on PyTorch (one replica per process, as
`torchrun` starts them); each backend is imported lazily, only on its own backend. JAX with
`keras.distribution.DataParallel` hands the loss the global batch already.
"""

import contextlib

import keras


class ProcessStopped(RuntimeError):
    """Another `torch.distributed` training process stopped, or went silent past the timeout."""


class TorchProcesses:
    """The replica context of `torch.distributed` processes, in `tf.distribute`'s words:
    `all_gather(x, axis=0)` (differentiable for float tensors: each process's slice of the
    gradient comes back to the process that made it, summed over every process's loss),
    `replica_id_in_sync_group` (the rank) and `num_replicas_in_sync` (the world size)."""

    def __init__(self, dist):
        self._dist = dist
        self.replica_id_in_sync_group = dist.get_rank()
        self.num_replicas_in_sync = dist.get_world_size()

    def collective(self, what, fn, *args):
        """`fn(*args)`, a collective: a peer that died or went silent is one line, not a gloo trace.

        Raises:
            ProcessStopped: naming what was under way and how to go on.
        """
        try:
            return fn(*args)
        except (RuntimeError, OSError) as error:  # gloo / NCCL report a lost peer as these
            first = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
            raise ProcessStopped(f"another training process stopped or went silent while {what} "
                                 f"({first}); the last checkpoint is whole: start every process "
                                 "again with --resume") from None

    def average(self, tensors):
        """Each tensor of `tensors` (None entries kept) replaced in place by its mean over the
        processes, one all-reduce per dtype; returns `tensors`."""
        import torch

        present = [t for t in tensors if t is not None]
        for dtype in {t.dtype for t in present}:
            group = [t for t in present if t.dtype == dtype]
            flat = torch.cat([t.reshape(-1) for t in group])
            self.collective("averaging across processes", self._dist.all_reduce, flat)
            flat /= self.num_replicas_in_sync
            offset = 0
            for t in group:
                t.copy_(flat[offset:offset + t.numel()].view_as(t))
                offset += t.numel()
        return tensors

    def mean_logs(self, logs):
        """`logs` (a step's or epoch's metric results) with every float replaced by its mean over
        the processes: each is a mean over an equal local batch, so their mean is what one process
        on the global batch logs."""
        import torch

        names = [key for key, value in logs.items() if _scalar(value)]
        if not names:
            return logs
        values = torch.tensor([float(logs[key]) for key in names], dtype=torch.float64)
        self.average([values])
        return {**logs, **{key: float(values[i]) for i, key in enumerate(names)}}

    def all_gather(self, x, axis=0):
        import torch

        if axis != 0:
            raise ValueError(f"TorchProcesses.all_gather gathers along axis 0. Received: axis={axis}")
        x = x.contiguous()
        sizes = [torch.zeros(1, dtype=torch.int64, device=x.device) for _ in range(self.num_replicas_in_sync)]
        self.collective("gathering the global batch", self._dist.all_gather, sizes,
                        torch.tensor([x.shape[0]], dtype=torch.int64, device=x.device))
        if len({int(size) for size in sizes}) > 1:
            raise ValueError("every process must hold the same number of rows of the global batch "
                             f"(rows per process: {[int(size) for size in sizes]}): give each process "
                             "global_batch / processes images")
        if x.is_floating_point() and x.requires_grad:
            return torch.cat(self.collective("gathering the global batch", differentiable("all_gather"), x),
                             dim=0)
        parts = [torch.empty_like(x) for _ in range(self.num_replicas_in_sync)]
        self.collective("gathering the global batch", self._dist.all_gather, parts, x)
        return torch.cat(parts, dim=0)


def differentiable(name):
    """`torch.distributed.nn.functional.<name>` (`all_gather`, `all_reduce`: gradients flow back
    across processes), without its FutureWarning: the private functional collectives it points
    to may change between releases, this public API has not."""
    import warnings

    from torch.distributed.nn import functional

    collective = getattr(functional, name)

    def call(*args):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=FutureWarning, message=".*is deprecated")
            return collective(*args)

    return call


def _scalar(value):
    """A float log value (a Python float or a one-element floating tensor)."""
    import torch

    if isinstance(value, float):
        return True
    return torch.is_tensor(value) and value.numel() == 1 and value.is_floating_point()


_PAUSED = []  # processes_paused() blocks in force: this process computes alone


@contextlib.contextmanager
def processes_paused():
    """Within the block this process computes alone (no gather): the chief's final evaluation,
    after the other `torch.distributed` processes have finished."""
    _PAUSED.append(True)
    try:
        yield
    finally:
        _PAUSED.pop()


def _torch_processes():
    """`TorchProcesses` when `torch.distributed` runs several processes, else None."""
    import torch.distributed as dist

    if _PAUSED or not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
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
