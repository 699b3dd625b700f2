"""Evaluation metrics against embeddings whose answers are known and independent loop references."""

import math

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

import clzoo.eval as E

RNG = np.random.default_rng(3)


def simplex_etf(classes, dim):
    """Unit class means with pairwise cosine -1/(C-1) (a simplex equiangular tight frame)."""
    centered = np.eye(classes) - 1.0 / classes
    basis = np.linalg.qr(RNG.normal(size=(dim, dim)))[0][:, :classes]
    points = centered @ basis.T
    return points / np.linalg.norm(points, axis=1, keepdims=True)


def collapsed(classes=5, per_class=20, dim=8):
    centers = simplex_etf(classes, dim)
    labels = np.repeat(np.arange(classes), per_class)
    return centers[labels], labels, centers


def gaussian_classes(classes=4, per_class=60, dim=6, spread=0.6):
    centers = RNG.normal(size=(classes, dim)) * 3
    labels = np.repeat(np.arange(classes), per_class)
    return centers[labels] + spread * RNG.normal(size=(len(labels), dim)), labels


# --- collapsed classes on a simplex ETF ----------------------------------------------------


def test_collapsed_simplex_etf_has_zero_variability_and_perfect_accuracy():
    x, y, _ = collapsed()
    assert E.cdnv(x, y) == pytest.approx(0.0, abs=1e-12)
    assert E.directional_cdnv(x, y) == pytest.approx(0.0, abs=1e-12)
    assert E.nearest_class_center_accuracy(x, y, x, y) == 1.0
    assert E.knn_accuracy(x, y, x, y, ks=(1, 5))[5] == 1.0
    assert E.few_shot_error_bound(x, y, shots=10) == pytest.approx(0.0, abs=1e-12)
    errors = E.few_shot_errors(x, y, x, y, shots=1)
    assert errors["ncc"]["error"] == 0.0 and errors["linear"]["error"] == 0.0


def test_collapsed_simplex_etf_separation_margin_is_one_plus_one_over_c_minus_one():
    x, y, _ = collapsed(classes=5)
    sep = E.target_noise_separation(x, y, x, y)
    np.testing.assert_allclose(sep.target, 1.0, rtol=1e-6)
    np.testing.assert_allclose(sep.noise, -1.0 / 4, rtol=1e-5)
    assert sep.margin == pytest.approx(1.25, rel=1e-6)


def test_two_clusters_with_known_margin():
    # Class 0 at angle 0 and 0.2 rad, class 1 at 1.2 rad: test at 0.1 rad.
    angle = lambda a: np.stack([np.cos(a), np.sin(a)], axis=-1)
    train = angle(np.array([0.0, 0.2, 1.2]))
    sep = E.target_noise_separation(train, [0, 0, 1], angle(np.array([0.1, 1.1])), [0, 1])
    np.testing.assert_allclose(sep.target, [np.cos(0.1), np.cos(0.1)], rtol=1e-6)
    np.testing.assert_allclose(sep.noise, [np.cos(1.1), np.cos(0.9)], rtol=1e-6)
    assert sep.per_class_margin[0] == pytest.approx(np.cos(0.1) - np.cos(1.1), rel=1e-6)
    expected = np.mean([np.cos(0.1) - np.cos(1.1), np.cos(0.1) - np.cos(0.9)])
    assert sep.margin == pytest.approx(expected, rel=1e-6)


def test_separation_blockwise_equals_one_block():
    x, y = gaussian_classes()
    a = E.target_noise_separation(x[::2], y[::2], x[1::2], y[1::2], block_size=7)
    b = E.target_noise_separation(x[::2], y[::2], x[1::2], y[1::2], block_size=10_000)
    np.testing.assert_allclose(a.target, b.target, rtol=1e-6)
    np.testing.assert_allclose(a.noise, b.noise, rtol=1e-6)


# --- CDNV against loops over class pairs -------------------------------------------------


