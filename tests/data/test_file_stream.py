"""Data larger than memory: a split left in its files (`FileImages`) lists and checks like a decoded
one, every stream over it yields the in-memory stream's batches (resumed too), unreadable files in
the middle of an epoch are named or skipped, and the memory budget that makes `auto` stream."""

import warnings

import keras
import numpy as np
import pytest
from PIL import Image

from clzoo.data import BatchViewConfig, ViewConfig, data_source
from clzoo.data.file_images import FileImages
from clzoo.data.memory_budget import choose_loading, memory_budget, parse_bytes

pytestmark = pytest.mark.backends("tensorflow", "jax", "torch")  # every lane (tests/conftest.py)


def _jpeg_folder(root, classes=3, per_class=6, seed=0):
    """JPEGs of mixed sizes (40-90 px), as an ImageNet folder holds them; returns `root`."""
    rng = np.random.default_rng(seed)
    for split in ("train", "test"):
        for c in range(classes):
            (root / split / f"class{c}").mkdir(parents=True)
            for i in range(per_class):
                height, width = rng.integers(40, 90, 2)
                pixels = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
                Image.fromarray(pixels).save(root / split / f"class{c}" / f"{i}.jpg")
    return root


def _arrays(stream):
    return [(keras.ops.convert_to_numpy(x), keras.ops.convert_to_numpy(y)) for x, y in stream]


def _both(tmp_path, size=32):
    source = data_source(str(_jpeg_folder(tmp_path / "data")), image_size=size)
    return source.load("train"), source.load("train", stream=True)


def test_a_file_backed_split_lists_like_the_decoded_one_and_decodes_the_same_pixels(tmp_path):
    held, streamed = _both(tmp_path)
    assert isinstance(streamed.images, FileImages) and not isinstance(held.images, FileImages)
    assert streamed.class_names == held.class_names and streamed.paths == held.paths
    np.testing.assert_array_equal(streamed.labels, held.labels)
    assert streamed.images.shape == held.images.shape and streamed.images.nbytes == held.images.nbytes
    np.testing.assert_array_equal(streamed.images[[5, 0, 17]], held.images[[5, 0, 17]])
    np.testing.assert_array_equal(streamed.images[3:7], held.images[3:7])
    np.testing.assert_array_equal(np.asarray(streamed.images), held.images)


def test_the_listing_checks_hold_before_anything_is_decoded(tmp_path):
    root = _jpeg_folder(tmp_path / "data")
    (root / "train" / "class0" / "nested").mkdir()
    with pytest.raises(ValueError, match="is a folder inside the class folder"):
        data_source(str(root), image_size=32).load("train", stream=True)
    (root / "train" / "class0" / "nested").rmdir()
    (root / "train" / "class1" / "empty.jpg").write_bytes(b"")
    with pytest.raises(ValueError, match="empty file"):
        data_source(str(root), image_size=32).load("train", stream=True)
    with pytest.raises(ValueError, match="streaming reads image folders and tfds splits"):
        data_source("digits").load("train", stream=True)


def test_images_of_several_sizes_without_an_image_size_are_refused_naming_both(tmp_path):
    images = FileImages(sorted(str(p) for p in _jpeg_folder(tmp_path / "d").rglob("train/*/*.jpg")))
    with pytest.raises(ValueError, match=r"Images differ in size: .*0\.jpg is \d+x\d+, .* is \d+x\d+"):
        images[np.arange(len(images))]


@pytest.mark.parametrize("views", [ViewConfig(size=24), BatchViewConfig(views=2, size=32, translate=2)],
                         ids=["per_image", "airbench"])
def test_every_stream_from_files_gives_the_in_memory_batches_and_resumes(tmp_path, views):
    held, streamed = _both(tmp_path)
    if keras.backend.backend() == "tensorflow":
        from clzoo.data.tf_data_stream import batches as make
    else:
        from clzoo.data.device_stream import device_batches as make
    whole = _arrays(make(held, "views", 4, 3, 2, views=views))
    assert len(whole) == 8
    for start in (0, 3, 6):
        resumed = _arrays(make(streamed, "views", 4, 3, 2, start, views=views))
        assert len(resumed) == len(whole) - start
        for (x, y), (x0, y0) in zip(resumed, whole[start:], strict=True):
            np.testing.assert_array_equal(x, x0)
            np.testing.assert_array_equal(y, y0)


