"""Lint and type checks are part of the suite, so CI enforces them on every change.

They carry the `quality` marker: `pytest -m "not quality"` is the fast loop while editing; the full
run (what CI runs) includes them."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.quality


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, check=False)


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(REPO / ".venv" / "bin")) or shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed; it is a dev dependency (uv sync installs it)")
    return found


def test_ruff_lint_is_clean() -> None:
    proc = _run(_tool("ruff"), "check", ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_format_is_clean() -> None:
    proc = _run(_tool("ruff"), "format", "--check", ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_strict_is_clean() -> None:
    proc = _run(sys.executable, "-m", "mypy")
    assert proc.returncode == 0, proc.stdout + proc.stderr
