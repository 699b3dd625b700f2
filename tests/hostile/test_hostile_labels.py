"""Hostile labels for the supervised embedding losses: refused with a clear `ValueError`, or exact.

Runs in every backend lane (`pytestmark`; see `tests/conftest.py`).
"""

import warnings

import numpy as np
import pytest

import clzoo
from tests.hostile._util import BACKEND, compiled, embeddings, identity_model, runtime_error, to_numpy
from tests.losses import reference

pytestmark = pytest.mark.backends("tensorflow", "jax", "torch")  # every lane (tests/conftest.py)

L = clzoo.losses
SUPERVISED = {"SupConLoss": L.SupConLoss, "SINCERELoss": L.SINCERELoss,
              "SupInfoNCELoss": L.SupInfoNCELoss, "SpreadLoss": L.SpreadLoss, "NSCLLoss": L.NSCLLoss}
Z = embeddings(4, 2, 8)

# Rank-2 layouts that are not exactly one-hot: never argmaxed.
NOT_ONE_HOT = {
    "batch_by_views_ids": np.array([[0, 0], [0, 0], [1, 1], [1, 1]]),
    "batch_by_views_binary": np.array([[0, 0], [1, 1], [0, 0], [1, 1]]),
    "multi_hot": np.array([[1, 1, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]]),
    "all_zero_row": np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]]),
    "value_two": np.array([[2, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]]),
    "negative_entry": np.array([[1, -1, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]]),
    "soft_mixup": np.array([[0.5, 0.5], [1, 0], [0, 1], [0.3, 0.7]], "float32"),
    "label_smoothing": np.array([[0.9, 0.05, 0.05]] * 2 + [[0.05, 0.9, 0.05]] * 2, "float32"),
}


@pytest.mark.parametrize("layout", sorted(NOT_ONE_HOT))
@pytest.mark.parametrize("loss", sorted(SUPERVISED))
def test_rank2_labels_that_are_not_one_hot_are_refused(loss, layout):
    with pytest.raises(ValueError, match=r"`y_true` must be .*one-hot.*never argmaxed.*y_true.shape"):
        SUPERVISED[loss]()(NOT_ONE_HOT[layout], Z)


@pytest.mark.parametrize("loss", sorted(SUPERVISED))
def test_exact_one_hot_equals_integer_ids(loss):
    ids = np.array([0, 0, 2, 1])
    for one_hot in (np.eye(3, dtype="int64")[ids], np.eye(3, dtype="float32")[ids],
                    np.eye(3, dtype=bool)[ids]):
        np.testing.assert_allclose(to_numpy(SUPERVISED[loss]()(one_hot, Z)),
                                   to_numpy(SUPERVISED[loss]()(ids, Z)), rtol=1e-6)


@pytest.mark.parametrize("labels", [[0.5, 1, 2, 3], [0, 1, 2, np.nan], [0, 1, np.inf, 3],
                                    [0, 1, 2, 3 + 1e-6], [-0.5, 0, 1, 1], [1e300, 0, 1, 1]])
def test_non_integer_float_labels_are_refused(labels):
    with pytest.raises(ValueError, match=r"Float `y_true` must hold whole-number class ids.*y_true\["):
        L.SupConLoss()(np.array(labels, "float64"), Z)


def _reference(labels):
    dense = np.unique(np.asarray(labels), return_inverse=True)[1].reshape(-1)
    return reference.supcon(dense, Z.astype("float64"), 0.1)


BIG_IDS = {
    "2^24": [2**24, 2**24, 2**24 + 1, 2**24 + 1],
    "plus_minus_3e9": [3_000_000_000, 3_000_000_000, -3_000_000_000, -3_000_000_000],
    "0_and_2^32": [0, 0, 2**32, 2**32],
    "int32_edges": [2**31 - 1, 2**31 - 1, -(2**31), -(2**31)],
    "2^53": [2**53, 2**53, 2**53 + 1, 2**53 + 1],
    "int64_edges": [2**63 - 1, 2**63 - 1, -(2**63), -(2**63)],
}


