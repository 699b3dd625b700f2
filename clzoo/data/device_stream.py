"""The training stream on the accelerator: `clzoo.data.device_batches`, no TensorFlow.

The split's uint8 images are copied to the device once; each batch is a gather
of its images and a few batched `keras.ops` (`clzoo.data.device_views`) fed by
draws made on the host from `(seed, epoch, position)` (`clzoo.data.device_view_draws`).
As airbench does, nothing per image runs on the host, so the host CPU is not
the bottleneck of a GPU run, and the path needs only Keras' backend (JAX or
PyTorch). It is the same run as `clzoo.data.batches` in everything but the
random numbers: same epochs, same order rule (each epoch from the seed), same
views and ranges, resumable by step; the draws are NumPy's, so the JAX and the
torch streams give the same batches (up to float rounding) and tf.data's differ.

Which stream a run uses (recipe key `training.pipeline`) is chosen from one table,
`clzoo.data.streams.STREAMS`.
"""

import dataclasses

import keras
import numpy as np
from keras import ops

from clzoo.data import device_view_draws as view_draws
from clzoo.data.augmentation_settings import BatchViewConfig, ViewConfig
from clzoo.data.device_views import per_image_view, sample, why_no_device_form
from clzoo.data.stream_checks import check_shard, check_stream


def device_batches(split, kind="views", batch_size=256, seed=0, epochs=1, start_step=0, *,
                   views=None, shuffle=True, shard=None):
    """The whole training run as batches computed on the accelerator, resumable at any step.

    Same arguments, checks and batches per step as `clzoo.data.batches`
    (`kind="views"`), with other random draws (module docstring): epoch `e`
    visits the images in an order fixed by `(seed, e)`, and every view of a
    batch is drawn from `(seed, e, position)`, so the batch at a global step
    is the same whether the run started at 0 or resumed at `start_step`.

    Args:
        split: a `clzoo.data.Split` (uint8 images `(N, H, W, 3)`, int labels `(N,)`).
        kind: `"views"` (the only kind with a device form). Defaults to `"views"`.
        batch_size: global images per batch, in `[1, N]`. Defaults to `256`.
        seed: int. Defaults to `0`.
        epochs: epochs in the whole run, `>= 1`. Defaults to `1`.
        start_step: global step to start from, in `[0, epochs * (N // batch_size)]`.
            Defaults to `0`.
        views: `ViewConfig` (crop, flip, colour jitter, grayscale, solarization;
            not RandAugment or the blur) or `BatchViewConfig` (airbench's flip and
            translate). Defaults to the SupCon CIFAR views.
        shuffle: reshuffle each epoch (`False`: in order). Defaults to `True`.
        shard: `(index, count)`: this process's rows `[index * B / count, (index + 1) * B /
            count)` of every global batch, the only images it reads and decodes, with the views
            the whole batch would give them (several processes: torch's rank and world size,
            `jax.process_index()`, `jax.process_count()`); the union of the shards is the
            one-process batch. Defaults to None (the whole batch).

    Returns:
        `DeviceBatches`: an iterable of `epochs * (N // batch_size) - start_step` pairs
        `(float32 (B, views, size, size, 3) in [0, 1], int32 (B,))` of backend tensors (`B /
        count` rows under `shard`),
        with `len`, `take(n)` and `skip(n)`; `iter()` of it is a generator, which
        `model.fit` takes (with `steps_per_epoch`).

    Raises:
        TypeError: `split` is not a `Split`.
        ValueError: what `clzoo.data.batches` refuses, in its words; a kind or
            view setting without a device form, naming it.

    Example:

    >>> import numpy as np, clzoo
    >>> split = clzoo.data.from_arrays(np.zeros((12, 8, 8, 3), np.uint8), np.arange(12) % 3)
    >>> stream = clzoo.data.device_batches(split, batch_size=4, epochs=3, start_step=2,
    ...                                    views=clzoo.data.ViewConfig(size=8))
    >>> len(stream), tuple(next(iter(stream))[0].shape)
    (7, (4, 2, 8, 8, 3))
    """
    total = check_stream(split, kind, batch_size, seed, epochs, start_step, views, None, None,
                         None, shuffle)
    shard = check_shard(shard, batch_size)
    views = ViewConfig() if views is None else views
    reason = device_form_missing(kind, views)
    if reason:
        raise ValueError(f"the device stream cannot make these batches: {reason}; use the "
                         "tf.data stream (clzoo.data.batches, training.pipeline: tf_data)")
    return DeviceBatches(split, int(batch_size), int(seed), views, bool(shuffle), int(start_step),
                         int(start_step) + total, shard=shard)


