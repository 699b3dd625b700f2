"""What training bought: the run's kNN and probe, measured the same way on two baselines.

- raw pixels: the test images' pixels, flattened, as features (no encoder), at most
  `RAW_PIXEL_SIDE` (32) pixels a side and on at most `RAW_PIXEL_ROWS` (50,000) images of
  each split (a class-balanced sample beyond that, named in one printed line);
- random init: the recipe's encoder as it was before the first step.

An encoder that does not beat its raw-pixel baseline has learned nothing a kNN
on the pixels does not already know; the random-init row shows how much the
architecture alone gives (Saxe et al. 2011 report strong random-feature probes).
"""

import time

import numpy as np

from clzoo.eval.embed import BATCH_PIXELS

BASELINES = ("raw_pixels", "random_init")
# The raw-pixel row's bounds: its features are 3,072 floats an image at 32 px (a 224 px image
# flattened is 150,528), and its probe copies them twice in float64; both bound its memory.
RAW_PIXEL_SIDE = 32
RAW_PIXEL_ROWS = 50_000  # CIFAR's 50,000 training images whole (614 MB at 32 px); ImageNet sampled


def raw_pixel_features(images, size=None):
    """Flattened pixels in [0, 1] as features.

    The images are read (a `FileImages` decoded), resized and scaled a batch of at most
    `clzoo.eval.embed.BATCH_PIXELS` pixels at a time into the one float32 result: the split is
    never held whole in float32 at its own size.

    Args:
        images: uint8 `(N, H, W, C)`, or a file-backed `FileImages`.
        size: resize to `size x size` first (the encoder's input size), or None.

    Returns:
        float32 `(N, size * size * C)` (or `(N, H * W * C)`).

    Example:

    >>> import numpy as np, clzoo
    >>> clzoo.eval.raw_pixel_features(np.full((2, 4, 4, 3), 255, np.uint8)).shape
    (2, 48)
    """
    streamed = hasattr(images, "subset")  # a file-backed split: decoded batch by batch
    images = images if streamed else np.asarray(images)
    if images.ndim != 4 or images.dtype != np.uint8:
        raise ValueError(f"`images` must be uint8 (N, H, W, C). Received: dtype={images.dtype}, "
                         f"shape={images.shape}")
    height, width, channels = images.shape[1:]
    side = (height, width) if size is None else (size, size)
    out = np.empty((len(images), side[0] * side[1] * channels), np.float32)
    rows = max(1, min(512, BATCH_PIXELS // max(height * width, side[0] * side[1])))
    if not streamed and side == (height, width):
        for start in range(0, len(images), rows):  # as astype(float32) / 255, a batch at a time
            part = images[start:start + rows].reshape(-1, out.shape[1])
            np.divide(part, np.float32(255.0), out=out[start:start + len(part)], dtype=np.float32)
        return out
    from clzoo.data.pipeline import eval_dataset

    start = 0
    for batch in eval_dataset(images, size=size, batch_size=rows):
        # tf.data yields the batches, the TensorFlow-free PyDataset `(batch,)` tuples
        batch = np.asarray(batch[0] if isinstance(batch, tuple) else batch)
        out[start:start + len(batch)] = batch.reshape(len(batch), -1)
        start += len(batch)
    return out


def raw_pixel_side(images, size):
    """The side the raw-pixel baseline resizes to: `size` (None: the images' own), at most
    `RAW_PIXEL_SIDE`; None when the images are kept as they are."""
    own = max(images.shape[1:3])
    if size is None and own <= RAW_PIXEL_SIDE:
        return None
    return min(int(size or own), RAW_PIXEL_SIDE)


def class_balanced_rows(labels, limit=RAW_PIXEL_ROWS, seed=0):
    """Sorted rows of a seeded sample of at most `limit` rows keeping each class's share (each
    class at least one row); None when there are no more than `limit` rows."""
    labels = np.asarray(labels)
    if len(labels) <= limit:
        return None
    rng = np.random.default_rng(seed)
    rows = [rng.permutation(np.flatnonzero(labels == c))[:max(1, limit * np.sum(labels == c) // len(labels))]
            for c in np.unique(labels)]
    return np.sort(np.concatenate(rows))


def _sampled(split, verbose):
    """`(images, labels)` of `split`, or of its `class_balanced_rows` sample (one printed line)."""
    rows = class_balanced_rows(split.labels)
    if rows is None:
        return split.images, np.asarray(split.labels)
    if verbose:
        print(f"[clzoo eval] baseline: raw_pixels on a class-balanced sample of {len(rows):,} of "
              f"{len(split.labels):,} images (RAW_PIXEL_ROWS)", flush=True)
    images = split.images.subset(rows) if hasattr(split.images, "subset") else split.images[rows]
    return images, np.asarray(split.labels)[rows]


def baseline_metrics(train, test, random_encoder=None, ks=None, probe=True,
                     size=None, verbose=False):
    """kNN (and probe) top-1 of the raw-pixel and random-init baselines on one split.

    The raw-pixel row is measured at most `RAW_PIXEL_SIDE` (32) pixels a side (larger images and
    encoder inputs are downsampled to 32x32, so for them it differs from a kNN on the full-size
    pixels) and, for a split of more than `RAW_PIXEL_ROWS` (50,000) images, on a seeded
    class-balanced sample of that many (one printed line with `verbose`): its memory does not grow
    with the images' size or the split's. The random-init row embeds every image.

    Args:
        train, test: `clzoo.data.Split`s (the run's training memory and test set).
        random_encoder: `keras.Model`, the untrained encoder; None skips that row.
        ks: kNN neighbourhood sizes, as for the trained encoder (as `evaluate_embeddings`:
            None for the default k that fit the training set).
        probe: also fit the logistic-regression probe (L-BFGS) on each baseline.
        size: the encoder's input size (the random-init encoder's input; raw pixels are
            resized to it, up to `RAW_PIXEL_SIDE`).
        verbose: progress lines.

    Returns:
        `{"raw_pixels": Baseline, "random_init": Baseline}` (`clzoo.eval.records.Baseline`:
        `knn` `{"k5": acc, ...}` and `probe`, None without `probe`), accuracies in [0, 1].
    """
    from clzoo.eval.embed import embed

    metrics = ("knn", "probe") if probe else ("knn",)
    out = {}
    side = raw_pixel_side(train.images, size)
    if verbose:
        resized = "" if side is None or side == size else f" at {side}x{side} px (RAW_PIXEL_SIDE)"
        print(f"[clzoo eval] baseline: raw_pixels{resized} ...", flush=True)
    started = time.perf_counter()
    out["raw_pixels"] = _baseline(_sampled(train, verbose), _sampled(test, verbose),
                                  lambda images: raw_pixel_features(images, side), metrics, ks)
    if verbose:
        print(f"[clzoo eval] baseline: raw_pixels: {time.perf_counter() - started:.1f} s", flush=True)
    if random_encoder is not None:
        if verbose:
            print("[clzoo eval] baseline: random_init ...", flush=True)
        started = time.perf_counter()
        out["random_init"] = _baseline(
            (train.images, train.labels), (test.images, test.labels),
            lambda images: embed(random_encoder, images, size=size, normalize=False, verbose=False),
            metrics, ks)
        if verbose:
            print(f"[clzoo eval] baseline: random_init: {time.perf_counter() - started:.1f} s", flush=True)
    return out


def _baseline(train, test, featurize, metrics, ks):
    """The `Baseline` of features `featurize(images)` of `(images, labels)` pairs."""
    from clzoo.eval.records import Baseline
    from clzoo.eval.report import evaluate_embeddings

    result = evaluate_embeddings(featurize(train[0]), train[1], featurize(test[0]), test[1],
                                 metrics, ks=ks, verbose=False)
    return Baseline(knn=result.knn, probe=result.probe)