@pytest.mark.parametrize("ids", sorted(BIG_IDS))
@pytest.mark.parametrize("form", ["int64", "column"])
def test_big_integer_ids_stay_distinct(ids, form):
    labels = np.array(BIG_IDS[ids], "int64")
    labels = labels[:, None] if form == "column" else labels
    got = to_numpy(L.SupConLoss(reduction="none")(labels, Z))
    np.testing.assert_allclose(got, _reference(labels), rtol=1e-5)
    merged = reference.supcon(np.zeros(4, int), Z.astype("float64"), 0.1)
    assert not np.allclose(got, merged)  # the classes were not merged


def test_whole_float64_ids_keep_their_classes():
    labels = np.array([2**24, 2**24, 2**24 + 1, 2**24 + 1], "float64")
    np.testing.assert_allclose(to_numpy(L.sup_con_loss(labels, Z)), _reference(labels), rtol=1e-5)


def _x64():
    import jax

    return jax.config.jax_enable_x64


# The caller's float dtype may already have merged neighbouring ids: 2^24 + 1 is 2^24 in float32.
INEXACT_FLOAT_IDS = {"float32": [2.0**24, 2**24, 1, 1], "float32_negative": [-(2.0**24), 0, 1, 1],
                     "float16": [2048.0, 2048, 1, 1], "float32_3e9": [3e9, 3e9, 1, 1]}


@pytest.mark.parametrize("case", sorted(INEXACT_FLOAT_IDS))
def test_float_ids_the_dtype_cannot_hold_exactly_are_refused(case):
    labels = np.array(INEXACT_FLOAT_IDS[case], case.split("_")[0])
    with pytest.raises(ValueError, match=r"\|id\| < 2\^(24|11): float(32|16) cannot tell larger ids apart"):
        L.SupConLoss()(labels, Z)
    fn = compiled(lambda y, z: L.SupConLoss()(y, z))
    with pytest.raises(runtime_error(), match=r"cannot tell larger ids apart"):
        to_numpy(fn(labels, Z))


def test_float32_ids_below_2_24_are_exact():
    labels = np.array([2**24 - 1, 2**24 - 1, 2**24 - 2, 2**24 - 2], "float32")
    np.testing.assert_allclose(to_numpy(L.SupConLoss(reduction="none")(labels, Z)), _reference(labels),
                               rtol=1e-5)


@pytest.mark.parametrize("ids", ["2^24", "plus_minus_3e9"])
def test_big_ids_stay_distinct_under_compile_and_evaluate(ids):
    labels = np.array(BIG_IDS[ids], "int64")
    model = identity_model((2, 8))
    model.compile(loss=L.SupConLoss())
    got = model.evaluate(Z, labels, batch_size=4, verbose=0)
    np.testing.assert_allclose(got, _reference(labels).mean(), rtol=1e-4)


@pytest.mark.parametrize("labels", [np.array(["cat", "cat", "dog", "dog"]), ["a", "a", "b", "b"],
                                    np.array([b"a", b"a", b"b", b"b"]),
                                    np.array([0, 0, "x", 1], dtype=object),
                                    np.array([1 + 1j, 1, 2, 2])])
def test_string_object_and_complex_labels_are_refused(labels):
    with pytest.raises(ValueError, match=r"`y_true` must be numeric.*map class names"):
        L.SupConLoss()(labels, Z)


def test_string_tensor_labels_are_refused():
    if BACKEND != "tensorflow":
        pytest.skip("only TensorFlow has string tensors")
    import tensorflow as tf

    with pytest.raises(ValueError, match=r"`y_true` must be real numbers.*string"):
        L.SupConLoss()(tf.constant(["a", "a", "b", "b"]), Z)


@pytest.mark.parametrize("labels", [np.array(3), np.zeros((4, 1, 1), "int64"), np.zeros((4, 2, 2))])
def test_label_rank_other_than_1_or_2_is_refused(labels):
    with pytest.raises(ValueError, match=r"`y_true` must be integer class ids.*y_true.shape"):
        L.SupConLoss()(labels, Z)


