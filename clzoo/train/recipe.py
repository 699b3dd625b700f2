"""Typed recipes: one schema per section, defaults in one place, every value checked before work.

A recipe is YAML with the sections below; `load_recipe` reads it, applies
`section.key=value` overrides and returns a validated `Recipe`. Every
problem is reported at once, one line each, naming the file, key and value
(`RecipeError`), before any data is decoded or any folder is written.
Loss and view keyword arguments are passed on only when the recipe gives
them, so each loss keeps its own defaults (SpreadLoss: temperature 0.5).
"""

import contextlib
import re
import typing
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from clzoo.data.checks import DEFAULT_KS
from clzoo.registry import did_you_mean
from clzoo.train.recipe_components import (
    OptimizerSpec,
    ScheduleSpec,
    Section,
    as_section,
    float32_positive,
    light_pass,
    needs_keras,
    non_finite,
)
from clzoo.train.recipe_errors import MAX_LINE, RecipeError, _short, _where
from clzoo.train.recipe_model import ModelSpec
from clzoo.train.recipe_overrides import _apply_overrides, _left_out
from clzoo.train.recipe_upgrade import (
    RECIPE_VERSION,
    UpgradeError,
    inert_key_dropped,
    reading_stored_recipe,
    upgrade,
)
from clzoo.train.recipe_yaml import read_recipe_file


class LossSpec(BaseModel):
    """`name` plus the loss class's own keyword arguments (only those the recipe gives)."""

    model_config = ConfigDict(extra="allow", strict=True)
    name: str = "SINCERELoss"  # a clzoo.losses class name, or SoftTargetCrossEntropy (task soft_target)

    @property
    def kwargs(self):
        return dict(self.model_extra or {})

    @model_validator(mode="after")
    @needs_keras
    def _builds(self):
        from clzoo.registry import check_kwargs
        from clzoo.train.builders import loss_class

        cls = loss_class(self.name)
        check_kwargs(cls, self.kwargs, "loss")
        for key in ("temperature", "epsilon", "margin"):
            float32_positive(self.kwargs.get(key), key)
        cls(**self.kwargs)  # the class's own checks (temperature > 0, ...)
        return self


class TrainingSpec(Section):
    epochs: PositiveInt = 10  # passes over the training split
    batch_size: PositiveInt = 256  # global batch, split over replicas
    # {name, **settings}: a clzoo.optimizers.OPTIMIZERS name (sgd | adamw | lars | lookahead_sgd)
    # and its factory's settings, e.g. {name: sgd, momentum: 0.9, nesterov: true, weight_decay: 1e-4};
    # a name alone is the factory's defaults. Flat keys of earlier recipes (momentum, ...) move in.
    optimizer: OptimizerSpec = Field(default_factory=OptimizerSpec)
    learning_rate: PositiveFloat = 0.1  # peak, after warm-up
    # {name, **settings}: a clzoo.optimizers.SCHEDULES name (cosine | linear | constant), e.g.
    # {name: cosine, warmup_epochs: 10, warmup_start_fraction: 1e-3, final_learning_rate_fraction: 0}
    schedule: ScheduleSpec = Field(default_factory=ScheduleSpec)
    deterministic: bool = True  # deterministic kernels: same seed, same run (CPU)
    # where it runs (docs/training.md): auto = MirroredStrategy when >1 GPU (TensorFlow), torchrun's
    # processes (PyTorch), else one device
    strategy: Literal["auto", "one_device", "mirrored", "multi_worker"] = "auto"
    # the training stream (clzoo.data.device_stream): device = views computed on the accelerator
    # with keras.ops, no TensorFlow; tf_data = clzoo.data.batches; auto = device on JAX / torch
    # where the task and views have a device form, else tf_data
    pipeline: Literal["auto", "device", "tf_data"] = "auto"
    checkpoint_every_steps: PositiveInt | None = None  # also every N steps (always per epoch)
    log_every_steps: PositiveInt | None = None  # steps.jsonl rows; default once per epoch
    # clzoo.train.levers, each {name, **settings}, built to check it: e.g. [{name: ema, momentum: 0.99}]
    levers: list[dict] = Field([], max_length=16)
    # Keras dtype policy of the model (clzoo.train.precision): mixed_* compute layers in half
    # precision with float32 weights; mixed_float16 adds loss scaling; losses stay float32
    precision: Literal["float32", "mixed_bfloat16", "mixed_float16"] = "float32"

    @field_validator("learning_rate")
    @classmethod
    def _learning_rate_in_float32(cls, value):
        return float32_positive(value)

    @model_validator(mode="before")
    @classmethod
    def _sections_from_names(cls, data):
        """`optimizer: sgd` as `{name: sgd}`."""
        if isinstance(data, dict):
            data = {key: as_section(value) if key in ("optimizer", "schedule") else value
                    for key, value in data.items()}
        return data

    @field_validator("levers")
    @classmethod
    @needs_keras
    def _levers_build(cls, levers):
        from clzoo.train.levers import build_levers

        build_levers(levers)
        return levers

    @model_validator(mode="after")
    @needs_keras
    def _warmup_fits(self):
        warmup = self.schedule.setting("warmup_epochs")  # a schedule without warm-up: None
        if (warmup or 0) > self.epochs:
            raise ValueError(f"training.schedule.warmup_epochs ({warmup}) is longer than training "
                             f"(training.epochs {self.epochs}): shorten the warm-up too, e.g. --set "
                             f"training.schedule.warmup_epochs={max(0, self.epochs // 10)}")
        return self


