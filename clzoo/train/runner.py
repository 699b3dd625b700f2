"""`clzoo train`: build the model from a recipe, fit it, evaluate it, save the run."""

import json
import platform
import sys
import time
from pathlib import Path

import keras
import numpy as np
import yaml

from clzoo import losses
from clzoo._console import keras_verbose
from clzoo.data import (MixConfig, ViewConfig, eval_dataset, load_split, soft_target_batches,
                        training_batches, view_recipe)
from clzoo.data.cache import atomic_write, atomic_write_text
from clzoo.eval import embed, knn_accuracy
from clzoo.eval.calibration import reliability
from clzoo.models import ContrastiveModel, ProjectionHead, build_classifier, get_encoder
from clzoo.optimizers import LARS
from clzoo.train.callbacks import (AtomicCheckpoint, JSONLinesHistory, RestoreEpochLoss, StepLog,
                                   StopOnNaN, Throughput, checkpoint_progress)
from clzoo.train.determinism import seed_everything
from clzoo.train.distribute import placement, portable_batch_norm, synchronize_batch_norm
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


TASKS = ("contrastive", "soft_target")


def build_model(config, input_shape, num_classes=None):
    """The recipe's model: encoder + projection head, or (task soft_target) encoder + classifier."""
    spec = config["model"]
    encoder = get_encoder(spec["architecture"], input_shape=input_shape, name="encoder")
    if config.get("task", "contrastive") == "soft_target":
        return build_classifier(encoder, num_classes,
                                hidden_dims=tuple(spec.get("classifier_hidden_dims") or ()))
    width = encoder.output_shape[-1]
    hidden = spec["head_hidden_dims"]
    hidden = (width,) if hidden is None else tuple(hidden)
    head = ProjectionHead(hidden_dims=hidden, output_dim=spec["embedding_dim"],
                          batch_norm=bool(spec.get("head_batch_norm", False)), name="projection_head")
    return ContrastiveModel(encoder, head, name="contrastive_model")


