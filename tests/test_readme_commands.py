"""The README's and recipes' data paths work from a fresh clone (issue 43, item 3): commands name
`tfds:` datasets, `digits` or the user's own folder, never this repository's test copy beside the
checkout (`../shared/data`), except where the README says that is what it is."""

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent


def _code_lines(markdown):
    blocks = re.findall(r"```(?:bash|python)\n(.*?)```", markdown, flags=re.S)
    return [line for block in blocks for line in block.splitlines()]


DOCUMENTS = ["README.md", "recipes/README.md"] + sorted(
    str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))


@pytest.mark.parametrize("document", DOCUMENTS)
def test_commands_name_no_data_outside_a_fresh_clone(document):
    lines = _code_lines((ROOT / document).read_text())
    assert lines or document.startswith("docs/"), f"{document} has no code blocks"
    offending = [line for line in lines if "../shared" in line]
    assert not offending, f"{document} commands use this repository's test data: {offending}"


def test_cifar_commands_say_where_the_data_comes_from():
    lines = [line for document in DOCUMENTS for line in _code_lines((ROOT / document).read_text())
             if line.startswith("clzoo ") and "cifar" in line and "--data" in line]
    assert lines
    for line in lines:
        data = line.split("--data", 1)[1].split()[0]
        assert data.startswith(("tfds:", "my/")) or data in ("digits",), line


def test_recipes_default_to_data_a_user_can_get():
    for recipe in sorted((ROOT / "recipes").rglob("*.yaml")):
        data = yaml.safe_load(recipe.read_text())["data"]
        assert not str(data).startswith(".."), f"{recipe.relative_to(ROOT)}: data={data!r}"
