"""Issue 23's input kinds, each at several instances: NaN images, negative weights inside `fit`,
extreme embedding scales and zero label rows, errors that blamed something else, `from_arrays`.

Runs in every backend lane (`pytestmark`; see `tests/conftest.py`).
"""

import keras
import numpy as np
import pytest

import clzoo
from clzoo.eval import _checks as eval_checks
from clzoo.eval.embed import embed
from clzoo.losses import label_similarity as LS
from clzoo.train.callbacks import StopOnNaN, weights_finite_check
from clzoo.validation.inputs import l2_normalize
from tests.hostile._util import BACKEND, compiled, identity_model, runtime_error, to_numpy
from tests.losses.autodiff import value_and_grad

pytestmark = pytest.mark.backends("tensorflow", "jax", "torch")  # every lane (tests/conftest.py)

L = clzoo.losses
EMBEDDING_LOSSES = [cls for cls in L.ALL_OBJECTS if cls is not L.SoftTargetInfoNCELoss]
RNG = np.random.default_rng(23)
Z = RNG.normal(size=(6, 2, 8)).astype("float32")
Y = np.array([0, 0, 1, 1, 2, 2])
# A failed check inside `fit`: eager and host checks raise ValueError, compiled ones the backend's.
FIT_ERRORS = (ValueError, runtime_error())


def _encoder(pool=True, shape=(8, 8, 1)):
    inputs = keras.Input(shape)
    x = keras.layers.Conv2D(4, 3, activation="relu")(inputs)
    if pool:
        x = keras.layers.GlobalAveragePooling2D()(x)
    return keras.Model(inputs, x)


def _contrastive_model(encoder=None):
    model = clzoo.models.ContrastiveModel(encoder or _encoder(),
                                          clzoo.models.ProjectionHead(hidden_dims=(8,), output_dim=4))
    model.compile(optimizer="sgd", loss=L.SupConLoss())
    return model


def _views(n=8, seed=0):
    return np.random.default_rng(seed).random((n, 2, 8, 8, 1)).astype("float32")


def _reusable(build):
    """`fresh()`: one model per module, its first weights put back before each case, so that a
    backend traces its steps once for all the cases (a trace costs seconds on a busy machine)."""
    keras.utils.set_random_seed(0)
    model = build()
    weights = model.get_weights()

    def fresh():
        model.set_weights(weights)
        return model

    return fresh


@pytest.fixture(scope="module")
def contrastive():
    def build():
        model = _contrastive_model()
        model.build((None, 2, 8, 8, 1))
        return model

    return _reusable(build)


