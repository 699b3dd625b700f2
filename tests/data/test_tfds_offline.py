"""Issue 69 item 6: `--data tfds:cifar10` without a network took 3 min 40 s of retries and progress
bars, then an error cut off mid-word; refused at once when TFDS' host cannot be reached."""

import socket
import types

import pytest

from clzoo.data import tfds_splits


def _tfds(folder):
    return types.SimpleNamespace(builder=lambda name: types.SimpleNamespace(data_dir=str(folder)))


def _offline(*args, **kwargs):
    raise OSError(-2, "Name or service not known")


def test_an_unprepared_dataset_without_a_network_is_refused_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(socket, "create_connection", _offline)
    for key in ("https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(key, raising=False)
    with pytest.raises(ValueError, match=r"^tfds:cifar10 is not prepared in .* cannot reach "
                                         r"storage.googleapis.com to download it \(Name or service"):
        tfds_splits._refuse_a_download_offline(_tfds(tmp_path), "cifar10")


def test_a_prepared_dataset_or_a_proxy_skips_the_check(tmp_path, monkeypatch):
    monkeypatch.setattr(socket, "create_connection", _offline)
    (tmp_path / "dataset_info.json").write_text("{}")
    tfds_splits._refuse_a_download_offline(_tfds(tmp_path), "cifar10")  # prepared: read offline
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy:3128")
    tfds_splits._refuse_a_download_offline(_tfds(tmp_path / "none"), "cifar10")  # the proxy decides
