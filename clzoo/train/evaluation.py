"""The end of a run: the `clzoo eval` report on the saved encoder, its baselines, `metrics.json`.

The run summary keeps its own keys (`knn_top1`, `knn_top1_k`, `knn_top1_by_k`,
`probe`, `ncc_accuracy`, `baselines`; `clzoo.eval.records.SUMMARY_KEYS`);
`clzoo.eval.records.read_run` reads them back under the metric names the
report under `eval/` uses.
"""

import keras

from clzoo.eval.records import SUMMARY_KEYS
from clzoo.models import adapt_whitening
from clzoo.train.builders import build_encoder


def evaluate_encoder(encoder, data, ks=None, verbose=True, train=None):
    """Weighted-kNN top-1 of `encoder` on `data`'s test split, with its train split as memory.

    `train` may pass the already loaded training `Split` so it is not read again. `ks`
    as `clzoo.eval.evaluate_embeddings` (None: the default k that fit the training set).

    Returns:
        `{"k1": accuracy, ...}`, the `knn` metric's scalars.
    """
    from clzoo.eval import evaluate

    return evaluate(encoder, data, metrics=("knn",), verbose=verbose, train=train, ks=ks).knn


def final_metrics(recipe, encoder, train_split, test_split, eval_dir, encoder_path, verbose=True):
    """Evaluate the saved encoder as the recipe's `eval` section asks.

    Args:
        recipe: the validated `clzoo.train.Recipe`.
        encoder: the encoder loaded back from `encoder_path`.
        train_split: the training `Split` (kNN memory, probe training set).
        test_split: the test `Split` the report and the baselines score.
        eval_dir: folder for the `clzoo eval` report (`eval.report: true`).
        encoder_path: where the encoder was saved, for the report.

    Returns:
        dict with `knn_top1`, `knn_top1_k`, `knn_top1_by_k`, and when measured
        `probe`, `ncc_accuracy` and `baselines`.
    """
    from clzoo.eval import evaluate

    spec = recipe.eval
    report = evaluate(encoder, (train_split, test_split),
                      metrics=(*spec.metrics, "knn") if spec.report else ("knn",),
                      output_dir=eval_dir if spec.report else None, verbose=bool(verbose),
                      ks=_fitting_ks(recipe, train_split),
                      info={"model": str(encoder_path), "data": str(recipe.data)})
    metrics = {"knn_top1": report.knn[f"k{spec.knn_headline_k}"], "knn_top1_k": spec.knn_headline_k,
               "knn_top1_by_k": report.knn}
    for name, key in SUMMARY_KEYS.items():  # record field -> stored key
        if getattr(report, name) is not None:
            metrics[key] = getattr(report, name)
    if spec.baselines:
        metrics["baselines"] = baselines(recipe, train_split, test_split, encoder.input_shape[1],
                                         probe=report.probe is not None, verbose=bool(verbose))
    return metrics


def _fitting_ks(recipe, train_split):
    """The recipe's kNN k that fit the training set: those above it are left out by design (the
    runner refused a headline k above it); `clzoo.eval.evaluate` would refuse them as given."""
    return tuple(k for k in recipe.eval.knn_k if k <= len(train_split))


def baselines(recipe, train_split, test_split, size, probe, verbose):
    """Raw-pixel and random-init rows beside the trained encoder (`eval.baselines`)."""
    from clzoo.eval.baselines import baseline_metrics

    wanted = tuple(recipe.eval.baselines)
    random_encoder = _random_encoder(recipe, train_split, size) if "random_init" in wanted else None
    rows = baseline_metrics(train_split, test_split, random_encoder,
                            ks=_fitting_ks(recipe, train_split), probe=probe, size=size,
                            verbose=verbose)
    return {name: rows[name].to_dict() for name in wanted}  # metrics.json's form


def _random_encoder(recipe, train_split, size):
    """The recipe's encoder before its first step (same seed), whitened as the run does."""
    keras.utils.set_random_seed(int(recipe.seed))
    encoder = build_encoder(recipe, size)
    adapt_whitening(encoder, train_split.images, seed=recipe.seed)
    return encoder


def label_free_metrics(recipe, encoder, train_split, views, verbose=True):
    """The end of a run on an unlabelled folder: alignment, uniformity and effective rank
    (`clzoo.eval.label_free`) of the saved encoder, beside the random-init encoder's when
    `eval.baselines` names `random_init` (raw pixels have no views to embed).

    Returns:
        `{"label_free": {...}, "label_free_baselines": {"random_init": {...}}}`, each a
        `LabelFreeReport.to_dict()`.
    """
    from clzoo.eval.label_free import label_free_report

    def measured(model, what):
        report = label_free_report(model, train_split, views, seed=int(recipe.seed))
        if verbose:
            print(f"[clzoo eval] label-free metrics of the {what} on {report.images:,} images, two "
                  f"views each: {report.seconds:.1f} s")
        return report.to_dict()

    if verbose:
        print("note: the data is unlabelled: the report gives alignment, uniformity and effective "
              "rank; kNN and the probe need a labelled folder (clzoo eval RUN --data FOLDER)")
    metrics = {"label_free": measured(encoder, "trained encoder")}
    if "random_init" in recipe.eval.baselines:
        size = encoder.input_shape[1]
        metrics["label_free_baselines"] = {
            "random_init": measured(_random_encoder(recipe, train_split, size), "random-init encoder")}
    return metrics
