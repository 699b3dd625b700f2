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

from typing import Annotated

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    field_validator,
    model_validator,
)

from clzoo.registry import did_you_mean
from clzoo.train.recipe_components import Section, as_section, floats_in


class EncoderSpec(BaseModel):
    """`model.encoder`: a `clzoo.models.list_encoders()` name and its builder's own arguments."""

    model_config = ConfigDict(extra="allow", strict=True)
    name: str = "resnet20"

    @property
    def options(self):
        return dict(self.model_extra or {})

    @field_validator("name")
    @classmethod
    def _known_encoder(cls, name):
        from clzoo.models.registry import ENCODERS

        if name not in ENCODERS:
            raise ValueError(f"unknown encoder; known: {', '.join(ENCODERS)}." + did_you_mean(name, ENCODERS))
        return name

    @model_validator(mode="after")
    def _options_fit_the_encoder(self):
        from clzoo.models.registry import check_encoder_options

        check_encoder_options(self.name, self.options, "encoder")
        floats_in(self.options, "encoder")
        return self


class QueueSpec(Section):
    """`model.queue`: MoCo-style memory (clzoo.models.ContrastiveModel)."""

    size: PositiveInt = Field(le=1_000_000)  # keys + labels kept; each anchor meets batch + queue
    momentum: float | None = Field(None, ge=0, lt=1)  # the EMA key encoder's; None: no key encoder


class GradCacheSpec(Section):
    """`model.grad_cache`: GradCache (Gao et al. 2021), same gradients with less memory."""

    # images (views included) embedded at a time without keeping activations, then
    # back-propagated chunk by chunk: one extra forward pass; batch norm statistics per chunk
    chunk_size: PositiveInt


class AuxiliarySpec(Section):
    """`model.auxiliary`: a linear classifier on the encoder's features (airbench94's head)."""

    weight: PositiveFloat  # loss = contrastive + weight * label-smoothed cross-entropy (uses labels)
    label_smoothing: float = Field(0.2, ge=0, lt=1)  # of the auxiliary cross-entropy (airbench94's)
    # logits times this fixed scale, no bias (airbench94: 1/9 =
    # clzoo.models.auxiliary_classifier.AIRBENCH_LOGIT_SCALE)
    logit_scale: PositiveFloat = Field(1 / 9, allow_inf_nan=False)


class TestTimeSpec(Section):
    """`model.test_time`: the saved encoder averages each image's features with its mirror's."""

    # also over the image shifted by (-t, -t) and (+t, +t) pixels with their mirrors (airbench's
    # multi-crop test-time augmentation, clzoo.models.test_time_averaged); training and the
    # online kNN use the bare encoder
    translate: NonNegativeInt = Field(0, le=4)


MAX_WIDTH = 32_768  # a layer of 32,768 x 32,768 holds 1.1 billion weights (4.3 GB)
Width = Annotated[int, Field(gt=0, le=MAX_WIDTH)]


class ModelSpec(Section):
    # {name, **options}: a clzoo.models.list_encoders() name and its builder's own arguments, e.g.
    # {name: vit_small_patch4, num_layers: 2}; the image size comes from views.size
    encoder: EncoderSpec = Field(default_factory=EncoderSpec)
    # None: one layer as wide as the encoder; each width up to 32,768 (SimCLR v2: 8,192)
    head_hidden_dims: list[Width] | None = Field(None, max_length=16)
    head_batch_norm: bool = False  # batch norm between the projection head's layers
    embedding_dim: Width = 128  # the projection head's output: the embedding the loss sees (<= 32,768)
    classifier_hidden_dims: list[Width] = Field([], max_length=16)  # task soft_target: classifier widths
    # MoCo-style memory {size, momentum}: contrast each anchor against batch + the last `size`
    # keys; momentum: an EMA key encoder. null: none. Task contrastive, an embedding loss.
    queue: QueueSpec | None = None
    # GradCache {chunk_size}: the same gradients with less memory (task contrastive). null: none
    grad_cache: GradCacheSpec | None = None
    # an auxiliary classifier {weight, label_smoothing, logit_scale} on the encoder's features; it
    # uses the labels (a preset trained with it says so). Task contrastive. null: none
    auxiliary: AuxiliarySpec | None = None
    # test-time averaging {translate} of the saved encoder (airbench's flip and shifts). null: none
    test_time: TestTimeSpec | None = None

    @model_validator(mode="before")
    @classmethod
    def _encoder_as_section(cls, data):
        if isinstance(data, dict) and isinstance(data.get("encoder"), str):
            data = {**data, "encoder": as_section(data["encoder"])}
        return data

    @model_validator(mode="after")
    def _parts_combine(self):
        from clzoo.steps.parts import check_parts

        chunk_size = None if self.grad_cache is None else self.grad_cache.chunk_size
        check_parts(encoder_chunk_size=chunk_size, auxiliary=self.auxiliary is not None,
                    names={"encoder_chunk_size": "model.grad_cache", "auxiliary": "model.auxiliary"},
                    received={"encoder_chunk_size": "model.grad_cache.chunk_size"})
        return self


_SPECS = {"queue": QueueSpec, "grad_cache": GradCacheSpec, "auxiliary": AuxiliarySpec,
          "test_time": TestTimeSpec}


def part_spec(section):
    """The section class of a model part (`"queue"` -> `QueueSpec`)."""
    return _SPECS[section]


