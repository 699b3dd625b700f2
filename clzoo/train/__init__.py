"""Recipe-driven training."""

from clzoo.train.config import DEFAULTS, load_recipe
from clzoo.train.runner import TrainingDiverged, build_model, evaluate_encoder, train

__all__ = ["DEFAULTS", "TrainingDiverged", "build_model", "evaluate_encoder", "load_recipe", "train"]
