"""`clzoo train`: build the model from a recipe, fit it, evaluate it, save the run."""

import json
import math
import platform
import time
from pathlib import Path

import keras
import numpy as np
import yaml

from clzoo import losses
from clzoo.data import ViewConfig, contrastive_dataset, load_split, view_recipe
from clzoo.data.cache import atomic_write, atomic_write_text
from clzoo.eval import embed, knn_accuracy
from clzoo.models import ContrastiveModel, ProjectionHead, get_encoder
from clzoo.train.callbacks import AtomicCheckpoint, StopOnNaN, Throughput
from clzoo.version import __version__


class TrainingDiverged(RuntimeError):
    """Raised when the loss becomes NaN or infinite during training."""


def views_from_config(spec):
    """`ViewConfig` from a recipe's `views` section: fields, optionally on top of `recipe: <name>`."""
    spec = dict(spec or {})
    name = spec.pop("recipe", None)
    if name is None:
        return ViewConfig(**spec)
    base = view_recipe(name, size=spec.get("size", 32), views=spec.get("views", 2)).to_dict()
    return ViewConfig(**{**base, **spec})


def build_model(config, input_shape):
    """Encoder + projection head from the recipe's `model` section."""
    spec = config["model"]
    encoder = get_encoder(spec["architecture"], input_shape=input_shape, name="encoder")
    width = encoder.output_shape[-1]
    hidden = spec["head_hidden_dims"]
    hidden = (width,) if hidden is None else tuple(hidden)
    head = ProjectionHead(hidden_dims=hidden, output_dim=spec["embedding_dim"],
                          batch_norm=bool(spec.get("head_batch_norm", False)), name="projection_head")
    return ContrastiveModel(encoder, head, name="contrastive_model")


def build_loss(config):
    spec = dict(config["loss"])
    name = spec.pop("name")
    if name not in losses.ALL_OBJECTS_DICT:
        raise ValueError(
            f"`loss.name` must be one of {sorted(losses.ALL_OBJECTS_DICT)}. "
            f"Received: loss.name={name!r}"
        )
    return losses.ALL_OBJECTS_DICT[name](**spec)


def build_optimizer(config, steps_per_epoch):
    spec = config["training"]
    total = max(1, spec["epochs"] * steps_per_epoch)
    warmup = min(total - 1, int(spec["warmup_epochs"] * steps_per_epoch))
    peak = float(spec["learning_rate"])
    if spec["schedule"] == "cosine":
        # Warm up linearly from 0.1% of the peak (SINCERE app. J), then cosine to 0.
        lr = keras.optimizers.schedules.CosineDecay(
            initial_learning_rate=peak * 1e-3 if warmup else peak,
            decay_steps=total - warmup,
            warmup_target=peak if warmup else None,
            warmup_steps=warmup,
        )
    elif spec["schedule"] == "constant":
        lr = peak
    else:
        raise ValueError(
            f"`training.schedule` must be 'cosine' or 'constant'. Received: {spec['schedule']!r}"
        )
    name = spec["optimizer"]
    if name == "sgd":
        return keras.optimizers.SGD(lr, momentum=spec["momentum"],
                                    weight_decay=spec["weight_decay"] or None)
    if name == "adamw":
        return keras.optimizers.AdamW(lr, weight_decay=spec["weight_decay"])
    raise ValueError(f"`training.optimizer` must be 'sgd' or 'adamw'. Received: {name!r}")


def evaluate_encoder(encoder, data, ks=(1, 5, 20, 200), verbose=True, train=None):
    """Weighted-kNN top-1 of `encoder` on `data`'s test split, with its train split as memory.

    `train` may pass the already loaded training `Split` so it is not read again.
    """
    train = train if train is not None else load_split(data, "train")
    test = load_split(data, "test")
    size = encoder.input_shape[1]
    train_emb = embed(encoder, train.images, size=size, verbose=verbose)
    test_emb = embed(encoder, test.images, size=size, verbose=verbose)
    accuracy = knn_accuracy(train_emb, train.labels, test_emb, test.labels, ks=ks,
                            num_classes=len(train.class_names))
    return {f"k{k}": acc for k, acc in accuracy.items()}


