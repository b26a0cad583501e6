"""Refresh or check the node software the catalog records, from the vendors' own indexes.

    uv run python scripts/refresh_node_software.py nccl-builds [--dry-run]
        which NCCL releases exist per CUDA major, from PyPI's nvidia-nccl-cu<major> wheels
        (rewrites clusterfab/catalog/data/nccl_builds.yaml)
    uv run python scripts/refresh_node_software.py apt REPOSITORY INDEX
        check packages.yaml's records of REPOSITORY (cuda, docker, ...) against that repository's
        Packages file INDEX (a path; fetch it from <repository url>/Packages.gz); exit 1 on a mismatch
    uv run python scripts/refresh_node_software.py tags
        check that the GitHub release tags the catalog pins (nccl-tests, GDRCopy) exist (git ls-remote)

Needs network access to PyPI / GitHub; the apt check reads a downloaded index, since NVIDIA's and
Google's repositories are not reachable from every build machine.

The tests hold the catalog to the vendors' answers recorded under tests/fixtures/ (pypi/, apt/, github/,
prices/), not to this script's output: after a refresh, record the answer it read there too (the JSON of
https://pypi.org/pypi/nvidia-nccl-cu<major>/json, the Packages stanzas of the pinned versions) with its
URL and date in that folder's SOURCES.md.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from clusterfab.catalog import load_catalog
from clusterfab.catalog.refresh import nccl_builds
from clusterfab.catalog.refresh.apt_index import check_records, parse_packages, read_index

# The GitHub repository whose v<version> tag each tarball-built node package is.
TAGGED = {
    "nccl-tests": "https://github.com/NVIDIA/nccl-tests",
    "gdrcopy": "https://github.com/NVIDIA/gdrcopy",
}


def _apt(repository: str, index: Path) -> int:
    catalog = load_catalog()
    if repository not in catalog.apt_repositories:
        print(f"unknown repository {repository}; recorded: {', '.join(catalog.apt_repositories)}")
        return 2
    records = [p for p in catalog.apt_packages if p.repository == repository]
    problems = check_records(records, list(parse_packages(read_index(index))))
    for problem in problems:
        print(problem)
    print(f"{len(records)} records of {repository} checked, {len(problems)} problem(s)")
    return 1 if problems else 0


def _tags() -> int:
    catalog = load_catalog()
    missing = 0
    for name, url in TAGGED.items():
        version = catalog.node_packages[name].version
        tag = f"refs/tags/v{version}"
        listed = subprocess.run(
            ["git", "ls-remote", "--tags", url, tag], capture_output=True, text=True, check=False
        )
        if listed.returncode != 0:
            print(f"{name}: could not read {url}: {listed.stderr.strip()}")
            return 2
        found = tag in listed.stdout
        missing += not found
        print(f"{name} v{version}: {'tagged' if found else 'NO SUCH TAG'} at {url}")
    return 1 if missing else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    builds = sub.add_parser("nccl-builds")
    builds.add_argument("--dry-run", action="store_true")
    apt = sub.add_parser("apt")
    apt.add_argument("repository")
    apt.add_argument("index", type=Path)
    sub.add_parser("tags")
    args = parser.parse_args(argv)
    if args.command == "nccl-builds":
        return nccl_builds.main(["--dry-run"] if args.dry_run else [])
    if args.command == "apt":
        return _apt(args.repository, args.index)
    return _tags()


if __name__ == "__main__":
    sys.exit(main())
