import numpy as np
import pytest
from sklearn.neighbors import KNeighborsClassifier

from clzoo.eval import knn_accuracy, knn_predict

RNG = np.random.default_rng(7)


def _brute_force(train, labels, test, k, weighting="cosine", temperature=0.07):
    train = train / np.linalg.norm(train, axis=1, keepdims=True)
    test = test / np.linalg.norm(test, axis=1, keepdims=True)
    out = []
    for q in test:
        sims = train @ q
        order = np.argsort(-sims, kind="stable")[:k]
        votes = {}
        for j in order:
            w = sims[j] if weighting == "cosine" else np.exp(sims[j] / temperature)
            votes[labels[j]] = votes.get(labels[j], 0.0) + w
        best = max(votes.values())
        out.append(min(c for c, v in votes.items() if v == best))
    return np.array(out)


def test_one_nn_matches_sklearn_cosine():
    train, test = RNG.normal(size=(300, 16)), RNG.normal(size=(100, 16))
    labels = RNG.integers(0, 5, 300)
    sk = KNeighborsClassifier(n_neighbors=1, metric="cosine").fit(train, labels)
    np.testing.assert_array_equal(knn_predict(train, labels, test, k=1), sk.predict(test))


@pytest.mark.parametrize("k", [5, 20])
@pytest.mark.parametrize("weighting", ["cosine", "exp"])
def test_weighted_vote_matches_brute_force(k, weighting):
    train, test = RNG.normal(size=(200, 8)), RNG.normal(size=(50, 8))
    labels = RNG.integers(0, 4, 200)
    got = knn_predict(train, labels, test, k=k, weighting=weighting, block_size=7)
    np.testing.assert_array_equal(got, _brute_force(train, labels, test, k, weighting))


def test_weighting_changes_the_vote():
    # Two far class-1 neighbours outvote one close class-0 neighbour only
    # when votes are unweighted-ish; cosine weights keep class 0.
    train = np.array([[1.0, 0.0], [0.2, 1.0], [0.2, -1.0]])
    labels = np.array([0, 1, 1])
    query = np.array([[1.0, 0.05]])
    assert knn_predict(train, labels, query, k=3, weighting="cosine")[0] == 0
    sk = KNeighborsClassifier(n_neighbors=3, metric="cosine").fit(train, labels)
    assert sk.predict(query)[0] == 1


def test_separated_clusters_are_perfect():
    centers = np.eye(4) * 10
    labels = np.repeat(np.arange(4), 20)
    train = centers[labels] + RNG.normal(scale=0.1, size=(80, 4))
    test = centers[labels] + RNG.normal(scale=0.1, size=(80, 4))
    acc = knn_accuracy(train, labels, test, labels, ks=(1, 5, 200))
    assert acc == {1: 1.0, 5: 1.0}  # k=200 > 80 training points is skipped


@pytest.mark.parametrize("kwargs, match", [
    ({"k": 0}, "k=0"),
    ({"k": 1, "weighting": "uniform"}, "weighting='uniform'"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        knn_predict(np.ones((3, 2)), np.zeros(3), np.ones((1, 2)), **kwargs)


def test_bad_shapes():
    with pytest.raises(ValueError, match="one label per training embedding"):
        knn_predict(np.ones((3, 2)), np.zeros(2), np.ones((1, 2)))
    with pytest.raises(ValueError, match="same dimension"):
        knn_predict(np.ones((3, 2)), np.zeros(3), np.ones((1, 3)))
    with pytest.raises(ValueError, match="NaN"):
        knn_predict(np.full((3, 2), np.nan), np.zeros(3), np.ones((1, 2)))
