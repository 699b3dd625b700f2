"""Derived label sets of the papers: CIFAR-2, CIFAR10-Coarse, CIFAR100-Coarse.

Each keeps the original (fine) labels in `Split.fine_labels` for
coarse-to-fine transfer (Perfectly Balanced sec. 5.2, Table 2):
- `cifar2`: cat vs dog only (SINCERE paper, Table 1).
- `cifar10_coarse`: animals vs vehicles (Perfectly Balanced, Table 2).
- `cifar100_coarse`: CIFAR-100's 20 superclasses, read from tfds's
  `coarse_label` feature (`tfds:cifar100@cifar100_coarse`).
"""

import numpy as np

from clzoo.data.split import Split

# Perfectly Balanced (Kini et al.) Table 2: CIFAR-10 class -> coarse class (animal / vehicle).
CIFAR10_COARSE = {
    "airplane": "vehicle", "automobile": "vehicle", "ship": "vehicle", "truck": "vehicle",
    "bird": "animal", "cat": "animal", "deer": "animal", "dog": "animal", "frog": "animal",
    "horse": "animal",
}

LABEL_SETS = ("cifar2", "cifar10_coarse", "cifar100_coarse")


def derive_label_set(split, name):
    """Relabel (and for `cifar2`, subset) a CIFAR-10 `Split`; fine labels are kept.

    Args:
        split: `clzoo.data.Split` whose class names are CIFAR-10's.
        name: `"cifar2"` or `"cifar10_coarse"` (`"cifar100_coarse"` comes
            from `load_split("tfds:cifar100@cifar100_coarse")`).

    Returns:
        A new `Split` with coarse `labels` / `class_names` and the original
        `fine_labels` / `fine_class_names`.

    Example:

    >>> import numpy as np
    >>> from clzoo.data import Split
    >>> from clzoo.data.label_sets import derive_label_set
    >>> names = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
    >>> s = derive_label_set(Split(np.zeros((3, 2, 2, 3), np.uint8), np.array([3, 5, 0]), names), "cifar2")
    >>> s.labels.tolist(), s.class_names, s.fine_labels.tolist()
    ([0, 1], ['cat', 'dog'], [3, 5])
    """
    if name not in ("cifar2", "cifar10_coarse"):
        raise ValueError(
            f"Unknown label set {name!r} for an image folder. Choose from: cifar2, cifar10_coarse "
            "(cifar100_coarse needs tfds:cifar100)."
        )
    names = list(split.class_names)
    missing = [c for c in CIFAR10_COARSE if c not in names]
    if missing:
        raise ValueError(f"Label set {name!r} needs CIFAR-10's classes; missing {missing}.")
    labels = np.asarray(split.labels)
    if name == "cifar2":
        keep = [names.index("cat"), names.index("dog")]
        rows = np.isin(labels, keep)
        coarse = np.searchsorted(keep, labels[rows])
        images = split.images.subset(rows) if hasattr(split.images, "subset") else split.images[rows]
        return Split(images, coarse.astype(np.int32), ["cat", "dog"],
                     fine_labels=labels[rows], fine_class_names=names)
    coarse_names = sorted(set(CIFAR10_COARSE.values()))
    lookup = np.array([coarse_names.index(CIFAR10_COARSE[c]) for c in names])
    return Split(split.images, lookup[labels].astype(np.int32), coarse_names,
                 fine_labels=labels, fine_class_names=names)
