"""A debootstrapped Debian 13 "trixie" root file system with Slurm 24.11, MariaDB and MUNGE installed,
cached between sessions (modelled on ``tests/ansible/chroot_testbed.py``).

The golden copy lives under ``<cache>/rootfs-trixie-slurm-<key>``, keyed by suite, package list,
mirror and ``GOLDEN_FORMAT``; a lock file keeps two pytest processes from building it twice. Every lab
runs on an overlay over it, so runs never see each other's changes and the golden copy is never written.
Package maintainer scripts start nothing (``policy-rc.d`` exits 101).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
CACHE_DIR_ENV = "CLUSTERFAB_TEST_CACHE_DIR"
MIRROR_ENV = "CLUSTERFAB_DEBIAN_MIRROR"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
SUITE = "trixie"
# Package names as trixie's main/binary-amd64/Packages index spells them (checked 2026-11-25 and, sackd
# included, 2026-11-26: all at 24.11.5-4+deb13u1; munge 0.5.16-1.1~deb13u1; mariadb-server
# 1:11.8.9+ds-0+deb13u1).
PACKAGES = (
    "slurmctld",
    "slurmd",
    "slurmdbd",
    "slurm-client",
    "slurm-wlm-basic-plugins",
    "slurm-wlm-mysql-plugin",
    "munge",
    "mariadb-server",
    # What the Slurm roles install besides (test_slurm_roles applies them offline: the roles find every
    # package already at its version), and what Ansible needs in the chroot: python3-apt for the apt
    # module, systemd for `systemctl enable`, curl for the key program.
    "sackd",
    "python3-boto3",
    "python3-apt",
    "systemd",
    "curl",
    # The lab's own needs: `ip link set lo up` in the lab's network namespace, `timeout` in prologs.
    "iproute2",
    "procps",
    # The metadata guard's rules (the metadata_guard role installs it on every host).
    "nftables",
)
# The Slurm release the lab must run: Debian 13's. The harness refuses any other (see SlurmLab).
EXPECTED_SLURM_SERIES = "24.11"
# Bump when golden preparation changes, so stale caches are rebuilt instead of reused.
GOLDEN_FORMAT = 1
_MARKER = ".clusterfab-golden"
_PREREQUISITES = (
    ("debootstrap", "debootstrap"),
    ("unshare", "util-linux"),
    ("nsenter", "util-linux"),
    ("chroot", "coreutils"),
)


def cache_dir() -> Path:
    """Where golden root file systems are cached (``$CLUSTERFAB_TEST_CACHE_DIR`` overrides)."""
    configured = os.environ.get(CACHE_DIR_ENV)
    path = Path(configured) if configured else REPO_ROOT / ".cache" / "slurm-tests"
    path.mkdir(parents=True, exist_ok=True)
    return path


def missing_prerequisites() -> str | None:
    """Why the Slurm lab cannot run here, or None when it can."""
    if os.geteuid() != 0:
        return "the Slurm lab needs root (debootstrap, chroot, namespaces, mounts); run the tests as root"
    missing = sorted({package for tool, package in _PREREQUISITES if shutil.which(tool) is None})
    if missing:
        return f"missing tools; install them with: apt-get install -y {' '.join(missing)}"
    if "overlay" not in Path("/proc/filesystems").read_text():
        return "the kernel has no overlay file system (the lab runs on an overlay over the golden copy)"
    return None


@dataclass(frozen=True)
class GoldenRootfs:
    """A prepared root file system; ``build_seconds`` is None when it came from the cache."""

    path: Path
    slurm_version: str
    build_seconds: float | None


def golden_rootfs(cache: Path | None = None) -> GoldenRootfs:
    """Return the cached golden root file system, building it first if needed."""
    cache = cache or cache_dir()
    mirror = os.environ.get(MIRROR_ENV, DEFAULT_MIRROR)
    key = hashlib.sha256(json.dumps([SUITE, PACKAGES, GOLDEN_FORMAT, mirror]).encode()).hexdigest()
    path = cache / f"rootfs-{SUITE}-slurm-{key[:12]}"
    with (cache / f"{path.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (path / _MARKER).exists():
            marker = json.loads((path / _MARKER).read_text())
            return GoldenRootfs(path=path, slurm_version=marker["slurm_version"], build_seconds=None)
        building = cache / f"{path.name}.building"
        shutil.rmtree(building, ignore_errors=True)
        started = time.monotonic()
        _run(["debootstrap", "--variant=minbase", SUITE, str(building), mirror], timeout=1200)
        _prepare(building)
        version = installed_slurm_version(building)
        marker = {"suite": SUITE, "packages": PACKAGES, "mirror": mirror, "slurm_version": version}
        (building / _MARKER).write_text(json.dumps(marker))
        shutil.rmtree(path, ignore_errors=True)
        building.rename(path)
        return GoldenRootfs(path=path, slurm_version=version, build_seconds=time.monotonic() - started)


def installed_slurm_version(root: Path) -> str:
    """The version slurmctld itself reports (``slurmctld -V`` prints ``slurm-wlm 24.11.5``)."""
    out = _run(["chroot", str(root), "slurmctld", "-V"])
    match = re.search(r"(\d+\.\d+\.\d+)", out)
    if match is None:
        raise RuntimeError(f"cannot read the Slurm version from {out!r}")
    return match.group(1)


def _prepare(root: Path) -> None:
    # Package maintainer scripts must not start daemons on the build machine.
    policy = root / "usr/sbin/policy-rc.d"
    policy.write_text("#!/bin/sh\n# clusterfab tests: never start services in the chroot.\nexit 101\n")
    policy.chmod(0o755)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive", "LC_ALL": "C"}
    # /proc for the maintainer scripts (mariadb-server's postinst reads it); unmounted whatever happens.
    proc = root / "proc"
    _run(["mount", "-t", "proc", "proc", str(proc)])
    try:
        _run(["chroot", str(root), "apt-get", "update", "-qq"], env=env, timeout=600)
        _run(
            ["chroot", str(root), "apt-get", "install", "-y", "-qq", "--no-install-recommends", *PACKAGES],
            env=env,
            timeout=1200,
        )
    finally:
        subprocess.run(["umount", "-l", str(proc)], check=False)
    # The .deb cache and the indexes are 100+ MB that no lab needs.
    _run(["chroot", str(root), "apt-get", "clean"])
    shutil.rmtree(root / "var/lib/apt/lists", ignore_errors=True)
    (root / "var/lib/apt/lists/partial").mkdir(parents=True)


def _run(argv: list[str], *, env: dict[str, str] | None = None, timeout: float = 120) -> str:
    completed = subprocess.run(argv, capture_output=True, text=True, check=False, env=env, timeout=timeout)
    if completed.returncode != 0:
        raise RuntimeError(
            f"{' '.join(argv)} exited {completed.returncode}:\n"
            f"{completed.stdout[-3000:]}\n{completed.stderr[-3000:]}"
        )
    return completed.stdout
