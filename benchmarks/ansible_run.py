"""Time gpu_node.yml runs into debootstrapped Debian 12 root file systems and print a table.

Uses the same cached golden root file system and stand-in packages as tests/ansible (so it needs
root, debootstrap and gnupg). Prints timings; never judges them.

    uv run python benchmarks/ansible_run.py                  # every variant, cached rootfs
    uv run python benchmarks/ansible_run.py --fresh-rootfs   # also time debootstrap
    uv run python benchmarks/ansible_run.py --variant efa_p5
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from clusterfab.provision.runner import run_playbook

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "ansible"))

# The test bed lives with the tests, which own it.
import chroot_standins as standins
import chroot_testbed
import chroot_variants as variants


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--variant",
        action="append",
        choices=sorted(variants.VARIANTS),
        help="variant to run (repeatable; default: all)",
    )
    parser.add_argument(
        "--fresh-rootfs",
        action="store_true",
        help="build the golden root file system in a temporary cache to time debootstrap",
    )
    args = parser.parse_args(argv)
    console = Console()

    reason = chroot_testbed.missing_prerequisites()
    if reason is not None:
        console.print(f"[red]cannot run:[/] {reason}")
        return 2

    with tempfile.TemporaryDirectory(prefix="clusterfab-bench-") as scratch:
        work = Path(scratch)
        cache = work / "cache" if args.fresh_rootfs else chroot_testbed.cache_dir()
        cache.mkdir(parents=True, exist_ok=True)
        golden = chroot_testbed.golden_rootfs(cache)
        started = time.monotonic()
        built = standins.build_standins(work / "standins", os.uname().release)
        standins_s = time.monotonic() - started

        table = Table(title="gpu_node.yml into a chroot (seconds)")
        for column in ("variant", "copy rootfs", "first run", "changed", "second run", "changed"):
            table.add_column(column, justify="left" if column == "variant" else "right")
        failed = False
        for name in args.variant or sorted(variants.VARIANTS):
            started = time.monotonic()
            rootfs = chroot_testbed.clone_rootfs(golden.path, work / f"rootfs-{name}")
            standins.install_into(built, rootfs)
            copy_s = time.monotonic() - started
            inventory = {
                "all": {
                    "hosts": {
                        "node": {
                            "ansible_host": str(rootfs),
                            "ansible_connection": "community.general.chroot",
                            "ansible_python_interpreter": "/usr/bin/python3",
                        }
                    }
                }
            }
            extravars = variants.VARIANTS[name](built)
            playbook = chroot_testbed.PLAYBOOKS_DIR / "gpu_node.yml"
            first = run_playbook(playbook, inventory=inventory, extravars=extravars)
            second = run_playbook(playbook, inventory=inventory, extravars=extravars)
            failed = failed or not (first.succeeded and second.succeeded)
            table.add_row(
                name,
                f"{copy_s:.1f}",
                f"{first.duration_s:.1f}" + ("" if first.succeeded else " FAILED"),
                str(first.changed),
                f"{second.duration_s:.1f}" + ("" if second.succeeded else " FAILED"),
                str(second.changed),
            )
            shutil.rmtree(rootfs, ignore_errors=True)

        debootstrap = "cached" if golden.build_seconds is None else f"{golden.build_seconds:.1f} s"
        console.print(f"debootstrap (golden rootfs): {debootstrap}")
        console.print(f"stand-in repositories and tarballs: {standins_s:.1f} s")
        console.print(table)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
