"""Resuming: kill -9 a training run at random moments; the resumed run ends where an uninterrupted
one does."""

import json
import os
import subprocess
import sys
import time
import zipfile

import keras
import numpy as np
import pytest
import yaml

from clzoo.data import ViewConfig, batches, from_arrays
from clzoo.train import load_recipe, train
from clzoo.train.callbacks import checkpoint_progress
from tests.train.tiny_data import write_tiny_digits


def tiny_recipe(data):
    return {"name": "tiny", "data": data,
            "model": {"architecture": "resnet8", "embedding_dim": 16},
            "views": {"size": 8, "flip": False, "crop_scale": [0.6, 1.0],
                      "jitter": [0.4, 0.4, 0.0, 0.0], "grayscale_p": 0.0},
            "training": {"epochs": 3, "batch_size": 32, "learning_rate": 0.05,
                         "checkpoint_every_steps": 2, "log_every_steps": 1},
            "eval": {"knn_k": [1, 5], "knn_headline_k": 5, "metrics": ["knn"]}}


def one_epoch_recipe(tmp_path, **model):
    """`(path, recipe)`: `tiny_recipe` on 64 + 16 digits for one epoch without a report, written
    to `tmp_path/tiny.yaml`; `model` keys update its model section."""
    data = write_tiny_digits(tmp_path / "data", train=64, test=16)
    recipe = tiny_recipe(data)
    recipe["training"].update(epochs=1, checkpoint_every_steps=None)
    recipe["model"].update(model)
    recipe["eval"]["report"] = False
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(recipe))
    return path, recipe


def test_view_batches_resume_at_any_step_gives_the_same_batches():
    rng = np.random.default_rng(0)
    split = from_arrays(rng.integers(0, 255, (23, 8, 8, 3), dtype=np.uint8), np.arange(23) % 3)
    config = ViewConfig(size=8)
    full = list(batches(split, "views", 5, seed=7, epochs=3, views=config).as_numpy_iterator())
    assert len(full) == 3 * (23 // 5)
    for start in (1, 4, 5, 11):
        resumed = list(batches(split, "views", 5, seed=7, epochs=3, start_step=start,
                               views=config).as_numpy_iterator())
        assert len(resumed) == len(full) - start
        for (xa, ya), (xb, yb) in zip(full[start:], resumed):
            np.testing.assert_array_equal(xa, xb)
            np.testing.assert_array_equal(ya, yb)
    # Epochs visit the images in different orders; each epoch is a permutation without repeats.
    assert not np.array_equal(full[0][1], full[4][1]) or not np.array_equal(full[0][0], full[4][0])
    other_seed = list(batches(split, "views", 5, seed=8, views=config).as_numpy_iterator())
    assert not np.array_equal(other_seed[0][0], full[0][0])
    with pytest.raises(ValueError, match="start_step"):
        batches(split, "views", 5, epochs=3, start_step=13, views=config)
    with pytest.raises(ValueError, match="batch_size"):
        batches(split, "views", 24, views=config)


def _steps_logged(path):
    if not path.exists():
        return 0
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line)["step"])
        except (json.JSONDecodeError, KeyError):
            pass
    return max(rows, default=0)


@pytest.mark.large
def test_kill_9_at_random_moments_then_resume_matches_an_uninterrupted_run(tmp_path):
    kill_9_then_resume(tmp_path, tiny_recipe(write_tiny_digits(tmp_path / "data")),
                       [sys.executable, "-m", "clzoo.cli"])


