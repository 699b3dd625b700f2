"""Presets: run -> preset -> load round trip, hf:// from an offline cache, dry-run push, refusals."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest
import yaml

import clzoo
from clzoo.presets import PresetError, build_preset, load_preset, push_preset
from clzoo.presets.card import REPOSITORY
from clzoo.presets.format import sha256
from clzoo.registry import Registry

X = np.random.default_rng(0).uniform(size=(3, 32, 32, 3)).astype("float32")


def _run(tmp_path):
    """A minimal clzoo run folder (no training needed to test the format)."""
    run = tmp_path / "run"
    run.mkdir()
    encoder = clzoo.models.get_encoder("resnet10_narrow", name="encoder")
    encoder.save(run / "encoder.keras")
    (run / "recipe.yaml").write_text(yaml.safe_dump(
        {"name": "tiny", "data": "tfds:cifar10", "model": {"architecture": "resnet10_narrow"},
         "loss": {"name": "SINCERELoss", "temperature": 0.1}}))
    (run / "metrics.json").write_text(json.dumps(
        {"knn_top1_by_k": {"k20": 0.5}, "knn_top1": 0.5, "knn_top1_k": 20}))
    return run, encoder


def _rehash(folder):
    from clzoo.presets.format import PRESET_FILES

    (folder / "checksums.json").write_text(json.dumps({f: sha256(folder / f) for f in PRESET_FILES}))


@pytest.mark.backends("tensorflow", "jax", "torch")
def test_round_trip_gives_identical_embeddings(tmp_path):
    run, encoder = _run(tmp_path)
    folder = build_preset(run, tmp_path / "preset", name="tiny")
    loaded = clzoo.presets.Encoder.from_preset(str(folder))
    np.testing.assert_array_equal(loaded.predict(X, verbose=0), encoder.predict(X, verbose=0))
    assert loaded.trainable is False
    card = (folder / "README.md").read_text()
    assert card.startswith("---\nlibrary_name: keras\n") and "model-index" in card
    assert "SINCERE" in card and "value: 50.0" in card
    meta = json.loads((folder / "metadata.json").read_text())
    assert meta["loss"]["name"] == "SINCERELoss" and meta["feature_dim"] == 256
    pre = json.loads((folder / "preprocessing.json").read_text())
    assert pre["image_size"] == [32, 32] and pre["value_range"] == [0.0, 1.0] and len(pre["mean"]) == 3


@pytest.mark.parametrize("name", sorted(json.loads(
    (Path(__file__).parents[2] / "pretrained" / "registry.json").read_text())))
def test_builtin_preset_matches_its_registry(name):
    """The registry's headline figures, loss and feature size are the shipped preset's own."""
    from clzoo.presets import loading

    entry = clzoo.presets.BUILTIN_PRESETS[name]
    meta = json.loads((loading.PRETRAINED / entry["path"] / "metadata.json").read_text())
    assert (meta["loss"]["name"], meta["architecture"], meta["feature_dim"]) == (
        entry["loss"], entry["architecture"], entry["feature_dim"])
    trained = meta["metrics"]["train"]
    assert trained["knn_top1_k"] == 20
    assert round(trained["knn_top1"], 4) == entry["metrics"]["knn_top1_k20"]
    # the probe of `clzoo eval`'s report where the preset was built with one, else train's
    from clzoo.eval.records import RunResult
    from clzoo.presets.card import probe_accuracy

    probe = probe_accuracy(meta) or RunResult.from_summary(trained).probe
    assert round(probe, 4) == entry["metrics"]["probe_top1"]
    from tests.presets.builtin_cards import card_of

    card = (loading.PRETRAINED / entry["path"] / "README.md").read_text()
    assert card == card_of(name, entry), "the card is not its metadata's: run tests/presets/builtin_cards.py"
    assert "```bibtex" in card and "/work/" not in card and "../shared" not in card


@pytest.mark.large
@pytest.mark.parametrize("name", sorted(json.load(
    (Path(__file__).parents[2] / "pretrained" / "retired.json").open())))
def test_a_retired_preset_names_its_replacement(name, tmp_path):
    from tests.test_cli import _run

    replacement = json.loads((Path(__file__).parents[2] / "pretrained" / "retired.json").read_text())[name]
    assert replacement["replacement"] in clzoo.presets.BUILTIN_PRESETS
    match = rf"{name}' was retired.*use '{replacement['replacement']}'"
    for handle in (name, f"hf://clzoo/{name}"):
        with pytest.raises(PresetError, match=match):
            clzoo.presets.Encoder.from_preset(handle)
    # every command that takes a model says so too, in one line, before any data is read
    embed = _run(["embed", name, "--data", "digits", "--output", str(tmp_path / "e.npz")], cwd=tmp_path)
    assert embed.returncode == 2 and len(embed.stderr.strip().splitlines()) == 1
    assert "was retired" in embed.stderr and replacement["replacement"] in embed.stderr


@pytest.mark.large
@pytest.mark.parametrize("name", sorted(json.loads(
    (Path(__file__).parents[2] / "pretrained" / "registry.json").read_text())))
def test_every_builtin_preset_verifies_and_embeds(name):
    encoder = clzoo.presets.Encoder.from_preset(name)  # checks every SHA-256 and the registry pin
    features = encoder.predict(X, verbose=0)
    entry = clzoo.presets.BUILTIN_PRESETS[name]
    assert features.shape == (3, entry["feature_dim"]) and np.all(np.isfinite(features))


@pytest.mark.large
def test_readme_example_runs_offline():
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    code = readme.split("<!-- preset-example -->")[1].split("```python")[1].split("```")[0]
    assert len([line for line in code.strip().splitlines() if line.strip()]) == 3
    exec(compile(code, "README.md", "exec"), {})


@pytest.mark.parametrize("tamper, match", [
    (lambda f: (f / "model.weights.h5").write_bytes((f / "model.weights.h5").read_bytes()[:-100]),
     "model.weights.h5 .* does not match its SHA-256"),
    (lambda f: (f / "config.json").unlink(), "config.json is missing"),
    (lambda f: (f / "checksums.json").unlink(), "checksums.json is missing"),
])
def test_tampered_truncated_or_missing_files_are_refused(tmp_path, tamper, match):
    run, _ = _run(tmp_path)
    folder = build_preset(run, tmp_path / "preset")
    tamper(folder)
    with pytest.raises(PresetError, match=match):
        load_preset(str(folder))


def test_lambda_layer_is_refused_even_with_valid_checksums(tmp_path):
    run, _ = _run(tmp_path)
    folder = build_preset(run, tmp_path / "preset")
    inputs = keras.Input((32, 32, 3))
    evil = keras.Model(inputs, keras.layers.Lambda(lambda x: x * 2)(inputs))
    (folder / "config.json").write_text(json.dumps(keras.saving.serialize_keras_object(evil)))
    _rehash(folder)
    with pytest.raises(PresetError, match="Lambda layer"):
        load_preset(str(folder))


def test_a_config_declaring_huge_images_is_refused_before_it_is_built(tmp_path, monkeypatch):
    """Issue 58 item 7: a preset's config.json could declare any input size and was built before
    any check."""
    run, _ = _run(tmp_path)
    folder = build_preset(run, tmp_path / "preset")
    text = json.dumps(json.loads((folder / "config.json").read_text()))  # one line
    assert "[null, 32, 32, 3]" in text
    (folder / "config.json").write_text(text.replace("[null, 32, 32, 3]", "[null, 100000, 100000, 3]"))
    _rehash(folder)
    import clzoo.presets.loading as loading

    monkeypatch.setattr(loading, "deserialize", lambda *a, **k: pytest.fail("built"))
    with pytest.raises(PresetError, match=r"declares an input of shape \[None, 100000, 100000, 3\]"):
        load_preset(str(folder))


@pytest.mark.parametrize("key, value", [("filters", 3_000_000), ("kernel_size", [2000, 2000]),
                                        ("kernel_size", [41, 41])])  # 41 < 256, the largest dim
def test_a_config_sizing_a_layer_beyond_its_weights_is_refused_before_it_is_built(tmp_path, monkeypatch,
                                                                                 key, value):
    """Issue 72 item 24: a config.json declaring 3,000,000 filters grew RSS by 1.16 GB (a 2000 x 2000
    stem kernel: 3.8 GB) before its PresetError."""
    run, _ = _run(tmp_path)
    folder = build_preset(run, tmp_path / "preset")
    config = json.loads((folder / "config.json").read_text())
    stem = next(layer for layer in config["config"]["layers"] if layer["class_name"] == "Conv2D")
    stem["config"][key] = value
    (folder / "config.json").write_text(json.dumps(config))
    _rehash(folder)
    import clzoo.presets.loading as loading

    monkeypatch.setattr(loading, "deserialize", lambda *a, **k: pytest.fail("built"))
    with pytest.raises(PresetError, match=rf"config.json sets {key} = .*, larger than the arrays in "
                                          r"model.weights.h5 hold \([\d,]+\)"):
        load_preset(str(folder))


def test_unknown_class_is_refused(tmp_path):
    run, _ = _run(tmp_path)
    folder = build_preset(run, tmp_path / "preset")
    config = json.loads((folder / "config.json").read_text())
    config["config"]["layers"][1]["class_name"] = "TotallyUnknownLayer"
    (folder / "config.json").write_text(json.dumps(config))
    _rehash(folder)
    with pytest.raises(PresetError, match="config.json cannot be built.*TotallyUnknownLayer"):
        load_preset(str(folder))


def test_pinned_checksums_of_builtin_presets(tmp_path, monkeypatch):
    from clzoo.presets import loading

    copy = tmp_path / "pretrained" / "p"
    shutil.copytree(loading.PRETRAINED / "nscl_resnet20_cifar10", copy)
    monkeypatch.setattr(loading, "PRETRAINED", tmp_path / "pretrained")
    registry = Registry("preset")
    registry.register("p", lambda: None, path="p", handle="hf://x/p", checksums_sha256="0" * 64)
    monkeypatch.setattr(loading, "PRESETS", registry)
    with pytest.raises(PresetError, match="pinned SHA-256"):
        load_preset("p")


def test_unknown_handle():
    with pytest.raises(PresetError, match="Unknown preset 'nope'"):
        load_preset("nope")


@pytest.mark.large
def test_push_dry_run_writes_the_exact_folder_and_upload_fails_clearly(tmp_path):
    run, _ = _run(tmp_path)
    out = push_preset(run, "hf://someone/tiny", dry_run=tmp_path / "dry")
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["README.md", "checksums.json", "config.json", "metadata.json", "model.weights.h5",
         "preprocessing.json"])
    load_preset(str(out))
    with pytest.raises(PresetError, match="hf://owner/repo"):
        push_preset(run, "someone/tiny", dry_run=tmp_path / "dry2")
    # An unreachable Hub: a closed local port instead of huggingface.co.
    code = ("import sys; from clzoo.presets import push_preset, PresetError\n"
            "try:\n    push_preset(sys.argv[1], 'hf://someone/tiny')\n"
            "except PresetError as e:\n    print('REFUSED', e)\n")
    env = dict(os.environ, HF_ENDPOINT="http://127.0.0.1:9", HF_TOKEN="hf_dummy")
    result = subprocess.run([sys.executable, "-c", code, str(run)], env=env, capture_output=True,
                            text=True, timeout=300)
    assert "REFUSED Could not upload to the Hugging Face Hub" in result.stdout, result.stderr[-2000:]


@pytest.mark.large
def test_hf_handle_loads_from_a_prepopulated_offline_cache(tmp_path):
    run, encoder = _run(tmp_path)
    snapshot = tmp_path / "hf" / "hub" / "models--someone--tiny" / "snapshots" / ("a" * 40)
    build_preset(run, snapshot, name="tiny")
    refs = tmp_path / "hf" / "hub" / "models--someone--tiny" / "refs"
    refs.mkdir(parents=True)
    (refs / "main").write_text("a" * 40)
    np.save(tmp_path / "x.npy", X)
    code = ("import sys, numpy as np, clzoo\n"
            "e = clzoo.presets.Encoder.from_preset('hf://someone/tiny')\n"
            "np.save(sys.argv[1], e.predict(np.load(sys.argv[2]), verbose=0))\n")
    env = dict(os.environ, HF_HOME=str(tmp_path / "hf"), HF_HUB_OFFLINE="1")
    result = subprocess.run([sys.executable, "-c", code, str(tmp_path / "out.npy"),
                             str(tmp_path / "x.npy")], env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), encoder.predict(X, verbose=0))


def test_preset_records_compute_curve_and_test_time_flip(tmp_path):
    from huggingface_hub import ModelCard

    run, encoder = _run(tmp_path)
    recipe = yaml.safe_load((run / "recipe.yaml").read_text())
    recipe["training"] = {"batch_size": 100}
    recipe["eval"] = {"monitor_every": 2, "monitor_memory": 500, "monitor_queries": 100}
    (run / "recipe.yaml").write_text(yaml.safe_dump(recipe))
    metrics = json.loads((run / "metrics.json").read_text())
    metrics.update(steps=30, train_images=1050, fit_seconds=3600.0, devices=["/device:CPU:0"])
    (run / "metrics.json").write_text(json.dumps(metrics))
    (run / "history.jsonl").write_text(
        '{"epoch": 1, "loss": 5.0}\n{"epoch": 2, "loss": 4.0, "knn_top1_k20": 0.61}\n')
    (run / "eval").mkdir()
    (run / "eval" / "metrics.json").write_text(json.dumps({"knn": {"k20": 0.7}}))
    folder = build_preset(run, tmp_path / "preset", name="tiny", cores=2, test_time_flip=True)
    meta = json.loads((folder / "metadata.json").read_text())
    assert meta["compute"]["images_seen"] == 3000 and meta["compute"]["cpu_hours"] == 2.0
    assert meta["compute"]["views_seen"] == 6000  # the recipe's default: 2 views
    assert [r["images_seen"] for r in meta["curve"]["rows"]] == [1000, 2000]
    assert meta["test_time_flip"] is True
    card = ModelCard.load(folder / "README.md")
    assert card.data.pipeline_tag == "image-feature-extraction"
    assert "| 2 | 2,000 | 4.0000 | 61.00% |" in card.text and "(2.00 CPU-hours)" in card.text
    assert "mirror image" in card.text and "k20: 70.00%" in card.text
    loaded = clzoo.presets.Encoder.from_preset(str(folder))
    np.testing.assert_allclose(
        loaded.predict(X, verbose=0),
        (encoder.predict(X, verbose=0) + encoder.predict(X[:, :, ::-1].copy(), verbose=0)) / 2,
        rtol=1e-5, atol=1e-6)


@pytest.mark.large
def test_a_run_that_shipped_test_time_views_says_its_numbers_are_of_them(tmp_path):
    from huggingface_hub import ModelCard

    run, encoder = _run(tmp_path)
    shipped = clzoo.models.test_time_averaged(encoder, translate=1)
    shipped.save(run / "encoder.keras")  # what clzoo train saves with these recipe keys
    recipe = yaml.safe_load((run / "recipe.yaml").read_text())
    recipe["model"].update(test_time_flip=True, test_time_translate=1)
    (run / "recipe.yaml").write_text(yaml.safe_dump(recipe))
    with pytest.raises(PresetError, match="already averages its test-time views"):
        build_preset(run, tmp_path / "twice", test_time_flip=True)
    folder = build_preset(run, tmp_path / "preset", name="tiny")
    meta = json.loads((folder / "metadata.json").read_text())
    assert (meta["test_time_flip"], meta["test_time_translate"], meta["test_time_measured"]) == (
        True, 1, True)
    text = ModelCard.load(folder / "README.md").text
    assert "6 views of each image" in text and "measured on these shipped features" in text
    assert "weighting `cosine`" in text
    loaded = clzoo.presets.Encoder.from_preset(str(folder))
    np.testing.assert_allclose(loaded.predict(X, verbose=0), shipped.predict(X, verbose=0),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.backends("tensorflow", "jax", "torch")
@pytest.mark.parametrize("name", sorted(json.loads(
    (Path(__file__).parents[2] / "pretrained" / "registry.json").read_text())))
def test_every_builtin_preset_gives_the_same_features_on_every_backend(name):
    from tests.presets.builtin_features import HERE, images

    reference = json.loads((HERE / "builtin_features.json").read_text())
    assert set(reference) == set(clzoo.presets.BUILTIN_PRESETS), "re-run builtin_features.py"
    features = clzoo.presets.Encoder.from_preset(name).predict(images(), verbose=0)
    # written on TensorFlow; the other backends' convolutions round differently (float32)
    np.testing.assert_allclose(features, np.asarray(reference[name]), rtol=1e-4, atol=1e-4)


def test_preset_metadata_and_card_hold_no_path_of_the_training_machine(tmp_path):
    run, _ = _run(tmp_path)
    data = tmp_path / "machine" / "datasets" / "cifar10"
    recipe = yaml.safe_load((run / "recipe.yaml").read_text())
    recipe["data"] = str(data)
    (run / "recipe.yaml").write_text(yaml.safe_dump(recipe))
    (run / "eval").mkdir()
    (run / "eval" / "metrics.json").write_text(json.dumps({
        "title": f"clzoo evaluation of {run / 'encoder.keras'} on {data}", "data": str(data),
        "model": str(run / "encoder.keras"), "knn": {"k20": 0.7}}))
    folder = build_preset(run, tmp_path / "preset", name="tiny")
    for file in ("metadata.json", "README.md"):
        text = (folder / file).read_text()
        assert str(tmp_path) not in text, file
    meta = json.loads((folder / "metadata.json").read_text())
    assert meta["dataset"] == "cifar10" and meta["recipe"]["data"] == "cifar10"
    assert meta["metrics"]["eval"]["model"] == "encoder.keras"
    assert "value: 50.0" in (folder / "README.md").read_text()  # CIFAR-10's model-index kept


def test_card_states_use_limits_input_contract_and_jpeg_provenance(tmp_path):
    from PIL import Image

    run, _ = _run(tmp_path)
    data = tmp_path / "cifar10"
    for split in ("train", "test"):
        (data / split / "cat").mkdir(parents=True)
        Image.new("RGB", (32, 32)).save(data / split / "cat" / "0.jpg")
    recipe = yaml.safe_load((run / "recipe.yaml").read_text())
    recipe["data"] = str(data)
    (run / "recipe.yaml").write_text(yaml.safe_dump(recipe))
    folder = build_preset(run, tmp_path / "preset", name="tiny")
    meta = json.loads((folder / "metadata.json").read_text())
    assert meta["data_provenance"]["file_types"] == [".jpg"]
    card = (folder / "README.md").read_text()
    assert "## Intended use and limitations" in card
    assert "divides uint8 pixels by 255 inside the model" in card
    assert "uint8 or float in [0, 1]" in card
    assert "stored as .jpg files; JPEG is lossy" in card and "original release" not in card
    assert 'pip install \\"clzoo[hub] @ git+https://github.com/clzoo/clzoo\\"' not in card
    assert 'pip install "clzoo[hub] @ git+https://github.com/clzoo/clzoo"' in card


def test_the_card_counts_the_monitor_images_the_run_had(tmp_path):
    """A 1,000-image run never used 10,000 training images as the monitor's memory (issue 43 item 5)."""
    from clzoo.presets.format import training_curve

    (tmp_path / "history.jsonl").write_text('{"epoch": 1, "loss": 2.0, "knn_top1_k20": 0.5}\n')
    from clzoo.eval.records import RunResult
    from clzoo.train.recipe import load_recipe

    recipe = load_recipe(None, [("training.batch_size", 100), ("eval.monitor_every", 1),
                                ("eval.monitor_memory", 10000), ("eval.monitor_queries", 2000)])
    result = RunResult.from_summary({"knn_top1": 0.5, "knn_top1_k": 20, "knn_top1_by_k": {"k20": 0.5},
                                     "train_images": 1000})
    curve = training_curve(tmp_path, recipe, result, test_images=300)
    assert curve["monitor"] == {"monitor_every": 1, "monitor_memory": 1000, "monitor_queries": 300}
    assert curve["rows"] == [{"epoch": 1, "images_seen": 1000, "loss": 2.0, "knn_top1_k20": 0.5}]


