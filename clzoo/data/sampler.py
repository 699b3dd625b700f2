"""Class-balanced P x K index batches in tf.data: P classes, K images of each, so every anchor has positives.

Used for supervised contrastive losses on data with many classes (ImageNet-100,
CIFAR-100), where a uniformly drawn batch often holds a class once and that
anchor has no positive. `clzoo.data.batches(kind="balanced")` turns them into views.
"""

import numpy as np
import tensorflow as tf


def _check(labels, classes_per_batch, samples_per_class):
    labels = np.asarray(labels).reshape(-1)
    if labels.size == 0 or labels.min() < 0:
        raise ValueError("`labels` must be a non-empty array of non-negative class ids.")
    present = np.unique(labels)
    for name, value in (("classes_per_batch", classes_per_batch),
                        ("samples_per_class", samples_per_class)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"`{name}` must be a positive integer. Received: {name}={value!r}")
    if classes_per_batch > len(present):
        raise ValueError(
            f"`classes_per_batch` ({classes_per_batch}) exceeds the {len(present)} classes present."
        )
    counts = np.bincount(labels)[present]
    if samples_per_class > counts.min():
        small = present[counts < samples_per_class]
        raise ValueError(
            f"`samples_per_class` ({samples_per_class}) exceeds the {counts.min()} images of class "
            f"{present[np.argmin(counts)]} ({len(small)} class(es) have fewer than "
            f"{samples_per_class}); a batch would repeat images. Use samples_per_class <= "
            f"{counts.min()} or leave out the small classes. Received: "
            f"samples_per_class={samples_per_class}")
    return labels, present


def class_balanced_indices(labels, classes_per_batch, samples_per_class, seed=0, start_step=0):
    """Endless `tf.data.Dataset` of index batches: P distinct classes x K samples each.

    Batch `s` depends only on `(seed, s)` (stateless draws): P classes drawn
    without replacement among those present, then K samples of each class
    without replacement, so no image appears twice in a batch.
    Rows are grouped by class: `batch[p*K:(p+1)*K]` share a label.

    Args:
        labels: int `(N,)`.
        classes_per_batch: P.
        samples_per_class: K, at most the image count of the smallest class
            (use K >= 2 so each anchor has a positive).
        seed: int.
        start_step: the first batch `s` to yield (resuming). Defaults to `0`.

    Returns:
        `tf.data.Dataset` of int64 `(P * K,)` indices into `labels`, batches
        `start_step, start_step + 1, ...`.

    Raises:
        ValueError: P or K not a positive integer, P over the classes present,
            or K over the images of some class (a batch would repeat them).

    Example:

    >>> import numpy as np
    >>> from clzoo.data.sampler import class_balanced_indices
    >>> labels = np.repeat(np.arange(5), 4)
    >>> batch = next(iter(class_balanced_indices(labels, 2, 3))).numpy()
    >>> np.bincount(labels[batch], minlength=5).tolist().count(3)
    2
    """
    labels, present = _check(labels, classes_per_batch, samples_per_class)
    members = [np.flatnonzero(labels == c) for c in present]
    width = max(len(m) for m in members)
    table = np.full((len(present), width), -1, dtype=np.int64)
    for row, m in enumerate(members):
        table[row, :len(m)] = m
    table = tf.constant(table)
    n_classes, p, k = len(present), int(classes_per_batch), int(samples_per_class)

    def draw(step):
        seeds = tf.random.experimental.stateless_split(tf.stack([tf.cast(seed, tf.int64), step]), 3)
        chosen = tf.random.experimental.stateless_shuffle(tf.range(n_classes, dtype=tf.int64),
                                                          seeds[0])[:p]
        rows = tf.gather(table, chosen)  # (P, width), -1 = padding
        keys = tf.random.stateless_uniform((p, width), seeds[1])
        keys = tf.where(rows >= 0, keys, 2.0)  # padding sorts last; every class has >= K images
        columns = tf.argsort(keys, axis=1)[:, :k]
        return tf.reshape(tf.gather(rows, columns, batch_dims=1), (p * k,))

    return tf.data.Dataset.counter(start=int(start_step)).map(draw)
