"""Hostile inputs, round 7 (issue 86), data: a read that never returns, a decompression bomb held in
memory, a skipped streamed image served under another class's label, a file name that is not
UTF-8.

A hang is tested in a subprocess with a timeout, so a regression fails instead of stopping the suite.
"""

import os
import shutil
import signal
import struct
import subprocess
import sys
import textwrap
import time
import warnings
import zlib
from pathlib import Path

import numpy as np
import pytest
import yaml

from clzoo.data import load_split
from clzoo.data.checks import check_data
from clzoo.data.decode import decode_image
from tests.data.image_folders import write_image_folder

pytestmark = pytest.mark.timeout(300)


def _python(script, timeout=60, **kwargs):
    """Run `script` in a fresh Python; a hang fails the test (TimeoutExpired) instead of the suite."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True,
                          text=True, timeout=timeout, **kwargs)


# --- 1. a read that never returns: refused (a FIFO), never joined at exit, ended by a stop ------

def test_a_fifo_in_place_of_an_image_is_refused_in_one_line_never_waited_on(tmp_path):
    root = write_image_folder(tmp_path / "data", per_class=2)
    script = f"""
        import os, warnings
        from clzoo.data import load_split
        split = load_split({str(root)!r}, "train", stream=True)
        skipping = load_split({str(root)!r}, "train", stream=True, on_unreadable="skip")
        os.unlink(split.paths[0]); os.mkfifo(split.paths[0])  # replaced mid-run; no writer ever comes
        try:
            split.images[[0, 1]]
        except ValueError as error:
            print("REFUSED", error)
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            print("SKIPPED", skipping.images[[0, 1]].shape, sorted(skipping.images.skipped))
    """
    result = _python(script)
    assert result.returncode == 0, result.stderr[-3000:]
    refused = next(line for line in result.stdout.splitlines() if line.startswith("REFUSED"))
    fifo = str(root / "train" / "cat" / "0.png")
    assert f"Cannot read image {fifo}: not a regular file (a device, pipe or socket)" in refused
    assert f"SKIPPED (2, 8, 8, 3) [{fifo!r}]" in result.stdout


def test_decode_image_refuses_a_fifo_at_once(tmp_path):
    fifo = tmp_path / "x.png"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match=r"^Cannot read image .*x\.png: not a regular file"):
        decode_image(str(fifo))
    assert decode_image(str(fifo), skip=True) is None


def test_the_decode_and_read_ahead_workers_are_daemon_threads_python_exits_past_a_blocked_read(tmp_path):
    """A read blocked for ever (a stuck network mount) in a decode worker and in the read-ahead
    thread of the device stream: the interpreter still exits (a ThreadPoolExecutor's workers are
    joined at exit, and kept it alive)."""
    root = write_image_folder(tmp_path / "data", per_class=2)
    script = f"""
        import threading, time
        from clzoo.data import decode, load_split
        from clzoo.data.device_stream import _decoded_ahead
        from clzoo.data.file_images import decode_pool

        split = load_split({str(root)!r}, "train", stream=True)
        decode.decode_image = lambda *args, **kwargs: threading.Event().wait()  # never returns
        decode_pool().submit(split.images.__getitem__, 0)
        ahead = _decoded_ahead(split.images, iter([(0, 0, [0, 1]), (0, 2, [2, 3])]))
        threading.Thread(target=next, args=(ahead,), daemon=True).start()
        time.sleep(1)
        ours = [t for t in threading.enumerate() if t.name.startswith("clzoo")]
        print("THREADS", sorted({{t.name.rsplit("_", 1)[0] for t in ours}}), all(t.daemon for t in ours))
    """
    result = _python(script)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "THREADS ['clzoo-ahead', 'clzoo-decode'] True" in result.stdout


def test_a_second_stop_signal_ends_a_run_whose_main_thread_cannot_unwind():
    """The training stop handler's second signal raises KeyboardInterrupt; where the main thread
    cannot act on it (blocked in C, as under TensorFlow's iterator waiting on a read that never
    returns: simulated by a handler that returns), the process exits a few seconds later, in one
    line."""
    script = """
        import signal, time
        from clzoo.console import SecondSignalExit

        signal.signal(signal.SIGINT, lambda *args: None)  # Python's handler runs, the run goes on
        SecondSignalExit(grace=1.0).arm()
        print("ARMED", flush=True)
        while True:
            time.sleep(0.05)
    """
    process = subprocess.Popen([sys.executable, "-c", textwrap.dedent(script)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().strip() == "ARMED"
        process.send_signal(signal.SIGINT)
        time.sleep(0.5)
        assert process.poll() is None  # one signal: the run finishes its step
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 130, err
    assert err.count("\n") == 1 and "stopped by a second SIGINT while the run was blocked" in err


def test_the_stop_handler_raises_on_the_second_signal_and_releases_the_hard_exit():
    from clzoo.train.callbacks import StopOnSignal

    stop = StopOnSignal()
    stop.on_train_begin()
    try:
        assert signal.getsignal(signal.SIGTERM) == stop._handle
        stop._handle(signal.SIGTERM, None)
        assert stop.received == "SIGTERM"
        with pytest.raises(KeyboardInterrupt):
            stop._handle(signal.SIGINT, None)
        assert signal.getsignal(signal.SIGTERM) != stop._handle  # a third is the default's again
    finally:
        stop.release()
    assert signal.set_wakeup_fd(-1) == -1  # released: no wakeup fd left behind


# --- 3. a decompression bomb as the first image, held in memory: one line, no traceback ---------

def _bomb_png(path, side=20000):
    """A PNG whose header declares `side` x `side` pixels (Pillow refuses it above 2 x its
    MAX_IMAGE_PIXELS, ~179 M pixels), with almost no data."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
                     + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b""))


