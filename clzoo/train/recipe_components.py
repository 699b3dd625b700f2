"""Recipe sections that build what they name: `{name, **settings}` checked by the registered factory.

`training.optimizer` and `training.schedule` name a factory of `clzoo.optimizers.OPTIMIZERS` /
`SCHEDULES`; the section's other keys are that factory's own settings, checked against its
signature (unknown keys, types of its defaults) and by building it (its ranges), as `loss:`
is checked by its class. A setting the recipe leaves out keeps the factory's default.

Recipes written before the sections (flat keys such as `training.momentum`) are upgraded before
they reach these classes (`clzoo.train.recipe_upgrade`).
"""

import contextlib
import contextvars
import functools
import inspect
import math
import re
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, model_serializer, model_validator

from clzoo.registry import check_kwargs, did_you_mean

# The first, light pass over a recipe (`clzoo train` before Keras loads): every check that needs a
# registered factory (a loss class, an optimizer, a part, ...) waits for the full pass.
_LIGHT = contextvars.ContextVar("clzoo_recipe_light_pass", default=False)


@contextlib.contextmanager
def switched_on(flag):
    """Within: the boolean context variable `flag` is True (a reading mode of the recipe)."""
    token = flag.set(True)
    try:
        yield
    finally:
        flag.reset(token)


def light_pass():
    """Within: recipe checks that import Keras are skipped (`needs_keras`); keys, types, ranges,
    YAML and the upgrade are checked as always."""
    return switched_on(_LIGHT)


def in_light_pass():
    """True inside `light_pass` (checks that need a registered factory are skipped)."""
    return _LIGHT.get()


def needs_keras(validator):
    """A pydantic validator that builds a registered factory: skipped in `light_pass` (it returns
    what it was given: the value, the data or the model)."""
    @functools.wraps(validator)
    def check(*args):
        return args[-1] if _LIGHT.get() else validator(*args)
    return check


FLOAT32_TINY = 1.1754944e-38  # the smallest normal float32: below it a value trains as 0


def float32_positive(value, key=None):
    """A non-zero value that float32 (the training dtype) holds as a non-zero, finite number."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and (
            not math.isfinite(value) or 0 < abs(value) < FLOAT32_TINY or abs(value) > 3.4e38):
        named = f"{key} = " if key else ""
        raise ValueError(f"{named}{value!r} is outside float32's range ({FLOAT32_TINY:.3g} to "
                         "3.4e38), the dtype training uses: it would train as 0 or inf")
    return value


def floats_in(value, key):
    """`float32_positive` on every non-zero float in `value`, nested lists and dicts included."""
    if isinstance(value, float) and value:
        float32_positive(value, key)
    elif isinstance(value, dict):
        for name, item in value.items():
            floats_in(item, f"{key}.{name}")
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            floats_in(item, f"{key}[{index}]")


class Section(BaseModel):
    """A recipe section of fixed keys: unknown keys refused, nothing coerced, floats float32."""

    # strict: "5" is not 5 and true is not 1 (nothing coerced silently); ints pass as floats.
    model_config = ConfigDict(extra="forbid", strict=True, validate_default=True)

    @model_validator(mode="after")
    def _floats_fit_float32(self):
        """Every float setting is one float32 (the training dtype) holds: not inf, not 0 for a
        positive value (else the NaN stop would later blame the learning rate)."""
        for key in type(self).model_fields:
            floats_in(getattr(self, key), key)
        return self


def _registry(section):
    from clzoo.optimizers.registry import OPTIMIZERS, SCHEDULES

    return OPTIMIZERS if section == "optimizer" else SCHEDULES


def factory_defaults(factory):
    """`{setting: default}` of a registered factory's own settings."""
    from clzoo.optimizers.registry import settings_of

    parameters = inspect.signature(factory).parameters
    return {key: parameters[key].default for key in settings_of(factory)
            if parameters[key].default is not inspect.Parameter.empty}


def as_section(value):
    """`sgd` as `{name: sgd}`; a mapping as it is."""
    return {"name": value} if isinstance(value, str) else value


