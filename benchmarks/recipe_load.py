"""Milliseconds per `load_recipe` (read, upgrade, override, validate) of three built-in recipes.

    python benchmarks/recipe_load.py [--repeats 30] [--profile]

`--profile` also counts the Python function calls of the loads (cProfile): a figure that does not
move with the machine's load, unlike the milliseconds.

Run it from a checkout (`PYTHONPATH=<checkout>` to time another commit with the same venv).
"""

import argparse
import cProfile
import pstats
import time

from clzoo.train import load_recipe

RECIPES = ["recipes/sincere_digits.yaml", "recipes/supcon/cifar10_queue_small.yaml",
           "recipes/sincere/cifar10_airbench.yaml"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30, help="loads per recipe (default 30)")
    parser.add_argument("--profile", action="store_true", help="also count the function calls")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error(f"--repeats must be at least 1, not {args.repeats}")
    for path in RECIPES:
        load_recipe(path)  # imports and registries, once
    for path in RECIPES:
        profile = cProfile.Profile() if args.profile else None
        start = time.perf_counter()
        if profile:
            profile.enable()
        for _ in range(args.repeats):
            load_recipe(path)
        seconds = time.perf_counter() - start
        calls = ""
        if profile:
            profile.disable()
            calls = f", {pstats.Stats(profile).total_calls / args.repeats:,.0f} function calls a load"
        print(f"{path}: {seconds / args.repeats * 1000:.1f} ms{calls}")


if __name__ == "__main__":
    main()
