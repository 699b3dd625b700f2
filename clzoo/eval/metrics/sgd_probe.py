"""`sgd_probe`: the SINCERE app. J linear probe, SGD through the frozen encoder (slow; not default)."""

from clzoo.eval.linear_probe import sgd_linear_probe
from clzoo.eval.metrics._base import Metric, MetricResult, percent, register_metric


@register_metric
class SGDProbe(Metric):
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
