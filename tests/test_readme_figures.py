"""README.md's figures come from benchmarks/readme_figures.py and are re-measured when their code changes."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import readme_figures  # noqa: E402  (benchmarks/readme_figures.py)


def test_readme_figures_are_the_scripts_and_current():
    problems = readme_figures.check()
    assert not problems, "; ".join(problems) + ": run python benchmarks/readme_figures.py"


def test_summary_and_table():
    rows = [{"seed": s, "wall_seconds": w, "knn_k": 5,
             "trained": {"knn": k, "probe": 0.99}, "raw_pixels": {"knn": 0.9, "probe": None}}
            for s, w, k in ((0, 100.0, 0.98), (1, 120.0, 0.99), (2, 110.0, 1.0))]
    summary = readme_figures.summarize(rows)
    assert summary["trained"]["knn"] == {"mean": pytest.approx(0.99), "min": 0.98, "max": 1.0}
    assert "probe" not in summary["raw_pixels"]
    assert summary["wall_seconds"] == {"mean": pytest.approx(110.0), "max": 120.0}
    table = readme_figures.render({"summary": summary, "rows": rows, "command": "clzoo train x",
                                   "machine": "2 CPU cores", "date": "2026-11-22"})
    assert "| raw pixels (no encoder) | 90.00% | - |" in table
    assert "99.00% (98.00% - 100.00%)" in table


def test_fingerprint_follows_the_code(tmp_path):
    for entry in readme_figures.DEPENDS_ON:
        target = tmp_path / entry
        if entry.endswith(".yaml"):
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("name: x\n")
        else:
            target.mkdir(parents=True)
            (target / "a.py").write_text("x = 1\n")
    before = readme_figures.fingerprint(tmp_path)
    (tmp_path / "clzoo/losses/a.py").write_text("x = 2\n")
    assert readme_figures.fingerprint(tmp_path) != before