@pytest.fixture(scope="module")
def classifier():
    def build():
        inputs = keras.Input((8, 8, 1))
        model = keras.Model(inputs, keras.layers.Dense(3)(_encoder()(inputs)))
        model.compile(optimizer="sgd",
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        return model

    return _reusable(build)


# 1. NaN images: the loss may stay finite (TensorFlow's fused conv + relu maps NaN to 0) while the
# gradients turn every weight NaN.

NON_FINITE_PIXELS = {"one_nan_pixel": (np.s_[3, 0, 2, 2, 0], np.nan),
                     "inf_pixel": (np.s_[0, 1, 5, 5, 0], np.inf),
                     "minus_inf_pixel": (np.s_[7, 0, 0, 0, 0], -np.inf),
                     "nan_image": (np.s_[4], np.nan), "nan_view": (np.s_[2, 1], np.nan)}


@pytest.mark.parametrize("bad", sorted(NON_FINITE_PIXELS))
def test_non_finite_images_stop_contrastive_fit_at_the_first_batch(contrastive, bad):
    x = _views()
    where, value = NON_FINITE_PIXELS[bad]
    x[where] = value
    guard = StopOnNaN()
    history = contrastive().fit(x, np.arange(8) % 4, batch_size=8, epochs=3, verbose=0,
                                shuffle=False, callbacks=[guard])
    assert guard.failed_at is not None and guard.failed_at[:2] == (0, 0)
    assert len(history.history["loss"]) == 1
    assert np.isnan(history.history["loss"][0])  # the model's loss says so itself, on every backend


@pytest.mark.parametrize("bad", ["one_nan_pixel", "minus_inf_pixel"])
def test_non_finite_images_give_a_nan_loss_in_evaluate(contrastive, bad):
    x = _views()
    where, value = NON_FINITE_PIXELS[bad]
    x[where] = value
    assert np.isnan(contrastive().evaluate(x, np.arange(8) % 4, batch_size=8, verbose=0))


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_non_finite_images_stop_a_plain_classifier_fit(classifier, value):
    x = np.random.default_rng(1).random((16, 8, 8, 1)).astype("float32")
    x[3, 2, 2, 0] = value
    guard = StopOnNaN()
    classifier().fit(x, np.arange(16) % 3, batch_size=8, epochs=3, verbose=0, shuffle=False,
                     callbacks=[guard])
    assert guard.failed_at is not None and guard.failed_at[:2] == (0, 0)


def _batch_norm_model():
    inputs = keras.Input((4,))
    norm = keras.layers.BatchNormalization()
    model = keras.Model(inputs, keras.layers.Dense(1)(norm(keras.layers.Dense(4)(inputs))))
    model.compile(optimizer="sgd", loss="mse")
    return model, norm


def test_a_non_finite_weight_stops_fit_while_the_loss_is_finite():
    # Training-mode batch norm does not read its moving mean, so the loss stays finite.
    model, norm = _batch_norm_model()
    norm.moving_mean.assign(np.full(4, np.nan, "float32"))
    guard = StopOnNaN()
    history = model.fit(np.ones((8, 4), "float32"), np.zeros(8, "float32"), batch_size=4, epochs=2,
                        verbose=0, callbacks=[guard])
    assert np.isfinite(history.history["loss"][0])
    assert guard.failed_at[:2] == (0, 0) and guard.reason == "weights"


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf, None])
def test_weights_finite_check(bad):
    model, norm = _batch_norm_model()
    if bad is not None:
        weight = np.ones(4, "float32")
        weight[2] = bad
        norm.gamma.assign(weight)
    assert weights_finite_check(model)() is (bad is None)


# 2. Negative or non-finite sample weights inside fit / evaluate (gradient ascent otherwise).

BAD_WEIGHTS = {"negative": [1, 1, -1, 1, 1, 1], "tiny_negative": [1, 1, 1, 1, 1, -1e-9],
               "nan": [1, np.nan, 1, 1, 1, 1], "inf": [np.inf, 1, 1, 1, 1, 1]}
WEIGHT_ERROR = r"`sample_weight` must be finite and non-negative"


def _plain(loss=L.SupConLoss):
    model = identity_model((2, 8))
    model.compile(optimizer="sgd", loss=loss())
    return model


@pytest.mark.parametrize("weight, method", [("negative", "fit"), ("nan", "fit"),
                                            ("tiny_negative", "evaluate"), ("inf", "evaluate")])
def test_bad_sample_weight_is_refused_by_a_plain_model(weight, method):
    w = np.array(BAD_WEIGHTS[weight], "float32")
    with pytest.raises(FIT_ERRORS, match=WEIGHT_ERROR):
        getattr(_plain(), method)(Z, Y, sample_weight=w, batch_size=6, verbose=0)


@pytest.mark.parametrize("loss", [L.InfoNCELoss, L.SpreadLoss])
def test_negative_sample_weight_is_refused_in_fit_for_other_losses(loss):
    with pytest.raises(FIT_ERRORS, match=WEIGHT_ERROR):
        _plain(loss).fit(Z, Y, sample_weight=-np.ones(6, "float32"), batch_size=6, verbose=0)


def test_negative_class_weight_is_refused_in_fit():
    with pytest.raises(FIT_ERRORS, match=WEIGHT_ERROR):
        _plain().fit(Z, Y, class_weight={0: 1.0, 1: -2.0, 2: 1.0}, batch_size=6, verbose=0)


