"""The plan line and the time-left forecast `clzoo train` prints before and early in a run (issue 43)."""

import types

from clzoo.train.callbacks import Forecast


def test_forecast_prints_once_from_the_measured_speed(capsys):
    throughput = types.SimpleNamespace(images_per_second=100.0)
    forecast = Forecast(throughput, steps_left=1000, batch_size=30, after=3)
    for step in range(10):
        forecast.on_train_batch_end(step)
    lines = capsys.readouterr().out.strip().splitlines()
    # after the compiling step and 3 timed ones: 996 steps x 30 images at 100 images/s = 299 s
    assert lines == ["clzoo: 100 images/s over 3 steps; the 996 steps left take about 5 min "
                     "(training only)"]


def test_forecast_is_silent_when_not_asked_or_nothing_is_left(capsys):
    throughput = types.SimpleNamespace(images_per_second=100.0)
    for forecast in (Forecast(throughput, 1000, 30, enabled=False), Forecast(throughput, 4, 30, after=3)):
        for step in range(10):
            forecast.on_train_batch_end(step)
    assert capsys.readouterr().out == ""
