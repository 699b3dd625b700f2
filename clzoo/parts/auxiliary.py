"""An auxiliary cross-entropy head beside the contrastive loss (`ContrastiveModel(auxiliary_classes=...)`).

A linear classifier on the encoder's features (airbench94's head: no bias,
logits scaled by a fixed `logit_scale`, 1/9 there), trained with label-smoothed
cross-entropy on every view and added to the embedding loss with a weight:
`loss = contrastive + weight * CE`. The classifier reads the same features the
projection head does, so the cross-entropy gradient shapes the encoder too;
the head is dropped with the projection head after training (only
`model.encoder` is kept). airbench94 trains its CIFAR-10 net with label
smoothing 0.2 (Jordan 2024, KellerJordan/cifar10-zoo); this is that loss on
a contrastive encoder. It uses the labels: an encoder trained with it is
supervised, whatever the contrastive loss is.
"""

import keras
import numpy as np
from keras import ops

from clzoo.parts.base import PARTS, ModelPart
from clzoo.validation import checks as K
from clzoo.validation.arguments import validate_number, validate_positive_int

AIRBENCH_LOGIT_SCALE = 1 / 9  # airbench94's `scaling_factor` on the head's logits


def auxiliary_head(classes, logit_scale, name="auxiliary_classifier"):
    """airbench94's classifier: `logit_scale * features @ W`, W `(features, classes)`, no bias.

    The fixed scale keeps the logits small at a contrastive recipe's learning
    rate (the step on a logit scales with `logit_scale ** 2`); unscaled, the
    head diverged at airbench's rate (benchmarks/README.md, the ladder's
    `auxiliary_ce` row).

    Args:
        classes: C, the number of logits.
        logit_scale: the fixed factor (> 0; `check_auxiliary` validates it).
        name: the layer's name.

    Returns:
        A `keras.Sequential` mapping float `(batch, features)` to float
        `(batch, C)` logits; its only weight is the kernel `(features, C)`.

    Example:

    >>> import numpy as np
    >>> from clzoo.parts.auxiliary import auxiliary_head
    >>> head = auxiliary_head(10, 1 / 9)
    >>> tuple(head(np.ones((2, 256), "float32")).shape)
    (2, 10)

    Reference:
    - [Jordan, 94% on CIFAR-10 in 3.29 seconds on a single GPU, 2024 (airbench94's
      head: bias-free linear layer, logits times 1/9)](https://arxiv.org/abs/2404.00498)
    """
    return keras.Sequential([keras.layers.Dense(classes, use_bias=False, name="logits"),
                             keras.layers.Rescaling(logit_scale, name="logit_scale")], name=name)


def check_classes(classes):
    """A label head's `classes` as an int >= 2, or None (the run fills it in from the data).

    Raises:
        ValueError: `classes` not None nor an integer >= 2, naming it.
    """
    classes = validate_positive_int(classes, "classes")
    if classes is not None and classes < 2:
        raise ValueError(f"`classes` must be at least 2 (the classes of the labels). "
                         f"Received: classes={classes!r}")
    return classes


def check_class_ids(y, classes, head, setting):
    """Refuse class ids `y` (int `(batch,)`) outside `[0, classes)`, naming `head` and the
    `setting` that holds more (`"OnlineLinearProbe(classes={})"`): beyond the classes, a one-hot
    target is all zeros and the head trains toward nothing (or the backend raises deep in the
    step). Labels without a shape (a dataset) are checked batch by batch (the step guard,
    `graph_checked_ids`)."""
    if not hasattr(y, "shape") or len(y.shape) != 1:
        return
    ids = np.asarray(ops.convert_to_numpy(y))
    if ids.size and (ids.min() < 0 or ids.max() >= classes):
        raise ValueError(_outside_message(head, classes) + _found(ids.min(), ids.max(), setting))


def _outside_message(head, classes):
    return f"{head[0].upper()}{head[1:]} has {classes} classes; labels must lie in [0, {classes})"


def _found(low, high, setting):
    low, high = int(low), int(high)  # Python ints: uint8's 255 + 1 would wrap to 0
    fix = ("class ids start at 0" if low < 0 else
           f"give it at least {high + 1} classes: {setting.format(high + 1)}")
    return f". Received: labels from {low} to {high}: {fix}"