def kill_9_then_resume(tmp_path, recipe, clzoo_command, atol=1e-5):
    """Kill `clzoo_command train` twice mid-run, resume it, and compare with an uninterrupted run
    of the same command (its final weights within `atol`). The reference runs as a command too:
    trained in this process, its JAX programs compiled with the tests' XLA flags
    (tests/xla_flags.py) and its losses differed from the command's by up to 7e-4 relative on a
    2-core AVX-512 machine, at fa9c53a as after it."""
    recipe_path = tmp_path / "tiny.yaml"
    recipe_path.write_text(yaml.safe_dump(recipe))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")  # the installed clzoo (conftest: PYTHONSAFEPATH)
    uninterrupted = subprocess.run([*clzoo_command, "train", str(recipe_path), "--output",
                                    str(tmp_path / "reference")], env=env, capture_output=True,
                                   text=True, timeout=600)
    assert uninterrupted.returncode == 0, uninterrupted.stderr[-3000:]
    reference = json.loads((tmp_path / "reference" / "metrics.json").read_text())

    run = tmp_path / "run"
    command = [*clzoo_command, "train", str(recipe_path), "--output", str(run), "--resume"]
    rng = np.random.default_rng(0)
    kills = 0
    for target in (4, 11):  # of 15 steps; checkpoints every 2 steps and every epoch (5 steps)
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 300
        while _steps_logged(run / "steps.jsonl") < target and process.poll() is None:
            assert time.monotonic() < deadline, "training made no progress"
            time.sleep(0.05)
        time.sleep(rng.uniform(0, 0.3))  # land inside steps and saves, not only between them
        if process.poll() is None:
            process.kill()  # SIGKILL: no clean-up runs
            kills += 1
        process.wait()
        checkpoint = run / "checkpoint.keras"
        if checkpoint.exists():  # never corrupt: it loads, and says which step it holds
            assert zipfile.is_zipfile(checkpoint)
            model = keras.saving.load_model(checkpoint)
            step = int(keras.ops.convert_to_numpy(model.optimizer.iterations))
            assert step == checkpoint_progress(checkpoint)["step"] and step <= 15
    assert kills >= 2
    finished = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert "resuming at step" in finished.stdout

    resumed = json.loads((run / "metrics.json").read_text())
    assert resumed["steps"] == 15 and resumed["resumed_from_step"] > 0
    assert resumed["knn_top1_by_k"] == reference["knn_top1_by_k"]
    np.testing.assert_allclose(resumed["final_train_loss"], reference["final_train_loss"], rtol=1e-5)
    history = [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines()]
    expected = [json.loads(line) for line in
                (tmp_path / "reference" / "history.jsonl").read_text().splitlines()]
    assert [row["epoch"] for row in history] == [1, 2, 3]
    csv_epochs = [line.split(",")[0] for line in (run / "history.csv").read_text().splitlines()]
    assert csv_epochs == ["epoch", "1", "2", "3"]  # numbered as history.jsonl, after the truncation
    np.testing.assert_allclose([r["loss"] for r in history], [r["loss"] for r in expected], rtol=1e-5)
    a = keras.saving.load_model(run / "encoder.keras").get_weights()
    b = keras.saving.load_model(tmp_path / "reference" / "encoder.keras").get_weights()
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, atol=atol)
    assert not list(run.glob(".*.tmp*")), "a temporary file was left behind"


@pytest.mark.large
def test_resume_refuses_a_different_recipe_and_fresh_runs_refuse_an_existing_one(tmp_path):
    path, _ = one_epoch_recipe(tmp_path)
    first = train(load_recipe(path), tmp_path / "run", verbose=0)
    saved = (tmp_path / "run" / "metrics.json").read_bytes()
    mtime = (tmp_path / "run" / "metrics.json").stat().st_mtime_ns
    with pytest.raises(FileExistsError, match="--resume"):
        train(load_recipe(path), tmp_path / "run", verbose=0)
    with pytest.raises(ValueError, match="training"):
        train(load_recipe(path, ["training.learning_rate=0.1"]), tmp_path / "run", verbose=0,
              resume=True)
    # Resuming a finished run is a no-op: nothing trains, metrics.json is not rewritten.
    again = train(load_recipe(path), tmp_path / "run", verbose=0, resume=True)
    assert again.steps == 2 and again.knn_top1 == first.knn_top1
    assert (tmp_path / "run" / "metrics.json").read_bytes() == saved
    assert (tmp_path / "run" / "metrics.json").stat().st_mtime_ns == mtime


def _refused_by_the_other_task(checkpoint, recipe):
    """A contrastive checkpoint is not a soft-target run's model, though it has an "encoder" layer."""
    import types

    from clzoo.saving import load_model
    from clzoo.train import resume_checks
    from clzoo.train.builders import views_from_config
    from clzoo.train.tasks import TASKS

    model = load_model(checkpoint)
    views = views_from_config(recipe.views)
    soft = types.SimpleNamespace(task="soft_target", model=recipe.model)
    with pytest.raises(ValueError, match="it is a ContrastiveModel, not the soft_target task's model"):
        resume_checks.check_checkpoint(model, TASKS.get("soft_target")(), soft, views, checkpoint, 3)
    resume_checks.check_checkpoint(model, TASKS.get("contrastive")(), recipe, views, checkpoint, 3)