def test_a_preset_without_its_test_time_views_is_its_one_view_encoder():
    """Issue 57 item 3: `test_time=False` (and `clzoo eval --bare-encoder`) gives the encoder the
    airbench preset averages over 6 views, once per image, sharing its weights."""
    from clzoo.models import bare_encoder, flip_averaged, get_encoder, test_time_averaged

    full = clzoo.presets.Encoder.from_preset("sincere_airbench_cifar10")
    bare = clzoo.presets.Encoder.from_preset("sincere_airbench_cifar10", test_time=False)
    inner = full.get_layer("mirror").get_layer("encoder")
    np.testing.assert_allclose(bare.predict(X, verbose=0), inner.predict(X, verbose=0), rtol=1e-5, atol=1e-6)
    assert not np.allclose(bare.predict(X, verbose=0), full.predict(X, verbose=0), atol=1e-3)
    pixels = (X * 255).round().astype("uint8")  # the encoder contract holds for the bare one too
    np.testing.assert_allclose(bare.predict(pixels, verbose=0), bare.predict(pixels / np.float32(255),
                                                                             verbose=0), rtol=1e-5, atol=1e-5)
    resnet = get_encoder("resnet8")
    assert bare_encoder(flip_averaged(resnet)) is resnet and bare_encoder(resnet) is resnet
    assert bare_encoder(test_time_averaged(resnet, 2)) is resnet
    with pytest.raises(ValueError, match="`test_time` must be True or False"):
        load_preset("sincere_airbench_cifar10", test_time="no")