def graph_checked_ids(loss, y, classes, head, setting):
    """TensorFlow: `loss`, with `y`'s class ids checked inside the step (a `tf.data` stream's
    batches never reach the host there; JAX and torch check them before the step, see
    `clzoo.models.jax_step_guard`). The assert fails the step with the one-line message; under
    XLA, which drops asserts, the loss is NaN instead of a silent number."""
    if keras.backend.backend() != "tensorflow" or len(y.shape) != 1:
        return loss
    if K.is_concrete(y):  # run_eagerly: the labels are here already
        check_class_ids(y, classes, head, setting)
        return loss
    # int64 holds every id TensorFlow takes: int32 would wrap 2**32 + 1 to 1, inside the classes
    ids = y if K.kind_of(y) == "float" else ops.cast(y, "int64")
    ok = ops.logical_and(ops.all(ids >= 0), ops.all(ids < classes))
    K.require(ok, f"{_outside_message(head, classes)}: a label lies outside them; give it as many "
              f"classes as the largest label + 1: {setting.format('C')}", values=(ids,))
    return K.poison(loss, ok)


def refuse_beside(context, head):
    """Why a label head trained beside the contrastive loss (`head`, e.g. "the online probe")
    cannot run in `context` (a `PartContext`): another task, or GradCache's step (which adds no
    part's loss); None where it can."""
    if context.task != "contrastive":
        return f"{head} needs task contrastive (task {context.task} trains a classifier already)"
    if "grad_cache" in context.parts:
        return (f"{head} does not run under GradCache: unset "
                f"{context.spelled.format('grad_cache')} (its step adds no part's loss)")
    return None


def check_auxiliary(classes, weight, label_smoothing, logit_scale=AIRBENCH_LOGIT_SCALE):
    """`(classes, weight, label_smoothing, logit_scale)` as `(int, float, float, float)`, checked.

    `classes` None is the run's to fill in (a recipe checked before its data is read).

    Raises:
        ValueError: `classes` not None nor an integer >= 2, `weight` or `logit_scale` not a
            finite number > 0, `label_smoothing` outside [0, 1); the message names
            the argument.

    Example:

    >>> from clzoo.parts.auxiliary import check_auxiliary
    >>> check_auxiliary(10, 1, 0.2, 0.5)
    (10, 1.0, 0.2, 0.5)
    """
    classes = check_classes(classes)
    weight = validate_number(weight, "weight", low=0.0, low_open=True, what="a positive, finite number")
    logit_scale = validate_number(logit_scale, "logit_scale", low=0.0, low_open=True,
                                  what="a positive, finite number")
    smoothing = validate_number(label_smoothing, "label_smoothing", low=0.0, high=1.0,
                                what="a number in [0, 1)")
    if smoothing == 1.0:  # all targets uniform: nothing left to learn
        raise ValueError("`label_smoothing` must be a number in [0, 1). Received: label_smoothing=1.0")
    return classes, weight, smoothing, logit_scale


