"""Multi-file outputs replaced as a set (issue 44, item 3): `clzoo.files.replace_folder` and the
preset folders built through it."""

import os
import subprocess
import sys

import pytest

from clzoo.files import replace_folder


def _writer(files):
    def build(staging):
        for name, text in files.items():
            (staging / name).write_text(text)
    return build


def test_a_folder_is_replaced_as_a_whole(tmp_path):
    out = tmp_path / "preset"
    replace_folder(out, _writer({"a.json": "A1", "b.h5": "B1"}))
    replace_folder(out, _writer({"a.json": "A2", "b.h5": "B2"}))
    assert {p.name: p.read_text() for p in out.iterdir()} == {"a.json": "A2", "b.h5": "B2"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["preset"]  # no staging left


def test_os_clutter_never_blocks_a_replacement_and_the_user_files_do(tmp_path):
    out = tmp_path / "preset"
    replace_folder(out, _writer({"a.json": "A1"}))
    (out / ".DS_Store").write_bytes(b"\0")
    replace_folder(out, _writer({"a.json": "A2"}))
    assert {p.name: p.read_text() for p in out.iterdir()} == {"a.json": "A2"}
    (out / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="notes.txt"):
        replace_folder(out, _writer({"a.json": "A3"}))
    assert (out / "notes.txt").read_text() == "mine" and (out / "a.json").read_text() == "A2"


def test_a_failed_build_leaves_the_old_folder_untouched(tmp_path):
    out = tmp_path / "preset"
    replace_folder(out, _writer({"a.json": "A1", "b.h5": "B1"}))

    def half_then_full_disk(staging):
        (staging / "a.json").write_text("A2")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError):
        replace_folder(out, half_then_full_disk)
    assert {p.name: p.read_text() for p in out.iterdir()} == {"a.json": "A1", "b.h5": "B1"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["preset"]


def test_the_users_files_are_never_deleted(tmp_path):
    out = tmp_path / "preset"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="notes.txt"):
        replace_folder(out, _writer({"a.json": "A"}))
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


@pytest.mark.large
def test_kill_9_mid_build_then_the_next_call_cleans_up(tmp_path):
    out = tmp_path / "preset"
    replace_folder(out, _writer({"a.json": "A1"}))
    script = ("import os, sys; from pathlib import Path; from clzoo.files import replace_folder\n"
              "def build(staging):\n"
              "    (staging / 'a.json').write_text('A2')\n"
              "    os.kill(os.getpid(), 9)\n"
              f"replace_folder(Path({str(out)!r}), build)\n")
    killed = subprocess.run([sys.executable, "-c", script], capture_output=True)
    assert killed.returncode == -9
    assert any(p.name.startswith(".preset.staging-") for p in tmp_path.iterdir())
    assert (out / "a.json").read_text() == "A1"  # the reader still sees the old folder
    replace_folder(out, _writer({"a.json": "A3"}))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["preset"]
    assert (out / "a.json").read_text() == "A3"


def test_killed_between_the_two_renames_the_old_folder_comes_back(tmp_path):
    out = tmp_path / "preset"
    replace_folder(out, _writer({"a.json": "A1"}))
    aside = tmp_path / ".preset.replaced-x1"
    os.replace(out, aside)  # what a writer killed after its first rename leaves
    (tmp_path / ".preset.staging-x1").mkdir()
    with pytest.raises(RuntimeError):
        replace_folder(out, lambda staging: (_ for _ in ()).throw(RuntimeError("stop")))
    assert (out / "a.json").read_text() == "A1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["preset"]


def test_the_new_folder_gets_the_usual_mode(tmp_path):
    out = replace_folder(tmp_path / "preset", _writer({"a.json": "A"}))
    mask = os.umask(0)
    os.umask(mask)
    assert oct(out.stat().st_mode & 0o777) == oct(0o777 & ~mask)


def test_a_legal_255_byte_output_name_is_written(tmp_path):
    """Issue 72 item 23: a 255-character `--output` failed on its temporary name ("File name too
    long: .<name>.XXXXXXXX.tmp.npz"); the lock and staging names were as long."""
    from clzoo.file_lock import lock_path, output_lock
    from clzoo.files import atomic_write_text, replace_folder

    name = "é" * 100 + "x" * 51 + ".npz"  # 255 bytes in UTF-8
    assert len(name.encode()) == 255
    with output_lock(tmp_path / name):
        assert len(lock_path(tmp_path / name).name.encode()) <= 255
        atomic_write_text(tmp_path / name, "data")
    assert (tmp_path / name).read_text() == "data"
    folder = "f" * 255
    replace_folder(tmp_path / folder, lambda staging: (staging / "a.txt").write_text("1"))
    assert (tmp_path / folder / "a.txt").read_text() == "1"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([name, folder])


def test_a_text_naming_a_non_utf8_file_name_is_written_with_its_escape(tmp_path):
    """Second hostile pass: `clzoo eval` of data below a folder named in bytes that are not UTF-8
    computed every metric, then lost them all writing report.md."""
    import os

    from clzoo.files import atomic_write_text

    name = os.fsdecode(b"par\xff")  # Python keeps the byte as a lone surrogate
    atomic_write_text(tmp_path / "report.md", f"data: {name}/digits\n")
    assert (tmp_path / "report.md").read_text(encoding="utf-8") == "data: par\\udcff/digits\n"
