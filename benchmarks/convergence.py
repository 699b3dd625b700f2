"""When a training run has finished learning: the convergence rule of `benchmarks/reproduce.py`.

A run is *converged* when its per-epoch training loss has flattened: over the last 20% of its
epochs the loss fell by less than 2% of its total drop. "Fell by" is read off the least-squares
line through the window (the epoch before it included), not off two single epochs: a contrastive
loss moves by about 1% of its total drop from one epoch to the next (sampled views and batches),
so any rule built on single epochs (end points, or the lowest loss in the window) measures that
noise as much as the trend. Total drop: the first epoch's loss minus the line's end value.
"""

import dataclasses
import math


@dataclasses.dataclass(frozen=True)
class Convergence:
    """The outcome of the rule on one loss curve.

    Attributes:
        converged: the rule holds.
        epochs: epochs in the curve.
        window: epochs in the last-`fraction` window.
        total_drop: first epoch's loss minus the trend line's value at the last epoch.
        window_drop: the trend line's fall across the window (negative when it rose).
        ratio: `window_drop / total_drop` (`inf` when the loss never fell).
    """

    converged: bool
    epochs: int
    window: int
    total_drop: float
    window_drop: float
    ratio: float

    def describe(self):
        state = "converged" if self.converged else "not converged"
        return (f"{state}: the last {self.window} of {self.epochs} epochs took "
                f"{self.ratio:.1%} of the total drop")


def check_convergence(losses, fraction=0.2, tolerance=0.02):
    """Apply the rule to per-epoch losses (first epoch first).

    Args:
        losses: sequence of finite floats, one per epoch, at least 5.
        fraction: the window, as a fraction of the epochs (rounded up). Defaults to `0.2`.
        tolerance: the largest share of the total drop the window may take. Defaults to `0.02`.

    Returns:
        `Convergence`.

    Raises:
        ValueError: fewer than 5 losses, a non-finite loss, or `fraction` / `tolerance`
            outside (0, 1).

    Example:

    >>> check_convergence([5.0, 3.0, 2.0, 1.6, 1.5, 1.49, 1.49, 1.489, 1.489, 1.489]).converged
    True
    >>> check_convergence([5.0, 4.5, 4.0, 3.5, 3.0]).converged
    False
    """
    losses = [float(v) for v in losses]
    if len(losses) < 5:
        raise ValueError(f"The rule needs at least 5 epochs of losses. Received: {len(losses)}")
    if not all(math.isfinite(v) for v in losses):
        raise ValueError(f"Every loss must be finite. Received: {losses}")
    for name, value in (("fraction", fraction), ("tolerance", tolerance)):
        if not 0 < value < 1:
            raise ValueError(f"`{name}` must be in (0, 1). Received: {value}")
    window = math.ceil(fraction * len(losses))
    slope, end = _trend(losses[-window - 1:])
    total = losses[0] - end
    dropped = -slope * window
    ratio = dropped / total if total > 0 else math.inf
    return Convergence(ratio < tolerance, len(losses), window, total, dropped, ratio)


def _trend(values):
    """`(slope per epoch, fitted value at the last epoch)` of the least-squares line."""
    n = len(values)
    mean_x, mean_y = (n - 1) / 2, sum(values) / n
    slope = (sum((x - mean_x) * (y - mean_y) for x, y in enumerate(values))
             / sum((x - mean_x) ** 2 for x in range(n)))
    return slope, mean_y + slope * (n - 1 - mean_x)


def rechecked(record):
    """A saved stage or cell (`dict`) with `converged` and `window_share` re-read from its loss
    curve (`losses` or `loss_curve`) by today's rule: records written by older code carry the
    older rule's flag. A record without a curve is returned as it is."""
    curve = record.get("losses") or record.get("loss_curve")
    if not curve:
        return record
    status = check_convergence(curve)
    return dict(record, converged=status.converged, window_share=status.ratio)
