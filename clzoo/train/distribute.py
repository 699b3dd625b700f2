"""Where training runs: `--strategy auto|one_device|mirrored|multi_worker` on each backend."""

import contextlib
import os
import tempfile
from dataclasses import dataclass, field

import keras

from clzoo.compat import batch_norm_layers

STRATEGIES = ("auto", "one_device", "mirrored", "multi_worker")
# What `keras.distribution.initialize()` reads on JAX (`--strategy multi_worker`).
JAX_CLUSTER_VARIABLES = ("KERAS_DISTRIBUTION_JOB_ADDRESSES", "KERAS_DISTRIBUTION_NUM_PROCESSES",
                         "KERAS_DISTRIBUTION_PROCESS_ID")


@dataclass
class Placement:
    """The chosen strategy: a scope to build the model in, and who writes the run folder.

    Attributes:
        name: the strategy actually used ("one_device", "mirrored",
            "multi_worker", "data_parallel" on JAX).
        replicas: devices that each take a slice of the global batch.
        is_chief: whether this process writes checkpoints, logs and reports
            (worker 0 of a multi-worker run; always True otherwise).
        devices: device names, for the run's environment record.
        strategy: the `tf.distribute.Strategy` on TensorFlow, else None.
        processes: processes taking part (several under `jax.distributed`).
        collective_saves: True when saving a model gathers arrays from every
            process (JAX over several processes): every process must call
            `model.save`, and only the chief keeps the file (`write_once`).
    """

    name: str
    replicas: int = 1
    is_chief: bool = True
    devices: list = field(default_factory=list)
    strategy: object = None
    processes: int = 1
    collective_saves: bool = False

    def scope(self):
        return self.strategy.scope() if self.strategy is not None else contextlib.nullcontext()

    def describe(self):
        return {"strategy": self.name, "replicas": self.replicas, "devices": self.devices,
                "is_chief": self.is_chief, "processes": self.processes}


def _tf_devices(tf):
    gpus = [d.name for d in tf.config.list_logical_devices("GPU")]
    return gpus or [d.name for d in tf.config.list_logical_devices("CPU")]


def _tensorflow(name):
    import tensorflow as tf

    if name == "multi_worker":
        if "TF_CONFIG" not in os.environ:
            raise ValueError("--strategy multi_worker reads the cluster from the TF_CONFIG "
                             "environment variable, which is not set (see recipes/README.md).")
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
        chief = strategy.extended.should_checkpoint  # tf.distribute's own "is chief"
        return Placement("multi_worker", strategy.num_replicas_in_sync, chief,
                         _tf_devices(tf), strategy)
    devices = _tf_devices(tf)
    gpus = tf.config.list_logical_devices("GPU")
    if name == "mirrored" or (name == "auto" and len(gpus) > 1):
        strategy = tf.distribute.MirroredStrategy(devices)
        return Placement("mirrored", strategy.num_replicas_in_sync, True, devices, strategy)
    device = devices[0]
    return Placement("one_device", 1, True, [device], tf.distribute.OneDeviceStrategy(device))


def _jax_cluster():
    """Check the `KERAS_DISTRIBUTION_*` variables, then join the cluster (`jax.distributed`).

    All three set: a cluster of our own (the coordinator is the first
    address). None set: JAX's own detection (Cloud TPU, SLURM, ...), which
    fails with a one-line error elsewhere. A partial or malformed set is
    refused before anything waits on a coordinator.
    """
    given = {key: os.environ[key] for key in JAX_CLUSTER_VARIABLES if os.environ.get(key)}
    missing = [key for key in JAX_CLUSTER_VARIABLES if key not in given]
    if given and missing:
        raise ValueError(f"--strategy multi_worker on JAX needs all of {', '.join(JAX_CLUSTER_VARIABLES)} "
                         f"or none of them; missing {', '.join(missing)}. Received: "
                         + ", ".join(f"{key}={value!r}" for key, value in given.items()))
    if given:
        count, index = (given[key].strip() for key in JAX_CLUSTER_VARIABLES[1:])
        if not count.isdigit() or int(count) < 1:
            raise ValueError("KERAS_DISTRIBUTION_NUM_PROCESSES must be a positive integer. "
                             f"Received: KERAS_DISTRIBUTION_NUM_PROCESSES={count!r}")
        if not index.isdigit() or int(index) >= int(count):
            raise ValueError(f"KERAS_DISTRIBUTION_PROCESS_ID must be an integer from 0 to "
                             f"{int(count) - 1}. Received: KERAS_DISTRIBUTION_PROCESS_ID={index!r}")
    try:
        keras.distribution.initialize()
    except (ValueError, RuntimeError) as error:  # e.g. no cluster variables and none detected
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(f"--strategy multi_worker on JAX could not join the cluster ({first}); "
                         f"set {', '.join(JAX_CLUSTER_VARIABLES)} on every process "
                         "(docs/training.md: Several hosts on JAX)") from None