def test_negative_sample_weight_from_a_dataset_is_refused():
    import tensorflow as tf

    weights = np.array(BAD_WEIGHTS["negative"], "float32")
    data = tf.data.Dataset.from_tensor_slices((Z, Y, weights)).batch(6)
    with pytest.raises(FIT_ERRORS, match=WEIGHT_ERROR):
        _plain().fit(data, verbose=0, shuffle=False)  # a dataset is shuffled by its maker


@pytest.mark.parametrize("method", ["fit", "evaluate"])
@pytest.mark.parametrize("weight", sorted(BAD_WEIGHTS))
def test_contrastive_model_refuses_bad_weights(contrastive, weight, method):
    w = np.ones(8, "float32")
    w[5] = {"negative": -0.5, "tiny_negative": -1e-9, "nan": np.nan, "inf": np.inf}[weight]
    with pytest.raises(FIT_ERRORS, match=WEIGHT_ERROR):
        getattr(contrastive(), method)(_views(), np.arange(8) % 4, sample_weight=w, batch_size=8,
                                       verbose=0)


def test_contrastive_model_stays_usable_after_a_refused_weight(contrastive):
    model, x, y = contrastive(), _views(), np.arange(8) % 4
    with pytest.raises(FIT_ERRORS, match=WEIGHT_ERROR):
        model.fit(x, y, sample_weight=-np.ones(8, "float32"), batch_size=8, verbose=0)
    history = model.fit(x, y, sample_weight=np.ones(8, "float32"), batch_size=8, verbose=0)
    assert np.isfinite(history.history["loss"][0])


def test_soft_target_loss_refuses_a_negative_weight_in_fit():
    model = identity_model((3,))
    model.compile(optimizer="sgd", loss=L.SoftTargetInfoNCELoss())
    targets = np.eye(3, dtype="float32")[[0, 1, 2, 0]]
    with pytest.raises(FIT_ERRORS, match=WEIGHT_ERROR):
        model.fit(RNG.normal(size=(4, 3)).astype("float32"), targets,
                  sample_weight=np.array([1, -1, 1, 1], "float32"), batch_size=4, verbose=0)


# 3. Embeddings at extreme scales; all-zero rows; all-zero or extreme label rows.

SCALES = [1e30, 1e-30, 1e20, 1e-20]


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("loss", EMBEDDING_LOSSES, ids=lambda c: c.__name__)
def test_scaled_embeddings_give_the_unit_scale_loss(loss, scale):
    want = to_numpy(loss()(Y, Z))
    np.testing.assert_allclose(to_numpy(loss()(Y, Z * np.float32(scale))), want, rtol=1e-5)


@pytest.mark.parametrize("loss", EMBEDDING_LOSSES, ids=lambda c: c.__name__)
def test_rows_at_mixed_scales_give_the_unit_scale_loss(loss):
    scales = (10.0 ** RNG.integers(-30, 31, size=(6, 2, 1))).astype("float32")
    np.testing.assert_allclose(to_numpy(loss()(Y, Z * scales)), to_numpy(loss()(Y, Z)), rtol=1e-5)


@pytest.mark.parametrize("scale", [1e30, 1e-30])
@pytest.mark.parametrize("loss", [L.SupConLoss, L.SINCERELoss, L.InfoNCELoss, L.DCLLoss])
def test_scaled_embeddings_give_the_scaled_gradient(loss, scale):
    value, grad = value_and_grad(lambda z: loss()(Y, z), Z)
    scaled_value, scaled_grad = value_and_grad(lambda z: loss()(Y, z), Z * np.float32(scale))
    np.testing.assert_allclose(scaled_value, value, rtol=1e-5)
    # d loss(c z) / d(c z) = (d loss / dz) / c
    np.testing.assert_allclose(scaled_grad * np.float32(scale), grad, atol=1e-5 * np.abs(grad).max())


