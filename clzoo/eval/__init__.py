"""Evaluation of frozen encoders: the measurements of the five papers.

- `evaluate(encoder, data, metrics)` / `evaluate_embeddings`: the report
  (`metrics.json`, `report.md`, plots) of the metrics in `METRICS`, one
  `ReportMetric` class per name (`clzoo.eval.metric.ORDER`: `knn`, `ncc`, `probe`,
  `calibration`, `few_shot`, `geometry`, `separation`, `loss_gap`,
  `noisy_labels`, `map`, `retrieval`, `sgd_probe`, `coarse_to_fine`), each in the
  module of the function it measures with (`KNNReport` in `eval/knn.py`).
- kNN: `knn_accuracy`, `knn_predict` (SINCERE app. M, Wu et al. 2018)
- linear probes: `logistic_regression_probe` (SimCLR), `sgd_linear_probe` (SINCERE app. J)
- class geometry: `nearest_class_center_accuracy`, `cdnv`, `directional_cdnv`,
  `few_shot_error_bound`, `few_shot_errors` (NSCL paper)
- `target_noise_separation` (SINCERE sec. 4.1) with `margin_interval` /
  `margin_difference` (bootstrap intervals, SINCERE sec. 4), `expected_calibration_error` /
  `reliability`, `dcl_nscl_gap` (NSCL Thm. 1),
  `rank_suspected_mislabeled` (Perfectly Balanced app. E.3.2),
  `coarse_to_fine_transfer` (Perfectly Balanced sec. 5.2)
- `retrieval_metrics`: leave-one-out precision@k, recall@k, R-precision, MAP@R
  (Musgrave et al. 2020)
- `bootstrap` (any per-example statistic, scipy), `bootstrap_accuracy`,
  `bootstrap_accuracy_difference` (SINCERE sec. 4)
- data and embeddings: `embed`, `projection_encoder` / `projection_embeddings`
  (the loss's space), `train_test_split` (stratified, for array data)
- without labels: `alignment`, `uniformity` (Wang & Isola 2020), `effective_rank` (RankMe),
  `label_free_report` (two views of a sample: what an unlabelled run reports)
- `baseline_metrics`: the same kNN / probe on raw pixels and a random-init encoder;
  `KNNMonitor`: kNN accuracy during `fit`.
"""

from clzoo.eval.baselines import BASELINES, baseline_metrics, raw_pixel_features
from clzoo.eval.bootstrap import (
    BootstrapInterval,
    bootstrap,
    bootstrap_accuracy,
    bootstrap_accuracy_difference,
)
from clzoo.eval.calibration import Reliability, expected_calibration_error, reliability
from clzoo.eval.compare import compare_results, comparison_markdown
from clzoo.eval.embed import embed, projection_embeddings, projection_encoder
from clzoo.eval.embedding_map import tsne_points
from clzoo.eval.few_shot import few_shot_errors
from clzoo.eval.geometry import (
    cdnv,
    class_centers,
    directional_cdnv,
    few_shot_error_bound,
    nearest_class_center_accuracy,
    nearest_class_center_predict,
    variability,
)
from clzoo.eval.knn import knn_accuracy, knn_predict, knn_predictions
from clzoo.eval.label_free import (
    LabelFreeReport,
    alignment,
    effective_rank,
    label_free_report,
    uniformity,
)
from clzoo.eval.linear_probe import (
    ProbeResult,
    logistic_regression_probe,
    sgd_linear_probe,
)
from clzoo.eval.loss_gap import dcl_nscl_gap
from clzoo.eval.metric import (
    METRICS,
    ORDER,
    EvalContext,
    MetricResult,
    Plot,
    ReportMetric,
    default_metrics,
    parse_metrics,
    register_metric,
)
from clzoo.eval.monitor import KNNMonitor
from clzoo.eval.noisy_labels import NoisyLabelRanking, rank_suspected_mislabeled
from clzoo.eval.probe_transfer import TransferResult, transfer_probe
from clzoo.eval.report import (
    EvaluationResult,
    evaluate,
    evaluate_embeddings,
)
from clzoo.eval.retrieval import retrieval_metrics
from clzoo.eval.separation import Separation, margin_difference, margin_interval, target_noise_separation
from clzoo.eval.splits import train_test_split
from clzoo.eval.transfer import CIFAR10_COARSE, coarse_labels, coarse_to_fine_transfer

# Every module above is imported, so every report metric has registered itself.
if tuple(METRICS) != ORDER:
    raise ImportError(f"clzoo.eval: report metrics {sorted(set(ORDER) - set(METRICS))} did not register")
DEFAULT_METRICS = default_metrics()

__all__ = [
    "BASELINES", "CIFAR10_COARSE", "DEFAULT_METRICS", "METRICS", "BootstrapInterval",
    "EvalContext", "EvaluationResult", "KNNMonitor", "LabelFreeReport", "MetricResult",
    "NoisyLabelRanking", "Plot", "ProbeResult", "TransferResult", "Reliability", "ReportMetric",
    "Separation", "alignment", "baseline_metrics", "bootstrap", "bootstrap_accuracy",
    "bootstrap_accuracy_difference", "cdnv",
    "class_centers", "coarse_labels", "coarse_to_fine_transfer", "compare_results", "comparison_markdown",
    "dcl_nscl_gap", "directional_cdnv", "effective_rank", "embed", "evaluate", "evaluate_embeddings",
    "expected_calibration_error", "few_shot_error_bound", "few_shot_errors", "knn_accuracy",
    "knn_predict", "knn_predictions", "label_free_report", "logistic_regression_probe",
    "margin_difference", "margin_interval", "nearest_class_center_accuracy",
    "nearest_class_center_predict", "parse_metrics", "projection_embeddings",
    "projection_encoder", "rank_suspected_mislabeled", "raw_pixel_features", "register_metric",
    "reliability", "retrieval_metrics", "sgd_linear_probe", "target_noise_separation", "train_test_split",
    "transfer_probe", "tsne_points", "uniformity", "variability",
]
