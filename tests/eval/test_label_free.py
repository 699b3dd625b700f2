"""Alignment, uniformity (Wang & Isola 2020) and effective rank (RankMe), against loops written out."""

import itertools
import math

import keras
import numpy as np
import pytest

from clzoo.data import ViewConfig, from_arrays
from clzoo.eval.label_free import alignment, effective_rank, label_free_report, uniformity

pytestmark = pytest.mark.backends("tensorflow", "jax", "torch")


def _unit(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_alignment_is_the_mean_distance_to_the_power_alpha():
    rng = np.random.default_rng(0)
    a, b = _unit(rng.normal(size=(7, 5))), _unit(rng.normal(size=(7, 5)))
    for alpha in (1.0, 2.0, 3.0):
        expected = sum(math.dist(x, y) ** alpha for x, y in zip(a, b)) / len(a)
        assert alignment(a, b, alpha) == pytest.approx(expected, rel=1e-12)
    assert alignment(a, a) == 0.0


def test_uniformity_is_the_log_mean_kernel_over_distinct_pairs():
    rng = np.random.default_rng(1)
    x = _unit(rng.normal(size=(9, 4)))
    for t in (0.5, 2.0, 40.0):
        pairs = [math.exp(-t * math.dist(x[i], x[j]) ** 2) for i, j in itertools.combinations(range(9), 2)]
        assert uniformity(x, t) == pytest.approx(math.log(sum(pairs) / len(pairs)), rel=1e-9)
    collapsed = np.repeat(x[:1], 9, axis=0)
    assert uniformity(collapsed) == pytest.approx(0.0, abs=1e-12)  # the maximum: everything at one point
    assert uniformity(x) < uniformity(_unit(x * 0.3 + x[:1] * 0.7))  # spread out is lower


def test_uniformity_does_not_underflow_at_a_large_scale():
    x = np.eye(3)  # every pair 2 apart: exp(-t * 2) underflows float64 at t = 500
    assert uniformity(x, t=500.0) == pytest.approx(-1000.0)


def test_effective_rank_is_the_entropy_of_the_singular_values():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(20, 6)) @ np.diag([5, 3, 1, 1, 0.1, 0.01])
    eigen = np.clip(np.linalg.eigvalsh(x.T @ x), 0, None)  # singular values another way
    p = np.sqrt(eigen) / np.sqrt(eigen).sum() + 1e-7
    assert effective_rank(x) == pytest.approx(float(np.exp(-(p * np.log(p)).sum())), rel=1e-6)
    basis = np.linalg.qr(rng.normal(size=(16, 16)))[0]
    for k in (1, 3, 8):
        assert effective_rank(basis[:, :k] * 4.0) == pytest.approx(k, rel=1e-4)  # k equal directions
    assert effective_rank(np.zeros((4, 3))) == 1.0


@pytest.mark.parametrize("bad, why", [
    (np.eye(3)[:1], "N >= 2"), (np.eye(3)[0], "N >= 2"), (np.zeros((5, 0)), "D >= 1"),
    (np.full((3, 2), np.nan), "non-finite"), (np.eye(3) * 1e200, "L2-normalized rows")])
def test_bad_embeddings_are_refused_in_one_line(bad, why):
    with pytest.raises(ValueError, match=why):
        uniformity(bad)
    with pytest.raises(ValueError, match="must have one shape"):
        alignment(np.eye(2), np.eye(3))


@pytest.mark.parametrize("call, name", [
    (lambda: uniformity(np.eye(3), t=0), "`t`"), (lambda: uniformity(np.eye(3), t=-1), "`t`"),
    (lambda: alignment(np.eye(3), np.eye(3), alpha=-1), "`alpha`"),
    (lambda: effective_rank(np.eye(3), eps=-1), "`eps`"),
    (lambda: effective_rank(np.zeros((5, 0))), "D >= 1")])
def test_bad_settings_are_refused_naming_them(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_the_report_embeds_two_views_of_a_sample_with_the_encoder():
    rng = np.random.default_rng(3)
    split = from_arrays(rng.integers(0, 256, (40, 8, 8, 3), dtype=np.uint8), np.zeros(40, np.int32))
    inputs = keras.Input((8, 8, 3))
    encoder = keras.Model(inputs, keras.layers.Dense(6)(keras.layers.Flatten()(inputs)))
    views = ViewConfig(size=8)
    report = label_free_report(encoder, split, views, seed=0, sample=32)
    assert report.images == 32 and report.features == 6 and report.alignment > 0
    # more images than one view batch: every sampled image is embedded, none dropped
    many = from_arrays(rng.integers(0, 256, (300, 8, 8, 3), dtype=np.uint8), np.zeros(300, np.int32))
    assert label_free_report(encoder, many, views, seed=0, sample=290).images == 290
    again = label_free_report(encoder, split, views, seed=0, sample=32)
    for key in ("alignment", "uniformity", "effective_rank"):  # the same seed, the same figures
        assert getattr(again, key) == pytest.approx(getattr(report, key), rel=1e-5)
    assert 1.0 <= report.effective_rank <= 6.0 and report.uniformity < 0
    # a constant encoder has collapsed: no spread, rank 1, views aligned
    flat = keras.Model(inputs, keras.layers.Dense(6, kernel_initializer="zeros",
                                                  bias_initializer="ones")(keras.layers.Flatten()(inputs)))
    collapsed = label_free_report(flat, split, views, seed=0, sample=32)
    assert collapsed.alignment == pytest.approx(0, abs=1e-10)
    assert collapsed.uniformity == pytest.approx(0, abs=1e-10)
    assert collapsed.effective_rank == pytest.approx(1, abs=1e-4)
