"""`clzoo train`: check the recipe, build, fit, evaluate, save: one run, top to bottom."""

import os
import platform
import sys
import time

import keras
import numpy as np

from clzoo.compat import prebuild_for_multi_worker
from clzoo.data.checks import check_data
from clzoo.data.sources import data_source
from clzoo.eval.records import read_run
from clzoo.installed import refuse_installed_packages
from clzoo.machine import torch_threads_for_load
from clzoo.models import adapt_whitening, test_time_averaged
from clzoo.saving import load_model
from clzoo.train.builders import build_loss, build_optimizer, views_from_config
from clzoo.train.determinism import seed_everything
from clzoo.train.distribute import (
    chief_alone,
    finish_together,
    per_worker_batches,
    placement,
    portable_batch_norm,
    synchronize_batch_norm,
    tf_worker_count,
    write_once,
)
from clzoo.train.divergence import divergence_advice
from clzoo.train.evaluation import final_metrics, label_free_metrics
from clzoo.train.fit import TrainingPlan, resumable_fit
from clzoo.train.levers import build_levers
from clzoo.train.precision import dtype_policy, inner_optimizer, scaled
from clzoo.train.ram_estimate import check_step_memory
from clzoo.train.recipe import Recipe, RecipeError, validate_recipe
from clzoo.train.resume_checks import check_checkpoint, check_same_data, check_same_model, data_record
from clzoo.train.run_data import check_against_data, load_data
from clzoo.train.run_folder import RunFolder
from clzoo.train.tasks import TASKS
from clzoo.train.torch_processes import replicate
from clzoo.version import __version__


def train(recipe, output_dir, verbose=1, strategy=None, resume=False):
    """Run a recipe end to end and return its metrics.

    Everything that can be checked without decoding data is checked first
    (recipe, data spec, batch size, strategy, run folder), then the data is
    loaded and the model built; nothing is written before all of that
    passed, so a refused run leaves nothing behind. Writes into `output_dir`,
    each file atomically: `recipe.yaml` and its fingerprint `recipe.sha256`
    (checked on resume), `environment.json`, `checkpoint.keras` (weights + optimizer
    state, every epoch and every `training.checkpoint_every_steps`),
    `history.jsonl` / `history.csv`, `steps.jsonl`, `tensorboard/`,
    `encoder.keras`, the `clzoo eval` report in `eval/`, and `metrics.json` last.

    Args:
        recipe: a `Recipe` (`load_recipe`) or a dict of recipe sections.
        output_dir: the run folder.
        verbose: 0 silent, 1 progress (a live bar on a terminal, one plain
            line per epoch when stdout is redirected).
        strategy: "auto", "one_device", "mirrored" or "multi_worker";
            defaults to the recipe's `training.strategy`.
        resume: continue from `output_dir/checkpoint.keras` at the step it
            holds (same optimizer state, schedule position and data order).
            A finished run is left as it is and its metrics are returned.

    Returns:
        the run's `clzoo.eval.records.RunResult` (what `read_run(output_dir)` reads back:
        `knn_top1`, `knn`, `probe`, `baselines`, `loss_curve`, ...; None on non-chief
        workers of a multi-worker run).

    Raises:
        RecipeError: a recipe, data spec or batch size that cannot run.
        TrainingDiverged: the loss turned NaN; `checkpoint.keras` holds the last finite state.
        TrainingInterrupted: SIGTERM / SIGINT; the checkpoint holds the step reached.
        FileExistsError: `output_dir` holds a run and `resume` is False, holds
            files that no run wrote, or another process is writing it.
        ValueError: resuming with a recipe that differs from the saved one, or
            after the run's `recipe.yaml` was edited; `output_dir` inside an installed
            package's folder (`clzoo.installed`).
    """
    recipe = recipe if isinstance(recipe, Recipe) else validate_recipe(recipe)
    run, place = RunFolder(output_dir), placement(strategy or recipe.training.strategy)
    source, loading = _check_before_work(recipe, place, run.path)
    with run.owned(enabled=place.is_chief), dtype_policy(recipe.training.precision):
        quiet = keras.backend.backend() == "torch" and not place.is_chief  # rank 0 speaks for all
        summary = _run(recipe, run, place, (source, loading), 0 if quiet else verbose, resume,
                       _pipeline(recipe, place))
    return None if summary is None else read_run(run.path)


