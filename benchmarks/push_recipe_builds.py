"""How many times `clzoo push RUN --builtin NAME` validates the `Recipe` and looks up the loss class.

    python benchmarks/push_recipe_builds.py RUN_DIR

RUN_DIR: a finished run (`clzoo train sincere_digits --epochs 1 --output RUN_DIR`). The preset is
written into a scratch copy of the built-in presets folder, never into the checkout. Issue 70
counted 4 validations at 456bbb0; `PYTHONPATH=<checkout>` counts another commit with this venv.
"""

import argparse
import collections
import shutil
import tempfile
from pathlib import Path

import clzoo.train.builders as builders
import clzoo.train.recipe as recipe_module
from clzoo.presets.builtin_entry import add_builtin


def count_push(run_dir):
    """`{what: times}` for one `add_builtin` of `run_dir` (what `push --builtin` runs)."""
    counts, validate, loss_class = collections.Counter(), recipe_module.Recipe.model_validate.__func__, \
        builders.loss_class

    def counted_validate(cls, *args, **kwargs):
        counts["Recipe validated"] += 1
        return validate(cls, *args, **kwargs)

    def counted_loss(name):
        counts["loss class looked up"] += 1
        return loss_class(name)

    recipe_module.Recipe.model_validate = classmethod(counted_validate)
    builders.loss_class = counted_loss
    with tempfile.TemporaryDirectory() as scratch:
        presets = Path(scratch) / "presets"
        shutil.copytree(Path(recipe_module.__file__).parents[1] / "presets" / "builtin", presets)
        add_builtin(run_dir, "count_check", presets_folder=presets)
    return dict(counts)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path, help="a finished clzoo train run folder")
    args = parser.parse_args(argv)
    if not (args.run_dir / "recipe.yaml").is_file():
        parser.error(f"{args.run_dir} has no recipe.yaml: give a finished clzoo train run folder")
    for what, times in count_push(args.run_dir).items():
        print(f"{what}: {times}")


if __name__ == "__main__":
    main()