class EvalSpec(Section):
    knn_k: list[PositiveInt] = Field(list(DEFAULT_KS), min_length=1)  # the kNN's neighbour counts
    knn_headline_k: PositiveInt = 20  # the k reported as knn_top1; must be in knn_k
    monitor_every: NonNegativeInt = 0  # epochs between online kNN measurements (0: off)
    monitor_memory: PositiveInt = 10000  # training images the monitor uses as memory
    monitor_queries: PositiveInt = 2000  # test images it classifies
    report: bool = True  # the `clzoo eval` report in <run>/eval at the end
    # the report's metrics (clzoo.eval: kNN, nearest class centre, linear probe, calibration, margins)
    metrics: list[str] = ["knn", "ncc", "probe", "calibration", "separation"]
    # the same kNN / probe on raw pixels and the untrained encoder, beside the trained one
    baselines: list[Literal["raw_pixels", "random_init"]] = ["raw_pixels", "random_init"]

    @field_validator("metrics")
    @classmethod
    @needs_keras
    def _known_metrics(cls, names):
        from clzoo.eval import parse_metrics

        parse_metrics(names)
        return names

    @model_validator(mode="after")
    def _headline_measured(self):
        if self.knn_headline_k not in self.knn_k:
            raise ValueError(f"knn_headline_k ({self.knn_headline_k}) must be one of knn_k "
                             f"{self.knn_k}")
        return self