@pytest.mark.parametrize("count", [0, 3, 5, 8])
def test_label_count_mismatch_is_refused(count):
    with pytest.raises(ValueError, match=r"`y_true` must hold one label per sample.*\(4 samples\)"):
        L.SupConLoss()(np.zeros(count, "int64"), Z)


@pytest.mark.parametrize("loss", sorted(SUPERVISED))
def test_label_count_mismatch_is_caught_compiled_with_unknown_batch(loss):
    fn = compiled(lambda y, z: SUPERVISED[loss]()(y, z))
    # Static shapes under jax.jit: refused while tracing; a None batch on TF: when the step runs.
    expected = ValueError if BACKEND != "tensorflow" else runtime_error()
    with pytest.raises(expected, match=r"y_true` must hold one label per sample"):
        to_numpy(fn(np.zeros(3, "int64"), Z))


@pytest.mark.parametrize("layout", ["batch_by_views_ids", "soft_mixup", "multi_hot"])
def test_not_one_hot_is_caught_inside_compiled_steps(layout):
    fn = compiled(lambda y, z: L.SupConLoss()(y, z))
    with pytest.raises(runtime_error(), match=r"must be integer class ids .*never argmaxed"):
        to_numpy(fn(NOT_ONE_HOT[layout], Z))


def test_fractional_float_labels_are_caught_inside_compiled_steps():
    fn = compiled(lambda y, z: L.SupConLoss()(y, z))
    with pytest.raises(runtime_error(), match=r"whole-number class ids"):
        to_numpy(fn(np.array([0.5, 1, 2, 3], "float32"), Z))


def test_not_one_hot_labels_stop_fit():
    model = identity_model((2, 8))
    model.compile(optimizer="sgd", loss=L.SupConLoss())
    with pytest.raises(runtime_error(), match=r"never argmaxed"):
        model.fit(Z, NOT_ONE_HOT["batch_by_views_ids"], batch_size=4, epochs=1, verbose=0)


def test_integer_labels_add_no_check_to_a_compiled_step():
    if BACKEND != "tensorflow":
        pytest.skip("graph inspection on TensorFlow")
    import tensorflow as tf

    fn = tf.function(lambda y, z: L.SupConLoss()(y, z))
    ops = fn.get_concrete_function(tf.TensorSpec([4], tf.int64), tf.TensorSpec([4, 2, 8])).graph
    assert not [op for op in ops.get_operations() if op.type in ("Assert", "PyFunc")]


def _tf_xla(fn):
    import tensorflow as tf

    return tf.function(fn, jit_compile=True)


@pytest.mark.large
@pytest.mark.parametrize("loss", sorted(SUPERVISED))
@pytest.mark.parametrize("labels", [NOT_ONE_HOT["multi_hot"], NOT_ONE_HOT["soft_mixup"],
                                    np.array([0.5, 1, 2, 3], "float32"),
                                    np.array([2.0**24, 2**24, 1, 1], "float32")],
                         ids=["multi_hot", "soft_mixup", "fraction", "float32_2^24"])
def test_xla_drops_asserts_so_a_refused_label_gives_nan_not_a_number(loss, labels):
    if BACKEND != "tensorflow":
        pytest.skip("jit_compile=True is TensorFlow's XLA; jax.jit raises (tests above)")
    fn = _tf_xla(lambda y, z: SUPERVISED[loss]()(y, z))
    assert np.isnan(to_numpy(fn(labels, Z)))
    ids = np.array([0, 0, 1, 1])
    good = to_numpy(fn(ids.astype(labels.dtype) if labels.ndim == 1 else
                       np.eye(labels.shape[1], dtype=labels.dtype)[ids], Z))
    np.testing.assert_allclose(good, to_numpy(SUPERVISED[loss]()(np.array([0, 0, 1, 1]), Z)), rtol=1e-5)


