"""The auxiliary cross-entropy head (issue 42): `fit` minimises contrastive + weight * label-smoothed
CE over every view, against an independent NumPy reference; its gradient reaches the encoder; it
saves and loads with the model; `evaluate` reports the contrastive loss alone; bad settings refused."""

import keras
import numpy as np
import pytest

import clzoo

pytestmark = pytest.mark.backends("tensorflow", "jax", "torch")  # every lane (tests/conftest.py)

RNG = np.random.default_rng(0)


def _model(classes=3, **kwargs):
    keras.utils.set_random_seed(0)
    inputs = keras.Input((4, 4, 3))
    encoder = keras.Model(inputs, keras.layers.Dense(5, activation="tanh")(keras.layers.Flatten()(inputs)))
    model = clzoo.models.ContrastiveModel(encoder, clzoo.models.ProjectionHead(output_dim=4),
                                          auxiliary_classes=classes, **kwargs)
    model.build((None, 2, 4, 4, 3))
    return model


def _reference_ce(logits, labels, views, smoothing):
    """NumPy: smoothed one-hot targets for each view (sample-major), log-softmax, mean."""
    classes = logits.shape[1]
    targets = np.full((len(logits), classes), smoothing / classes)
    targets[np.arange(len(logits)), np.repeat(labels, views)] += 1 - smoothing
    shifted = logits - logits.max(1, keepdims=True)
    log_softmax = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
    return float(-(targets * log_softmax).sum(1).mean())


def test_the_loss_is_contrastive_plus_weighted_smoothed_cross_entropy():
    model = _model(auxiliary_weight=0.7, auxiliary_label_smoothing=0.2)
    loss = clzoo.losses.SupConLoss(temperature=0.5)
    model.compile(optimizer="sgd", loss=loss)
    x = RNG.uniform(size=(6, 2, 4, 4, 3)).astype("float32")
    y = np.array([0, 1, 2, 0, 1, 2])
    embeddings, logits = model(x, training=True)
    total = model.compute_loss(x, y, (embeddings, logits), training=True)
    contrastive = float(keras.ops.convert_to_numpy(loss(y, embeddings)))
    ce = _reference_ce(keras.ops.convert_to_numpy(logits).astype(np.float64), y, 2, 0.2)
    np.testing.assert_allclose(float(keras.ops.convert_to_numpy(total)), contrastive + 0.7 * ce,
                               rtol=1e-5)
    assert keras.ops.convert_to_numpy(model(x)).shape == (6, 2, 4)  # inference: embeddings only


def test_fit_trains_the_head_and_the_encoder_and_evaluate_reports_the_contrastive_loss(tmp_path):
    model = _model()
    model.compile(optimizer=keras.optimizers.SGD(0.5), loss=clzoo.losses.SupConLoss())
    x = RNG.uniform(size=(12, 2, 4, 4, 3)).astype("float32")
    y = np.arange(12) % 3
    before = [w.copy() for w in (model.auxiliary_classifier.get_weights()[0],
                                 model.encoder.get_weights()[0])]
    model.fit(x, y, batch_size=6, epochs=2, verbose=0)
    after = (model.auxiliary_classifier.get_weights()[0], model.encoder.get_weights()[0])
    assert all(not np.allclose(a, b) for a, b in zip(before, after))
    contrastive = clzoo.losses.SupConLoss()(y, model(x))
    np.testing.assert_allclose(model.evaluate(x, y, batch_size=12, verbose=0),
                               float(keras.ops.convert_to_numpy(contrastive)), rtol=1e-5)
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras", compile=False)
    assert (loaded.auxiliary_classes, loaded.auxiliary_weight, loaded.auxiliary_label_smoothing,
            loaded.auxiliary_logit_scale) == (3, 1.0, 0.2, 1 / 9)
    np.testing.assert_allclose(loaded.auxiliary_classifier.get_weights()[0], after[0])


def test_the_head_is_airbench94s_scaled_logits_without_a_bias():
    model = _model(auxiliary_logit_scale=0.25)
    x = RNG.uniform(size=(3, 2, 4, 4, 3)).astype("float32")
    _, logits = model(x, training=True)
    features = keras.ops.convert_to_numpy(model.encoder(x.reshape(6, 4, 4, 3)))
    (kernel,) = model.auxiliary_classifier.get_weights()  # no bias
    np.testing.assert_allclose(keras.ops.convert_to_numpy(logits), 0.25 * features @ kernel,
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kwargs, match", [
    ({"classes": 1}, "auxiliary_classes"), ({"classes": 2.0}, "auxiliary_classes"),
    ({"auxiliary_weight": 0}, "auxiliary_weight"), ({"auxiliary_weight": float("nan")}, "auxiliary_weight"),
    ({"auxiliary_label_smoothing": 1.0}, "auxiliary_label_smoothing"),
    ({"auxiliary_logit_scale": 0}, "auxiliary_logit_scale"),
    ({"auxiliary_logit_scale": float("inf")}, "auxiliary_logit_scale"),
    ({"encoder_chunk_size": 4}, "GradCache"),
])
def test_bad_settings_are_refused_naming_the_argument(kwargs, match):
    with pytest.raises(ValueError, match=match):
        _model(**kwargs)


def test_label_rows_are_refused_with_the_expected_shape():
    model = _model()
    model.compile(optimizer="sgd", loss=clzoo.losses.SupConLoss())
    x = RNG.uniform(size=(4, 2, 4, 4, 3)).astype("float32")
    with pytest.raises(ValueError, match="one integer class id per sample"):
        model.compute_loss(x, np.eye(3)[[0, 1, 2, 0]], model(x, training=True), training=True)


def test_sample_weights_weigh_the_cross_entropy_and_labels_beyond_the_classes_are_refused():
    """Issue 58 item 6: the head ignored `sample_weight` and trained on labels outside its classes
    (an all-zero one-hot target: only the smoothing was learnt)."""
    model = _model(auxiliary_weight=1.0, auxiliary_label_smoothing=0.0)
    loss = clzoo.losses.SupConLoss(temperature=0.5)
    model.compile(optimizer="sgd", loss=loss)
    x = RNG.uniform(size=(4, 2, 4, 4, 3)).astype("float32")
    y, weights = np.array([0, 1, 2, 0]), np.array([1.0, 0.0, 2.0, 0.5], "float32")
    embeddings, logits = model(x, training=True)
    total = model.compute_loss(x, y, (embeddings, logits), sample_weight=weights, training=True)
    contrastive = float(keras.ops.convert_to_numpy(loss(y, embeddings, sample_weight=weights)))
    logits = keras.ops.convert_to_numpy(logits).astype(np.float64)
    per_view = [_reference_ce(logits[i:i + 1], y[i // 2:i // 2 + 1], 1, 0.0) for i in range(8)]
    ce = float(np.mean(np.repeat(weights, 2) * np.array(per_view)))
    np.testing.assert_allclose(float(keras.ops.convert_to_numpy(total)), contrastive + ce, rtol=1e-5)
    with pytest.raises(ValueError, match=r"3 classes; labels must lie in \[0, 3\). "
                                         r"Received: labels from 0 to 3"):
        model.fit(x, np.array([0, 1, 2, 3]), epochs=1, verbose=0)
