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
        for p, (_, _, yp, zp) in enumerate(rows):
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
    for i, (bi, vi, _, zi) in enumerate(rows):
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


def sup_info_nce(labels, embeddings, temperature, epsilon):
    """SINCERE paper eq. 15 (epsilon-SupInfoNCE), anchor-row form."""
    rows, batch, views = _rows(labels, embeddings)
    anchors = {}
    for i, (bi, vi, yi, zi) in enumerate(rows):
        terms = []
        for p, (_, _, yp, zp) in enumerate(rows):
            if p == i or yp != yi:
                continue
            s_p = zi @ zp / temperature
            noise = sum(np.exp(zi @ zn / temperature) for (_, _, yn, zn) in rows if yn != yi)
            terms.append(-(s_p - np.log(np.exp(s_p - epsilon) + noise)))
        if terms:
            anchors[(bi, vi)] = np.mean(terms)
    return _per_sample(anchors, batch, views)


def info_nce(embeddings, temperature):
    """SimCLR NT-Xent: positives are the sample's other views, noise all other samples' views."""
    return sincere(np.arange(len(embeddings)), embeddings, temperature)


def _decoupled(labels, embeddings, temperature, noise_is):
    rows, batch, views = _rows(labels, embeddings)
    anchors = {}
    for i, (bi, vi, yi, zi) in enumerate(rows):
        noise = [zn for (bn, _, yn, zn) in rows if noise_is(bi, yi, bn, yn)]
        positives = [zp for p, (bp, _, _, zp) in enumerate(rows) if p != i and bp == bi]
        if not noise or not positives:
            continue
        denom = sum(np.exp(zi @ zn / temperature) for zn in noise)
        anchors[(bi, vi)] = np.mean([-np.log(np.exp(zi @ zp / temperature) / denom)
                                     for zp in positives])
    return _per_sample(anchors, batch, views)


def dcl(embeddings, temperature):
    """Yeh et al. / NSCL paper eq. 1: noise is every view of every other sample."""
    labels = np.zeros(len(embeddings))
    return _decoupled(labels, embeddings, temperature, lambda bi, yi, bn, yn: bn != bi)


def nscl(labels, embeddings, temperature):
    """NSCL paper sec. 3.1: DCL with noise restricted to other classes."""
    return _decoupled(labels, embeddings, temperature, lambda bi, yi, bn, yn: yn != yi)


def spread(labels, embeddings, temperature, alpha):
    """Perfectly Balanced eqs. 1-3, anchor-row form, per-sample means."""
    rows, batch, views = _rows(labels, embeddings)
    attract, repel = {}, {}
    for i, (bi, vi, yi, zi) in enumerate(rows):
        e = lambda z, zi=zi: np.exp(zi @ z / temperature)  # noqa: E731
        other_class = sum(e(zn) for (_, _, yn, zn) in rows if yn != yi)
        same_class = sum(e(zn) for (bn, _, yn, zn) in rows if yn == yi and bn != bi)
        a_terms = [-np.log(e(zp) / (e(zp) + other_class))
                   for p, (_, _, yp, zp) in enumerate(rows) if p != i and yp == yi]
        r_terms = [-np.log(e(zp) / (e(zp) + same_class))
                   for p, (bp, _, _, zp) in enumerate(rows) if p != i and bp == bi]
        attract[(bi, vi)] = np.mean(a_terms)
        repel[(bi, vi)] = np.mean(r_terms)
    return alpha * _per_sample(attract, batch, views) + (1 - alpha) * _per_sample(repel, batch, views)


def soft_target_info_nce(targets, logits, temperature, noise_probs=None):
    """Hugger and Uhlmann eq. 12, one sample at a time."""
    targets = np.asarray(targets, np.float64)
    logits = np.asarray(logits, np.float64)
    classes = logits.shape[1]
    eta = np.full(classes, 1.0 / classes) if noise_probs is None else np.asarray(noise_probs)
    out = []
    for b in range(len(logits)):
        s = [logits[b, k] / temperature - np.log(eta[k]) for k in range(classes)]
        positive = np.exp(sum(targets[b, i] * s[i] for i in range(classes)))
        noise = sum(np.exp(sum(targets[m, j] * s[j] for j in range(classes)))
                    for m in range(len(logits)) if m != b)
        out.append(-np.log(positive / (positive + noise)))
    return np.array(out)


def label_similarity(y_a, y_b, kind):
    """Pair weight of two label rows: cosine, or Jaccard |A n B| / |A u B| (Tanimoto for soft rows)."""
    a, b = np.asarray(y_a, np.float64), np.asarray(y_b, np.float64)
    if np.array_equal(a, b) and np.any(a):
        return 1.0  # identical label sets: a full positive, exactly
    dot = float(a @ b)
    if kind == "cosine":
        norms = np.linalg.norm(a) * np.linalg.norm(b)
        return dot / norms if norms > 0 else 0.0
    union = float(a @ a + b @ b - dot)
    return dot / union if union > 0 else 0.0


def _weighted_rows(label_rows, embeddings, kind):
    """Rows of `_rows` plus the pair weight w(i, j): 1 for the same sample, label similarity otherwise."""
    rows, batch, views = _rows(np.zeros(len(label_rows)), embeddings)

    def weight(i, j):
        if i == j:
            return 0.0
        if rows[i][0] == rows[j][0]:
            return 1.0
        return label_similarity(label_rows[rows[i][0]], label_rows[rows[j][0]], kind)

    return rows, batch, views, weight


def multi_label_supcon(label_rows, embeddings, temperature, kind="cosine", variant="out"):
    """SupCon eqs. 1-2 with the positive indicator replaced by the label similarity w_ip."""
    rows, batch, views, weight = _weighted_rows(label_rows, embeddings, kind)
    anchors = {}
    for i, (bi, vi, _, zi) in enumerate(rows):
        weights = [weight(i, p) for p in range(len(rows))]
        if sum(weights) <= 0:
            continue
        denom = sum(np.exp(zi @ za / temperature) for a, (_, _, _, za) in enumerate(rows) if a != i)
        ratios = [np.exp(zi @ zp / temperature) / denom for (_, _, _, zp) in rows]
        if variant == "out":
            value = -sum(w * np.log(r) for w, r in zip(weights, ratios) if w > 0) / sum(weights)
        else:
            value = -np.log(sum(w * r for w, r in zip(weights, ratios)) / sum(weights))
        anchors[(bi, vi)] = value
    return _per_sample(anchors, batch, views)


def multi_label_sincere(label_rows, embeddings, temperature, kind="cosine"):
    """SINCERE eq. 12 with target weight w_in and noise weight 1 - w_in for every n != i."""
    rows, batch, views, weight = _weighted_rows(label_rows, embeddings, kind)
    anchors = {}
    for i, (bi, vi, _, zi) in enumerate(rows):
        noise = sum((1.0 - weight(i, n)) * np.exp(zi @ zn / temperature)
                    for n, (_, _, _, zn) in enumerate(rows) if n != i)
        total, count = 0.0, 0.0
        for p, (_, _, _, zp) in enumerate(rows):
            w = weight(i, p)
            if w > 0:
                pos = np.exp(zi @ zp / temperature)
                total += w * -np.log(pos / (pos + noise))
                count += w
        if count > 0:
            anchors[(bi, vi)] = total / count
    return _per_sample(anchors, batch, views)