def _cdnv_loops(x, y):
    classes = np.unique(y)
    mu = {c: x[y == c].mean(0) for c in classes}
    var = {c: np.mean(np.sum((x[y == c] - mu[c]) ** 2, axis=1)) for c in classes}
    plain, directional = [], []
    for i in classes:
        for j in classes:
            if i == j:
                continue
            d2 = np.sum((mu[i] - mu[j]) ** 2)
            u = (mu[i] - mu[j]) / math.sqrt(d2)
            proj = (x[y == i] - mu[i]) @ u
            plain.append((var[i] + var[j]) / (2 * d2))  # the symmetric form
            directional.append(np.var(proj) / d2)
    return np.mean(plain), np.mean(directional)


def test_cdnv_and_directional_cdnv_match_loops():
    x, y = gaussian_classes(classes=5, per_class=30, spread=1.5)
    y = np.concatenate([y[:100], y[100:][::2]])  # imbalanced
    x = np.concatenate([x[:100], x[100:][::2]])
    plain, directional = _cdnv_loops(x, y)
    assert E.cdnv(x, y) == pytest.approx(plain, rel=1e-9)
    assert E.directional_cdnv(x, y) == pytest.approx(directional, rel=1e-9)
    assert E.directional_cdnv(x, y) <= E.cdnv(x, y)


def test_isotropic_directional_cdnv_is_cdnv_over_dimension():
    dim = 16
    x, y = gaussian_classes(classes=3, per_class=4000, dim=dim, spread=1.0)
    # V~ = V / d for isotropic classes (NSCL sec. 3.2), up to sampling noise.
    assert E.directional_cdnv(x, y) == pytest.approx(E.cdnv(x, y) / dim, rel=0.1)


def test_few_shot_bound_lies_between_its_limit_and_prop_1():
    x, y = gaussian_classes(classes=3, per_class=200, spread=0.3)
    for m in (10, 100, 10_000):
        bound = E.few_shot_error_bound(x, y, shots=m)
        # Prop. 1 is eq. 13 at a = 16: the infimum over a can only be lower.
        classes = np.unique(y)
        mu = [x[y == c].mean(0) for c in classes]
        tr = [np.trace(np.cov(x[y == c].T, bias=True)) for c in classes]
        pairs = [(i, j) for i in range(3) for j in range(3) if i != j]
        d2 = {p: np.sum((mu[p[0]] - mu[p[1]]) ** 2) for p in pairs}
        v = np.mean([(tr[i] + tr[j]) / d2[(i, j)] for i, j in pairs])
        v_s = np.mean([math.sqrt((tr[i] + tr[j]) / d2[(i, j)]) for i, j in pairs])
        v_dir = E.directional_cdnv(x, y)
        prop1 = 2 * (8 * v_dir + 8 / math.sqrt(m) * v_s + 8 / math.sqrt(m) * v + 4 / m * v)
        assert 2 * 4 * v_dir - 1e-12 <= bound <= prop1
    # The bound holds for the measured NCC error (averaged over draws).
    error = E.few_shot_errors(x, y, x, y, shots=10, probe="ncc")["ncc"]["error"]
    assert error <= E.few_shot_error_bound(x, y, shots=10)


def test_nearest_class_center_matches_explicit_distances():
    x, y = gaussian_classes(spread=3.0)
    centers = np.stack([x[y == c].mean(0) for c in range(4)])
    expected = np.argmin(((x[:, None, :] - centers[None]) ** 2).sum(-1), axis=1)
    np.testing.assert_array_equal(E.nearest_class_center_predict(x, y, x), expected)


# --- probes ------------------------------------------------------------------------------


def test_logistic_probe_matches_scikit_learn_on_random_data():
    x, y = RNG.normal(size=(200, 8)), RNG.integers(0, 3, 200)
    t = RNG.normal(size=(50, 8))
    ty = RNG.integers(0, 3, 50)
    ours = E.logistic_regression_probe(x, y, t, ty, standardize=False)
    reference = LogisticRegression(max_iter=1000).fit(x, y)
    np.testing.assert_array_equal(ours.predictions, reference.predict(t))
    np.testing.assert_allclose(ours.probabilities, reference.predict_proba(t), rtol=1e-6)
    assert ours.accuracy == pytest.approx(np.mean(reference.predict(t) == ty))


