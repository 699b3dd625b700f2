"""Before a run resumes: is `checkpoint.keras` the model, optimizer and data this recipe trains?"""

import hashlib
import os
from pathlib import Path

import keras
import numpy as np

from clzoo.train.builders import build_loss, build_optimizer
from clzoo.train.config_diff import differences, short
from clzoo.train.precision import scaled


def check_checkpoint(model, task, recipe, views, path, classes):
    """Refuse (`ValueError`) to resume a checkpoint that is not this run's model: an encoder
    saved over it, another task's model, or one built for other images or embeddings."""
    from clzoo.models import ContrastiveModel

    try:
        encoder = task.encoder(model)
        problem = None if getattr(model, "optimizer", None) is not None else "has no optimizer"
    except (AttributeError, ValueError):
        problem = f"is a {type(model).__name__}, not the {recipe.task} task's model"
    if problem is None and isinstance(model, ContrastiveModel) != (recipe.task == "contrastive"):
        problem = f"is a {type(model).__name__}, not the {recipe.task} task's model"
    if problem is None and any(side not in (None, views.size) for side in encoder.input_shape[1:3]):
        problem = f"takes {encoder.input_shape[1:3]} images, the recipe's views {views.size}"
    head = getattr(model, "projection_head", None)
    dim = getattr(head, "output_dim", None) if recipe.task == "contrastive" else None
    if problem is None and dim is not None and dim != recipe.model.embedding_dim:
        problem = f"gives {dim}-d embeddings, the recipe model.embedding_dim {recipe.model.embedding_dim}"
    auxiliary = getattr(model, "auxiliary_classes", None)
    if problem is None and auxiliary is not None and auxiliary != classes:
        problem = (f"has an auxiliary classifier of {auxiliary} classes and the data now has "
                   f"{classes} (the data changed since the run started)")
    if problem:
        raise ValueError(f"Cannot resume {path}: it {problem}; a run's checkpoint.keras holds the "
                         "compiled model it trains. Restore it, or train a new run.")


def check_same_model(model, recipe, task, views, classes, steps_per_epoch, levers, path):
    """Refuse (`ValueError`) a checkpoint whose model, optimizer or loss is not the one `recipe` builds.

    The recipe's model, optimizer and loss are built afresh (as a new run would, levers included)
    and compared with the checkpoint's by their Keras configs, layer names aside, and the weights'
    shapes: a checkpoint copied from a run of another architecture, parts (memory queue,
    auxiliary head), levers (a weight average) or loss would otherwise train as it is.
    """
    loss = build_loss(recipe)
    built = task.build_model(recipe, views, classes, getattr(loss, "temperature_layer", None))
    optimizer = build_optimizer(recipe, steps_per_epoch)
    for lever in levers:
        lever.configure(optimizer)
    optimizer = scaled(optimizer, recipe.training.precision)
    problem = (_model_difference(model, built) or _optimizer_difference(model.optimizer, optimizer)
               or _loss_difference(getattr(model, "loss", None), loss))
    if problem:
        raise ValueError(f"Cannot resume {path}: the checkpoint {problem}: this recipe did not "
                         "train it (recipe.yaml edited, or the checkpoint copied from another run). "
                         "Restore the run's recipe.yaml and checkpoint.keras, or train a new run.")


def _model_difference(model, built):
    ours, theirs = _count(built), _count(model)
    where = _first_difference(_unnamed(model.get_config()), _unnamed(built.get_config()))
    shapes = [tuple(w.shape) for w in model.weights] != [tuple(w.shape) for w in built.weights]
    if where is None and not shapes:
        return None
    return (f"holds a model of {theirs:,} parameters and the recipe builds one of {ours:,} "
            f"(first difference: {where or 'the weights shapes'})")


def _optimizer_difference(saved, fresh):
    where = _first_difference(_unnamed(keras.optimizers.serialize(saved)),
                              _unnamed(keras.optimizers.serialize(fresh)), "optimizer")
    return None if where is None else f"holds another optimizer than the recipe's ({where})"


def _loss_difference(saved, fresh):
    """The checkpoint's compiled loss against the recipe's (a resumed run keeps the checkpoint's)."""
    if saved is None or isinstance(saved, str) or not hasattr(saved, "get_config"):
        return None
    where = _first_difference(_unnamed(keras.losses.serialize(saved)),
                              _unnamed(keras.losses.serialize(fresh)), "loss")
    return None if where is None else f"was compiled with another loss than the recipe's ({where})"


