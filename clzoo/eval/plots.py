"""Figures of the evaluation report (matplotlib, written as PNG files atomically)."""

import io

import numpy as np

from clzoo.data.cache import atomic_write


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


def separation_histogram(separation, path, title="Target-noise separation", class_names=None):
    """SINCERE Fig. 2: histograms of nearest-target and nearest-noise cosine similarity.

    Draws both histograms with dotted lines at their medians, and writes
    the figure to `path` (PNG). Returns `path`.
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.6))
    bins = _bins(separation, 60)
    for values, label, color in ((separation.target, "nearest target", "tab:blue"),
                                 (separation.noise, "nearest noise", "tab:red")):
        ax.hist(values, bins=bins, alpha=0.55, color=color, label=label)
        ax.axvline(np.median(values), color=color, linestyle=":", linewidth=2)
    ax.set_xlabel("cosine similarity to nearest training embedding")
    ax.set_ylabel("test images")
    ax.set_title(f"{title} (mean margin {separation.margin:.3f})")
    ax.legend()
    return _save(fig, path)


def per_class_separation(separation, path, class_names=None):
    """SINCERE app. O: one target/noise histogram per class, in a grid. Returns `path`."""
    plt = _pyplot()
    classes = sorted(separation.per_class_margin)
    cols = min(5, len(classes))
    rows = int(np.ceil(len(classes) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(3 * cols, 2.4 * rows), squeeze=False)
    bins = _bins(separation, 40)
    for ax, c in zip(axes.flat, classes):
        members = separation.labels == c
        for values, color in ((separation.target[members], "tab:blue"),
                              (separation.noise[members], "tab:red")):
            ax.hist(values, bins=bins, alpha=0.55, color=color)
            ax.axvline(np.median(values), color=color, linestyle=":")
        name = class_names[c] if class_names is not None and c < len(class_names) else str(c)
        ax.set_title(f"{name}: margin {separation.per_class_margin[c]:.3f}", fontsize=9)
    for ax in list(axes.flat)[len(classes):]:
        ax.axis("off")
    fig.tight_layout()
    return _save(fig, path)


def reliability_diagram(reliability, path, title="Reliability diagram"):
    """Accuracy against confidence per bin, with the diagonal of perfect calibration. Returns `path`."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(4.2, 4.2))
    edges = reliability.edges
    centers = (edges[:-1] + edges[1:]) / 2
    filled = reliability.count > 0
    ax.bar(centers[filled], reliability.accuracy[filled], width=np.diff(edges)[filled],
           edgecolor="black", color="tab:blue", alpha=0.7, label="accuracy")
    ax.plot([0, 1], [0, 1], "k--", label="perfect calibration")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("confidence (top-1 probability)")
    ax.set_ylabel("accuracy")
    ax.set_title(f"{title} (ECE {reliability.ece:.3f})")
    ax.legend(loc="upper left")
    return _save(fig, path)


def embedding_map(embeddings, labels, path, class_names=None, max_points=3000, seed=0):
    """2-D t-SNE map (scikit-learn) of up to `max_points` embeddings, coloured by class. Returns `path`."""
    from sklearn.manifold import TSNE

    plt = _pyplot()
    rng = np.random.default_rng(seed)
    pick = rng.choice(len(labels), min(max_points, len(labels)), replace=False)
    points = TSNE(n_components=2, init="pca", random_state=seed,
                  perplexity=min(30.0, max(2.0, (len(pick) - 1) / 3))).fit_transform(
        np.asarray(embeddings)[pick])
    fig, ax = plt.subplots(figsize=(6, 5))
    labels = np.asarray(labels)[pick]
    for c in np.unique(labels):
        name = class_names[c] if class_names is not None and c < len(class_names) else str(c)
        ax.scatter(*points[labels == c].T, s=4, label=name)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(f"t-SNE of {len(pick)} test embeddings")
    ax.legend(markerscale=3, fontsize=8, loc="best")
    return _save(fig, path)
