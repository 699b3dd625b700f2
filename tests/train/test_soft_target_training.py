"""Soft-target training: the resumable MixUp / CutMix stream and the `task: soft_target` recipes."""

import json

import numpy as np
import pytest

from clzoo.data import MixConfig, ViewConfig, batches, from_arrays
from clzoo.train import load_recipe, train
from tests.train.tiny_data import write_tiny_digits


def _split(n=30):
    rng = np.random.default_rng(0)
    return from_arrays(rng.integers(0, 255, (n, 8, 8, 3), dtype=np.uint8), np.arange(n) % 3)


def test_soft_target_stream_resumes_at_any_step_and_targets_sum_to_one():
    split = _split()
    views = ViewConfig(size=8, views=1)
    full = list(batches(split, "soft_targets", 6, seed=2, epochs=2, views=views,
                        mix=MixConfig()).as_numpy_iterator())
    assert len(full) == 10
    for start in (1, 5, 7):
        resumed = list(batches(split, "soft_targets", 6, seed=2, epochs=2, start_step=start,
                               views=views, mix=MixConfig()).as_numpy_iterator())
        for (xa, ta), (xb, tb) in zip(full[start:], resumed):
            np.testing.assert_array_equal(xa, xb)
            np.testing.assert_array_equal(ta, tb)
    targets = np.concatenate([t for _, t in full])
    np.testing.assert_allclose(targets.sum(1), 1.0, atol=1e-5)
    # Mixed: most rows are neither one-hot nor only label-smoothed one-hot.
    smoothed = {0.9 + 0.1 / 3, 0.1 / 3}
    assert np.mean([not set(np.round(row, 5)) <= {round(v, 5) for v in smoothed} for row in targets]) > 0.5


@pytest.mark.large
@pytest.mark.parametrize("loss", ["SoftTargetInfoNCELoss", "SoftTargetCrossEntropy"])
def test_soft_target_recipe_trains_a_classifier(loss, tmp_path):
    data = write_tiny_digits(tmp_path / "data")
    config = load_recipe(None, [
        f"data={data}", "task=soft_target", f"loss.name={loss}", "model.architecture=resnet8",
        "views.size=8", "views.views=1",
        "views.flip=false", "views.jitter_p=0.0", "views.grayscale_p=0.0", "mix.mixup_alpha=0.8",
        "mix.cutmix_alpha=1.0", "mix.label_smoothing=0.1", "training.epochs=8",
        "training.batch_size=16", "training.optimizer=adamw", "training.learning_rate=3e-3",
        "training.weight_decay=0.05", "eval.metrics=[knn]", "eval.knn_k=[5]", "eval.knn_headline_k=5"])
    metrics = train(config, tmp_path / "run", verbose=0)
    # 4 classes: chance is 25%. After 80 steps the batch-norm moving statistics still lag, which
    # holds the classifier (inference mode) below the kNN on the same features.
    assert metrics.classifier_top1 > 0.4 and metrics.knn_top1 > 0.6
    assert 0 <= metrics.classifier_ece <= 1
    history = [json.loads(line) for line in (tmp_path / "run" / "history.jsonl").read_text().splitlines()]
    assert history[-1]["loss"] < history[0]["loss"]
    assert (tmp_path / "run" / "encoder.keras").is_file()
