"""Where training runs: `--strategy auto|one_device|mirrored|multi_worker` on each backend."""

import contextlib
import os
from dataclasses import dataclass, field

import keras

from clzoo.compat import batch_norm_layers

STRATEGIES = ("auto", "one_device", "mirrored", "multi_worker")


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
    """

    name: str
    replicas: int = 1
    is_chief: bool = True
    devices: list = field(default_factory=list)
    strategy: object = None

    def scope(self):
        return self.strategy.scope() if self.strategy is not None else contextlib.nullcontext()

    def describe(self):
        return {"strategy": self.name, "replicas": self.replicas, "devices": self.devices,
                "is_chief": self.is_chief}


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


def _jax(name):
    import jax

    if name == "multi_worker":
        # Multi-host JAX: the coordinator address and process ids come from the
        # environment (keras.distribution.initialize reads them).
        keras.distribution.initialize()
    devices = jax.devices()
    if name in ("mirrored", "multi_worker") or (name == "auto" and len(devices) > 1):
        keras.distribution.set_distribution(keras.distribution.DataParallel(devices=devices))
        return Placement("data_parallel", len(devices), jax.process_index() == 0,
                         [str(d) for d in devices])
    keras.distribution.set_distribution(None)
    return Placement("one_device", 1, True, [str(devices[0])])


def placement(name="auto"):
    """Pick and set up the strategy for this process.

    TensorFlow: `auto` is `MirroredStrategy` over every GPU when more than one
    is visible, else `OneDeviceStrategy`; `mirrored` mirrors over the GPUs, or
    over the logical CPU devices when there are none; `multi_worker` is
    `MultiWorkerMirroredStrategy` configured by `TF_CONFIG`. JAX: `auto` and
    `mirrored` use `keras.distribution.DataParallel` over all devices when
    there are several; `multi_worker` first calls
    `keras.distribution.initialize()`. PyTorch: one device only.

    Raises:
        ValueError: for an unknown name, `multi_worker` without `TF_CONFIG`,
            or a multi-device strategy on the torch backend.
    """
    if name not in STRATEGIES:
        raise ValueError(f"`strategy` must be one of {STRATEGIES}. Received: strategy={name!r}")
    backend = keras.backend.backend()
    if backend == "tensorflow":
        return _tensorflow(name)
    if backend == "jax":
        return _jax(name)
    if name in ("mirrored", "multi_worker"):
        raise ValueError(f"--strategy {name} needs the TensorFlow or JAX backend; "
                         f"the {backend} backend trains on one device here.")
    return Placement("one_device", 1, True, [str(keras.config.backend())])


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
