"""`loss_gap`: global DCL and NSCL losses of the test features, their gap and Theorem 1's bound."""

from clzoo.eval.loss_gap import dcl_nscl_gap
from clzoo.eval.metrics._base import Metric, MetricResult, register_metric


@register_metric
class LossGap(Metric):
    """DCL - NSCL on the test features (one view, temperature 1) and its Theorem 1 bound.

    Scalars: the dict of `clzoo.eval.dcl_nscl_gap` plus `"on"`. Source:
    Luthra, Yang & Galanti, sec. 3.1 (Thm. 1) and 4.2.

    Example:

    >>> import numpy as np, clzoo
    >>> x = np.random.default_rng(0).normal(size=(20, 4))
    >>> y = np.arange(20) % 2
    >>> context = clzoo.eval.EvalContext.create(x, y, x, y)
    >>> g = clzoo.eval.METRICS.get("loss_gap")().compute(context).scalars
    >>> 0 <= g["gap"] <= g["bound"]
    True
    """

    name = "loss_gap"
    description = "global DCL and NSCL losses, gap and Theorem 1 bound"
    source = "NSCL paper sec. 3.1, Thm. 1"

    def compute(self, context):
        gap = dcl_nscl_gap(context.test, context.test_labels)
        return MetricResult(self.name, {**gap, "on": "test embeddings, one view"}, {}, [
            ("DCL - NSCL gap on test set, t = 1 (NSCL Thm. 1)",
             (f"{gap['gap']:.4f} (bound {gap['bound']:.4f}; DCL {gap['dcl']:.4f}, "
             f"NSCL {gap['nscl']:.4f})"))])
