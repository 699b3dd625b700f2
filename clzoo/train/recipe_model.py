"""The recipe's `model:` section: the encoder it names and each optional part of the model as its
own section.

```yaml
model:
  encoder: {name: airbench, whitening: true}   # a clzoo.models encoder and its builder's arguments
  embedding_dim: 128
  queue: {size: 4096, momentum: 0.99}          # absent or null: the part is off
  auxiliary: {weight: 0.5}                     # (not with grad_cache: {chunk_size: 64})
  test_time: {translate: 2}
```

Recipes written before the sections (flat keys such as `model.queue_size`) are upgraded before
they reach these classes (`clzoo.train.recipe_upgrade`).
"""

import inspect
from typing import Annotated

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeInt,
    ValidationError,
    field_validator,
    model_validator,
)

from clzoo.registry import did_you_mean
from clzoo.train.recipe_components import Section, as_section, floats_in, in_light_pass, needs_keras


class EncoderSpec(BaseModel):
    """`model.encoder`: a `clzoo.models.list_encoders()` name and its builder's own arguments."""

    model_config = ConfigDict(extra="allow", strict=True)
    name: str = "resnet20"

    @property
    def options(self):
        return dict(self.model_extra or {})

    @field_validator("name")
    @classmethod
    @needs_keras
    def _known_encoder(cls, name):
        from clzoo.models.registry import ENCODERS

        if name not in ENCODERS:
            raise ValueError(f"unknown encoder; known: {', '.join(ENCODERS)}." + did_you_mean(name, ENCODERS))
        return name

    @model_validator(mode="after")
    @needs_keras
    def _options_fit_the_encoder(self):
        from clzoo.models.registry import check_encoder_options

        check_encoder_options(self.name, self.options, "encoder")
        floats_in(self.options, "encoder")
        return self


class TestTimeSpec(Section):
    """`model.test_time`: the saved encoder averages each image's features with its mirror's."""

    # also over the image shifted by (-t, -t) and (+t, +t) pixels with their mirrors (airbench's
    # multi-crop test-time augmentation, clzoo.models.test_time_averaged); training and the
    # online kNN use the bare encoder
    translate: NonNegativeInt = Field(0, le=4)


MAX_WIDTH = 32_768  # a layer of 32,768 x 32,768 holds 1.1 billion weights (4.3 GB)
Width = Annotated[int, Field(gt=0, le=MAX_WIDTH)]


class PartSettings(dict):
    """A `model.<part>` section as the run uses it (the part's defaults filled in): a mapping
    whose settings read as attributes too (`recipe.model.queue.size`)."""

    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None

    def __setattr__(self, key, value):
        raise AttributeError(f"a recipe's part settings are read-only: load_recipe(path, "
                             f"['model.<part>.{key}={value!r}']) builds a recipe with another value")

    def __setitem__(self, key, value):
        self.__setattr__(key, value)

    def __reduce__(self):  # copies (copy.deepcopy, pickle) rebuild it whole
        return PartSettings, (dict(self),)


def part_defaults(name):
    """`{setting: default}` of the model part `name`: a `clzoo.parts.PARTS` part's constructor
    defaults (its run arguments left out), or `test_time`'s."""
    if name == "test_time":
        return {key: field.default for key, field in TestTimeSpec.model_fields.items()}
    from clzoo.parts import PARTS

    factory = PARTS.get(name)
    return {key: parameter.default for key, parameter in inspect.signature(factory).parameters.items()
            if key not in factory.run_arguments and parameter.default is not parameter.empty}


