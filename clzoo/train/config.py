"""Recipe files: YAML with defaults, validation and `key.path=value` overrides."""

import copy
from pathlib import Path

import yaml

DEFAULTS = {
    "name": "run",
    "seed": 0,
    "data": "digits",
    "task": "contrastive",  # or "soft_target": encoder + classifier on MixUp / CutMix soft targets
    "model": {
        "architecture": "resnet20",  # any name of clzoo.models.list_encoders()
        "head_hidden_dims": None,  # None: one hidden layer as wide as the encoder
        "head_batch_norm": False,
        "embedding_dim": 128,
        "classifier_hidden_dims": [],  # task soft_target: hidden widths of the classifier head
    },
    "loss": {"name": "SINCERELoss", "temperature": 0.1},
    "views": {},  # clzoo.data.ViewConfig fields
    "mix": {},  # task soft_target: clzoo.data.MixConfig fields
    "training": {
        "epochs": 10,
        "batch_size": 256,
        "optimizer": "sgd",
        "learning_rate": 0.1,  # peak, after warm-up
        "momentum": 0.9,
        "weight_decay": 1e-4,
        "warmup_epochs": 1,
        "schedule": "cosine",
        "final_learning_rate_fraction": 0.0,  # cosine ends at this fraction of the peak
        "trust_coefficient": 1e-3,  # LARS only
        "deterministic": True,  # deterministic backend kernels: same seed, same run (CPU)
        "strategy": "auto",  # auto | one_device | mirrored | multi_worker (--strategy)
        "checkpoint_every_steps": None,  # also checkpoint every N steps (always every epoch)
        "log_every_steps": None,  # steps.jsonl rows; default once per epoch
    },
    "eval": {
        "knn_k": [1, 5, 20, 200],
        "knn_headline_k": 20,
        "monitor_every": 0,  # epochs between online kNN measurements (0: off)
        "monitor_memory": 10000,  # training images the monitor uses as memory
        "monitor_queries": 2000,  # test images it classifies
        "report": True,  # the `clzoo eval` report in <run>/eval at the end
        "metrics": ["knn", "ncc", "probe", "calibration", "separation"],
        # the same kNN / probe on raw pixels and on the untrained encoder, beside the trained one
        "baselines": ["raw_pixels", "random_init"],
    },
}


FREE_FORM = ("loss.", "views.", "mix.")  # keyword arguments of the loss class / ViewConfig fields


def _merge(base, update, path=""):
    out = copy.deepcopy(base)
    for key, value in (update or {}).items():
        where = f"{path}{key}"
        if key not in base and path not in FREE_FORM:
            raise ValueError(
                f"Unknown recipe key {where!r}. Known keys here: {sorted(base)}"
            )
        if isinstance(base.get(key), dict) and base[key] and isinstance(value, dict):
            out[key] = _merge(base[key], value, where + ".")
        else:
            out[key] = value
    return out


def load_recipe(path=None, overrides=()):
    """Read a recipe YAML, fill defaults and apply `section.key=value` overrides.

    Raises:
        ValueError: when the file does not exist, is not a mapping, names an
            unknown key, or an override is not of the form `key=value`.
    """
    raw = {}
    if path is not None:
        path = Path(path)
        if not path.is_file():
            raise ValueError(f"Recipe file not found. Received: recipe={str(path)!r}")
        raw = yaml.safe_load(path.read_text()) or {}
        if not isinstance(raw, dict):
            raise ValueError(f"A recipe must be a YAML mapping. Received: {type(raw).__name__} in {path}")
        raw.setdefault("name", path.stem)
    config = _merge(DEFAULTS, raw)
    for item in overrides:
        if "=" not in item:
            raise ValueError(f"Overrides look like training.epochs=5. Received: {item!r}")
        key, value = item.split("=", 1)
        node = config
        *parents, leaf = key.split(".")
        for part in parents:
            if not isinstance(node.get(part), dict):
                raise ValueError(f"Unknown recipe key {key!r}.")
            node = node[part]
        if leaf not in node and all(node is not config[k] for k in ("views", "loss", "mix")):
            raise ValueError(f"Unknown recipe key {key!r}. Known keys here: {sorted(node)}")
        node[leaf] = yaml.safe_load(value)
    return config
