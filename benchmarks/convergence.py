"""When a training run has finished learning: the convergence rule of `benchmarks/reproduce.py`.

A run is *converged* when its per-epoch training loss has flattened: over the last 20% of its
epochs the loss fell by less than 2% of its total drop. The drop inside the window is measured
from the epoch before the window to the *lowest* loss in the window, not to the last epoch, so a
noisy last epoch cannot hide a drop (stricter than comparing end points).
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
        total_drop: first epoch's loss minus the lowest loss of the run.
        window_drop: loss of the epoch before the window minus the lowest loss in the window.
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
    total = losses[0] - min(losses)
    dropped = losses[-window - 1] - min(losses[-window:])
    ratio = dropped / total if total > 0 else math.inf
    return Convergence(ratio < tolerance, len(losses), window, total, dropped, ratio)
