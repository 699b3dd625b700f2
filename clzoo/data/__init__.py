"""Datasets, multi-view augmentation and the training streams (tf.data, or on the device).

Names load on first use (PEP 562), so the TensorFlow-free parts (sources, splits,
the view settings, the device stream) import where TensorFlow is not installed;
the tf.data ones import TensorFlow when first touched.
"""

import importlib
import importlib.util

_HOMES = {
    "BatchViewConfig": "augmentation_settings", "MixConfig": "augmentation_settings",
    "ViewConfig": "augmentation_settings", "VIEW_RECIPES": "augmentation_settings",
    "view_recipe": "augmentation_settings",
    "cache_dir": "cache",
    "eval_dataset": "pipeline",
    "show_views": "preview",
    "class_balanced_indices": "sampler",
    "smooth_labels": "soft_targets",
    "DataSource": "sources", "data_source": "sources", "load_split": "sources",
    "Split": "split", "from_arrays": "split",
    "KINDS": "tf_data_stream", "batches": "tf_data_stream",
    "device_batches": "device_stream",
    "PIPELINES": "streams", "STREAMS": "streams", "choose_stream": "streams",
    "training_batches": "streams",
    "augment_view": "tf_data_views", "multi_view": "tf_data_views",
}

__all__ = sorted(_HOMES)


def __getattr__(name):
    if name in _HOMES:
        try:
            home = importlib.import_module(f"clzoo.data.{_HOMES[name]}")
        except ModuleNotFoundError as error:
            if error.name != "tensorflow":
                raise
            raise ModuleNotFoundError(
                f"clzoo.data.{name} is built on tf.data and needs TensorFlow, which is not installed: "
                "pip install tensorflow, or take clzoo.data.training_batches (it picks the stream "
                "clzoo train would: the device stream on JAX and PyTorch)", name="tensorflow") from None
        return getattr(home, name)
    if importlib.util.find_spec(f"clzoo.data.{name}") is not None:  # a submodule: clzoo.data.tf_data_views
        return importlib.import_module(f"clzoo.data.{name}")
    raise AttributeError(f"module 'clzoo.data' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_HOMES))
