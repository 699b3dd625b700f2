"""Issue 86 (hostile round 7), items 2 and 11a: every memory check takes the memory this process
may use (a cgroup's limit less what it already uses, or MemAvailable), and show-views decodes
large images at the grid's size."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from clzoo.data import memory_budget
from clzoo.data.memory_budget import memory_budget as budget_of
from clzoo.data.memory_budget import parse_bytes, process_memory
from tests.data.image_folders import write_image_folder

GIB = 2**30
REPO = Path(__file__).resolve().parents[2]


def _fake_machine(tmp_path, limit, current, inactive=0, available=64 * GIB, version=2):
    """A cgroup tree (the process's cgroup `job`, below the root) and a meminfo under `tmp_path`."""
    root = tmp_path / "cgroup"
    job = (root if version == 2 else root / "memory") / "slurm" / "job_7"
    job.mkdir(parents=True)
    names = ("memory.max", "memory.current", "inactive_file") if version == 2 else (
        "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file")
    (job / names[0]).write_text(f"{limit}\n")
    (job / names[1]).write_text(f"{current}\n")
    (job / "memory.stat").write_text(f"anon 1\n{names[2]} {inactive}\nfile 2\n")
    membership = tmp_path / "self-cgroup"
    membership.write_text("0::/slurm/job_7\n" if version == 2 else "4:memory:/slurm/job_7\n")
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(f"MemTotal: 99999999 kB\nMemAvailable: {available // 1024} kB\n")
    return root, meminfo, membership


@pytest.mark.parametrize("version", [1, 2])
def test_the_memory_figure_is_the_room_left_under_the_cgroup_limit(tmp_path, version):
    """The host's MemAvailable (64 GiB here) hid a job's 4 GiB limit, and what the job used."""
    paths = _fake_machine(tmp_path, 4 * GIB, int(1.5 * GIB), inactive=GIB // 2, version=version)
    room = 4 * GIB - GIB  # 1.5 GiB in use, 0.5 GiB of it inactive page cache (reclaimed first)
    assert process_memory(*paths) == (room, "cgroup limit 4.0 GiB, 1.0 GiB already used")
    assert budget_of({}, *paths) == (room // 2, "half of the cgroup limit 4.0 GiB, 1.0 GiB already used")
    small = _fake_machine(tmp_path / "small", 4 * GIB, 0, available=GIB, version=version)
    assert process_memory(*small) == (GIB, "MemAvailable 1.0 GiB")  # the smaller figure wins


@pytest.mark.parametrize("text", ["1.5", "16", "1000", "0.5"])
def test_a_bare_budget_below_a_kib_or_with_a_fraction_is_refused_for_its_missing_unit(text):
    """CLZOO_MEMORY_BUDGET=1.5 was read as 1 byte: every split then streamed."""
    with pytest.raises(ValueError, match=rf"^CLZOO_MEMORY_BUDGET = '{text}': a size needs a unit, "
                                         rf"e\.g\. {text}GB") as caught:
        budget_of({"CLZOO_MEMORY_BUDGET": text})
    assert "\n" not in str(caught.value)
    assert parse_bytes("2000000000") == 2 * 10**9 and parse_bytes("1.5GB") == 1.5 * 10**9


@pytest.fixture
def tight_cgroup(tmp_path, monkeypatch):
    """The process's cgroup: a 1 MiB limit with 0.25 MiB used, below a host with 64 GiB free."""
    paths = _fake_machine(tmp_path / "machine", 2**20, 2**18)
    for name, path in zip(("CGROUP_ROOT", "MEMINFO", "MEMBERSHIP"), paths):
        monkeypatch.setattr(memory_budget, name, str(path))
    monkeypatch.delenv("CLZOO_MEMORY_BUDGET", raising=False)

    def no_decoding(*args, **kwargs):
        raise AssertionError("an image was decoded before the memory check")

    monkeypatch.setattr("clzoo.data.decode.decode_image", no_decoding)
    return tmp_path


def test_data_loading_memory_over_the_cgroup_room_is_refused_by_clzoo_train_before_decoding(
        tight_cgroup, capsys):
    """A split over the cgroup's limit was held and trained until the kernel killed it (137)."""
    from clzoo import cli

    data = write_image_folder(tight_cgroup / "data", size=(256, 256))  # 12 images: 2.25 MiB decoded
    recipe = REPO / "recipes" / "sincere_digits.yaml"
    code = cli.main(["train", str(recipe), "--data", str(data), "--set", "data_loading=memory",
                     "--output", str(tight_cgroup / "run"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2, err
    line = next(line for line in err.splitlines() if "data_loading: memory" in line)
    for part in ("256 x 256 pixels need about 2.2 MiB decoded", "more than the 768.0 KiB this process "
                 "may use (cgroup limit 1.0 MiB, 256.0 KiB already used)", "data_loading: auto or stream"):
        assert part in line, line
    assert not (tight_cgroup / "run").exists()


def test_an_image_size_load_is_checked_against_the_cgroup_room(tight_cgroup):
    """`image_size` loads were checked against half the machine's physical memory."""
    from clzoo.data import data_source

    data = write_image_folder(tight_cgroup / "data", size=(8, 8))  # 6 training images
    with pytest.raises(ValueError, match=r"6 images of .* at --image-size 256 take 1.1 MiB as uint8, "
                                         r"more than the 768.0 KiB this process may use \(cgroup limit"):
        data_source(str(data), image_size=256).load("train")


_PEAK = """
import json, os, resource, sys, threading, time
from clzoo import cli

def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

def watchdog(limit):  # a regression must not take the machine's memory (it grew by 7.8 GB at 2048 px)
    while True:
        if int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") > limit:
            print(f"RSS over {limit / 2**20:.0f} MiB", flush=True)
            os._exit(3)
        time.sleep(0.02)

peaks = []
for folder in sys.argv[1:]:
    assert cli.main(["show-views", "--data", folder, "--images", "8", "--stream", "device",
                     "--output", folder + ".png"]) == 0
    peaks.append(peak())
    if len(peaks) == 1:
        threading.Thread(target=watchdog, args=(peaks[0] + 400 * 2**20,), daemon=True).start()
print(json.dumps(peaks))
"""


def _photos(root, side, classes=("a", "b"), per_class=4):
    """JPEGs of `side` px, `per_class` per class in train/ (one in test/); flat: quick to write."""
    for split, count in (("train", per_class), ("test", 1)):
        for name in classes:
            (root / split / name).mkdir(parents=True)
            for i in range(count):
                Image.new("RGB", (side, side), (40 * i, 90, 160)).save(root / split / name / f"{i}.jpg")
    return root


def test_show_views_of_large_photos_decodes_them_at_the_grid_size(tmp_path):
    """8 photos of 4000 x 4000 px take 384 MB decoded; the views were drawn at that size too."""
    small, large = _photos(tmp_path / "small", 16), _photos(tmp_path / "large", 4000)
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "TF_CPP_MIN_LOG_LEVEL": "3"}  # this lane's backend
    done = subprocess.run([sys.executable, "-c", _PEAK, str(small), str(large)], capture_output=True,
                          text=True, env=env, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stdout[-300:] + done.stderr[-3000:]
    before, after = json.loads(done.stdout.strip().splitlines()[-1])
    assert after - before < 100 * 2**20, f"peak RSS grew by {(after - before) / 2**20:.0f} MiB"
    assert Image.open(str(large) + ".png").size[0] > 0


def test_show_views_shows_file_images_at_most_the_preview_side(tmp_path, monkeypatch):
    """The Python API too: a streamed split's rows are decoded at `PREVIEW_SIDE`, not whole."""
    from clzoo.data import data_source, preview

    root = _photos(tmp_path / "data", 600, per_class=1)
    split = data_source(str(root)).load("train", stream=True)
    seen = {}

    def views(shown, chosen, count, config, views, seed, batch_wise):
        seen.update(shape=shown.shape, size=config.size)
        return np.zeros((len(shown), views, config.size, config.size, 3), np.float32)

    monkeypatch.setattr(preview, "_device_views", views)
    preview.show_views(split, tmp_path / "grid.png", images=2, views=1, stream="device")
    assert seen == {"shape": (2, preview.PREVIEW_SIDE, preview.PREVIEW_SIDE, 3),
                    "size": preview.PREVIEW_SIDE}