def test_check_data_under_memory_leaves_a_bomb_header_to_the_decode(tmp_path):
    root = write_image_folder(tmp_path / "data", per_class=2)
    _bomb_png(root / "train" / "cat" / "0.png")
    assert check_data(str(root), "memory").class_names == ("cat", "dog")
    with pytest.raises(ValueError, match=r"^Cannot read image .*0\.png: .*decompression bomb"):
        load_split(str(root), "train")


@pytest.mark.large
def test_clzoo_train_refuses_a_bomb_held_in_memory_in_one_line(tmp_path):
    root = write_image_folder(tmp_path / "data", classes=("0", "1"), per_class=4)
    _bomb_png(root / "train" / "0" / "0.png")
    recipe = {"name": "bomb", "data": str(root), "data_loading": "memory",
              "model": {"architecture": "resnet8", "embedding_dim": 8},
              "views": {"size": 8, "flip": False, "grayscale_p": 0.0},
              "training": {"epochs": 1, "batch_size": 4},
              "eval": {"knn_k": [1], "knn_headline_k": 1, "metrics": ["knn"], "baselines": []}}
    (tmp_path / "bomb.yaml").write_text(yaml.safe_dump(recipe))
    script = shutil.which("clzoo", path=str(Path(sys.executable).parent))
    env = {**os.environ, "CLZOO_CACHE": str(tmp_path / "cache"), "CUDA_VISIBLE_DEVICES": ""}
    result = subprocess.run([script, "train", str(tmp_path / "bomb.yaml"), "--output", str(tmp_path / "run"),
                             "--quiet"], capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 2, (result.stdout[-2000:], result.stderr[-3000:])
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    errors = [line for line in result.stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and "0.png" in errors[0] and "decompression bomb" in errors[0], result.stderr


# --- 5. a skipped streamed image: its substitute is of its own class --------------------------

def test_a_skipped_streamed_image_is_replaced_by_one_of_its_own_class(tmp_path):
    root = write_image_folder(tmp_path / "data", per_class=2)
    held = load_split(str(root), "train")  # cat/0, cat/1, dog/0, dog/1
    (root / "train" / "cat" / "1.png").write_bytes(b"not an image")  # the last cat: next is a dog
    split = load_split(str(root), "train", stream=True, on_unreadable="skip")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        served = split.images[[1, 2]]
    assert split.labels[1] == 0
    np.testing.assert_array_equal(served[0], held.images[0])  # the other cat, never dog/0
    np.testing.assert_array_equal(served[1], held.images[2])
    assert "the next readable file of its label" in str(caught[0].message)
    part = split.images.subset([1, 3])  # a subset keeps the labels: still a cat, or an error
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=r"^No image file labelled 0 could be read \(e\.g\. "):
            part[0]


def test_a_class_with_no_readable_streamed_file_is_refused_in_one_line(tmp_path):
    root = write_image_folder(tmp_path / "data", per_class=2)
    for name in ("0.png", "1.png"):
        (root / "train" / "dog" / name).write_bytes(b"not an image")
    split = load_split(str(root), "train", stream=True, on_unreadable="skip")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert split.images[[0, 1]].shape == (2, 8, 8, 3)
        with pytest.raises(ValueError, match=r"^No image file labelled 1 could be read .*dog"):
            split.images[[0, 2]]


# --- 9. a file name that is not UTF-8: one line naming it and the cause ----------------------

@pytest.mark.skipif(sys.platform != "linux", reason="a non-UTF-8 file name needs a byte-name file system")
@pytest.mark.parametrize("where", ["image", "class folder"])
def test_a_file_name_that_is_not_utf8_is_refused_naming_it(tmp_path, where):
    root = write_image_folder(tmp_path / "data", per_class=2)
    folder = os.fsencode(root / "train")
    if where == "image":
        os.rename(folder + b"/cat/0.png", folder + b"/cat/\xff.png")
        shown, cause = "cat/\\xff.png", "file name is not valid UTF-8: rename it"
    else:
        os.rename(folder + b"/cat", folder + b"/c\xe9t")
        shown, cause = "c\\xe9t", "folder name is not valid UTF-8: rename it"
    for load in (lambda: check_data(str(root), "memory"), lambda: load_split(str(root), "train"),
                 lambda: load_split(str(root), "train", stream=True)):
        with pytest.raises(ValueError) as caught:
            load()
        message = str(caught.value)
        assert "\n" not in message and shown in message and cause in message, message
        message.encode("utf-8")  # printable and writable anywhere
    if where == "image":
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            kept = load_split(str(root), "train", on_unreadable="skip")
        assert len(kept) == 3 and all(path.isascii() for path in kept.paths)


@pytest.mark.skipif(sys.platform != "linux", reason="bytes file names are Linux's")
def test_a_folder_below_a_non_utf8_parent_loads_and_a_non_utf8_output_is_refused(tmp_path):
    """Hostile pass on this change: a parent folder named in bytes that are not UTF-8 ended eval /
    embed with a raw codec error (the cache key), and such an --output failed deep in TensorBoard."""
    import argparse
    import os

    from clzoo.cli.arguments import user_path
    from clzoo.data import load_split
    from tests.train.tiny_data import write_tiny_digits

    parent = os.fsdecode(os.fsencode(str(tmp_path)) + b"/dir\xff")
    folder = write_tiny_digits(os.path.join(parent, "digits"), train=8, test=4, classes=2)
    split = load_split(folder, "train")
    assert split.images.shape == (8, 8, 8, 3)
    with pytest.raises(argparse.ArgumentTypeError, match=r"dir\\xff.*is not valid UTF-8"):
        user_path(os.path.join(parent, "out"))
