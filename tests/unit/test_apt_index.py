"""The apt index check of scripts/refresh_node_software.py: a recorded package is confirmed by a stanza
with its exact name and version and the relations the catalog records (the fixture is an excerpt in the
CUDA repository's Packages format, trimmed by hand)."""

from __future__ import annotations

import gzip
from pathlib import Path

from clusterfab.catalog import load_catalog
from clusterfab.catalog.models import AptPackage
from clusterfab.catalog.refresh.apt_index import check_records, parse_packages, read_index
from tests.conftest import REPO

EXCERPT = (REPO / "tests/fixtures/apt/cuda-Packages-excerpt").read_text()
CATALOG = load_catalog()


def _record(name: str) -> AptPackage:
    record = CATALOG.apt_package(name)
    assert record is not None
    return record


def test_stanzas_with_continuation_lines_and_alternatives() -> None:
    stanzas = list(parse_packages(EXCERPT))
    assert [(s.name, s.version) for s in stanzas] == [
        ("libnccl-dev", "2.28.9-1+cuda13.0"),
        ("libnccl2", "2.28.9-1+cuda13.0"),
        ("libnccl2", "2.27.7-1+cuda13.0"),
        ("nvidia-gds-13-0", "13.0.2-1"),
    ]
    assert stanzas[3].relations["depends"] == {"libcufile-13-0", "gds-tools-13-0", "nvidia-fs"}


def test_the_recorded_nccl_and_gds_records_are_confirmed() -> None:
    records = [_record(n) for n in ("libnccl2", "libnccl-dev", "nvidia-gds-13-0")]
    assert check_records(records, list(parse_packages(EXCERPT))) == []


def test_a_version_the_index_lacks_and_a_relation_it_lacks_are_reported() -> None:
    old = _record("libnccl2").model_copy(update={"version": "2.27.5-1+cuda13.0"})
    wrong = _record("libnccl-dev").model_copy(update={"conflicts": ["libnccl1"]})
    assert check_records([old, wrong], list(parse_packages(EXCERPT))) == [
        "libnccl2 2.27.5-1+cuda13.0: not in the index (it carries 2.27.7-1+cuda13.0, 2.28.9-1+cuda13.0)",
        "libnccl-dev 2.28.9-1+cuda13.0: the index has no conflicts on libnccl1",
    ]


def test_gzip_indexes_read_as_plain_ones(tmp_path: Path) -> None:
    packed = tmp_path / "Packages.gz"
    packed.write_bytes(gzip.compress(EXCERPT.encode()))
    assert read_index(packed) == EXCERPT