@pytest.mark.parametrize("scale", [1e30, 1e-30])
def test_scaled_embeddings_compiled_and_chunked(scale):
    want = to_numpy(L.SupConLoss()(Y, Z))
    z = Z * np.float32(scale)
    got = compiled(lambda y, x: L.SupConLoss()(y, x))(Y, z)
    np.testing.assert_allclose(to_numpy(got), want, rtol=1e-5)
    np.testing.assert_allclose(to_numpy(L.SupConLoss(chunk_size=4)(Y, z)), want, rtol=1e-5)


@pytest.mark.parametrize("metric", [clzoo.metrics.Alignment, clzoo.metrics.Uniformity,
                                    clzoo.metrics.ContrastiveAccuracy])
@pytest.mark.parametrize("scale", [1e30, 1e-30])
def test_metrics_at_extreme_scales(metric, scale):
    values = []
    for z in (Z, Z * np.float32(scale)):
        m = metric()
        m.update_state(Y, z)
        values.append(float(to_numpy(m.result())))
    np.testing.assert_allclose(values[1], values[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("z", [Z[:, 0] * np.float32(1e30), Z[:, 0] * np.float32(1e-30),
                               Z[:, 0] * (10.0 ** np.arange(-30, 30, 10)[:, None]).astype("float32")])
def test_l2_normalize_layer_and_projection_head_give_unit_rows(z):
    want = Z[:, 0] / np.linalg.norm(Z[:, 0], axis=1, keepdims=True)
    np.testing.assert_allclose(to_numpy(clzoo.models.projection_head.L2Normalize()(z)), want,
                               rtol=1e-5, atol=1e-6)
    head = clzoo.models.ProjectionHead(hidden_dims=(), output_dim=8)
    head.build((None, 8))
    head.out.kernel.assign(np.eye(8, dtype="float32"))
    np.testing.assert_allclose(to_numpy(head(z)), want, rtol=1e-5, atol=1e-6)


def test_l2_normalize_in_float16():
    z = (Z[:, 0] * 1e3).astype("float16")  # squares overflow float16 (max 65504)
    got = to_numpy(l2_normalize(keras.ops.convert_to_tensor(z))).astype("float32")
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=2e-3)


@pytest.mark.parametrize("scale", [1e30, 1e-30])
def test_numpy_normalization_of_the_evaluation_at_extreme_scales(scale):
    x = (Z[:, 0] * scale).astype("float32")
    want = Z[:, 0] / np.linalg.norm(Z[:, 0], axis=1, keepdims=True)
    np.testing.assert_allclose(eval_checks.unit_rows(x), want, rtol=1e-5)
    np.testing.assert_allclose(eval_checks.features(x, normalize=True, dtype=np.float32), want,
                               rtol=1e-5)
    inputs = keras.Input((2, 2, 3))
    encoder = keras.Model(inputs, keras.layers.Rescaling(scale)(keras.layers.Flatten()(inputs)))
    images = RNG.integers(1, 255, (4, 2, 2, 3), dtype=np.uint8)
    got = embed(encoder, images, normalize=True, verbose=False)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, rtol=1e-5)


@pytest.mark.parametrize("loss", [L.SupConLoss, L.InfoNCELoss, L.SINCERELoss])
def test_an_all_zero_embedding_row_is_the_zero_vector_with_zero_gradient(loss):
    z = Z.copy()
    z[1, 0] = 0.0
    value, grad = value_and_grad(lambda x: loss()(Y, x), z)
    assert np.isfinite(value) and np.all(np.isfinite(grad))
    assert np.all(grad[1, 0] == 0)  # documented in `l2_normalize`: no 1e12 gradient from an eps
    assert np.abs(grad).max() < 10


MULTI_HOT = np.array([[1, 0, 1], [1, 0, 1], [0, 1, 0], [0, 1, 1], [1, 1, 0], [0, 0, 1]], "float32")


@pytest.mark.parametrize("row", [0, 3, 5])
@pytest.mark.parametrize("similarity", ["cosine", "jaccard"])
@pytest.mark.parametrize("loss", [L.SupConLoss, L.SINCERELoss])
def test_an_all_zero_label_row_is_refused(loss, similarity, row):
    y = MULTI_HOT.copy()
    y[row] = 0
    with pytest.raises(ValueError, match=rf"`y_true` label rows .*not all zero.*row {row} = "):
        loss(label_similarity=similarity)(y, Z)