class Recipe(Section):
    """A whole recipe. Sections: `model`, `loss`, `views`, `mix`, `training`, `eval`.

    `views` holds `clzoo.data.ViewConfig` fields, optionally on top of
    `recipe: <view recipe name>`; `mix` holds `clzoo.data.MixConfig` fields
    (task `soft_target`). Both are checked by building the config.
    """

    # the key spelling the recipe is written in (clzoo.train.recipe_upgrade); absent: 1, the
    # earliest, whose flat keys are moved into their sections with a note on reading
    recipe_version: Literal[2] = RECIPE_VERSION
    _upgrade_notes: list = PrivateAttr(default_factory=list)
    _override_notes: list = PrivateAttr(default_factory=list)
    name: str = "run"  # the default run folder is runs/<name>-<time>
    # one line, at most 200 characters: what the recipe trains and for how long (`clzoo list
    # recipes` shows it); a resumed run may change it
    description: str | None = Field(None, max_length=200)
    # weights, data order and views: the same seed gives the same run (CPU); 0 .. 2**32 - 1
    seed: NonNegativeInt = Field(0, lt=2**32)
    # clzoo.data.load_split spec: digits, a folder, tfds:NAME[@label_set]
    data: str = Field("digits", min_length=1, max_length=4096)
    # resize every image to image_size x image_size on load (image sets of mixed sizes); None keeps them
    image_size: PositiveInt | None = Field(None, le=4096)
    # image folders: memory = decode all before step 1; stream = decode each batch from the files
    # (data larger than memory); auto = stream when the decoded training split exceeds half the
    # memory this process may use (the room under a cgroup limit counts; env CLZOO_MEMORY_BUDGET
    # overrides, with a unit: 2GB); memory refuses, before decoding, a folder over that memory
    data_loading: Literal["auto", "memory", "stream"] = "auto"
    # contrastive: encoder + head on multi-view batches; soft_target: a classifier on MixUp / CutMix
    task: Literal["contrastive", "soft_target"] = "contrastive"
    model: ModelSpec = Field(default_factory=ModelSpec)
    loss: LossSpec = Field(default_factory=LossSpec)
    views: dict = {}  # clzoo.data.ViewConfig fields, optionally on top of `recipe: <view recipe>`
    mix: dict = {}  # clzoo.data.MixConfig fields (task soft_target)
    training: TrainingSpec = Field(default_factory=TrainingSpec)
    eval: EvalSpec = Field(default_factory=EvalSpec)

    @field_validator("name")
    @classmethod
    def _folder_name(cls, name):
        if (not 0 < len(name) <= 100 or any(c in name for c in "/\\") or name in (".", "..")
                or not name.isprintable()):
            raise ValueError("must be 1-100 printable characters without / or \\ (it names the run "
                             "folder)")
        return name

    @field_validator("description")
    @classmethod
    def _one_line(cls, text):
        if text is not None and not text.isprintable():
            raise ValueError("must be one line of printable characters (no line break or tab)")
        return text

    @field_validator("views")
    @classmethod
    def _views_build(cls, spec):
        from clzoo.data.augmentation_settings import views_from_config

        views_from_config(spec)
        return spec

    @field_validator("mix")
    @classmethod
    def _mix_builds(cls, spec):
        from clzoo.data import MixConfig
        from clzoo.registry import check_kwargs

        check_kwargs(MixConfig, spec, "mix")
        MixConfig(**spec)
        return spec

    @model_validator(mode="after")
    @needs_keras
    def _parts_fit_the_run(self):
        """Each model part and training lever may refuse the task, the loss or the other parts
        (`refuse(context)`: a queue needs an embedding loss, GradCache task contrastive, ...)."""
        from clzoo.parts import PartContext, build_parts
        from clzoo.train.builders import loss_class
        from clzoo.train.levers import build_levers

        context = PartContext(task=self.task, loss=loss_class(self.loss.name))
        build_parts(self.model.parts, context, spelled="model.{}")
        context = context._replace(parts=tuple(self.model.parts))
        for index, lever in enumerate(build_levers(self.training.levers)):
            reason = lever.refuse(context)
            if reason:
                name = self.training.levers[index]["name"]
                raise ValueError(f"training.levers[{index}] ({name}): {reason}")
        return self

    @model_validator(mode="after")
    @needs_keras
    def _queue_fits_in_memory(self):
        queue = self.model.part_settings("queue")
        if queue is not None:
            from clzoo.data import memory_budget
            from clzoo.data.augmentation_settings import views_from_config
            from clzoo.parts.queue import refuse_over_memory

            refuse_over_memory(queue.size, self.model.embedding_dim, self.training.batch_size
                               * views_from_config(self.views).views, memory_budget.available_memory())
        return self

    @model_validator(mode="after")
    def _batch_views_need_contrastive_task(self):
        if self.views.get("recipe") == "airbench" and self.task != "contrastive":
            raise ValueError("views recipe airbench (batch-wise views) needs task contrastive "
                             f"(not task {self.task})")
        return self

    @model_validator(mode="after")
    def _batch_views_take_the_image_size(self):
        from clzoo.data.augmentation_settings import views_from_config

        size = views_from_config(self.views).size
        if self.views.get("recipe") == "airbench" and self.image_size not in (None, size):
            raise ValueError(f"image_size = {self.image_size}: the airbench views take the images as "
                             f"they are, at views.size = {size} (no resize); set image_size to {size} "
                             f"or views.size to {self.image_size}")
        return self

    @model_validator(mode="after")
    def _no_inert_keys(self):
        """A setting that would do nothing in this run is refused (a stored recipe of a run that
        had one is read as it is: the setting did nothing there)."""
        model, task = self.model, self.task
        head = "task soft_target trains a classifier, without a projection head"
        inert = {"contrastive": [("mix", self.mix != {}, "MixUp / CutMix are task soft_target's"),
                                 ("model.classifier_hidden_dims", model.classifier_hidden_dims != [],
                                  "task contrastive has no classifier")],
                 "soft_target": [(f"model.{key}", getattr(model, key) != default, head)
                                 for key, default in (("embedding_dim", 128), ("head_hidden_dims", None),
                                                      ("head_batch_norm", False))]
                 + [("views.views", self.views.get("views", 1) != 1,
                     "task soft_target draws one view of each image; write views: 1")]}[task]
        inert.append(("model.head_batch_norm", model.head_batch_norm and model.head_hidden_dims == [],
                      "model.head_hidden_dims [] is one layer, with no layer between to normalize"))
        for key, given, why in inert:
            if given and not inert_key_dropped(key):
                raise ValueError(f"{key} would do nothing ({why}); drop it")
        return self

    def to_dict(self):
        """Plain data (what `recipe.yaml` in a run folder holds)."""
        return self.model_dump(mode="json")

    @property
    def upgrade_notes(self):
        """One line per flat key of an earlier recipe version that reading moved into its section
        (`training.momentum is now training.optimizer.momentum`); empty for today's spelling."""
        return list(self._upgrade_notes)

    @property
    def override_notes(self):
        """One line per override that replaced a whole section, naming the values it left out
        that changed (`--set training.optimizer=adamw` over `{name: sgd, momentum: 0.9}`: the
        momentum); `clzoo train` prints them."""
        return list(self._override_notes)


