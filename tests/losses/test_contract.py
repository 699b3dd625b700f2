"""The checklist every registered loss passes (keras-rs style): registering a loss is enough to get it.

Each test runs once per entry of `clzoo.losses.LOSSES`. Embedding losses
(`clzoo.losses.base.ContrastiveLoss` subclasses) get integer labels and
two-view embeddings; any other loss needs its example inputs in `EXAMPLES`
(the test says so when they are missing). The reference values of each loss
live in `test_losses.py`, `test_more_losses.py` and `test_multi_label.py`.
"""

import inspect

import keras
import numpy as np
import pytest
from keras import ops

import clzoo
from clzoo.losses.base import ContrastiveLoss
from tests.losses.autodiff import value_and_grad

NAMES = clzoo.losses.LOSSES.list()
BATCH = 6


def _soft_targets(rng, batch, classes=4):
    hard = np.eye(classes)[rng.integers(0, classes, batch)]
    lam = rng.uniform(0.3, 1.0, size=(batch, 1))
    return (0.9 * (lam * hard + (1 - lam) * hard[rng.permutation(batch)]) + 0.1 / classes).astype(
        "float32")


# Example `(y_true, y_pred)` of the losses that do not take embeddings, by class name.
EXAMPLES = {
    "SoftTargetInfoNCELoss": lambda rng, batch: (_soft_targets(rng, batch),
                                                 rng.normal(size=(batch, 4)).astype("float32")),
}


def _cls(name):
    return clzoo.losses.LOSSES.get(name)


def _is_embedding_loss(cls):
    return issubclass(cls, ContrastiveLoss)


def _example(cls, batch=BATCH, seed=0):
    """`(y_true, y_pred)` this loss accepts: labels `[0, 0, 1, 1, 2, 2, ...]` and `(batch, 2, 16)`."""
    rng = np.random.default_rng(seed)
    if _is_embedding_loss(cls):
        return np.arange(batch) // 2, rng.normal(size=(batch, 2, 16)).astype("float32")
    if cls.__name__ not in EXAMPLES:
        pytest.fail(f"{cls.__name__} is registered but is no embedding loss: add its example "
                    "inputs to EXAMPLES in tests/losses/test_contract.py")
    return EXAMPLES[cls.__name__](rng, batch)


def _np(x):
    return np.asarray(ops.convert_to_numpy(x))


def _init_parameters(cls):
    return {name: p for name, p in inspect.signature(cls).parameters.items()
            if p.kind is not p.VAR_KEYWORD}


