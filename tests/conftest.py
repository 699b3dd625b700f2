import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    """Every test gets its own clzoo cache, so none writes to the user's."""
    monkeypatch.setenv("CLZOO_CACHE", str(tmp_path / "clzoo-cache"))
