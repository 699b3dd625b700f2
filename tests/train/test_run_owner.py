"""A run folder has one owner and keeps what it finished (issue 44, items 1-2): a second writer is
refused naming the first, a folder with the user's files is never written into, a refused run
leaves nothing behind, and deleting a finished run's checkpoint or recipe never lets a resume
retrain over it or continue with another recipe."""

import subprocess
import sys

import pytest
import yaml

from clzoo.train import load_recipe, train
from clzoo.train import runner as runner_module
from clzoo.train.recipe import RecipeError
from tests.train.test_resume import tiny_recipe
from tests.train.tiny_data import write_tiny_digits


@pytest.fixture
def recipe_file(tmp_path):
    recipe = tiny_recipe(write_tiny_digits(tmp_path / "data", train=64, test=16))
    recipe["training"].update(epochs=1, checkpoint_every_steps=None)
    recipe["eval"]["report"] = False
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(recipe))
    return path


@pytest.mark.large
def test_a_second_writer_is_refused_naming_the_first(recipe_file, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from clzoo.train.run_lock import acquire; "
         f"acquire({str(run)!r}); print('held', flush=True); time.sleep(120)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(FileExistsError, match=f"another clzoo process \\(pid {holder.pid} on "):
            train(load_recipe(recipe_file), run, verbose=0)
        assert sorted(p.name for p in run.iterdir()) == ["run.lock"]  # nothing of ours written
    finally:
        holder.kill()
        holder.wait()
    # The kernel drops a dead process's lock: the folder is free again, no stale-lock cleanup needed.
    assert train(load_recipe(recipe_file), run, verbose=0).steps == 2
    assert not (run / "run.lock").exists()  # a finished run keeps no lock file


def test_a_folder_holding_the_users_files_is_never_written(recipe_file, tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    mine = {"recipe.yaml": "# my commented recipe\n", "notes.txt": "notes\n",
            ".notes.tmp1": "my temporary file\n"}
    for name, text in mine.items():
        (folder / name).write_text(text)
    with pytest.raises(FileExistsError, match="not a clzoo run's \\(.notes.tmp1, notes.txt, recipe.yaml\\)"):
        train(load_recipe(recipe_file), folder, verbose=0)
    assert {p.name: p.read_text() for p in folder.iterdir()} == mine


def test_a_run_refused_after_the_lock_leaves_nothing(recipe_file, tmp_path, monkeypatch):
    def unreadable(source, stream=False, view_size=None):
        raise RecipeError([f"data = {source.spec!r}: unreadable"])

    monkeypatch.setattr(runner_module, "load_data", unreadable)
    with pytest.raises(RecipeError):
        train(load_recipe(recipe_file), tmp_path / "new", verbose=0)
    assert not (tmp_path / "new").exists()


@pytest.mark.large
def test_finished_is_recorded_not_inferred(recipe_file, tmp_path):
    run = tmp_path / "run"
    first = train(load_recipe(recipe_file), run, verbose=0)
    stamps = {name: (run / name).stat().st_mtime_ns for name in ("encoder.keras", "metrics.json")}
    (run / "checkpoint.keras").unlink()  # to save space
    again = train(load_recipe(recipe_file), run, verbose=0, resume=True)
    assert again == first and not (run / "checkpoint.keras").exists()  # nothing retrained
    assert {name: (run / name).stat().st_mtime_ns for name in stamps} == stamps
    (run / "metrics.json").unlink()  # now only recipe.sha256 says which recipe the run is
    (run / "recipe.yaml").unlink()
    with pytest.raises(ValueError, match="recipe.yaml is missing"):
        train(load_recipe(recipe_file, ["loss.name=SupConLoss"]), run, verbose=0, resume=True)


@pytest.mark.large
def test_run_folders_from_before_the_stamp_and_os_files_are_not_foreign(recipe_file, tmp_path):
    run = tmp_path / "run"
    first = train(load_recipe(recipe_file), run, verbose=0)
    (run / "recipe.sha256").unlink()  # a folder written before clzoo stamped its recipe
    (run / "eval_fine").mkdir()  # the user's own report beside the run
    assert train(load_recipe(recipe_file), run, verbose=0, resume=True) == first
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / ".DS_Store").write_text("")
    assert train(load_recipe(recipe_file), fresh, verbose=0).steps == 2


def test_a_run_owns_its_eval_report_so_a_concurrent_eval_cannot_take_it(recipe_file, tmp_path):
    from clzoo.file_lock import lock_path

    run = tmp_path / "run"
    run.mkdir()
    holder = subprocess.Popen(  # another process writing RUN/eval (a `clzoo eval RUN`), as a bare flock
        [sys.executable, "-c", "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR | "
         "os.O_CREAT); fcntl.flock(fd, fcntl.LOCK_EX); os.write(fd, b'pid 1 on evalhost'); "
         "print('held', flush=True); time.sleep(120)", str(lock_path(run / "eval"))],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(FileExistsError, match="eval is being written by another clzoo process "
                                                  "\\(pid 1 on evalhost\\)"):
            train(load_recipe(recipe_file), run, verbose=0)
        assert sorted(p.name for p in run.iterdir()) == [".eval.lock"]  # the holder's only
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.large
def test_a_resume_with_no_step_left_finishes_the_run_and_says_so(recipe_file, tmp_path, capsys):
    from clzoo import cli

    run = tmp_path / "run"
    train(load_recipe(recipe_file), run, verbose=0)
    (run / "metrics.json").unlink()  # killed after its last checkpoint, before its report
    assert cli.main(["train", "--resume", str(run)]) == 0
    assert "no steps left to train" in capsys.readouterr().out
    assert (run / "metrics.json").is_file()


def test_the_lock_file_goes_with_its_writer_and_a_stale_opener_is_refused(tmp_path):
    import os

    from clzoo.train import run_lock

    run = tmp_path / "run"
    with run_lock.owned(run, keep_if=lambda: True):
        assert (run / "run.lock").is_file()
        stale = os.open(run / "run.lock", os.O_RDWR)  # opened before the writer ends
    assert not (run / "run.lock").exists() and run.is_dir()
    try:  # the old inode is free now, but a second writer never takes a removed file for the lock
        with run_lock.owned(run, keep_if=lambda: True):
            import fcntl
            fcntl.flock(stale, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the orphan: lockable, and no lock
            with pytest.raises(FileExistsError, match="another clzoo process"):
                run_lock.acquire(run)
    finally:
        os.close(stale)