@pytest.mark.parametrize("name", NAMES)
class TestLossContract:
    # ---- registration, arguments and config ------------------------------------------

    def test_registered_with_keras_and_described(self, name):
        cls = _cls(name)
        assert keras.saving.get_registered_object(f"clzoo>{name}") is cls
        entry = clzoo.losses.LOSSES.entry(name)
        assert entry.description and entry.metadata.get("paper")
        assert clzoo.losses.ALL_OBJECTS_DICT[name] is cls
        assert type(clzoo.losses.get(name)) is cls

    def test_every_argument_is_an_attribute_and_a_config_key(self, name):
        cls = _cls(name)
        loss = cls()
        config = loss.get_config()
        # Keras leaves `dtype` out of the config while it is None.
        assert set(config) - {"dtype"} == set(_init_parameters(cls)) - {"dtype"}
        for key, parameter in _init_parameters(cls).items():
            if key not in ("reduction", "name", "dtype"):
                assert getattr(loss, key) == config[key] == parameter.default, key

    def test_call_is_the_function_twin(self, name):
        cls = _cls(name)
        loss = cls(temperature=0.3)
        y_true, y_pred = _example(cls)
        config = loss.get_config()
        taken = inspect.signature(cls.function).parameters
        kwargs = {key: value for key, value in config.items() if key in taken}
        labels = y_true if getattr(cls, "uses_labels", True) else None
        np.testing.assert_allclose(_np(cls.function(labels, y_pred, **kwargs)),
                                   _np(loss.call(y_true, y_pred)), rtol=1e-6)

    def test_config_round_trip(self, name):
        cls = _cls(name)
        loss = cls(temperature=0.3)
        config = loss.get_config()
        assert cls.from_config(config).get_config() == config
        restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(loss))
        assert type(restored) is cls and restored.get_config() == config
        y_true, y_pred = _example(cls)
        np.testing.assert_allclose(_np(restored(y_true, y_pred)), _np(loss(y_true, y_pred)),
                                   rtol=1e-6)

    # ---- values, shapes, gradients ---------------------------------------------------

    def test_per_sample_values_and_reductions(self, name):
        cls = _cls(name)
        y_true, y_pred = _example(cls)
        per_sample = _np(cls().call(y_true, y_pred))
        assert per_sample.shape == (BATCH,) and per_sample.dtype == np.float32
        assert np.all(np.isfinite(per_sample))
        assert _np(cls()(y_true, y_pred)).shape == ()
        weights = np.array([1.0, 0.0, 2.0, 0.5, 1.0, 3.0], dtype="float32")
        got = float(_np(cls()(y_true, y_pred, sample_weight=weights)))
        np.testing.assert_allclose(got, np.sum(per_sample * weights) / BATCH, rtol=1e-5)
        np.testing.assert_allclose(float(_np(cls(reduction="sum")(y_true, y_pred))),
                                   per_sample.sum(), rtol=1e-5)
        assert _np(cls(reduction="none")(y_true, y_pred)).shape == (BATCH,)

    def test_gradient_finite_at_low_temperature(self, name):
        cls = _cls(name)
        y_true, y_pred = _example(cls)
        value, grad = value_and_grad(lambda x: cls(temperature=0.01)(y_true, x), y_pred)
        assert np.isfinite(value) and np.all(np.isfinite(grad)) and np.any(grad != 0)

    @pytest.mark.large
    def test_fit_and_save(self, name, tmp_path):
        cls = _cls(name)
        keras.utils.set_random_seed(0)
        y_true, y_pred = _example(cls, batch=16, seed=1)
        inputs = keras.Input(y_pred.shape[1:])
        model = keras.Model(inputs, keras.layers.Dense(y_pred.shape[-1])(inputs))
        model.compile(optimizer=keras.optimizers.SGD(0.1), loss=cls(temperature=0.2))
        history = model.fit(y_pred, y_true, batch_size=8, epochs=1, verbose=0)
        assert np.all(np.isfinite(history.history["loss"]))
        model.save(tmp_path / "model.keras")
        restored = keras.saving.load_model(tmp_path / "model.keras")
        assert type(restored.loss) is cls
        np.testing.assert_allclose(restored.evaluate(y_pred, y_true, verbose=0),
                                   model.evaluate(y_pred, y_true, verbose=0), rtol=1e-5)

    # ---- refused arguments and inputs ------------------------------------------------

    @pytest.mark.parametrize("temperature", [0, -0.1, float("nan"), float("inf"), "0.1", None])
    def test_bad_temperature(self, name, temperature):
        cls = _cls(name)
        with pytest.raises(ValueError, match=r"temperature.*Received: temperature="):
            cls(temperature=temperature)
        y_true, y_pred = _example(cls, batch=2)
        with pytest.raises(ValueError, match="temperature"):
            cls.function(y_true, y_pred, temperature=temperature)

    def test_unknown_argument_is_refused(self, name):
        with pytest.raises(TypeError):
            _cls(name)(no_such_argument=1)

    @pytest.mark.parametrize("shape", [(4,), (4, 2, 3, 5)])
    def test_bad_rank(self, name, shape):
        cls = _cls(name)
        match = r"y_pred.*Received: y_pred.shape=" if _is_embedding_loss(cls) else "y_pred"
        with pytest.raises(ValueError, match=match):
            cls()(np.zeros(4), np.ones(shape, "float32"))

    def test_label_count_mismatch(self, name):
        cls = _cls(name)
        if not (_is_embedding_loss(cls) and cls.uses_labels):
            pytest.skip("labels are not read (self-supervised) or not class ids")
        with pytest.raises(ValueError, match=r"y_true.*\(4 samples\).*Received: 3 labels"):
            cls()(np.zeros(3), np.ones((4, 2, 3), "float32"))
        with pytest.raises(ValueError, match="y_true"):
            cls()(np.zeros((4, 1, 1)), np.ones((4, 2, 3), "float32"))

    @pytest.mark.parametrize("weight", [[1.0, -1.0], [1.0, float("nan")], [1.0, 1.0, 1.0]])
    def test_bad_sample_weight(self, name, weight):
        cls = _cls(name)
        y_true, y_pred = _example(cls, batch=2)
        with pytest.raises(ValueError, match="sample_weight"):
            cls()(y_true, y_pred, sample_weight=np.array(weight, "float32"))

    @pytest.mark.parametrize("chunk_size", [0, -3, 2.5, True])
    def test_bad_chunk_size(self, name, chunk_size):
        cls = _cls(name)
        if not _is_embedding_loss(cls):
            pytest.skip("only embedding losses compute in chunks")
        with pytest.raises(ValueError, match="chunk_size"):
            cls(chunk_size=chunk_size)
