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


def test_another_programs_metrics_json_and_manifest_are_not_trusted(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "train.csv").write_text("a,b\n")
    (folder / "metrics.json").write_text('{"files": ["train.csv"]}')  # not a clzoo report
    with pytest.raises(FileExistsError, match=r"metrics.json, train.csv"):
        _report(folder, "ncc")
    assert (folder / "train.csv").read_text() == "a,b\n"


def test_system_files_do_not_block_a_new_report(tmp_path):
    folder = tmp_path / "report"
    _report(folder, "ncc")
    (folder / ".DS_Store").write_bytes(b"\0")
    _report(folder, "knn")
    assert read_eval(folder).knn and read_eval(folder).ncc is None


def test_a_symlinked_report_folder_keeps_its_link_and_gets_the_new_report(tmp_path):
    real = tmp_path / "disk2" / "report"
    _report(real, "knn,separation")
    link = tmp_path / "report"
    link.symlink_to(real, target_is_directory=True)
    _report(link, "ncc")
    assert link.is_symlink() and _names(real) == ["metrics.json", "report.md"]


def test_a_folder_that_cannot_be_swapped_is_rewritten_in_place(tmp_path, monkeypatch):
    folder = tmp_path / "mount"
    _report(folder, "knn,separation")
    (folder / ".DS_Store").write_bytes(b"\0")
    monkeypatch.setattr(report_module, "swappable", lambda path: False)  # a mount point, say
    _report(folder, "ncc")
    assert _names(folder) == [".DS_Store", "metrics.json", "report.md"]
    assert read_eval(folder).ncc is not None


def test_the_working_directory_is_refused_before_any_metric(tmp_path, monkeypatch):
    (tmp_path / "inside").mkdir()
    monkeypatch.chdir(tmp_path / "inside")
    monkeypatch.setattr(report_module.EvalContext, "create", lambda *a, **k: pytest.fail("ran"))
    with pytest.raises(FileExistsError, match="working directory"):
        _report(tmp_path, "ncc")


def test_a_folder_that_cannot_be_written_is_refused_before_any_metric(tmp_path, monkeypatch):
    import clzoo.eval.report_folder as folders

    monkeypatch.setattr(folders, "swappable", lambda path: False)
    monkeypatch.setattr(folders, "_writable", lambda path: False)  # a read-only mount, say
    monkeypatch.setattr(report_module.EvalContext, "create", lambda *a, **k: pytest.fail("ran"))
    with pytest.raises(PermissionError, match="cannot be written"):
        _report(tmp_path / "report", "ncc")
