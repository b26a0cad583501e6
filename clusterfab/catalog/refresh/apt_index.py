"""Check the catalog's recorded apt packages (packages.yaml) against a repository's own index.

An apt repository publishes every package it carries in its `Packages` file (deb822 stanzas with Package,
Version, Architecture, Depends, Conflicts, Provides). A recorded package is confirmed when a stanza has
its exact name and version, and every relation the catalog records for it names a package the stanza's
own field names too. The chroot tests build their stand-in repositories from the records, so this is
what keeps them honest after a vendor moves on.

    python scripts/refresh_node_software.py apt cuda Packages.gz   # a downloaded or fetched index
"""

from __future__ import annotations

import gzip
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from clusterfab.catalog.models import AptPackage

RELATIONS = ("depends", "conflicts", "provides")


@dataclass(frozen=True, slots=True)
class Stanza:
    """One package version of an index, with the names its relation fields mention."""

    name: str
    version: str
    architecture: str
    relations: dict[str, frozenset[str]]


def read_index(path: Path) -> str:
    """A Packages file's text (gzip-compressed or not)."""
    data = path.read_bytes()
    return gzip.decompress(data).decode() if data[:2] == b"\x1f\x8b" else data.decode()


def parse_packages(text: str) -> Iterator[Stanza]:
    """The stanzas of a Packages file; continuation lines (leading blank) belong to the field above."""
    for block in text.split("\n\n"):
        fields: dict[str, str] = {}
        key = ""
        for line in block.splitlines():
            if line[:1] in (" ", "\t") and key:
                fields[key] += " " + line.strip()
            elif ":" in line:
                key, _, value = line.partition(":")
                key = key.strip().lower()
                fields[key] = value.strip()
        if "package" in fields and "version" in fields:
            yield Stanza(
                name=fields["package"],
                version=fields["version"],
                architecture=fields.get("architecture", ""),
                relations={r: frozenset(_names(fields.get(r, ""))) for r in RELATIONS},
            )


def _names(field: str) -> Iterator[str]:
    """Package names of a relation field: "a (>= 1) | b, c:any" -> a, b, c."""
    for alternative in field.replace("|", ",").split(","):
        name = alternative.strip().split(" ")[0].split(":")[0]
        if name:
            yield name


def check_records(records: Iterable[AptPackage], stanzas: Sequence[Stanza]) -> list[str]:
    """What the index contradicts in the records: a version it does not carry, a relation it lacks."""
    problems: list[str] = []
    by_key = {(s.name, s.version): s for s in stanzas}
    for record in records:
        if record.version is None:
            if not any(s.name == record.name for s in stanzas):
                problems.append(f"{record.name}: not in the index at all")
            continue
        stanza = by_key.get((record.name, record.version))
        if stanza is None:
            carried = sorted({s.version for s in stanzas if s.name == record.name})
            problems.append(
                f"{record.name} {record.version}: not in the index"
                + (f" (it carries {', '.join(carried[-5:])})" if carried else " (no version of it)")
            )
            continue
        for relation in RELATIONS:
            for recorded in getattr(record, relation):
                name = recorded.split(" ")[0]
                if name not in stanza.relations[relation]:
                    problems.append(f"{record.name} {record.version}: the index has no {relation} on {name}")
    return problems
