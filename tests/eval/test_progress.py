"""Plain progress lines off a terminal (`clzoo.eval.progress`): long passes say how far they are."""

import re

import numpy as np

from clzoo.eval import progress
from clzoo.eval.embed import predict_images


def _model():
    import keras

    inputs = keras.Input((4, 4, 3))
    return keras.Model(inputs, keras.layers.GlobalAveragePooling2D()(inputs))


def test_one_line_per_tenth_ending_at_every_image():
    import keras

    lines = []
    callback = progress.PlainProgress("embedding 95 images", 95, 20, after=0.0, print_fn=lines.append)
    # 95 images padded to 20 batches of 5, as predict_images pads its last batch
    keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)]).predict(
        np.zeros((100, 2)), batch_size=5, verbose=0, callbacks=[callback])
    shares = [int(re.search(r"\((\d+)%\)", line).group(1)) for line in lines]
    assert shares == list(range(10, 101, 10)), lines
    assert lines[-1].startswith("embedding 95 images: 95/95 images (100%) in ")
    assert all("left" in line for line in lines[:-1])


def test_a_short_pass_prints_nothing():
    lines = []
    callback = progress.PlainProgress("x", 10, 2, after=60.0, print_fn=lines.append)
    callback.on_predict_begin()
    callback.on_predict_batch_end(0)
    callback.on_predict_batch_end(1)
    assert lines == []


def test_predict_images_off_a_terminal_prints_lines_and_the_same_outputs(monkeypatch, capsys):
    images = np.random.default_rng(0).integers(0, 256, (40, 4, 4, 3), dtype=np.uint8)
    quiet = predict_images(_model(), images, batch_size=4)
    assert capsys.readouterr().out == ""  # verbose=False: nothing
    monkeypatch.setattr(progress, "FIRST_LINE_AFTER", 0.0)
    loud = predict_images(_model(), images, batch_size=4, verbose=True)
    printed = capsys.readouterr().out.splitlines()  # captured: not a terminal
    assert len(printed) == 10 and printed[-1].startswith("embedding 40 images: 40/40 images (100%)")
    np.testing.assert_allclose(loud, quiet, rtol=1e-6)


def test_the_batch_count_comes_from_keras_when_not_given():
    import keras

    lines = []
    callback = progress.PlainProgress("embedding 40 images", 40, after=0.0, print_fn=lines.append)
    keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)]).predict(
        np.zeros((40, 2)), batch_size=10, verbose=0, callbacks=[callback])
    assert callback.batches == 4 and callback.batch_size == 10  # params["steps"] of this predict
    assert [re.search(r"\((\d+)%\)", line).group(1) for line in lines] == ["25", "50", "75", "100"]
    assert lines[1].startswith("embedding 40 images: 20/40 images (50%)")
    unknown = progress.PlainProgress("x", 10, after=0.0, print_fn=lines.append)
    unknown.on_predict_begin()  # no count given nor set by Keras: silent, no ZeroDivisionError
    unknown.on_predict_batch_end(0)
    assert len(lines) == 4