def _run(recipe, run, place, data, verbose, resume, pipeline):
    """`train` once this process owns the run folder; `data` is `(DataSource, (loading, why))`."""
    source, (loading, loaded_why) = data
    if run.guard(recipe, resume) == "finished":
        if verbose:
            print(f"{run.path} is finished (metrics.json); nothing to resume.")
        return run.read_metrics()
    resuming = run.state() == "started"
    recorded = _recorded_environment(run) if resuming else {}
    if resuming:
        pipeline = _kept_pipeline(run, recorded, recipe, place, pipeline, verbose)
    started = time.perf_counter()
    seed_everything(recipe.seed, deterministic=recipe.training.deterministic)
    task, views = TASKS.get(recipe.task)(), views_from_config(recipe.views)
    train_split, test_split = load_data(source, loading == "stream", views.size)
    for split in (train_split, test_split):  # a streamed refusal of mixed sizes names the value
        if split is not None and hasattr(split.images, "suggested_size"):  # None: no test split
            split.images.suggested_size = views.size
    _check_batch_views_size(views, train_split, recipe)
    plan = _plan(recipe, train_split, place)
    levers = build_levers(recipe.training.levers, total_steps=plan.epochs * plan.steps)
    model = _model(recipe, task, views, train_split, plan, place, run if resuming else None, levers)
    record = data_record(train_split, plan)
    if resuming:  # after the checkpoint's own checks, which name a changed class count
        check_same_data(run, recorded, record)  # first: other data also changes the schedule
        check_same_model(model, recipe, task, views, len(train_split.class_names), plan.steps,
                         levers, run.checkpoint)
    encoder = task.encoder(model)
    check_step_memory(recipe, encoder, getattr(views, "views", 1),
                      on_cpu=all("cpu" in str(d).lower() for d in place.devices))
    shard = _data_shard(place, task, views, pipeline)
    # before the first step: the run records what it trained with, and a resume takes it again
    threads = torch_threads_for_load(recorded=recorded.get("torch_threads"))
    if place.is_chief:  # the first write: everything above may still refuse the run
        run.prepare(recipe, {**environment(place), "pipeline": pipeline,
                             "precision": recipe.training.precision, "data_loading": loading,
                             "data_loading_why": loaded_why, "data_shards": shard[1] if shard else 1,
                             "torch_threads": threads, **record}, resuming)
    done = int(keras.ops.convert_to_numpy(model.optimizer.iterations))
    if verbose:
        print(_banner(recipe, place, train_split, encoder, done if resuming else None, plan, pipeline)
              + f"\ndata: {'streamed from its files' if loading == 'stream' else 'held in memory'} "
              f"({loaded_why})" + (f"; each of {shard[1]} processes reads its rows" if shard else ""))
        if threads:
            print(threads["note"])
    fitted = resumable_fit(model, _stream_from(task, train_split, recipe, views, pipeline, place, shard),
                           run, plan, place, verbose,
                           _knn_monitor(recipe, train_split, test_split, place, encoder), levers)
    _save_encoder(run, encoder, recipe, model, place)
    if not place.is_chief:
        finish_together(place)  # wait for the chief's evaluation: it hosts the JAX coordinator
        return None
    with chief_alone(place), dtype_policy("float32"):
        # Evaluate the saved file, outside the strategy (all of it runs on this process) and
        # outside training.precision (probes and baselines built as `clzoo eval` builds them).
        metrics = _end_of_run_metrics(recipe, run, (train_split, test_split), task, model, views,
                                      verbose)
        metrics.update(_run_facts(run, plan, fitted, views, place, train_split, started,
                                  done if resuming else None))
        metrics["pipeline"], metrics["data_loading"] = pipeline, loading
        run.write_metrics(metrics)
    return metrics


def _end_of_run_metrics(recipe, run, splits, task, model, views, verbose):
    """The saved encoder's evaluation: the report, or the label-free metrics of an unlabelled folder."""
    train_split, test_split = splits
    saved = load_model(run / "encoder.keras")
    if test_split is None:
        return label_free_metrics(recipe, saved, train_split, views, verbose)
    metrics = final_metrics(recipe, saved, train_split, test_split, run / "eval",
                            run / "encoder.keras", verbose)
    metrics.update(task.extra_metrics(model, recipe, views, test_split))
    metrics["test_images"] = len(test_split)  # what the kNN and probe figures were measured on
    return metrics


