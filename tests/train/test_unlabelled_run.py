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


@pytest.mark.large
@pytest.mark.parametrize("recipe", ["simclr/cifar10_small", "dcl/cifar10_small"])
def test_the_console_script_trains_on_unlabelled_photos_and_reports_label_free_metrics(tmp_path, recipe):
    from tests.test_cli import _run

    root, written = write_unlabelled(tmp_path / "photos", count=40)
    run = tmp_path / "run"
    done = _run(["train", recipe, "--data", str(root), "--image-size", "8", "--output", str(run),
                 "--set", "training.epochs=1", "--set", "training.batch_size=8",
                 "--set", "model.encoder={name: resnet8}", "--set", "views.size=8"])
    assert done.returncode == 0, done.stderr
    assert "unlabelled | encoder" in done.stdout
    assert "Label-free metrics on 40 images" in done.stdout and "random init (untrained)" in done.stdout
    metrics = json.loads((run / "metrics.json").read_text())
    assert "knn_top1" not in metrics and "test_images" not in metrics
    for row in (metrics["label_free"], metrics["label_free_baselines"]["random_init"]):
        assert row["images"] == 40 and 0 <= row["alignment"] <= 4 and row["uniformity"] <= 0
        assert 1 <= row["effective_rank"] <= 64
    assert metrics["label_free"] != metrics["label_free_baselines"]["random_init"]  # trained differs
    assert not (run / "eval").exists()
    refused = _run(["eval", str(run)])
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
    assert "unlabelled folder" in refused.stderr and "label-free metrics" in refused.stderr


@pytest.mark.large
def test_a_labelled_folder_gives_the_unlabelled_run_its_knn_and_embed_takes_the_one_split(tmp_path):
    from tests.data.image_folders import write_image_folder
    from tests.test_cli import _run

    root, _ = write_unlabelled(tmp_path / "photos", count=16)
    run = tmp_path / "run"
    done = _run(["train", "simclr/cifar10_small", "--data", str(root), "--image-size", "8",
                 "--output", str(run), "--set", "training.epochs=1", "--set", "training.batch_size=8",
                 "--set", "model.encoder={name: resnet8}", "--set", "views.size=8",
                 "--set", "eval.baselines=[]"])
    assert done.returncode == 0, done.stderr
    labelled = write_image_folder(tmp_path / "labelled", per_class=4)
    scored = _run(["eval", str(run), "--data", str(labelled), "--metrics", "knn",
                   "--output", str(tmp_path / "report")])
    assert scored.returncode == 0, scored.stderr
    assert "weighted kNN top-1" in scored.stdout
    embedded = _run(["embed", str(run), "--data", str(root), "--output", str(tmp_path / "e.npz")])
    assert embedded.returncode == 0, embedded.stderr
    assert "16 embeddings" in embedded.stdout and "(train), label 0 (an unlabelled folder" in embedded.stdout
    refused = _run(["embed", str(run), "--data", str(root), "--split", "test",
                    "--output", str(tmp_path / "f.npz")])
    assert refused.returncode == 2 and "--split train" in refused.stderr
