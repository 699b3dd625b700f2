"""t-SNE map of the test embeddings: `tsne_points` and the `map` report metric."""

import numpy as np

from clzoo.eval import plots
from clzoo.eval.metric import MetricResult, Plot, ReportMetric, register_metric

# t-SNE grows faster than linearly in the points; 2,000 show the class structure (trustworthiness
# 0.990 on CIFAR-10 ResNet-20 features vs 0.993 with 3,000 points and 1,000 iterations, at a
# quarter of the time; benchmarks/README.md).
MAX_POINTS = 2000
ITERATIONS = 500  # gradient steps; scikit-learn's default is 1,000, its minimum 250
PCA_DIM = 50  # wider features are reduced by PCA first, as van der Maaten & Hinton 2008 do
NEIGHBOURS = 5  # trustworthiness neighbourhood (scikit-learn's default)


def tsne_points(features, max_points=MAX_POINTS, seed=0, max_iter=ITERATIONS):
    """t-SNE (scikit-learn, PCA init) of up to `max_points` rows of `features` `(M, D)`.

    Features wider than `PCA_DIM` (50) are first projected onto their top 50
    principal components (van der Maaten & Hinton 2008, sec. 5).

    Returns:
        `(indices, points)`: the rows used, int `(P,)`, and float `(P, 2)`.
    """
    from sklearn.decomposition import PCA
    from sklearn.manifold import TSNE

    rng = np.random.default_rng(seed)
    pick = np.sort(rng.choice(len(features), min(max_points, len(features)), replace=False))
    x = np.asarray(features)[pick]
    if x.shape[1] > PCA_DIM and len(pick) > PCA_DIM:
        x = PCA(PCA_DIM, random_state=seed).fit_transform(x)
    perplexity = min(30.0, max(2.0, (len(pick) - 1) / 3))
    points = TSNE(n_components=2, init="pca", random_state=seed, perplexity=perplexity,
                  max_iter=max_iter).fit_transform(x)
    return pick, points


@register_metric
class MapReport(ReportMetric):
    """t-SNE of up to 2,000 test features (500 iterations); the plot `embedding_map.png` is the result.

    Scalars: `{"points", "trustworthiness"}`: how well the map keeps each
    point's 5 nearest neighbours (1 is perfect; scikit-learn's
    `trustworthiness`, Venna & Kaski 2001). A picture to look at, not a
    paper's measurement.

    Example:

    >>> import numpy as np, clzoo
    >>> x = np.random.default_rng(0).normal(size=(30, 4))
    >>> y = np.arange(30) % 3
    >>> context = clzoo.eval.EvalContext.create(x, y, x, y)
    >>> result = clzoo.eval.METRICS.get("map")().compute(context)
    >>> result.scalars["points"], [p.filename for p in result.plots]
    (30, ['embedding_map.png'])
    """

    name = "map"
    description = "t-SNE map of the test embeddings"
    source = "van der Maaten & Hinton 2008 (t-SNE)"

    def compute(self, context):
        from sklearn.manifold import trustworthiness

        pick, points = tsne_points(context.test)
        labels = context.test_labels[pick]
        trust = float(trustworthiness(context.test[pick], points,
                                      n_neighbors=min(NEIGHBOURS, max(1, len(pick) // 2 - 1))))
        plot = Plot("embedding_map.png", "t-SNE map of test embeddings",
                    lambda path: plots.embedding_map(points, labels, path, context.class_names,
                                                     model=context.model))
        return MetricResult(self.name, {"points": len(pick), "trustworthiness": trust}, {},
                            [((f"t-SNE map of {len(pick)} test embeddings: trustworthiness "
                              f"({NEIGHBOURS} neighbours)"), f"{trust:.4f}")], [plot])
