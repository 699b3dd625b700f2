"""The figure of a reproduced claim: both losses' training curves and their target-noise margins."""

import json
from pathlib import Path

import numpy as np
import reproduce_margins as margins
from convergence import check_convergence


def _cells(grid, key):
    return [(seed, folder) for config, seed, folder in grid
            if config.key == key and (folder / "cell.json").exists()]


def curve_label(key, seed, curve):
    """The legend entry of one loss curve, its status re-read from the curve by today's rule (a
    cell's saved `converged` flag may come from an older rule)."""
    status = check_convergence(curve)
    state = "converged" if status.converged else "not converged"
    return f"{key} (seed {seed}, {state}: last 20% took {status.ratio:.1%})"


def plot_claim(grid, key_a, key_b, path, space="projection"):
    """Loss curves (left) and per-image margin histograms (right) of two configurations.

    Draws every finished seed; returns False (writing nothing) when neither configuration has
    an embedded finished cell.
    """
    cells = {key: _cells(grid, key) for key in (key_a, key_b)}
    if not all(cells.values()):
        return False
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for key, color in ((key_a, "tab:blue"), (key_b, "tab:orange")):
        pooled = []
        for seed, folder in cells[key]:
            cell = json.loads((folder / "cell.json").read_text())
            curve = cell["loss_curve"]
            left.plot(range(1, len(curve) + 1), curve, color=color, alpha=0.8,
                      label=curve_label(key, seed, curve))
            values = margins.per_image_margins(folder, space)
            if values is not None:
                pooled.append(values)
        if pooled:
            right.hist(np.concatenate(pooled), bins=60, alpha=0.55, color=color, density=True,
                       label=f"{key} ({len(pooled)} seeds pooled)")
    left.set(xlabel="epoch", ylabel="training loss (epoch mean)", title="Loss curves")
    right.axvline(0, color="k", lw=0.8)
    right.set_yscale("log")  # SupCon's margins pile up near 0; SINCERE's spread out
    right.set(xlabel=f"nearest-target minus nearest-noise cosine similarity ({space} space)",
              ylabel="density of test images", title="Target-noise margin per test image")
    left.legend(fontsize=7)
    right.legend(fontsize=8)
    fig.tight_layout()
    tmp = Path(path).with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    tmp.replace(path)
    return True
