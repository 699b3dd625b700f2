"""`evaluate` on a spec, a pair of Splits, arrays; `train_test_split`; projection embeddings."""

import importlib

import keras
import numpy as np
import pytest

import clzoo
import clzoo.eval as E

METRICS = "knn,ncc,probe,geometry,separation,loss_gap"


def _encoder():
    keras.utils.set_random_seed(3)
    inputs = keras.Input((32, 32, 3))
    x = keras.layers.AveragePooling2D(4)(inputs)
    return keras.Model(inputs, keras.layers.Dense(16)(keras.layers.Flatten()(x)))


def _numbers(result):
    return {k: v for k, v in result.metrics.items() if k not in ("data", "title", "seconds", "timings")}


def test_spec_splits_and_arrays_give_identical_numbers():
    encoder = _encoder()
    train, test = (clzoo.data.load_split("digits", s) for s in ("train", "test"))
    by_spec = E.evaluate(encoder, "digits", METRICS, ks=(1, 5), verbose=False)
    by_splits = E.evaluate(encoder, (train, test), METRICS, ks=(1, 5), verbose=False)
    by_arrays = E.evaluate(encoder, ((train.images, train.labels), (test.images, test.labels)),
                           METRICS, ks=(1, 5), verbose=False, class_names=train.class_names)
    by_test_split = E.evaluate(encoder, test, METRICS, train=train, ks=(1, 5), verbose=False)
    assert by_spec.metrics["data"] == "digits"
    assert by_arrays.metrics["data"] == "in-memory arrays"
    for other in (by_splits, by_arrays, by_test_split):
        assert _numbers(other) == _numbers(by_spec)
        for key, correct in by_spec.correct.items():
            np.testing.assert_array_equal(other.correct[key], correct)


def test_one_set_of_images_without_train_is_refused():
    test = clzoo.data.load_split("digits", "test")
    with pytest.raises(ValueError, match="train=.*train_test_split"):
        E.evaluate(_encoder(), test, "knn")
    with pytest.raises(ValueError, match="`data` must be"):
        E.evaluate(_encoder(), 3, "knn")
    with pytest.raises(ValueError, match="Unknown metrics"):
        E.evaluate(_encoder(), "digits", "knn,accuracy")


def test_train_test_split_is_stratified_and_seeded():
    labels = np.repeat([0, 1, 2], [50, 30, 20])
    images = np.random.default_rng(0).integers(0, 255, (100, 4, 4, 3), dtype=np.uint8)
    train, test = E.train_test_split(images, labels, test_size=0.2, class_names=["a", "b", "c"])
    assert (len(train), len(test)) == (80, 20)
    assert np.bincount(test.labels).tolist() == [10, 6, 4]
    assert test.class_names == ["a", "b", "c"]
    # Every image lands in exactly one part, with its label.
    rows = {img.tobytes(): lab for img, lab in zip(images, labels)}
    parts = [(img.tobytes(), lab) for s in (train, test) for img, lab in zip(s.images, s.labels)]
    assert len({p[0] for p in parts}) == 100 and all(rows[b] == lab for b, lab in parts)
    again = E.train_test_split(images, labels, test_size=0.2, class_names=["a", "b", "c"])[1]
    np.testing.assert_array_equal(again.images, test.images)
    with pytest.raises(ValueError, match="at least two images"):
        E.train_test_split(images[:51], labels[:51])
    with pytest.raises(ValueError, match="test_size"):
        E.train_test_split(images, labels, test_size=2)
    with pytest.raises(ValueError, match="uint8"):
        E.train_test_split(images.astype(np.float32), labels)


def test_projection_embeddings_are_the_normalized_head_outputs():
    keras.utils.set_random_seed(0)
    inputs = keras.Input((8, 8, 3))
    encoder = keras.Model(inputs, keras.layers.Dense(5)(keras.layers.GlobalAveragePooling2D()(inputs)))
    head = clzoo.models.ProjectionHead(hidden_dims=(6,), output_dim=4)
    model = clzoo.models.ContrastiveModel(encoder, head)
    images = np.random.default_rng(0).integers(0, 255, (6, 8, 8, 3), dtype=np.uint8)
    z = E.projection_embeddings(model, images)
    expected = keras.ops.convert_to_numpy(head(encoder(images.astype("float32") / 255.0)))
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(z, expected, atol=1e-5)
    with pytest.raises(ValueError, match="projection_head"):
        E.projection_embeddings(encoder, images)


def test_a_k_above_the_training_images_is_refused_before_any_embedding(monkeypatch):
    images = np.zeros((12, 32, 32, 3), np.uint8)
    train, test = E.train_test_split(images, np.arange(12) % 2, test_size=0.5)  # 6 training images
    embed_module = importlib.import_module("clzoo.eval.embed")  # clzoo.eval.embed is the function
    monkeypatch.setattr(embed_module, "embed", lambda *a, **k: pytest.fail("embedded first"))
    with pytest.raises(ValueError, match=r"ks: k = 7 is not in \[1, 6\].*Received: ks=1,7$"):
        E.evaluate(_encoder(), (train, test), "knn", ks=(1, 7), verbose=False)


def test_default_k_above_the_training_images_are_named_once(capsys):
    x = np.random.default_rng(0).normal(size=(30, 4))
    y = np.arange(30) % 2
    result = E.evaluate_embeddings(x, y, x, y, "knn,retrieval")
    assert sorted(result.knn) == ["k1", "k20", "k5"]
    notes = [line for line in capsys.readouterr().out.splitlines() if line.startswith("note:")]
    assert notes == ["note: kNN k = 200 left out of the default k (1, 5, 20, 200): more than the "
                     "30 training images"]
    assert ("weighted kNN top-1, k = 200", "skipped: only 30 training embeddings") \
        in result.results["knn"].rows
    with pytest.raises(ValueError, match="k = 200 is not in"):  # the same k, given: refused
        E.evaluate_embeddings(x, y, x, y, "knn", ks=(1, 200), verbose=False)