def test_resume_refuses_a_checkpoint_that_is_not_the_runs_model(tmp_path):
    """Issue 58 items 4 and 6: an encoder saved over checkpoint.keras (an AttributeError deep in
    the runner before), or a model of other views, is refused in one line before training."""
    path, recipe = one_epoch_recipe(tmp_path)
    run = tmp_path / "run"
    train(load_recipe(path), run, verbose=0)
    (run / "metrics.json").unlink()  # started, not finished
    checkpoint = (run / "checkpoint.keras").read_bytes()
    (run / "checkpoint.keras").write_bytes((run / "encoder.keras").read_bytes())
    with pytest.raises(ValueError, match="it is a ImageEncoder, not the contrastive task's model"):
        train(load_recipe(path), run, verbose=0, resume=True)
    (run / "checkpoint.keras").write_bytes(checkpoint)
    _refused_by_the_other_task(run / "checkpoint.keras", load_recipe(path))
    recipe["views"]["size"] = 12  # the saved recipe then differs: the check names the views
    other = tmp_path / "other"
    other.mkdir()
    (other / "x.yaml").write_text(yaml.safe_dump(recipe))
    train(load_recipe(other / "x.yaml"), other / "run", verbose=0)
    (other / "run" / "metrics.json").unlink()
    (other / "run" / "checkpoint.keras").write_bytes(checkpoint)
    with pytest.raises(ValueError, match=r"takes \(8, 8\) images, the recipe's views 12"):
        train(load_recipe(other / "x.yaml"), other / "run", verbose=0, resume=True)


def test_resume_refuses_data_whose_classes_no_longer_match_the_auxiliary_head(tmp_path):
    """Issue 58 item 6: the data changed between a kill and --resume (a class folder removed):
    the auxiliary head's classes no longer match; refused instead of training on shifted ids."""
    import shutil

    path, _ = one_epoch_recipe(tmp_path, auxiliary_cross_entropy_weight=0.5)
    run = tmp_path / "run"
    train(load_recipe(path), run, verbose=0)
    (run / "metrics.json").unlink()
    for split in ("train", "test"):
        shutil.rmtree(tmp_path / "data" / split / "3")
    with pytest.raises(ValueError, match="auxiliary classifier of 4 classes and the data now has 3"):
        train(load_recipe(path), run, verbose=0, resume=True)


def test_resume_refuses_data_of_another_size(tmp_path):
    """Issue 58 item 6: images removed between a kill and --resume shifted every later epoch's
    steps (learning rate, skipped epochs); refused, naming both sizes."""
    path, _ = one_epoch_recipe(tmp_path)
    run = tmp_path / "run"
    train(load_recipe(path), run, verbose=0)
    (run / "metrics.json").unlink()
    for image in sorted((tmp_path / "data" / "train" / "0").iterdir())[:5]:
        image.unlink()
    with pytest.raises(ValueError, match=r"started on \d+ training images .* the data changed"):
        train(load_recipe(path), run, verbose=0, resume=True)


def test_resume_refuses_other_classes_of_the_same_size_and_runs_without_the_record_resume(tmp_path):
    """A class folder renamed between a kill and --resume: as many images and steps, but label 3
    would now mean another class; refused, naming the classes. A run recorded before class names
    and fingerprints were (neither in environment.json) resumes as before."""
    path, _ = one_epoch_recipe(tmp_path)
    run = tmp_path / "run"
    train(load_recipe(path), run, verbose=0)
    (run / "metrics.json").unlink()
    recorded = json.loads((run / "environment.json").read_text())
    assert recorded["class_names"] == ["0", "1", "2", "3"]
    for split in ("train", "test"):
        (tmp_path / "data" / split / "3").rename(tmp_path / "data" / split / "7")
    with pytest.raises(ValueError, match=r"training classes changed since the run started \(classes "
                                         r"gone: \['3'\]; new: \['7'\]\)"):
        train(load_recipe(path), run, verbose=0, resume=True)
    del recorded["class_names"], recorded["train_fingerprint"]
    (run / "environment.json").write_text(json.dumps(recorded))
    assert train(load_recipe(path), run, verbose=0, resume=True).steps == 2
    assert json.loads((run / "environment.json").read_text())["class_names"] == ["0", "1", "2", "7"]


def test_a_recipe_with_a_learnable_temperature_trains_it(tmp_path):
    """Issue 58 item 7: `loss.temperature: learnable` could not run (the model was built before
    the loss, and a built model takes no new weight)."""
    import clzoo  # noqa: F401  (registrations for load_model)

    path, recipe = one_epoch_recipe(tmp_path)
    recipe["loss"] = {"name": "SupConLoss", "temperature": "learnable"}
    path.write_text(yaml.safe_dump(recipe))
    train(load_recipe(path), tmp_path / "run", verbose=0)
    model = keras.saving.load_model(tmp_path / "run" / "checkpoint.keras")
    learnt = float(keras.ops.convert_to_numpy(model.loss.temperature_layer.temperature()))
    initial = float(keras.ops.convert_to_numpy(
        type(model.loss)(temperature="learnable").temperature_layer.temperature()))
    assert model.learnable_temperature is model.loss.temperature_layer and learnt != initial


