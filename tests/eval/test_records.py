"""`clzoo.eval.records`: typed run and eval records, their round trip and their errors.

A real run folder is read in `tests/train/test_runner.py::test_train_cli_writes_a_complete_run`.
"""

import json
from pathlib import Path

import pytest

from clzoo.eval.records import EvalReport, RecordError, RunResult, read_eval, read_run

SUMMARY = {"knn_top1": 0.9, "knn_top1_k": 5, "knn_top1_by_k": {"k1": 0.85, "k5": 0.9},
           "ncc_accuracy": 0.8, "probe": 0.95, "final_train_loss": 3.2,
           "wall_seconds": 12.0, "images_per_second": 500.0, "backend": "jax",
           "baselines": {"raw_pixels": {"knn": {"k1": 0.9, "k5": 0.91}, "probe": 0.93},
                         "random_init": {"knn": {"k1": 0.5, "k5": 0.55}}}}


def _run(tmp_path, summary=SUMMARY, history=((4.0,), (3.2,))):
    (tmp_path / "metrics.json").write_text(json.dumps(summary))
    (tmp_path / "history.jsonl").write_text("".join(
        json.dumps({"epoch": i, "loss": row[0]}) + "\n" for i, row in enumerate(history)))
    return tmp_path


def test_read_run_one_set_of_names(tmp_path):
    run = read_run(_run(tmp_path))
    assert (run.knn_top1, run.knn_k, run.ncc, run.probe) == (0.9, 5, 0.8, 0.95)
    assert run.knn == {"k1": 0.85, "k5": 0.9} and run.loss_curve == (4.0, 3.2)
    assert run.final_loss == 3.2 and run.wall_seconds == 12.0 and run.path == tmp_path
    assert run.baselines["raw_pixels"].probe == 0.93 and run.baselines["random_init"].probe is None
    assert run.summary["backend"] == "jax"
    with pytest.raises(AttributeError):  # frozen
        run.knn_top1 = 0.0


def test_round_trip_keeps_the_stored_form(tmp_path):
    run = read_run(_run(tmp_path))
    assert run.to_summary() == SUMMARY
    assert RunResult.from_summary(run.to_summary(), path=tmp_path, loss_curve=run.loss_curve) == run


def test_a_summary_with_the_earlier_probe_name_reads_and_is_rewritten_with_one_name():
    """Issue 60 item 4: runs before stop 63 stored the probe as `linear_probe` (summary and baselines)."""
    earlier = {**{k: v for k, v in SUMMARY.items() if k != "probe"}, "linear_probe": 0.95,
               "baselines": {"raw_pixels": {"knn": {"k1": 0.9, "k5": 0.91}, "linear_probe": 0.93}}}
    run = RunResult.from_summary(earlier)
    assert run.probe == 0.95 and run.baselines["raw_pixels"].probe == 0.93
    summary = run.to_summary()
    assert summary["probe"] == 0.95 and "linear_probe" not in summary
    assert summary["baselines"]["raw_pixels"] == {"knn": {"k1": 0.9, "k5": 0.91}, "probe": 0.93}
    with pytest.raises(RecordError, match="'linear_probe': expected a number"):
        RunResult.from_summary({**earlier, "linear_probe": "high"})


def test_old_folder_without_optional_keys_or_history(tmp_path):
    old = {"knn_top1": 0.7, "knn_top1_k": 20, "knn_top1_by_k": {"k20": 0.7}}
    (tmp_path / "metrics.json").write_text(json.dumps(old))
    run = read_run(tmp_path)
    assert run.probe is run.ncc is run.final_loss is None and run.baselines == {}
    assert run.loss_curve == () and run.to_summary() == old


@pytest.mark.parametrize("content, words", [
    (None, "metrics.json: missing"),
    ("{not json", "metrics.json: not valid JSON"),
    ("[1, 2]", "expected a JSON object"),
    (json.dumps({"knn_top1": 0.9, "knn_top1_k": 5}), "no 'knn_top1_by_k' key"),
    (json.dumps({**SUMMARY, "probe": "high"}), "'probe': expected a number"),
    (json.dumps({**SUMMARY, "knn_top1_k": "5"}), "'knn_top1_k' must be an integer"),
    (json.dumps({**SUMMARY, "baselines": {"raw_pixels": {"knn": {}}}}), "baselines.raw_pixels"),
])
def test_clear_one_line_errors(tmp_path, content, words):
    if content is not None:
        (tmp_path / "metrics.json").write_text(content)
    with pytest.raises(RecordError) as caught:
        read_run(tmp_path)
    message = str(caught.value)
    assert words in message and "\n" not in message and str(tmp_path) in message


