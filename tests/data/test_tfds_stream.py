"""tfds splits streamed (issue 84 item 3): a dataset prepared here (from an image folder, never
downloaded) in ArrayRecord files is read by index through `tfds.data_source` (`TfdsImages`),
streamed or held, with TensorFlow or without; in TFRecord files it is held (`tfds.load`)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.train.tiny_data import write_tiny_digits

tfds = pytest.importorskip("tensorflow_datasets")
ROOT = Path(__file__).resolve().parents[2]
NO_TENSORFLOW = [sys.executable, str(ROOT / "tests" / "no_tensorflow.py")]


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """`{file format: TFDS data dir}` of the tiny digits prepared both ways, and the folder."""
    from tests.data.tfds_builders import prepare

    root = tmp_path_factory.mktemp("tfds")
    folder = write_tiny_digits(root / "folder", train=64, test=32)
    dirs = {fmt: root / fmt for fmt in ("array_record", "tfrecord")}
    for fmt, data_dir in dirs.items():
        prepare(folder, data_dir, fmt)
    return dirs, folder


@pytest.fixture
def data_dir(monkeypatch):
    def use(path):
        monkeypatch.setattr(tfds.core.constants, "DATA_DIR", str(path))
        monkeypatch.setenv("TFDS_DATA_DIR", str(path))
    return use


def test_streamed_and_held_give_the_same_split(prepared, data_dir):
    from clzoo.data import load_split
    from clzoo.data.tfds_images import TfdsImages

    dirs, folder = prepared
    data_dir(dirs["array_record"])
    for split in ("train", "test"):
        streamed = load_split("tfds:clzoo_test_folder", split, stream=True)
        held = load_split("tfds:clzoo_test_folder", split)
        assert isinstance(streamed.images, TfdsImages) and isinstance(held.images, np.ndarray)
        np.testing.assert_array_equal(np.asarray(streamed.images), held.images)
        np.testing.assert_array_equal(streamed.labels, held.labels)
        rows = np.array([5, 0, 3])
        np.testing.assert_array_equal(streamed.images[rows], held.images[rows])  # any order asked
        np.testing.assert_array_equal(np.asarray(streamed.images.subset(rows)), held.images[rows])
        from_folder = load_split(folder, split)  # the same images, in the dataset's own order
        assert sorted(map(bytes, held.images)) == sorted(map(bytes, from_folder.images))
        assert np.bincount(held.labels).tolist() == np.bincount(from_folder.labels).tolist()


def test_the_resume_fingerprint_reads_records_not_pixels_and_is_the_same_held_or_streamed(
        prepared, data_dir, monkeypatch):
    """Hashing a streamed split's pixels decoded it whole, then copied it: 10,000 images of 320 px
    peaked at 6.6 GB against 1.8 GB for 1,000 (benchmarks/train_eval_memory.py --source tfds)."""
    from clzoo.data import load_split
    from clzoo.data.tfds_images import TfdsImages
    from clzoo.train.resume_checks import data_fingerprint

    dirs, _ = prepared
    data_dir(dirs["array_record"])
    held = load_split("tfds:clzoo_test_folder", "train")
    streamed = load_split("tfds:clzoo_test_folder", "train", stream=True)
    test = load_split("tfds:clzoo_test_folder", "test", stream=True)

    def no_decoding(self, image):
        raise AssertionError("the fingerprint decoded an image")

    monkeypatch.setattr(TfdsImages, "_pixels", no_decoding)
    assert data_fingerprint(streamed) == data_fingerprint(held)
    assert data_fingerprint(test) != data_fingerprint(streamed)
    assert streamed.images.subset(np.arange(10)).fingerprint() != streamed.images.fingerprint()


def test_tfrecord_files_are_held_and_refused_as_a_stream_in_one_line(prepared, data_dir):
    from clzoo.data import load_split

    dirs, _ = prepared
    data_dir(dirs["tfrecord"])
    held = load_split("tfds:clzoo_test_folder", "train", stream="auto")
    assert isinstance(held.images, np.ndarray) and held.images.shape == (64, 8, 8, 3)
    with pytest.raises(ValueError, match="ArrayRecord files; tfds:clzoo_test_folder is not"):
        load_split("tfds:clzoo_test_folder", "train", stream=True)


def _recipe(tmp, loading):
    recipe = {"name": "tfds", "data": "tfds:clzoo_test_folder", "data_loading": loading,
              "model": {"encoder": "resnet8", "embedding_dim": 8},
              "views": {"size": 8, "flip": False, "grayscale_p": 0.0},
              "training": {"epochs": 1, "batch_size": 16, "learning_rate": 0.05},
              "eval": {"knn_k": [1], "knn_headline_k": 1, "metrics": ["knn"], "baselines": []}}
    path = tmp / f"{loading}.yaml"
    path.write_text(yaml.safe_dump(recipe))
    return path


@pytest.mark.large
@pytest.mark.backends("jax")
def test_jax_without_tensorflow_trains_on_it_streamed_and_held_alike(prepared, tmp_path):
    dirs, _ = prepared
    env = {**os.environ, "KERAS_BACKEND": "jax", "TFDS_DATA_DIR": str(dirs["array_record"])}
    metrics = {}
    for loading in ("stream", "memory"):
        result = subprocess.run([*NO_TENSORFLOW, "train", str(_recipe(tmp_path, loading)), "--output",
                                 str(tmp_path / loading)], capture_output=True, text=True, env=env,
                                timeout=600)
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]  # 3: TF imported
        assert ("streamed from its files" in result.stdout) == (loading == "stream")
        metrics[loading] = json.loads((tmp_path / loading / "metrics.json").read_text())
    assert metrics["stream"]["final_train_loss"] == pytest.approx(metrics["memory"]["final_train_loss"],
                                                                  rel=1e-6)
    assert metrics["stream"]["knn_top1"] == metrics["memory"]["knn_top1"]


def test_a_streamed_split_refuses_an_index_that_adds_an_axis(prepared, data_dir):
    """Second hostile pass: `images[None]` / `images[True]` ended inside array_record."""
    from clzoo.data import load_split

    dirs, _ = prepared
    data_dir(dirs["array_record"])
    images = load_split("tfds:clzoo_test_folder", "train", stream=True).images
    for key in (None, True, np.zeros((2, 2), int)):
        with pytest.raises(IndexError, match="TfdsImages takes"):
            images[key]
    assert images[-1].shape == (8, 8, 3) and images[...].shape == (64, 8, 8, 3)


@pytest.mark.backends("jax")
def test_a_tfrecord_dataset_without_tensorflow_is_one_line_naming_the_way_out(prepared):
    dirs, _ = prepared
    script = ("from clzoo.data import load_split\n"
              "load_split('tfds:clzoo_test_folder', 'train')\n")
    hide = str(ROOT / "tests" / "hide_tensorflow" / "sitecustomize.py")
    prelude = ("import importlib.util as u\n"
               f"s = u.spec_from_file_location('hide', {hide!r})\n"
               "s.loader.exec_module(u.module_from_spec(s))\n")
    env = {**os.environ, "KERAS_BACKEND": "jax", "TFDS_DATA_DIR": str(dirs["tfrecord"])}
    result = subprocess.run([sys.executable, "-c", prelude + script], capture_output=True, text=True,
                            env=env, timeout=300)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert "prepared in TFRecord files, which TFDS reads with TensorFlow (not installed here)" in last
    assert "--file_format=array_record" in last
