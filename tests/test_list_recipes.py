"""Issue 85 item 6: `clzoo list recipes` could not be chosen from (9 of 54 rows were the same header
line cut mid-sentence) and a shipped recipe named this repository's own data path. Each recipe now
has a one-line `description:` (what it trains, and how long), shown in a table with its task / loss,
encoder and epochs x batch."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from clzoo import cli
from clzoo.recipes import list_recipes, recipe_path
from clzoo.train.recipe import RecipeError, check_recipe_keys, load_recipe
from clzoo.train.run_folder import RunFolder, fingerprint

SHIPPED = {name: yaml.safe_load(recipe_path(name).read_text()) for name in list_recipes()}


def test_every_shipped_recipe_has_a_one_line_unique_description_naming_its_epochs():
    descriptions = {name: raw.get("description") for name, raw in SHIPPED.items()}
    for name, text in descriptions.items():
        assert isinstance(text, str) and text.isprintable() and 20 <= len(text) <= 120, name
        epochs = SHIPPED[name].get("training", {}).get("epochs")
        named = {int(n.replace(",", "")) for n in re.findall(r"(\d[\d,]*) epochs", text)}
        assert named <= {epochs}, f"{name}: description names {named} epochs, training.epochs = {epochs}"
    assert len(set(descriptions.values())) == len(descriptions)


def test_no_shipped_recipe_names_this_repository_s_data():
    for name in list_recipes():
        assert "shared/data" not in recipe_path(name).read_text(), name


def _user_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "TF_CPP_MIN_LOG_LEVEL")}
    return {**env, **extra}


def test_list_recipes_prints_every_name_and_description_in_its_table():
    script = Path(sys.executable).with_name("clzoo")
    command = [str(script)] if script.is_file() else [sys.executable, "-m", "clzoo.cli"]
    result = subprocess.run(command + ["list", "recipes"], capture_output=True, text=True,
                            env=_user_env(), timeout=600)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["name", "task/loss", "encoder", "epochs", "x", "batch", "description"]
    rows = {line.split()[0]: line for line in lines[1:len(SHIPPED) + 1]}
    assert list(rows) == list(SHIPPED)
    for name, raw in SHIPPED.items():  # off a terminal nothing is cut
        size = f"  {raw['training']['epochs']} x {raw['training']['batch_size']}  "
        assert size in rows[name] and rows[name].endswith(raw["description"]), name
    assert "sincere/cifar10_small" in rows and "resnet20" in rows["sincere/cifar10_small"]
    assert "SINCERE app. J: ResNet-50, 800 epochs" not in rows["sincere/cifar10_small"]
    assert lines[-1].startswith(f"{len(SHIPPED)} recipes. Train one with clzoo train NAME")


@pytest.mark.parametrize("columns", [150, 80])
def test_descriptions_are_cut_at_a_word_boundary_to_the_terminal(capsys, monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", str(columns))
    assert cli.main(["list", "recipes"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert all(len(line) <= columns for line in lines if line.startswith("    ") or line.endswith("..."))
    if columns == 80:  # too narrow beside the columns: each description on the line below its row
        lines = [f"{row}  {below.strip()}" for row, below in zip(lines[0:-2:2], lines[1:-2:2])]
    cut = 0
    for line in lines[1:-2]:
        name, text = line.split()[0], line[line.rindex("  ") + 2:]
        description = SHIPPED[name]["description"]
        if text != description:  # cut: whole words of its own description, and "..."
            assert text.endswith("...") and description.startswith(text[:-3]), line
            assert description[len(text) - 3:][:1] in (" ", ",", ";", ":"), line
            cut += 1
    assert cut > 0


def test_list_recipes_json_holds_every_row(capsys):
    assert cli.main(["list", "recipes", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [row["name"] for row in rows] == list(SHIPPED)
    row = next(row for row in rows if row["name"] == "soft_target/cifar10_infonce_small")
    assert row == {"name": "soft_target/cifar10_infonce_small",
                   "task_loss": "soft_target/SoftTargetInfoNCELoss", "encoder": "resnet20",
                   "epochs": 8, "batch_size": 128,
                   "description": SHIPPED["soft_target/cifar10_infonce_small"]["description"]}


@pytest.mark.parametrize("value, reason", [('"a\\nb"', "must be one line"),
                                           ('"' + "x" * 500 + '"', "at most 200 characters")])
def test_a_description_of_two_lines_or_500_characters_is_refused_in_one_line(tmp_path, value, reason):
    path = tmp_path / "mine.yaml"
    path.write_text(f"name: mine\ndescription: {value}\n")
    with pytest.raises(RecipeError) as error:
        check_recipe_keys(path)
    assert len(error.value.lines) == 1 and "\n" not in error.value.lines[0]
    assert error.value.lines[0].startswith(f"{path}: description = ") and reason in error.value.lines[0]


def test_resume_accepts_a_run_whose_recipe_had_no_description_or_another(tmp_path):
    path = tmp_path / "r.yaml"
    path.write_text("name: r\ntraining: {epochs: 2}\n")
    before = load_recipe(path)
    assert before.description is None
    run = RunFolder(tmp_path / "run")
    run.prepare(before, environment={})
    run.checkpoint.write_bytes(b"")
    assert "description" not in (run / "recipe.yaml").read_text().replace("description: null", "")
    for text in ("a recipe described later", "described otherwise"):
        path.write_text(f"name: r\ndescription: {text}\ntraining: {{epochs: 2}}\n")
        assert run.guard(load_recipe(path), resume=True) == "started"
    path.write_text("name: r\ndescription: x y z\ntraining: {epochs: 3}\n")
    with pytest.raises(ValueError, match="differs from the one it started with in \\['training'\\]"):
        run.guard(load_recipe(path), resume=True)


def test_resume_accepts_a_saved_recipe_yaml_written_before_the_key(tmp_path):
    """A run folder from before `description` existed: its recipe.yaml has no such key at all."""
    path = tmp_path / "r.yaml"
    path.write_text("name: r\ndescription: new text\ntraining: {epochs: 2}\n")
    recipe = load_recipe(path)
    saved = {k: v for k, v in recipe.to_dict().items() if k != "description"}
    run = tmp_path / "run"
    run.mkdir()
    (run / "recipe.yaml").write_text(yaml.safe_dump(saved))
    (run / "recipe.sha256").write_text(f"{fingerprint(saved)}  resolved recipe.yaml\n")
    (run / "checkpoint.keras").write_bytes(b"")
    assert RunFolder(run).guard(recipe, resume=True) == "started"
