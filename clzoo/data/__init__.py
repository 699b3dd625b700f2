"""Datasets, multi-view augmentation and the training streams (tf.data, or on the device).

Names load on first use (PEP 562), so the TensorFlow-free parts (sources, splits,
the view settings, the device stream) import where TensorFlow is not installed;
the tf.data ones import TensorFlow when first touched.
"""

import importlib
import importlib.util

_HOMES = {
    "BatchViewConfig": "configs", "MixConfig": "configs", "ViewConfig": "configs",
    "VIEW_RECIPES": "configs", "view_recipe": "configs",
    "cache_dir": "cache",
    "eval_dataset": "pipeline",
    "show_views": "preview",
    "class_balanced_indices": "sampler",
    "smooth_labels": "soft_targets",
    "DataSource": "sources", "data_source": "sources", "load_split": "sources",
    "Split": "split", "from_arrays": "split",
    "KINDS": "stream", "batches": "stream",
    "device_batches": "device_stream",
    "PIPELINES": "streams", "STREAMS": "streams", "choose_stream": "streams",
    "augment_view": "views", "multi_view": "views",
}

__all__ = sorted(_HOMES)


def __getattr__(name):
    if name in _HOMES:
        return getattr(importlib.import_module(f"clzoo.data.{_HOMES[name]}"), name)
    if importlib.util.find_spec(f"clzoo.data.{name}") is not None:  # a submodule: clzoo.data.views
        return importlib.import_module(f"clzoo.data.{name}")
    raise AttributeError(f"module 'clzoo.data' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_HOMES))
