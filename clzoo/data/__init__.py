"""Datasets, multi-view augmentation and tf.data pipelines."""

from clzoo.data.batch_views import BatchViewConfig
from clzoo.data.cache import cache_dir
from clzoo.data.pipeline import eval_dataset
from clzoo.data.preview import show_views
from clzoo.data.sampler import class_balanced_indices
from clzoo.data.soft_targets import MixConfig, smooth_labels
from clzoo.data.sources import DataSource, data_source, load_split
from clzoo.data.split import Split, from_arrays
from clzoo.data.stream import KINDS, batches
from clzoo.data.views import VIEW_RECIPES, ViewConfig, augment_view, multi_view, view_recipe

__all__ = ["BatchViewConfig", "from_arrays", "show_views", "VIEW_RECIPES", "view_recipe", "batches", "KINDS",
           "class_balanced_indices", "MixConfig", "smooth_labels", "Split", "ViewConfig",
           "augment_view", "cache_dir", "eval_dataset", "load_split", "DataSource", "data_source",
           "multi_view"]
