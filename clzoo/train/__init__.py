"""Recipe-driven training: typed recipes, the run folder, tasks, the resumable fit, the runner."""

from clzoo.train.evaluation import evaluate_encoder
from clzoo.train.fit import TrainingDiverged, TrainingInterrupted
from clzoo.train.recipe import Recipe, RecipeError, load_recipe, validate_recipe
from clzoo.train.runner import train
from clzoo.train.tasks import build_model


def __getattr__(name):
    if name == "DEFAULTS":  # built on use: validating the defaults imports the loss classes
        from clzoo.train import recipe

        return recipe.DEFAULTS
    raise AttributeError(name)


__all__ = ["DEFAULTS", "Recipe", "RecipeError", "TrainingDiverged", "TrainingInterrupted",
           "build_model", "evaluate_encoder", "load_recipe", "train", "validate_recipe"]
