"""`few_shot`: m-shot NCC / linear-probe error over 5 draws, with the Prop. 1 bound (NSCL paper)."""

import numpy as np

from clzoo.eval.few_shot import few_shot_errors
from clzoo.eval.geometry import few_shot_error_bound
from clzoo.eval.metrics._base import Metric, MetricResult, register_metric


@register_metric
class FewShot(Metric):
    """Mean m-shot error of NCC and a linear probe for each m in `context.shots`.

    Scalars: `{"10": {"ncc_error", "linear_error", "ncc_error_bound_test"}, ...}`
    (the bound needs m >= 6); an m larger than the smallest training class
    is skipped. Source: Luthra, Yang & Galanti, sec. 3.2, 4.1, app. C (eq. 13).

    Example:

    >>> import numpy as np, clzoo
    >>> x = np.concatenate([np.zeros((6, 2)), np.ones((6, 2))]) + np.arange(12)[:, None] * 0.01
    >>> y = np.repeat([0, 1], 6)
    >>> context = clzoo.eval.EvalContext.create(x, y, x, y, shots=(2, 50))
    >>> clzoo.eval.METRICS.get("few_shot")().compute(context).scalars["2"]
    {'ncc_error': 0.0, 'linear_error': 0.0}
    """

    name = "few_shot"
    description = "m-shot NCC / linear-probe error over 5 draws, with the Prop. 1 bound"
    source = "NSCL paper sec. 3.2, 4.1, app. C"

    def compute(self, context):
        counts = np.bincount(context.train_labels)
        smallest = int(counts[counts > 0].min())
        table, rows = {}, []
        for m in (m for m in context.shots if m <= smallest):
            errors = few_shot_errors(context.train, context.train_labels, context.test,
                                     context.test_labels, shots=m)
            row = {f"{kind}_error": value["error"] for kind, value in errors.items()}
            if m >= 6:
                row["ncc_error_bound_test"] = few_shot_error_bound(context.test,
                                                                   context.test_labels, m)
            table[str(m)] = row
            text = ", ".join(f"{kind} {value['error']:.2%}" for kind, value in errors.items())
            if "ncc_error_bound_test" in row:
                text += f"; Prop. 1 bound {row['ncc_error_bound_test']:.3g}"
            rows.append((f"{m}-shot error, mean of 5 draws (NSCL sec. 4.1)", text))
        skipped = [m for m in context.shots if m > smallest]
        if skipped:
            rows.append((f"{', '.join(map(str, skipped))}-shot error",
                         f"skipped: the smallest training class has {smallest} samples"))
        return MetricResult(self.name, table, {}, rows)
