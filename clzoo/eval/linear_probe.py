"""Linear probes on frozen features.

Two protocols:
- `logistic_regression_probe`: multinomial logistic regression on fixed
  features with L-BFGS (scikit-learn), as SimCLR evaluates (Chen et al. 2020).
- `sgd_linear_probe`: the SINCERE paper's app. J protocol: a linear layer on
  the frozen encoder trained with SGD (momentum 0.9, weight decay 1e-4,
  batch 128, 100 epochs) on random crops and horizontal flips, the learning
  rate chosen on a 10% validation split, then refit on the whole training set.
"""

import dataclasses

import keras
import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from clzoo.console import keras_verbose
from clzoo.eval import _checks
from clzoo.eval.embed import predict_images
from clzoo.eval.metric import MetricResult, ReportMetric, percent, register_metric


@dataclasses.dataclass
class ProbeResult:
    """What a linear probe returns.

    Attributes:
        accuracy: top-1 on the test set, in [0, 1].
        predictions: int `(M,)`.
        probabilities: float `(M, classes)` softmax of the probe, for calibration.
        details: protocol facts (chosen learning rate, validation accuracies, ...).
    """

    accuracy: float
    predictions: np.ndarray
    probabilities: np.ndarray
    details: dict = dataclasses.field(default_factory=dict)


def logistic_regression_probe(train_embeddings, train_labels, test_embeddings, test_labels,
                              regularization=1.0, max_iter=1000, standardize=True):
    """Multinomial logistic regression (L-BFGS) on frozen embeddings.

    Args:
        train_embeddings: float `(N, D)`.
        train_labels: int `(N,)`, at least two classes.
        test_embeddings: float `(M, D)`.
        test_labels: int `(M,)`.
        regularization: inverse L2 strength, scikit-learn's `C`. Defaults to `1.0`.
        max_iter: L-BFGS iterations. Defaults to `1000`.
        standardize: scale features to zero mean, unit variance first.

    Returns:
        `ProbeResult`; `probabilities` columns follow class ids
        `0 .. max(train_labels)` (classes absent from training get 0).

    Example:

    >>> import numpy as np, clzoo
    >>> x = np.array([[0.0, 1], [0, 2], [1, 0], [2, 0]])
    >>> clzoo.eval.logistic_regression_probe(x, [0, 0, 1, 1], [[0, 3.0]], [0]).accuracy
    1.0
    """
    train, y_train, test, y_test = _checks.train_test(train_embeddings, train_labels,
                                                      test_embeddings, test_labels)
    # Standardize in place in our own float64 copies: one copy of the features, not two.
    train, test = _own(train, train_embeddings), _own(test, test_embeddings)
    steps = [StandardScaler(copy=False)] if standardize else []
    model = make_pipeline(*steps, LogisticRegression(C=regularization, max_iter=max_iter))
    model.fit(train, y_train)
    classes = model.classes_
    probabilities = np.zeros((test.shape[0], int(max(classes.max(), y_test.max())) + 1))
    probabilities[:, classes] = model.predict_proba(test)
    predictions = classes[np.argmax(probabilities[:, classes], axis=1)]
    return ProbeResult(float(np.mean(predictions == y_test)), predictions, probabilities,
                       {"protocol": "logistic regression, L-BFGS (scikit-learn)",
                        "C": regularization})


def _own(checked, given):
    """`checked`, copied when it is the caller's own array (the scaler then writes into it)."""
    if isinstance(given, np.ndarray) and np.shares_memory(checked, given):
        return checked.copy()
    return checked


def _augmenter(size, seed):
    """Random crop (4-pixel zero padding) and horizontal flip, Keras core layers."""
    return keras.Sequential([
        keras.layers.ZeroPadding2D(4),
        keras.layers.RandomCrop(size[0], size[1], seed=seed),
        keras.layers.RandomFlip("horizontal", seed=seed),
    ], name="probe_augmentation")


def _probe_models(encoder, num_classes, weight_decay, augment, seed):
    """(training model with augmentation, inference model) sharing one linear layer."""
    encoder.trainable = False
    # torch-style weight decay wd * w in the gradient == L2 penalty wd/2 ||w||^2.
    linear = keras.layers.Dense(num_classes, kernel_regularizer=keras.regularizers.L2(weight_decay / 2),
                                name="linear_probe")
    inputs = keras.Input(encoder.input_shape[1:])
    predict = keras.Model(inputs, linear(encoder(inputs, training=False)))
    if not augment:
        return predict, predict
    # Augmentation layers only in the training graph: at inference Keras' RandomCrop
    # would resize instead of passing the image through.
    train_inputs = keras.Input(encoder.input_shape[1:])
    x = _augmenter(encoder.input_shape[1:3], seed)(train_inputs)
    return keras.Model(train_inputs, linear(encoder(x, training=False))), predict


