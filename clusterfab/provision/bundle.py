"""The playbook bundle nodes boot from: `playbooks/` as a reproducible tar.gz, named by its digest.

The stack uploads the bundle to the cluster bucket under `bundles/<sha256>.tar.gz` and the boot script
names that digest, so a node always runs the playbooks of the stack revision that launched it, checks
what it downloaded, and a change to any role gives a new digest (and a new launch template version).
The archive is byte-for-byte reproducible: same files in, same digest out, on any machine.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

BUNDLE_PREFIX = "bundles/"
_SKIP_DIRS = {"__pycache__", ".pytest_cache"}
_SKIP_SUFFIXES = (".pyc", ".retry")


@dataclass(frozen=True)
class Bundle:
    path: Path
    sha256: str

    @property
    def key(self) -> str:
        """The object key in the cluster bucket."""
        return f"{BUNDLE_PREFIX}{self.sha256}.tar.gz"


def _members(root: Path) -> list[Path]:
    files = []
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if any(part in _SKIP_DIRS for part in relative.parts) or path.name.endswith(_SKIP_SUFFIXES):
            continue
        if path.is_file() and not path.is_symlink():
            files.append(path)
    return files


def bundle_bytes(playbooks: Path) -> bytes:
    """The tar.gz of a playbooks directory, with fixed owners, times and order."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in _members(playbooks):
            info = tarfile.TarInfo(path.relative_to(playbooks).as_posix())
            info.size = path.stat().st_size
            info.mode = 0o755 if path.stat().st_mode & 0o111 else 0o644
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            tar.addfile(info, io.BytesIO(path.read_bytes()))
    compressed = io.BytesIO()
    with gzip.GzipFile(fileobj=compressed, mode="wb", mtime=0, compresslevel=9) as gz:
        gz.write(raw.getvalue())
    return compressed.getvalue()


def bundle_digest(playbooks: Path) -> str:
    """The sha256 the bundle of `playbooks` has (what a stack updated from them names)."""
    return hashlib.sha256(bundle_bytes(playbooks)).hexdigest()


def build_bundle(playbooks: Path, cache_dir: Path) -> Bundle:
    """Write the bundle of `playbooks` under `cache_dir` (once per content) and return it."""
    data = bundle_bytes(playbooks)
    digest = hashlib.sha256(data).hexdigest()
    cache_dir.mkdir(parents=True, exist_ok=True)
    path = cache_dir / f"{digest}.tar.gz"
    if not path.exists():
        # A temporary name of its own: two plans of one project (parallel CI jobs, test workers) may
        # write the same bundle at once, and each rename must find its own file.
        descriptor, temporary = tempfile.mkstemp(dir=cache_dir, prefix=f".{digest}.", suffix=".partial")
        with os.fdopen(descriptor, "wb") as out:
            out.write(data)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    return Bundle(path=path, sha256=digest)
