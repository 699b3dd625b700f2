"""Datasets, multi-view augmentation and tf.data pipelines."""

from clzoo.data.cache import cache_dir
from clzoo.data.pipeline import contrastive_dataset, eval_dataset
from clzoo.data.sampler import balanced_contrastive_dataset, class_balanced_indices
from clzoo.data.soft_targets import MixConfig, smooth_labels, soft_target_dataset
from clzoo.data.sources import Split, load_split
from clzoo.data.views import ViewConfig, augment_view, multi_view

__all__ = ["balanced_contrastive_dataset", "class_balanced_indices", "MixConfig", "smooth_labels", "soft_target_dataset", "Split", "ViewConfig", "augment_view", "cache_dir", "contrastive_dataset",
           "eval_dataset", "load_split", "multi_view"]
