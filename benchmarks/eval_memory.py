"""Time and peak memory of the blockwise nearest-neighbour metrics on a large set.

Usage:
    python benchmarks/eval_memory.py --train 50000 --test 10000 --dim 512

Random float32 embeddings (10 classes). Runs weighted kNN for k in
{1, 5, 20, 200} (one search) and the target-noise separation, each in blocks
of 1,024 test rows, and prints one JSON line per metric with seconds and the
process's peak resident memory. The full 50,000 x 10,000 similarity matrix
would take 1.9 GiB in float32; the blocks hold 1,024 x 50,000 at a time.
"""

import argparse
import json
import resource
import time

import numpy as np


def peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--train", type=int, default=50_000)
    parser.add_argument("--test", type=int, default=10_000)
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--block-size", type=int, default=1024)
    args = parser.parse_args()
    from clzoo.eval import knn_accuracy, target_noise_separation

    rng = np.random.default_rng(0)
    train = rng.normal(size=(args.train, args.dim)).astype(np.float32)
    test = rng.normal(size=(args.test, args.dim)).astype(np.float32)
    y_train, y_test = rng.integers(0, 10, args.train), rng.integers(0, 10, args.test)
    inputs_mib = (train.nbytes + test.nbytes) / 2**20
    print(json.dumps({"setup": True, "inputs_mib": round(inputs_mib), "peak_mib": round(peak_mib()),
                      "full_matrix_mib": round(args.train * args.test * 4 / 2**20)}))
    for name, fn in (
        ("knn k=1,5,20,200", lambda: knn_accuracy(train, y_train, test, y_test,
                                                  block_size=args.block_size)),
        ("target_noise_separation", lambda: target_noise_separation(
            train, y_train, test, y_test, block_size=args.block_size).margin),
    ):
        start = time.perf_counter()
        value = fn()
        print(json.dumps({"metric": name, "train": args.train, "test": args.test, "dim": args.dim,
                          "seconds": round(time.perf_counter() - start, 1),
                          "peak_mib": round(peak_mib()), "value": str(value)[:80]}))


if __name__ == "__main__":
    main()
