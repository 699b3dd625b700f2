"""The notebooks: in sync with their scripts, and every code cell runs top to bottom with tiny settings."""

import json
import sys
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).parent.parent / "notebooks"
sys.path.insert(0, str(NOTEBOOKS))

import build  # noqa: E402  (notebooks/build.py)

PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))


def test_every_script_has_its_notebook_and_they_are_in_sync():
    assert {p.stem for p in PATHS} == {p.stem for p in (NOTEBOOKS / "scripts").glob("*.py")}
    assert len(PATHS) >= 4
    assert build.main(["--check"]) == 0


def test_build_reads_percent_cells():
    text = "# %% [markdown]\n# # Title\n#\n# prose\n\n# %%\nx = 1\n\n\n# %%\ny = x + 1\n"
    assert build.cells(text) == [("markdown", "# Title\n\nprose"), ("code", "x = 1"),
                                 ("code", "y = x + 1")]


@pytest.mark.slow
@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.name)
def test_notebook_runs(path, tmp_path, monkeypatch):
    monkeypatch.setenv("CLZOO_NOTEBOOK_TINY", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(tmp_path)  # run folders land here
    notebook = json.loads(path.read_text())
    assert notebook["cells"][0]["cell_type"] == "markdown"
    install = "".join(notebook["cells"][1]["source"])
    assert "pip install" in install  # the first code cell installs clzoo
    scope = {}
    for cell in notebook["cells"][2:]:
        if cell["cell_type"] != "code":
            continue
        code = "\n".join(line for line in "".join(cell["source"]).splitlines()
                         if not line.lstrip().startswith("!"))
        exec(compile(code, path.name, "exec"), scope)
