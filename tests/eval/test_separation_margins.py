"""Per-image target-noise margins with bootstrap intervals, checked against direct NumPy."""

import numpy as np
import pytest

from clzoo import eval as E


def _embeddings(seed=0, n_train=60, n_test=80, classes=3, dim=6, spread=1.5):
    rng = np.random.default_rng(seed)
    y_train, y_test = np.arange(n_train) % classes, np.arange(n_test) % classes
    train = rng.normal(size=(n_train, dim)) + spread * np.eye(dim)[y_train]
    test = rng.normal(size=(n_test, dim)) + spread * np.eye(dim)[y_test]
    return train, y_train, test, y_test


def _direct_margins(train, y_train, test, y_test):
    """s_target(i) - s_noise(i), one test image at a time (SINCERE sec. 4.1, Fig. 2)."""
    train = train / np.linalg.norm(train, axis=1, keepdims=True)
    out = []
    for x, y in zip(test, y_test):
        sims = train @ (x / np.linalg.norm(x))
        out.append(sims[y_train == y].max() - sims[y_train != y].max())
    return np.array(out)


def _table1(margins_target, margins_noise, labels):
    return np.mean([np.median(margins_target[labels == c]) - np.median(margins_noise[labels == c])
                    for c in np.unique(labels)])


def _percentile_bootstrap(statistic, n, resamples, seed, confidence=0.95):
    rng = np.random.default_rng(seed)
    values = [statistic(rng.integers(0, n, n)) for _ in range(resamples)]
    tail = 100 * (1 - confidence) / 2
    return np.percentile(values, tail), np.percentile(values, 100 - tail)


def test_per_image_margin_mean_and_interval_match_numpy():
    train, y_train, test, y_test = _embeddings()
    sep = E.target_noise_separation(train, y_train, test, y_test)
    margins = _direct_margins(train, y_train, test, y_test)
    np.testing.assert_allclose(sep.per_image_margin, margins, atol=1e-6)  # float32 similarities
    r = E.margin_interval(sep, resamples=4000, seed=1)
    assert r.estimate == pytest.approx(margins.mean(), abs=1e-6)
    low, high = _percentile_bootstrap(lambda i: margins[i].mean(), len(margins), 4000, seed=2)
    se = margins.std() / np.sqrt(len(margins))
    assert abs(r.low - low) < 0.15 * se and abs(r.high - high) < 0.15 * se  # Monte Carlo error only
    assert r.low < r.estimate < r.high and r.confidence == 0.95


def test_class_median_margin_is_table_1_with_an_interval():
    train, y_train, test, y_test = _embeddings(seed=3)
    sep = E.target_noise_separation(train, y_train, test, y_test)
    r = E.margin_interval(sep, statistic="class_median", resamples=2000, seed=1)
    assert r.estimate == pytest.approx(sep.margin, abs=1e-12)
    assert r.estimate == pytest.approx(_table1(sep.target, sep.noise, y_test), abs=1e-12)
    low, high = _percentile_bootstrap(
        lambda i: _table1(sep.target[i], sep.noise[i], y_test[i]), len(y_test), 2000, seed=2)
    width = high - low
    assert abs(r.low - low) < 0.1 * width and abs(r.high - high) < 0.1 * width


def test_paired_difference_matches_numpy_and_is_narrower_than_unpaired():
    train, y_train, test, y_test = _embeddings(seed=4)
    rng = np.random.default_rng(5)
    # B: the same encoder slightly perturbed, so the two margins are strongly correlated per image.
    a = E.target_noise_separation(train, y_train, test, y_test)
    b = E.target_noise_separation(train + 0.3 * rng.normal(size=train.shape), y_train,
                                  test + 0.3 * rng.normal(size=test.shape), y_test)
    ma = _direct_margins(train, y_train, test, y_test)
    mb = b.per_image_margin
    r = E.margin_difference(a, b, resamples=4000, seed=1)
    assert r.estimate == pytest.approx(np.mean(ma - mb), abs=1e-6)
    low, high = _percentile_bootstrap(lambda i: np.mean(ma[i] - mb[i]), len(ma), 4000, seed=2)
    se = (ma - mb).std() / np.sqrt(len(ma))
    assert abs(r.low - low) < 0.15 * se and abs(r.high - high) < 0.15 * se
    # Resampling A and B independently ignores the pairing: a wider interval.
    unpaired = E.bootstrap(ma, mb, statistic=lambda x, y, axis=-1: x.mean(axis) - y.mean(axis),
                           resamples=4000, seed=1)
    assert (r.high - r.low) < 0.8 * (unpaired.high - unpaired.low)
    median = E.margin_difference(a, b, statistic="class_median", resamples=200)
    assert median.estimate == pytest.approx(a.margin - b.margin, abs=1e-12)


def test_margin_difference_of_an_encoder_with_itself_is_zero():
    sep = E.target_noise_separation(*_embeddings(seed=6))
    r = E.margin_difference(sep, sep, resamples=200)
    assert (r.estimate, r.low, r.high, r.significant) == (0.0, 0.0, 0.0, False)


def test_margin_refusals():
    train, y_train, test, y_test = _embeddings()
    sep = E.target_noise_separation(train, y_train, test, y_test)
    fewer = E.target_noise_separation(train, y_train, test[:-3], y_test[:-3])
    shuffled = E.target_noise_separation(train, y_train, test[::-1], y_test[::-1])
    with pytest.raises(ValueError, match="same test images.*80 and 77"):
        E.margin_difference(sep, fewer)
    with pytest.raises(ValueError, match="labels differ"):
        E.margin_difference(sep, shuffled)
    with pytest.raises(ValueError, match="statistic"):
        E.margin_interval(sep, statistic="median")
    with pytest.raises(ValueError, match="Separation"):
        E.margin_interval(sep.per_image_margin)
    with pytest.raises(ValueError, match="confidence"):
        E.margin_interval(sep, confidence=1.5)
