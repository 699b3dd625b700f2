"""Two encoders on one test set: paired bootstrap intervals per classifier and the report of
`clzoo compare` (SINCERE sec. 4: 1,000 resamples of the test set, 95% percentile intervals)."""

import numpy as np

from clzoo.eval.bootstrap import bootstrap_accuracy_difference, check_resamples

# (row label, EvalReport field) of the scalar table below the classifiers.
SCALAR_ROWS = (("target-noise margin", "margin"), ("CDNV (test)", "cdnv"),
               ("directional CDNV (test)", "directional_cdnv"), ("probe ECE", "ece"),
               ("DCL - NSCL gap (test)", "loss_gap"))


def compare_results(a, b, names=("A", "B"), resamples=1000, seed=0):
    """Paired bootstrap intervals of `a - b` for every classifier both results scored.

    Args:
        a, b: `EvaluationResult`s on the same test set.
        names: labels of the two columns. Defaults to `("A", "B")`.
        resamples: bootstrap resamples, at least 100 (`clzoo.eval.bootstrap.MIN_RESAMPLES`).
            Defaults to `1000` (SINCERE sec. 4).
        seed: resampling seed.

    Returns:
        dict `{classifier: {names[0]: acc, names[1]: acc, "difference", "low", "high", "significant"}}`.

    Example:

    >>> import numpy as np, clzoo
    >>> x, y = np.eye(4), np.array([0, 0, 1, 1])
    >>> r = clzoo.eval.evaluate_embeddings(x, y, x, y, "ncc", verbose=False)
    >>> clzoo.eval.compare_results(r, r, resamples=100)["ncc"]["difference"]
    0.0
    """
    check_resamples(resamples)  # also when the two share no classifier
    table = {}
    for key in [k for k in a.correct if k in b.correct]:  # kNN by k, then the others
        interval = bootstrap_accuracy_difference(a.correct[key], b.correct[key], resamples, seed=seed)
        table[key] = {names[0]: float(np.mean(a.correct[key])), names[1]: float(np.mean(b.correct[key])),
                      "difference": interval.difference, "low": interval.low, "high": interval.high,
                      "significant": interval.significant}
    return table


def comparison_markdown(results, models, table, data, space="encoder", resamples=1000, names=("A", "B")):
    """The lines of `compare.md`: the two models, each classifier's A - B interval, the scalars.

    Args:
        results: the two `EvaluationResult`s (A, B).
        models: the two models' labels, e.g. `["A: runs/sincere", "B: runs/supcon"]`.
        table: `compare_results(A, B, names=names)`.
        data: the data spec, for the heading.
        space: `"encoder"` or `"projection"`.
        resamples: the bootstrap resamples behind `table`.
        names: the two column names `table` uses. Defaults to `("A", "B")`.
    """
    a, b = names
    lines = [f"# clzoo compare on {data} ({space} space)", "", f"- {models[0]}", f"- {models[1]}", "",
             f"Top-1 of each classifier and the 95% percentile bootstrap interval of {a} - {b} "
             f"({resamples} resamples of the test set, SINCERE sec. 4).", "",
             f"| classifier | {a} | {b} | {a} - {b} | 95% interval | excludes 0 |",
             "| --- | --- | --- | --- | --- | --- |"]
    for key, row in table.items():
        lines.append(f"| {key} | {row[a]:.2%} | {row[b]:.2%} | {row['difference']:+.2%} | "
                     f"[{row['low']:+.2%}, {row['high']:+.2%}] | {'yes' if row['significant'] else 'no'} |")
    rows = []
    for label, field in SCALAR_ROWS:
        values = [getattr(r, field) for r in results]
        if all(isinstance(v, float) for v in values):
            rows.append(f"| {label} | {values[0]:.4g} | {values[1]:.4g} |")
    if rows:
        lines += ["", f"| metric | {a} | {b} |", "| --- | --- | --- |"] + rows
    return lines + ["", f"Full reports: [{a}]({a}/report.md), [{b}]({b}/report.md)", ""]
