"""Issue 58 item 2: no clzoo command writes inside an installed package (a push --dry-run into
site-packages/clzoo/presets/builtin replaced a built-in preset, whose checksum then failed on every
later load); the refusal is one line naming the path, and nothing is created there."""

import sysconfig
from pathlib import Path

import pytest

import clzoo
from clzoo import cli
from clzoo.installed import installed_package_folders, refuse_installed_packages
from tests.test_cli import tiny_encoder  # noqa: F401  (fixture)

SITE = Path(sysconfig.get_paths()["purelib"])
PACKAGE = Path(clzoo.__file__).parent


def test_the_folders_are_site_packages_and_clzoo_itself(tmp_path):
    folders = installed_package_folders()
    assert SITE.resolve() in folders and PACKAGE.resolve() in folders
    refuse_installed_packages(tmp_path / "x.npz")  # anywhere else: fine
    link = tmp_path / "into_site"
    link.symlink_to(SITE)
    with pytest.raises(ValueError, match="inside the installed packages' folder"):
        refuse_installed_packages(link / "x.npz")  # a link is followed


def test_the_environments_scripts_and_a_user_site_not_yet_made_are_refused(tmp_path, monkeypatch):
    """Issue 72 items 19-20: `--output .venv/bin/activate` wrote over the venv's activate script,
    and a user site-packages that did not exist yet was created (Python then adds it to sys.path)."""
    import site

    from clzoo import installed

    assert Path(site.getusersitepackages()).resolve() in dict(installed.environment_folders())
    scripts = Path(sysconfig.get_paths()["scripts"])
    for target in (scripts / "activate", scripts / "python", scripts / "new.tflite"):
        with pytest.raises(ValueError, match="inside the Python environment's scripts folder"):
            refuse_installed_packages(target)
    user_site = tmp_path / "home" / ".local" / "lib" / "site-packages"  # not made yet
    monkeypatch.setattr(sysconfig, "get_paths", lambda scheme=None, _paths=sysconfig.get_paths: (
        {**_paths(), "purelib": str(user_site)} if scheme else _paths()))
    installed.environment_folders.cache_clear()
    try:
        with pytest.raises(ValueError, match="Python environment's packages folder"):
            refuse_installed_packages(user_site / "run")
        assert not user_site.exists()
        refuse_installed_packages(tmp_path / "home" / "runs" / "x")  # beside it: fine
    finally:
        monkeypatch.undo()
        installed.environment_folders.cache_clear()


def _refused(capsys, args, target):
    assert cli.main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "inside the installed packages' folder" in err[0], err
    assert not target.exists() and not target.with_name(f".{target.name}.lock").exists()


def test_writers_refuse_an_installed_package(tiny_encoder, capsys):  # noqa: F811
    path, data = tiny_encoder
    new = "clzoo_test_output_never_written"
    _refused(capsys, ["embed", str(path), "--data", data, "--output", str(SITE / f"{new}.npz")],
             SITE / f"{new}.npz")
    _refused(capsys, ["export", str(path), "--output", str(PACKAGE / new)], PACKAGE / new)
    _refused(capsys, ["show-views", "--data", data, "--output", str(SITE / f"{new}.png")],
             SITE / f"{new}.png")
    _refused(capsys, ["eval", str(path), "--data", data, "--output", str(PACKAGE / "presets" / new)],
             PACKAGE / "presets" / new)
    recipe = Path(__file__).parents[1] / "recipes" / "sincere_digits.yaml"
    _refused(capsys, ["train", str(recipe), "--data", data, "--output", str(SITE / new)], SITE / new)


def test_push_dry_run_refuses_the_builtin_presets(tmp_path, capsys):
    from clzoo.presets import push_preset

    builtin = PACKAGE / "presets" / "builtin" / "sincere_airbench_cifar10"
    before = sorted(p.name for p in builtin.iterdir())
    with pytest.raises(ValueError, match="inside the installed packages' folder"):
        push_preset(tmp_path / "no_run", "hf://o/r", dry_run=builtin, overwrite=True)
    assert sorted(p.name for p in builtin.iterdir()) == before


def test_build_preset_writes_a_builtin_preset_only_when_told(tmp_path, monkeypatch):
    """The maintainers' command (`build_preset(..., builtin=True)`, pretrained/README.md) may write
    into the built-in preset folder; without the flag it is refused with the hint."""
    import clzoo.installed as installed
    from clzoo.installed import writing_builtin_presets

    package = tmp_path / "site" / "clzoo"
    builtin = package / "presets" / "builtin"
    builtin.mkdir(parents=True)
    monkeypatch.setattr(installed, "BUILTIN_PRESETS", builtin)
    monkeypatch.setattr(installed, "installed_package_folders", lambda: [tmp_path / "site"])
    with pytest.raises(ValueError, match=r"build_preset\(\.\.\., builtin=True\)"):
        refuse_installed_packages(builtin / "new")
    with writing_builtin_presets():
        refuse_installed_packages(builtin / "new")
        with pytest.raises(ValueError, match="inside the installed packages' folder"):
            refuse_installed_packages(package / "models" / "x")  # only the preset folder opens
    with pytest.raises(ValueError):
        refuse_installed_packages(builtin / "new")


def test_eval_of_a_preset_folder_reports_in_the_working_directory(tmp_path, monkeypatch, capsys):
    """Review: the default report folder of a preset folder was inside it (the installed package
    for a built-in one), refused as an '--output' the user never gave."""
    monkeypatch.chdir(tmp_path)
    folder = PACKAGE / "presets" / "builtin" / "nscl_resnet20_cifar10"
    assert cli.main(["eval", str(folder), "--data", "digits", "--image-size", "32",
                     "--metrics", "knn"]) == 0
    assert (tmp_path / "eval-nscl_resnet20_cifar10" / "report.md").is_file()
    assert not (folder / "eval").exists()


def test_the_environments_own_top_level_is_refused(tiny_encoder, tmp_path, monkeypatch, capsys):  # noqa: F811
    """Issue 86 item 10: `--output .venv/pyvenv.cfg` was accepted (an output written over it unmakes
    the virtual environment), and so was `--output .venv`, the environment itself."""
    import sys

    prefix = Path(sys.prefix).resolve()
    for target in (prefix / "pyvenv.cfg", prefix / "lib64", prefix):
        with pytest.raises(ValueError, match="is the Python environment"):
            refuse_installed_packages(target)
    monkeypatch.chdir(prefix.parent)  # relative, as typed in the project: `--output .venv`
    with pytest.raises(ValueError, match=f"is the Python environment {prefix} itself"):
        refuse_installed_packages(prefix.name)
    refuse_installed_packages(prefix / "runs" / "x.npz")  # a `python -m venv .` project's own output
    config = prefix / "pyvenv.cfg"
    before = config.read_bytes() if config.exists() else None
    path, data = tiny_encoder
    cases = [(["export", str(path)], output) for output in (str(config), prefix.name)]
    cases += [(["eval", str(path), "--data", data], output) for output in (str(config), prefix.name)]
    for command, output in cases:
        assert cli.main([*command, "--output", output]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "is the Python environment" in err[0], (command, output, err)
    assert (config.read_bytes() if config.exists() else None) == before
    assert not list(prefix.glob("*.lock")) and not list(prefix.parent.glob(f".{prefix.name}.lock"))