def test_eval_bare_encoder_labels_its_report(tmp_path):
    from clzoo import cli

    out = tmp_path / "bare"
    assert cli.main(["eval", "sincere_airbench_cifar10", "--data", "digits", "--image-size", "32",
                     "--metrics", "knn", "--bare-encoder", "--output", str(out)]) == 0
    report = (out / "report.md").read_text()
    assert "sincere_airbench_cifar10 (bare encoder: test-time views off)" in report
    with pytest.raises(SystemExit):  # argparse: the flag is for eval, embed and transfer only
        cli.main(["export", "sincere_airbench_cifar10", "--bare-encoder", "--output", str(tmp_path / "x")])


def test_the_card_snippet_runs_as_written(tmp_path, monkeypatch):
    """Issue 57 item 5: the card's snippet left `images` undefined. Run as written (the Hub handle
    swapped for the built-in name: no network here) on a PNG named as in the snippet."""
    from PIL import Image

    card = (Path(clzoo.__file__).parent / "presets" / "builtin" / "sincere_airbench_cifar10"
            / "README.md").read_text()
    code = card.split("## Use", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    code = code.replace('"hf://clzoo/sincere_airbench_cifar10"', '"sincere_airbench_cifar10"')
    monkeypatch.chdir(tmp_path)
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (50, 40, 3), np.uint8)).save("image.png")
    namespace = {}
    exec(compile(code, "card", "exec"), namespace)
    assert namespace["images"].shape == (1, 32, 32, 3) and namespace["features"].shape == (1, 256)
    assert "keras.saving" in card and "only after `import clzoo`" in card
    assert "benchmarks/README.md" not in card.replace(f"{REPOSITORY}/blob/main/benchmarks/README.md", "")


