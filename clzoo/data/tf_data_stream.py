"""One resumable stream of training batches for every kind of example: `clzoo.data.batches`.

A training run is one `tf.data` stream of `epochs * (N // batch_size)` batches.
Every random draw (epoch order, each image's augmentation, each batch's
mixing or class choice) is a function of `seed` and a position in the run, so
the stream built with `start_step=s` yields exactly the batches an
uninterrupted stream yields from step `s` on: a checkpointed run resumes
where it stopped. Kinds:

- `"views"`: `views.views` augmented views of each image, integer labels
  (`ContrastiveModel`).
- `"soft_targets"`: one image (augmented if `views` is given), label-smoothed
  MixUp / CutMix soft targets (`SoftTargetInfoNCELoss`, cross-entropy).
- `"balanced"`: P x K batches (P classes, K images of each) of views, so every
  anchor has a positive.
"""

import numpy as np
import tensorflow as tf

from clzoo.data.augmentation_settings import BatchViewConfig, MixConfig, ViewConfig
from clzoo.data.sampler import class_balanced_indices
from clzoo.data.soft_targets import soft_target_mixer
from clzoo.data.stream_checks import KINDS, check_shard, check_stream  # noqa: F401  (KINDS: its old home)
from clzoo.data.tf_data_batch_views import batch_views, image_coins
from clzoo.data.tf_data_views import augment_view, multi_view

_EPOCH_STRIDE = 1_000_003  # view seed of (epoch, position): (epoch * stride + seed, position)


