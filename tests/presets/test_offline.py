"""`hf://` presets without a network: one line within seconds that says the Hub is unreachable
(huggingface_hub 2.x raises httpx's ConnectError, not an OSError), or, offline by choice, that
the cache lacks it (issue 57 item 4)."""

import os
import subprocess
import sys

import pytest

pytest.importorskip("huggingface_hub")

CODE = ("from clzoo.presets.download import download\n"
        "from clzoo.presets.format import PresetError\n"
        "try:\n    download('clzoo/not-cached', None)\n"
        "except PresetError as error:\n    print('PresetError:', error)\n")


def _run(tmp_path, **env):
    # Nothing listens on port 9 of this machine: the connection is refused at once.
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_ENDPOINT": "http://127.0.0.1:9", **env}
    # A retry loop against the dead endpoint would run into the timeout: a hang, not a speed check.
    return subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, env=env,
                          timeout=120)


def test_an_unreachable_hub_is_one_line_naming_it(tmp_path):
    result = _run(tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("PresetError: Could not reach the Hugging Face Hub")
    assert "hf://clzoo/not-cached" in lines[0] and "not in the cache" in lines[0]


def test_offline_by_choice_names_the_cache_and_the_variable(tmp_path):
    result = _run(tmp_path, HF_HUB_OFFLINE="1")
    assert result.returncode == 0, result.stderr[-2000:]
    line = result.stdout.strip()
    assert "not in the Hugging Face Hub cache" in line and "HF_HUB_OFFLINE" in line
