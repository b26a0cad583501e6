"""A debootstrapped Debian root file system to run the roles into, cached between sessions.

The golden root file system is built once (about 40 s) under the cache directory and copied for
every run, so runs never see each other's changes. Nothing here knows about the roles; the stand-in
packages live in ``chroot_standins.py``.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
PLAYBOOKS_DIR = REPO_ROOT / "playbooks"
CACHE_DIR_ENV = "CLUSTERFAB_TEST_CACHE_DIR"
MIRROR_ENV = "CLUSTERFAB_DEBIAN_MIRROR"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
SUITE = "bookworm"
# python3-apt for the apt modules, systemd so `systemctl enable` can work offline in the chroot, nftables
# for the metadata guard (the first role of gpu_node.yml; cloud images carry it).
INCLUDE = ("python3", "python3-apt", "systemd", "nftables")
# Bump when golden preparation changes, so stale caches are rebuilt instead of reused.
GOLDEN_FORMAT = 1
_MARKER = ".clusterfab-golden"
_PREREQUISITES = (
    ("debootstrap", "debootstrap"),
    ("gpg", "gnupg"),
    ("dpkg-deb", "dpkg"),
    ("chroot", "coreutils"),
)


def cache_dir() -> Path:
    """Where golden root file systems are cached (``$CLUSTERFAB_TEST_CACHE_DIR`` overrides)."""
    configured = os.environ.get(CACHE_DIR_ENV)
    path = Path(configured) if configured else REPO_ROOT / ".cache" / "ansible-tests"
    path.mkdir(parents=True, exist_ok=True)
    return path


def missing_prerequisites() -> str | None:
    """Why the chroot tests cannot run here, or None when they can."""
    if os.geteuid() != 0:
        return "chroot runs need root (debootstrap and the chroot connection); run the tests as root"
    missing = [package for tool, package in _PREREQUISITES if shutil.which(tool) is None]
    if missing:
        return f"missing tools; install them with: apt-get install -y {' '.join(missing)}"
    return None


@dataclass(frozen=True)
class GoldenRootfs:
    """A prepared root file system; ``build_seconds`` is None when it came from the cache."""

    path: Path
    build_seconds: float | None


def golden_rootfs(cache: Path | None = None) -> GoldenRootfs:
    """Return the cached golden root file system, building it first if needed."""
    cache = cache or cache_dir()
    mirror = os.environ.get(MIRROR_ENV, DEFAULT_MIRROR)
    key = hashlib.sha256(json.dumps([SUITE, INCLUDE, GOLDEN_FORMAT, mirror]).encode()).hexdigest()
    path = cache / f"rootfs-{SUITE}-{key[:12]}"
    # pytest-xdist workers or a benchmark running beside the tests must not build it twice.
    with (cache / f"{path.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (path / _MARKER).exists():
            return GoldenRootfs(path=path, build_seconds=None)
        building = cache / f"{path.name}.building"
        shutil.rmtree(building, ignore_errors=True)
        started = time.monotonic()
        _run(
            [
                "debootstrap",
                "--variant=minbase",
                f"--include={','.join(INCLUDE)}",
                SUITE,
                str(building),
                mirror,
            ]
        )
        _prepare(building)
        (building / _MARKER).write_text(json.dumps({"suite": SUITE, "include": INCLUDE}))
        shutil.rmtree(path, ignore_errors=True)
        building.rename(path)
        return GoldenRootfs(path=path, build_seconds=time.monotonic() - started)


def clone_rootfs(golden: Path, dest: Path) -> Path:
    """Copy the golden root file system to ``dest`` (which must not exist) and return it."""
    copy_rootfs(golden, dest)
    (dest / _MARKER).unlink()
    return dest


def copy_rootfs(source: Path, dest: Path) -> Path:
    """Copy any root file system (a configured node's, say) to ``dest``, which must not exist."""
    _run(["cp", "-a", "--reflink=auto", str(source), str(dest)])
    return dest


def _prepare(root: Path) -> None:
    # Package maintainer scripts must not start daemons on the build machine.
    policy = root / "usr/sbin/policy-rc.d"
    policy.write_text("#!/bin/sh\n# clusterfab tests: never start services in the chroot.\nexit 101\n")
    policy.chmod(0o755)
    # The .deb cache is 40 MB that every clone would copy for nothing.
    _run(["chroot", str(root), "apt-get", "clean"])


def _run(argv: list[str]) -> None:
    completed = subprocess.run(argv, capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        raise RuntimeError(
            f"{' '.join(argv)} exited {completed.returncode}:\n"
            f"{completed.stdout[-3000:]}\n{completed.stderr[-3000:]}"
        )