def build_loss(config):
    """The recipe's loss: a clzoo loss by class name, or `SoftTargetCrossEntropy` (Keras' with logits)."""
    spec = dict(config["loss"])
    name = spec.pop("name")
    if name == "SoftTargetCrossEntropy":
        spec.pop("temperature", None)  # the recipe default; cross-entropy has none
        return keras.losses.CategoricalCrossentropy(from_logits=True, **spec)
    if name not in losses.ALL_OBJECTS_DICT:
        raise ValueError(
            f"`loss.name` must be one of {sorted(losses.ALL_OBJECTS_DICT) + ['SoftTargetCrossEntropy']}. "
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
            alpha=float(spec.get("final_learning_rate_fraction") or 0.0),
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
    if name == "lars":
        return LARS(lr, momentum=spec["momentum"], weight_decay=spec["weight_decay"],
                    trust_coefficient=spec.get("trust_coefficient", 1e-3))
    raise ValueError(f"`training.optimizer` must be 'sgd', 'adamw' or 'lars'. Received: {name!r}")


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


def environment(place):
    """Software versions, devices and command line of this process, for the run folder."""
    import numpy

    versions = {"clzoo": __version__, "keras": keras.__version__, "numpy": numpy.__version__,
                "python": platform.python_version()}
    for module in ("tensorflow", "jax", "torch"):
        if module in sys.modules:
            versions[module] = getattr(sys.modules[module], "__version__", "?")
    return {"backend": keras.backend.backend(), "versions": versions, **place.describe(),
            "platform": platform.platform(), "argv": sys.argv,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def _changed_keys(saved, config):
    keys = sorted(set(saved) | set(config))
    return [key for key in keys if saved.get(key) != config.get(key)]


def train(config, output_dir, verbose=1, strategy=None, resume=False):
    """Run a recipe end to end and return its metrics.

    Writes into `output_dir`, each file atomically: `recipe.yaml` (resolved),
    `environment.json` (versions, devices, strategy), `checkpoint.keras`
    (weights + optimizer state, every epoch and every
    `training.checkpoint_every_steps`), `history.jsonl` / `history.csv`
    (per epoch: loss, learning rate, images/s, online kNN), `steps.jsonl`
    (every `training.log_every_steps`), `tensorboard/`, `encoder.keras`,
    `metrics.json` and the `clzoo eval` report in `eval/`.

    Args:
        config: a resolved recipe (`load_recipe`).
        output_dir: the run folder.
        verbose: 0 silent, 1 progress: Keras' live bar on a terminal, one
            plain line per epoch (no ANSI codes, no `\\r`) when stdout is
            redirected.
        strategy: "auto", "one_device", "mirrored" or "multi_worker";
            defaults to the recipe's `training.strategy`.
        resume: continue from `output_dir/checkpoint.keras` at the step it
            holds, with the same optimizer state, schedule position and data
            order (start from scratch when there is none yet).

    Returns:
        the metrics dict (None on non-chief workers of a multi-worker run).

    Raises:
        TrainingDiverged: when the loss turns NaN; `checkpoint.keras` then
            holds the last finite state.
        FileExistsError: when `output_dir` holds a checkpoint and `resume` is False.
        ValueError: when resuming with a recipe that differs from the saved one.
    """
    spec = config["training"]
    _check_baselines(config["eval"].get("baselines"))
    place = placement(strategy or spec.get("strategy", "auto"))
    output = Path(output_dir)
    checkpoint_path = output / "checkpoint.keras"
    resuming = bool(resume) and checkpoint_path.is_file()
    if checkpoint_path.is_file() and not resume:
        raise FileExistsError(
            f"{output} already holds a run (checkpoint.keras); pass --resume to continue it "
            "or choose another --output.")
    if resuming and (output / "recipe.yaml").is_file():
        changed = _changed_keys(yaml.safe_load((output / "recipe.yaml").read_text()), config)
        if changed:
            raise ValueError(f"Cannot resume {output}: the recipe differs from the one it started "
                             f"with in {changed}. Resume with the saved recipe.yaml.")
    chief = place.is_chief
    if chief:
        output.mkdir(parents=True, exist_ok=True)
        for stale in output.glob(".*.tmp*"):  # left by a process killed while writing
            stale.unlink()
        atomic_write_text(output / "recipe.yaml", yaml.safe_dump(config, sort_keys=False))
        atomic_write_text(output / "environment.json", json.dumps(environment(place), indent=2) + "\n")

    seed = int(config["seed"])
    seed_everything(seed, deterministic=bool(spec.get("deterministic", True)))
    task = config.get("task", "contrastive")
    if task not in TASKS:
        raise ValueError(f"`task` must be one of {TASKS}. Received: task={task!r}")
    view_config = views_from_config(config["views"])
    started = time.perf_counter()
    train_split = load_split(config["data"], "train")
    batch_size = int(spec["batch_size"])
    if not 1 <= batch_size <= len(train_split):
        raise ValueError(f"`training.batch_size` must be between 1 and the {len(train_split)} "
                         f"training images. Received: {batch_size}")
    if batch_size % place.replicas:
        raise ValueError(f"`training.batch_size` ({batch_size}) is the global batch and must "
                         f"divide evenly over the {place.replicas} replicas.")
    steps = len(train_split) // batch_size
    epochs = int(spec["epochs"])
    classes = len(train_split.class_names)
    mix = MixConfig(**(config.get("mix") or {})) if task == "soft_target" else None

    def batches_from(step):
        if task == "soft_target":
            return soft_target_batches(train_split, classes, batch_size, mix, view_config, seed,
                                       epochs, step)
        return training_batches(train_split, view_config, batch_size, seed, epochs, step)

    with place.scope():
        if resuming:
            model = keras.saving.load_model(checkpoint_path)
        else:
            model = build_model(config, (view_config.size, view_config.size, 3), classes)
            model.compile(optimizer=build_optimizer(config, steps), loss=build_loss(config))
            if task == "contrastive":
                model.build((None, view_config.views, view_config.size, view_config.size, 3))
        if place.strategy is not None and place.replicas > 1:
            synchronize_batch_norm(model)
        if place.name == "multi_worker":
            _prebuild_for_multi_worker(model, batches_from(0).element_spec,
                                       batch_size // place.replicas)
    encoder_model = model.encoder if task == "contrastive" else model.get_layer("encoder")
    done = int(keras.ops.convert_to_numpy(model.optimizer.iterations))
    if verbose:
        print(f"clzoo {__version__} | keras {keras.__version__} ({keras.backend.backend()}, "
              f"{place.name} x{place.replicas}) | {config['data']}: {len(train_split)} train "
              f"images, {len(train_split.class_names)} classes | encoder "
              f"{config['model']['architecture']} ({encoder_model.count_params():,} params) | "
              f"loss {config['loss']['name']}"
              + (f" | resuming at step {done} of {epochs * steps}" if resuming else ""))

    nan_guard = StopOnNaN()
    checkpoint = AtomicCheckpoint(checkpoint_path, nan_guard,
                                  every_steps=spec.get("checkpoint_every_steps"),
                                  saving=lambda: portable_batch_norm(model), enabled=chief,
                                  single_replica=place.replicas == 1)
    throughput = Throughput(batch_size)
    history = JSONLinesHistory(output / "history.jsonl", enabled=chief)
    step_log = StepLog(output / "steps.jsonl", every=spec.get("log_every_steps") or steps,
                       enabled=chief)
    first_epoch, offset = divmod(done, steps)
    history.truncate(first_epoch)
    step_log.truncate(done)
    # The history line of an epoch is written before its checkpoint.
    callbacks = [nan_guard, throughput, step_log, history, checkpoint]
    if resuming and offset:
        callbacks.insert(0, RestoreEpochLoss(
            checkpoint_progress(checkpoint_path).get("epoch_loss_state")))
    if chief:
        _truncate_csv(output / "history.csv", first_epoch)
        callbacks += [keras.callbacks.CSVLogger(str(output / "history.csv"), append=True),
                      keras.callbacks.TensorBoard(str(output / "tensorboard"), update_freq="epoch",
                                                  write_graph=False)]
    monitor = _knn_monitor(config, train_split, place)
    if monitor is not None:
        monitor.encoder = encoder_model
        callbacks.insert(2, monitor)

    fit_start = time.perf_counter()
    fit_verbose = keras_verbose(verbose)  # a live bar on a terminal, else a plain line per epoch
    if done < epochs * steps:
        batches = batches_from(done)
        if offset:  # finish the interrupted epoch, then the rest on the same stream
            batches_now, batches = batches.take(steps - offset), batches.skip(steps - offset)
            model.fit(batches_now, epochs=first_epoch + 1, initial_epoch=first_epoch, shuffle=False,
                      steps_per_epoch=steps - offset, verbose=fit_verbose, callbacks=callbacks)
            first_epoch += 1
        if first_epoch < epochs and nan_guard.failed_at is None:
            model.fit(batches, epochs=epochs, initial_epoch=first_epoch, steps_per_epoch=steps, shuffle=False,
                      verbose=fit_verbose, callbacks=callbacks)
    fit_seconds = time.perf_counter() - fit_start
    if nan_guard.failed_at is not None:
        epoch, batch, loss = nan_guard.failed_at
        where = (f"{checkpoint_path} (step {checkpoint.saved_step})"
                 if checkpoint.saved_step is not None else "none (nothing was saved)")
        raise TrainingDiverged(
            f"Training stopped: the loss became {loss} at epoch {epoch + 1}, batch {batch + 1}. "
            f"Last good checkpoint: {where}. Try a lower training.learning_rate."
        )
    if not chief:
        return None

    with portable_batch_norm(model):
        atomic_write(output / "encoder.keras", lambda tmp: encoder_model.save(tmp), suffix=".keras")
    # Evaluate the saved file, outside the strategy (all of it runs on this process).
    encoder = keras.saving.load_model(output / "encoder.keras")
    rows = [json.loads(line) for line in (output / "history.jsonl").read_text().splitlines()]
    eval_spec = config["eval"]
    report = None
    if eval_spec.get("report", True):
        from clzoo.eval.report import evaluate

        metrics_wanted = sorted(set(eval_spec.get("metrics") or ["knn"]) | {"knn"})
        report = evaluate(encoder, config["data"], metrics=metrics_wanted,
                          output_dir=output / "eval", verbose=bool(verbose), train=train_split,
                          ks=tuple(eval_spec["knn_k"]),
                          info={"model": str(output / "encoder.keras"), "data": str(config["data"])})
        knn = report.metrics["knn"]
    else:
        knn = evaluate_encoder(encoder, config["data"], ks=eval_spec["knn_k"], verbose=verbose,
                               train=train_split)
    headline = f"k{eval_spec['knn_headline_k']}"
    metrics = {
        "knn_top1": knn.get(headline, next(iter(knn.values()))),
        "knn_top1_k": int(headline[1:]) if headline in knn else int(next(iter(knn))[1:]),
        "knn_top1_by_k": knn,
        "final_train_loss": rows[-1]["loss"] if rows else float("nan"),
        "epochs": epochs,
        "steps": epochs * steps,
        "resumed_from_step": done if resuming else None,
        "train_images": len(train_split),
        "images_per_second": throughput.images_per_second,
        "views_per_second": throughput.images_per_second * view_config.views,
        "fit_seconds": fit_seconds,
        "wall_seconds": time.perf_counter() - started,
        "backend": keras.backend.backend(),
        **place.describe(),
        "versions": environment(place)["versions"],
    }
    if task == "soft_target":  # the trained classifier itself, on the test split
        test = load_split(config["data"], "test")
        logits = model.predict(eval_dataset(test.images, size=view_config.size), verbose=0)
        probabilities = keras.ops.convert_to_numpy(keras.ops.softmax(logits))
        metrics["classifier_top1"] = float(np.mean(probabilities.argmax(1) == test.labels))
        metrics["classifier_ece"] = reliability(probabilities, test.labels).ece
    wanted = tuple(eval_spec.get("baselines") or ())
    if wanted:
        metrics["baselines"] = _baselines(config, wanted, train_split, view_config.size,
                                          probe="linear_probe" in (report.metrics if report else {}),
                                          verbose=bool(verbose))
    if report is not None:
        for key in ("ncc_accuracy", "linear_probe"):
            if key in report.metrics:
                metrics[key] = (report.metrics[key]["accuracy"] if key == "linear_probe"
                                else report.metrics[key])
    atomic_write_text(output / "metrics.json", json.dumps(metrics, indent=2) + "\n")
    return metrics


def _check_baselines(wanted):
    from clzoo.eval.baselines import BASELINES

    unknown = sorted(set(wanted or ()) - set(BASELINES))
    if unknown:
        raise ValueError(f"`eval.baselines` must be a subset of {list(BASELINES)}. "
                         f"Received: eval.baselines={list(wanted)}")


def _baselines(config, wanted, train_split, size, probe, verbose):
    """Raw-pixel and random-init rows beside the trained encoder (`eval.baselines`)."""
    from clzoo.eval.baselines import baseline_metrics

    random_encoder = None
    if "random_init" in wanted:  # the recipe's encoder before its first step (same seed)
        keras.utils.set_random_seed(int(config["seed"]))
        random_encoder = get_encoder(config["model"]["architecture"], input_shape=(size, size, 3),
                                     name="encoder")
    rows = baseline_metrics(train_split, load_split(config["data"], "test"), random_encoder,
                            ks=tuple(config["eval"]["knn_k"]), probe=probe, size=size,
                            verbose=verbose)
    return {name: rows[name] for name in wanted}


def _prebuild_for_multi_worker(model, element_spec, local_batch):
    """Work around Keras 3's `fit` under MultiWorkerMirroredStrategy.

    Builds metrics, loss and optimizer now and skips Keras' first-batch
    build in `fit`: Keras 3.15's TF `fit` reduces the first distributed batch with
    `strategy.reduce("MEAN", (x, y))` before building, which
    MultiWorkerMirroredStrategy rejects for a tuple (ValueError: PerReplica
    to Tensor). A model built here from symbolic shapes does not need it.
    """
    batch = tuple(np.zeros((local_batch, *spec.shape[1:]), spec.dtype.as_numpy_dtype)
                  for spec in element_spec)
    model._symbolic_build(data_batch=batch)
    model._maybe_symbolic_build = lambda iterator=None, data_batch=None: None
    # It then reduces each step's logs with strategy.reduce("MEAN", v, axis=0), which fails
    # on scalars (tensorflow/tensorflow#72388): hand it shape-(1,) logs instead.
    train_step = model.train_step
    model.train_step = lambda data: {name: keras.ops.reshape(value, (1,))
                                     for name, value in train_step(data).items()}


def _truncate_csv(path, epochs):
    """Drop CSV rows of epochs past the checkpoint (CSVLogger writes 0-based epochs)."""
    if not path.exists():
        return
    lines = path.read_text().splitlines()
    kept = lines[:1] + [line for line in lines[1:] if line and int(line.split(",")[0]) < epochs]
    atomic_write_text(path, "".join(line + "\n" for line in kept))


def _knn_monitor(config, train_split, place):
    """The online kNN monitor of `eval.monitor_every` (None when 0 or multi-worker)."""
    from clzoo.eval.monitor import KNNMonitor

    every = int(config["eval"].get("monitor_every") or 0)
    if not every:
        return None
    if place.name == "multi_worker":
        print("note: the online kNN monitor is off under multi_worker (each worker would "
              "embed on its own); the final report still runs on the chief.")
        return None
    test = load_split(config["data"], "test")
    rng = np.random.default_rng(int(config["seed"]))
    memory = rng.permutation(len(train_split))[: int(config["eval"].get("monitor_memory", 10000))]
    query = rng.permutation(len(test))[: int(config["eval"].get("monitor_queries", 2000))]
    return KNNMonitor(train_split.images[memory], train_split.labels[memory],
                      test.images[query], test.labels[query],
                      ks=(int(config["eval"]["knn_headline_k"]),), every=every)