@pytest.mark.large
@pytest.mark.parametrize("similarity", ["cosine", "jaccard"])
def test_an_all_zero_label_row_is_refused_compiled(similarity):
    y = MULTI_HOT.copy()
    y[4] = 0
    fn = compiled(lambda t, z: L.SupConLoss(label_similarity=similarity)(t, z))
    with pytest.raises((ValueError, runtime_error()), match=r"label rows .*not all zero"):
        to_numpy(fn(y, Z))


@pytest.mark.parametrize("scale", [1e30, 1e-30, 1e20])
@pytest.mark.parametrize("similarity", ["cosine", "jaccard"])
def test_scaled_label_rows_give_the_unit_scale_loss(similarity, scale):
    loss = L.SupConLoss(label_similarity=similarity)
    want = to_numpy(loss(MULTI_HOT, Z))
    np.testing.assert_allclose(to_numpy(loss(MULTI_HOT * np.float32(scale), Z)), want, rtol=1e-5)


def test_label_similarities_of_rows_at_mixed_scales():
    rows = MULTI_HOT * (10.0 ** np.arange(-25, 35, 10)[:, None]).astype("float32")
    rows[2] = [0.3, 0.9, 0]
    exact = rows.astype("float64")
    dot = exact @ exact.T
    sq = np.sum(exact**2, axis=1)
    jaccard = dot / (sq[:, None] + sq[None, :] - dot)
    cosine = dot / np.sqrt(sq[:, None] * sq[None, :])
    for kind, want in (("cosine", cosine), ("jaccard", jaccard)):
        prepared = LS.standardize_label_rows(rows, kind)
        got = to_numpy(LS.pair_similarity(prepared, prepared, kind))
        want = np.where(want > 1 - 1e-6, 1.0, want)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7, err_msg=kind)


# 4. Errors that blamed something else: embedding rank, labels in fit, encoder vs data in eval.

RANK_ENCODERS = {"feature_map": lambda: _encoder(pool=False),
                 "sequence": lambda: keras.Sequential([keras.Input((8, 8, 1)),
                                                       keras.layers.Reshape((64, 1))])}


@pytest.mark.parametrize("how", ["call", "fit", "evaluate"])
@pytest.mark.parametrize("encoder", sorted(RANK_ENCODERS))
def test_encoder_without_pooling_is_blamed_not_the_labels(encoder, how):
    def run():
        model = _contrastive_model(RANK_ENCODERS[encoder]())
        x, y = _views(4), np.arange(4) % 2
        if how == "call":
            return model(x)
        return getattr(model, how)(x, y, batch_size=4, verbose=0)

    with pytest.raises(ValueError, match=r"embeddings `y_pred` must have shape \(batch, views, dim\)"
                                         r".*encoder output shape.*y_pred.shape=\((4|None), 2, "
                                         r".*pooling") as err:
        run()
    assert "label" not in str(err.value)


@pytest.mark.parametrize("loss", [L.SupConLoss, L.InfoNCELoss, L.SINCERELoss])
def test_rank_4_y_pred_is_reported_before_the_label_count(loss):
    with pytest.raises(ValueError, match=r"`y_pred` must be embeddings.*y_pred.shape=\(4, 2, 3, 4\)"):
        loss()(np.arange(7), np.ones((4, 2, 3, 4), "float32"))


def _bad_labels():
    import tensorflow as tf

    return {"strings": np.array(["cat", "cat", "dog", "dog"]), "list_of_names": ["a", "a", "b", "b"],
            "bytes": np.array([b"a", b"a", b"b", b"b"]), "objects": np.array([0, "a", 1, 2], object),
            "ragged_list": [[0], [0, 1], [1], [2]],
            "ragged_tensor": tf.ragged.constant([[0], [0, 1], [1], [2]]),
            "string_tensor": tf.constant(["a", "a", "b", "b"]), "complex": np.ones(4, "complex64")}