def test_a_users_jpeg_folder_is_not_called_a_re_encoding_of_a_release():
    from clzoo.presets.card import _limitations

    lines = "\n".join(_limitations({"dataset": "/home/me/cifar10", "data_provenance": {
        "file_types": [".jpg"], "train_images": 900}}))
    assert "an image folder named CIFAR-10 (900 training images stored as .jpg files" in lines
    assert "original release" not in lines


def test_every_registry_recipe_names_a_file_of_recipes():
    """Issue 57 item 7: the registry named recipes/sincere_cifar10_small.yaml, which does not exist."""
    root = Path(__file__).parents[2]
    registry = json.loads((root / "clzoo" / "presets" / "builtin" / "registry.json").read_text())
    for name, entry in registry.items():
        if "recipe" in entry:
            path = entry["recipe"].split()[0]
            assert path.startswith("recipes/") and (root / path).is_file(), (name, entry["recipe"])


def test_a_run_is_read_through_its_typed_records_before_its_model(tmp_path, monkeypatch):
    """Issue 60 item 4: `build_preset` reads the run as `load_recipe` / `read_run` do, so a damaged
    record is one line naming the file and key, refused before the encoder is loaded."""
    import clzoo.saving

    run, _ = _run(tmp_path)
    loads = []
    monkeypatch.setattr(clzoo.saving, "load_model", lambda *a, **k: loads.append(a))
    (run / "recipe.yaml").write_text("loss:\n  name: SINCERELoss\n  temperature: -1\n")
    with pytest.raises(PresetError, match=r"cannot become a preset: .*recipe.yaml.*temperature"):
        build_preset(run, tmp_path / "preset")
    (run / "recipe.yaml").write_text("name: tiny\n")
    (run / "metrics.json").write_text(json.dumps({"knn_top1": 0.5, "knn_top1_k": "20",
                                                  "knn_top1_by_k": {"k20": 0.5}}))
    with pytest.raises(PresetError, match="'knn_top1_k' must be an integer"):
        build_preset(run, tmp_path / "preset")
    assert loads == [] and not (tmp_path / "preset").exists()


