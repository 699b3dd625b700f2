"""Independent float64 NumPy references written from the papers' equations.

Deliberately loop-based and free of clzoo code: every anchor, every positive,
every denominator term is enumerated by hand.
"""

import numpy as np


def _rows(labels, embeddings):
    z = np.asarray(embeddings, dtype=np.float64)
    if z.ndim == 2:
        z = z[:, None, :]
    batch, views, _ = z.shape
    z = z / np.linalg.norm(z, axis=-1, keepdims=True)
    rows = []  # (sample, view, label, vector)
    for b in range(batch):
        for v in range(views):
            rows.append((b, v, int(labels[b]), z[b, v]))
    return rows, batch, views


def _per_sample(anchor_values, batch, views):
    out = np.zeros(batch)
    for b in range(batch):
        values = [anchor_values[(b, v)] for v in range(views) if (b, v) in anchor_values]
        out[b] = np.mean(values) if values else 0.0
    return out


def sincere(labels, embeddings, temperature):
    """Feeney & Hughes eq. 12, anchor-row form (LOSS_CONTRACT)."""
    rows, batch, views = _rows(labels, embeddings)
    anchors = {}
    for i, (bi, vi, yi, zi) in enumerate(rows):
        terms = []
        for p, (bp, vp, yp, zp) in enumerate(rows):
            if p == i or yp != yi:
                continue
            pos = np.exp(zi @ zp / temperature)
            noise = sum(
                np.exp(zi @ zn / temperature)
                for n, (_, _, yn, zn) in enumerate(rows)
                if yn != yi
            )
            terms.append(-np.log(pos / (pos + noise)))
        if terms:
            anchors[(bi, vi)] = np.mean(terms)
    return _per_sample(anchors, batch, views)


def _positive_order(rows, i, max_positives):
    bi, _, yi, _ = rows[i]
    own = [p for p, r in enumerate(rows) if p != i and r[0] == bi]
    other = [p for p, r in enumerate(rows) if r[0] != bi and r[2] == yi]
    kept = own + other
    if max_positives is not None:
        kept = kept[:max_positives]
    dropped = [p for p in own + other if p not in kept]
    return kept, dropped


def supcon(labels, embeddings, temperature, base_temperature=None,
           variant="out", max_positives=None):
    """Khosla et al. supplement eqs. 1 (L_in) and 2 (L_out)."""
    base_temperature = base_temperature or temperature
    rows, batch, views = _rows(labels, embeddings)
    anchors = {}
    for i, (bi, vi, yi, zi) in enumerate(rows):
        positives, dropped = _positive_order(rows, i, max_positives)
        if not positives:
            continue
        denom = sum(
            np.exp(zi @ za / temperature)
            for a, (_, _, _, za) in enumerate(rows)
            if a != i and a not in dropped
        )
        ratios = [np.exp(zi @ rows[p][3] / temperature) / denom for p in positives]
        if variant == "out":
            value = -np.mean(np.log(ratios))
        else:
            value = -np.log(np.mean(ratios))
        anchors[(bi, vi)] = temperature / base_temperature * value
    return _per_sample(anchors, batch, views)
