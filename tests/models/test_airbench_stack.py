"""airbench's training stack, lever by lever: each test checks what the lever does.

Patch whitening (covariance of the stem's outputs), dirac init (identity map), frozen
batch-norm scale (against Keras' own layer), Lookahead SGD (against a NumPy reference),
the warm-up + linear decay schedule, and multi-crop test-time averaging (against the
views computed in NumPy).
"""

import keras
import numpy as np
import pytest

import clzoo
from clzoo.saving import load_model

pytestmark = pytest.mark.backends("tensorflow", "jax", "torch")  # every lane (tests/conftest.py)

RNG = np.random.default_rng(0)
IMAGES = (RNG.random((40, 16, 16, 3)) * 255).astype("uint8")


def _np(x):
    return keras.ops.convert_to_numpy(x)


def _patches_reference(images, k):
    """Every k x k patch of `(N, H, W, C)`, (row, column, channel) order, by plain loops."""
    n, h, w, c = images.shape
    out = [images[i, y:y + k, x:x + k, :].reshape(-1)
           for i in range(n) for y in range(h - k + 1) for x in range(w - k + 1)]
    return np.asarray(out, dtype="float64")


def test_patch_whitening_decorrelates_the_training_patches():
    x = RNG.normal(size=(30, 10, 10, 3)).astype("float32") * [1.0, 3.0, 0.5]
    x[..., 1] += 2 * x[..., 0]  # correlated channels
    layer = clzoo.models.PatchWhitening(2, epsilon=1e-8)
    layer.adapt(x)
    outputs = _np(layer(x)) - _np(layer.bias)
    first, second = outputs[..., :12].reshape(-1, 12), outputs[..., 12:].reshape(-1, 12)
    np.testing.assert_allclose(second, -first, atol=1e-5)
    np.testing.assert_allclose(first.T @ first / len(first), np.eye(12), atol=2e-3)
    # the filters are the eigenvectors of the reference patch covariance, scaled
    patches = _patches_reference(x, 2)
    projected = patches @ _np(layer.kernel)[..., :12].reshape(12, 12)
    np.testing.assert_allclose(projected, first, rtol=1e-3, atol=1e-3)
    assert [w.name for w in layer.trainable_weights] == ["bias"]


def test_patch_whitening_starts_as_identity_and_refuses_bad_images():
    layer = clzoo.models.PatchWhitening()
    x = RNG.normal(size=(2, 4, 4, 3)).astype("float32")
    outputs = _np(layer(x))
    np.testing.assert_allclose(outputs[..., :12].reshape(-1, 12),
                               _patches_reference(x, 2), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match=r"images \(N, H, W, C\) with H, W >= 2"):
        layer.adapt(np.zeros((3, 1, 1, 3), "float32"))
    with pytest.raises(ValueError, match="3 channels"):
        layer.adapt(np.zeros((3, 4, 4, 1), "float32"))
    with pytest.raises(ValueError, match="NaN or inf"):
        layer.adapt(np.full((3, 4, 4, 3), np.nan, "float32"))
    with pytest.raises(ValueError, match="epsilon"):
        clzoo.models.PatchWhitening(epsilon=0)


def test_whitened_encoder_carries_its_stem_when_saved(tmp_path):
    encoder = clzoo.models.get_encoder("airbench_half", input_shape=(16, 16, 3), whitening=True)
    before = _np(encoder.get_layer("stem_whitening").kernel).copy()
    assert clzoo.models.adapt_whitening(encoder, IMAGES) == 1
    kernel = _np(encoder.get_layer("stem_whitening").kernel)
    assert not np.allclose(kernel, before)
    path = tmp_path / "encoder.keras"
    encoder.save(path)
    loaded = load_model(path)  # no data at load time: the filters are weights
    np.testing.assert_array_equal(_np(loaded.get_layer("stem_whitening").kernel), kernel)
    x = IMAGES[:4].astype("float32") / 255
    np.testing.assert_allclose(_np(loaded(x)), _np(encoder(x)), rtol=1e-5, atol=1e-5)
    assert clzoo.models.adapt_whitening(clzoo.models.get_encoder("resnet8"), IMAGES) == 0


def test_adapt_whitening_reads_a_random_subset_not_the_first_images():
    # sorted by class, as an image folder is read: the first half dark, the second half bright
    images = np.concatenate([np.full((20, 8, 8, 3), 10, "uint8"),
                             (RNG.random((20, 8, 8, 3)) * 255).astype("uint8")])
    encoder = clzoo.models.get_encoder("airbench_half", input_shape=(16, 16, 3), whitening=True)
    small = np.repeat(np.repeat(images, 2, axis=1), 2, axis=2)
    clzoo.models.adapt_whitening(encoder, small, limit=10, seed=0)
    first = _np(encoder.get_layer("stem_whitening").kernel).copy()
    clzoo.models.adapt_whitening(encoder, small[:10], limit=10, seed=0)  # the first ten only
    assert not np.allclose(_np(encoder.get_layer("stem_whitening").kernel), first, atol=1e-3)


