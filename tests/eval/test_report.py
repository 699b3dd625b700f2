"""`evaluate_embeddings` reports, the SINCERE app. J probe and the kNN monitor during `fit`."""

import json

import keras
import numpy as np
import pytest

import clzoo
import clzoo.eval as E

RNG = np.random.default_rng(11)


def _clusters(n_per_class=40, classes=3, dim=8):
    centers = RNG.normal(size=(classes, dim)) * 4
    y = np.repeat(np.arange(classes), n_per_class)
    return centers[y] + RNG.normal(size=(len(y), dim)), y


def test_report_writes_every_metric_and_plot(tmp_path):
    train, y_train = _clusters()
    test, y_test = _clusters(n_per_class=15)
    result = E.evaluate_embeddings(train, y_train, test, y_test, class_names=["a", "b", "c"],
                                   output_dir=tmp_path, ks=(1, 5), shots=(10,), verbose=False)
    m = json.loads((tmp_path / "metrics.json").read_text())
    assert m == json.loads(json.dumps(result.metrics))
    assert m["knn"]["k5"] == pytest.approx(E.knn_accuracy(train, y_train, test, y_test, ks=(5,))[5])
    assert m["ncc"]["accuracy"] == E.nearest_class_center_accuracy(train, y_train, test, y_test)
    assert m["geometry"]["test"]["cdnv"] == pytest.approx(E.cdnv(test, y_test))
    assert m["separation"]["margin"] == pytest.approx(
        E.target_noise_separation(train, y_train, test, y_test).margin)
    assert set(m["separation"]["per_class_margin"]) == {"a", "b", "c"}
    assert 0 <= m["calibration"]["ece"] <= 1
    assert 0 <= m["loss_gap"]["gap"] <= m["loss_gap"]["bound"]
    assert set(m["few_shot"]["10"]) == {"ncc_error", "linear_error", "ncc_error_bound_test"}
    report = (tmp_path / "report.md").read_text()
    for name in ("separation.png", "separation_per_class.png", "reliability.png", "embedding_map.png"):
        png = (tmp_path / name).read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000, name
        assert f"({name})" in report
    assert "target-noise margin" in report and "CDNV" in report
    assert set(m["seconds"]) == set(m["metrics"]) and "| `knn` |" in report
    assert set(result.correct) == {"knn_k1", "knn_k5", "ncc", "probe"}
    assert not list(tmp_path.glob(".*tmp*"))


def test_compare_results_of_a_model_with_itself_is_not_significant():
    train, y_train = _clusters()
    test, y_test = _clusters(n_per_class=15)
    a = E.evaluate_embeddings(train, y_train, test, y_test, metrics="knn,probe", verbose=False)
    table = E.compare_results(a, a)
    assert set(table) == {"knn_k1", "knn_k5", "knn_k20", "probe"}  # k=200 > 120 training samples
    assert all(row["low"] == row["high"] == 0.0 and not row["significant"] for row in table.values())


def test_unknown_metric_is_refused():
    with pytest.raises(ValueError, match="Unknown metrics.*accuracy.*Choose from"):
        E.parse_metrics("knn,accuracy")


def _tiny_encoder(size=16, dim=8):
    inputs = keras.Input((size, size, 3))
    x = keras.layers.Conv2D(8, 3, strides=2, activation="relu")(inputs)
    x = keras.layers.GlobalAveragePooling2D()(x)
    return keras.Model(inputs, keras.layers.Dense(dim)(x))


def _digits(n):
    split = clzoo.data.load_split("digits", "train")
    images = np.asarray(keras.ops.convert_to_numpy(
        keras.ops.image.resize(split.images[:n].astype("float32"), (16, 16)))).astype("uint8")
    return images, split.labels[:n]


@pytest.mark.large
def test_sgd_linear_probe_chooses_a_rate_on_validation_and_learns():
    images, labels = _digits(300)
    # Pooled pixels through a random linear map: features a linear probe can separate.
    inputs = keras.Input((16, 16, 3))
    pooled = keras.layers.Flatten()(keras.layers.AveragePooling2D(2)(inputs))
    encoder = keras.Model(inputs, keras.layers.Dense(64)(pooled))
    before = [w.copy() for w in encoder.get_weights()]
    result = E.sgd_linear_probe(encoder, images[:240], labels[:240], images[240:], labels[240:],
                                learning_rates=(1e-4, 0.1), epochs=8, batch_size=32,
                                augment=False)  # this pixel encoder is not shift-invariant
    assert result.details["learning_rate"] in (1e-4, 0.1)
    assert set(result.details["validation_accuracy"]) == {1e-4, 0.1}
    assert result.details["learning_rate"] == max(result.details["validation_accuracy"],
                                                  key=result.details["validation_accuracy"].get)
    assert result.details["learning_rate"] == 0.1  # 1e-4 barely moves in 8 epochs
    assert result.accuracy > 0.6  # 10 classes: chance is 0.1
    np.testing.assert_allclose(result.probabilities.sum(1), 1.0, rtol=1e-6)
    for w, b in zip(encoder.get_weights(), before):  # the encoder stays frozen
        np.testing.assert_array_equal(w, b)


