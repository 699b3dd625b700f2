"""Self-supervised training on an unlabelled folder: nested photos of any size, `--image-size`, and
a report of what needs no labels (alignment, uniformity, effective rank) beside random init."""

import json

import pytest

from clzoo.recipes import recipe_path
from clzoo.train import RecipeError, load_recipe, train
from tests.data.test_unlabelled import write_unlabelled

pytestmark = pytest.mark.backends("tensorflow", "jax", "torch")

SMALL = ["training.epochs=1", "training.batch_size=8", "model.encoder={name: resnet8}",
         "model.embedding_dim=16", "image_size=8", "views.size=8"]


@pytest.mark.parametrize("override, blamed", [
    ([], "loss.name = SupConLoss: it reads class labels"),
    (["loss={name: InfoNCELoss}", "model.online_probe={}"], "model.online_probe: a classifier"),
])
def test_what_reads_labels_is_refused_before_any_work(tmp_path, override, blamed):
    root, _ = write_unlabelled(tmp_path / "photos", count=12)
    recipe = load_recipe(recipe_path("supcon/cifar10_small"), [f"data={root}", *SMALL, *override])
    with pytest.raises(RecipeError, match=blamed) as caught:
        train(recipe, tmp_path / "run", verbose=0)
    assert len(caught.value.lines) == 1  # no kNN line: an unlabelled run has no kNN to refuse
    assert "self-supervised loss needs none" in caught.value.lines[0] or "=null" in caught.value.lines[0]
    assert not (tmp_path / "run").exists()


def test_a_run_folder_inside_the_unlabelled_folder_is_refused(tmp_path):
    root, _ = write_unlabelled(tmp_path / "photos", count=12)
    recipe = load_recipe(recipe_path("simclr/cifar10_small"), [f"data={root}", *SMALL])
    with pytest.raises(RecipeError, match="inside the data's unlabelled folder"):
        train(recipe, root / "runs" / "a", verbose=0)
    assert not (root / "runs").exists()


def _train(tmp_path, recipe, count, *extra):
    from tests.test_cli import _run

    root, _ = write_unlabelled(tmp_path / "photos", count=count)
    run = tmp_path / "run"
    done = _run(["train", recipe, "--data", str(root), "--image-size", "8", "--output", str(run),
                 "--set", "training.epochs=1", "--set", "training.batch_size=8",
                 "--set", "model.encoder={name: resnet8}", "--set", "views.size=8", *extra])
    assert done.returncode == 0, done.stderr
    return root, run, done


def _check_label_free(run, done, count):
    assert "unlabelled | encoder" in done.stdout
    assert f"Label-free metrics on {count} images" in done.stdout
    assert "random init (untrained)" in done.stdout
    metrics = json.loads((run / "metrics.json").read_text())
    assert "knn_top1" not in metrics and "test_images" not in metrics
    for row in (metrics["label_free"], metrics["label_free_baselines"]["random_init"]):
        assert row["images"] == count and 0 <= row["alignment"] <= 4 and row["uniformity"] <= 0
        assert 1 <= row["effective_rank"] <= 64
    assert metrics["label_free"] != metrics["label_free_baselines"]["random_init"]  # trained differs
    assert not (run / "eval").exists()
    assert "online kNN monitor (eval.monitor_every = 2) is off" in done.stdout


@pytest.mark.large
@pytest.mark.backends("torch")  # CI time: the TensorFlow lane runs dcl below, every lane the metrics
def test_the_console_script_trains_on_unlabelled_photos_then_eval_takes_a_labelled_folder(tmp_path):
    """Issue 85 item 12, as a user runs it: simclr on nested photos of several sizes; the report
    without labels; `eval RUN` refused in one line, `eval RUN --data LABELLED` gives the kNN;
    `embed` takes the one split."""
    from tests.data.image_folders import write_image_folder
    from tests.test_cli import _run

    root, run, done = _train(tmp_path, "simclr/cifar10_small", 40)
    _check_label_free(run, done, 40)
    refused = _run(["eval", str(run)])
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
    assert "unlabelled folder" in refused.stderr and "label-free metrics" in refused.stderr
    unpublished = _run(["push", str(run), "hf://me/photos", "--dry-run", str(tmp_path / "card")])
    assert unpublished.returncode == 2 and "trained on an unlabelled folder" in unpublished.stderr
    assert len(unpublished.stderr.strip().splitlines()) == 1 and not (tmp_path / "card").exists()
    labelled = write_image_folder(tmp_path / "labelled", per_class=4)
    scored = _run(["eval", str(run), "--data", str(labelled), "--metrics", "knn",
                   "--output", str(run / "eval")])
    assert scored.returncode == 0, scored.stderr
    assert "weighted kNN top-1" in scored.stdout
    published = _run(["push", str(run), "hf://me/photos", "--dry-run", str(tmp_path / "card")])
    assert published.returncode == 0, published.stderr
    card = (tmp_path / "card" / "README.md").read_text()
    assert "Weighted kNN top-1 on the test split (8 images): k1:" in card
    assert "Trained without labels" in card and "alignment" in card
    embedded = _run(["embed", str(run), "--data", str(root), "--output", str(tmp_path / "e.npz")])
    assert embedded.returncode == 0, embedded.stderr
    assert "40 embeddings" in embedded.stdout and "(train), label 0 (an unlabelled folder" in embedded.stdout
    refused = _run(["embed", str(run), "--data", str(root), "--split", "test",
                    "--output", str(tmp_path / "f.npz")])
    assert refused.returncode == 2 and "--split train" in refused.stderr


@pytest.mark.large
@pytest.mark.backends("tensorflow")
def test_dcl_trains_on_unlabelled_photos_streamed_from_their_files(tmp_path):
    root, run, done = _train(tmp_path, "dcl/cifar10_small", 24, "--set", "data_loading=stream")
    assert "data: streamed from its files" in done.stdout
    _check_label_free(run, done, 24)


@pytest.mark.parametrize("facts, said", [
    ({"images_per_second": 41.5, "steps": 5}, "42 images/s"),
    ({"images_per_second": None, "steps": 1, "resumed_from_step": None}, "speed not measured"),
    ({"images_per_second": None, "steps": 3, "resumed_from_step": 3}, "no steps left to train"),
])
def test_the_closing_line_says_why_a_run_has_no_speed(facts, said):
    """A fresh one-step run said "no steps left to train", the words of a resume at its end."""
    from clzoo.cli.train import speed_text
    from clzoo.eval.records import RunResult

    summary = {"label_free": {"alignment": 0.1, "uniformity": -1.0, "effective_rank": 2.0,
                              "images": 8}, **facts}
    assert said in speed_text(RunResult.from_summary(summary))
