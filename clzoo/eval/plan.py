"""Plan lines: what a long command is about to run, how much of it, and roughly how long.

`clzoo transfer`, `clzoo eval` and `clzoo compare` print one before their
work. Estimates come from the encoder's forward speed measured on a few of
the images on this machine (`forward_rate`); an SGD probe step costs about
`SGD_STEP_COST` forward passes per image (frozen encoder, augmentation, a
linear layer's gradient). They are rough: within a factor of two or so.
"""

import time

from clzoo.eval.embed import predict_images

SGD_STEP_COST = 1.5
# The batch the embedding itself runs at (predict_images' default): per-image speed depends on it
# (the airbench preset here: 50 images/s at 128, 77 at 512, the full embedding 74).
SAMPLE = 512


def forward_rate(model, images, size=None, sample=SAMPLE, verbose=False):
    """Images per second of `model`'s forward pass here, timed on `sample` images.

    The first call compiles the predict function; the second is timed.

    Args:
        model: `keras.Model` taking float images in [0, 1].
        images: uint8 `(N, H, W, 3)`; the first `sample` are used.
        size: resize to `size x size` first. Defaults to `None`.
        sample: images timed, one batch. Defaults to `SAMPLE` (512, the embedding's batch).
        verbose: print a line before the two passes (tens of seconds for a large encoder on a
            CPU, before any other line of the plan). Defaults to `False`.

    Returns:
        float, images per second (> 0).

    Raises:
        ValueError: the images do not fit the model's input (both shapes named).
    """
    from clzoo.eval.embed import check_encoder_fits

    check_encoder_fits(model, images, size)  # a clear error before the timed pass
    x = images[:sample]
    if verbose:
        print(f"timing the encoder on {len(x)} images for the plan's estimate (two passes) ...", flush=True)
    predict_images(model, x, size=size)
    started = time.perf_counter()
    predict_images(model, x, size=size)
    return len(x) / max(time.perf_counter() - started, 1e-6)


def duration(seconds):
    """`"about 40 s"`, `"about 12 min"`, `"about 2.5 h"`.

    Example:

    >>> from clzoo.eval.plan import duration
    >>> duration(42), duration(900), duration(9000)
    ('about 42 s', 'about 15 min', 'about 2.5 h')
    """
    if seconds < 90:
        return f"about {max(1, round(seconds))} s"
    if seconds < 5400:
        return f"about {round(seconds / 60)} min"
    return f"about {seconds / 3600:.1f} h"


def rate_text(rate):
    """Images per second with the digits it needs: `"1,234"`, `"41"`, `"7.5"`, `"0.52"` (a slow
    224-px run on a CPU read "0 images/s").

    Example:

    >>> from clzoo.eval.plan import rate_text
    >>> rate_text(1234.4), rate_text(41.2), rate_text(7.46), rate_text(0.5231), rate_text(0.0004)
    ('1,234', '41', '7.5', '0.52', '0.0004')
    """
    if rate >= 10:
        return f"{rate:,.0f}"
    if rate >= 1:
        return f"{rate:.1f}"
    return f"{rate:.2g}"


def sgd_probe_images(n_train, learning_rates, epochs, validation_fraction=0.1):
    """`(fits, images through the encoder)` of `sgd_linear_probe` (SINCERE app. J).

    With several learning rates, one fit per rate on the training images
    less the validation share, then the best rate again on all of them.

    Example:

    >>> from clzoo.eval.plan import sgd_probe_images
    >>> sgd_probe_images(1000, (0.01, 0.1, 1.0), 100)
    (4, 370000)
    """
    rates = len(learning_rates)
    if rates < 2:
        return 1, epochs * n_train
    n_fit = n_train - max(1, round(validation_fraction * n_train))
    return rates + 1, epochs * (rates * n_fit + n_train)


def transfer_plan(protocol, n_train, n_test, rate, learning_rates=(0.01, 0.1, 1.0), epochs=100):
    """The line `clzoo transfer` prints before its work.

    Args:
        protocol: `"sgd"` or `"lbfgs"`.
        n_train, n_test: images in the two splits.
        rate: forward images per second (`forward_rate`).
        learning_rates, epochs: the SGD protocol's.

    Returns:
        str, one paragraph.

    Example:

    >>> from clzoo.eval.plan import transfer_plan
    >>> print(transfer_plan("lbfgs", 1000, 200, rate=100.0))
    plan: L-BFGS logistic regression (scikit-learn) on frozen features: 1,000 train + 200
    test images embedded once, then one fit; about 12 s of embedding here (100 images/s).
    """
    embed_seconds = (n_train + n_test) / rate
    if protocol == "lbfgs":
        return (f"plan: L-BFGS logistic regression (scikit-learn) on frozen features: {n_train:,} train "
                f"+ {n_test:,} test images embedded once, then one fit; {duration(embed_seconds)} of "
                f"embedding here ({rate_text(rate)} images/s).")
    fits, images = sgd_probe_images(n_train, learning_rates, epochs)
    choose = (f"{len(learning_rates)} learning rates ({', '.join(map(str, learning_rates))}) "
              "chosen on 10% held out, then the best on all images" if fits > 1 else
              f"learning rate {learning_rates[0]}")
    return (f"plan: SGD linear probe (SINCERE app. J): {fits} fit(s) x {epochs} epochs ({choose}): "
            f"{images:,} images through the encoder, {duration(SGD_STEP_COST * images / rate)} here "
            f"({rate_text(rate)} images/s). `--protocol lbfgs` embeds each image once instead "
            f"({duration(embed_seconds)}); `--epochs` / `--learning-rates` shorten this one.")


def eval_plan(metrics, n_train, n_test, rate, probe_epochs=100, encoders=1):
    """The line `clzoo eval` (`encoders=1`) or `clzoo compare` (`encoders=2`) prints before its work.

    Example:

    >>> from clzoo.eval.plan import eval_plan
    >>> print(eval_plan(("knn", "probe"), 900, 100, rate=50.0))
    plan: embed 900 train + 100 test images (about 20 s here, 50 images/s), then 2 metrics
    on the embeddings: knn, probe.
    """
    embed_seconds = encoders * (n_train + n_test) / rate
    who = "each of 2 encoders: " if encoders == 2 else ""
    line = (f"plan: {who}embed {n_train:,} train + {n_test:,} test images ({duration(embed_seconds)} "
            f"here, {rate_text(rate)} images/s), then {len(metrics)} metrics on the embeddings: "
            f"{', '.join(metrics)}.")
    if "sgd_probe" in metrics:
        fits, images = sgd_probe_images(n_train, (0.01, 0.1, 1.0), probe_epochs)
        line += (f" sgd_probe trains {fits} probes x {probe_epochs} epochs through the encoder: "
                 f"{duration(encoders * SGD_STEP_COST * images / rate)} more (`--probe-epochs`).")
    return line