def device_form_missing(kind, views):
    """`None` when `kind` with `views` has a device form, else the reason in a few words."""
    if kind != "views":
        return f"kind {kind!r} has no device form (only 'views')"
    return why_no_device_form(views) if views is not None else None


def tensorflow_installed():
    """True when `import tensorflow` would find TensorFlow (it is not imported here)."""
    import importlib.util
    import sys

    if "tensorflow" in sys.modules:
        return sys.modules["tensorflow"] is not None
    try:
        return importlib.util.find_spec("tensorflow") is not None
    except (ImportError, ValueError):
        return False


class DeviceBatches:
    """The batches of steps `[start, stop)` of a run (`device_batches`); the images stay on the device."""

    def __init__(self, split, batch_size, seed, views, shuffle, start, stop, device_images=None,
                 shard=(0, 1)):
        self.split, self.batch_size, self.seed = split, batch_size, seed
        self.views, self.shuffle, self.start, self.stop = views, shuffle, start, stop
        self.steps_per_epoch = len(split) // batch_size
        self.shard = shard  # (index, count): this process's rows of every global batch
        self._images = device_images

    def __len__(self):
        return self.stop - self.start

    @property
    def clzoo_stream(self):
        """What `ContrastiveModel.fit` reads of a clzoo stream: a generator of batches for `fit`."""
        return {"steps_per_epoch": self.steps_per_epoch, "batches": len(self),
                "start_step": self.start, "generator": True}

    def cardinality(self):
        """Batches left, as `tf.data.Dataset.cardinality` (an int here)."""
        return len(self)

    def take(self, count):
        """The first `count` batches (as `tf.data.Dataset.take`)."""
        return self._steps(self.start, min(self.stop, self.start + int(count)))

    def skip(self, count):
        """All but the first `count` batches (as `tf.data.Dataset.skip`)."""
        return self._steps(min(self.stop, self.start + int(count)), self.stop)

    def _steps(self, start, stop):
        return DeviceBatches(self.split, self.batch_size, self.seed, self.views, self.shuffle, start,
                             stop, None if self.from_files else self.images, self.shard)

    @property
    def images(self):
        """The split's uint8 images as one backend tensor on the default device (copied once)."""
        if self._images is None:
            self._images = ops.convert_to_tensor(self.split.images)
        return self._images

    @property
    def from_files(self):
        """True when the split's images stay in their files (`FileImages`): each batch is decoded on
        the host, a few batches ahead of the step, and only that batch goes to the device."""
        return hasattr(self.split.images, "subset")

    def __iter__(self):
        labels = np.asarray(self.split.labels, dtype=np.int32)
        height, width = self.split.images.shape[1:3]
        compute = _compiled(self.views, height, width)
        steps = self._indices(len(labels))
        if not self.from_files:
            for epoch, position, index, whole in steps:
                draws = self._draws(epoch, position, whole, len(labels))
                yield compute(self.images, ops.convert_to_tensor(index.astype(np.int32)), draws), \
                    ops.convert_to_tensor(labels[index])
            return
        for (epoch, position, index, whole), pixels in _decoded_ahead(self.split.images, steps):
            draws = self._draws(epoch, position, whole, len(labels))
            every = ops.convert_to_tensor(np.arange(len(index), dtype=np.int32))
            yield compute(ops.convert_to_tensor(pixels), every, draws), ops.convert_to_tensor(labels[index])

    def _indices(self, count):
        """`(epoch, position, this process's image indices, the global batch's)` of each step in
        `[start, stop)`."""
        epoch, order = None, None
        index, shards = self.shard
        rows = slice(index * self.batch_size // shards, (index + 1) * self.batch_size // shards)
        for step in range(self.start, self.stop):
            if step // self.steps_per_epoch != epoch:
                epoch = step // self.steps_per_epoch
                order = view_draws.epoch_order(count, self.seed, epoch, self.shuffle)
            position = (step % self.steps_per_epoch) * self.batch_size
            whole = order[position:position + self.batch_size]
            yield epoch, position, whole[rows], whole

    def _draws(self, epoch, position, whole, count):
        """The views' draws of the global batch `whole`, cut to this process's rows (each row's
        draws are the same whatever the shard)."""
        draws = _draws(self.views, self.seed, epoch, position, whole, self.split.images.shape,
                       self._coins(count))
        index, shards = self.shard
        if shards == 1:
            return draws
        rows = slice(index * len(whole) // shards, (index + 1) * len(whole) // shards)
        return [{key: value[rows] for key, value in draw.items()} for draw in draws]

    def _coins(self, count):
        if not isinstance(self.views, BatchViewConfig):
            return None
        if getattr(self, "_coin_cache", None) is None:
            self._coin_cache = view_draws.image_coins(count, self.seed)
        return self._coin_cache


AHEAD = 3  # batches decoded ahead of the step on the host (a file-backed split)


def _decoded_ahead(images, steps):
    """`(step, uint8 pixels)` for each `(epoch, position, index)` of `steps`, the pixels decoded
    `AHEAD` batches ahead in a background daemon thread (each batch's files in parallel:
    `FileImages`): a stop is never held up joining it while a read it waits on never returns."""
    from collections import deque

    from clzoo.data.file_images import DaemonPool, result

    ahead, pending = DaemonPool(1, "clzoo-ahead"), deque()
    try:
        for step in steps:
            pending.append((step, ahead.submit(images.__getitem__, step[2])))
            if len(pending) > AHEAD:
                done, pixels = pending.popleft()
                yield done, result(pixels)
        while pending:
            done, pixels = pending.popleft()
            yield done, result(pixels)
    finally:  # closed early (a stop, an error): the batches not yet started are dropped
        for _, pixels in pending:
            pixels.cancel()


def _draws(views, seed, epoch, position, index, shape, coins):
    """Host draws of one batch, as a list (one entry per view) of NumPy arrays."""
    rng = view_draws.batch_generator(seed, epoch, position)
    height, width = shape[1], shape[2]
    if isinstance(views, BatchViewConfig):
        pairs = view_draws.airbench_coordinates(rng, coins[index], epoch, views, height, width)
        return [{"rows": rows, "cols": cols} for rows, cols in pairs]
    return [view_draws.view_draws(rng, len(index), views.for_view(v), height, width)
            for v in range(views.views)]


_COMPILED = {}  # (backend, settings, image shape) -> the batch function, a handful per process


def _compiled(views, height, width):
    """`(images, index, draws) -> views` for one views setting: jitted on JAX, eager elsewhere."""
    key = (keras.backend.backend(), type(views).__name__, repr(views), height, width)
    if key not in _COMPILED:
        if len(_COMPILED) >= 16:
            del _COMPILED[next(iter(_COMPILED))]
        _COMPILED[key] = _batch_function(views)
    return _COMPILED[key]


def _batch_function(views):
    frozen = dataclasses.replace(views)  # later edits to `views` cannot reach a cached function

    def compute(images, index, draws):
        batch = ops.cast(ops.take(images, index, axis=0), "float32") / 255.0
        if isinstance(frozen, BatchViewConfig):
            out = [sample(batch, d["rows"], d["cols"]) for d in draws]
        else:
            out = [per_image_view(batch, d, frozen.for_view(v)) for v, d in enumerate(draws)]
        return ops.stack(out, axis=1)

    if keras.backend.backend() == "jax":
        import jax

        return jax.jit(compute)
    return lambda images, index, draws: compute(images, index, _on_device(draws))


def _on_device(draws):
    """Every draw as a tensor but the jitter's `order`, kept on the host: eager backends then
    shift the hue of only the images that need it (`device_views.color_jitter`)."""
    return [{key: value if key == "order" else ops.convert_to_tensor(value)
             for key, value in draw.items()} for draw in draws]
