"""Issue 69 item 3: the install the README offers without a clone could not run its first command (the
recipes were not in the wheel; `clzoo train sincere_digits` named a file that did not exist). The
recipes ship in the package, by name; a path still works. (In CI `clzoo` is the installed wheel.)"""

import argparse
from pathlib import Path

from clzoo import cli
from clzoo.cli.train import _train_recipe
from clzoo.recipes import FOLDER, list_recipes, recipe_path

CHECKOUT = Path(__file__).resolve().parents[1] / "recipes"


def test_the_package_holds_every_recipe_of_the_checkout():
    assert "sincere_digits" in list_recipes() and "supcon/cifar10_airbench" in list_recipes()
    assert recipe_path("sincere_digits").read_text().startswith("# Quickstart")
    if CHECKOUT.is_dir():  # the checkout's recipes/ beside the tests (a link to clzoo/recipes)
        assert list_recipes() == sorted(p.relative_to(CHECKOUT).with_suffix("").as_posix()
                                        for p in CHECKOUT.rglob("*.yaml"))


def test_train_takes_a_name_a_path_or_refuses_in_one_line(capsys, tmp_path):
    named = argparse.Namespace(recipe="sincere_digits", resume=None, output=None)
    assert _train_recipe(named) == FOLDER / "sincere_digits.yaml"
    own = tmp_path / "mine.yaml"
    own.write_text("name: mine\n")
    assert _train_recipe(argparse.Namespace(recipe=str(own), resume=None, output=None)) == str(own)
    assert cli.main(["train", "sincere_digit"]) == 2
    error = capsys.readouterr().err.strip()
    assert error.endswith("Did you mean 'sincere_digits'?") and "\n" not in error


def test_list_recipes_names_each_with_its_description(capsys):
    assert cli.main(["list", "recipes"]) == 0
    out = capsys.readouterr().out
    row = out.split("\nsincere_digits ", 1)[1].splitlines()[:2]  # a narrow table puts it below
    assert "Quickstart: SINCERE on scikit-learn's digits" in " ".join(row)
    assert f"{len(list_recipes())} recipes." in out
