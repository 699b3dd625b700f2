"""What training bought: the run's kNN and probe, measured the same way on two baselines.

- raw pixels: the test images' pixels, flattened, as features (no encoder);
- random init: the recipe's encoder as it was before the first step.

An encoder that does not beat its raw-pixel baseline has learned nothing a kNN
on the pixels does not already know; the random-init row shows how much the
architecture alone gives (Saxe et al. 2011 report strong random-feature probes).
"""

import numpy as np

BASELINES = ("raw_pixels", "random_init")


def raw_pixel_features(images, size=None):
    """Flattened pixels in [0, 1] as features.

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
    if streamed or size is not None and tuple(images.shape[1:3]) != (size, size):
        from clzoo.data.pipeline import eval_dataset

        batches = eval_dataset(images, size=size)
        # tf.data yields the batches, the TensorFlow-free PyDataset `(batch,)` tuples
        return np.concatenate([np.asarray(b[0] if isinstance(b, tuple) else b)
                               for b in batches]).reshape(len(images), -1)
    return images.reshape(len(images), -1).astype(np.float32) / 255.0


def baseline_metrics(train, test, random_encoder=None, ks=None, probe=True,
                     size=None, verbose=False):
    """kNN (and probe) top-1 of the raw-pixel and random-init baselines on one split.

    Args:
        train, test: `clzoo.data.Split`s (the run's training memory and test set).
        random_encoder: `keras.Model`, the untrained encoder; None skips that row.
        ks: kNN neighbourhood sizes, as for the trained encoder (as `evaluate_embeddings`:
            None for the default k that fit the training set).
        probe: also fit the logistic-regression probe (L-BFGS) on each baseline.
        size: the encoder's input size (raw pixels are resized to it).
        verbose: progress lines.

    Returns:
        `{"raw_pixels": Baseline, "random_init": Baseline}` (`clzoo.eval.records.Baseline`:
        `knn` `{"k5": acc, ...}` and `probe`, None without `probe`), accuracies in [0, 1].
    """
    from clzoo.eval.embed import embed
    from clzoo.eval.records import Baseline
    from clzoo.eval.report import evaluate_embeddings

    metrics = ("knn", "probe") if probe else ("knn",)
    features = {"raw_pixels": lambda images: raw_pixel_features(images, size)}
    if random_encoder is not None:
        features["random_init"] = lambda images: embed(random_encoder, images, size=size,
                                                       normalize=False, verbose=False)
    out = {}
    for name, featurize in features.items():
        if verbose:
            print(f"[clzoo eval] baseline: {name} ...", flush=True)
        result = evaluate_embeddings(featurize(train.images), train.labels,
                                     featurize(test.images), test.labels, metrics,
                                     ks=ks, verbose=False)
        out[name] = Baseline(knn=result.knn, probe=result.probe)
    return out
