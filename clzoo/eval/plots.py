"""Figures of the evaluation report (matplotlib, written as PNG files atomically)."""

import io

import numpy as np

from clzoo.files import atomic_write


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only; never needs a display
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path):
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    _pyplot().close(fig)

    def write(tmp):
        with open(tmp, "wb") as handle:
            handle.write(buffer.getvalue())

    atomic_write(path, write)
    return path


def _bins(separation, count):
    """Bins over the observed range: encoder features can all lie within a few hundredths."""
    values = np.concatenate([separation.target, separation.noise])
    low, high = float(values.min()), float(values.max())
    pad = max(1e-3, 0.02 * (high - low))
    return np.linspace(low - pad, min(high + pad, 1.0 + pad), count)


def _titled(what, model):
    return f"{what}: {model}" if model else what


def class_name(label, class_names):
    """`class_names[label]`, or the id as a string when there are no names (or too few)."""
    return class_names[label] if class_names is not None and label < len(class_names) else str(label)


SIMILARITY_AXIS = "cosine similarity to nearest training embedding (unitless, -1 to 1)"


def separation_histogram(separation, path, model=None):
    """SINCERE Fig. 2: histograms of nearest-target and nearest-noise cosine similarity.

    Draws both histograms with dotted lines at their medians, titled with
    `model` (the model or preset name), and writes the figure to `path`
    (PNG). Returns `path`.
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.6))
    bins = _bins(separation, 60)
    for values, label, color in ((separation.target, "nearest target (same class)", "tab:blue"),
                                 (separation.noise, "nearest noise (other class)", "tab:red")):
        ax.hist(values, bins=bins, alpha=0.55, color=color, label=label)
        ax.axvline(np.median(values), color=color, linestyle=":", linewidth=2,
                   label=f"median, {label.split(' (')[0]}")
    ax.set_xlabel(SIMILARITY_AXIS)
    ax.set_ylabel("test images (count)")
    ax.set_title(_titled(f"Target-noise separation (mean margin {separation.margin:.3f})", model))
    ax.legend(fontsize=8)
    return _save(fig, path)


def per_class_separation(separation, path, class_names=None, model=None):
    """SINCERE app. O: one target/noise histogram per class, in a grid. Returns `path`."""
    plt = _pyplot()
    classes = sorted(separation.per_class_margin)
    cols = min(5, len(classes))
    rows = int(np.ceil(len(classes) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(3 * cols, 2.4 * rows + 0.8), squeeze=False)
    bins = _bins(separation, 40)
    for ax, c in zip(axes.flat, classes):
        members = separation.labels == c
        for values, color, label in ((separation.target[members], "tab:blue", "nearest target"),
                                     (separation.noise[members], "tab:red", "nearest noise")):
            ax.hist(values, bins=bins, alpha=0.55, color=color, label=label)
            ax.axvline(np.median(values), color=color, linestyle=":")
        ax.set_title(f"{class_name(c, class_names)}: margin "
                     f"{separation.per_class_margin[c]:.3f}", fontsize=9)
    for ax in list(axes.flat)[len(classes):]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper right", fontsize=8)
    for ax in axes[:, 0]:
        ax.set_ylabel("test images (count)", fontsize=9)
    fig.supxlabel(SIMILARITY_AXIS, fontsize=9)
    fig.suptitle(_titled("Target-noise separation per class", model))
    fig.tight_layout()
    return _save(fig, path)


def reliability_diagram(reliability, path, model=None, min_count=10):
    """Accuracy against confidence per bin over the count of images per bin. Returns `path`.

    Top: each bin's accuracy with the diagonal of perfect calibration. Bottom:
    how many test images fall in each bin (log scale, each bar labelled with
    its count). A bin with fewer than `min_count` images is drawn grey and
    hatched in both panels: its accuracy is too noisy to read calibration
    from (a bin of 2 images is 0%, 50% or 100% accurate).

    Args:
        reliability: `clzoo.eval.Reliability` (`edges` `(bins + 1,)`,
            `accuracy` / `count` `(bins,)`).
        path: PNG file to write (atomically).
        model: name shown in the title. Defaults to `None`.
        min_count: images a bin needs to be drawn as reliable. Defaults to `10`.
    """
    plt = _pyplot()
    fig, (ax, hist) = plt.subplots(2, 1, figsize=(4.6, 6.2), sharex=True,
                                   gridspec_kw={"height_ratios": [3, 1.2]})
    edges, count = reliability.edges, np.asarray(reliability.count)
    centers, widths = (edges[:-1] + edges[1:]) / 2, np.diff(edges)
    enough, few = count >= min_count, (count > 0) & (count < min_count)
    ax.bar(centers[enough], reliability.accuracy[enough], width=widths[enough], edgecolor="black",
           color="tab:blue", alpha=0.7, label="accuracy in bin")
    if few.any():
        ax.bar(centers[few], reliability.accuracy[few], width=widths[few], edgecolor="grey",
               color="lightgrey", hatch="//", label=f"bin of < {min_count} images (unreliable)")
    ax.plot([0, 1], [0, 1], "k--", label="perfect calibration")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_ylabel("accuracy (fraction correct, 0 to 1)")
    ax.set_title(_titled(f"Reliability of the probe (ECE {reliability.ece:.3f})", model),
                 fontsize=10)
    ax.legend(loc="upper left", fontsize=8)
    filled = count > 0
    hist.bar(centers[filled], count[filled], width=widths[filled], edgecolor="black",
             color=np.where(enough, "tab:blue", "lightgrey")[filled], alpha=0.7)
    for bar, is_few in zip(hist.patches, few[filled]):
        bar.set_hatch("//" if is_few else None)
    for x, n in zip(centers[filled], count[filled]):
        hist.annotate(f"{n:d}", (x, n), ha="center", va="bottom", fontsize=6, rotation=90,
                      xytext=(0, 1), textcoords="offset points")
    hist.set_yscale("log")
    hist.set_ylim(0.8, max(2.0, float(count.max())) * 8)
    hist.set_ylabel("images (count)")
    fig.supxlabel("confidence (top-1 softmax probability, 0 to 1)", fontsize=10)
    return _save(fig, path)


def embedding_map(points, labels, path, class_names=None, model=None):
    """Scatter of a 2-D map (t-SNE) `(P, 2)` coloured by class `(P,)`. Returns `path`."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 5))
    points, labels = np.asarray(points), np.asarray(labels)
    for c in np.unique(labels):
        ax.scatter(*points[labels == c].T, s=4, label=class_name(c, class_names))
    ax.set_xlabel("t-SNE dimension 1 (arbitrary units)")
    ax.set_ylabel("t-SNE dimension 2 (arbitrary units)")
    ax.set_title(_titled(f"t-SNE of {len(labels)} test embeddings", model))
    ax.legend(markerscale=3, fontsize=8, loc="best", title="class")
    return _save(fig, path)