def train(config, output_dir, verbose=1):
    """Run a recipe end to end and return its metrics.

    Writes into `output_dir`: `recipe.yaml` (resolved), `checkpoint.keras`
    (every epoch), `history.jsonl`, `encoder.keras` and `metrics.json`, each
    atomically.

    Raises:
        TrainingDiverged: when the loss turns NaN; `checkpoint.keras` then
            holds the last finite epoch.
    """
    output = Path(output_dir)
    output.mkdir(parents=True, exist_ok=True)
    keras.utils.set_random_seed(int(config["seed"]))
    view_config = views_from_config(config["views"])
    atomic_write_text(output / "recipe.yaml", yaml.safe_dump(config, sort_keys=False))

    started = time.perf_counter()
    train_split = load_split(config["data"], "train")
    spec = config["training"]
    dataset = contrastive_dataset(train_split, view_config, batch_size=spec["batch_size"],
                                  seed=int(config["seed"]))
    steps = len(train_split) // spec["batch_size"]
    model = build_model(config, (view_config.size, view_config.size, 3))
    model.compile(optimizer=build_optimizer(config, steps), loss=build_loss(config))
    model.build((None, view_config.views, view_config.size, view_config.size, 3))
    if verbose:
        print(f"clzoo {__version__} | keras {keras.__version__} ({keras.backend.backend()}) | "
              f"{config['data']}: {len(train_split)} train images, "
              f"{len(train_split.class_names)} classes | encoder {config['model']['architecture']} "
              f"({model.encoder.count_params():,} params) | loss {config['loss']['name']}")

    nan_guard = StopOnNaN()
    checkpoint = AtomicCheckpoint(output / "checkpoint.keras", nan_guard)
    throughput = Throughput(spec["batch_size"])
    history_path = output / "history.jsonl"

    class _History(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            line = json.dumps({"epoch": epoch + 1, **{k: float(v) for k, v in (logs or {}).items()}})
            previous = history_path.read_text() if history_path.exists() else ""
            atomic_write_text(history_path, previous + line + "\n")

    fit_start = time.perf_counter()
    history = model.fit(dataset, epochs=spec["epochs"], verbose=verbose, shuffle=False,
                        callbacks=[nan_guard, throughput, checkpoint, _History()])
    fit_seconds = time.perf_counter() - fit_start
    if nan_guard.failed_at is not None:
        epoch, batch, loss = nan_guard.failed_at
        where = (f"{output / 'checkpoint.keras'} (epoch {checkpoint.saved_epoch + 1})"
                 if checkpoint.saved_epoch is not None else "none (no epoch finished)")
        raise TrainingDiverged(
            f"Training stopped: the loss became {loss} at epoch {epoch + 1}, batch {batch + 1}. "
            f"Last good checkpoint: {where}. Try a lower training.learning_rate."
        )

    encoder = model.encoder
    atomic_write(output / "encoder.keras", lambda tmp: encoder.save(tmp), suffix=".keras")
    knn = evaluate_encoder(encoder, config["data"], ks=config["eval"]["knn_k"],
                           verbose=verbose, train=train_split)
    headline = f"k{config['eval']['knn_headline_k']}"
    metrics = {
        "knn_top1": knn.get(headline, next(iter(knn.values()))),
        "knn_top1_k": int(headline[1:]) if headline in knn else int(next(iter(knn))[1:]),
        "knn_top1_by_k": knn,
        "final_train_loss": float(history.history["loss"][-1]),
        "epochs": spec["epochs"],
        "train_images": len(train_split),
        "images_per_second": throughput.images_per_second,
        "views_per_second": throughput.images_per_second * view_config.views,
        "fit_seconds": fit_seconds,
        "wall_seconds": time.perf_counter() - started,
        "backend": keras.backend.backend(),
        "versions": {"clzoo": __version__, "keras": keras.__version__,
                     "python": platform.python_version()},
    }
    atomic_write_text(output / "metrics.json", json.dumps(metrics, indent=2) + "\n")
    return metrics
