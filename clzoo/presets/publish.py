"""Publish a run as a preset on the Hugging Face Hub (`clzoo push`)."""

import tempfile
from pathlib import Path

from clzoo.presets.format import PresetError, build_preset


def push_preset(run_dir, handle, dry_run=None, private=False, name=None, overwrite=False):
    """Build a preset from `run_dir` and upload it to `hf://owner/repo`.

    Args:
        run_dir: a `clzoo train` run folder (optionally with `eval/`).
        handle: `"hf://owner/repo"`.
        dry_run: a folder: write there exactly what would be uploaded and
            stop before any network call. Defaults to `None` (upload).
        private: create the repository private.
        name: preset name in the card. Defaults to the repository name.
        overwrite: with `dry_run`, replace the preset files in a non-empty
            folder. Defaults to `False` (refused).

    Returns:
        The dry-run folder, or the URL of the uploaded commit.

    Raises:
        PresetError: bad handle, incomplete run, or the Hub could not be
            reached (with the underlying error).
        FileExistsError: `dry_run` is a non-empty folder (or a file) and
            `overwrite` is False.
    """
    handle = str(handle)
    if not handle.startswith("hf://") or handle.count("/") != 3:
        raise PresetError(f"`handle` must look like hf://owner/repo. Received: {handle!r}")
    repo = handle[len("hf://"):]
    name = name or repo.split("/")[1]
    if dry_run is not None:
        from clzoo.file_lock import output_lock
        from clzoo.files import check_output

        with output_lock(dry_run):  # the check under the lock: a finished preset is never replaced
            out = check_output(dry_run, overwrite, folder=True, what="--dry-run folder")
            return build_preset(run_dir, out, name=name, handle=handle)
    try:
        from huggingface_hub import HfApi
    except ImportError as error:
        raise ImportError("Publishing needs huggingface_hub: pip install \"clzoo[hub]\"") from error
    with tempfile.TemporaryDirectory(prefix="clzoo-preset-") as tmp:
        folder = build_preset(run_dir, Path(tmp) / name, name=name, handle=handle)
        api = HfApi()
        try:
            api.create_repo(repo, exist_ok=True, private=private)
            info = api.upload_folder(repo_id=repo, folder_path=str(folder),
                                     commit_message=f"clzoo preset {name}")
        except Exception as error:  # network errors come in many types
            raise PresetError(
                f"Could not upload to the Hugging Face Hub ({handle}): {type(error).__name__}: "
                f"{error}. Check the network and `huggingface-cli login`; "
                "`--dry-run DIR` writes the folder without uploading."
            ) from error
    return getattr(info, "commit_url", str(info))
