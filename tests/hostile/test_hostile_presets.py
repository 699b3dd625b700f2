"""Hostile preset folders and handles: every refusal is a `PresetError` naming the file or handle."""

import json
import os
import shutil
import sys
import types

import numpy as np
import pytest
import yaml

import clzoo
from clzoo.presets import PresetError, build_preset, load_preset, loading, parse_hf_handle
from clzoo.presets.format import PRESET_FILES, sha256
from clzoo.registry import Registry


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """One small preset folder, built once; tests copy it."""
    root = tmp_path_factory.mktemp("built")
    run = root / "run"
    run.mkdir()
    clzoo.models.get_encoder("resnet10_narrow", name="encoder").save(run / "encoder.keras")
    (run / "recipe.yaml").write_text(yaml.safe_dump({"name": "t", "data": "x", "loss": {}}))
    # what every finished run records (build_preset reads it as a RunResult)
    (run / "metrics.json").write_text(json.dumps({"knn_top1": 0.5, "knn_top1_k": 20,
                                                  "knn_top1_by_k": {"k20": 0.5}}))
    return build_preset(run, root / "preset", name="t")


@pytest.fixture
def preset(built, tmp_path):
    return shutil.copytree(built, tmp_path / "preset")


def _write_checksums(folder, listing):
    (folder / "checksums.json").write_text(json.dumps(listing))


def _valid_listing(folder):
    return {f: sha256(folder / f) for f in PRESET_FILES}


@pytest.mark.parametrize("extra", ["../outside.txt", "/etc/passwd", "sub/config.json", "..",
                                   "config.json/../config.json", "C:\\\\x", "extra.txt", "",
                                   "model.weights.h5\x00", "./config.json"])
def test_checksums_may_name_only_the_presets_own_files(preset, extra):
    listing = _valid_listing(preset)
    listing[extra] = "0" * 64
    _write_checksums(preset, listing)
    with pytest.raises(PresetError, match=r"checksums.json names .*not a preset file"):
        load_preset(str(preset))


@pytest.mark.parametrize("digest", ["zz", 123, None, ["a"], "A" * 64, "0" * 63])
def test_checksum_values_must_be_sha256_hex(preset, digest):
    listing = _valid_listing(preset)
    listing["config.json"] = digest
    _write_checksums(preset, listing)
    with pytest.raises(PresetError, match=r"checksums.json gives config.json a checksum that is not"):
        load_preset(str(preset))