def _count(model):
    return sum(int(keras.ops.size(w)) for w in model.weights)


def _unnamed(config):
    """A Keras config without its `name` entries: Keras numbers unnamed layers per process."""
    if isinstance(config, dict):
        return {k: _unnamed(v) for k, v in config.items() if k != "name"}
    if isinstance(config, (list, tuple)):
        return [_unnamed(v) for v in config]
    return config


def _first_difference(saved, fresh, path="model"):
    """`"path: saved vs recipe"` at the first place two configs differ, or None."""
    found = next(differences(saved, fresh, path), None)
    if found is None:
        return None
    where, theirs, ours = found
    return f"{where}: {short(theirs)} in the checkpoint, {short(ours)} from the recipe"


def data_record(train_split, plan):
    """What `environment.json` records of the training data, for `check_same_data` on resume."""
    record = {"train_images": len(train_split), "steps_per_epoch": plan.steps,
              "train_fingerprint": data_fingerprint(train_split)}
    if train_split.class_names is not None:  # named classes (an image folder, digits, most tfds sets)
        record["class_names"] = [str(name) for name in train_split.class_names]
    return record


SAMPLED_FILES = 4096  # files whose bytes the fingerprint reads (the first and last 4 KiB)


def data_fingerprint(split):
    """Hex digest of a split's content: for an image folder each file's class folder, name and size
    in bytes, and the first and last 4 KiB of `SAMPLED_FILES` files spread over the split (not
    mtimes or full paths, so a copy of the data elsewhere resumes); for a tfds split in ArrayRecord
    files its records' digest (`Split.fingerprint`); else its labels and pixels, hashed where they
    lie (never decoded whole, nor copied)."""
    from clzoo.data.split_overlap import sample_digest

    digest = hashlib.blake2b(np.asarray(split.labels, np.int64).tobytes(), digest_size=16)
    if split.paths is not None:
        sizes = [os.stat(path).st_size for path in split.paths]
        for path, size in zip(split.paths, sizes):
            digest.update(f"{Path(path).parent.name}/{Path(path).name}\0{size}\0".encode())
        step = max(1, len(sizes) // SAMPLED_FILES)
        for index in range(0, len(sizes), step):
            digest.update(sample_digest(split.paths[index], sizes[index])[1])
    elif split.fingerprint is not None:
        digest.update(split.fingerprint.encode())
    elif hasattr(split.images, "fingerprint"):  # streamed, under a derived label set
        digest.update(split.images.fingerprint().encode())
    else:
        digest.update(np.ascontiguousarray(split.images))
    return digest.hexdigest()


def check_same_data(run, recorded, now):
    """Refuse (`ValueError`) to resume on training data other than the run started on.

    `recorded` is the run's `environment.json`, `now` the `data_record` of the data given. Of
    another size, the steps would map to other epochs (learning rate, skipped epochs); with other
    class names, labels would mean other classes; with other images (the same names and count),
    the run would go on on other data unseen.
    """
    try:
        before, steps = int(recorded["train_images"]), int(recorded["steps_per_epoch"])
    except (ValueError, TypeError, KeyError):
        return  # a run from before these were recorded: nothing to compare with
    if (before, steps) != (now["train_images"], now["steps_per_epoch"]):
        raise ValueError(f"Cannot resume {run.path}: it started on {before:,} training images ({steps:,} "
                         f"steps per epoch) and the data now has {now['train_images']:,} "
                         f"({now['steps_per_epoch']:,}); "
                         "the data changed since the run started. Restore it, or train a new run.")
    started = recorded.get("class_names")  # absent in runs started before it was recorded
    names = now.get("class_names")
    if isinstance(started, list) and names is not None and started != names:
        gone, new = sorted(set(started) - set(names)), sorted(set(names) - set(started))
        change = (f"classes gone: {gone or 'none'}; new: {new or 'none'}" if gone or new
                  else "the same classes in another order (other label ids)")
        raise ValueError(f"Cannot resume {run.path}: its training classes changed since the run "
                         f"started ({change}). Restore the data, or train a new run.")
    fingerprint = recorded.get("train_fingerprint")  # absent before it was recorded
    if isinstance(fingerprint, str) and fingerprint != now["train_fingerprint"]:
        raise ValueError(f"Cannot resume {run.path}: its training images changed since the run started "
                         "(as many, under the same classes, but other files, sizes or contents: "
                         "environment.json's train_fingerprint). Restore the data, or train a new run.")