def test_dirac_convolution_passes_its_inputs_through():
    x = RNG.normal(size=(2, 6, 6, 4)).astype("float32")
    kernel = clzoo.models.DiracInitializer()((3, 3, 4, 7))
    out = _np(keras.ops.conv(x, kernel, padding="same"))
    np.testing.assert_allclose(out[..., :4], x, atol=1e-6)
    assert np.abs(out[..., 4:]).sum() > 0  # the other filters come from the base initializer
    with pytest.raises(ValueError, match="odd kh"):
        clzoo.models.DiracInitializer()((2, 2, 3, 3))
    config = keras.initializers.serialize(clzoo.models.DiracInitializer("he_normal"))
    assert isinstance(keras.initializers.deserialize(config), clzoo.models.DiracInitializer)


def test_airbench_levers_reach_the_layers():
    encoder = clzoo.models.get_encoder("airbench_half", whitening=True, dirac=True,
                                       batch_norm_scale=False, batch_norm_momentum=0.6,
                                       batch_norm_epsilon=1e-12)
    norm = encoder.get_layer("block1_bn1")
    assert (norm.scale, norm.momentum, norm.epsilon) == (False, 0.6, 1e-12)
    assert not any("gamma" in w.path for w in encoder.weights)
    conv = _np(encoder.get_layer("block2_conv2").kernel)
    np.testing.assert_array_equal(conv[1, 1, np.arange(128), np.arange(128)], np.ones(128))
    with pytest.raises(ValueError, match="batch_norm_momentum"):
        clzoo.models.get_encoder("airbench_half", batch_norm_momentum=1.0)


@pytest.mark.parametrize("epsilon", [1e-3, 1.001e-5, 1e-12])  # fused on TF, fused, unfused
def test_frozen_scale_batch_norm_matches_keras(epsilon):
    x = RNG.normal(size=(8, 4, 4, 5)).astype("float32") * 3 + 1
    ours = clzoo.models.BatchNormalization(scale=False, momentum=0.6, epsilon=epsilon)
    theirs = keras.layers.BatchNormalization(scale=False, momentum=0.6, epsilon=epsilon)
    for layer in (ours, theirs):
        layer.build(x.shape)
        layer.beta.assign(np.linspace(-1, 1, 5).astype("float32"))
    np.testing.assert_allclose(_np(ours(x, training=True)), _np(theirs(x, training=True)),
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(_np(ours.moving_variance), _np(theirs.moving_variance), rtol=1e-5)
    np.testing.assert_allclose(_np(ours.moving_mean), _np(theirs.moving_mean), rtol=1e-5, atol=1e-6)


def _reference_lookahead_sgd(weights, offsets, grads_fn, steps, lr, momentum, wd, mult, every,
                             alpha, offset_decay=1.0, total=None):
    """airbench94's optimizer in NumPy, float64: per parameter group PyTorch SGD (Nesterov) with
    lr_group and weight decay wd * lr / lr_group (times `offset_decay` for the offsets), and
    LookaheadState every `every` steps, then `update(decay=1.0)` after the run's last step (`total`,
    default `steps`); steps past it go on with the full decay `alpha`."""
    total = total or steps
    weights = [w.astype("float64") for w in weights]
    slow = [w.copy() for w in weights]
    velocity = [np.zeros_like(w) for w in weights]
    for t in range(1, steps + 1):
        grads = grads_fn(weights)
        for i, g in enumerate(grads):
            rate = lr * (mult if offsets[i] else 1.0)
            g = g + (wd * (offset_decay if offsets[i] else 1.0) * lr / rate) * weights[i]
            velocity[i] = momentum * velocity[i] + g
            weights[i] = weights[i] - rate * (g + momentum * velocity[i])
        pulls = [alpha * min(t / total, 1.0) ** 3] if t % every == 0 else []
        for decay in pulls + ([1.0] if t == total else []):
            for i in range(len(weights)):
                slow[i] = decay * slow[i] + (1 - decay) * weights[i]
                weights[i] = slow[i].copy()
    return weights


class _Offset(keras.layers.Layer):
    """`x + beta`: a variable named like a batch-norm offset."""

    def build(self, input_shape):
        self.beta = self.add_weight(shape=(input_shape[-1],), name="beta",
                                    initializer=keras.initializers.Constant(0.3))

    def call(self, x):
        return x + self.beta


# the last step is a Lookahead step, or not; the offsets decayed at the weights' rate, or 8x; a fit
# on past the run's total_steps keeps training (issue 72 item 18: 8 of 10 more steps did nothing)
@pytest.mark.parametrize("steps, offset_decay, total", [(12, 1.0, None), (10, 1.0, None), (12, 8.0, None),
                                                        (17, 1.0, 10)])
def test_lookahead_sgd_matches_a_numpy_reference(steps, offset_decay, total):
    x = RNG.normal(size=(16, 3)).astype("float32")
    y = RNG.normal(size=(16, 2)).astype("float32")
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2), _Offset()])
    initial = [_np(w).copy() for w in model.trainable_weights]
    offsets = [w.name == "beta" for w in model.trainable_weights]
    assert offsets == [False, False, True]
    optimizer = clzoo.optimizers.LookaheadSGD(0.05, momentum=0.85, weight_decay=1e-2,
                                              bias_learning_rate_multiplier=4.0,
                                              offset_weight_decay_multiplier=offset_decay,
                                              lookahead_every=5, lookahead_alpha=0.9,
                                              total_steps=total or steps)
    model.compile(optimizer=optimizer, loss="mse")
    for _ in range(steps):
        model.train_on_batch(x, y)

    def grads(weights):  # d/dW of mean((xW + b + beta - y)^2) over all entries
        kernel, bias, beta = weights
        error = 2 * (x @ kernel + bias + beta - y) / y.size
        return [x.T @ error, error.sum(0), error.sum(0)]

    expected = _reference_lookahead_sgd(initial, offsets, grads, steps, 0.05, 0.85, 1e-2, 4.0,
                                        5, 0.9, offset_decay, total)
    for got, want in zip(model.trainable_weights, expected):
        np.testing.assert_allclose(_np(got), want, rtol=1e-4, atol=1e-5)
    restored = clzoo.optimizers.LookaheadSGD.from_config(optimizer.get_config())
    assert restored.lookahead_every == 5 and restored.total_steps == (total or steps)
    assert restored.offset_weight_decay_multiplier == offset_decay


