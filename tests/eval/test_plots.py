"""The reliability diagram shows how many images each bin holds and marks the sparse bins."""

import numpy as np

from clzoo import eval as E


def test_reliability_diagram_shows_counts_and_greys_sparse_bins(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from clzoo.eval import plots

    rng = np.random.default_rng(0)
    confidence = np.concatenate([rng.uniform(0.85, 1.0, 300), [0.35, 0.5, 0.52]])
    labels = (rng.uniform(size=confidence.size) > confidence).astype(int)
    rel = E.reliability(np.stack([confidence, 1 - confidence], axis=1), labels)
    figures = []
    real_save = plots._save
    plots._save = lambda fig, path: figures.append(fig) or path
    try:
        plots.reliability_diagram(rel, tmp_path / "r.png", min_count=10)
    finally:
        plots._save = real_save
    (fig,) = figures
    top, bottom = fig.axes
    filled = rel.count[rel.count > 0]
    assert sorted(int(t.get_text()) for t in bottom.texts) == sorted(filled.tolist())
    assert sorted(round(p.get_height()) for p in bottom.patches) == sorted(filled.tolist())
    sparse = [p for p in top.patches if p.get_hatch() == "//"]
    assert len(sparse) == int(np.sum((rel.count > 0) & (rel.count < 10))) == 2
    assert all(p.get_facecolor()[:3] == matplotlib.colors.to_rgb("lightgrey") for p in sparse)
    assert any("< 10 images" in t.get_text() for t in top.get_legend().get_texts())
    plt.close(fig)
    # Written for real: a PNG file.
    assert plots.reliability_diagram(rel, tmp_path / "r.png").read_bytes()[:4] == b"\x89PNG"
