"""An auxiliary cross-entropy head beside the contrastive loss (`ContrastiveModel(auxiliary_classes=...)`).

A linear classifier on the encoder's features, trained with label-smoothed
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
from keras import ops


def check_auxiliary(classes, weight, label_smoothing):
    """`(classes, weight, label_smoothing)` as floats/ints, checked.

    Raises:
        ValueError: `classes` not an integer >= 2, `weight` not a finite number > 0,
            `label_smoothing` outside [0, 1).
    """
    if isinstance(classes, bool) or not isinstance(classes, int) or classes < 2:
        raise ValueError(f"`auxiliary_classes` must be an integer >= 2 (the classes of the labels). "
                         f"Received: {classes!r}")
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 < weight < float("inf"):
        raise ValueError(f"`auxiliary_weight` must be a finite number > 0. Received: {weight!r}")
    if (isinstance(label_smoothing, bool) or not isinstance(label_smoothing, (int, float))
            or not 0 <= label_smoothing < 1):
        raise ValueError("`auxiliary_label_smoothing` must be in [0, 1). "
                         f"Received: {label_smoothing!r}")
    return classes, float(weight), float(label_smoothing)


def auxiliary_cross_entropy(labels, logits, views, label_smoothing):
    """Mean label-smoothed cross-entropy of the classifier's logits over every view.

    Args:
        labels: int `(batch,)` class ids (one class per sample).
        logits: float `(batch * views, classes)`, views folded into the batch as
            `ContrastiveModel.call` folds them (sample-major).
        views: views per sample.
        label_smoothing: the target puts `1 - s + s / classes` on the class and
            `s / classes` on each other class.

    Returns:
        scalar float32 loss.

    Raises:
        ValueError: `labels` that are not one integer class id per sample.
    """
    if labels is None or len(labels.shape) != 1:
        raise ValueError("the auxiliary cross-entropy head needs one integer class id per sample, "
                         f"labels of shape (batch,). Received: shape "
                         f"{None if labels is None else tuple(labels.shape)}")
    classes = logits.shape[-1]
    targets = ops.one_hot(ops.repeat(ops.cast(labels, "int32"), views, axis=0), classes)
    losses = keras.losses.categorical_crossentropy(
        targets, ops.cast(logits, "float32"), from_logits=True, label_smoothing=label_smoothing)
    return ops.mean(losses)
