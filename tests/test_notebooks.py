"""The notebooks: in sync with their scripts, installable in Colab, and run top to bottom on a kernel."""

import json
import re
import sys
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).parent.parent / "notebooks"
sys.path.insert(0, str(NOTEBOOKS))

import build  # noqa: E402  (notebooks/build.py)

PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))
INSTALL = re.compile(r'^    !pip install -q "clzoo(\[[a-z,]+\])? @ git\+https://github\.com/clzoo/clzoo"$',
                     re.MULTILINE)


def test_every_script_has_its_notebook_and_they_are_in_sync():
    assert {p.stem for p in PATHS} == {p.stem for p in (NOTEBOOKS / "scripts").glob("*.py")}
    assert len(PATHS) >= 4
    assert build.main(["--check"]) == 0


def test_build_reads_percent_cells():
    text = "# %% [markdown]\n# # Title\n#\n# prose\n\n# %%\nx = 1\n\n\n# %%\ny = x + 1\n"
    assert build.cells(text) == [("markdown", "# Title\n\nprose"), ("code", "x = 1"),
                                 ("code", "y = x + 1")]


def test_build_keeps_outputs_of_unchanged_cells_only():
    old = build.notebook("# %%\na = 1\n\n# %%\nb = 2\n\n# %%\nc = 3\n")
    for cell in old["cells"]:
        cell["outputs"], cell["execution_count"] = [{"output_type": "stream", "name": "stdout",
                                                     "text": "x"}], 1
    new = build.keep_outputs(build.notebook("# %% [markdown]\n# note\n\n# %%\na = 1\n\n# %%\n"
                                            "b = 20\n\n# %%\nc = 3\n"), old)
    code = [cell for cell in new["cells"] if cell["cell_type"] == "code"]
    assert [len(cell["outputs"]) for cell in code] == [1, 0, 0]  # c's input changed with b
    assert build.sources(new) != build.sources(old)


def test_build_check_compares_sources_not_outputs(tmp_path, monkeypatch):
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "n.py").write_text("# %% [markdown]\n# # N\n\n# %%\nprint(1)\n")
    monkeypatch.setattr(build, "HERE", tmp_path)
    monkeypatch.setattr(build, "SCRIPTS", tmp_path / "scripts")
    assert build.main([]) == 0
    nb = json.loads((tmp_path / "n.ipynb").read_text())
    nb["cells"][1].update(execution_count=1, outputs=[
        {"output_type": "stream", "name": "stdout", "text": "1\n"}])
    (tmp_path / "n.ipynb").write_text(build.dumps(nb))
    assert build.main(["--check"]) == 0
    assert build.main([]) == 0
    assert json.loads((tmp_path / "n.ipynb").read_text())["cells"][1]["outputs"]  # kept
    (tmp_path / "scripts" / "n.py").write_text("# %% [markdown]\n# # N\n\n# %%\nprint(2)\n")
    assert build.main(["--check"]) == 1
    assert build.main([]) == 0
    assert not json.loads((tmp_path / "n.ipynb").read_text())["cells"][1]["outputs"]  # dropped


def test_terminal_text_keeps_the_last_state_of_rewritten_lines():
    assert build._terminal_text("a 1/3\b\b\b\b\b\ra 2/3\ra 3/3\nnext\r\n") == "a 3/3\nnext\n"


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.name)
def test_notebook_opens_in_colab_and_installs_without_a_clone(path):
    notebook = json.loads(path.read_text())
    first = "".join(notebook["cells"][0]["source"])
    assert notebook["cells"][0]["cell_type"] == "markdown"
    assert build.colab_url(path.stem) in first and "colab-badge.svg" in first
    code = ["".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "code"]
    assert 'if importlib.util.find_spec("clzoo") is None:' in code[0]
    assert INSTALL.search(code[0]), code[0]
    everything = "\n".join("".join(cell["source"]) for cell in notebook["cells"])
    for clone in ("/content", "pip install -e", "-e \"", "../", "sys.path"):
        assert clone not in everything  # nothing reads the repository's tree
    readme = (NOTEBOOKS.parent / "README.md").read_text()
    assert build.colab_url(path.stem) in readme


def _tier(path):
    """CI runs the quickstart notebook (the large tier); the others run in the slow tier, after
    touching a notebook or what it calls (docs/development.md)."""
    return pytest.param(path, marks=pytest.mark.large if path.stem == "quickstart" else pytest.mark.slow)


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("path", [_tier(path) for path in PATHS], ids=lambda p: p.name)
def test_notebook_runs(path, tmp_path, monkeypatch):
    """Every cell on an IPython kernel of this Python: the install cell skips, plots are drawn."""
    pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    monkeypatch.setenv("CLZOO_NOTEBOOK_TINY", "1")
    monkeypatch.delenv("CLZOO_NOTEBOOK_EPOCHS", raising=False)
    monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel's inline backend draws the plots
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "3")
    (tmp_path / "work").mkdir()
    nb = build.execute(json.loads(path.read_text()), tmp_path / "work", timeout=900)
    code = [cell for cell in nb["cells"] if cell["cell_type"] == "code"]
    assert all(cell["execution_count"] for cell in code)
    assert code[0]["outputs"] == []  # clzoo is installed here: nothing to pip install
    errors = [output for cell in code for output in cell["outputs"]
              if output["output_type"] == "error"]
    assert not errors
    drawing = [cell for cell in code if "plt.show()" in "".join(cell["source"])]
    for cell in drawing:  # each cell that shows a figure holds its PNG
        assert any("image/png" in output.get("data", {}) for output in cell["outputs"])
    assert len(build.images(nb)) >= len(drawing)


# An absolute path under a machine's usual roots, as a run's log line or a report prints it.
MACHINE_PATH = re.compile(r"(?<![\w.<])/(?:work|home|Users|root|tmp|mnt|data)/[\w.@/-]+")


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.name)
def test_saved_outputs_name_no_path_of_the_machine_that_ran_them(path):
    nb = json.loads(path.read_text())
    texts = ["".join(output.get("text", "")) + "".join(output.get("data", {}).get("text/plain", ""))
             for cell in nb["cells"] for output in cell.get("outputs", [])]
    found = [match for text in texts for match in MACHINE_PATH.findall(text)]
    assert not found, f"{path.name} outputs name {found[:3]}: re-run notebooks/build.py --execute"


def test_build_hides_the_data_folders_it_was_given(tmp_path, monkeypatch):
    monkeypatch.setenv("CLZOO_NOTEBOOK_DATA", f"{tmp_path}@cifar2")
    monkeypatch.delenv("CLZOO_CIFAR10", raising=False)
    cell = {"outputs": [{"output_type": "stream", "name": "stdout",
                         "text": f"clzoo | {tmp_path}@cifar2: 10000 train images\n"}]}
    build._clean_outputs(cell)
    assert cell["outputs"][0]["text"] == "clzoo | <CIFAR-10 folder>@cifar2: 10000 train images\n"


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.name)
def test_a_notebook_that_builds_a_model_seeds_it_first(path):
    """A notebook re-run gives the outputs it shows: weights drawn only after a seed."""
    code = "\n".join(source for kind, source in build.cells(
        (path.parent / "scripts" / f"{path.stem}.py").read_text()) if kind == "code")
    built = [code.find(call) for call in ("get_encoder(", "ContrastiveModel(", "build_classifier(")
             if call in code]
    if built:
        seeded = code.find("keras.utils.set_random_seed(")
        assert 0 <= seeded < min(built), f"{path.name} builds a model before keras.utils.set_random_seed"