def auxiliary_cross_entropy(labels, logits, views, label_smoothing, sample_weight=None,
                            head="the auxiliary cross-entropy head"):
    """Mean label-smoothed cross-entropy of the classifier's logits over every view.

    Args:
        labels: int `(batch,)` class ids (one class per sample).
        logits: float `(batch * views, classes)`, views folded into the batch as
            `ContrastiveModel.call` folds them (sample-major).
        views: views per sample.
        label_smoothing: the target puts `1 - s + s / classes` on the class and
            `s / classes` on each other class (Szegedy et al. 2016, sec. 7).
        sample_weight: None, or float `(batch,)`: each sample's weight on its views'
            terms, as Keras weighs the contrastive loss (`sum_over_batch_size`: the mean
            of weight x loss).
        head: what the error names (the online probe shares this loss).

    Returns:
        scalar float32 loss.

    Raises:
        ValueError: `labels` that are not one integer class id per sample.

    Example:

    >>> import numpy as np
    >>> from clzoo.parts.auxiliary import auxiliary_cross_entropy
    >>> logits = np.zeros((4, 3), "float32")  # 2 samples x 2 views, 3 classes, uniform
    >>> round(float(auxiliary_cross_entropy(np.array([0, 2]), logits, 2, 0.2)), 4)  # log(3)
    1.0986
    """
    if labels is None or len(labels.shape) != 1:
        raise ValueError(f"{head} needs one integer class id per sample, "
                         f"labels of shape (batch,). Received: shape "
                         f"{None if labels is None else tuple(labels.shape)}")
    classes = logits.shape[-1]
    targets = ops.one_hot(ops.repeat(ops.cast(labels, "int32"), views, axis=0), classes)
    losses = keras.losses.categorical_crossentropy(
        targets, ops.cast(logits, "float32"), from_logits=True, label_smoothing=label_smoothing)
    if sample_weight is not None:
        weights = ops.reshape(ops.cast(sample_weight, "float32"), (-1,))
        losses = losses * ops.repeat(weights, views, axis=0)
    return ops.mean(losses)


@PARTS.register("auxiliary", description="airbench94's linear classifier on the encoder's features, its "
                "cross-entropy added to the loss (uses the labels)")
class AuxiliaryPart(ModelPart):
    """`model.auxiliary: {weight, label_smoothing, logit_scale}` in a recipe (`classes` are the
    data's): airbench94's classifier on the encoder's
    features (`auxiliary_head`), its logits a training output, and `weight` times its
    label-smoothed cross-entropy (`auxiliary_cross_entropy`) added to the contrastive loss.

    Args:
        classes: the classifier's outputs (the run fills in the data's classes).
        weight: loss = contrastive + weight * label-smoothed cross-entropy (uses the labels).
        label_smoothing: of the cross-entropy, in `[0, 1)` (airbench94's 0.2).
        logit_scale: the fixed factor on the bias-free logits (airbench94's 1/9,
            `AIRBENCH_LOGIT_SCALE`).

    Raises:
        ValueError: as `check_auxiliary`; in `fit`, class ids outside `[0, classes)`.

    Example:

    >>> from clzoo.parts.auxiliary import AuxiliaryPart
    >>> AuxiliaryPart(10, 1, 0.2).weight
    1.0

    Reference:
    - [Jordan, 94% on CIFAR-10 in 3.29 seconds on a single GPU, 2024 (airbench94's head and
      label-smoothed cross-entropy)](https://arxiv.org/abs/2404.00498)
    """

    makes_outputs = True
    attach_first = True  # before the encoder, as in every checkpoint written with it so far

    run_arguments = ("classes",)

    def __init__(self, classes=None, weight=1.0, label_smoothing=0.2, logit_scale=AIRBENCH_LOGIT_SCALE):
        self.classes, self.weight, self.label_smoothing, self.logit_scale = check_auxiliary(
            classes, weight, label_smoothing, logit_scale)

    def refuse(self, context):
        return refuse_beside(context, "the auxiliary classifier")

    def attach(self, model):
        if self.classes is None:
            raise ValueError("The auxiliary classifier needs its number of classes: "
                             "AuxiliaryPart(classes=C, ...)")
        model.auxiliary_classifier = auxiliary_head(self.classes, self.logit_scale)

    def build(self, model, features_shape):
        if not model.auxiliary_classifier.built:
            model.auxiliary_classifier.build(features_shape)

    def outputs(self, model, features):
        return model.auxiliary_classifier(features)

    def added_loss(self, model, x, y, output, sample_weight):
        loss = self.weight * auxiliary_cross_entropy(y, output, x.shape[1], self.label_smoothing,
                                                     sample_weight)
        return graph_checked_ids(loss, y, self.classes, *_AUXILIARY)

    def check_labels(self, y):
        """Class ids beyond the classes would train the head toward the smoothing alone (an
        all-zero one-hot target): refused for arrays in `fit`, and batch by batch in the step."""
        check_class_ids(y, self.classes, *_AUXILIARY)


_AUXILIARY = ("the auxiliary classifier", "AuxiliaryPart(classes={0}) (auxiliary_classes={0})")