def __getattr__(name):
    if name == "DEFAULTS":  # built on use: validating the defaults imports the loss classes
        return Recipe().to_dict()
    raise AttributeError(name)


def load_recipe(path=None, overrides=(), stored=False):
    """Read a recipe YAML, apply `section.key=value` overrides, and validate the whole.

    Args:
        path: the recipe file, or None for the defaults alone.
        overrides: strings such as `"training.epochs=5"` (values are YAML), or
            `(key, value)` pairs whose value is used as given (`("training.epochs", 5)`).
        stored: `path` is a run's own `recipe.yaml` (resuming it, building a preset from it):
            the earlier flat keys that did nothing in the run (a setting of a part that was
            off, of an optimizer that does not take it) are dropped from the file instead of
            refused; `overrides` are checked as always. Defaults to `False`.

    Returns:
        a validated `Recipe` (attribute access: `recipe.training.epochs`).

    Raises:
        RecipeError: (a `ValueError`) listing every problem, one line each
            with the file, key and value: a missing file, unknown key (with a
            did-you-mean), wrong type, out-of-range or non-finite value, a
            warm-up longer than training, `knn_headline_k` not in `knn_k`, an
            unknown loss, encoder, optimizer, metric or view argument, a
            `model.queue_size` over half the available memory; an empty
            file; YAML over the limits (`parse_yaml`) or with a key given
            twice; overrides that set one key in two spellings (`model.queue_size`
            and `model.queue.size`), or a section after one of its own keys (the
            section would discard it).

    Example:

    >>> from clzoo.train import load_recipe
    >>> recipe = load_recipe(None, ["loss.name=SpreadLoss", "training.epochs=3"])
    >>> recipe.training.epochs, recipe.loss.kwargs
    (3, {})
    >>> load_recipe(None, ["training.epochz=3"])
    Traceback (most recent call last):
    ...
    clzoo.train.recipe_errors.RecipeError: --set training.epochz (over <defaults>): unknown recipe key ...
    """
    source = "<defaults>" if path is None else str(path)
    raw, notes, early = read_recipe_file(path, source), [], []
    if stored:  # the file's inert keys dropped; the overrides are the user's, checked strictly
        recipe = validate_recipe(raw, source, stored=True)
        if not overrides:  # read once (resume, push, the card)
            recipe._upgrade_notes = []
            return recipe
        raw = recipe.to_dict()
    else:  # upgraded before the overrides, which then meet one spelling
        raw, notes, early = _upgraded(raw, source)
    overridden, moved, replaced = _apply_overrides(raw, overrides, source)
    try:  # a stored recipe's own keys stay read as stored; the overrides' are checked as always
        recipe = validate_recipe(raw, source, overridden, stored=stored)
    except RecipeError as error:  # the file's upgrade refusals too: every problem at once
        raise RecipeError(early + error.lines) from None
    if early:
        raise RecipeError(early)
    recipe._upgrade_notes = list(dict.fromkeys(notes + moved))  # one note per key
    recipe._override_notes = _left_out(replaced, recipe.to_dict()) if replaced else []
    return recipe


