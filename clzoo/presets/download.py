"""Fetch a preset from the Hugging Face Hub: only the files the preset format names, under a ceiling.

The Hub says how large each file is before anything is fetched, so a repository whose
weights (or anything else) exceed the format's size caps or the user's ceiling is refused
without downloading a byte of it; files the format does not name are never fetched.
"""

import os
from pathlib import Path

from clzoo.presets.format import MAX_BYTES, PresetError

CEILING_VARIABLE = "CLZOO_MAX_PRESET_DOWNLOAD_BYTES"
DEFAULT_CEILING = 2 << 30  # 2 GiB: a ViT-B is 0.35 GB; the weights' own cap is 8 GiB


def download_ceiling():
    """Most bytes one preset download may fetch: `$CLZOO_MAX_PRESET_DOWNLOAD_BYTES`, else 2 GiB.

    Returns:
        int, bytes.

    Raises:
        PresetError: the variable is set to something other than a positive integer.

    Example:

    >>> import os
    >>> from clzoo.presets.download import download_ceiling
    >>> os.environ["CLZOO_MAX_PRESET_DOWNLOAD_BYTES"] = "1000000"
    >>> download_ceiling()
    1000000
    >>> del os.environ["CLZOO_MAX_PRESET_DOWNLOAD_BYTES"]
    >>> download_ceiling() == 2 << 30
    True
    """
    value = os.environ.get(CEILING_VARIABLE)
    if value is None or value == "":
        return DEFAULT_CEILING
    if not (value.strip().isascii() and value.strip().isdecimal()) or int(value) <= 0:
        raise PresetError(f"{CEILING_VARIABLE} must be a positive number of bytes, got {value!r}")
    return int(value)


def download(repo, revision):
    """Local snapshot folder of the preset files of Hub repo `repo` at `revision` (None: main).

    Raises:
        ImportError: huggingface_hub is not installed.
        PresetError: a file larger than its cap or all of them larger than the ceiling
            (before downloading), or a failed download (network, offline cache miss,
            missing repo or revision).
    """
    try:
        import huggingface_hub as hub
    except ImportError as error:
        raise ImportError("hf:// presets need huggingface_hub: pip install \"clzoo[hub]\"") from error
    handle = f"hf://{repo}" + (f"@{revision}" if revision else "")
    files = sorted(MAX_BYTES)
    from huggingface_hub import constants  # a submodule, not loaded by `import huggingface_hub`

    checked = _check_sizes(hub, constants.HF_HUB_OFFLINE, repo, revision, files, handle)
    try:  # the commit whose sizes were checked: a push to the branch meanwhile is not fetched
        return Path(hub.snapshot_download(repo_id=repo, revision=checked or revision,
                                          allow_patterns=files))
    except Exception as error:  # network, offline cache miss, missing repo or revision
        raise PresetError(_failed(handle, error, constants.HF_HUB_OFFLINE)) from error


def _failed(handle, error, offline):
    """One line on a failed snapshot: unreachable Hub (and not cached), or what the Hub said."""
    text = " ".join(str(error).split())
    cause = error.__cause__ or error.__context__
    unreachable = ("ConnectError" in text or "internet connection" in text
                   or _is_network_error(cause))
    if offline:
        return (f"{handle} is not in the Hugging Face Hub cache (HF_HUB_OFFLINE=1 reads only the "
                "cache); unset HF_HUB_OFFLINE on a machine online to download it once")
    if unreachable:
        return (f"Could not reach the Hugging Face Hub for {handle}, and it is not in the cache "
                f"({type(error).__name__}); connect to the network, or give a local preset folder "
                "or a built-in name (clzoo presets)")
    return f"Could not get preset {handle} from the Hugging Face Hub: {type(error).__name__}: {text[:300]}"


def _is_network_error(error):
    """A transport failure (no network, DNS, refused, timeout) of requests, httpx or the Hub."""
    names = {cls.__name__ for cls in type(error).__mro__} if error is not None else set()
    return bool(names & {"ConnectError", "ConnectionError", "NetworkError", "TransportError",
                         "TimeoutException", "Timeout", "OfflineModeIsEnabled"})


def _check_sizes(hub, offline, repo, revision, files, handle):
    """Refuse, before downloading, files over their cap or a total over the ceiling; returns the
    commit hash whose file sizes were checked (None when the Hub was not asked)."""
    ceiling = download_ceiling()
    if offline:
        return None  # only the cache is read; its files are checked on disk against the caps
    try:
        info = hub.HfApi().model_info(repo, revision=revision, files_metadata=True)
    except Exception as error:  # no network, no repo (huggingface_hub 2.x: httpx errors, not OSError)
        if isinstance(error, OSError) or _is_network_error(error):
            return None  # snapshot_download serves the cache or says why
        raise
    sizes = {sibling.rfilename: sibling.size for sibling in (info.siblings or [])
             if sibling.rfilename in files and getattr(sibling, "size", None) is not None}
    for name, size in sizes.items():
        if name in MAX_BYTES and size > MAX_BYTES[name]:
            raise PresetError(f"{handle}: {name} is {size:,} bytes, more than the {MAX_BYTES[name]:,} "
                              "a preset's file may be; nothing was downloaded")
    total = sum(sizes.values())
    if total > ceiling:
        raise PresetError(f"{handle} is {total:,} bytes, more than the download ceiling of "
                          f"{ceiling:,} bytes; nothing was downloaded. Set {CEILING_VARIABLE} "
                          "higher to fetch it")
    return getattr(info, "sha", None)
