"""The controller's own MariaDB Connector/C in the Debian 13 lab.

The lab's slurmdbd is Debian 13's, linked against Debian 13's libmariadb3 (Connector/C 3.4). The clusters'
controllers run Ubuntu 24.04, whose libmariadb3 is Connector/C 3.3, and the two check a server's
certificate differently (3.4 checks its name by default, 3.3 only when asked). Where that matters, the lab
runs slurmdbd on Ubuntu's library itself: the package from Ubuntu's archive, pinned by its digest (the
catalog's source S-UBUNTU-LIBMARIADB records both), unpacked into the lab and put first on slurmdbd's
library path. The package is fetched once into the lab's cache.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
import urllib.request
from pathlib import Path

from tests.slurm.rootfs import cache_dir

NOBLE_LIBMARIADB3 = (
    "http://archive.ubuntu.com/ubuntu/pool/universe/m/mariadb/libmariadb3_10.11.14-0ubuntu0.24.04.1_amd64.deb"
)
NOBLE_LIBMARIADB3_SHA256 = "1608427381a08eefd7e5b1c4cf5b4f360cbb7296f489989c2453ec26989a9fa5"
LIBRARY_DIR = "usr/lib/x86_64-linux-gnu"
"""Where the package puts libmariadb.so.3 (and its plugins under libmariadb3/plugin)."""


class UnavailableError(Exception):
    """The package cannot be fetched here (no route to Ubuntu's archive)."""


def noble_libmariadb3(cache: Path | None = None) -> Path:
    """The unpacked package (its root; the library is under LIBRARY_DIR), fetched and checked once."""
    cache = cache or cache_dir()
    root = cache / f"noble-libmariadb3-{NOBLE_LIBMARIADB3_SHA256[:12]}"
    if (root / LIBRARY_DIR / "libmariadb.so.3").exists():
        return root
    try:
        with urllib.request.urlopen(NOBLE_LIBMARIADB3, timeout=60) as response:
            package = response.read()
    except OSError as error:
        raise UnavailableError(f"{NOBLE_LIBMARIADB3}: {error}") from error
    digest = hashlib.sha256(package).hexdigest()
    if digest != NOBLE_LIBMARIADB3_SHA256:
        raise AssertionError(
            f"{NOBLE_LIBMARIADB3} has sha256 {digest}, not the recorded {NOBLE_LIBMARIADB3_SHA256}"
        )
    with tempfile.TemporaryDirectory(dir=cache) as scratch:
        deb = Path(scratch) / "libmariadb3.deb"
        deb.write_bytes(package)
        unpacked = Path(scratch) / "root"
        subprocess.run(["dpkg-deb", "-x", str(deb), str(unpacked)], check=True, capture_output=True)
        shutil.rmtree(root, ignore_errors=True)
        unpacked.rename(root)
    return root