class ComponentSpec(BaseModel):
    """`name` (a registered factory) plus that factory's own settings, only those the recipe gives.

    Subclasses set `section` (the recipe key) and `run_arguments` (what the runner fills:
    the learning rate, the run's length), and build the factory in `_build`.
    """

    model_config = ConfigDict(extra="allow", strict=True)
    name: str
    section: ClassVar[str] = ""
    run_arguments: ClassVar[tuple] = ()

    @property
    def settings(self):
        return dict(self.model_extra or {})

    def defaults(self):
        """`{setting: default}` of the named factory."""
        return factory_defaults(_registry(self.section).get(self.name))

    def setting(self, key):
        """The section's `key` as the run uses it: given, else the factory's default; None where
        the factory has no such setting (`schedule: constant` has no `warmup_epochs`)."""
        return {**self.defaults(), **self.settings}.get(key)

    @model_serializer(mode="wrap")
    def _with_defaults(self, handler):
        """Dumped with every setting (the defaults filled in): a run's `recipe.yaml` says what ran."""
        given = handler(self)
        defaults = {} if _LIGHT.get() else self.defaults()
        return {"name": self.name, **defaults, **{k: v for k, v in given.items() if k != "name"}}

    @model_validator(mode="after")
    @needs_keras
    def _builds(self):
        registry = _registry(self.section)
        if self.name not in registry:
            raise ValueError(f"name {self.name!r}: must be one of {registry.list()}."
                             + did_you_mean(self.name, registry))
        factory = registry.get(self.name)
        _refuse_others_settings(self.section, self.name, self.settings)
        check_kwargs(factory, self.settings, f"training.{self.section}", owner=self.name,
                     skip=("self", "name", *self.run_arguments))
        parameters = inspect.signature(factory).parameters
        try:
            for key, value in self.settings.items():
                _check_type(key, value, parameters[key].default)
                if isinstance(value, float) and value:
                    float32_positive(value, key)
            self._build(factory)
        except ValueError as error:  # `momentum = 1.5: ...` named by its whole key
            named = re.match(r"\w+ = ", str(error)) is not None
            raise ValueError(f"training.{self.section}." * named + str(error)) from None
        return self

    def _build(self, factory):
        raise NotImplementedError


def _refuse_others_settings(section, name, settings):
    """A setting that only other factories of the section take (`momentum` for `adamw`)."""
    from clzoo.optimizers.registry import owners, settings_of

    taken = settings_of(_registry(section).get(name))
    for key in (key for key in settings if key not in taken):  # every signature read only then
        owned = owners(_registry(section)).get(key, [name])
        if name not in owned:
            owner = f"{', '.join(owned[:-1])} and {owned[-1]}" if len(owned) > 1 else owned[0]
            why = "; it keeps the peak learning rate throughout" * (name == "constant")
            raise ValueError(f"training.{section}.{key} is a setting of {section} {owner}, not {name}{why}")


def _check_type(key, value, default):
    """A setting of the default's type (strict: true is no number, 5 is no bool); ints pass as floats."""
    if default is inspect.Parameter.empty or default is None:
        return
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, int):
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif isinstance(default, float):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    else:
        ok = isinstance(value, type(default))
    if not ok:
        raise ValueError(f"{key} = {value!r}: must be a {type(default).__name__} "
                         f"(the default is {default!r})")


class OptimizerSpec(ComponentSpec):
    """`training.optimizer`: a `clzoo.optimizers.OPTIMIZERS` name and its settings.

    Checked by the registration's `check` (the settings with the factory's defaults), not by
    building the optimizer: a Keras optimizer creates variables, and on TensorFlow one made
    before the run's strategy stops MultiWorkerMirroredStrategy from setting up.
    """

    name: str = "sgd"
    section: ClassVar[str] = "optimizer"
    run_arguments: ClassVar[tuple] = ("learning_rate", "total_steps")

    def _build(self, factory):
        check = _registry(self.section).entry(self.name).metadata.get("check")
        if check is not None:
            check(**{**self.defaults(), **self.settings})


class ScheduleSpec(ComponentSpec):
    """`training.schedule`: a `clzoo.optimizers.SCHEDULES` name and its settings."""

    name: str = "cosine"
    section: ClassVar[str] = "schedule"
    run_arguments: ClassVar[tuple] = ("learning_rate", "epochs", "steps_per_epoch")

    def _build(self, factory):  # the warm-up against the run's length: TrainingSpec
        factory(learning_rate=0.1, epochs=2**20, steps_per_epoch=1, **self.settings)


SECTION_DEFAULTS = {"optimizer": OptimizerSpec.model_fields["name"].default,
                    "schedule": ScheduleSpec.model_fields["name"].default}


def non_finite(value, path=""):
    """`(dotted key, value)` of every NaN or infinite float in nested dicts and lists."""
    stack = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            yield where or "recipe", item
        elif isinstance(item, dict):
            stack += [(v, f"{where}.{k}".lstrip(".")) for k, v in item.items()]
        elif isinstance(item, (list, tuple)):
            stack += [(v, where) for v in item]
