"""How many directions frozen preset features use on data they never saw (digits).

For each preset or run folder: embed all of scikit-learn's digits (train + test,
1,797 images, as `preset_transfer.py` does: resized to the input size, not
normalized), centre the features and report their effective rank (Roy & Vetterli
2007: exp of the entropy of the normalised squared singular values) and mean
|feature|. A low rank is a sign of features collapsed onto few directions, which
transfer poorly (benchmarks/README.md, "SINCERE at 0.1").

Usage (from the repository root):

    python benchmarks/feature_rank.py supcon_airbench_cifar10 sincere_airbench_cifar10 simclr_airbench_cifar10
"""

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from preset_transfer import _load  # noqa: E402  (benchmarks/preset_transfer.py)


def effective_rank(features):
    """exp(entropy) of the normalised squared singular values of the centred `(n, d)` features."""
    singular = np.linalg.svd(features - features.mean(0), compute_uv=False)
    share = singular**2 / np.sum(singular**2)
    share = share[share > 0]
    return float(np.exp(-np.sum(share * np.log(share))))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("presets", nargs="+", metavar="PRESET", help="preset names or run folders")
    args = parser.parse_args(argv)
    from clzoo.console import quiet_tensorflow

    quiet_tensorflow()
    from clzoo.data import load_split
    from clzoo.eval import embed

    splits = [load_split("digits", split) for split in ("train", "test")]
    print("| features | effective rank | mean abs feature |\n| --- | --- | --- |")
    for name in args.presets:
        encoder, _ = _load(name)
        size = encoder.input_shape[1]
        features = np.concatenate([embed(encoder, s.images, size=size, normalize=False,
                                         verbose=False) for s in splits])
        print(f"| `{name}` | {effective_rank(features):.1f} | {np.abs(features).mean():.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
