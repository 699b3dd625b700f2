"""Target-noise margins of a reproduction cell from its embeddings files, with bootstrap intervals.

The margin as SINCERE Table 1 defines it (per class, median nearest-target minus median
nearest-noise cosine similarity, averaged over the classes) and the per-image mean, each with
a 95% percentile bootstrap interval over the test images (`clzoo.eval.margin_interval`); for
two cells of the same seed, the paired difference (`clzoo.eval.margin_difference`).
"""

import functools
from pathlib import Path

import numpy as np

STATISTICS = (("class_median", ""), ("mean", "_mean"))  # (clzoo statistic, key suffix)


def separation_of(npz):
    """`clzoo.eval.Separation` of the test rows of a `clzoo embed --split both` file vs its train rows."""
    return _separation(str(Path(npz).resolve()), Path(npz).stat().st_mtime_ns)


@functools.lru_cache(maxsize=32)
def _separation(npz, _mtime):
    """Cached by path and mtime: a report reads each file for the cell, the pairs and the plot."""
    from clzoo.eval import target_noise_separation  # noqa: PLC0415 (imports TensorFlow)

    table = np.load(npz)
    split = table["split"].astype(str)
    train, test = split == "train", split == "test"
    if not train.any() or not test.any():
        raise ValueError(f"{npz} must hold both splits (clzoo embed --split both)")
    x, y = table["embeddings"], table["labels"]
    return target_noise_separation(x[train], y[train], x[test], y[test])


def cell_margins(separation, space, resamples=1000):
    """`{margin_<space>[_mean]: estimate, ..._low, ..._high}` for both statistics."""
    from clzoo.eval import margin_interval  # noqa: PLC0415

    out = {}
    for statistic, suffix in STATISTICS:
        r = margin_interval(separation, statistic, resamples=resamples)
        key = f"margin_{space}{suffix}"
        out[key], out[f"{key}_low"], out[f"{key}_high"] = r.estimate, r.low, r.high
    return out


def paired_margins(folder_a, folder_b, spaces=("projection", "encoder"), resamples=1000):
    """`{margin_<space>[_mean]: [A - B, low, high]}` on the same test images, or `{}` if unfinished."""
    from clzoo.eval import margin_difference  # noqa: PLC0415

    out = {}
    for space in spaces:
        a, b = Path(folder_a) / f"{space}.npz", Path(folder_b) / f"{space}.npz"
        if not (a.exists() and b.exists()):
            continue
        sa, sb = separation_of(a), separation_of(b)
        for statistic, suffix in STATISTICS:
            r = margin_difference(sa, sb, statistic, resamples=resamples)
            out[f"margin_{space}{suffix}"] = [r.estimate, r.low, r.high]
    return out


def per_image_margins(folder, space="projection"):
    """The per-image margins of a cell (for the histograms), or None when not embedded."""
    path = Path(folder) / f"{space}.npz"
    return separation_of(path).per_image_margin if path.exists() else None
