"""`clzoo.eval.transfer_probe`: the linear-probe transfer protocol behind `clzoo transfer`."""

import keras
import numpy as np
import pytest

from clzoo.eval import bootstrap_accuracy, embed, logistic_regression_probe, transfer_probe
from clzoo.eval.probe_transfer import check_input_size
from tests.eval.test_baselines import _two_blobs


def _flatten_encoder(size=4):
    inputs = keras.Input((size, size, 3))
    return keras.Model(inputs, keras.layers.Flatten()(inputs))


def test_lbfgs_transfer_is_the_probe_on_frozen_features_with_its_interval():
    train, test = _two_blobs(60, 0), _two_blobs(40, 1)
    encoder = _flatten_encoder()
    result = transfer_probe(encoder, train, test, protocol="lbfgs")
    direct = logistic_regression_probe(embed(encoder, train.images, normalize=False), train.labels,
                                       embed(encoder, test.images, normalize=False), test.labels)
    interval = bootstrap_accuracy(direct.predictions == test.labels)
    assert (result.top1, result.low, result.high) == (direct.accuracy, interval.low, interval.high)
    assert result.test_images == 40 and result.learning_rate is None
    written = result.to_dict(preset="p", data="d")
    assert list(written)[:4] == ["preset", "data", "protocol", "top1"]
    assert written["ci95"] == [interval.low, interval.high] and written["test_images"] == 40


def test_a_wrong_image_size_or_protocol_is_refused_before_any_fit():
    train = _two_blobs(10, 0)
    with pytest.raises(ValueError, match=r"encoder takes 8x8 images; mine has 4x4"):
        check_input_size(_flatten_encoder(8), train, "mine")
    with pytest.raises(ValueError, match=r"`protocol` must be one of"):
        transfer_probe(_flatten_encoder(), train, train, protocol="adam")


def test_the_comparison_report_uses_the_names_it_is_given():
    from clzoo.eval import compare_results, comparison_markdown, evaluate_embeddings

    x, y = np.eye(4), np.array([0, 0, 1, 1])
    r = evaluate_embeddings(x, y, x, y, "ncc", verbose=False)
    table = compare_results(r, r, names=("sincere", "supcon"), resamples=100)
    lines = comparison_markdown([r, r], ["sincere: a", "supcon: b"], table, "d", names=("sincere", "supcon"))
    assert "| ncc | 100.00% | 100.00% | +0.00% |" in "\n".join(lines)
    assert "| classifier | sincere | supcon | sincere - supcon |" in "\n".join(lines)