def test_sgd_linear_probe_runs_the_encoder_once_per_image_set(monkeypatch):
    import clzoo.eval.linear_probe as probe_module

    images, labels = _digits(120)
    inputs = keras.Input((16, 16, 3))
    encoder = keras.Model(inputs, keras.layers.Dense(8)(keras.layers.GlobalAveragePooling2D()(inputs)))
    predicted, fitted, predict = [], [], probe_module.predict_images
    monkeypatch.setattr(probe_module, "predict_images",
                        lambda model, x: predicted.append(model) or predict(model, x))
    fit = probe_module._fit_probe
    monkeypatch.setattr(probe_module, "_fit_probe", lambda *a: fitted.append(fit(*a)) or fitted[-1])
    result = E.sgd_linear_probe(encoder, images[:96], labels[:96], images[96:], labels[96:],
                                learning_rates=(0.01, 0.1, 1.0), epochs=1, batch_size=32,
                                augment=False)
    # Validation features, test features, nothing else: one predict function, the encoder's, where
    # each candidate's own predict model made TensorFlow warn about retracing. (The warning itself
    # is not asserted: TensorFlow counts traces process-wide, so other tests' models trigger it.)
    assert predicted == [encoder, encoder] and len(fitted) == 4
    # The numpy logits are the Keras probe model's: the linear layer on the frozen encoder.
    probe = keras.Sequential([encoder, fitted[-1]])
    expected = keras.ops.convert_to_numpy(probe(images[96:].astype("float32") / 255.0)).argmax(1)
    np.testing.assert_array_equal(result.predictions, expected)


def test_probe_augmentation_is_a_padded_crop_and_flip():
    from clzoo.eval.linear_probe import _augmenter

    image = RNG.uniform(size=(1, 8, 8, 3)).astype("float32")
    padded = np.pad(image[0], ((4, 4), (4, 4), (0, 0)))
    out = keras.ops.convert_to_numpy(_augmenter((8, 8), seed=1)(np.repeat(image, 16, 0), training=True))
    assert out.shape == (16, 8, 8, 3)
    windows = {(dy, dx, flip) for dy in range(9) for dx in range(9) for flip in (0, 1)}
    for crop in out:
        assert any(np.allclose(crop, (padded[dy:dy + 8, dx:dx + 8][:, ::-1] if flip
                                      else padded[dy:dy + 8, dx:dx + 8]), atol=1e-6)
                   for dy, dx, flip in windows)
    assert len({crop.tobytes() for crop in out}) > 1  # random per image


@pytest.mark.large
def test_knn_monitor_logs_accuracy_during_fit():
    images, labels = _digits(128)
    encoder = _tiny_encoder()
    head = clzoo.models.ProjectionHead(hidden_dims=(16,), output_dim=8)
    model = clzoo.models.ContrastiveModel(encoder, head)
    model.compile(optimizer="adam", loss=clzoo.losses.SINCERELoss())
    monitor = E.KNNMonitor(images[:96], labels[:96], images[96:], labels[96:], ks=(1, 5), every=2)
    views = np.stack([images, images], axis=1).astype("float32") / 255.0
    history = model.fit(views, labels, epochs=3, batch_size=32, verbose=0, callbacks=[monitor])
    assert [h["epoch"] for h in monitor.history] == [2, 3]  # every 2 epochs, and the last
    for h in monitor.history:
        assert 0.0 <= h["knn_top1_k5"] <= 1.0
    assert history.history["knn_top1_k1"][-1] == monitor.history[-1]["knn_top1_k1"]
    with pytest.raises(ValueError, match="every"):
        E.KNNMonitor(images, labels, images, labels, every=0)


def test_the_knn_monitor_does_not_hold_up_a_stop():
    """A Ctrl-C at a large run's last step: the epoch-end monitor embedded 12,000 images before the
    checkpoint and the exit (issue 85 item 2); asked to stop, it measures nothing."""
    import types

    images, labels = _digits(16)
    monitor = E.KNNMonitor(images, labels, images, labels, ks=(1,))
    embedded = []
    monitor._encoder = lambda: embedded.append(True)  # any embedding would call this first
    monitor.set_model(types.SimpleNamespace(stop_training=True))
    logs = {}
    monitor.on_epoch_end(0, logs)
    assert not embedded and monitor.history == [] and logs == {}