def _fit_probe(encoder, images, labels, num_classes, learning_rate, epochs, batch_size,
               weight_decay, augment, seed, verbose):
    keras.utils.set_random_seed(seed)
    model, predict = _probe_models(encoder, num_classes, weight_decay, augment, seed)
    steps = epochs * int(np.ceil(len(images) / batch_size))
    schedule = keras.optimizers.schedules.CosineDecay(learning_rate, max(steps, 1))
    model.compile(optimizer=keras.optimizers.SGD(schedule, momentum=0.9),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    model.fit(images, labels, batch_size=batch_size, epochs=epochs, shuffle=True,
              verbose=keras_verbose(verbose))
    return predict.get_layer("linear_probe")


def _logits(linear, features):
    """The linear probe on frozen features (the encoder runs once per image set, not once per
    candidate model: one traced predict function, no TensorFlow retracing warnings)."""
    kernel, bias = (keras.ops.convert_to_numpy(w).astype(np.float64) for w in linear.weights)
    return np.asarray(features, np.float64) @ kernel + bias


def _scaled(images):
    return np.asarray(images, dtype=np.float32) / 255.0


def sgd_linear_probe(encoder, train_images, train_labels, test_images, test_labels,
                     learning_rates=(0.01, 0.1, 1.0), epochs=100, batch_size=128,
                     weight_decay=1e-4, validation_fraction=0.1, augment=True, seed=0,
                     verbose=0):
    """The SINCERE app. J linear probe: SGD on a frozen encoder, learning rate chosen on validation.

    For each learning rate a linear layer on the frozen encoder is trained on
    90% of the training images (random crop with 4-pixel padding and
    horizontal flip, SGD momentum 0.9, weight decay 1e-4, batch 128, cosine
    decay); the rate with the best accuracy on the held-out 10% is used to
    train again on all training images, then scored on the test set. The
    paper does not state its learning-rate grid or schedule; ours are the
    `learning_rates` argument and cosine decay.

    Args:
        encoder: `keras.Model`, float images in [0, 1] `(B, H, W, 3)` -> `(B, D)`;
            left frozen (`trainable = False`).
        train_images, test_images: uint8 `(N, H, W, 3)` at the encoder's size.
        train_labels, test_labels: int `(N,)`.
        learning_rates: candidates. Defaults to `(0.01, 0.1, 1.0)`.
        epochs: per fit. Defaults to `100` (the paper's); each candidate and
            the final fit run that many epochs through the encoder.
        batch_size: Defaults to `128`.
        weight_decay: Defaults to `1e-4`.
        validation_fraction: held out to choose the rate. Defaults to `0.1`.
        augment: random crop + flip while training. Defaults to `True`.
        seed: split, initialization and augmentation seed.
        verbose: Keras `fit` verbosity.

    Returns:
        `ProbeResult` with `details["learning_rate"]` and
        `details["validation_accuracy"]` per candidate.

    Raises:
        ValueError: labels not matching the images, fewer than two classes,
            `validation_fraction` outside (0, 1), non-positive learning rates.
    """
    train_images = np.asarray(train_images)
    y_train = _checks.labels(train_labels, len(train_images), "train_labels", min_classes=2)
    y_test = _checks.labels(test_labels, len(test_images), "test_labels")
    if not 0 < validation_fraction < 1:
        raise ValueError(f"`validation_fraction` must be in (0, 1). Received: {validation_fraction!r}")
    if not learning_rates or any(not lr > 0 for lr in learning_rates):
        raise ValueError(f"`learning_rates` must be positive numbers. Received: {learning_rates!r}")
    num_classes = int(max(y_train.max(), y_test.max())) + 1
    images = _scaled(train_images)
    order = np.random.default_rng(seed).permutation(len(images))
    n_val = max(1, round(validation_fraction * len(images)))
    val, fit = order[:n_val], order[n_val:]
    scores = {}
    if len(learning_rates) > 1:
        features = predict_images(encoder, images[val])
        for lr in learning_rates:
            linear = _fit_probe(encoder, images[fit], y_train[fit], num_classes, lr, epochs,
                                batch_size, weight_decay, augment, seed, verbose)
            scores[float(lr)] = float(np.mean(np.argmax(_logits(linear, features), 1) == y_train[val]))
        best = max(scores, key=scores.get)
    else:
        best = float(learning_rates[0])
    linear = _fit_probe(encoder, images, y_train, num_classes, best, epochs, batch_size,
                        weight_decay, augment, seed, verbose)
    logits = _logits(linear, predict_images(encoder, _scaled(test_images)))
    probabilities = np.exp(logits - logits.max(1, keepdims=True))
    probabilities /= probabilities.sum(1, keepdims=True)
    predictions = np.argmax(logits, axis=1)
    return ProbeResult(float(np.mean(predictions == y_test)), predictions, probabilities,
                       {"protocol": "SINCERE app. J (SGD, frozen encoder)",
                        "learning_rate": best, "validation_accuracy": scores,
                        "epochs": epochs})


def cached_probe(context):
    """The context's logistic-regression `ProbeResult`, fitted once (shared with `calibration`)."""
    return context.cached("probe", lambda: logistic_regression_probe(
        context.train, context.train_labels, context.test, context.test_labels))


@register_metric
class ProbeReport(ReportMetric):
    """Top-1 of multinomial logistic regression (L-BFGS, standardized features) on frozen features.

    Scalars: `{"accuracy", "protocol", "C"}`. Correctness: `probe`.
    Source: Chen et al. 2020 (SimCLR), linear evaluation on fixed features.

    Example:

    >>> import numpy as np, clzoo
    >>> x, y = np.array([[0.0, 1], [0, 2], [1, 0], [2, 0]]), np.array([0, 0, 1, 1])
    >>> context = clzoo.eval.EvalContext.create(x, y, x, y)
    >>> clzoo.eval.METRICS.get("probe")().compute(context).scalars["accuracy"]
    1.0
    """

    name = "probe"
    description = "logistic regression (L-BFGS) on frozen features"
    source = "SimCLR (Chen et al. 2020) linear evaluation"

    def compute(self, context):
        result = cached_probe(context)
        return MetricResult(self.name, {"accuracy": result.accuracy, **result.details},
                            {"probe": result.predictions == context.test_labels},
                            [("linear probe top-1 (logistic regression, L-BFGS)",
                              percent(result.accuracy))])


@register_metric
class SGDProbeReport(ReportMetric):
    """SGD linear layer on the frozen encoder, crops and flips, learning rate chosen on 10% validation.

    Needs the encoder and images (`clzoo.eval.evaluate` passes them).
    Scalars: `{"accuracy", "protocol", "learning_rate", "validation_accuracy",
    "epochs"}`. Correctness: `sgd_probe`. Not a default metric: it runs
    `probe_epochs` epochs through the encoder per candidate learning rate.
    Source: Feeney and Hughes, SINCERE, app. J.

    Example:

    >>> import numpy as np, clzoo
    >>> x, y = np.eye(4), np.array([0, 0, 1, 1])
    >>> clzoo.eval.METRICS.get("sgd_probe")().check(clzoo.eval.EvalContext.create(x, y, x, y))
    Traceback (most recent call last):
    ...
    ValueError: The 'sgd_probe' metric needs the encoder and images: use ...
    """

    name = "sgd_probe"
    description = "SGD probe with crops/flips, rate chosen on 10% validation (slow)"
    source = "SINCERE app. J"
    default = False

    def check(self, context):
        if context.encoder is None or context.images is None:
            raise ValueError("The 'sgd_probe' metric needs the encoder and images: "
                             "use clzoo.eval.evaluate(encoder, data, ...).")

    def compute(self, context):
        self.check(context)
        result = sgd_linear_probe(context.encoder, context.images[0], context.train_labels,
                                  context.images[1], context.test_labels,
                                  epochs=context.probe_epochs, verbose=1 if context.verbose else 0)
        scalars = {"accuracy": result.accuracy, **result.details}
        scalars["validation_accuracy"] = {str(k): v for k, v in
                                          result.details["validation_accuracy"].items()}
        return MetricResult(self.name, scalars,
                            {"sgd_probe": result.predictions == context.test_labels},
                            [(f"linear probe top-1 (SINCERE app. J, lr {result.details['learning_rate']})",
                              percent(result.accuracy))])