def validate_recipe(sections, source="<recipe>", overridden=(), stored=False):
    """A `Recipe` from a dict of recipe sections (what `load_recipe` reads from YAML).

    Args:
        sections: dict such as `{"training": {"epochs": 3}}`; missing keys take the defaults.
        source: what error lines name as the recipe's origin.
        overridden: dotted keys that came from overrides, for the error lines.
        stored: a run's stored recipe (see `load_recipe`).

    Raises:
        RecipeError: every problem, one line each (see `load_recipe`).
    """
    # {key: the override as given}: an error names the key the user wrote on the command line
    overridden = dict(overridden) if isinstance(overridden, dict) else {key: key for key in overridden}
    lines = [f"{_where(source, key, overridden)}: {key} = {value!r}: must be a finite number"
             for key, value in non_finite(sections)]
    if lines:
        raise RecipeError(lines)
    with reading_stored_recipe(strict=overridden) if stored else contextlib.nullcontext():
        sections, notes, lines = _upgraded(sections, source, overridden)
        try:
            recipe = Recipe.model_validate(sections)
        except ValidationError as error:
            lines += _explain(error, source, overridden)
    if lines:
        raise RecipeError(lines)
    recipe._upgrade_notes = notes
    return recipe


def check_recipe_keys(path=None, overrides=(), stored=False):
    """`load_recipe`'s checks that need no Keras (keys, types, ranges, YAML, the upgrade of
    earlier spellings, overrides), without importing Keras or its backend: `clzoo train` runs
    them first, so a typo is refused in a fraction of a second, not after TensorFlow's import.
    `load_recipe` then runs every check.

    Raises:
        RecipeError: as `load_recipe`, for the problems these checks see.
    """
    with light_pass():
        load_recipe(path, overrides, stored)


def _upgraded(sections, source, overridden=()):
    """`(sections, notes, lines)`: `upgrade(sections)` and its refusals as `RecipeError` lines
    (who wrote the section, and why; a message naming its own key stands alone), the rest
    upgraded so that its other problems are found too.

    Raises:
        RecipeError: a recipe_version this clzoo cannot read (nothing to check on).
    """
    try:
        return (*upgrade(sections), [])
    except UpgradeError as error:
        lines = []
        for line in error.lines:
            section, _, why = line.partition(": ")
            lines.append(f"{_where(source, section, overridden)}: "
                         + (why if why.startswith(f"{section}.") else line))
        if error.upgraded is None:
            raise RecipeError(lines) from None
        return (*error.upgraded, lines)


def _explain(error, source, overridden):
    lines = []
    for problem in error.errors(include_url=False):
        loc = [str(p) for p in problem["loc"] if not isinstance(p, int)]
        key = ".".join(loc)
        if problem["type"] == "extra_forbidden":
            known = _known_keys(loc[:-1])
            # the did-you-mean first: a long list of known keys is what gets cut at MAX_LINE
            lines.append(f"{_where(source, key, overridden)}: unknown recipe key {_short(key)}."
                         + did_you_mean(loc[-1], known) + f" Known keys here: {', '.join(known)}.")
        else:  # a validator's problems, one line each (the model's parts: every part's at once)
            # pydantic names the section's class ("or instance of QueueSpec"): the user wrote YAML
            message = re.sub(r" or instance of \w+", "", problem["msg"].removeprefix("Value error, "))
            lines += [_line(source, key, overridden, problem, one) for one in message.split("\n")]
    return [line if len(line) <= MAX_LINE else line[:MAX_LINE - 3] + "..." for line in lines]


def _line(source, key, overridden, problem, message):
    """One problem's line: who wrote the key, the key and value, and the message."""
    where = _where(source, key, overridden, message)
    value = problem.get("input")
    typed = problem["type"].endswith("_type")  # a mapping where a value belongs: show it
    shown = "" if isinstance(value, dict) and not typed else f" = {_short(value)}"
    head = message.split(":")[0].split(" ")[0]
    if (message.startswith(f"{key}.") and shown == "") or (not key and "." in head) or (
            message.startswith(f"unknown recipe key '{key}.")):
        # the message names its own key (a rule of the whole recipe names the keys it met)
        return f"{where}: {message}"
    return f"{where}: {key or 'recipe'}{shown}: {message}"


def _known_keys(loc):
    model = Recipe
    for part in loc:
        model = model.model_fields[part].annotation
        model = next((t for t in typing.get_args(model) if isinstance(t, type)), model)  # X | None
    return list(model.model_fields)
