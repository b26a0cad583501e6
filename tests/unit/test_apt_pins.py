"""Every apt package version the catalog pins, held to the vendors' own Packages indexes.

The chroot lab builds its stand-in repositories from packages.yaml, so a wrong version there agrees with
itself on both sides. Here each pin (packages.yaml, the monitoring host's packages in monitoring.yaml and
the Slurm packages of slurm.yaml) is looked up in verbatim excerpts of the repositories' `Packages`
indexes (tests/fixtures/apt/SOURCES.md): the stanza with its exact name, version and architecture must be
there, and every Depends / Conflicts / Provides entry the catalog records must be one of the stanza's.

Repositories that could not be read when the excerpts were recorded (NVIDIA's CUDA and container toolkit
repositories, Docker's, Google's Artifact Registry and Grafana's) are listed below with each pin written
out, so a pin there that changes or appears fails too, until its stanza is recorded.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from clusterfab.catalog import load_catalog
from tests.conftest import REPO

CATALOG = load_catalog()
APT = REPO / "tests/fixtures/apt"

# The catalog's repositories and the recorded excerpts of their amd64 indexes (suite / component).
EXCERPTS = {
    "ubuntu": ("ubuntu-noble-updates-restricted", "ubuntu-noble-updates-multiverse"),
    "ubuntu-universe": ("ubuntu-noble-universe",),
    "ubuntu-updates-universe": ("ubuntu-noble-updates-universe",),
}
# Architectures the recorded indexes answer for; an arm64 index (ports.ubuntu.com) was not readable.
RECORDED_ARCHITECTURES = {"amd64", "all"}
RELATIONS = ("depends", "conflicts", "provides")

# (repository, package, version) pinned where no index could be read: see tests/fixtures/apt/SOURCES.md.
UNRECORDED = {
    ("cuda", "nvidia-open", "580.95.05-1"),
    ("cuda", "cuda-drivers", "580.95.05-1"),
    ("cuda", "nvidia-kernel-common-580", "580.95.05-0ubuntu1"),
    ("cuda", "nvidia-fabricmanager", "580.95.05-1"),
    ("cuda", "libnvidia-nscq", "580.95.05-1"),
    ("cuda", "nvidia-imex", "580.95.05-1"),
    ("cuda", "nvlsm", "2025.06.10-1"),
    ("cuda", "cuda-toolkit-13-0", "13.0.2-1"),
    ("cuda", "libnccl2", "2.28.9-1+cuda13.0"),
    ("cuda", "libnccl-dev", "2.28.9-1+cuda13.0"),
    ("cuda", "datacenter-gpu-manager-4-core", "1:4.4.2-1"),
    ("cuda", "datacenter-gpu-manager-4-cuda13", "1:4.4.2-1"),
    ("cuda", "datacenter-gpu-manager-exporter", "4.5.0-1"),
    ("cuda", "nvidia-gds-13-0", "13.0.2-1"),
    ("cuda", "nvidia-fs", "2.26.6-1"),
    ("gpudirect-gib-apt", "nccl-gib", "1.1.0"),
    ("gpudirect-tcpxo-apt", "dmabuf-import-helper", "1.1"),
    ("artifact-registry-transport", "apt-transport-artifact-registry", None),
    ("docker", "containerd.io", "1.7.28-1~ubuntu.24.04~noble"),
    ("docker", "docker-ce-cli", "5:28.5.2-1~ubuntu.24.04~noble"),
    ("docker", "docker-ce", "5:28.5.2-1~ubuntu.24.04~noble"),
    ("nvidia-container-toolkit", "libnvidia-container1", "1.19.1-1"),
    ("nvidia-container-toolkit", "libnvidia-container-tools", "1.19.1-1"),
    ("nvidia-container-toolkit", "nvidia-container-toolkit-base", "1.19.1-1"),
    ("nvidia-container-toolkit", "nvidia-container-toolkit", "1.19.1-1"),
    ("grafana", "grafana", "11.6.0"),
}


@dataclass(frozen=True)
class Pin:
    """One package version something installs: where from, and the relations the catalog records."""

    where: str
    repository: str
    name: str
    version: str | None
    architectures: tuple[str, ...]
    relations: dict[str, tuple[str, ...]]
    unconfirmed_architectures: bool


def stanzas(excerpt: str) -> list[dict[str, str]]:
    """The deb822 stanzas of a recorded index: field name (lower case) -> value, continuation lines joined."""
    found = []
    for block in (APT / f"{excerpt}-amd64-Packages-excerpt").read_text().split("\n\n"):
        fields: dict[str, str] = {}
        last = ""
        for line in block.splitlines():
            if line.startswith((" ", "\t")):
                fields[last] += " " + line.strip()
            else:
                last, _, value = line.partition(": ")
                last = last.lower()
                fields[last] = value
        if fields:
            found.append(fields)
    return found


def _entries(field: str) -> set[str]:
    return {entry.strip() for entry in field.split(",") if entry.strip()}


def pins() -> Iterator[Pin]:
    for p in CATALOG.apt_packages:
        yield Pin(
            "packages.yaml",
            p.repository,
            p.name,
            p.version,
            tuple(p.architectures),
            {r: tuple(getattr(p, r)) for r in RELATIONS},
            "architectures" in p.unconfirmed,
        )
    # The monitoring host installs Prometheus and Alertmanager from noble-updates, Grafana from Grafana's.
    for m in CATALOG.monitoring.packages:
        repository = "grafana" if m.package == "grafana" else "ubuntu-updates-universe"
        yield Pin("monitoring.yaml", repository, m.package, m.version, ("amd64",), {}, False)
    release = CATALOG.slurm.release
    slurm = release.packages
    for name in dict.fromkeys([*slurm.controller, *slurm.node, *slurm.login, slurm.development]):
        yield Pin("slurm.yaml", "ubuntu-universe", name, release.package_version, ("amd64",), {}, False)


PINS = list(pins())


def _id(pin: Pin) -> str:
    return f"{pin.where}:{pin.name}"


@pytest.mark.parametrize("pin", [p for p in PINS if p.repository in EXCERPTS], ids=_id)
def test_a_pinned_version_is_in_the_vendors_index(pin: Pin) -> None:
    index = [s for excerpt in EXCERPTS[pin.repository] for s in stanzas(excerpt)]
    carried = [s for s in index if (s["package"], s["version"]) == (pin.name, pin.version)]
    versions = sorted(s["version"] for s in index if s["package"] == pin.name)
    assert carried, f"{pin.name}={pin.version} is not in the recorded index (it carries {versions})"
    architectures = {s["architecture"] for s in carried}
    for architecture in pin.architectures:
        if architecture in RECORDED_ARCHITECTURES:
            assert architecture in architectures, (pin.name, architecture)
        else:
            # arm64 is only claimed with the record saying no index showed it.
            assert pin.unconfirmed_architectures, (pin.name, architecture)
    for relation, entries in pin.relations.items():
        for stanza in carried:
            assert set(entries) <= _entries(stanza.get(relation, "")), (pin.name, relation)


def test_every_pin_is_recorded_or_declared_unreadable() -> None:
    unrecorded = {(p.repository, p.name, p.version) for p in PINS if p.repository not in EXCERPTS}
    assert unrecorded == UNRECORDED


def test_the_recorded_excerpts_read_as_written() -> None:
    # Values copied from the excerpts, so that a parser misreading them cannot agree with itself.
    node_exporter = [
        s for s in stanzas("ubuntu-noble-updates-universe") if s["package"] == "prometheus-node-exporter"
    ]
    assert [(s["version"], s["architecture"], s["depends"]) for s in node_exporter] == [
        ("1.7.0-1ubuntu0.3", "amd64", "adduser, libc6 (>= 2.34)")
    ]
    assert node_exporter[0]["sha256"] == "428751e5584dfc98e2709e0169eb1d7c1a3c439f890fae53e49d278a47cd6056"
    fabric_manager = [
        s for s in stanzas("ubuntu-noble-updates-multiverse") if s["package"] == "nvidia-fabricmanager-580"
    ]
    assert [(s["version"], s["depends"]) for s in fabric_manager] == [
        ("580.178.04-0ubuntu0.24.04.1", "nvidia-kernel-common-580-server-580.178.04")
    ]
    assert len(PINS) == 37 + 3 + 6