# --- calibration -------------------------------------------------------------------------


def test_perfectly_calibrated_probabilities_have_near_zero_ece():
    n = 200_000
    confidence = RNG.uniform(0.5, 1.0, n)
    probabilities = np.stack([confidence, 1 - confidence], axis=1)
    labels = (RNG.uniform(size=n) > confidence).astype(int)  # class 0 with prob. = confidence
    assert E.expected_calibration_error(probabilities, labels) < 0.01


def test_ece_matches_a_loop_over_bins():
    p = RNG.dirichlet(np.ones(4), 500)
    y = RNG.integers(0, 4, 500)
    conf, pred = p.max(1), p.argmax(1)
    total = 0.0
    for lo, hi in zip(np.linspace(0, 1, 16)[:-1], np.linspace(0, 1, 16)[1:]):
        members = (conf > lo) & (conf <= hi)
        if members.any():
            total += members.mean() * abs((pred[members] == y[members]).mean() - conf[members].mean())
    assert E.expected_calibration_error(p, y) == pytest.approx(total)


def test_overconfident_probabilities_have_large_ece():
    p = np.tile([0.99, 0.01], (1000, 1))
    y = np.repeat([0, 1], 500)
    assert E.expected_calibration_error(p, y) == pytest.approx(0.49)


# --- bootstrap ---------------------------------------------------------------------------


def test_bootstrap_of_identical_predictions_is_zero():
    correct = RNG.uniform(size=1000) > 0.3
    r = E.bootstrap_accuracy_difference(correct, correct)
    assert (r.difference, r.low, r.high, r.significant) == (0.0, 0.0, 0.0, False)


def test_bootstrap_detects_a_clear_difference_and_covers_the_truth():
    a = RNG.uniform(size=5000) < 0.8
    b = RNG.uniform(size=5000) < 0.7
    r = E.bootstrap_accuracy_difference(a, b)
    assert r.significant and r.low < a.mean() - b.mean() < r.high
    # Width close to the normal approximation of a difference of paired proportions.
    se = np.std(a.astype(float) - b.astype(float)) / math.sqrt(5000)
    assert r.high - r.low == pytest.approx(2 * 1.96 * se, rel=0.15)


# --- DCL / NSCL gap ----------------------------------------------------------------------


def _gap_loops(z, y, t):
    n, k, _ = z.shape
    z = z / np.linalg.norm(z, axis=-1, keepdims=True)
    dcl = nscl = 0.0
    for i in range(n):
        for l1 in range(k):
            for l2 in range(k):
                num = np.exp(z[i, l1] @ z[i, l2] / t)
                den_d = sum(np.exp(z[i, l1] @ z[j, l3] / t) for j in range(n) if j != i for l3 in range(k))
                den_n = sum(np.exp(z[i, l1] @ z[j, l3] / t)
                            for j in range(n) if y[j] != y[i] for l3 in range(k))
                dcl -= np.log(num / den_d)
                nscl -= np.log(num / den_n)
    return dcl / (k * k * n), nscl / (k * k * n)


@pytest.mark.parametrize("views", [1, 2, 3])
def test_dcl_nscl_gap_matches_eq_1_loops(views):
    z = RNG.normal(size=(12, views, 5))
    y = np.arange(12) % 4
    dcl, nscl = _gap_loops(z, y, 0.5)
    r = E.dcl_nscl_gap(z, y, temperature=0.5, block_size=5)
    assert r["dcl"] == pytest.approx(dcl) and r["nscl"] == pytest.approx(nscl)


def test_dcl_nscl_gap_within_theorem_1():
    for classes in (2, 10, 50):
        z = RNG.normal(size=(400, 2, 16))
        r = E.dcl_nscl_gap(z, np.arange(400) % classes)
        assert 0 <= r["gap"] <= r["bound"] <= r["bound_linear"]
        assert r["n_max"] == 400 // classes


