"""The built-in recipes, shipped with the package: `clzoo train sincere_digits` finds
`clzoo/recipes/sincere_digits.yaml` (also the checkout's top-level `recipes/`, a link here).

A recipe's name is its path under this folder without `.yaml` (`supcon/cifar10_airbench`).

Example:

>>> from clzoo.recipes import list_recipes, recipe_path
>>> "sincere_digits" in list_recipes() and recipe_path("sincere_digits").name
'sincere_digits.yaml'
"""

from pathlib import Path

FOLDER = Path(__file__).resolve().parent


def list_recipes():
    """The built-in recipes' names, sorted (`"sincere_digits"`, `"supcon/cifar10_airbench"`, ...)."""
    return sorted(path.relative_to(FOLDER).with_suffix("").as_posix() for path in FOLDER.rglob("*.yaml"))


def recipe_path(name):
    """The file of the built-in recipe `name` (with or without `.yaml`).

    Raises:
        ValueError: no built-in recipe of that name (with the closest names).
    """
    from clzoo.registry import did_you_mean

    stem = str(name).removesuffix(".yaml").removeprefix("recipes/")
    known = list_recipes()  # the names, not a path: `../x` finds no file outside the folder
    if stem in known:
        return FOLDER / f"{stem}.yaml"
    raise ValueError(f"{name}: recipe file not found, and no built-in recipe is named so (clzoo list "
                     f"recipes lists the {len(known)} there are)." + did_you_mean(stem, known))