MALFORMED = {
    "list": (b"[1, 2]", r"must hold a JSON object.*list"),
    "string": (b'"config.json"', r"must hold a JSON object.*str"),
    "null": (b"null", r"must hold a JSON object.*NoneType"),
    "binary": (bytes(range(256)) * 4, r"not UTF-8 text"),
    "not_json": (b"{config.json: 1", r"not valid JSON"),
    "empty": (b"", r"not valid JSON"),
    "deep_list": (b"[" * 200000 + b"]" * 200000, r"not valid JSON|nested more than"),
    "deep_dict": (b'{"a":' * 100 + b"1" + b"}" * 100, r"nested more than 64 levels"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
@pytest.mark.parametrize("target", ["checksums.json", "config.json"])
def test_malformed_json_is_a_preset_error_naming_the_file(preset, target, case):
    content, match = MALFORMED[case]
    (preset / target).write_bytes(content)
    if target == "config.json":
        _write_checksums(preset, _valid_listing(preset))
    if case == "deep_list" and target == "checksums.json" and len(content) > 64 << 10:
        match = r"more than the 65536 allowed"
    with pytest.raises(PresetError, match=rf"{target}.*({match})"):
        load_preset(str(preset))


def test_oversized_checksums_is_refused_before_parsing(preset):
    (preset / "checksums.json").write_text(json.dumps({"pad": "x" * (70 << 10)}))
    with pytest.raises(PresetError, match=r"checksums.json is \d+ bytes, more than the 65536"):
        load_preset(str(preset))


@pytest.mark.parametrize("link", ["outside", "dangling", "loop", "checksums"])
def test_symbolic_links_are_refused_in_a_local_preset(preset, tmp_path, link):
    name = "checksums.json" if link == "checksums" else "config.json"
    target = {"outside": tmp_path / "elsewhere.json", "dangling": tmp_path / "missing.json",
              "loop": preset / name, "checksums": tmp_path / "elsewhere.json"}[link]
    if link in ("outside", "checksums"):
        shutil.copy(preset / name, target)
    (preset / name).unlink()
    os.symlink(target, preset / name)
    with pytest.raises(PresetError, match=rf"{name}.* symbolic link"):
        load_preset(str(preset))


@pytest.mark.parametrize("handle", ["hf://", "hf://owner", "hf://a/b/c", "hf://../b", "hf://a/..",
                                    "hf://a/b@", "hf://a/b@ bad", "hf://a/b@../x", "hf://a b/c",
                                    "hf:///etc/passwd"])
def test_malformed_hf_handles_are_refused(handle):
    with pytest.raises(PresetError, match=r"hf://owner/repo|revision"):
        load_preset(handle)


@pytest.fixture
def fake_hub(monkeypatch, preset):
    """`huggingface_hub.snapshot_download` that records its arguments and returns `preset`."""
    calls = []

    def snapshot_download(repo_id, revision=None, **kwargs):
        calls.append((repo_id, revision))
        return str(preset)

    monkeypatch.setitem(sys.modules, "huggingface_hub", _hub_module(snapshot_download))
    return calls


COMMIT = "f" * 40  # the commit the stand-in Hub resolves every revision to


def _hub_module(snapshot_download, sizes=None, offline=False):
    """A stand-in for `huggingface_hub`: `snapshot_download`, and an `HfApi` whose `model_info`
    resolves a revision to `COMMIT` and lists its files with `sizes` (`{name: bytes}`, plus a
    file no preset has; none: unreachable)."""

    class HfApi:
        def model_info(self, repo_id, revision=None, files_metadata=False):
            if sizes is None:
                raise ConnectionError("no network")
            assert files_metadata  # sizes come only with the files' metadata
            files = {**sizes, "big_unrelated_file.bin": 50 << 30}
            return types.SimpleNamespace(sha=COMMIT, siblings=[
                types.SimpleNamespace(rfilename=name, size=size) for name, size in files.items()])

    return types.SimpleNamespace(snapshot_download=snapshot_download, HfApi=HfApi,
                                 constants=types.SimpleNamespace(HF_HUB_OFFLINE=offline))


@pytest.mark.parametrize("handle, revision", [("hf://someone/tiny@v1.0", "v1.0"),
                                              ("hf://someone/tiny@" + "a" * 40, "a" * 40),
                                              ("hf://someone/tiny@refs/pr/3", "refs/pr/3"),
                                              ("hf://someone/tiny", None)])
def test_hf_revision_is_passed_to_snapshot_download(fake_hub, handle, revision):
    assert load_preset(handle) is not None
    assert fake_hub == [("someone/tiny", revision)]
    assert parse_hf_handle(handle) == ("someone/tiny", revision)


def _pin(monkeypatch, preset, checksums_sha256, revision="c0ffee"):
    registry = Registry("preset")
    registry.register("ours", lambda: None, handle="hf://clzoo/ours", path="not-shipped",
                      revision=revision, checksums_sha256=checksums_sha256)
    monkeypatch.setattr(loading, "PRESETS", registry)


@pytest.mark.parametrize("handle", ["ours", "hf://clzoo/ours"])
def test_registry_hf_handles_are_pinned_like_the_builtin_name(fake_hub, monkeypatch, preset, handle):
    _pin(monkeypatch, preset, sha256(preset / "checksums.json"))
    load_preset(handle)
    assert fake_hub == [("clzoo/ours", "c0ffee")]
    _pin(monkeypatch, preset, "0" * 64)
    with pytest.raises(PresetError, match=r"checksums.json does not match the registry's pinned"):
        load_preset(handle)


def test_registry_repo_at_another_revision_is_still_sha_pinned(fake_hub, monkeypatch, preset):
    _pin(monkeypatch, preset, "0" * 64)
    with pytest.raises(PresetError, match=r"pinned SHA-256"):
        load_preset("hf://clzoo/ours@main")
    assert fake_hub == [("clzoo/ours", "main")]


def test_hub_cache_links_may_point_only_into_the_repo_cache(monkeypatch, preset, tmp_path):
    repo = tmp_path / "hub" / "models--someone--tiny"
    snapshot, blobs = repo / "snapshots" / ("b" * 40), repo / "blobs"
    snapshot.mkdir(parents=True)
    blobs.mkdir()
    for name in [*PRESET_FILES, "checksums.json"]:
        shutil.copy(preset / name, blobs / name)
        os.symlink(blobs / name, snapshot / name)
    monkeypatch.setitem(sys.modules, "huggingface_hub", _hub_module(
        lambda repo_id, revision=None, allow_patterns=None: str(snapshot)))
    load_preset("hf://someone/tiny")  # the Hub cache's own links are fine
    (snapshot / "config.json").unlink()
    os.symlink(preset / "config.json", snapshot / "config.json")  # outside the repo's cache
    with pytest.raises(PresetError, match=r"config.json .* symbolic link leading outside"):
        load_preset("hf://someone/tiny")


def test_trainable_is_offered_and_frozen_stays_the_default(preset):
    assert load_preset(str(preset)).trainable is False
    model = clzoo.presets.Encoder.from_preset(str(preset), trainable=True)
    assert model.trainable and len(model.trainable_weights) > 0
    x = np.zeros((1, 32, 32, 3), "float32")
    assert model.predict(x, verbose=0).shape[0] == 1
    with pytest.raises(ValueError, match=r"`trainable` must be True or False"):
        load_preset(str(preset), trainable="yes")


def test_unknown_builtin_name_suggests_the_closest():
    with pytest.raises(PresetError, match=r"Unknown preset 'nscl_resnet20_cifar1'.*Did you mean "
                                          r"'nscl_resnet20_cifar10'"):
        load_preset("nscl_resnet20_cifar1")


def test_presets_registry_backs_builtin_presets():
    from clzoo.presets import BUILTIN_PRESETS, PRESETS

    on_disk = json.loads(loading.REGISTRY.read_text())
    assert len(on_disk) >= 4 and list(BUILTIN_PRESETS) == PRESETS.list() == list(on_disk)
    for name in PRESETS:
        assert PRESETS.entry(name).metadata == BUILTIN_PRESETS[name] == on_disk[name]
        assert PRESETS.get(name).args == (name,) and PRESETS.get(name).func is load_preset
        assert sha256(loading.PRETRAINED / on_disk[name]["path"] / "checksums.json") \
            == on_disk[name]["checksums_sha256"]


def _sizes(preset):
    return {name: (preset / name).stat().st_size for name in [*PRESET_FILES, "checksums.json"]}


def test_only_the_preset_files_are_fetched_and_their_sizes_are_checked_first(monkeypatch, preset):
    fetched = []

    def snapshot_download(repo_id, revision=None, allow_patterns=None):
        fetched.append((revision, sorted(allow_patterns)))
        return str(preset)

    monkeypatch.setitem(sys.modules, "huggingface_hub", _hub_module(snapshot_download, _sizes(preset)))
    load_preset("hf://someone/tiny@main")
    # nothing else in the repo; and the commit whose sizes were checked, not the branch, which a
    # push may move between the check and the fetch
    assert fetched == [(COMMIT, sorted([*PRESET_FILES, "checksums.json"]))]
    total = sum(_sizes(preset).values())
    monkeypatch.setenv("CLZOO_MAX_PRESET_DOWNLOAD_BYTES", str(total - 1))
    with pytest.raises(PresetError, match=rf"{total:,} bytes, more than the download ceiling of "
                                          rf"{total - 1:,}.*nothing was downloaded"):
        load_preset("hf://someone/tiny")
    assert len(fetched) == 1
    for value in ("lots", "²", "-5", "0"):
        monkeypatch.setenv("CLZOO_MAX_PRESET_DOWNLOAD_BYTES", value)
        with pytest.raises(PresetError, match="CLZOO_MAX_PRESET_DOWNLOAD_BYTES must be a positive"):
            load_preset("hf://someone/tiny")


def test_a_file_over_its_cap_is_refused_before_download(monkeypatch, preset):
    huge = {**_sizes(preset), "model.weights.h5": 9 << 30}
    hub = _hub_module(lambda *a, **k: pytest.fail("downloaded"), huge)
    monkeypatch.setitem(sys.modules, "huggingface_hub", hub)
    with pytest.raises(PresetError, match=r"model.weights.h5 is 9,663,676,416 bytes, more than"):
        load_preset("hf://someone/tiny")


@pytest.mark.parametrize("offline", [True, False])
def test_offline_or_unreachable_hub_still_loads_from_the_cache(monkeypatch, preset, offline):
    hub = _hub_module(lambda repo_id, revision=None, allow_patterns=None: str(preset),
                      sizes=None, offline=offline)
    monkeypatch.setitem(sys.modules, "huggingface_hub", hub)
    monkeypatch.setenv("CLZOO_MAX_PRESET_DOWNLOAD_BYTES", "1")  # sizes unknown: the disk caps hold
    assert load_preset("hf://someone/tiny") is not None


def test_a_small_weights_file_declaring_a_huge_array_is_refused_before_reading(preset):
    import h5py

    with h5py.File(preset / "model.weights.h5", "a") as weights:  # a few KB on disk, 40 GB declared
        weights.create_dataset("layers/extra/vars/0", shape=(100_000, 100_000), dtype="float32",
                               chunks=(1, 1000), compression="gzip")
    assert (preset / "model.weights.h5").stat().st_size < 10 << 20
    _write_checksums(preset, _valid_listing(preset))
    with pytest.raises(PresetError, match=r"layers/extra/vars/0 declares shape \(100000, 100000\) "
                                          r"\(40,000,000,000 bytes\), larger than the model's largest"):
        load_preset(str(preset))


def test_a_weights_file_declaring_more_arrays_than_the_model_is_refused(preset):
    import h5py

    with h5py.File(preset / "model.weights.h5", "a") as weights:
        for i in range(200):
            weights.create_dataset(f"padding/{i}", shape=(64, 64), dtype="float32")
    _write_checksums(preset, _valid_listing(preset))
    with pytest.raises(PresetError, match=r"bytes of arrays, more than the model's"):
        load_preset(str(preset))


def test_a_weights_file_with_optimizer_state_still_loads(tmp_path):
    import keras

    from clzoo.presets.weights_check import check_weights_file

    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    model.compile(optimizer="adam", loss="mse")
    model.fit(np.ones((8, 4)), np.zeros((8, 3)), verbose=0)
    model.save_weights(tmp_path / "w.weights.h5")  # holds optimizer/vars too
    fresh = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    check_weights_file(tmp_path / "w.weights.h5", fresh)
    fresh.load_weights(tmp_path / "w.weights.h5")


@pytest.mark.parametrize("kind", ["soft", "external"])
def test_links_in_a_weights_file_are_refused(preset, kind, tmp_path):
    import h5py

    with h5py.File(tmp_path / "elsewhere.h5", "w") as other:
        other.create_dataset("bomb", shape=(100_000, 100_000), dtype="float32", chunks=(1, 1000))
    with h5py.File(preset / "model.weights.h5", "a") as weights:
        first = next(name for name in weights["layers"])
        weights[f"layers/{first}/link"] = (h5py.SoftLink("/layers") if kind == "soft"
                                           else h5py.ExternalLink(str(tmp_path / "elsewhere.h5"), "/bomb"))
    _write_checksums(preset, _valid_listing(preset))
    with pytest.raises(PresetError, match=r"Link; weights files hold their arrays themselves"):
        load_preset(str(preset))