def test_the_compute_counts_the_view_recipes_own_views(tmp_path):
    """An airbench recipe without `views.views` trains one view per image (`BatchViewConfig`); the
    untyped reader took the dict's absent key for 2 and doubled the views seen."""
    from clzoo.eval.records import RunResult
    from clzoo.presets.format import training_compute
    from clzoo.train.recipe import load_recipe

    recipe = load_recipe(None, [("views", {"recipe": "airbench"}), ("training.batch_size", 10)])
    result = RunResult.from_summary({"knn_top1": 0.5, "knn_top1_k": 20, "knn_top1_by_k": {"k20": 0.5},
                                     "steps": 7, "fit_seconds": 3.0})
    compute = training_compute(tmp_path, recipe, result, cores=2)
    assert (compute["images_seen"], compute["views_seen"], compute["cpu_hours"]) == (70, 70, 0.0)


@pytest.mark.large
@pytest.mark.backends("tensorflow", "jax", "torch")
@pytest.mark.parametrize("name", sorted(clzoo.presets.Encoder.presets()))
def test_keras_load_model_of_a_builtin_preset_keeps_the_input_contract(name):
    """Issue 69 item 1: `import clzoo; keras.saving.load_model(<preset folder>)`, as every card tells
    Keras and Hub users, gave a plain Functional for two built-in presets: uint8 pixels taken as
    0-255 floats (features off by 2,290). The folder's config is clzoo's ImageEncoder now."""
    from clzoo.presets.loading import resolve_preset

    folder = resolve_preset(name)[0]
    pixels = np.random.default_rng(0).integers(0, 256, (2, *X.shape[1:]), dtype=np.uint8)
    model = keras.saving.load_model(folder)
    assert isinstance(model, clzoo.models.ImageEncoder)
    np.testing.assert_allclose(model.predict(pixels, verbose=0),
                               clzoo.presets.Encoder.from_preset(name).predict(pixels, verbose=0),
                               rtol=1e-5, atol=1e-5)
