import os
import stat

import pytest

from clzoo.data.cache import cache_dir
from clzoo.files import atomic_write, atomic_write_text


def test_cache_dir_honours_env(tmp_path, monkeypatch):
    monkeypatch.setenv("CLZOO_CACHE", str(tmp_path / "c"))
    assert cache_dir("datasets") == tmp_path / "c" / "datasets"
    assert (tmp_path / "c" / "datasets").is_dir()


def test_atomic_write_replaces_whole_file_and_keeps_old_on_failure(tmp_path):
    target = tmp_path / "metrics.json"
    atomic_write_text(target, "old")
    assert target.read_text() == "old"
    assert stat.S_IMODE(os.stat(target).st_mode) & 0o044  # readable by others, not 0600

    def broken(tmp):
        with open(tmp, "w") as handle:
            handle.write("half")
        raise RuntimeError("killed mid-write")

    with pytest.raises(RuntimeError):
        atomic_write(target, broken)
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metrics.json"]