class ModelSpec(Section):
    """`model:`: the encoder, the projection head, and each optional part of the model
    (`clzoo.parts.PARTS`: `queue`, `grad_cache`, `auxiliary`, `online_probe`, ...) as a section
    of its constructor's settings, absent or null when off, checked by building the part."""

    model_config = ConfigDict(extra="allow", strict=True, validate_default=True)
    # {name, **options}: a clzoo.models.list_encoders() name and its builder's own arguments, e.g.
    # {name: vit_small_patch4, num_layers: 2}; the image size comes from views.size
    encoder: EncoderSpec = Field(default_factory=EncoderSpec)
    # None: one layer as wide as the encoder; each width up to 32,768 (SimCLR v2: 8,192)
    head_hidden_dims: list[Width] | None = Field(None, max_length=16)
    head_batch_norm: bool = False  # batch norm between the projection head's layers
    embedding_dim: Width = 128  # the projection head's output: the embedding the loss sees (<= 32,768)
    classifier_hidden_dims: list[Width] = Field([], max_length=16)  # task soft_target: classifier widths
    # test-time averaging {translate} of the saved encoder (airbench's flip and shifts). null: none
    test_time: TestTimeSpec | None = None

    @model_validator(mode="before")
    @classmethod
    def _encoder_as_section(cls, data):
        if isinstance(data, dict) and isinstance(data.get("encoder"), str):
            data = {**data, "encoder": as_section(data["encoder"])}
        return data

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            from clzoo.parts import PARTS

            if name in PARTS:
                return None  # a part that is off
            raise

    def part_settings(self, name):
        """The section of part `name` (a `PartSettings`), or None when it is off (no import)."""
        return (self.model_extra or {}).get(name)

    @property
    def parts(self):
        """`{part name: PartSettings}` of the parts that are on, in `clzoo.parts.PARTS` order."""
        from clzoo.parts import PARTS

        given = self.model_extra or {}
        return {name: given[name] for name in PARTS if given.get(name) is not None}

    @model_validator(mode="after")
    @needs_keras
    def _parts_build(self):
        """Each extra key names a registered part: its section is checked by building the part
        (its own settings and ranges) and kept with the part's defaults filled in."""
        extra = self.model_extra or {}
        built, problems = _parts_checked(extra)
        if problems:
            raise ValueError("\n".join(problems))
        extra.update(built)
        return self

    @model_validator(mode="wrap")
    @classmethod
    def _with_the_parts_problems(cls, data, handler):
        """A field's problem (an unknown encoder) skips the after-validators: the parts' problems
        are added to it, so that every problem is reported at once."""
        try:
            return handler(data)
        except ValidationError as error:
            errors = error.errors(include_url=False)
            if in_light_pass() or not isinstance(data, dict) or any(not e["loc"] for e in errors):
                raise  # the parts were checked (their problems have no field), or cannot be here
            extra = {key: value for key, value in data.items()  # a key not text: pydantic's line
                     if isinstance(key, str) and key not in cls.model_fields}
            problems = _parts_checked(extra)[1]
            if not problems:
                raise
            part = {"type": "value_error", "loc": (), "input": data,
                    "ctx": {"error": ValueError("\n".join(problems))}}
            raise ValidationError.from_exception_data(error.title, [*errors, part]) from None


def _parts_checked(extra):
    """`({part: PartSettings}, problems)`: each part section of `extra` (the model section's
    keys that are not `ModelSpec` fields) checked by building the part, every problem at once."""
    from clzoo.parts import PARTS, build_parts

    built, problems = {}, []
    for name, settings in extra.items():
        try:
            if name not in PARTS:
                known = [*ModelSpec.model_fields, *PARTS]
                raise ValueError(f"unknown recipe key {f'model.{name}'!r}." + did_you_mean(name, known)
                                 + f" Known keys here: {', '.join(known)}.")
            if settings is None:
                continue
            if not isinstance(settings, dict):
                raise ValueError(f"model.{name} must be a mapping of the part's settings ({{}} for "
                                 f"its defaults) or null. Received: {settings!r}")
            floats_in(settings, f"model.{name}")
            build_parts({name: settings}, spelled="model.{}")
            built[name] = PartSettings({**part_defaults(name), **settings})
        except ValueError as error:  # every part's problem at once, one line each
            problems.append(str(error))
    return built, problems