def _jax(name):
    import jax

    if name == "multi_worker":
        _jax_cluster()
    devices, processes = jax.devices(), jax.process_count()
    if name in ("mirrored", "multi_worker") or (name == "auto" and len(devices) > 1):
        keras.distribution.set_distribution(keras.distribution.DataParallel(devices=devices))
        return Placement("data_parallel", len(devices), jax.process_index() == 0,
                         [str(d) for d in devices], processes=processes,
                         collective_saves=processes > 1)
    keras.distribution.set_distribution(None)
    return Placement("one_device", 1, True, [str(devices[0])])


def placement(name="auto"):
    """Pick and set up the strategy for this process.

    TensorFlow: `auto` is `MirroredStrategy` over every GPU when more than one
    is visible, else `OneDeviceStrategy`; `mirrored` mirrors over the GPUs, or
    over the logical CPU devices when there are none; `multi_worker` is
    `MultiWorkerMirroredStrategy` configured by `TF_CONFIG`. JAX: `auto` and
    `mirrored` use `keras.distribution.DataParallel` over all devices when
    there are several; `multi_worker` first joins the processes named by
    `KERAS_DISTRIBUTION_JOB_ADDRESSES` (the coordinator first),
    `KERAS_DISTRIBUTION_NUM_PROCESSES` and `KERAS_DISTRIBUTION_PROCESS_ID`
    (`keras.distribution.initialize()`), then uses `DataParallel` over every
    process's devices. PyTorch: `mirrored` (one host) and `multi_worker` train one replica per
    process of `torchrun` over `torch.distributed` (`clzoo.train.torch_processes`); `auto`
    does so under `torchrun` with several processes, else one device.

    Raises:
        ValueError: for an unknown name, `multi_worker` without `TF_CONFIG`
            (TensorFlow) or with a partial / malformed `KERAS_DISTRIBUTION_*`
            set (JAX), or a multi-device strategy on the torch backend outside `torchrun`.
    """
    if name not in STRATEGIES:
        raise ValueError(f"`strategy` must be one of {STRATEGIES}. Received: strategy={name!r}")
    backend = keras.backend.backend()
    if backend == "tensorflow":
        return _tensorflow(name)
    if backend == "jax":
        return _jax(name)
    return _torch(name)


def _torch(name):
    """One process per device under `torchrun` (`clzoo.train.torch_processes`); else one device."""
    from clzoo.train import torch_processes

    several = torch_processes.launched() and int(os.environ["WORLD_SIZE"]) > 1
    if name in ("mirrored", "multi_worker") or (name == "auto" and several):
        rank, world, devices = torch_processes.join("multi_worker" if name == "auto" else name)
        return Placement("multi_worker" if name == "auto" else name, world, rank == 0, devices,
                         processes=world)
    return Placement("one_device", 1, True, [str(keras.config.backend())])


def tf_worker_count(place):
    """Workers of a TensorFlow `multi_worker` run (each one input pipeline); 1 otherwise."""
    if place.strategy is None or place.name != "multi_worker":
        return 1
    return place.strategy.num_replicas_in_sync // len(place.strategy.extended.worker_devices)


def per_worker_batches(strategy, build, global_batch):
    """Each worker's own rows of every global batch, through `tf.distribute.InputContext`.

    `build((index, count))` returns the stream of this worker's rows (`index` of
    `count` input pipelines: `batch_size // count` rows of each global batch, as
    for JAX or torch processes); it is cut into one batch per local replica, in
    replica order, so replica `r` of worker `w` takes the rows one device would
    give global replica `w * replicas_per_worker + r`. Returns the
    `strategy.distribute_datasets_from_function` dataset, which `fit` takes as it
    is, with the stream's `clzoo_stream` facts (its steps are the stream's).

    Args:
        strategy: a `tf.distribute.Strategy` (MultiWorkerMirroredStrategy, or Mirrored: one
            input pipeline).
        build: `(index, count) -> tf.data.Dataset` of `(views, labels)` batches of
            `global_batch // count` rows (`clzoo.data.streams`' `shard`), with its
            `clzoo_stream` facts.
        global_batch: `training.batch_size`, divisible by the replicas in sync.

    Returns:
        a `tf.distribute.DistributedDataset`; each replica's batch has
        `global_batch // num_replicas_in_sync` rows.

    Raises:
        ValueError: as `InputContext.get_per_replica_batch_size`, for a global batch that the
            replicas do not divide.

    Example: `tests/train/test_worker_input.py` (2 logical CPUs: each replica takes its
    slice of the global batch, in order).
    """
    facts = {}

    def per_worker(context):
        data = build((context.input_pipeline_id, context.num_input_pipelines))
        facts.update(data.clzoo_stream)
        local = global_batch // context.num_input_pipelines
        per_replica = context.get_per_replica_batch_size(global_batch)
        return data if per_replica == local else data.rebatch(per_replica, drop_remainder=True)

    distributed = strategy.distribute_datasets_from_function(per_worker)
    distributed.clzoo_stream = facts
    return distributed