@pytest.mark.backends("tensorflow")
@pytest.mark.parametrize("kind", ["soft_targets", "balanced"])
def test_the_tf_data_kinds_from_files_give_the_in_memory_batches(tmp_path, kind):
    from clzoo.data.tf_data_stream import batches

    held, streamed = _both(tmp_path)
    extra = {"samples_per_class": 2} if kind == "balanced" else {}
    views = ViewConfig(size=24, views=1 if kind == "soft_targets" else 2)
    for (x, y), (x0, y0) in zip(_arrays(batches(streamed, kind, 4, 1, 2, 1, views=views, **extra)),
                                _arrays(batches(held, kind, 4, 1, 2, 1, views=views, **extra)),
                                strict=True):
        np.testing.assert_array_equal(x, x0)
        np.testing.assert_array_equal(y, y0)


def _corrupt(tmp_path):
    root = _jpeg_folder(tmp_path / "data")
    bad = root / "train" / "class1" / "3.jpg"
    bad.write_bytes(bad.read_bytes()[:40])  # a JPEG cut off after its header
    return root, bad


def test_a_corrupt_jpeg_met_in_the_middle_of_an_epoch_is_named(tmp_path):
    root, bad = _corrupt(tmp_path)
    split = data_source(str(root), image_size=32).load("train", stream=True)  # listed: not decoded
    with pytest.raises(ValueError, match=f"Cannot read image {bad}"):
        split.images[np.arange(len(split))]