@pytest.mark.parametrize("method", ["fit", "evaluate"])
@pytest.mark.parametrize("labels", sorted(_bad_labels()))
def test_string_or_ragged_labels_in_fit_are_one_clear_error(labels, method):
    with pytest.raises(ValueError, match=rf"^`y` \(the labels given to {method}\) must be numeric class "
                                         r"ids of shape \(batch,\).*Received: [^\n]+; [^\n]+$"):
        getattr(_contrastive_model(), method)(_views(4), _bad_labels()[labels], batch_size=4,
                                              verbose=0)


@pytest.mark.parametrize("labels", [np.array(["a", "a", "b", "b"]), np.array([[0.0], [1.0]] * 2)])
def test_labels_in_a_dataset_are_checked_by_spec(labels):
    import tensorflow as tf

    data = tf.data.Dataset.from_tensor_slices((_views(4), labels)).batch(4)
    if labels.dtype.kind == "U":
        with pytest.raises(ValueError, match=r"`y` \(the labels given to fit\).*string tensor"):
            _contrastive_model().fit(data, verbose=0)
    else:  # numeric labels pass the check and train
        assert np.isfinite(_contrastive_model().fit(data, verbose=0).history["loss"][0])


@pytest.mark.parametrize("encoder_shape, size, given", [((6, 6, 1), 6, r"\(6, 6, 3\)"),
                                                        ((8, 10, 3), 8, r"\(8, 8, 3\)"),
                                                        ((8, 8, 1), None, r"\(8, 8, 3\)")])
def test_encoder_that_does_not_fit_the_images_names_both_shapes(encoder_shape, size, given):
    images = RNG.integers(0, 255, (4, 8, 8, 3), dtype=np.uint8)
    expected = str(encoder_shape).replace("(", r"\(").replace(")", r"\)")
    with pytest.raises(ValueError, match=rf"encoder takes images of shape {expected}.*data's images "
                                         rf"have shape \(8, 8, 3\).*{given}"):
        embed(_encoder(shape=encoder_shape), images, size=size, verbose=False)


def test_evaluate_with_an_encoder_for_other_images():
    images = RNG.integers(0, 255, (20, 32, 32, 3), dtype=np.uint8)
    train, test = clzoo.eval.train_test_split(images, np.arange(20) % 2, test_size=0.5)
    with pytest.raises(ValueError, match=r"\(28, 28, 1\).*\(32, 32, 3\)"):
        clzoo.eval.evaluate(_encoder(shape=(28, 28, 1)), (train, test), "ncc", verbose=False)


