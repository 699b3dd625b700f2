"""Frozen preset features on data no preset saw, beside raw pixels and a random encoder.

For each built-in preset: embed scikit-learn's handwritten digits (1,797 real
8x8 images, `clzoo.data.load_split("digits")`, the split `clzoo eval` uses) with
the frozen encoder, resized to its input size as `clzoo eval` resizes, and
measure the cosine-weighted kNN top-1 (k=20, training split as memory) and the
L-BFGS logistic-regression probe on the test split. Baselines, measured the
same way (`clzoo.eval.baseline_metrics`): the raw pixels (resized alike) and a
randomly initialised encoder of the same architecture (seed 0).

Usage (from the repository root):

    python benchmarks/preset_transfer.py                      # every built-in preset
    python benchmarks/preset_transfer.py supcon_airbench_cifar10 sincere_airbench_cifar10
"""

import argparse
import sys


def _load(name):
    """`(encoder, architecture)` of a built-in preset name, a preset folder or a `clzoo train` run folder."""
    import json
    from pathlib import Path

    import yaml

    from clzoo.presets import BUILTIN_PRESETS, load_preset
    from clzoo.saving import load_model

    if name in BUILTIN_PRESETS:
        return load_preset(name), BUILTIN_PRESETS[name]["architecture"]
    if (Path(name) / "metadata.json").is_file():  # a preset folder (`clzoo.presets.build_preset`)
        metadata = json.loads((Path(name) / "metadata.json").read_text())
        return load_preset(name), metadata["architecture"]
    recipe = yaml.safe_load((Path(name) / "recipe.yaml").read_text())
    return load_model(Path(name) / "encoder.keras"), recipe["model"]["architecture"]


def knn_and_probe(encoder, train, test):
    """`(features of train, kNN k=20, probe)`: the frozen features as `clzoo eval` sees them."""
    from clzoo.eval import embed
    from clzoo.eval.report import evaluate_embeddings

    features = [embed(encoder, s.images, size=encoder.input_shape[1], normalize=False, verbose=False)
                for s in (train, test)]
    result = evaluate_embeddings(features[0], train.labels, features[1], test.labels,
                                 ("knn", "probe"), ks=(20,), verbose=False)
    return features, result.knn["k20"], result.probe


def measure(name, train, test, baselines_done):
    """Rows `(model, kNN k=20, probe)` for one preset (and its architecture's random init)."""
    import keras

    from clzoo.eval import baseline_metrics
    from clzoo.models import get_encoder
    encoder, architecture = _load(name)
    size = encoder.input_shape[1]
    _, knn, probe = knn_and_probe(encoder, train, test)
    rows = [(f"`{name}`", knn, probe)]
    keras.utils.set_random_seed(0)
    baseline = baseline_metrics(train, test, get_encoder(architecture), ks=(20,), size=size)
    if "raw_pixels" not in baselines_done:
        raw = baseline["raw_pixels"]
        rows.append((f"raw pixels ({size}x{size})", raw.knn["k20"], raw.probe))
        baselines_done.add("raw_pixels")
    if architecture not in baselines_done:
        rand = baseline["random_init"]
        rows.append((f"random-init {architecture}", rand.knn["k20"], rand.probe))
        baselines_done.add(architecture)
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("presets", nargs="*", metavar="PRESET",
                        help="preset names, preset folders or run folders (default: every built-in preset)")
    parser.add_argument("--data", default="digits")
    args = parser.parse_args(argv)
    from clzoo.console import quiet_tensorflow

    quiet_tensorflow()
    from clzoo.data import load_split
    from clzoo.presets import BUILTIN_PRESETS

    train, test = load_split(args.data, "train"), load_split(args.data, "test")
    print(f"{args.data}: {len(train)} train / {len(test)} test images\n")
    print("| features | kNN top-1 (k=20) | linear probe (L-BFGS) |\n| --- | --- | --- |")
    done = set()
    for name in args.presets or list(BUILTIN_PRESETS):
        for model, knn, probe in measure(name, train, test, done):
            print(f"| {model} | {knn:.2%} | {probe:.2%} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
