"""Training diagnostics as `keras.metrics.Metric`s, for `model.compile(metrics=[...])`.

They read the same `(y_true, y_pred)` as the losses (`y_pred` embeddings
`(batch, views, dim)`), so their values show in the `History` and in
TensorBoard during `fit`. (Evaluations of a frozen encoder, kNN, probes and
the papers' other measurements, live in `clzoo.eval`.)

- `Alignment`, `Uniformity`: Wang and Isola 2020, sec. 4.1 (alpha = 2, t = 2).
- `ContrastiveAccuracy`: is the nearest other embedding a view of the same sample?
- `MeanPositives`, `AnchorsWithoutPositives`: the supervised losses' positive sets.
"""

from clzoo.metrics.alignment_uniformity import Alignment, Uniformity
from clzoo.metrics.contrastive_accuracy import ContrastiveAccuracy
from clzoo.metrics.positives import AnchorsWithoutPositives, MeanPositives

__all__ = ["Alignment", "AnchorsWithoutPositives", "ContrastiveAccuracy", "MeanPositives", "Uniformity"]