def test_xla_fit_with_refused_labels_is_refused_or_reports_a_nan_loss():
    """Under XLA the label check cannot raise inside the compiled step; either the check outside
    it refuses the labels (issue 23: values checked in every mode) or the loss is NaN, never a number."""
    if BACKEND != "tensorflow":
        pytest.skip("jit_compile=True is TensorFlow's XLA")
    # A clzoo run earlier in this worker turned on TF's op determinism, under which Keras quietly
    # drops jit_compile; turn it off here (the public API can only turn it on) so XLA really runs.
    from tensorflow.python.framework import config as tf_config

    determinism = tf_config.is_op_determinism_enabled()
    tf_config.disable_op_determinism()
    try:
        model = identity_model((2, 8))
        model.compile(optimizer="sgd", loss=L.SupConLoss(), jit_compile=True)
        with warnings.catch_warnings():
            warnings.filterwarnings("error", message="Model doesn't support `jit_compile=True`")
            history = model.fit(Z, NOT_ONE_HOT["multi_hot"], batch_size=4, epochs=1, verbose=0)
    except UserWarning:
        raise
    except Exception as error:  # noqa: BLE001  (TF wraps the failed check in its own error type)
        assert "one-hot" in str(error)
        return
    finally:
        if determinism:
            tf_config.enable_op_determinism()
    assert np.isnan(history.history["loss"][0])


def _contrastive_model():
    import keras

    encoder = keras.Sequential([keras.layers.Flatten(), keras.layers.Dense(8)])
    head = clzoo.models.ProjectionHead(hidden_dims=(), output_dim=8)
    model = clzoo.models.ContrastiveModel(encoder, head)
    model.compile(optimizer="sgd", loss=L.SupConLoss())
    return model


def test_contrastive_model_keeps_int64_ids_apart_or_refuses_them():
    """0 and 2^32 are one id after JAX (without x64) wraps int64 to int32 on entry to the step."""
    model = _contrastive_model()
    x = np.random.default_rng(0).normal(size=(4, 2, 2, 2, 1)).astype("float32")
    wide = np.array([0, 0, 2**32, 2**32], "int64")
    dense = model.evaluate(x, np.array([0, 0, 1, 1]), batch_size=4, verbose=0)
    if BACKEND == "jax" and not _x64():
        for run in (lambda: model.evaluate(x, wide, batch_size=4, verbose=0),
                    lambda: model.fit(x, wide, batch_size=4, epochs=1, verbose=0)):
            with pytest.raises(ValueError, match=r"class id 4294967296, outside int32.*wrap"):
                run()
        # the refused step left the model whole: same loss as before
        np.testing.assert_allclose(model.evaluate(x, np.array([0, 0, 1, 1]), batch_size=4, verbose=0),
                                   dense, rtol=1e-6)
    else:
        np.testing.assert_allclose(model.evaluate(x, wide, batch_size=4, verbose=0), dense, rtol=1e-5)


def test_contrastive_model_fit_reports_a_refused_label_as_the_loss_message(caplog):
    model = _contrastive_model()
    x = np.random.default_rng(0).normal(size=(4, 2, 2, 2, 1)).astype("float32")
    with pytest.raises(ValueError, match=r"^Float `y_true` must hold whole-number class ids") as error:
        model.fit(x, np.array([0.5, 1, 2, 3], "float32"), batch_size=4, epochs=1, verbose=0)
    assert "Graph execution" not in str(error.value)  # TensorFlow: not the graph's assert traceback
    if BACKEND == "jax":  # not JAX's wrapped host-callback traceback, and no logged one either
        assert "Traceback" not in str(error.value)
        assert "callback failed" not in caplog.text


def test_a_jax_loss_check_is_a_value_the_loss_depends_on():
    """On a GPU a failed `jax.debug.callback` surfaces only at JAX's next effects barrier (after
    `fit` trained on the bad batch; seen on an H100); inside a loss call the check must be a
    callback whose result poisons the loss, so the error comes with the loss value."""
    if BACKEND != "jax":
        pytest.skip("JAX traces only")
    import jax

    labels = np.array([0.0, 1.0, 2.0, 3.0], "float32")  # float ids: a value check
    text = str(jax.make_jaxpr(lambda y, z: L.SupConLoss()(y, z))(labels, Z))
    assert "pure_callback" in text and "debug_callback" not in text