def _save_encoder(run, encoder, recipe, model, place):
    """`encoder.keras`, written once: by the chief, while the others (JAX over several
    processes) take part in the collective save and drop their copy."""
    with portable_batch_norm(model):
        test_time = recipe.model.test_time
        shipped = encoder if test_time is None else test_time_averaged(encoder, test_time.translate)
        write_once(place, run / "encoder.keras", shipped.save, suffix=".keras")


def _pipeline(recipe, place):
    """The stream the run trains on, a name of `clzoo.data.streams.STREAMS` (`choose_stream`), checked
    before any data is decoded."""
    from clzoo.data.streams import choose_stream

    try:
        return choose_stream(recipe.training.pipeline, _run_shape(recipe, place))
    except ValueError as error:
        raise RecipeError([str(error)]) from None


def _run_shape(recipe, place):
    """What the run asks of its stream (`clzoo.data.streams.RunShape`); `place` None: one device."""
    from clzoo.data.streams import RunShape

    placed = {} if place is None else dict(processes=place.processes, replicas=place.replicas,
                                           strategy=place.name)
    return RunShape(TASKS.get(recipe.task).kind, views_from_config(recipe.views),
                    keras.backend.backend(), **placed)


def _stream_from(task, split, recipe, views, pipeline, place, shard):
    """The run's stream from a step: this process's rows (`shard`), or on TensorFlow's
    `multi_worker` each worker's rows through `tf.distribute.InputContext`."""
    def stream(step):
        build = lambda part: task.batches(split, recipe, views, step, pipeline, part)  # noqa: E731
        if shard and keras.backend.backend() == "tensorflow":
            return per_worker_batches(place.strategy, build, recipe.training.batch_size)
        return build(shard)

    return stream


def _data_shard(place, task, views, pipeline):
    """`(process index, process count)` when each process reads only its rows of every global
    batch: JAX or torch processes on the device stream, or on tf.data with per-image views (JAX:
    Keras then takes each process's batch as its own, not sharding the whole stream after every
    process decoded all of it; TensorFlow's `multi_worker`: each worker's input pipeline, the
    index its `InputContext`'s); None otherwise."""
    from clzoo.data.augmentation_settings import ViewConfig

    backend = keras.backend.backend()
    if task.kind != "views" or (pipeline == "tf_data" and not isinstance(views, ViewConfig)):
        return None
    if backend == "tensorflow":
        workers = tf_worker_count(place)
        return (place.strategy.cluster_resolver.task_id, workers) if workers > 1 else None
    if place.processes < 2:
        return None
    if backend == "torch":
        import torch.distributed as dist

        return dist.get_rank(), dist.get_world_size()
    import jax

    keras.distribution.distribution().auto_shard_dataset = False
    return jax.process_index(), jax.process_count()


def _recorded_environment(run):
    """The run's `environment.json` as a dict, read once on resume; `{}` when it is missing or
    unreadable (a run from before it was written: nothing to compare with)."""
    import json

    try:
        recorded = json.loads((run / "environment.json").read_text())
    except (OSError, ValueError):
        return {}
    return recorded if isinstance(recorded, dict) else {}


def _kept_pipeline(run, recorded, recipe, place, pipeline, verbose):
    """On resume, the stream the run started on (`recorded`, its `environment.json`), so its batches
    continue; `auto` may have chosen otherwise on this backend. A stream that cannot run here is
    refused."""
    if not recorded:
        return pipeline
    started_on = recorded.get("pipeline", "tf_data")
    if started_on == pipeline or recipe.training.pipeline != "auto":
        return pipeline
    from clzoo.data.streams import choose_stream

    try:
        kept = choose_stream(started_on, _run_shape(recipe, place))
    except ValueError as error:
        raise RecipeError([f"{run.path} started on the {started_on} stream, which cannot run "
                           f"here: {error}"]) from None
    if verbose:
        print(f"note: resuming on the {kept} stream the run started on (training.pipeline: auto "
              f"would choose {pipeline} on the {keras.backend.backend()} backend)")
    return kept


