"""Issue 72 items 15 and 17: label rows in `ContrastiveModel.fit`. Valid one-hot rows were refused on
torch's first fit, quoting a row of ones Keras' symbolic build made (not the user's); multi-hot rows
without `label_similarity` gave TensorFlow a 51-line graph error. Both one line, every lane."""

import numpy as np
import pytest

import clzoo
from clzoo.models import ContrastiveModel, ProjectionHead

pytestmark = pytest.mark.backends("tensorflow", "jax", "torch")  # every lane (tests/conftest.py)


def _model(loss):
    encoder = clzoo.models.get_encoder("resnet8", input_shape=(8, 8, 3), name="encoder")
    model = ContrastiveModel(encoder, ProjectionHead(hidden_dims=(), output_dim=8))
    model.compile(optimizer="sgd", loss=loss)
    return model


def _batch():
    x = np.random.default_rng(0).random((8, 2, 8, 8, 3)).astype("float32")
    return x, np.eye(4, dtype="float32")[np.arange(8) % 4]


@pytest.mark.parametrize("loss", [clzoo.losses.SupConLoss, clzoo.losses.SINCERELoss])
def test_a_first_fit_takes_one_hot_label_rows(loss):
    x, y = _batch()
    history = _model(loss()).fit(x, y, epochs=1, batch_size=8, verbose=0).history
    assert np.isfinite(history["loss"][0])


def test_multi_hot_rows_without_label_similarity_are_refused_in_one_line():
    x, y = _batch()
    y[0, 1] = 1
    with pytest.raises(ValueError, match=r"^`y_true` must be integer class ids .* exactly one-hot "
                                         r"rows .*multi-hot rows .* are never argmaxed") as refused:
        _model(clzoo.losses.SupConLoss()).fit(x, y, epochs=1, batch_size=8, verbose=0)
    assert "\n" not in str(refused.value) and "Graph execution" not in str(refused.value)
