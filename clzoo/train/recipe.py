"""Typed recipes: one schema per section, defaults in one place, every value checked before work.

A recipe is YAML with the sections below; `load_recipe` reads it, applies
`section.key=value` overrides and returns a validated `Recipe`. Every
problem is reported at once, one line each, naming the file, key and value
(`RecipeError`), before any data is decoded or any folder is written.
Loss and view keyword arguments are passed on only when the recipe gives
them, so each loss keeps its own defaults (SpreadLoss: temperature 0.5).
"""

import re
from pathlib import Path
from typing import Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    ValidationError,
    field_validator,
    model_validator,
)

from clzoo.registry import did_you_mean


class RecipeError(ValueError):
    """A recipe, override or CLI value that cannot run; `lines` holds one message per problem."""

    def __init__(self, lines):
        self.lines = list(lines)
        super().__init__("\n".join(self.lines))


class _Section(BaseModel):
    # strict: "5" is not 5 and true is not 1 (nothing coerced silently); ints pass as floats.
    model_config = ConfigDict(extra="forbid", strict=True, validate_default=True)


class ModelSpec(_Section):
    architecture: str = "resnet20"  # a name of clzoo.models.list_encoders()
    head_hidden_dims: list[PositiveInt] | None = None  # None: one layer as wide as the encoder
    head_batch_norm: bool = False
    embedding_dim: PositiveInt = 128
    # the saved encoder averages each image's features with its mirror image's (airbench's
    # test-time flip, clzoo.models.flip_averaged); training and the online kNN use the bare encoder
    test_time_flip: bool = False
    classifier_hidden_dims: list[PositiveInt] = []  # task soft_target: classifier hidden widths
    # MoCo-style memory (clzoo.models.ContrastiveModel): keep the last queue_size keys + labels and
    # contrast each anchor against batch + queue; momentum: EMA key encoder (needs queue_size).
    queue_size: PositiveInt | None = Field(None, le=1_000_000)
    momentum: float | None = Field(None, ge=0, lt=1)

    @model_validator(mode="after")
    def _momentum_needs_queue(self):
        if self.momentum is not None and self.queue_size is None:
            raise ValueError("momentum (the key encoder) needs a queue: set model.queue_size")
        return self

    @field_validator("architecture")
    @classmethod
    def _known_encoder(cls, name):
        from clzoo.models.registry import ENCODERS

        if name not in ENCODERS:
            raise ValueError(f"unknown encoder; known: {', '.join(ENCODERS)}."
                             + did_you_mean(name, ENCODERS))
        return name


class LossSpec(BaseModel):
    """`name` plus the loss class's own keyword arguments (only those the recipe gives)."""

    model_config = ConfigDict(extra="allow", strict=True)
    name: str = "SINCERELoss"

    @property
    def kwargs(self):
        return dict(self.model_extra or {})

    @model_validator(mode="after")
    def _builds(self):
        from clzoo.train.builders import check_kwargs, loss_class

        cls = loss_class(self.name)
        check_kwargs(cls, self.kwargs, "loss")
        cls(**self.kwargs)  # the class's own checks (temperature > 0, ...)
        return self


class TrainingSpec(_Section):
    epochs: PositiveInt = 10
    batch_size: PositiveInt = 256  # global batch, split over replicas
    optimizer: str = "sgd"  # clzoo.optimizers.OPTIMIZERS: sgd | adamw | lars
    learning_rate: PositiveFloat = 0.1  # peak, after warm-up
    momentum: float = Field(0.9, ge=0, lt=1)
    weight_decay: NonNegativeFloat = 1e-4
    warmup_epochs: NonNegativeFloat = 1
    schedule: str = "cosine"  # clzoo.optimizers.SCHEDULES: cosine | constant
    final_learning_rate_fraction: float = Field(0.0, ge=0, le=1)  # cosine ends here x peak
    trust_coefficient: PositiveFloat = 1e-3  # LARS only
    deterministic: bool = True  # deterministic kernels: same seed, same run (CPU)
    strategy: Literal["auto", "one_device", "mirrored", "multi_worker"] = "auto"
    checkpoint_every_steps: PositiveInt | None = None  # also every N steps (always per epoch)
    log_every_steps: PositiveInt | None = None  # steps.jsonl rows; default once per epoch

    @field_validator("optimizer", "schedule")
    @classmethod
    def _registered(cls, name, info):
        from clzoo.optimizers.registry import OPTIMIZERS, SCHEDULES

        registry = OPTIMIZERS if info.field_name == "optimizer" else SCHEDULES
        if name not in registry:
            raise ValueError(f"must be one of {registry.list()}." + did_you_mean(name, registry))
        return name

    @model_validator(mode="after")
    def _warmup_fits(self):
        if self.warmup_epochs > self.epochs:
            raise ValueError(f"warmup_epochs ({self.warmup_epochs}) is longer than training "
                             f"(epochs {self.epochs})")
        return self