def test_lookahead_sgd_refuses_bad_settings():
    with pytest.raises(ValueError, match="total_steps"):
        clzoo.optimizers.LookaheadSGD(0.1)
    with pytest.raises(ValueError, match="bias_learning_rate_multiplier"):
        clzoo.optimizers.LookaheadSGD(0.1, bias_learning_rate_multiplier=0, lookahead_every=0)
    with pytest.raises(ValueError, match="offset_weight_decay_multiplier"):
        clzoo.optimizers.LookaheadSGD(0.1, offset_weight_decay_multiplier=-1, lookahead_every=0)
    for key in ("momentum", "weight_decay", "lookahead_alpha", "offset_weight_decay_multiplier"):
        with pytest.raises(ValueError, match=key):
            clzoo.optimizers.LookaheadSGD(0.1, lookahead_every=0, **{key: float("nan")})


def test_warmup_linear_decay_is_piecewise_linear():
    schedule = clzoo.optimizers.WarmupLinearDecay(2.0, 10, 110, start_fraction=0.2,
                                                  end_fraction=0.07)
    steps = np.array([0, 5, 10, 60, 110, 200])
    expected = 2.0 * np.array([0.2, 0.6, 1.0, 1 - 0.93 / 2, 0.07, 0.07])
    np.testing.assert_allclose([float(_np(schedule(s))) for s in steps], expected, rtol=1e-5)
    rebuilt = keras.optimizers.schedules.deserialize(keras.optimizers.schedules.serialize(schedule))
    assert float(_np(rebuilt(60))) == pytest.approx(float(_np(schedule(60))))
    with pytest.raises(ValueError, match="warmup_steps < total_steps"):
        clzoo.optimizers.WarmupLinearDecay(1.0, 10, 10)


def _shift_reference(images, dy, dx):
    padded = np.pad(images, [(0, 0), (abs(dy),) * 2, (abs(dx),) * 2, (0, 0)], mode="reflect")
    h, w = images.shape[1:3]
    return padded[:, abs(dy) - dy:abs(dy) - dy + h, abs(dx) - dx:abs(dx) - dx + w]


def test_test_time_averaged_weights_airbench_views(tmp_path):
    encoder = clzoo.models.get_encoder("airbench_half", input_shape=(16, 16, 3))
    wrapped = clzoo.models.test_time_averaged(encoder, translate=1)
    x = IMAGES[:4].astype("float32") / 255

    def pair(images):
        return (_np(encoder(images, training=False))
                + _np(encoder(images[:, :, ::-1].copy(), training=False))) / 2

    expected = (0.5 * pair(x) + 0.25 * pair(_shift_reference(x, -1, -1))
                + 0.25 * pair(_shift_reference(x, 1, 1)))
    np.testing.assert_allclose(_np(wrapped(x)), expected, rtol=1e-4, atol=1e-5)
    assert len(wrapped.weights) == len(encoder.weights)  # shared, not copied
    path = tmp_path / "tta.keras"
    wrapped.save(path)
    np.testing.assert_allclose(_np(load_model(path)(x)), _np(wrapped(x)), rtol=1e-6, atol=1e-6)
    assert clzoo.models.test_time_averaged(encoder, 0).name.endswith("flip_averaged")
    with pytest.raises(ValueError, match="translate"):
        clzoo.models.test_time_averaged(encoder, -1)
    with pytest.raises(ValueError, match="below the image size 16"):
        clzoo.models.test_time_averaged(encoder, 16)


def test_reflect_translate_is_a_reflected_shift():
    x = RNG.normal(size=(2, 5, 6, 3)).astype("float32")
    for dy, dx in ((1, 1), (-2, 1), (0, -3)):
        np.testing.assert_array_equal(_np(clzoo.models.ReflectTranslate(dy, dx)(x)),
                                      _shift_reference(x, dy, dx))
