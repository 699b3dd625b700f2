"""Evaluation of frozen encoders."""

from clzoo.eval.embed import embed
from clzoo.eval.knn import knn_accuracy, knn_predict

__all__ = ["embed", "knn_accuracy", "knn_predict"]