class EvalSpec(_Section):
    knn_k: list[PositiveInt] = Field([1, 5, 20, 200], min_length=1)
    knn_headline_k: PositiveInt = 20  # the k reported as knn_top1; must be in knn_k
    monitor_every: NonNegativeInt = 0  # epochs between online kNN measurements (0: off)
    monitor_memory: PositiveInt = 10000  # training images the monitor uses as memory
    monitor_queries: PositiveInt = 2000  # test images it classifies
    report: bool = True  # the `clzoo eval` report in <run>/eval at the end
    metrics: list[str] = ["knn", "ncc", "probe", "calibration", "separation"]
    # the same kNN / probe on raw pixels and the untrained encoder, beside the trained one
    baselines: list[Literal["raw_pixels", "random_init"]] = ["raw_pixels", "random_init"]

    @field_validator("metrics")
    @classmethod
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


class Recipe(_Section):
    """A whole recipe. Sections: `model`, `loss`, `views`, `mix`, `training`, `eval`.

    `views` holds `clzoo.data.ViewConfig` fields, optionally on top of
    `recipe: <view recipe name>`; `mix` holds `clzoo.data.MixConfig` fields
    (task `soft_target`). Both are checked by building the config.
    """

    name: str = "run"
    seed: NonNegativeInt = 0
    data: str = "digits"  # clzoo.data.load_split spec: digits, a folder, tfds:NAME[@label_set]
    task: Literal["contrastive", "soft_target"] = "contrastive"
    model: ModelSpec = Field(default_factory=ModelSpec)
    loss: LossSpec = Field(default_factory=LossSpec)
    views: dict = {}
    mix: dict = {}
    training: TrainingSpec = Field(default_factory=TrainingSpec)
    eval: EvalSpec = Field(default_factory=EvalSpec)

    @field_validator("views")
    @classmethod
    def _views_build(cls, spec):
        from clzoo.train.builders import views_from_config

        views_from_config(spec)
        return spec

    @field_validator("mix")
    @classmethod
    def _mix_builds(cls, spec):
        from clzoo.data import MixConfig
        from clzoo.train.builders import check_kwargs

        check_kwargs(MixConfig, spec, "mix")
        MixConfig(**spec)
        return spec

    @model_validator(mode="after")
    def _queue_needs_embedding_loss(self):
        if self.model.queue_size is None:
            return self
        from clzoo.losses._contrastive import ContrastiveLoss
        from clzoo.train.builders import loss_class

        cls = loss_class(self.loss.name)  # a function for SoftTargetCrossEntropy
        if self.task != "contrastive" or not (isinstance(cls, type) and issubclass(cls, ContrastiveLoss)):
            raise ValueError("model.queue_size needs task contrastive and an embedding loss "
                             f"(not {self.loss.name} / task {self.task})")
        return self

    def to_dict(self):
        """Plain data (what `recipe.yaml` in a run folder holds)."""
        return self.model_dump(mode="json")


def __getattr__(name):
    if name == "DEFAULTS":  # built on use: validating the defaults imports the loss classes
        return Recipe().to_dict()
    raise AttributeError(name)


