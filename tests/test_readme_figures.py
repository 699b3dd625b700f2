"""README.md's figures come from benchmarks/readme_figures.py; CI checks its own quickstart run
against them by drift (`readme_figures.drift`, called by .ci/check_quickstart.py)."""

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
                                   "machine": "2 CPU cores", "date": "2026-11-22", "backend": "jax"})
    assert "| raw pixels (no encoder) | 90.00% | - |" in table
    assert "on 2 CPU cores, on the jax backend, measured 2026-11-22" in table
    assert "99.00% (98.00% - 100.00%)" in table


def _figures(knns, k=5):
    rows = [{"seed": s, "wall_seconds": 1.0, "knn_k": k, "trained": {"knn": v, "probe": None}}
            for s, v in enumerate(knns)]
    return {"rows": rows, "summary": readme_figures.summarize(rows)}


def test_drift_passes_inside_the_seeds_range_plus_a_point_and_fails_outside():
    figures = _figures([0.9917, 0.9972, 0.9944])
    assert readme_figures.drift_band(figures) == (pytest.approx(98.17), pytest.approx(100.72))
    for inside in (99.44, 98.89, 98.17, 100.0):  # 98.89: seed 0 on another 2-core machine
        assert readme_figures.drift(inside, 5, figures) is None
    for outside in (98.16, 95.0, 60.0):
        problem = readme_figures.drift(outside, 5, figures)
        assert "outside" in problem and "python benchmarks/readme_figures.py" in problem
    assert "k=20" in readme_figures.drift(99.44, 20, figures)


def test_the_ci_check_reads_the_quickstart_table_and_applies_the_drift(tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / ".ci"))
    import check_quickstart  # noqa: PLC0415  (.ci/check_quickstart.py)

    table = ("kNN top-1 (k=5, cosine-weighted) on digits test and linear-probe top-1:\n"
             "                                kNN k=5     probe\n"
             "  trained encoder               {:.2%}    99.72%\n"
             "  raw pixels                    98.06%    96.11%\n"
             "  random init (untrained)       90.56%    90.28%\n")
    figures = _figures([0.9917, 0.9972, 0.9944])
    assert check_quickstart.knn_rows(table.format(0.9944)) == (5, 99.44, 98.06, 90.56)
    assert readme_figures.drift(check_quickstart.knn_rows(table.format(0.97))[1], 5, figures)
