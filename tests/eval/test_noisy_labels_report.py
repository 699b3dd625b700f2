"""Issue 69 item 9: the noisy-label report gave indices instead of the files, and listed rows whose
label equals the nearest-center label (not suspects of a wrong label)."""

import numpy as np

import clzoo
from clzoo.eval import EvalContext


def test_the_report_names_files_and_only_rows_nearest_another_class():
    rng = np.random.default_rng(0)
    centers = np.eye(3)[:2] * 4
    labels = np.repeat([0, 1], 10)
    x = centers[labels] + rng.normal(scale=0.3, size=(20, 3))
    x[3] = centers[1]  # labelled 0, lies on class 1
    paths = [f"/data/train/{'ab'[y]}/{i}.png" for i, y in enumerate(labels)]
    context = EvalContext.create(x, labels, x, labels, class_names=["a", "b"], train_paths=paths)
    result = clzoo.eval.METRICS.get("noisy_labels")().compute(context)
    scalars = result.scalars
    assert scalars["most_suspicious_train_indices"] == [3]  # the others are nearest their own class
    assert scalars["most_suspicious_train_paths"] == ["/data/train/a/3.png"]
    assert result.rows[0][1] == "a/3.png: a -> b"
    unnamed = EvalContext.create(x, labels, x, labels)
    assert clzoo.eval.METRICS.get("noisy_labels")().compute(unnamed).rows[0][1] == "3: 0 -> 1"
