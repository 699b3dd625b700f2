"""`clzoo transfer`, `eval` and `compare` say what they will run, how much, and roughly how long, first."""

import json
import re

import pytest
import yaml

from clzoo import cli
from clzoo.eval.plan import duration, eval_plan, sgd_probe_images, transfer_plan
from tests.train.tiny_data import write_tiny_digits


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """An 8x8 encoder as a run folder, the preset built from it, and a 4-class folder (48 / 24)."""
    import keras

    from clzoo.presets import build_preset

    root = tmp_path_factory.mktemp("plans")
    (root / "run").mkdir()
    keras.utils.set_random_seed(0)
    inputs = keras.Input((8, 8, 3))
    x = keras.layers.GlobalAveragePooling2D()(keras.layers.Conv2D(4, 3, activation="relu")(inputs))
    keras.Model(inputs, keras.layers.Dense(6)(x), name="encoder").save(root / "run" / "encoder.keras")
    recipe = {"data": "digits", "loss": {"name": "SINCERELoss"}}
    (root / "run" / "recipe.yaml").write_text(yaml.safe_dump(recipe))
    # what every finished run records (build_preset reads it as a RunResult)
    (root / "run" / "metrics.json").write_text(json.dumps({"knn_top1": 0.5, "knn_top1_k": 5,
                                                           "knn_top1_by_k": {"k5": 0.5}}))
    preset = build_preset(root / "run", root / "preset", name="tiny")
    return root / "run", preset, write_tiny_digits(root / "data", train=48, test=24)


def test_plan_numbers():
    assert sgd_probe_images(48, (0.1, 1.0), 1) == (3, 2 * 43 + 48)  # 5 held out, then all 48
    assert sgd_probe_images(48, (0.1,), 100) == (1, 4800)
    assert duration(0.2) == "about 1 s" and duration(91) == "about 2 min"
    line = transfer_plan("sgd", 1000, 100, rate=100.0, learning_rates=(0.01, 0.1, 1.0), epochs=100)
    # 4 fits x 100 epochs of ~1,000 images, 1.5 forward passes each at 100 images/s: about 1.5 h.
    assert "4 fit(s) x 100 epochs" in line and "370,000 images" in line and "about 1.5 h" in line
    assert "`--protocol lbfgs`" in line and "about 11 s" in line
    line = eval_plan(("knn", "sgd_probe"), 1000, 100, rate=100.0, probe_epochs=10, encoders=2)
    assert "each of 2 encoders" in line and "about 22 s" in line and "4 probes x 10 epochs" in line


def _before(printed, first, then):
    assert first in printed and then in printed, printed
    assert printed.index(first) < printed.index(then), printed


@pytest.mark.large
def test_transfer_prints_its_plan_before_the_work(tiny, capsys):
    _, preset, data = tiny
    assert cli.main(["transfer", str(preset), "--data", data, "--protocol", "sgd", "--epochs", "1",
                     "--learning-rates", "0.1,1.0"]) == 0
    printed = capsys.readouterr().out
    _before(printed, "plan: SGD linear probe (SINCERE app. J): 3 fit(s) x 1 epochs", "linear-probe top-1")
    # issue 69 item 9: the timed passes of the estimate were a silence before the plan
    _before(printed, "timing the encoder on 48 images for the plan's estimate", "plan: SGD linear probe")
    assert "134 images through the encoder" in printed and "`--protocol lbfgs`" in printed
    chosen = re.search(r"learning rate (\S+) chosen on the validation split\)", printed)
    assert chosen and float(chosen.group(1)) in (0.1, 1.0), printed  # issue 43 item 8
    assert cli.main(["transfer", str(preset), "--data", data]) == 0  # the default: minutes, not hours
    _before(capsys.readouterr().out, "plan: L-BFGS logistic regression (scikit-learn) on frozen "
            "features: 48 train + 24 test images embedded once", "linear-probe top-1")


@pytest.mark.large
def test_eval_and_compare_print_their_plans(tiny, tmp_path, capsys):
    run, _, data = tiny
    assert cli.main(["eval", str(run), "--data", data, "--metrics", "knn,ncc", "--k", "1,5",
                     "--output", str(tmp_path / "eval")]) == 0
    printed = capsys.readouterr().out
    _before(printed, "plan: embed 48 train + 24 test images", "embed_train (")
    _before(printed, "timing the encoder on 48 images for the plan's estimate", "plan: embed 48")
    assert "then 2 metrics on the embeddings: knn, ncc." in printed
    assert cli.main(["compare", str(run), str(run), "--data", data, "--metrics", "knn",
                     "--k", "1,5", "--resamples", "100", "--output", str(tmp_path / "compare")]) == 0
    printed = capsys.readouterr().out
    _before(printed, "plan: each of 2 encoders: embed 48 train + 24 test images", "embed_train (")
    assert "Then 100 bootstrap resamples of A - B per classifier." in printed
    report = json.loads((tmp_path / "compare" / "compare.json").read_text())
    assert report["A"]["data"] == report["B"]["data"] == data  # the spec, though loaded once