def test_clzoo_eval_with_an_encoder_for_other_images(tmp_path, capsys):
    from clzoo import cli
    from tests.train.tiny_data import write_tiny_digits

    path = tmp_path / "encoder.keras"
    _encoder(shape=(28, 28, 1)).save(path)
    data = write_tiny_digits(tmp_path / "data", train=12, test=8)
    assert cli.main(["eval", str(path), "--data", data, "--metrics", "ncc",
                     "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "(28, 28, 1)" in errors[0] and "(8, 8, 3)" in errors[0]
    assert "Traceback" not in err


# 5. `from_arrays`: nothing coerced silently; the message names what came and what to do.

FROM_ARRAYS_CASES = {
    "whole_floats": (lambda: RNG.integers(0, 256, (4, 28, 28)).astype("float32"),
                     r"float32 array of shape \(4, 28, 28\); whole numbers in \[0.0, 255.0\]: "
                     r"cast them with images.astype\(np.uint8\)"),
    "flat_784": (lambda: np.zeros((4, 784), np.uint8), r"\(4, 784\); flat rows of 784 pixels: "
                                                        r"reshape to \(N, 28, 28\)"),
    "flat_float": (lambda: RNG.random((4, 784)).astype("float32"),
                   r"float32 array of shape \(4, 784\); floats in \[0, 1\].*reshape to \(N, 28, 28\)"),
    "flat_rgb": (lambda: np.zeros((4, 3072), np.uint8), r"reshape to \(N, 32, 32, 3\)"),
    "flat_other": (lambda: np.zeros((4, 10), np.uint8), r"\(4, 10\); one row per image"),
    "unit_floats": (lambda: RNG.random((4, 8, 8, 3)).astype("float32"),
                    r"floats in \[0, 1\]: \(images \* 255\).round\(\).astype\(np.uint8\)"),
    "channels_first": (lambda: np.zeros((4, 3, 8, 8), np.uint8), r"channels first: np.transpose"),
    "rgba": (lambda: np.zeros((4, 8, 8, 4), np.uint8), r"RGBA"),
    "two_channels": (lambda: np.zeros((4, 8, 8, 2), np.uint8), r"2 channels: give 1 \(grey\) or 3"),
    "int64": (lambda: np.full((4, 8, 8, 3), 7, np.int64), r"int64 .*images.astype\(np.uint8\)"),
    "out_of_range": (lambda: np.full((4, 8, 8), 300.0), r"values in \[300.0, 300.0\]: rescale"),
    "negative": (lambda: np.full((4, 8, 8), -1, np.int16), r"int16 .*values in \[-1, -1\]"),
    "nan": (lambda: np.full((4, 8, 8), np.nan, "float32"), r"holds NaN or inf"),
    "bool": (lambda: np.zeros((4, 8, 8), bool), r"bool .*astype\(np.uint8\) \* 255"),
    "strings": (lambda: np.full((4, 8, 8), "x"), r"is not pixel values"),
    "views": (lambda: np.zeros((4, 2, 8, 8, 3), np.uint8), r"rank 5"),
    "vector": (lambda: np.zeros(4, np.uint8), r"rank 1"),
    "ragged": (lambda: [np.zeros((8, 8), np.uint8), np.zeros((9, 9), np.uint8)] * 2,
               r"images of different shapes; resize"),
}


@pytest.mark.parametrize("case", sorted(FROM_ARRAYS_CASES))
def test_from_arrays_refuses_images_with_the_shape_and_a_way_out(case):
    images, pattern = FROM_ARRAYS_CASES[case]
    with pytest.raises(ValueError, match=r"^`images` must be uint8 of shape \(N, H, W\) or "
                                         rf"\(N, H, W, C\).*Received: .*{pattern}"):
        clzoo.data.from_arrays(images(), np.arange(4) % 2)


@pytest.mark.parametrize("labels, pattern", [
    (np.array(["a", "b", "a", "b"]), r"<U1 array of shape \(4,\); map class names"),
    (np.array([0.0, 1, 0, 1]), r"float64 array of shape \(4,\); cast whole-number"),
    (np.zeros((4, 2), np.int64), r"int64 array of shape \(4, 2\)"),
    ([[0], [0, 1], [1], [1]], r"a ragged list"),
])
def test_from_arrays_refuses_labels_naming_them(labels, pattern):
    with pytest.raises(ValueError, match=rf"^`labels` must be integer class ids.*Received: {pattern}"):
        clzoo.data.from_arrays(np.zeros((4, 8, 8), np.uint8), labels)


def test_from_arrays_accepts_grey_images_and_keras_datasets_labels():
    split = clzoo.data.from_arrays(np.zeros((4, 8, 8), np.uint8), np.array([[0], [1], [0], [1]]))
    assert split.images.shape == (4, 8, 8, 3) and split.labels.tolist() == [0, 1, 0, 1]


def test_evaluate_passes_flat_arrays_to_from_arrays():
    flat = np.zeros((20, 64), np.uint8)
    with pytest.raises(ValueError, match=r"\(20, 64\); flat rows of 64 pixels: reshape to \(N, 8, 8\)"):
        clzoo.eval.evaluate(_encoder(shape=(8, 8, 3)), (flat, np.arange(20) % 2),
                            train=(flat, np.arange(20) % 2), metrics="ncc", verbose=False)


def test_backend_name():
    assert BACKEND == keras.backend.backend()