def _check_before_work(recipe, place, output):
    """The checks that need the data spec, the strategy or the output; nothing is decoded or written.

    Returns the spec resolved to a `DataSource`, which the run reads its splits from, and
    `(loading, why)`: `"memory"` or `"stream"` (`clzoo.data.memory_budget.choose_loading`)."""
    refuse_installed_packages(output)
    try:
        source = data_source(recipe.data, image_size=recipe.image_size)
        data = check_data(source, recipe.data_loading)
    except ValueError as error:
        raise RecipeError([f"data = {recipe.data!r}: {error}"]) from None
    several_torch = keras.backend.backend() == "torch" and place.processes > 1
    if (place.collective_saves or several_torch) and recipe.task == "soft_target":
        # JAX: its final classifier metrics run the trained (cross-process) model on the chief
        # alone; torch: its classifier's step is Keras' own, which no process averages
        name = {"jax": "JAX", "torch": "PyTorch"}.get(keras.backend.backend(), keras.backend.backend())
        raise RecipeError([f"task = {recipe.task!r}: not supported over several {name} processes "
                           f"({place.processes}); use task contrastive, or one process"])
    batch = recipe.training.batch_size
    if batch % place.replicas:
        raise RecipeError([f"training.batch_size = {batch}: the global batch must divide evenly "
                           f"over the {place.replicas} replicas"])
    if data.train_images is not None and batch > data.train_images:
        raise _batch_too_large(batch, data.train_images, recipe.data)
    check_against_data(recipe, data, source, output)
    return source, _loading(recipe, source, data)


def _loading(recipe, source, data):
    """Whether the run holds its splits in memory or streams them from their files, and why."""
    from clzoo.data.memory_budget import choose_loading, memory_budget

    wanted = recipe.data_loading
    if wanted == "stream" and not source.streams():
        how = (" (tfds build --file_format=array_record prepares a tfds dataset so)"
               if str(recipe.data).startswith("tfds:") else "")
        raise RecipeError([f"data_loading = stream: streaming reads image folders and tfds splits in "
                           f"ArrayRecord files{how}; {recipe.data} is held in memory (data_loading: "
                           "memory or auto)"])
    try:
        budget = memory_budget() if wanted == "auto" else (None, "")
    except ValueError as error:
        raise RecipeError([str(error)]) from None
    count = data.train_images  # None for a tfds split: its info gives its size
    size = None if wanted != "auto" else source.decoded_bytes(count)
    return choose_loading(wanted, size, budget)


def _check_batch_views_size(views, split, recipe):
    """Batch views (airbench's) crop and shift the images as they are, without resizing: data of
    another size is refused naming both ways out (a Keras shape error deep in fit before)."""
    from clzoo.data.augmentation_settings import BatchViewConfig

    height, width = split.images.shape[1:3]
    if isinstance(views, BatchViewConfig) and (height, width) != (views.size, views.size):
        raise RecipeError([f"views.size = {views.size}: the airbench views take the images as "
                           f"they are, and {recipe.data} holds {width}x{height} images: pass "
                           f"--image-size {views.size} (resize on load) or --set views.size={height}"])


def _batch_too_large(batch, images, data):
    return RecipeError([f"training.batch_size = {batch}: larger than the {images} training "
                        f"images of {data}"])


def _plan(recipe, train_split, place):
    spec = recipe.training
    if spec.batch_size > len(train_split):  # when the size was unknown before loading
        raise _batch_too_large(spec.batch_size, len(train_split), recipe.data)
    return TrainingPlan(spec.epochs, len(train_split) // spec.batch_size, spec.batch_size,
                        spec.checkpoint_every_steps, spec.log_every_steps, divergence_advice(recipe))


def compile_as_new(model):
    """Set a loaded checkpoint's `jit_compile` to what a fresh run compiles with on this backend:
    the saved value is the backend's that wrote it (a JAX run's `True` turned on `torch.compile`
    on torch, 276 s a step against 0.2)."""
    resolve = getattr(model, "_resolve_auto_jit_compile", None)  # Keras' own rule for "auto"
    if resolve is not None:
        model.jit_compile = resolve()


