"""m-shot linear-probe and nearest-class-center error, averaged over draws.

Source: Luthra, Yang & Galanti, sec. 3.2 (err_m^LP, err_m^NCC) and sec. 4.1
(the estimate averages over 5 draws of the m-shot support set).
"""

import numpy as np
from sklearn.linear_model import LogisticRegression

from clzoo.eval import _checks
from clzoo.eval.geometry import nearest_class_center_predict


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