# --- noisy labels ------------------------------------------------------------------------


def test_noisy_label_heuristic_finds_flipped_labels_and_suggests_the_true_class():
    x, y = gaussian_classes(classes=5, per_class=100, dim=16, spread=0.8)
    noisy = y.copy()
    flipped = RNG.choice(len(y), 25, replace=False)
    noisy[flipped] = (y[flipped] + 1 + RNG.integers(0, 4, 25)) % 5
    r = E.rank_suspected_mislabeled(x, noisy, fraction=0.05)
    assert len(r.suspected) == 25
    assert len(np.intersect1d(r.suspected, flipped)) >= 22
    np.testing.assert_array_equal(r.suggested_labels[flipped], y[flipped])


# --- bad input ---------------------------------------------------------------------------


def test_bad_inputs_raise_clear_errors():
    x, y = gaussian_classes()
    with pytest.raises(ValueError, match="one label per embedding"):
        E.cdnv(x, y[:-1])
    with pytest.raises(ValueError, match="at least 2 classes"):
        E.cdnv(x, np.zeros(len(x), int))
    with pytest.raises(ValueError, match="NaN"):
        E.target_noise_separation(np.full_like(x, np.nan), y, x, y)
    with pytest.raises(ValueError, match="same dimension"):
        E.nearest_class_center_accuracy(x, y, x[:, :3], y)
    with pytest.raises(ValueError, match="rows must sum to 1"):
        E.expected_calibration_error(np.ones((3, 2)), [0, 1, 0])
    with pytest.raises(ValueError, match="shots"):
        E.few_shot_error_bound(x, y, shots=3)
    with pytest.raises(ValueError, match="has 60"):
        E.few_shot_errors(x, y, x, y, shots=61)
    with pytest.raises(ValueError, match="boolean"):
        E.bootstrap_accuracy_difference(np.array([1, 0]), np.array([1, 1]))
    with pytest.raises(ValueError, match="identical centers"):
        E.cdnv(np.ones((4, 2)), [0, 0, 1, 1])
    with pytest.raises(ValueError, match="no training embeddings"):
        E.target_noise_separation(x, y, x[:2], np.array([9, 9]))
    with pytest.raises(ValueError, match="integer class ids"):
        E.cdnv(x, y.astype(float))


# --- coarse-to-fine transfer -------------------------------------------------------------


def test_coarse_to_fine_separates_strata_only_when_the_embedding_keeps_them():
    from clzoo.eval.transfer import coarse_labels, coarse_to_fine_transfer

    names = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
    fine = np.repeat(np.arange(10), 30)
    coarse, coarse_names = coarse_labels(fine, names)
    assert coarse_names == ["animal", "vehicle"]
    assert set(coarse[fine == 0]) == {1} and set(coarse[fine == 3]) == {0}
    lookup = np.array([coarse[fine == f][0] for f in range(10)])
    spread = RNG.normal(size=(10, 12)) * 3  # each fine class its own center
    kept = spread[fine] + 0.3 * RNG.normal(size=(300, 12))
    collapsed_x = np.eye(12)[coarse] * 3 + 0.3 * RNG.normal(size=(300, 12))  # class collapse
    good = coarse_to_fine_transfer(kept[::2], fine[::2], kept[1::2], fine[1::2], lookup)
    bad = coarse_to_fine_transfer(collapsed_x[::2], fine[::2], collapsed_x[1::2], fine[1::2], lookup)
    assert good["fine_accuracy"] > 0.95 and good["coarse_accuracy"] > 0.95
    assert bad["coarse_accuracy"] > 0.95  # the coarse task is still solved ...
    assert bad["fine_accuracy"] < 0.4  # ... but the strata are gone (about 1/6 or 1/4 left)
    with pytest.raises(ValueError, match="no coarse class"):
        coarse_labels([0], ["unicorn"])
