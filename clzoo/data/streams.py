"""The training streams behind one table: `STREAMS`, each building a run's batches and saying why it
cannot serve a run; `choose_stream` picks one (recipe key `training.pipeline`), `auto` the first
in `AUTO_ORDER` that can.

Both streams read a split held in memory or one left in its files (`clzoo.data.file_images`), with
the same batches either way, so where the images live (`data_loading`) is not a stream of its own:

- `device`: the views computed by `keras.ops` on the accelerator from host draws
  (`clzoo.data.device_batches`); the images held on the device, or each batch decoded on the host.
- `tf_data`: `clzoo.data.batches`, every kind of batch; TensorFlow's parallel map decodes files.
"""

from collections.abc import Callable
from dataclasses import dataclass

PIPELINES = ("auto", "device", "tf_data")
AUTO_ORDER = ("device", "tf_data")


@dataclass(frozen=True)
class RunShape:
    """What a run asks of its stream: the kind of batch, the views, the backend and the placement."""

    kind: str
    views: object
    backend: str
    processes: int = 1
    replicas: int = 1
    strategy: str = "one_device"


@dataclass(frozen=True)
class Stream:
    """One stream: `why_not(shape)` the reason it cannot serve a run (None: it can), `passed_over(shape)`
    why `auto` prefers another although this one could run, `build(split, kind, batch_size, seed,
    epochs, start_step, **options)` its batches; `auto` says in words when `auto` picks it (the
    API reference's table of `STREAMS`)."""

    name: str
    description: str
    why_not: Callable
    passed_over: Callable
    build: Callable
    auto: str = ""


def _device_why_not(shape):
    from clzoo.data.device_stream import device_form_missing

    reason = device_form_missing(shape.kind, shape.views)
    if reason:
        return reason
    several = shape.processes > 1 or shape.strategy == "multi_worker"
    if shape.backend == "tensorflow" and (several or shape.replicas > 1):
        return (f"not under strategy {shape.strategy} ({shape.processes} processes, {shape.replicas} "
                "replicas): on TensorFlow it feeds one device")
    if shape.processes > 1 and shape.replicas != shape.processes:
        return (f"not under strategy {shape.strategy} over {shape.processes} processes of "
                f"{shape.replicas} devices: each process takes its rows of the batch onto its one device")
    return None


def _device_passed_over(shape):
    return "on TensorFlow, tf.data is the native stream" if shape.backend == "tensorflow" else None


def _device_build(split, kind, batch_size, seed, epochs, start_step, views=None, shard=None,
                  shuffle=True, **_):
    from clzoo.data.device_stream import device_batches

    return device_batches(split, kind, batch_size, seed, epochs, start_step, views=views, shuffle=shuffle,
                          shard=shard)


def _tf_data_why_not(shape):
    from clzoo.data.device_stream import tensorflow_installed

    return None if tensorflow_installed() else ("it needs TensorFlow, which is not installed here; "
                                                "pip install tensorflow")


def _tf_data_build(split, kind, batch_size, seed, epochs, start_step, **options):
    from clzoo.data.tf_data_stream import batches

    return batches(split, kind, batch_size, seed, epochs, start_step, **options)


STREAMS = {
    "device": Stream("device", "views computed by keras.ops on the accelerator (JAX, PyTorch)",
                     _device_why_not, _device_passed_over, _device_build,
                     auto="first choice on JAX and PyTorch (one process, or one device per "
                          "process), for `views` batches of views it computes"),
    "tf_data": Stream("tf_data", "clzoo.data.batches: tf.data, every kind of batch",
                      _tf_data_why_not, lambda shape: None, _tf_data_build,
                      auto="the rest: on TensorFlow, other kinds of batch, views the device stream "
                           "lacks (needs TensorFlow)"),
}


