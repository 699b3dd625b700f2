"""A report folder is replaced as a set: an earlier report's files go with it, nothing else is
ever deleted, and a folder holding anything else is refused before any metric runs."""

import json

import numpy as np
import pytest

import clzoo.eval as E
import clzoo.eval.report as report_module
from clzoo.eval.records import read_eval

RNG = np.random.default_rng(5)


def _features():
    y = np.repeat(np.arange(3), 20)
    x = RNG.normal(size=(3, 6))[y] * 4 + RNG.normal(size=(60, 6))
    return x, y


def _report(folder, metrics):
    x, y = _features()
    return E.evaluate_embeddings(x, y, x, y, metrics, output_dir=folder, ks=(1,), verbose=False)


def _names(folder):
    return sorted(p.name for p in folder.iterdir())


def test_a_second_report_replaces_the_first_plots_included(tmp_path):
    folder = tmp_path / "report"
    first = _report(folder, "knn,separation")
    assert "separation.png" in _names(folder) and first.files[0] == folder / "metrics.json"
    second = _report(folder, "ncc")
    assert _names(folder) == ["metrics.json", "report.md"]  # the stale plots went with the set
    assert json.loads((folder / "metrics.json").read_text())["files"] == ["metrics.json", "report.md"]
    assert read_eval(folder).ncc == second.ncc and read_eval(folder).knn == {}
    assert _names(tmp_path) == ["report"]  # no staging or replaced folder left beside it


def test_a_report_of_an_earlier_version_is_replaced_whole(tmp_path):
    folder = tmp_path / "report"
    _report(folder, "separation")
    metrics = json.loads((folder / "metrics.json").read_text())
    del metrics["files"]  # written before the manifest
    (folder / "metrics.json").write_text(json.dumps(metrics))
    _report(folder, "ncc")
    assert _names(folder) == ["metrics.json", "report.md"]


@pytest.mark.parametrize("extra", ["notes.txt", "recipe.yaml"])
def test_a_folder_with_other_files_is_refused_before_any_metric(tmp_path, monkeypatch, extra):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / extra).write_text("mine\n")
    (folder / "metrics.json").write_text('{"knn_top1": 0.9}\n')  # a run's summary, say
    ran = []
    monkeypatch.setattr(report_module.EvalContext, "create", lambda *a, **k: ran.append(1))
    with pytest.raises(FileExistsError, match=f"holds files a report does not write.*{extra}"):
        _report(folder, "ncc")
    assert not ran and (folder / extra).read_text() == "mine\n"
    assert json.loads((folder / "metrics.json").read_text()) == {"knn_top1": 0.9}


def test_a_writer_that_fails_mid_report_leaves_the_earlier_report_whole(tmp_path, monkeypatch):
    folder = tmp_path / "report"
    _report(folder, "knn,separation")
    before = {p.name: p.read_bytes() for p in folder.iterdir()}

    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(report_module, "write_report", fail)
    with pytest.raises(OSError, match="No space left"):
        _report(folder, "ncc")
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    assert _names(tmp_path) == ["report"]


def test_the_working_directory_is_never_replaced(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileExistsError, match="working directory"):
        _report(".", "ncc")
    assert _names(tmp_path) == []