def test_corrupt_history_line_is_named(tmp_path):
    _run(tmp_path)
    (tmp_path / "history.jsonl").write_text('{"loss": 1.0}\n{oops\n')
    with pytest.raises(RecordError, match="history.jsonl: line 2"):
        read_run(tmp_path)


def test_read_eval_report_and_run_folder(tmp_path):
    report = {"title": "t", "knn": {"k1": 0.6, "k5": 0.7}, "ncc": {"accuracy": 0.65},
              "probe": {"accuracy": 0.75}, "separation": {"ratio": 2.0}}
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / "metrics.json").write_text(json.dumps(report))
    direct = read_eval(tmp_path / "eval")
    assert (direct.knn["k5"], direct.ncc, direct.probe, direct.sgd_probe) == (0.7, 0.65, 0.75, None)
    assert direct.metrics["separation"] == {"ratio": 2.0}
    _run(tmp_path)
    (tmp_path / "recipe.yaml").write_text("name: run\n")
    assert read_eval(tmp_path) == direct  # a run folder: its eval/ report
    assert EvalReport.from_metrics(report, path=tmp_path / "eval") == direct
    with pytest.raises(RecordError, match="'probe' has no 'accuracy'"):
        EvalReport.from_metrics({"probe": 0.5})


def test_a_report_written_by_an_earlier_version_still_reads():
    """tests/eval/old_report/metrics.json: a built-in preset's report from before the metric
    names settled (`ncc_accuracy` as a number, the probe under `linear_probe`)."""
    report = read_eval(Path(__file__).parent / "old_report")
    assert report.knn == {"k1": 0.5677, "k5": 0.608, "k20": 0.628, "k200": 0.5957}
    assert (report.ncc, report.probe, report.sgd_probe) == (0.4659, 0.6234, None)
    assert report.margin == pytest.approx(0.0022109, abs=1e-7)
    assert report.ece == pytest.approx(0.0083291, abs=1e-7)
    assert report.cdnv == pytest.approx(2.68418, abs=1e-5) and report.loss_gap is None


def test_read_eval_of_a_run_folder_without_a_report_says_so(tmp_path):
    (tmp_path / "recipe.yaml").write_text("name: x\n")
    (tmp_path / "metrics.json").write_text(json.dumps(
        {"knn_top1": 0.9, "knn_top1_k": 5, "knn_top1_by_k": {"k5": 0.9}, "linear_probe": 0.8}))
    with pytest.raises(RecordError, match=r"run folder without eval/metrics.json .*read_run"):
        read_eval(tmp_path)
    assert read_run(tmp_path).probe == 0.8


def test_two_evaluations_of_the_same_features_are_equal_records():
    import numpy as np

    import clzoo

    x, y = np.eye(4), np.array([0, 0, 1, 1])
    a, b = (clzoo.eval.evaluate_embeddings(x, y, x, y, "knn,ncc", ks=(1,), verbose=False) for _ in "ab")
    assert a == b and a.timings.keys() == b.timings.keys()  # wall times differ, results do not
    assert EvalReport.from_metrics(a.metrics).ncc == a.ncc == 1.0


def test_report_details_are_fields_not_keys():
    report = EvalReport.from_metrics({
        "knn": {"k1": 0.5}, "loss_gap": {"gap": 0.1, "bound": 0.3},
        "coarse_to_fine": {"within_coarse_accuracy": 0.4},
        "few_shot": {"10": {"ncc_error": 0.2, "linear_error": 0.25, "ncc_error_bound_test": 0.9}}})
    assert (report.loss_gap, report.loss_gap_bound, report.within_coarse) == (0.1, 0.3, 0.4)
    assert report.few_shot["10"]["linear_error"] == 0.25
    with pytest.raises(RecordError, match=r"'few_shot' must map shot counts to objects"):
        EvalReport.from_metrics({"few_shot": [0.2]})
    with pytest.raises(RecordError, match=r"few_shot.10.ncc_error"):
        EvalReport.from_metrics({"few_shot": {"10": {"ncc_error": "low"}}})