def batches(split, kind="views", batch_size=256, seed=0, epochs=1, start_step=0, *, views=None,
            mix=None, num_classes=None, samples_per_class=None, shuffle=True, shard=None):
    """The whole training run as one stream of batches, resumable at any step.

    Epoch `e` visits the images in an order fixed by `(seed, e)` (or in
    order with `shuffle=False`) and augments each from a seed fixed by
    `(seed, e, position)`; soft targets are mixed and P x K classes drawn
    from `(seed, step)`. So the batch at a global step is the same whether
    the run started at 0 or resumed at `start_step`. Batches never span two
    epochs: the last `N % batch_size` images of each epoch are left out.

    Args:
        split: a `clzoo.data.Split` (uint8 images `(N, H, W, 3)`, int labels `(N,)`).
        kind: `"views"`, `"soft_targets"` or `"balanced"`. Defaults to `"views"`.
        batch_size: global images per batch, in `[1, N]`. Defaults to `256`.
        seed: int. Defaults to `0`.
        epochs: epochs in the whole run, `>= 1`. Defaults to `1`.
        start_step: global step to start from, in `[0, epochs * (N // batch_size)]`.
            Defaults to `0`.
        views: `ViewConfig`, or for `"views"` a `BatchViewConfig` (airbench's
            batch-wise flip and translate). Defaults to the SupCon CIFAR views for `"views"` and
            `"balanced"`; for `"soft_targets"`, `None` (no augmentation), else one
            view (`views=1`).
        mix: `MixConfig`, `"soft_targets"` only. Defaults to `MixConfig()`.
        num_classes: width of the soft targets, `"soft_targets"` only.
            Defaults to `len(split.class_names)`.
        samples_per_class: K of `"balanced"` (required there); `batch_size` must
            be a multiple of it (P = `batch_size // K`, at most the classes present).
        shuffle: reshuffle each epoch (`False`: in order; not for `"balanced"`).
            Defaults to `True`.
        shard: `(index, count)`: this process's part of every global batch, rows
            `[index * B / count, (index + 1) * B / count)`, the only images it reads and
            decodes (several processes: `jax.process_index()`, `jax.process_count()`);
            the union of the shards is the one-process batch. `"views"` with a
            `ViewConfig` only (the others draw across the whole batch). Defaults to
            None (the whole batch).

    Returns:
        `tf.data.Dataset` of `epochs * (N // batch_size) - start_step` batches. `"views"` and
        `"balanced"`: `(float32 (B, views, size, size, 3) in [0, 1], int32 (B,))`, `"balanced"` rows
        grouped by class. `"soft_targets"`: `(float32 (B, size, size, 3) in [0, 1], float32 (B,
        num_classes))`, every target row summing to 1 (`(B, H, W, 3)` when `views` is None).

    Raises:
        TypeError: `split` is not a `Split`.
        ValueError: one line naming the argument and what it accepts: an unknown
            `kind`; `batch_size`, `epochs`, `seed`, `start_step` not an int or
            out of range; `views` / `mix` of the wrong type; `mix`, `num_classes`
            or `samples_per_class` with a kind that does not use them; labels
            outside `[0, num_classes)`; a P x K batch the split cannot fill.

    Example:

    >>> import numpy as np, clzoo
    >>> split = clzoo.data.from_arrays(np.zeros((12, 8, 8, 3), np.uint8), np.arange(12) % 3)
    >>> ds = clzoo.data.batches(split, "views", batch_size=4, epochs=3, start_step=2,
    ...                         views=clzoo.data.ViewConfig(size=8))
    >>> int(ds.cardinality()), tuple(next(iter(ds))[0].shape)
    (7, (4, 2, 8, 8, 3))
    >>> images, targets = next(iter(clzoo.data.batches(split, "soft_targets", batch_size=4)))
    >>> tuple(targets.shape), bool(np.allclose(targets.numpy().sum(1), 1.0))
    ((4, 3), True)
    """
    total = check_stream(split, kind, batch_size, seed, epochs, start_step, views, mix, num_classes,
                         samples_per_class, shuffle)
    index, count = _check_shard(shard, kind, views, batch_size)
    if kind == "balanced":
        data = _balanced(split, views or ViewConfig(), batch_size, seed, start_step, total,
                         samples_per_class)
    else:
        positions = _positions(len(split), batch_size, seed, epochs, start_step, shuffle)
        images = image_gather(split.images)
        labels = tf.constant(np.asarray(split.labels, dtype=np.int32))
        if isinstance(views, BatchViewConfig):  # augmented batch by batch
            data = positions.batch(batch_size, drop_remainder=True).map(
                _batch_view_loader(images, labels, views, seed, len(split)),
                num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        else:
            if kind == "views":
                load = _view_loader(labels, views or ViewConfig(), seed)
            else:
                load = _image_loader(labels, views, seed)
            local = batch_size // count
            if count > 1:
                positions = _shard_rows(positions, batch_size, index * local, local)
            data = _with_images(positions, images, local).map(
                load, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
            data = data.batch(local, drop_remainder=True)
        if kind == "soft_targets":
            mixer = soft_target_mixer(mix or MixConfig(), int(num_classes or len(split.class_names)),
                                      seed)
            steps = tf.data.Dataset.range(start_step, start_step + total)
            data = tf.data.Dataset.zip((steps, data)).map(
                mixer, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    data = data.apply(tf.data.experimental.assert_cardinality(total))
    options = tf.data.Options()
    # Each worker keeps its slice of every global batch (MultiWorkerMirroredStrategy); a sharded
    # stream already holds only its own.
    options.experimental_distribute.auto_shard_policy = (
        tf.data.experimental.AutoShardPolicy.OFF if count > 1 else
        tf.data.experimental.AutoShardPolicy.DATA)
    data = data.with_options(options).prefetch(tf.data.AUTOTUNE)
    # read by ContrastiveModel.fit: a fit of several epochs takes one of the stream's per epoch
    data.clzoo_stream = {"steps_per_epoch": (start_step + total) // epochs, "batches": total,
                         "start_step": start_step}
    return data


def _positions(n, batch_size, seed, epochs, start_step, shuffle):
    """`(epoch, position, index)` of every image the run visits from `start_step` on (int64)."""
    steps = n // batch_size
    per_epoch = steps * batch_size
    first_epoch, offset = divmod(int(start_step), steps)

    def epoch_order(epoch):
        order = tf.range(n, dtype=tf.int64)
        if shuffle:
            order = tf.random.experimental.stateless_shuffle(
                order, seed=tf.stack([tf.constant(int(seed), tf.int64), epoch]))
        return tf.data.Dataset.from_tensor_slices(
            (tf.fill([per_epoch], epoch), tf.range(per_epoch, dtype=tf.int64), order[:per_epoch]))

    return (tf.data.Dataset.range(first_epoch, int(epochs)).flat_map(epoch_order)
            .skip(offset * batch_size))


def _check_shard(shard, kind, views, batch_size):
    """`(index, count)` of a valid `shard` (`(0, 1)` for None), or a ValueError naming it."""
    index, count = check_shard(shard, batch_size)
    if count > 1 and (kind != "views" or isinstance(views, BatchViewConfig)):
        raise ValueError(f"`shard` applies to kind 'views' with per-image views (a ViewConfig); "
                         f"kind {kind!r} with {type(views).__name__} draws across the whole batch")
    return index, count


def _shard_rows(positions, batch_size, first, local):
    """The `(epoch, position, index)` of rows `[first, first + local)` of every global batch."""
    def rows(epoch, position, index):
        return epoch[first:first + local], position[first:first + local], index[first:first + local]

    return positions.batch(batch_size, drop_remainder=True).map(rows).unbatch()


def image_gather(images):
    """`gather(index) -> uint8 images` of an int64 index vector into `images`, read by NumPy: a held
    array is indexed where it lies (TensorFlow holding a copy of the split, and copying it again when
    an iterator starts, tripled the memory of a run), a file-backed split
    (`clzoo.data.file_images.FileImages`) decodes the batch's files in its thread pool."""
    shape = tf.TensorShape(images.shape[1:])

    def gather(index):
        pixels = tf.numpy_function(lambda rows: images[rows], [index], tf.uint8, stateful=False)
        pixels.set_shape(index.shape.concatenate(shape))
        return pixels

    return gather


def _with_images(positions, gather, batch_size):
    """`(epoch, position, index)` elements with each one's image, gathered a batch at a time."""
    def attach(epoch, position, index):
        return epoch, position, index, gather(index)

    return (positions.batch(batch_size, drop_remainder=True)
            .map(attach, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).unbatch())


def _view_loader(labels, views, seed):
    def load(epoch, position, index, image):
        view_seed = tf.stack([epoch * _EPOCH_STRIDE + seed, position])
        return multi_view(image, view_seed, views), tf.gather(labels, index)

    return load


def _batch_view_loader(images, labels, views, seed, count):
    coins = image_coins(count, seed)

    def load(epoch, position, index):
        batch = batch_views(images(index), tf.constant(int(seed), tf.int64), epoch[0],
                            position[0], tf.gather(coins, index), views)
        return batch, tf.gather(labels, index)

    return load


def _image_loader(labels, views, seed):
    def load(epoch, position, index, image):
        if views is None:
            image = tf.image.convert_image_dtype(image, tf.float32)
        else:
            image = augment_view(image, tf.stack([epoch * _EPOCH_STRIDE + seed, position]), views)
        return image, tf.gather(labels, index)

    return load


def _balanced(split, views, batch_size, seed, start_step, total, samples_per_class):
    """P x K batches of views: classes and images from `(seed, step)`, views from `(seed + 1, step)`."""
    images = image_gather(split.images)
    labels = tf.constant(np.asarray(split.labels, dtype=np.int32))
    spec = tf.TensorSpec((views.views, views.size, views.size, 3), tf.float32)

    def load(step, indices):
        image_seeds = tf.random.experimental.stateless_split(
            tf.stack([tf.cast(seed, tf.int64) + 1, step]), tf.shape(indices)[0])
        batch = tf.map_fn(lambda pair: multi_view(pair[0], pair[1], views),
                          (images(indices), image_seeds), fn_output_signature=spec)
        return batch, tf.gather(labels, indices)

    indices = class_balanced_indices(split.labels, batch_size // samples_per_class,
                                     samples_per_class, seed, start_step=start_step).take(total)
    steps = tf.data.Dataset.range(start_step, start_step + total)
    return tf.data.Dataset.zip((steps, indices)).map(load, num_parallel_calls=tf.data.AUTOTUNE,
                                                     deterministic=True)
