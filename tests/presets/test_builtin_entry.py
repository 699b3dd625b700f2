"""`clzoo push RUN --builtin NAME` (issue 60 item 4): a run becomes a built-in preset folder and its
registry.json entry in one command, from the run's typed records."""

import json

import pytest
import yaml

from clzoo import cli
from clzoo.presets import load_preset, verify_preset
from clzoo.presets.builtin_entry import add_builtin


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A finished run folder of an 8x8 encoder (as `clzoo train` leaves one)."""
    import keras

    folder = tmp_path_factory.mktemp("builtin") / "run"
    folder.mkdir()
    keras.utils.set_random_seed(0)
    inputs = keras.Input((8, 8, 3))
    x = keras.layers.GlobalAveragePooling2D()(keras.layers.Conv2D(4, 3)(inputs))
    keras.Model(inputs, keras.layers.Dense(6)(x), name="encoder").save(folder / "encoder.keras")
    recipe = {"data": "/home/me/data/cifar10", "loss": {"name": "SupConLoss"},
              "model": {"architecture": "resnet8"}}
    (folder / "recipe.yaml").write_text(yaml.safe_dump(recipe))
    (folder / "metrics.json").write_text(json.dumps({"knn_top1": 0.51234, "knn_top1_k": 20,
                                                     "knn_top1_by_k": {"k20": 0.51234},
                                                     "probe": 0.6}))
    return folder


def test_a_run_becomes_a_pinned_builtin_preset(run, tmp_path):
    folder, entry = add_builtin(run, "tiny_supcon", presets_folder=tmp_path)
    registry = json.loads((tmp_path / "registry.json").read_text())
    assert registry == {"tiny_supcon": entry}
    assert entry == {"handle": "hf://clzoo/tiny_supcon", "published": False, "path": "tiny_supcon",
                     "architecture": "resnet8", "loss": "SupConLoss", "dataset": "cifar10",
                     "feature_dim": 6, "metrics": {"knn_top1_k20": 0.5123, "probe_top1": 0.6},
                     "checksums_sha256": entry["checksums_sha256"]}
    verify_preset(folder, expected_checksums_sha256=entry["checksums_sha256"])  # the pin holds
    assert load_preset(folder).output_shape == (None, 6)
    with pytest.raises(FileExistsError, match="--overwrite"):
        add_builtin(run, "tiny_supcon", presets_folder=tmp_path)
    registry["tiny_supcon"].update(handle="hf://someone/tiny", published=True, recipe="recipes/x.yaml")
    (tmp_path / "registry.json").write_text(json.dumps(registry))
    _, again = add_builtin(run, "tiny_supcon", overwrite=True, presets_folder=tmp_path)
    assert (again["handle"], again["published"], again["recipe"]) == ("hf://someone/tiny", True,
                                                                        "recipes/x.yaml")


def test_a_run_whose_records_do_not_load_leaves_the_shipped_preset_alone(run, tmp_path):
    """Every record is read before the folder is replaced: a recipe today's schema refuses (or a
    metrics.json without its kNN) used to surface after the swap, leaving a folder its pin refused."""
    import shutil

    from clzoo.train import RecipeError

    folder, entry = add_builtin(run, "tiny_supcon", presets_folder=tmp_path)
    before = (folder / "checksums.json").read_bytes(), (tmp_path / "registry.json").read_bytes()
    broken = tmp_path / "broken_run"
    shutil.copytree(run, broken)
    (broken / "recipe.yaml").write_text(yaml.safe_dump({"data": "digits", "no_such_key": 1}))
    with pytest.raises(RecipeError, match="no_such_key"):
        add_builtin(broken, "tiny_supcon", overwrite=True, presets_folder=tmp_path)
    assert ((folder / "checksums.json").read_bytes(), (tmp_path / "registry.json").read_bytes()) == before
    verify_preset(folder, expected_checksums_sha256=entry["checksums_sha256"])


def test_the_console_command_writes_the_preset_and_its_entry(run, tmp_path, monkeypatch, capsys):
    from clzoo.presets import names

    monkeypatch.setattr(names, "PRETRAINED", tmp_path)  # never clzoo's own folder in a test
    (run / "eval").mkdir(exist_ok=True)  # a clzoo eval report: its numbers go on the card and entry
    (run / "eval" / "metrics.json").write_text(json.dumps({"knn": {"k20": 0.7}, "probe": {"accuracy": 0.8}}))
    try:
        assert cli.main(["push", str(run), "--builtin", "tiny_cli"]) == 0
    finally:
        import shutil

        shutil.rmtree(run / "eval")
    assert "wrote the built-in preset" in capsys.readouterr().out
    entry = json.loads((tmp_path / "registry.json").read_text())["tiny_cli"]
    assert entry["metrics"] == {"knn_top1_k20": 0.7, "probe_top1": 0.8}
    verify_preset(tmp_path / "tiny_cli", expected_checksums_sha256=entry["checksums_sha256"])


@pytest.mark.parametrize("argv, says", [
    (["{run}"], "takes hf://owner/repo or --builtin NAME"),
    (["{run}", "hf://a/b", "--builtin", "tiny_x"], "takes hf://owner/repo or --builtin NAME"),
    (["{run}", "--builtin", "Bad-Name"], "a built-in preset name is 3-64 characters"),
    (["{run}", "--builtin", "name_with_newline\n"], "a built-in preset name is 3-64 characters"),
    (["{run}", "--builtin", "tiny_x", "--dry-run", "{tmp}/d"], "--dry-run and --private"),
    (["{run}", "--builtin", "supcon_airbench_cifar10"], "exists already; pass --overwrite"),
])
def test_push_builtin_refusals_write_nothing(run, tmp_path, capsys, argv, says):
    from clzoo.presets.names import PRETRAINED

    shipped = sorted(p.name for p in PRETRAINED.iterdir()), (PRETRAINED / "registry.json").read_bytes()
    before = sorted(p.name for p in run.iterdir())
    assert cli.main(["push"] + [a.format(run=run, tmp=tmp_path) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err, err
    assert sorted(p.name for p in run.iterdir()) == before and not list(tmp_path.iterdir())
    assert (sorted(p.name for p in PRETRAINED.iterdir()), (PRETRAINED / "registry.json").read_bytes()) \
        == shipped
