"""Recipe-driven training: typed recipes, the run folder, tasks, the resumable fit, the runner.

Names load on first use (PEP 562): reading and checking a recipe (`load_recipe`,
`validate_recipe`, `RecipeError`) imports no Keras until a section needs its factory, so a
recipe's key and value errors are reported before TensorFlow, JAX or torch load.
"""

import importlib

_HOMES = {
    "evaluate_encoder": "evaluation",
    "TrainingDiverged": "fit", "TrainingInterrupted": "fit",
    "Recipe": "recipe", "RecipeError": "recipe", "load_recipe": "recipe", "validate_recipe": "recipe",
    "DEFAULTS": "recipe",  # built on use: validating the defaults imports the loss classes
    "train": "runner",
    "build_model": "tasks",
}


def __getattr__(name):
    if name in _HOMES:
        return getattr(importlib.import_module(f"clzoo.train.{_HOMES[name]}"), name)
    raise AttributeError(f"module 'clzoo.train' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_HOMES))


__all__ = ["DEFAULTS", "Recipe", "RecipeError", "TrainingDiverged", "TrainingInterrupted",
           "build_model", "evaluate_encoder", "load_recipe", "train", "validate_recipe"]