@pytest.mark.large  # 4 cases of two tiny runs each (about 60 s of the default tier)
@pytest.mark.parametrize("donor, message", [
    ({"model": {"architecture": "resnet20"}},
     r"holds a model of [\d,]+ parameters and the recipe builds one of [\d,]+ \(first difference"),
    ({"model": {"queue": {"size": 64, "momentum": 0.9}}}, r"first difference: model\.parts: 1 entries"),
    ({"training": {"levers": [{"name": "ema", "momentum": 0.9}]}},
     r"another optimizer than the recipe's \(optimizer\.config\.use_ema: True in the "
     r"checkpoint, False from the recipe\)"),
    ({"loss": {"name": "SupConLoss", "temperature": 0.5}}, r"was compiled with another loss than the "
     r"recipe's \(loss\."),  # the hostile pass: a resume trained on with the checkpoint's loss
])
def test_resume_refuses_a_checkpoint_of_another_runs_model(tmp_path, donor, message):
    """Issue 72 item 2: a checkpoint copied from a run of another architecture, with a memory queue,
    or with a weight average trained on as it was (a resnet20 encoder.keras from a resnet8 run);
    the checkpoint is compared with the model and optimizer the recipe builds."""
    path, recipe = one_epoch_recipe(tmp_path)
    run = tmp_path / "run"
    train(load_recipe(path), run, verbose=0)
    (run / "metrics.json").unlink()
    for section, keys in donor.items():
        recipe[section] = {**recipe.get(section, {}), **keys}
    (tmp_path / "donor.yaml").write_text(yaml.safe_dump(recipe))
    train(load_recipe(tmp_path / "donor.yaml"), tmp_path / "donor", verbose=0)
    own = (run / "checkpoint.keras").read_bytes()
    (run / "checkpoint.keras").write_bytes((tmp_path / "donor" / "checkpoint.keras").read_bytes())
    with pytest.raises(ValueError, match=message):
        train(load_recipe(path), run, verbose=0, resume=True)
    (run / "checkpoint.keras").write_bytes(own)  # its own checkpoint resumes (nothing left to train)
    assert train(load_recipe(path), run, verbose=0, resume=True).steps == 2


def test_resume_refuses_an_edited_recipe_without_its_stamp_and_replaced_training_images(tmp_path):
    """Issue 72 items 4 and 7: a run folder without recipe.sha256 (older, or copied) resumed an
    edited recipe.yaml on the checkpoint's old schedule (epochs 3 -> 6: 4 epochs at learning rate
    0); training images replaced by others of the same names and count trained on unseen."""
    from PIL import Image

    path, recipe = one_epoch_recipe(tmp_path)
    run = tmp_path / "run"
    train(load_recipe(path), run, verbose=0)
    (run / "metrics.json").unlink()
    (run / "recipe.sha256").unlink()
    recipe["training"]["epochs"] = 2
    for where in (path, run / "recipe.yaml"):
        where.write_text(yaml.safe_dump(recipe))
    with pytest.raises(ValueError, match=r"another optimizer than the recipe's \(optimizer\.config\."
                                         r"learning_rate\.config\.decay_steps: 1 in the checkpoint, 2"):
        train(load_recipe(path), run, verbose=0, resume=True)
    recipe["training"]["epochs"] = 1
    for where in (path, run / "recipe.yaml"):
        where.write_text(yaml.safe_dump(recipe))
    rng = np.random.default_rng(0)
    for image in sorted((tmp_path / "data" / "train").glob("*/*.png")):
        Image.fromarray(rng.integers(0, 255, (12, 12, 3), dtype=np.uint8)).save(image)
    with pytest.raises(ValueError, match=r"training images changed since the run started \(as many"):
        train(load_recipe(path), run, verbose=0, resume=True)


@pytest.mark.large
def test_resume_refuses_training_images_replaced_by_others_of_the_same_size(tmp_path):
    """The hostile pass of issue 72: uncompressed images replaced by others of the same size (here
    every pixel inverted, BMP) kept the fingerprint of names and sizes; their bytes are read too."""
    from PIL import Image

    path, _ = one_epoch_recipe(tmp_path)
    for image in sorted((tmp_path / "data").glob("*/*/*.png")):  # the same folder, as BMP
        Image.open(image).save(image.with_suffix(".bmp"))
        image.unlink()
    run = tmp_path / "run"
    train(load_recipe(path), run, verbose=0)
    (run / "metrics.json").unlink()
    for image in sorted((tmp_path / "data" / "train").glob("*/*.bmp")):
        pixels = np.asarray(Image.open(image))
        Image.fromarray(255 - pixels).save(image)
        assert image.stat().st_size == 246
    with pytest.raises(ValueError, match=r"training images changed since the run started"):
        train(load_recipe(path), run, verbose=0, resume=True)
