"""The online linear probe: a linear classifier trained beside the contrastive loss on the
encoder's features with the gradient stopped, so it measures the encoder without shaping it
(solo-learn's online classifier; the linear-probe protocol of SimCLR, Chen et al. 2020,
sec. 4.1, run while training instead of after it).

Its cross-entropy trains the probe's weights only, and its top-1 over the epoch's training
views is logged as `online_probe_top1` (and the cross-entropy as `online_probe_loss`) each
epoch: `history.jsonl`, `history.csv` and TensorBoard in a run folder. The logged `loss`
stays the contrastive loss: the probe's term is added as `ce - stop_gradient(ce)`, zero in
value, `ce`'s gradient for the probe.
"""

import keras
from keras import ops

from clzoo.parts.auxiliary import (
    auxiliary_cross_entropy,
    check_class_ids,
    check_classes,
    graph_checked_ids,
    refuse_beside,
)
from clzoo.parts.base import PARTS, ModelPart


@PARTS.register("online_probe", description="a linear classifier on the encoder's stop-gradient "
                "features, trained alongside; its top-1 logged every epoch (the labels never reach "
                "the encoder)")
class OnlineLinearProbe(ModelPart):
    """`model.online_probe: {}` in a recipe: a linear classifier (`classes` logits, with bias)
    on `stop_gradient(features)`, trained by the model's optimizer beside the contrastive loss.

    The encoder's and the projection head's gradients are those of a run without the probe
    (its weights are attached after theirs, so their initial values are too). Labels must be
    one class id per sample, in `[0, classes)` (refused before `fit` for arrays, and batch by
    batch for a `tf.data` stream or a generator: on the host before the step on JAX and torch,
    by an assert in the step on TensorFlow). `evaluate`
    leaves the probe out (no `online_probe_*` keys). Under `mixed_float16` the probe computes
    in float32, so its gradient cannot overflow the loss scale and skip the encoder's step.

    Args:
        classes: the classifier's outputs (the run fills in the data's classes).

    Raises:
        ValueError: `classes` not None nor an integer >= 2; in `fit`, labels that are not class
            ids in `[0, classes)`; beside task soft_target or GradCache (`refuse`).

    Example:

    >>> import numpy as np, keras, clzoo
    >>> from clzoo.parts.online_probe import OnlineLinearProbe
    >>> model = clzoo.models.ContrastiveModel(
    ...     keras.Sequential([keras.layers.Flatten(), keras.layers.Dense(8)]),
    ...     clzoo.models.ProjectionHead(hidden_dims=(8,), output_dim=4),
    ...     parts=[OnlineLinearProbe(classes=2)])
    >>> model.compile(optimizer="sgd", loss=clzoo.losses.SupConLoss())
    >>> history = model.fit(np.random.rand(8, 2, 4, 4, 3).astype("float32"), np.arange(8) % 2,
    ...                     batch_size=8, verbose=0)
    >>> sorted(key for key in history.history if key.startswith("online_probe"))
    ['online_probe_loss', 'online_probe_top1']

    Reference:
    - [da Costa et al., solo-learn: A Library of Self-supervised Methods for Visual
      Representation Learning, JMLR 2022 (the online linear classifier on detached
      features)](https://jmlr.org/papers/v23/21-1155.html)
    """

    makes_outputs = True
    run_arguments = ("classes",)

    def __init__(self, classes=None):
        self.classes = check_classes(classes)

    def refuse(self, context):
        return refuse_beside(context, "the online probe")

    def attach(self, model):
        if self.classes is None:
            raise ValueError("The online probe needs its number of classes: OnlineLinearProbe(classes=C)")
        # float32 whatever the policy: under mixed_float16 a loss-scaled float16 gradient of the
        # probe could overflow, and the loss-scale optimizer would then skip the encoder's step too
        model.online_probe = keras.layers.Dense(self.classes, name="online_probe", dtype="float32")
        model.online_probe_top1 = keras.metrics.Mean(name="online_probe_top1")
        model.online_probe_loss = keras.metrics.Mean(name="online_probe_loss")

    def build(self, model, features_shape):
        if not model.online_probe.built:
            model.online_probe.build(features_shape)

    def outputs(self, model, features):
        return model.online_probe(ops.cast(ops.stop_gradient(features), "float32"))

    def added_loss(self, model, x, y, output, sample_weight):
        if y is None:
            raise ValueError("The online probe needs class labels: fit(x, y) with one class id per sample")
        views = x.shape[1]
        cross_entropy = auxiliary_cross_entropy(y, output, views, 0.0, sample_weight,
                                                head="the online probe")
        labels = ops.repeat(ops.reshape(ops.cast(y, "int32"), (-1,)), views, axis=0)
        hits = ops.cast(ops.equal(ops.cast(ops.argmax(output, axis=-1), "int32"), labels), "float32")
        model.online_probe_top1.update_state(hits)
        model.online_probe_loss.update_state(ops.stop_gradient(cross_entropy))
        return graph_checked_ids(cross_entropy - ops.stop_gradient(cross_entropy), y, self.classes,
                                 *_PROBE)

    def metrics(self, model):
        return [model.online_probe_top1, model.online_probe_loss]

    def check_labels(self, y):
        if not hasattr(y, "shape"):
            return
        if len(y.shape) != 1:
            raise ValueError(f"The online probe needs one class id per sample, shape (batch,). "
                             f"Received: labels of shape {tuple(y.shape)}")
        check_class_ids(y, self.classes, *_PROBE)


_PROBE = ("the online probe", "OnlineLinearProbe(classes={})")
