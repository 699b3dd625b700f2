"""What a recipe trains (`task`): the model, its batches and what it adds to the metrics.

- `contrastive`: encoder + projection head on multi-view batches, any
  embedding loss (`ContrastiveModel`).
- `soft_target`: encoder + classifier on MixUp / CutMix soft targets
  (soft-target InfoNCE, or cross-entropy as its baseline).
"""

import keras
import numpy as np

from clzoo.data import MixConfig
from clzoo.eval.calibration import reliability
from clzoo.eval.embed import predict_images
from clzoo.models import ContrastiveModel, ProjectionHead, build_classifier
from clzoo.parts import PartContext, build_parts
from clzoo.registry import Registry
from clzoo.train.builders import build_encoder, views_from_config

TASKS = Registry("task")


@TASKS.register("contrastive", description="encoder + projection head, embedding loss")
class ContrastiveTask:
    def build_model(self, recipe, views, num_classes, learnable_temperature=None):
        spec = recipe.model
        encoder = build_encoder(recipe, views.size)
        # head_hidden_dims None: ProjectionHead's default, one hidden layer as wide as the encoder.
        head = ProjectionHead(hidden_dims=spec.head_hidden_dims, output_dim=spec.embedding_dim,
                              batch_norm=spec.head_batch_norm, name="projection_head")
        parts = build_parts(spec.parts, PartContext(task="contrastive"), spelled="model.{}",
                            classes=num_classes)
        model = ContrastiveModel(encoder, head, parts=list(parts),
                                 learnable_temperature=learnable_temperature, name="contrastive_model")
        model.build((None, views.views, views.size, views.size, 3))
        return model

    def encoder(self, model):
        return model.encoder

    kind = "views"

    def batches(self, split, recipe, views, start_step, pipeline="tf_data", shard=None):
        """The run's stream from `start_step`, built by `clzoo.data.streams.STREAMS[pipeline]`;
        `shard` `(index, count)`: this process's rows of every global batch (tf.data)."""
        from clzoo.data.streams import STREAMS

        spec = recipe.training
        return STREAMS[pipeline].build(split, "views", spec.batch_size, recipe.seed, spec.epochs,
                                       start_step, views=views, shard=shard)

    def extra_metrics(self, model, recipe, views, test):
        return {}


@TASKS.register("soft_target", description="encoder + classifier on MixUp / CutMix soft targets")
class SoftTargetTask:
    def build_model(self, recipe, views, num_classes, learnable_temperature=None):
        encoder = build_encoder(recipe, views.size)
        return build_classifier(encoder, num_classes,
                                hidden_dims=tuple(recipe.model.classifier_hidden_dims))

    def encoder(self, model):
        return model.get_layer("encoder")

    kind = "soft_targets"

    def batches(self, split, recipe, views, start_step, pipeline="tf_data", shard=None):
        from clzoo.data.streams import STREAMS

        spec = recipe.training
        return STREAMS[pipeline].build(split, "soft_targets", spec.batch_size, recipe.seed,
                                       spec.epochs, start_step, views=views,
                                       mix=MixConfig(**recipe.mix), shard=shard)

    def extra_metrics(self, model, recipe, views, test):
        """The trained classifier itself on the `test` split: top-1 and ECE (15 bins)."""
        logits = predict_images(model, test.images, size=views.size)
        probabilities = keras.ops.convert_to_numpy(keras.ops.softmax(logits))
        return {"classifier_top1": float(np.mean(probabilities.argmax(1) == test.labels)),
                "classifier_ece": reliability(probabilities, test.labels).ece}


def build_model(recipe, views=None, num_classes=None):
    """The recipe's model for its task: encoder + projection head, or encoder + classifier.

    Args:
        recipe: a `Recipe`.
        views: the `ViewConfig` (input size, views per image); defaults to the recipe's.
        num_classes: classifier outputs (task `soft_target` only).
    """
    views = views or views_from_config(recipe.views)
    return TASKS.get(recipe.task)().build_model(recipe, views, num_classes)