def test_a_corrupt_jpeg_is_replaced_and_counted_when_skipping(tmp_path):
    root, bad = _corrupt(tmp_path)
    split = data_source(str(root), image_size=32).load("train", "skip", stream=True)
    row = split.paths.index(str(bad))
    with pytest.warns(UserWarning, match="Skipped unreadable image"):
        pixels = split.images[[row]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once per file
        np.testing.assert_array_equal(split.images[[row]], pixels)
    np.testing.assert_array_equal(pixels[0], split.images[row + 1])  # the next readable file
    assert split.images.skipped == {str(bad)}


def test_the_budget_reads_the_variable_then_a_cgroup_limit_then_meminfo(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal: 16000000 kB\nMemAvailable:    8000000 kB\n")
    v2 = tmp_path / "v2"
    v2.mkdir()
    (v2 / "memory.max").write_text("4000000000\n")
    v1 = tmp_path / "v1"
    (v1 / "memory").mkdir(parents=True)
    (v1 / "memory" / "memory.limit_in_bytes").write_text("9223372036854771712\n")  # v1: no limit
    nowhere = tmp_path / "no-membership"
    assert memory_budget({}, v2, meminfo, nowhere) == (2_000_000_000, "half of the cgroup limit 3.7 GiB")
    assert memory_budget({}, v1, meminfo, nowhere) == (4_096_000_000, "half of MemAvailable 7.6 GiB")
    (v2 / "memory.max").write_text("max\n")
    assert memory_budget({}, v2, meminfo, nowhere)[0] == 4_096_000_000
    assert memory_budget({"CLZOO_MEMORY_BUDGET": "1.5GiB"}, v2, meminfo)[0] == 1610612736
    with pytest.raises(ValueError, match="CLZOO_MEMORY_BUDGET = 'lots': expected a positive size"):
        memory_budget({"CLZOO_MEMORY_BUDGET": "lots"}, v2, meminfo)
    assert [parse_bytes(t) for t in ("2048", "10B", "2KB", "3M", "1G")] == [2048, 10, 2000, 3 * 2**20, 2**30]
    # 400 nines overflowed a float; "10" and "1.5": bare and small, a unit forgotten
    for bad in ("0", "-1", "1PB", "2 G B", "9" * 400, "10", "1.5"):
        with pytest.raises(ValueError):
            parse_bytes(bad)


def test_the_cgroup_limit_is_the_smallest_on_the_process_s_own_cgroup_and_its_parents(tmp_path):
    """A Slurm job's cgroup sits below the root: its limit is read from /proc/self/cgroup's path."""
    from clzoo.data.memory_budget import cgroup_limit

    root = tmp_path / "cgroup"
    job = root / "system.slice" / "slurmstepd.scope" / "job_7"
    job.mkdir(parents=True)
    (root / "memory.max").write_text("max\n")
    (root / "system.slice" / "memory.max").write_text("8000000000\n")
    (job / "memory.max").write_text("3000000000\n")
    membership = tmp_path / "cgroup-of-self"
    membership.write_text("0::/system.slice/slurmstepd.scope/job_7\n")
    assert cgroup_limit(root, membership) == 3_000_000_000
    (job / "memory.max").write_text("max\n")
    assert cgroup_limit(root, membership) == 8_000_000_000  # a parent's limit holds too
    v1 = tmp_path / "v1" / "memory" / "slurm" / "uid_1" / "job_7"
    v1.mkdir(parents=True)
    (v1 / "memory.limit_in_bytes").write_text("2000000000\n")
    membership.write_text("12:cpuset:/x\n4:memory:/slurm/uid_1/job_7\n")
    assert cgroup_limit(tmp_path / "v1", membership) == 2_000_000_000


def test_auto_streams_over_the_budget_and_holds_within_it():
    budget = (1000, "CLZOO_MEMORY_BUDGET=1000")
    assert choose_loading("auto", 1001, budget) == (
        "stream", "auto: 1001 B decoded exceeds the budget 1000 B (CLZOO_MEMORY_BUDGET=1000)")
    assert choose_loading("auto", 1000, budget)[0] == "memory"
    assert choose_loading("auto", None, budget)[0] == "memory"  # digits, tfds: held
    assert choose_loading("memory", 10**12, budget)[0] == "memory"  # forced
    assert choose_loading("stream", 1, budget)[0] == "stream"
    with pytest.raises(ValueError, match="data_loading = 'disk'"):
        choose_loading("disk", 1, budget)


def test_auto_loading_streams_a_split_over_the_budget_and_holds_one_within_it(tmp_path, monkeypatch):
    source = data_source(str(_jpeg_folder(tmp_path / "data")), image_size=32)  # 18 x 3 KiB decoded
    monkeypatch.setenv("CLZOO_MEMORY_BUDGET", "10KB")
    assert isinstance(source.load("test", stream="auto").images, FileImages)
    monkeypatch.setenv("CLZOO_MEMORY_BUDGET", "1MB")
    held = source.load("test", stream="auto").images
    assert isinstance(held, np.ndarray) and held.shape == (18, 32, 32, 3)
    assert data_source("digits").load("test", stream="auto").images.shape == (360, 32, 32, 3)


@pytest.mark.backends("tensorflow")
@pytest.mark.parametrize("stream", [False, True], ids=["held", "files"])
def test_the_shards_of_every_batch_make_the_one_process_batch(tmp_path, stream):
    from clzoo.data.tf_data_stream import batches

    split = data_source(str(_jpeg_folder(tmp_path / "data")), image_size=32).load("train", stream=stream)
    views = ViewConfig(size=24)
    whole = _arrays(batches(split, "views", 6, 3, 2, 1, views=views))
    parts = [_arrays(batches(split, "views", 6, 3, 2, 1, views=views, shard=(i, 3))) for i in range(3)]
    assert [len(p) for p in parts] == [len(whole)] * 3 and parts[0][0][0].shape[0] == 2
    for step, (x, y) in enumerate(whole):
        np.testing.assert_array_equal(np.concatenate([p[step][0] for p in parts]), x)
        np.testing.assert_array_equal(np.concatenate([p[step][1] for p in parts]), y)
    for shard, match in (((3, 3), "0 <= index < count"), ((0, 4), "must divide batch_size 6"),
                         ((0.5, 2), "index, count")):
        with pytest.raises(ValueError, match=match):
            batches(split, "views", 6, views=views, shard=shard)
    with pytest.raises(ValueError, match="per-image views"):
        batches(split, "soft_targets", 6, views=ViewConfig(size=24, views=1), shard=(0, 2))


@pytest.mark.backends("tensorflow")
def test_show_views_decodes_only_the_images_it_shows(tmp_path, monkeypatch):
    from clzoo import cli
    from clzoo.data import decode as decoding

    root = _jpeg_folder(tmp_path / "data", classes=3, per_class=20)
    decoded, decode = [], decoding.decode_image
    monkeypatch.setattr(decoding, "decode_image",
                        lambda path, **kw: decoded.append(path) or decode(path, **kw))
    out = tmp_path / "views.png"
    assert cli.main(["show-views", "--data", str(root), "--image-size", "32", "--images", "3",
                     "--output", str(out)]) == 0
    assert out.is_file() and 0 < len(set(decoded)) <= 4  # of 60 (the first sets the size)


@pytest.mark.parametrize("seed", [-1, 2**32, 2**63, 1.0])
def test_a_seed_outside_numpys_range_is_refused_by_both_streams(seed):
    from clzoo.data import device_batches, from_arrays

    split = from_arrays(np.zeros((8, 8, 8, 3), np.uint8), np.arange(8) % 2)
    with pytest.raises(ValueError, match=r"`seed` must be an int in \[0, 2\*\*32\)"):
        device_batches(split, batch_size=4, seed=seed, views=ViewConfig(size=8))
    if keras.backend.backend() == "tensorflow":
        from clzoo.data.tf_data_stream import batches

        with pytest.raises(ValueError, match=r"`seed` must be an int in \[0, 2\*\*32\)"):
            batches(split, batch_size=4, seed=seed, views=ViewConfig(size=8))


def test_file_images_index_like_numpy_and_refuse_what_it_would(tmp_path):
    held, streamed = _both(tmp_path)
    images, n = streamed.images, len(held)
    np.testing.assert_array_equal(images[-1], held.images[-1])
    np.testing.assert_array_equal(images[::-3], held.images[::-3])
    np.testing.assert_array_equal(images[held.labels == 1], held.images[held.labels == 1])
    assert images[[]].shape == (0, 32, 32, 3) and images[n:].shape == (0, 32, 32, 3)
    assert sum(1 for _ in images) == n  # iteration ends (it wrapped around for ever)
    for key in (n, -n - 1, [n], [0, -n - 1], np.ones(3, bool), True, (0, 0), [[0]], 1.0):
        with pytest.raises(IndexError):
            images[key]
    with pytest.raises(IndexError):
        images.subset([n])


@pytest.mark.backends("tensorflow")
def test_a_file_that_fails_inside_tf_data_is_named_in_one_line(tmp_path):
    from clzoo.data.file_images import decode_error_line
    from clzoo.data.tf_data_stream import batches

    root, bad = _corrupt(tmp_path)
    split = data_source(str(root), image_size=32).load("train", stream=True)
    with pytest.raises(Exception) as caught:  # TensorFlow's op error, around clzoo's ValueError
        for _ in batches(split, "views", 18, views=ViewConfig(size=24)):
            pass
    line = decode_error_line(caught.value)
    assert line.startswith(f"Cannot read image {bad}: ") and "\n" not in line
    assert line.endswith("leaves such files out)") and decode_error_line(ValueError("other")) is None


def test_a_folder_over_the_free_memory_is_refused_only_when_it_would_be_held(tmp_path, monkeypatch):
    """The decoded-size pre-check refused every folder larger than the free memory, the very
    folders streaming exists for; it now applies to `data_loading: memory` alone."""
    import clzoo.data.memory_budget as budget
    from clzoo.data import checks

    root = str(_jpeg_folder(tmp_path / "data"))
    monkeypatch.setattr(budget, "process_memory", lambda: (1000, "MemAvailable 1000 B"))
    with pytest.raises(ValueError, match="need about .* pass --image-size N"):
        checks.check_data(root, "memory")
    for loading in ("auto", "stream"):
        assert checks.check_data(root, loading).train_images == 18
