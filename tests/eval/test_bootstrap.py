"""`clzoo.eval.bootstrap` (scipy) against a plain NumPy percentile bootstrap written from its definition."""

import numpy as np
import pytest

import clzoo.eval as E

RNG = np.random.default_rng(5)


def _numpy_percentile_bootstrap(samples, statistic, resamples, confidence, seed, paired):
    """Resample examples with replacement (the same indices for every sample when paired)."""
    rng = np.random.default_rng(seed)
    values = []
    for _ in range(resamples):
        if paired:
            index = rng.integers(0, len(samples[0]), len(samples[0]))
            drawn = [s[index] for s in samples]
        else:
            drawn = [s[rng.integers(0, len(s), len(s))] for s in samples]
        values.append(statistic(*drawn))
    tail = (1 - confidence) / 2
    return np.quantile(values, [tail, 1 - tail])


@pytest.mark.parametrize("statistic", [np.mean, np.median])
def test_one_sample_interval_agrees_with_a_numpy_loop(statistic):
    margins = RNG.normal(0.1, 0.3, size=400)
    r = E.bootstrap(margins, statistic=statistic, resamples=4000, seed=1)
    low, high = _numpy_percentile_bootstrap([margins], statistic, 4000, 0.95, 2, paired=False)
    assert r.estimate == pytest.approx(statistic(margins))
    # Two independent Monte Carlo estimates of the same percentiles.
    assert r.low == pytest.approx(low, abs=0.012) and r.high == pytest.approx(high, abs=0.012)


def test_paired_accuracy_difference_agrees_with_a_numpy_loop():
    rng = np.random.default_rng(5)  # its own generator: the data must not depend on test order
    a = rng.uniform(size=800) < 0.8
    b = np.where(rng.uniform(size=800) < 0.85, a, ~a)  # correlated with a
    r = E.bootstrap_accuracy_difference(a, b, resamples=4000, seed=1)
    low, high = _numpy_percentile_bootstrap(
        [a.astype(float), b.astype(float)], lambda x, y: x.mean() - y.mean(), 4000, 0.95, 2,
        paired=True)
    assert r.difference == pytest.approx(a.mean() - b.mean())
    assert r.low == pytest.approx(low, abs=0.006) and r.high == pytest.approx(high, abs=0.006)
    # Unpaired resampling ignores the correlation and gives a wider interval.
    unpaired = E.bootstrap(a, b, statistic=lambda x, y, axis=-1: x.mean(axis) - y.mean(axis),
                           resamples=4000)
    # (Here 1.5x as wide; the bound leaves room for the resampling noise of two intervals.)
    assert unpaired.high - unpaired.low > 1.25 * (r.high - r.low)


def test_identical_inputs_have_an_interval_containing_zero():
    correct = RNG.uniform(size=300) < 0.6
    r = E.bootstrap_accuracy_difference(correct, correct)
    assert r.low <= 0.0 <= r.high and not r.significant
    assert isinstance(r, E.BootstrapInterval)
    acc = E.bootstrap_accuracy(correct)
    assert isinstance(acc, E.BootstrapInterval) and acc.low < correct.mean() < acc.high


def test_bootstrap_refuses_bad_arguments():
    x = np.ones(5)
    with pytest.raises(ValueError, match="paired=True"):
        E.bootstrap(x, np.ones(4), statistic=lambda a, b, axis=-1: a.mean(axis), paired=True)
    with pytest.raises(ValueError, match="method"):
        E.bootstrap(x, method="jackknife")
    with pytest.raises(ValueError, match="confidence"):
        E.bootstrap(x, confidence=1.5)
    with pytest.raises(ValueError, match="resamples"):
        E.bootstrap(x, resamples=0)
    with pytest.raises(ValueError, match="1-D"):
        E.bootstrap(np.ones((2, 2)))
    with pytest.raises(ValueError, match="NaN"):
        E.bootstrap(np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match="boolean"):
        E.bootstrap_accuracy(np.array([1, 0]))


def test_one_accuracy_is_an_estimate_not_a_difference():
    import dataclasses

    acc = E.bootstrap_accuracy(np.array([True] * 9 + [False]))
    assert [f.name for f in dataclasses.fields(acc)][0] == "estimate"
    assert acc.estimate == pytest.approx(0.9) and acc.difference == acc.estimate  # the old name reads it


@pytest.mark.parametrize("resamples", [1, 2, 99])
def test_too_few_resamples_for_an_interval_are_refused(resamples):
    x = np.arange(20) % 3 == 0
    with pytest.raises(ValueError, match=rf"`resamples` must be a whole number >= 100.*"
                                         rf"Received: resamples={resamples}$"):
        E.bootstrap_accuracy_difference(x, ~x, resamples=resamples)
    r = E.evaluate_embeddings(np.eye(4), [0, 0, 1, 1], np.eye(4), [0, 0, 1, 1], "ncc", verbose=False)
    with pytest.raises(ValueError, match="resamples"):
        E.compare_results(r, r, resamples=resamples)
    with pytest.raises(ValueError, match="resamples"):  # no classifier in common: refused all the same
        E.compare_results(r, E.evaluate_embeddings(np.eye(4), [0, 0, 1, 1], np.eye(4), [0, 0, 1, 1],
                                                   "geometry", verbose=False), resamples=resamples)
    assert E.bootstrap_accuracy_difference(x, ~x, resamples=100).low < 0  # the minimum itself runs


def test_an_interval_still_constructs_from_its_old_field_name():
    old = E.BootstrapInterval(difference=0.1, low=-0.1, high=0.3, confidence=0.95, significant=False)
    assert old == E.BootstrapInterval(0.1, -0.1, 0.3, 0.95, False)
    assert old.estimate == old.difference == 0.1
    with pytest.raises(TypeError, match="not both"):
        E.BootstrapInterval(0.1, -0.1, 0.3, 0.95, False, difference=0.1)
    with pytest.raises(TypeError, match="BootstrapInterval: missing a required argument: 'significant'"):
        E.BootstrapInterval(0.1, -0.1, 0.3, 0.95)
