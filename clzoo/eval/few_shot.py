"""m-shot linear-probe and nearest-class-center error, averaged over draws.

Source: Luthra, Yang & Galanti, sec. 3.2 (err_m^LP, err_m^NCC) and sec. 4.1
(the estimate averages over 5 draws of the m-shot support set).
"""

import numpy as np
from sklearn.linear_model import LogisticRegression

from clzoo.eval import _checks
from clzoo.eval.geometry import few_shot_error_bound, nearest_class_center_predict
from clzoo.eval.metric import MetricResult, ReportMetric, register_metric


def few_shot_errors(train_embeddings, train_labels, test_embeddings, test_labels, shots,
                    draws=5, seed=0, probe="both"):
    """Mean and standard deviation of the m-shot error over `draws` support sets.

    Each draw takes `shots` training embeddings per class (without
    replacement), fits the nearest-class-center classifier and/or a linear
    probe (multinomial logistic regression, L-BFGS; the paper trains its
    linear layer with SGD for 500 epochs) on them and measures the error on
    all test embeddings.

    Args:
        train_embeddings, test_embeddings: float `(N, D)`, `(M, D)`.
        train_labels, test_labels: int.
        shots: labelled samples per class `m`; every class needs that many.
        draws: support sets averaged. Defaults to `5` (the paper's).
        seed: for the draws.
        probe: `"ncc"`, `"linear"` or `"both"`.

    Returns:
        dict with `"ncc"` and/or `"linear"`: `{"error": mean, "std": ..., "errors": [...]}`.

    Example:

    >>> import numpy as np, clzoo
    >>> rng = np.random.default_rng(0)
    >>> x = np.concatenate([rng.normal(0, 0.1, (20, 2)), rng.normal(5, 0.1, (20, 2))])
    >>> y = np.repeat([0, 1], 20)
    >>> clzoo.eval.few_shot_errors(x, y, x, y, shots=2, probe="ncc")["ncc"]["error"]
    0.0
    """
    train, y_train, test, y_test = _checks.train_test(train_embeddings, train_labels,
                                                      test_embeddings, test_labels)
    if probe not in ("ncc", "linear", "both"):
        raise ValueError(f"`probe` must be 'ncc', 'linear' or 'both'. Received: probe={probe!r}")
    classes, counts = np.unique(y_train, return_counts=True)
    if isinstance(shots, bool) or not isinstance(shots, (int, np.integer)) or shots < 1:
        raise ValueError(f"`shots` must be a positive integer. Received: shots={shots!r}")
    if counts.min() < shots:
        raise ValueError(
            f"Every class needs `shots`={shots} training embeddings; class "
            f"{classes[counts.argmin()]} has {counts.min()}."
        )
    rng = np.random.default_rng(seed)
    kinds = ("ncc", "linear") if probe == "both" else (probe,)
    errors = {kind: [] for kind in kinds}
    for _ in range(draws):
        support = np.concatenate([rng.choice(np.flatnonzero(y_train == c), shots, replace=False)
                                  for c in classes])
        if "ncc" in kinds:
            predicted = nearest_class_center_predict(train[support], y_train[support], test)
            errors["ncc"].append(float(np.mean(predicted != y_test)))
        if "linear" in kinds:
            model = LogisticRegression(max_iter=1000).fit(train[support], y_train[support])
            errors["linear"].append(float(np.mean(model.predict(test) != y_test)))
    return {kind: {"error": float(np.mean(v)), "std": float(np.std(v)), "errors": v}
            for kind, v in errors.items()}


@register_metric
class FewShotReport(ReportMetric):
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
