"""The compiled catalog cache (clusterfab/catalog/query.py): a pickle, and unpickling runs code, so a cache
file is loaded only when it and its folder are the user's own and nobody else may write them.

Each refused cache here is a pickle whose loading would write a marker file: the marker's absence shows
it was never unpickled, and the same pickle in a good place writes it (the control)."""

from __future__ import annotations

import dataclasses
import os
import pickle
from pathlib import Path

import pytest

from clusterfab.catalog import query
from clusterfab.catalog.query import Catalog, catalog_digest, parse_catalog
from tests.labs import require

OTHER_UID = 54321
"""Somebody else (no such user needs to exist: the owner is a number)."""


class _Payload:
    """Pickled as a call of exec: loading it writes `marker`, as a hostile cache file's code would run."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return exec, (f"open({str(self.marker)!r}, 'w').write('unpickled')",)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A cache folder as clusterfab makes it: the user's own, 0700."""
    made = tmp_path / "cache"
    made.mkdir(mode=0o700)
    made.chmod(0o700)
    return made


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    """Where a loaded payload writes; nothing else does."""
    return tmp_path / "marker"


def _write(path: Path, value: object, mode: int = 0o600) -> Path:
    path.write_bytes(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
    path.chmod(mode)
    return path


def _cache_file(folder: Path) -> Path:
    """The name load_catalog reads in `folder`."""
    return folder / f"catalog-{catalog_digest()[:32]}.pickle"


def _foreign(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make `path` another user's: for real as root; else this process stops being its owner."""
    if os.geteuid() == 0:
        os.chown(path, OTHER_UID, -1)
    else:
        monkeypatch.setattr(query.os, "getuid", lambda: OTHER_UID)


# ------------------------------------------------------------------------------------------ the control
def test_a_good_cache_is_loaded(folder: Path) -> None:
    """The user's own file, 0600, in the user's own 0700 folder: loaded as it is (a catalog with no prices
    tells it apart from one parsed from the data files)."""
    cached = dataclasses.replace(parse_catalog(), prices=())
    path = _write(_cache_file(folder), cached)
    loaded = query._cached(path)
    assert loaded is not None
    assert (loaded.prices, loaded.version) == ((), cached.version)


def test_load_catalog_uses_a_good_cache(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLUSTERFAB_CACHE_DIR", str(folder))
    _write(_cache_file(folder), dataclasses.replace(parse_catalog(), prices=()))
    assert query.load_catalog.__wrapped__().prices == ()


def test_the_payload_runs_when_unpickled_from_a_good_place(folder: Path, marker: Path) -> None:
    """The control for every refusal below: this pickle does write its marker when it is loaded."""
    path = _write(_cache_file(folder), _Payload(marker))
    assert query._cached(path) is None  # not a catalog: dropped after loading
    assert marker.read_text() == "unpickled"


# ------------------------------------------------------------------------------------------ refusals
@pytest.mark.parametrize(
    "mode", [0o620, 0o602, 0o666], ids=["group-writable", "world-writable", "everyone-writable"]
)
def test_a_cache_file_others_may_write_is_not_unpickled(folder: Path, marker: Path, mode: int) -> None:
    path = _write(_cache_file(folder), _Payload(marker), mode)
    assert query._cached(path) is None
    assert not marker.exists()


def test_a_cache_file_of_another_user_is_not_unpickled(
    folder: Path, marker: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(_cache_file(folder), _Payload(marker))
    _foreign(path, monkeypatch)
    assert query._cached(path) is None
    assert not marker.exists()


@pytest.mark.parametrize("mode", [0o770, 0o707, 0o777], ids=["group", "world", "everyone"])
def test_a_cache_in_a_folder_others_may_write_is_not_unpickled(folder: Path, marker: Path, mode: int) -> None:
    """The file is the user's own and 0600, but anyone who may write the folder could have swapped it for
    a link to a file of the user's whose content they chose, or put it there in the first place."""
    path = _write(_cache_file(folder), _Payload(marker))
    folder.chmod(mode)
    assert query._cached(path) is None
    assert not marker.exists()


def test_a_cache_in_another_users_folder_is_not_unpickled(tmp_path: Path, marker: Path) -> None:
    # Only root can give a folder to another user; CI runs as root (the Slurm labs need it).
    require(os.geteuid() == 0, "needs root to give the folder to another user: run as root (CI does)")
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    path = _write(_cache_file(theirs), _Payload(marker))
    os.chown(theirs, OTHER_UID, -1)
    assert query._cached(path) is None
    assert not marker.exists()


def test_a_cache_that_is_a_link_is_not_followed(folder: Path, tmp_path: Path, marker: Path) -> None:
    """A link to a file of the user's own (a download, say) whose content someone else chose."""
    elsewhere = _write(tmp_path / "downloaded.bin", _Payload(marker))
    link = _cache_file(folder)
    link.symlink_to(elsewhere)
    assert query._cached(link) is None
    assert not marker.exists()


def test_load_catalog_parses_the_data_files_instead_of_a_refused_cache(
    folder: Path, marker: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLUSTERFAB_CACHE_DIR", str(folder))
    _write(_cache_file(folder), _Payload(marker), 0o666)
    loaded = query.load_catalog.__wrapped__()
    assert isinstance(loaded, Catalog)
    assert loaded == parse_catalog()
    assert not marker.exists()
