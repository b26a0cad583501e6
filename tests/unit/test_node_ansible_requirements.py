"""Nodes install ansible-core from the bundle's hashed requirements, at the versions uv.lock resolved.

uv.lock is the record of what PyPI served this project (versions and every distribution's sha256); the
node requirements must name the same releases with hashes taken from it, so a hash that PyPI never
published, or a release the test suite never ran the playbooks with, fails here.
"""

from __future__ import annotations

import re
import tomllib

from clusterfab.catalog import load_catalog
from tests.conftest import REPO

REQUIREMENTS = REPO / "playbooks" / "requirements" / "ansible-core.txt"
LINE = re.compile(r"^([a-z0-9._-]+)==([^ ;\\]+)")


def requirements() -> dict[str, tuple[str, set[str]]]:
    """name -> (version, sha256 hashes) of every requirement in the file."""
    found: dict[str, tuple[str, set[str]]] = {}
    current = ""
    for line in REQUIREMENTS.read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        match = LINE.match(line)
        if match:
            current = match.group(1)
            found[current] = (match.group(2), set())
            continue
        hashed = re.fullmatch(r"\s+--hash=sha256:([0-9a-f]{64})( \\)?", line)
        assert hashed, f"unexpected line: {line!r}"
        found[current][1].add(hashed.group(1))
    return found


def locked() -> dict[tuple[str, str], dict[str, str]]:
    """(name, version) -> {sha256: distribution file name} as uv.lock records them from PyPI."""
    lock = tomllib.loads((REPO / "uv.lock").read_text())
    found: dict[tuple[str, str], dict[str, str]] = {}
    for package in lock["package"]:
        dists = [*package.get("wheels", []), *([package["sdist"]] if "sdist" in package else [])]
        found[package["name"], package.get("version", "")] = {
            d["hash"].removeprefix("sha256:"): d["url"].rsplit("/", 1)[-1] for d in dists if "hash" in d
        }
    return found


def _installable(wheel: str, machine: str) -> bool:
    """Whether pip on Ubuntu 24.04 (CPython 3.12, glibc 2.39) on `machine` can take this wheel."""
    if not wheel.endswith(".whl"):
        return False
    _, _, python, abi, platform = wheel.removesuffix(".whl").rsplit("-", 4)
    if platform == "any":
        return python.startswith("py3") or python == "cp312"
    python_ok = python == "cp312" or (abi == "abi3" and python.startswith("cp3") and int(python[3:]) <= 12)
    return python_ok and "manylinux" in platform and platform.endswith(machine)


def test_every_requirement_is_a_locked_release_with_its_published_hashes() -> None:
    lock = locked()
    found = requirements()
    assert found["ansible-core"][0] == load_catalog().node_packages["ansible-core"].version
    for name, (version, hashes) in found.items():
        assert (name, version) in lock, f"{name}=={version} is not the release uv.lock resolved"
        assert hashes == set(lock[name, version]), f"{name}=={version}: not the hashes uv.lock records"
        wheels = [lock[name, version][h] for h in hashes]
        for machine in ("x86_64", "aarch64"):  # AWS p5/p6 and GCP A3/A4 are x86_64; GB200 nodes aarch64
            assert any(_installable(w, machine) for w in wheels), f"{name}=={version}: no {machine} wheel"
    # ansible-core's own dependencies are all there (pip --require-hashes refuses an unpinned one).
    assert {"jinja2", "pyyaml", "cryptography", "packaging", "resolvelib", "markupsafe"} <= set(found)