def synchronize_batch_norm(model):
    """Compute batch-norm statistics over the global batch on every replica (TensorFlow).

    Without it each replica normalizes with its own slice's statistics, so a
    mirrored run no longer matches one device on the same global batch.
    Saved files must not carry the flag (it only loads on TensorFlow): save
    inside `portable_batch_norm(model)`.
    """
    for layer in batch_norm_layers(model):
        layer.synchronized = True


@contextlib.contextmanager
def portable_batch_norm(model):
    """Clear the `synchronized` flag of batch-norm layers while saving, then restore it."""
    flagged = [layer for layer in batch_norm_layers(model) if layer.synchronized]
    for layer in flagged:
        layer.synchronized = False
    try:
        yield
    finally:
        for layer in flagged:
            layer.synchronized = True


def write_once(place, path, write_fn, suffix=""):
    """`atomic_write(path, write_fn)` on the chief; the other processes write a throwaway copy.

    Under `place.collective_saves` (JAX over several processes) `model.save`
    gathers every array across processes, so a save that only the chief
    called would wait forever. Every process calls this; the non-chief ones
    run `write_fn` into a temporary folder (outside the run folder) that is
    deleted at once. Without collective saves non-chief processes do nothing.

    Returns:
        `path` on the chief, else None.

    Example (one process: the chief writes, atomically):

    >>> import pathlib, tempfile, types
    >>> from clzoo.train.distribute import write_once
    >>> place = types.SimpleNamespace(is_chief=True, collective_saves=False)
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "note.txt"
    >>> write_once(place, path, lambda tmp: pathlib.Path(tmp).write_text("hi")).read_text()
    'hi'
    """
    from clzoo.files import atomic_write

    if place.is_chief:
        return atomic_write(path, write_fn, suffix=suffix)
    if place.collective_saves:
        with tempfile.TemporaryDirectory(prefix="clzoo-throwaway-") as folder:
            write_fn(os.path.join(folder, "throwaway" + suffix))
    return None


FINISH_TIMEOUT_S = 24 * 3600  # the chief's final evaluation (kNN, probes) can take long


def finish_together(place):
    """Wait until every process gets here (JAX over several processes; else returns at once).

    A process that exits while another still works takes the `jax.distributed`
    cluster down with it (the coordinator lives in process 0), so the
    non-chief processes wait here while the chief evaluates, and the chief
    calls it when done (also on error, from a `finally`). The wait is a
    barrier of the coordination service with an explicit timeout, not a
    device collective: a gloo collective whose communicator is not set up yet
    gives up after 30 s (seen with `sync_global_devices` before any other
    collective), far shorter than an evaluation.
    """
    if place.processes <= 1 or keras.backend.backend() != "jax":
        return
    from clzoo.compat import jax_distributed_client

    client = jax_distributed_client()
    if client is None:  # joined by other means (e.g. a TPU runtime): a device collective then
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices("clzoo: run finished")
        return
    client.wait_at_barrier("clzoo: run finished", timeout_in_ms=FINISH_TIMEOUT_S * 1000)


@contextlib.contextmanager
def chief_alone(place):
    """Run the block on this process only (the chief's final evaluation), then `finish_together`.

    Under JAX over several processes the global `DataParallel` distribution
    would place new variables on every process's devices; it is cleared for
    the block, so a model loaded inside lives on this process alone. Over
    `torch.distributed` processes the losses gather nothing inside the block.
    """
    if place.processes > 1 and keras.backend.backend() == "jax":
        keras.distribution.set_distribution(None)
    from clzoo.losses.distributed import processes_paused

    try:  # torch: the other processes are gone; a loss computed here gathers nothing
        with processes_paused():
            yield
    finally:
        finish_together(place)
