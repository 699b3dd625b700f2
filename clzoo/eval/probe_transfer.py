"""The linear-probe transfer protocol of `clzoo transfer`: a frozen encoder on new data
(SINCERE app. J: SGD probe on frozen features, 100 epochs, learning rate chosen on a
validation split; or scikit-learn's L-BFGS logistic regression), top-1 with a 95% bootstrap
interval over the test images."""

import dataclasses

from clzoo.eval.bootstrap import bootstrap_accuracy
from clzoo.eval.embed import embed
from clzoo.eval.linear_probe import logistic_regression_probe, sgd_linear_probe

PROTOCOLS = ("sgd", "lbfgs")


@dataclasses.dataclass(frozen=True)
class TransferResult:
    """Top-1 of a linear probe on frozen features and its bootstrap interval.

    Attributes:
        protocol: `"sgd"` or `"lbfgs"`.
        top1: test top-1 in [0, 1].
        low, high: the 95% percentile bootstrap interval of `top1`.
        test_images: how many test images scored it.
        learning_rate: the SGD learning rate used (chosen on a validation split when several
            were given), None for L-BFGS.
        learning_rates_tried: how many learning rates were compared.
        details: the probe's own facts (epochs, C, validation accuracies, ...).
    """

    protocol: str
    top1: float
    low: float
    high: float
    test_images: int
    learning_rate: float | None = None
    learning_rates_tried: int = 0
    details: dict = dataclasses.field(default_factory=dict)

    def to_dict(self, **facts):
        """The JSON `clzoo transfer --output` writes, with `facts` (preset, data) first."""
        return {**facts, "protocol": self.protocol, "top1": self.top1, "ci95": [self.low, self.high],
                **{k: v for k, v in self.details.items() if k != "protocol"},
                "test_images": self.test_images}


def check_input_size(encoder, split, data="the data"):
    """Raise `ValueError` naming both sizes when `split`'s images `(N, H, W, C)` are not the
    encoder's `(H, W)` (`--image-size` resizes them on load).

    Example:

    >>> import keras, numpy as np
    >>> from clzoo.data import from_arrays
    >>> from clzoo.eval.probe_transfer import check_input_size
    >>> encoder = keras.Sequential([keras.Input((4, 4, 3)), keras.layers.Flatten()])
    >>> check_input_size(encoder, from_arrays(np.zeros((2, 4, 4, 3), np.uint8), [0, 1]))
    """
    size = encoder.input_shape[1]
    if tuple(split.images.shape[1:3]) != (size, size):
        raise ValueError(f"The encoder takes {size}x{size} images; {data} has "
                         f"{split.images.shape[1]}x{split.images.shape[2]} (--image-size {size} "
                         "resizes them on load).")


def transfer_probe(encoder, train, test, protocol="sgd", learning_rates=(0.1,), epochs=100,
                   verbose=1):
    """Fit a linear probe on `encoder`'s frozen features of `train`, score it on `test`.

    Source: SINCERE (Feeney & Hughes), app. J and Table 2 (transfer by a linear probe on frozen
    features); the interval is a 95% percentile bootstrap over the test images (SINCERE sec. 4).

    Args:
        encoder: `keras.Model`, images `(B, H, W, C)` -> features `(B, D)`.
        train, test: `clzoo.data.Split`s: uint8 images `(N, H, W, C)` of the encoder's size and
            int labels `(N,)`.
        protocol: `"sgd"` (SINCERE app. J) or `"lbfgs"` (logistic regression).
        learning_rates: the SGD learning rates to choose from on a validation split.
        epochs: SGD epochs per fit.
        verbose: progress output of the SGD fits.

    Returns:
        `TransferResult`.

    Raises:
        ValueError: an unknown protocol, or images of another size than the encoder takes.
    """
    if protocol not in PROTOCOLS:
        raise ValueError(f"`protocol` must be one of {PROTOCOLS}. Received: protocol={protocol!r}")
    check_input_size(encoder, train)
    if protocol == "sgd":
        result = sgd_linear_probe(encoder, train.images, train.labels, test.images, test.labels,
                                  learning_rates=list(learning_rates), epochs=epochs, verbose=verbose)
    else:
        result = logistic_regression_probe(
            embed(encoder, train.images, normalize=False), train.labels,
            embed(encoder, test.images, normalize=False), test.labels)
    interval = bootstrap_accuracy(result.predictions == test.labels)
    tried = result.details.get("validation_accuracy") or {}
    return TransferResult(protocol, result.accuracy, interval.low, interval.high, int(len(test)),
                          result.details.get("learning_rate"), len(tried), dict(result.details))
