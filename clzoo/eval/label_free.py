"""What an encoder's embeddings show without labels: alignment, uniformity and effective rank.

Alignment and uniformity are Wang & Isola's (ICML 2020, "Understanding Contrastive Representation
Learning through Alignment and Uniformity on the Hypersphere", Sec. 4.1, the definitions of
L_align and L_uniform); the effective rank is RankMe's (Garrido et al., ICML 2023, eq. 1, after
Roy & Vetterli 2007). An unlabelled run (`clzoo.data.unlabelled`) reports these instead of kNN and
probes, measured on a seeded sample of its images seen through the recipe's own views.
"""

import dataclasses
import time

import numpy as np

from clzoo.eval._checks import unit_rows

SAMPLE = 2048  # images the report embeds: its uniformity is over SAMPLE x SAMPLE pairs, not N x N


def _rows(name, x, unit=False):
    """`x` as float64 `(N, D)`, N >= 2 and D >= 1, finite; with `unit`, rows of length 1."""
    x = np.asarray(x, np.float64)
    if x.ndim != 2 or len(x) < 2 or x.shape[1] < 1:
        raise ValueError(f"`{name}` must be embeddings (N, D) with N >= 2 and D >= 1. Received: "
                         f"shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"`{name}` holds non-finite values (NaN or inf).")
    if unit:
        with np.errstate(over="ignore"):  # lengths of inf are named as such below
            lengths = np.linalg.norm(x, axis=1)
        if np.max(np.abs(lengths - 1.0)) > 1e-3:
            raise ValueError(f"`{name}` must hold L2-normalized rows (the definition is on the unit "
                             f"sphere); their lengths run from {lengths.min():.4g} to "
                             f"{lengths.max():.4g}. Normalize them first (x / ||x||).")
    return x


def _positive(name, value, zero=False):
    """`value` as a float > 0 (>= 0 with `zero`), else a ValueError naming it."""
    value = float(value)
    if not (value >= 0 if zero else value > 0) or not np.isfinite(value):
        raise ValueError(f"`{name}` must be a finite number {'>= 0' if zero else '> 0'}. "
                         f"Received: {name}={value}")
    return value


def alignment(anchors, positives, alpha=2.0):
    """Mean distance between the embeddings of two views of one image, L_align (Wang & Isola 2020).

    `E ||f(x) - f(x+)||_2^alpha` over the pairs. Lower is better aligned: 0 when both views embed
    alike; at most `2**alpha` for unit rows.

    Args:
        anchors: float `(N, D)`, one row per image (the first view), L2-normalized by the caller.
        positives: float `(N, D)`, the second view of the same images, in the same order.
        alpha: the distance's exponent. Defaults to `2` (the paper's).

    Returns:
        float.

    Raises:
        ValueError: shapes that are not `(N, D)` alike, rows that are not of unit length,
            non-finite values, `alpha <= 0`.

    Example:

    >>> import numpy as np
    >>> from clzoo.eval.label_free import alignment
    >>> alignment(np.eye(2), np.eye(2)), round(alignment(np.eye(2), np.eye(2)[::-1]), 6)
    (0.0, 2.0)
    """
    anchors, positives = _rows("anchors", anchors, unit=True), _rows("positives", positives, unit=True)
    alpha = _positive("alpha", alpha)
    if anchors.shape != positives.shape:
        raise ValueError(f"`anchors` {anchors.shape} and `positives` {positives.shape} must have one "
                         "shape: one positive per anchor.")
    return float(np.mean(np.linalg.norm(anchors - positives, axis=1) ** alpha))


def uniformity(embeddings, t=2.0):
    """How evenly embeddings spread over the sphere, L_uniform (Wang & Isola 2020).

    `log E exp(-t ||f(x) - f(y)||_2^2)` over the distinct pairs of rows. Lower (more negative) is
    more uniform; 0 when every row is the same point (collapse). The pairwise distances are `N x N`:
    pass a sample (the run report takes `SAMPLE` images).

    Args:
        embeddings: float `(N, D)`, L2-normalized rows, `N >= 2`.
        t: the Gaussian kernel's scale. Defaults to `2` (the paper's).

    Returns:
        float.

    Raises:
        ValueError: not `(N, D)` with `N >= 2`, rows not of unit length, non-finite values,
            `t <= 0`.

    Example:

    >>> import numpy as np
    >>> from clzoo.eval.label_free import uniformity
    >>> uniformity(np.ones((3, 2)) / np.sqrt(2)), round(uniformity(np.eye(2)), 3)
    (0.0, -4.0)
    """
    x, t = _rows("embeddings", embeddings, unit=True), _positive("t", t)
    squared = np.sum(x**2, axis=1)
    distances = np.maximum(squared[:, None] + squared[None, :] - 2.0 * x @ x.T, 0.0)
    pairs = distances[np.triu_indices(len(x), k=1)]
    # log-mean-exp with its largest term factored out: no underflow to log(0) at large t
    largest = np.max(-t * pairs)
    return float(largest + np.log(np.mean(np.exp(-t * pairs - largest))))


def effective_rank(embeddings, eps=1e-7):
    """RankMe: the exponential of the entropy of the normalized singular values (Garrido et al. 2023, eq. 1).

    `exp(-sum_k p_k log p_k)` with `p_k = s_k / ||s||_1 + eps`. From 1 (a collapse onto one
    direction) to `min(N, D)` (every direction used equally).

    Args:
        embeddings: float `(N, D)`, as the encoder gives them (not centered).
        eps: added to each `p_k`, as in the paper. Defaults to `1e-7`.

    Returns:
        float.

    Raises:
        ValueError: not `(N, D)` with `N >= 2` and `D >= 1`, non-finite values, `eps < 0`.

    Example:

    >>> import numpy as np
    >>> from clzoo.eval.label_free import effective_rank
    >>> round(effective_rank(np.eye(4)[:, :3] * 5), 3)
    3.0
    """
    x, eps = _rows("embeddings", embeddings), _positive("eps", eps, zero=True)
    singular = np.linalg.svd(x, compute_uv=False)
    if singular.sum() == 0:
        return 1.0
    p = singular / singular.sum() + eps
    return float(np.exp(-np.sum(p * np.log(p))))


@dataclasses.dataclass
class LabelFreeReport:
    """`label_free_report`'s result: the three figures and what they were measured on.

    Attributes:
        alignment: `alignment` of the L2-normalized first and second views (lower: closer).
        uniformity: `uniformity` of the L2-normalized first views (lower: more uniform).
        effective_rank: `effective_rank` of the first views' features as the encoder gives them.
        images: the images sampled (each seen as two views).
        features: the feature width D; the effective rank is at most `min(images, features)`.
        seconds: wall time of the views and the embedding.
    """

    alignment: float
    uniformity: float
    effective_rank: float
    images: int
    features: int
    seconds: float

    def to_dict(self):
        return dataclasses.asdict(self)


def _two_views(split, views, seed, sample):
    """`(first, second)` float views in [0, 1] of a seeded sample of `split`, from the recipe's own
    view stream (`clzoo.data.training_batches`)."""
    from clzoo.data import training_batches

    rows = np.sort(np.random.default_rng(seed).choice(len(split), min(sample, len(split)), replace=False))
    first, second = [], []
    for start in range(0, len(rows), 256):  # one whole batch per stream: no remainder dropped
        chunk = rows[start:start + 256]
        part = dataclasses.replace(split, images=split.images[chunk], labels=split.labels[chunk],
                                   paths=None)
        for x, _ in training_batches(part, batch_size=len(chunk), seed=seed + start, views=views,
                                     shuffle=False):
            x = np.asarray(x)
            first.append(x[:, 0])
            second.append(x[:, 1])
    return np.concatenate(first), np.concatenate(second)


def label_free_report(encoder, split, views, seed=0, sample=SAMPLE, verbose=False):
    """Alignment, uniformity and effective rank of `encoder` on two views of a sample of `split`.

    Args:
        encoder: `keras.Model` from float images in [0, 1] `(batch, H, W, 3)` to `(batch, D)`.
        split: a `clzoo.data.Split` (labels are not read), at least 2 images.
        views: the recipe's `clzoo.data.ViewConfig` / `BatchViewConfig` (two views or more: the
            first two are the positive pair).
        seed: picks the sample and the views. Defaults to `0`.
        sample: at most this many images, drawn without replacement. Defaults to `SAMPLE`.
        verbose: Keras' progress while embedding.

    Returns:
        `LabelFreeReport`: alignment and uniformity of the L2-normalized first views (and their
        pairs), the effective rank of the first views as the encoder gives them.

    Raises:
        ValueError: views of fewer than two per image, fewer than 2 images (in `split` or
            `sample`), or non-finite features (as `alignment` and the others refuse them).

    Example:

    >>> import keras, numpy as np, clzoo
    >>> from clzoo.eval.label_free import label_free_report
    >>> split = clzoo.data.from_arrays(np.zeros((4, 8, 8, 3), np.uint8), [0, 0, 0, 0])
    >>> inputs = keras.Input((8, 8, 3))
    >>> encoder = keras.Model(inputs, keras.layers.Dense(3, bias_initializer="ones")(
    ...     keras.layers.Flatten()(inputs)))
    >>> report = label_free_report(encoder, split, clzoo.data.ViewConfig(size=8))
    >>> report.images, report.features
    (4, 3)
    """
    from clzoo.eval.embed import predict_images

    if getattr(views, "views", 2) < 2:
        raise ValueError(f"`views` must give at least two views per image (the positive pair). "
                         f"Received: views={views.views}")
    if min(len(split), sample) < 2:
        raise ValueError(f"At least 2 images are needed (uniformity compares pairs). Received: "
                         f"{len(split)} images, sample={sample}")
    started = time.perf_counter()
    first, second = _two_views(split, views, seed, sample)
    raw = np.asarray(predict_images(encoder, first, verbose=verbose), np.float32)
    paired = unit_rows(np.asarray(predict_images(encoder, second, verbose=verbose), np.float32))
    anchors = unit_rows(raw)
    return LabelFreeReport(alignment(anchors, paired), uniformity(anchors), effective_rank(raw),
                           len(first), raw.shape[1], time.perf_counter() - started)