def _model(recipe, task, views, train_split, plan, place, resume_from, levers=()):
    """Build and compile the model (or load the checkpoint) inside the strategy's scope; each
    lever configures the optimizer (a resumed run's: checks it)."""
    with place.scope():
        if resume_from is not None:
            model = load_model(resume_from.checkpoint)
            check_checkpoint(model, task, recipe, views, resume_from.checkpoint,
                             len(train_split.class_names))
            compile_as_new(model)
            optimizer = inner_optimizer(model.optimizer)
        else:
            loss = build_loss(recipe)  # first: a learnable temperature is a weight of the model
            model = task.build_model(recipe, views, len(train_split.class_names),
                                     getattr(loss, "temperature_layer", None))
            adapt_whitening(task.encoder(model), train_split.images, seed=recipe.seed)
            optimizer = build_optimizer(recipe, plan.steps)
        for lever in levers:
            lever.configure(optimizer)
        if resume_from is None:
            model.compile(optimizer=scaled(optimizer, recipe.training.precision), loss=loss)
        if place.strategy is not None and place.replicas > 1:
            synchronize_batch_norm(model)
        if keras.backend.backend() == "torch" and place.processes > 1:
            replicate(model)  # torch.distributed: one replica per process
        if place.strategy is not None and place.name == "multi_worker":
            element_spec = task.batches(train_split, recipe, views, 0, "tf_data").element_spec
            prebuild_for_multi_worker(model, element_spec, plan.batch_size // place.replicas)
    return model


def _banner(recipe, place, train_split, encoder, resumed_at, plan, pipeline):
    return (f"clzoo {__version__} | keras {keras.__version__} ({keras.backend.backend()}, "
            f"{place.name} x{place.replicas}, {pipeline} stream) | {recipe.data}: "
            f"{len(train_split)} train images, " + (
                f"{len(train_split.class_names)} classes" if train_split.labelled else "unlabelled")
            + f" | encoder {recipe.model.encoder.name} "
            f"({encoder.count_params():,} params) | loss {recipe.loss.name} | "
            f"{recipe.training.precision} | parts: {', '.join(recipe.model.parts) or 'none'}"
            + (f" | resuming at step {resumed_at} of {plan.epochs * plan.steps}"
               if resumed_at is not None else "")
            + f"\nplan: {plan.epochs} epochs x {plan.steps:,} steps x batch {plan.batch_size:,} = "
              f"{plan.epochs * plan.steps * plan.batch_size:,} images (speed and time left after "
              "the first steps)")


def _run_facts(run, plan, fitted, views, place, train_split, started, resumed_from):
    """Training facts of `metrics.json`: loss, sizes, speed, versions."""
    import json

    rows = [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines()]
    return {
        "final_train_loss": rows[-1]["loss"] if rows else None,
        "epochs": plan.epochs,
        "steps": plan.epochs * plan.steps,
        "resumed_from_step": resumed_from,
        "train_images": len(train_split),
        "images_per_second": fitted.images_per_second,
        "views_per_second": (None if fitted.images_per_second is None
                             else fitted.images_per_second * views.views),
        "fit_seconds": fitted.seconds,
        "wall_seconds": time.perf_counter() - started,
        "backend": keras.backend.backend(),
        **place.describe(),
        "versions": _versions(),
    }


def _versions():
    versions = {"clzoo": __version__, "keras": keras.__version__, "numpy": np.__version__,
                "python": platform.python_version()}
    for module in ("tensorflow", "jax", "torch"):
        if module in sys.modules:
            versions[module] = getattr(sys.modules[module], "__version__", "?")
    return versions


def environment(place):
    """Software versions, devices and command line of this process, for the run folder."""
    return {"backend": keras.backend.backend(), "versions": _versions(), **place.describe(),
            "platform": platform.platform(), "cpu_count": os.cpu_count(), "argv": sys.argv,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def _knn_monitor(recipe, train_split, test, place, encoder):
    """The online kNN monitor of `eval.monitor_every` (None when 0 or multi-worker)."""
    from clzoo.eval.monitor import KNNMonitor

    spec = recipe.eval
    if not spec.monitor_every:
        return None
    if test is None:
        print(f"note: the online kNN monitor (eval.monitor_every = {spec.monitor_every}) is off: an "
              "unlabelled folder has no labels to classify")
        return None
    if place.name == "multi_worker" or place.processes > 1:
        print("note: the online kNN monitor is off under multi_worker (each worker would "
              "embed on its own); the final report still runs on the chief.")
        return None
    rng = np.random.default_rng(recipe.seed)
    memory = rng.permutation(len(train_split))[: spec.monitor_memory]
    query = rng.permutation(len(test))[: spec.monitor_queries]
    return KNNMonitor(train_split.images[memory], train_split.labels[memory],
                      test.images[query], test.labels[query],
                      ks=(spec.knn_headline_k,), every=spec.monitor_every, encoder=encoder)