class _Loader(yaml.SafeLoader):
    """YAML 1.1 reads `1e-3` as a string; recipes mean the number."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:\d[\d_]*)?(?:\.\d*)?[eE][-+]?\d+$|^[-+]?\d[\d_]*\.\d*$|^[-+]?\.\d+$"
               r"|^[-+]?\.(?:inf|Inf|INF)$|^\.(?:nan|NaN|NAN)$"),
    list("-+0123456789."))


def parse_yaml(text):
    """`yaml.safe_load`, with exponent floats such as `1e-3` read as numbers."""
    return yaml.load(text, Loader=_Loader)


def load_recipe(path=None, overrides=()):
    """Read a recipe YAML, apply `section.key=value` overrides, and validate the whole.

    Args:
        path: the recipe file, or None for the defaults alone.
        overrides: strings such as `"training.epochs=5"`; values are YAML.

    Returns:
        a validated `Recipe` (attribute access: `recipe.training.epochs`).

    Raises:
        RecipeError: (a `ValueError`) listing every problem, one line each
            with the file, key and value: a missing file, unknown key (with a
            did-you-mean), wrong type, out-of-range value, a warm-up longer
            than training, `knn_headline_k` not in `knn_k`, an unknown loss,
            encoder, optimizer, metric or view argument.

    Example:

    >>> from clzoo.train import load_recipe
    >>> recipe = load_recipe(None, ["loss.name=SpreadLoss", "training.epochs=3"])
    >>> recipe.training.epochs, recipe.loss.kwargs
    (3, {})
    >>> load_recipe(None, ["training.epochz=3"])
    Traceback (most recent call last):
    ...
    clzoo.train.recipe.RecipeError: <defaults>: unknown recipe key 'training.epochz' ...
    """
    source = "<defaults>" if path is None else str(path)
    raw = _read(path, source)
    overridden = _apply_overrides(raw, overrides, source)
    return validate_recipe(raw, source, overridden)


def validate_recipe(sections, source="<recipe>", overridden=()):
    """A `Recipe` from a dict of recipe sections (what `load_recipe` reads from YAML).

    Args:
        sections: dict such as `{"training": {"epochs": 3}}`; missing keys take the defaults.
        source: what error lines name as the recipe's origin.
        overridden: dotted keys that came from overrides, for the error lines.

    Raises:
        RecipeError: every problem, one line each (see `load_recipe`).
    """
    try:
        return Recipe.model_validate(sections)
    except ValidationError as error:
        raise RecipeError(_explain(error, source, set(overridden))) from None


def _read(path, source):
    if path is None:
        return {}
    path = Path(path)
    if not path.is_file():
        raise RecipeError([f"{source}: recipe file not found"])
    try:
        raw = parse_yaml(path.read_text()) or {}
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise RecipeError([f"{source}: not valid YAML ({str(error).splitlines()[0]})"]) from None
    if not isinstance(raw, dict):
        raise RecipeError([f"{source}: a recipe must be a YAML mapping, not a "
                           f"{type(raw).__name__}"])
    raw.setdefault("name", path.stem)
    return raw


def _apply_overrides(raw, overrides, source):
    """Set each `a.b=value` in `raw`; returns the dotted keys that came from overrides."""
    done = set()
    for item in overrides:
        key, sep, value = str(item).partition("=")
        if not sep or not key.strip():
            raise RecipeError([f"{source}: overrides look like training.epochs=5. "
                               f"Received: {item!r}"])
        *parents, leaf = key.strip().split(".")
        node = raw
        for i, part in enumerate(parents):
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise RecipeError([f"{source}: override {item!r}: "
                                   f"{'.'.join(parents[:i + 1])} is not a section"])
        try:
            node[leaf] = parse_yaml(value)
        except yaml.YAMLError:
            node[leaf] = value
        done.add(key.strip())
    return done


def _explain(error, source, overridden):
    lines = []
    for problem in error.errors(include_url=False):
        loc = [str(p) for p in problem["loc"] if not isinstance(p, int)]
        key = ".".join(loc)
        origin = " (from an override)" if key in overridden else ""
        if problem["type"] == "extra_forbidden":
            known = _known_keys(loc[:-1])
            lines.append(f"{source}: unknown recipe key {key!r}{origin}. Known keys here: "
                         f"{', '.join(known)}." + did_you_mean(loc[-1], known))
            continue
        message = problem["msg"].removeprefix("Value error, ")
        value = problem.get("input")
        shown = "" if isinstance(value, dict) else f" = {value!r}"
        lines.append(f"{source}: {key or 'recipe'}{shown}{origin}: {message}")
    return lines


def _known_keys(loc):
    model = Recipe
    for part in loc:
        model = model.model_fields[part].annotation
    return list(model.model_fields)
