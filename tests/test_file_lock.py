"""One writer per output (issue 44, items 1 and 3): while another process writes a report folder,
a preset folder or an export, a second writer is refused in one line naming it, before its work,
and the first writer's staging is left alone; a dead writer's lock never blocks anyone."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from clzoo import cli
from clzoo.file_lock import lock_path, output_lock
from clzoo.files import replace_folder
from tests.test_cli import tiny_encoder  # noqa: F401  (fixture)

# Another writer, as a bare process: the same OS lock on the same file, without importing clzoo.
_HOLDER = textwrap.dedent("""
    import fcntl, os, sys, time
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.write(fd, f"pid {os.getpid()} on testhost since now\\n".encode())
    print("held", flush=True)
    time.sleep(120)
""")


def _once_the_holder_is_gone(write):
    """`write()`, retried while the killed holder's lock is still being dropped by the kernel."""
    for _ in range(100):
        try:
            return write()
        except FileExistsError as error:
            if "being written" not in str(error):
                raise
            time.sleep(0.05)
    return write()


@pytest.fixture
def holder():
    """`hold(output)`: another live process holding `output`'s writer lock (the pid returned)."""
    processes = []

    def hold(output):
        output.parent.mkdir(parents=True, exist_ok=True)
        process = subprocess.Popen([sys.executable, "-c", _HOLDER, str(lock_path(output))],
                                   stdout=subprocess.PIPE, text=True)
        processes.append(process)
        assert process.stdout.readline().strip() == "held"
        return process.pid

    yield hold
    for process in processes:
        process.kill()
        process.wait()


def test_a_second_writer_of_a_folder_is_refused_and_the_first_ones_staging_kept(tmp_path, holder):
    out = tmp_path / "preset"
    pid = holder(out)
    theirs = tmp_path / ".preset.staging-theirs"  # the live writer's half-built folder
    theirs.mkdir()
    built = []
    with pytest.raises(FileExistsError, match=f"being written by another clzoo process \\(pid {pid} "):
        replace_folder(out, built.append)
    assert not built and theirs.is_dir() and not out.exists()


def test_a_dead_writers_lock_blocks_no_one(tmp_path, holder):
    out = tmp_path / "preset"
    os.kill(holder(out), signal.SIGKILL)
    _once_the_holder_is_gone(lambda: replace_folder(
        out, lambda staging: (staging / "a.json").write_text("{}")))
    assert (out / "a.json").read_text() == "{}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["preset"]  # the lock file went too


def test_the_lock_is_reentrant_in_one_process_and_removed_after(tmp_path):
    out = tmp_path / "report"
    with output_lock(out):
        replace_folder(out, lambda staging: (staging / "a.json").write_text("{}"))
        assert lock_path(out).is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]


def test_a_second_clzoo_eval_into_one_folder_is_refused_before_its_work(tiny_encoder, tmp_path,  # noqa: F811
                                                                       holder, capsys, monkeypatch):
    import clzoo.eval as E

    path, data = tiny_encoder
    out = tmp_path / "eval"
    pid = holder(out)
    monkeypatch.setattr(E, "evaluate", lambda *a, **k: pytest.fail("evaluated"))
    assert cli.main(["eval", str(path), "--data", data, "--metrics", "knn", "--output", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"being written by another clzoo process (pid {pid} " in err[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".eval.lock"]  # the holder's, nothing else


def test_a_second_export_to_one_path_is_refused_and_a_killed_ones_staging_dropped(tmp_path, holder):
    import keras

    from clzoo.export.serving import export_encoder

    inputs = keras.Input((8, 8, 3))
    model = keras.Model(inputs, keras.layers.GlobalAveragePooling2D()(inputs))
    out = tmp_path / "model.tflite"
    pid = holder(out)
    with pytest.raises(FileExistsError, match=f"\\(pid {pid} "):
        export_encoder(model, out, "litert")
    assert not out.exists()
    os.kill(pid, signal.SIGKILL)
    (tmp_path / ".model.tflite.staging-killed").mkdir()  # what a killed export leaves
    _once_the_holder_is_gone(lambda: export_encoder(model, out, "litert"))
    assert out.is_file() and out.stat().st_size > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.tflite"]


def test_a_link_to_the_output_and_the_output_share_one_lock(tmp_path, holder):
    real = tmp_path / "report"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    pid = holder(real)
    with pytest.raises(FileExistsError, match=f"\\(pid {pid} "):
        with output_lock(tmp_path / "link"):
            pass


@pytest.mark.parametrize("planted", ["link", "dangling_link", "folder", "hard_link"])
def test_a_lock_name_that_is_not_a_regular_file_is_refused_and_never_written_through(tmp_path, planted):
    victim = tmp_path / "notes.txt"
    victim.write_text("my notes\n")
    lock = lock_path(tmp_path / "out")
    if planted == "folder":
        lock.mkdir()
    elif planted == "hard_link":
        os.link(victim, lock)
    else:
        lock.symlink_to(victim if planted == "link" else tmp_path / "created_by_the_lock")
    with pytest.raises(FileExistsError, match="is not a lock file of clzoo's"):
        replace_folder(tmp_path / "out", lambda staging: None)
    assert victim.read_text() == "my notes\n" and not (tmp_path / "created_by_the_lock").exists()
    assert not (tmp_path / "out").exists()


def test_a_parent_that_takes_no_lock_file_writes_unlocked_with_a_warning(tmp_path, monkeypatch):
    import errno

    import clzoo.file_lock as file_lock

    real_open = os.open

    def read_only(path, *args, **kwargs):
        if str(path).endswith(".lock"):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(file_lock.os, "open", read_only)
    with pytest.warns(UserWarning, match="no writer lock here"):
        replace_folder(tmp_path / "out", lambda staging: (staging / "a.json").write_text("{}"))
    assert (tmp_path / "out" / "a.json").is_file()


def test_a_refused_writer_leaves_no_folder_it_created(tmp_path, holder):
    out = tmp_path / "new" / "deeper" / "report"
    holder(out)  # creates tmp_path/new/deeper for its lock file, as a first writer would
    with pytest.raises(FileExistsError):
        with output_lock(out):
            pass
    fresh = tmp_path / "fresh" / "report"
    with output_lock(fresh):
        assert fresh.parent.is_dir()
    assert not (tmp_path / "fresh").exists()  # nothing written: the folders it made are gone


def test_push_dry_run_checks_its_folder_under_the_lock(tmp_path, holder, monkeypatch):
    from clzoo.presets import publish

    out = tmp_path / "preset"
    pid = holder(out)
    monkeypatch.setattr(publish, "build_preset", lambda *a, **k: pytest.fail("built"))
    with pytest.raises(FileExistsError, match=f"\\(pid {pid} "):
        publish.push_preset(tmp_path / "run", "hf://me/tiny", dry_run=out)


@pytest.mark.parametrize("command", ["embed", "show-views", "transfer"])
def test_every_single_output_writer_is_refused_while_another_holds_it(tiny_encoder, tmp_path,  # noqa: F811
                                                                      holder, capsys, command):
    """Issue 58 item 3: embed, show-views and transfer --output take the one-writer lock (before,
    two embeds into one file both said "wrote" and one split was lost)."""
    path, data = tiny_encoder
    out = tmp_path / {"embed": "e.npz", "show-views": "views.png", "transfer": "t.json"}[command]
    pid = holder(out)
    model = {"embed": [str(path)], "show-views": [], "transfer": ["sincere_airbench_cifar10"]}[command]
    assert cli.main([command, *model, "--data", data, "--output", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"being written by another clzoo process (pid {pid} " in err[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == [f".{out.name}.lock"]
