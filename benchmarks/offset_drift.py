"""Batch-norm offsets that drift negative, and what they do to transfer (digits).

airbench trains the batch-norm offsets (`beta`) 64x faster than the weights. Under
SINCERE they drift negative, the last GELU then passes little, and the pooled
features on data the encoder never saw go sparse and small. For each preset or run
folder this prints the offsets of every batch norm (mean, min, max) and the digits
kNN (k=20) and L-BFGS probe (`preset_transfer.py`'s protocol) of the features as
shipped and, as a diagnosis only (the model is not saved), with the last batch
norm's offsets shifted to mean 0. `--tuned-probe` adds the probe with its inverse
regularization C chosen by 5-fold cross-validation on the training split
(scikit-learn's `LogisticRegressionCV`, C in 1e-4 .. 1e4), as SimCLR's transfer
protocol does (Chen et al. 2020, app. B.8), to tell the protocol from the features.

Usage (from the repository root):

    python benchmarks/offset_drift.py supcon_airbench_cifar10 sincere_airbench_cifar10
"""

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from preset_transfer import _load, knn_and_probe  # noqa: E402  (benchmarks/preset_transfer.py)


def offset_variables(encoder):
    """The batch-norm offsets, in layer order: the variables LookaheadSGD's multipliers act on."""
    from clzoo.optimizers.lookahead_sgd import _is_offset

    return [w for w in encoder.weights if _is_offset(w)]


def tuned_probe(train_features, train_labels, test_features, test_labels):
    """Test accuracy of a standardized logistic regression, C chosen by 5-fold CV."""
    from sklearn.linear_model import LogisticRegressionCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    model = make_pipeline(StandardScaler(), LogisticRegressionCV(Cs=np.logspace(-4, 4, 9), cv=5,
                                                                 max_iter=2000))
    model.fit(train_features, train_labels)
    return float(model.score(test_features, test_labels)), float(model[-1].C_[0])


def digits_row(label, encoder, splits, tuned):
    train, test = splits
    features, knn, probe = knn_and_probe(encoder, train, test)
    row = f"| {label} | {knn:.2%} | {probe:.2%} | {np.abs(features[0]).mean():.2f} |"
    if tuned:
        accuracy, c = tuned_probe(features[0], train.labels, features[1], test.labels)
        row += f" {accuracy:.2%} (C = {c:g}) |"
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("presets", nargs="+", metavar="PRESET", help="preset names or run folders")
    parser.add_argument("--tuned-probe", action="store_true",
                        help="also the probe with C chosen by 5-fold cross-validation")
    args = parser.parse_args(argv)
    from clzoo.console import quiet_tensorflow

    quiet_tensorflow()
    from clzoo.data import load_split

    splits = [load_split("digits", split) for split in ("train", "test")]
    header = "| features | digits kNN (k=20) | probe (C = 1) | mean abs feature |"
    header += " probe (C by CV) |" if args.tuned_probe else ""
    rows = []
    for name in args.presets:
        encoder, _ = _load(name)
        print(f"\n`{name}`: batch-norm offsets\n\n| variable | mean | min | max |\n| --- | --- | --- | --- |")
        for variable in offset_variables(encoder):
            value = np.asarray(variable)
            print(f"| {variable.path} | {value.mean():+.2f} | {value.min():+.2f} | {value.max():+.2f} |")
        rows.append(digits_row(f"`{name}`", encoder, splits, args.tuned_probe))
        last = offset_variables(encoder)[-1]
        value = np.asarray(last).copy()
        last.assign(value - value.mean())  # in memory only: nothing is saved
        rows.append(digits_row(f"`{name}`, last offsets shifted to mean 0", encoder, splits,
                               args.tuned_probe))
        last.assign(value)
    print(f"\n{header}\n|{' --- |' * header.count('|', 1)}")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
