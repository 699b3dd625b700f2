"""Datasets, multi-view augmentation and tf.data pipelines."""

from clzoo.data.cache import cache_dir
from clzoo.data.pipeline import contrastive_dataset, eval_dataset, training_batches
from clzoo.data.preview import show_views
from clzoo.data.sampler import balanced_contrastive_dataset, class_balanced_indices
from clzoo.data.soft_targets import MixConfig, mixup, smooth_labels, soft_target_batches, soft_target_dataset
from clzoo.data.sources import load_split
from clzoo.data.split import Split, from_arrays
from clzoo.data.views import VIEW_RECIPES, ViewConfig, augment_view, multi_view, view_recipe

__all__ = ["from_arrays", "show_views", "VIEW_RECIPES", "view_recipe", "balanced_contrastive_dataset",
           "class_balanced_indices", "MixConfig", "smooth_labels", "soft_target_dataset",
           "soft_target_batches", "mixup", "Split", "ViewConfig", "augment_view", "cache_dir",
           "contrastive_dataset", "training_batches",
           "eval_dataset", "load_split", "multi_view"]
