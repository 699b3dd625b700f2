"""Retrieval metrics (precision@k, recall@k, R-precision, MAP@R) against a plain Python loop."""

import numpy as np
import pytest

import clzoo.eval as E


def _loop_reference(x, y, ks):
    """Musgrave et al. 2020's definitions, one query at a time, with Python lists."""
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    per_query = {"p": {k: [] for k in ks}, "r": {k: [] for k in ks}, "rp": [], "map": []}
    for q in range(len(x)):
        others = sorted((j for j in range(len(x)) if j != q), key=lambda j: (-float(x[q] @ x[j]), j))
        rel = [bool(y[j] == y[q]) for j in others]
        r = sum(rel)
        if r == 0:
            continue
        for k in ks:
            per_query["p"][k].append(sum(rel[:k]) / k)
            per_query["r"][k].append(1.0 if any(rel[:k]) else 0.0)
        per_query["rp"].append(sum(rel[:r]) / r)
        hits, total = 0, 0.0
        for i in range(r):
            if rel[i]:
                hits += 1
                total += hits / (i + 1)
        per_query["map"].append(total / r)
    return ({k: float(np.mean(v)) for k, v in per_query["p"].items()},
            {k: float(np.mean(v)) for k, v in per_query["r"].items()},
            float(np.mean(per_query["rp"])), float(np.mean(per_query["map"])), len(per_query["rp"]))


@pytest.mark.parametrize("seed", range(4))
def test_matches_a_loop_over_queries(seed):
    rng = np.random.default_rng(seed)
    n, classes = int(rng.integers(30, 70)), int(rng.integers(2, 7))
    y = rng.integers(0, classes, n)
    x = rng.normal(size=(n, 5)) + 1.5 * np.eye(classes, 5)[y]  # some structure, no ties
    ks = (1, 3, 10)
    got = E.retrieval_metrics(x, y, ks=ks, block_size=7)  # several blocks, a ragged last one
    p, r, rp, map_r, queries = _loop_reference(x, y, ks)
    assert got["queries"] == queries
    for k in ks:
        assert got["precision_at_k"][k] == pytest.approx(p[k], abs=1e-12)
        assert got["recall_at_k"][k] == pytest.approx(r[k], abs=1e-12)
    assert got["r_precision"] == pytest.approx(rp, abs=1e-12)
    assert got["map_at_r"] == pytest.approx(map_r, abs=1e-12)
    assert got["precision_at_k"][1] == got["recall_at_k"][1]


def test_map_at_r_rewards_relevant_items_ranked_first():
    # Query 0 (class 0, R = 2) ranks 1 (relevant), 3 (not), 2 (relevant): R-precision 1/2, MAP@R 1/2;
    # query 1 ranks 0 (relevant), 3, 2; query 2 ranks 3 (not), 1, 0: MAP@R (1/2)(1/2) = 1/4.
    x = np.array([[1.0, 0.0], [0.99, 0.14], [0.6, 0.8], [0.9, 0.44]])
    y = np.array([0, 0, 0, 1])
    m = E.retrieval_metrics(x, y, ks=(1,))
    reference = _loop_reference(x, y, (1,))
    assert m["map_at_r"] == pytest.approx(reference[3]) and m["r_precision"] == pytest.approx(reference[2])
    assert m["map_at_r"] <= m["r_precision"] + 1e-12  # each P(i) <= 1 over hits_R terms


def test_singleton_classes_are_left_out_and_large_k_skipped():
    x = np.random.default_rng(0).normal(size=(6, 3))
    m = E.retrieval_metrics(x, [0, 0, 1, 1, 1, 2], ks=(1, 6))
    assert m["queries"] == 5 and set(m["precision_at_k"]) == {1}
    with pytest.raises(ValueError, match="at least two embeddings"):
        E.retrieval_metrics(x[:3], [0, 1, 2])
    with pytest.raises(ValueError, match="ks"):
        E.retrieval_metrics(x, [0, 0, 1, 1, 1, 2], ks=(0,))
    with pytest.raises(ValueError, match="one label per embedding"):
        E.retrieval_metrics(x, [0, 1])
    with pytest.raises(ValueError, match="NaN"):
        E.retrieval_metrics(np.full((2, 2), np.nan), [0, 0])


def test_registered_metric_reports_every_k():
    rng = np.random.default_rng(1)
    y = np.repeat([0, 1, 2], 10)
    x = rng.normal(size=(30, 4)) + 3 * np.eye(3, 4)[y]
    result = E.evaluate_embeddings(x, y, x, y, "retrieval", ks=(1, 5), verbose=False)
    scalars = result.metrics["retrieval"]
    direct = E.retrieval_metrics(x, y, ks=(1, 5))
    assert scalars["precision_at_k"] == {"k1": direct["precision_at_k"][1],
                                         "k5": direct["precision_at_k"][5]}
    assert scalars["map_at_r"] == direct["map_at_r"] and "retrieval" in E.DEFAULT_METRICS