def choose_stream(wanted, shape):
    """The name of the stream a run uses: `wanted` itself (`"device"`, `"tf_data"`) when it can serve
    `shape`, or for `"auto"` the first of `AUTO_ORDER` that can and is not passed over.

    Args:
        wanted: `"auto"`, or a name of `STREAMS`.
        shape: the run's `RunShape`.

    Raises:
        ValueError: one line naming `training.pipeline` and the reason: an unknown name; a stream
            that cannot serve the run; `auto` with none that can (each one's reason).

    Example:

    >>> from clzoo.data import ViewConfig
    >>> from clzoo.data.streams import RunShape, choose_stream
    >>> choose_stream("auto", RunShape("views", ViewConfig(), "jax")), \\
    ...     choose_stream("auto", RunShape("soft_targets", ViewConfig(views=1), "jax"))
    ('device', 'tf_data')
    """
    if wanted not in PIPELINES:
        raise ValueError(f"training.pipeline = {wanted!r}: must be one of {', '.join(PIPELINES)}")
    if wanted != "auto":
        reason = STREAMS[wanted].why_not(shape)
        if reason:
            raise ValueError(f"training.pipeline = {wanted}: {reason}; use "
                             f"{'tf_data' if wanted == 'device' else 'device'} (or auto)")
        return wanted
    reasons = []
    for name in AUTO_ORDER:
        reason = STREAMS[name].why_not(shape)
        if reason is None and STREAMS[name].passed_over(shape) is None:
            return name
        reasons.append(f"{name}: {reason or STREAMS[name].passed_over(shape)}")
    raise ValueError(f"training.pipeline = auto: no stream can serve this run ({'; '.join(reasons)}); "
                     "pip install tensorflow, or train on the device stream with views it covers")


def resolve_pipeline(pipeline, kind, views, backend=None):
    """`choose_stream` for one process on one device: `"device"` or `"tf_data"`.

    Example:

    >>> from clzoo.data import ViewConfig
    >>> from clzoo.data.streams import resolve_pipeline
    >>> resolve_pipeline("auto", "views", ViewConfig(), "tensorflow")
    'tf_data'
    """
    import keras

    return choose_stream(pipeline, RunShape(kind, views, backend or keras.backend.backend()))


_TF_DATA_OPTIONS = ("mix", "num_classes", "samples_per_class", "shuffle", "shard")


def training_batches(split, kind="views", batch_size=256, seed=0, epochs=1, start_step=0, *,
                     pipeline="auto", views=None, **options):
    """The whole training run's batches on the stream `clzoo train` would pick here: the entry point
    that works on every install (TensorFlow, or JAX / PyTorch without it).

    `pipeline="auto"` takes the device stream (`clzoo.data.device_batches`) on JAX and PyTorch when the
    batch kind and views have a device form, else tf.data (`clzoo.data.batches`); on TensorFlow, tf.data.
    Both give the same batch shapes, and each resumes at `start_step`.

    Args:
        split, kind, batch_size, seed, epochs, start_step: as `clzoo.data.batches`.
        pipeline: `"auto"`, `"device"` or `"tf_data"` (recipe key `training.pipeline`).
        views: `ViewConfig` / `BatchViewConfig`; None: the SupCon CIFAR views (kind `"views"`).
        **options: the tf.data stream's other arguments (`mix`, `num_classes`, `samples_per_class`,
            `shuffle`, `shard`); the device stream takes `shuffle` and `shard`.

    Returns:
        `tf.data.Dataset` or `DeviceBatches`: either goes to `ContrastiveModel.fit` as it is.

    Raises:
        TypeError: `views` not a `ViewConfig` / `BatchViewConfig`, or an argument neither stream takes.
        ValueError: one line naming `training.pipeline` when no stream can serve the run here (e.g.
            soft targets without TensorFlow), or what the chosen stream refuses.

    Example:

    >>> import numpy as np, clzoo
    >>> split = clzoo.data.from_arrays(np.zeros((8, 8, 8, 3), np.uint8), np.arange(8) % 2)
    >>> stream = clzoo.data.training_batches(split, batch_size=4, epochs=2,
    ...                                      views=clzoo.data.ViewConfig(size=8))
    >>> len(list(iter(stream)))
    4
    """
    from clzoo.data.augmentation_settings import BatchViewConfig, ViewConfig

    if views is None and kind != "soft_targets":
        views = ViewConfig()
    if views is not None and not isinstance(views, (ViewConfig, BatchViewConfig)):
        raise TypeError(f"training_batches: `views` must be a clzoo.data.ViewConfig or BatchViewConfig "
                        f"(clzoo.data.view_recipe(name) gives one). Received: {views!r}")
    unknown = sorted(set(options) - set(_TF_DATA_OPTIONS))
    if unknown:
        raise TypeError(f"training_batches: unexpected argument(s) {', '.join(unknown)}; it takes "
                        f"{', '.join(_TF_DATA_OPTIONS)} besides the run's")
    name = resolve_pipeline(pipeline, kind, views)
    device_only = sorted(set(options) - {"shuffle", "shard"}) if name == "device" else []
    if device_only:
        raise ValueError(f"training_batches: {', '.join(device_only)} not taken by the device stream; "
                         "pass pipeline='tf_data' (needs TensorFlow)")
    return STREAMS[name].build(split, kind, batch_size, seed, epochs, start_step, views=views, **options)
