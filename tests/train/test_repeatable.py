"""Same recipe and seed on a CPU: the same weights and metrics, twice (`training.deterministic`)."""

import json

import keras
import numpy as np
import pytest

from clzoo.train import load_recipe, train
from clzoo.train.determinism import seed_everything

pytestmark = pytest.mark.backends("tensorflow", "jax", "torch")  # every lane (tests/conftest.py)

TINY = ["data=digits", "training.epochs=1", "training.batch_size=128", "views.size=16",
        "model.architecture=resnet8", "model.embedding_dim=16", "eval.knn_k=[1,5]", "eval.knn_headline_k=5",
        "eval.metrics=[knn,probe]"]


def _run(tmp_path, name, *extra):
    metrics = train(load_recipe(None, TINY + list(extra)),
                    tmp_path / name, verbose=0)
    weights = keras.saving.load_model(tmp_path / name / "encoder.keras").get_weights()
    return metrics, weights


@pytest.mark.large
def test_same_seed_same_weights_and_metrics(tmp_path):
    first, w1 = _run(tmp_path, "a", "seed=3")
    second, w2 = _run(tmp_path, "b", "seed=3")
    # Only its weights are compared: no probe, no baselines.
    _, w3 = _run(tmp_path, "c", "seed=4", "eval.metrics=[knn]", "eval.baselines=[]")
    assert all(np.array_equal(x, y) for x, y in zip(w1, w2))
    for field in ("knn", "final_loss", "probe", "baselines", "loss_curve"):
        assert getattr(first, field) == getattr(second, field), field
    assert not all(np.array_equal(x, y) for x, y in zip(w1, w3))  # the seed matters
    saved = json.loads((tmp_path / "a" / "metrics.json").read_text())
    assert saved["knn_top1_by_k"] == second.knn


def test_seed_must_be_an_integer():
    with pytest.raises(ValueError, match="seed"):
        seed_everything(1.5)
    with pytest.raises(ValueError, match="seed"):
        seed_everything(True)
