"""Training over several `torch.distributed` processes (one replica each, started by `torchrun`).

What `DistributedDataParallel` does for a `torch.nn.Module`, done for a Keras model on the torch
backend: every process starts from rank 0's weights, the gradients are averaged across the
processes before each update, batch-norm statistics are those of the global batch, and a step's
logs are the global batch's. The losses see every process's embeddings through the all-gather of
`clzoo.losses.distributed` (`TorchProcesses`), gradients flowing back to the process that made
each one. Each process reads only its rows of every global batch (`shard` of the streams).

    KERAS_BACKEND=torch torchrun --standalone --nproc-per-node N --no-python \\
        clzoo train RECIPE --strategy multi_worker --output RUN
"""

import datetime
import os

TORCHRUN = ("KERAS_BACKEND=torch torchrun --standalone --nproc-per-node N --no-python clzoo train "
            "RECIPE --strategy multi_worker")
TIMEOUT_VARIABLE = "CLZOO_PROCESS_TIMEOUT_S"  # how long a collective waits for a silent process
DEFAULT_TIMEOUT_S = 1800
_LAUNCH_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


def launched(environ=None):
    """True when this process was started by `torchrun` (its variables are all set)."""
    environ = os.environ if environ is None else environ
    return all(environ.get(name) for name in _LAUNCH_VARIABLES)


def timeout_seconds(environ=None):
    """`CLZOO_PROCESS_TIMEOUT_S` (seconds a collective waits for a process), default 1800.

    Raises:
        ValueError: not a positive whole number, naming the variable.
    """
    environ = os.environ if environ is None else environ
    text = environ.get(TIMEOUT_VARIABLE, "").strip()
    if not text:
        return DEFAULT_TIMEOUT_S
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"{TIMEOUT_VARIABLE} = {text!r}: expected a whole number of seconds >= 1")
    return int(text)


def join(strategy, environ=None):
    """Join the `torchrun` processes: `(rank, world size, device names)`.

    NCCL where CUDA is, each process on GPU `LOCAL_RANK`; gloo on CPUs. `mirrored` keeps to one
    host (every process local); `multi_worker` spans hosts.

    Raises:
        ValueError: one line: not started by `torchrun` (the command to use), `mirrored` over
            several hosts, or a malformed timeout.
    """
    import torch
    import torch.distributed as dist

    environ = os.environ if environ is None else environ
    if not launched(environ):
        missing = [name for name in _LAUNCH_VARIABLES if not environ.get(name)]
        raise ValueError(f"--strategy {strategy} on the torch backend runs one process per device "
                         f"under torchrun ({', '.join(missing)} not set): {TORCHRUN}")
    world, local = int(environ["WORLD_SIZE"]), int(environ.get("LOCAL_WORLD_SIZE", environ["WORLD_SIZE"]))
    if strategy == "mirrored" and local != world:
        raise ValueError(f"--strategy mirrored keeps to one host, but torchrun started {world} processes "
                         f"with {local} on this host: use --strategy multi_worker")
    timeout = datetime.timedelta(seconds=timeout_seconds(environ))
    if not dist.is_initialized():
        if torch.cuda.is_available():
            torch.cuda.set_device(int(environ["LOCAL_RANK"]))
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo", timeout=timeout)
    device = f"cuda:{torch.cuda.current_device()}" if torch.cuda.is_available() else "cpu"
    devices = [None] * dist.get_world_size()
    dist.all_gather_object(devices, f"rank {dist.get_rank()}: {device}")
    return dist.get_rank(), dist.get_world_size(), devices


def replicate(model):
    """Make `model` one replica of the processes: rank 0's weights on every process, gradients
    averaged before each update, batch-norm statistics over the global batch (under GradCache,
    over each chunk, as on one device), and the step's logs averaged by
    `ContrastiveModel.get_metrics_result`."""
    import torch.distributed as dist

    from clzoo.losses.distributed import replica_context

    processes = replica_context()
    for variable in model.variables:  # rank 0's initial (or resumed) state everywhere
        processes.collective("starting", dist.broadcast, variable.value.data, 0)
    _average_gradients(model.optimizer, processes)
    if not _chunked(model):  # GradCache's chunks are its batch-norm batches, on one device too
        _synchronize_batch_norm(model)


def _chunked(model):
    """True when the model's step runs GradCache (`clzoo.parts.grad_cache`): it normalizes each
    chunk of a process's rows by itself, as one process does with the same chunks."""
    from clzoo.parts.grad_cache import GradCacheStep

    return any(isinstance(part, GradCacheStep) for part in getattr(model, "parts", ()))


def _average_gradients(optimizer, processes):
    """Wrap `optimizer.apply`: the gradients are averaged over the processes first. The optimizer
    is this run's own, built for it, so the wrap goes with it and no saved file sees it."""
    if getattr(optimizer, "_clzoo_averaged", False):
        return
    apply = optimizer.apply

    def averaged_apply(grads, trainable_variables=None):
        return apply(processes.average(list(grads)), trainable_variables)

    optimizer.apply = averaged_apply
    optimizer._clzoo_averaged = True


def _synchronize_batch_norm(model):
    """Every batch-norm layer's training moments over the global batch: the per-process sums of
    x and x^2 all-reduced (differentiable), as `synchronize_batch_norm` gives on TensorFlow. Set on
    the instances, never in a saved config: a saved model loads as plain batch norm anywhere."""
    import types

    from clzoo.compat import batch_norm_layers

    for layer in batch_norm_layers(model):
        layer._moments = types.MethodType(_global_moments, layer)


def _global_moments(layer, inputs, mask):
    """Keras' torch `moments` (E[x^2] - E[x]^2, float16 in float32) over every process's rows."""
    import math

    import torch

    from clzoo.losses.distributed import differentiable

    if mask is not None:
        raise ValueError("a masked batch norm is not synchronized across torch processes")
    axes = tuple(layer._reduction_axes)
    x = inputs.float() if inputs.dtype == torch.float16 else inputs
    sums = torch.stack([torch.sum(x, dim=axes), torch.sum(torch.square(x), dim=axes)])
    sums = differentiable("all_reduce")(sums) if sums.requires_grad else _reduced(sums)  # gradients cross
    count = _reduced(torch.tensor(float(math.prod(x.shape[a] for a in axes)), device=x.device))
    mean = sums[0] / count
    variance = sums[1] / count - torch.square(mean)
    return mean.to(inputs.dtype), variance.to(inputs.dtype)


def _reduced(tensor):
    import torch.distributed as dist

    from clzoo.losses.distributed import replica_context

    replica_context().collective("synchronizing batch norm", dist.all_reduce, tensor)
    return tensor
