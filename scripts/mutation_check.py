"""Apply each recorded mutation to a copy of the repository and show that the tests meant to catch it fail.

A mutation (tests/mutations/*_mutations.py, `MUTATIONS`) is a wrong fact or a wrong render: one pure edit
of one file, and the pytest node ids (or files) that must fail with it. On a copy of the tracked files
this script first runs every named test unmutated (all must pass: a test that fails anyway catches
nothing), then applies each mutation alone, runs exactly its tests with this interpreter and requires
every one of them to fail, and puts the file back. A mutation the tests let through is a test that
agrees with a wrong answer: the script exits 1 and names it.

    uv run python scripts/mutation_check.py            # every mutation
    uv run python scripts/mutation_check.py -k nccl    # those whose name contains "nccl"
    uv run python scripts/mutation_check.py --list

CI runs it after the test suite (.ci/run). The render mutations' tests are Slurm labs: they need what
the labs need (docs/testing.md).
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
_FAILED = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.M)


@dataclass(frozen=True)
class Outcome:
    name: str
    caught: bool
    missed: tuple[str, ...]
    """The must-fail entries that passed."""
    seconds: float
    detail: str = ""


def mutations() -> Iterator[Any]:
    """Every mutation of every tests/mutations/*_mutations.py module, in module order."""
    sys.path.insert(0, str(REPO))
    package = importlib.import_module("tests.mutations")
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if info.name.endswith("_mutations"):
            yield from importlib.import_module(f"tests.mutations.{info.name}").MUTATIONS


def copy_tree(destination: Path) -> None:
    """The tracked and untracked-but-not-ignored files, as `git ls-files` lists them."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for raw in filter(None, listed):
        relative = raw.decode()
        source = REPO / relative
        if not source.is_file():
            continue  # deleted in the work tree
        target = destination / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    # The labs' caches (debootstrapped roots, unpacked tools) are reused, never rebuilt per mutation.
    cache = REPO / ".cache"
    if cache.is_dir():
        (destination / ".cache").symlink_to(cache)


def _pytest(tree: Path, targets: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "CLUSTERFAB_CACHE_DIR": "",  # the catalog is read from the (mutated) files, never a cache
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    env.pop("UPDATE_GOLDEN", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rfEs", "-p", "no:cacheprovider", *targets],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def baseline(chosen: list[Any], tree: Path, timeout: float) -> list[str]:
    """The must-fail tests run on the unmutated copy: every one must pass there, or a mutation "caught"
    by them proves nothing. What does not pass, as pytest reports it."""
    targets = list(dict.fromkeys(t for m in chosen for t in m.must_fail))
    done = _pytest(tree, targets, timeout)
    return re.findall(r"^(?:FAILED|ERROR|SKIPPED) .*$", done.stdout, re.M) or (
        [] if done.returncode == 0 else [done.stdout.strip().splitlines()[-1]]
    )


def run_one(mutation: Any, tree: Path, timeout: float) -> Outcome:
    path = tree / mutation.path
    original = path.read_text()
    start = time.monotonic()
    try:
        path.write_text(mutation.edit(original))
    except ValueError as exc:  # the edit no longer applies: the file moved on, the mutation must too
        return Outcome(mutation.name, False, tuple(mutation.must_fail), 0.0, f"edit does not apply: {exc}")
    try:
        done = _pytest(tree, list(mutation.must_fail), timeout)
        failed = _FAILED.findall(done.stdout)
        missed = tuple(
            target for target in mutation.must_fail if not any(f.startswith(target) for f in failed)
        )
        detail = "" if not missed else done.stdout.strip().splitlines()[-1]
    except subprocess.TimeoutExpired:
        missed, detail = tuple(mutation.must_fail), f"timed out after {timeout:.0f} s"
    finally:
        path.write_text(original)
    return Outcome(mutation.name, not missed, missed, time.monotonic() - start, detail)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-k", dest="select", help="only mutations whose name contains this")
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per mutation (default 1800)")
    args = parser.parse_args(argv)
    chosen = [m for m in mutations() if args.select is None or args.select in m.name]
    if args.list:
        for m in chosen:
            print(f"{m.name}: {m.path} -> {', '.join(m.must_fail)}")
        return 0
    if not chosen:
        print("no mutation selected", file=sys.stderr)
        return 2
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="clusterfab-mutations-") as tmp:
        tree = Path(tmp)
        copy_tree(tree)
        unsound = baseline(chosen, tree, args.timeout)
        if unsound:
            print("the tests do not all pass on the unmutated tree:", *unsound, sep="\n  ")
            return 1
        for mutation in chosen:
            outcome = run_one(mutation, tree, args.timeout)
            outcomes.append(outcome)
            verdict = "caught" if outcome.caught else "NOT CAUGHT"
            print(f"{verdict:>10}  {outcome.name} ({outcome.seconds:.0f} s)", flush=True)
            for target in outcome.missed:
                print(f"            passed: {target}", flush=True)
            if outcome.detail:
                print(f"            {outcome.detail}", flush=True)
    survived = [o.name for o in outcomes if not o.caught]
    print(f"{len(outcomes) - len(survived)} of {len(outcomes)} mutations caught")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
