"""Shared test setup: hermetic environment, repository paths, golden files."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((REPO / "blueprints" / "examples").glob("*.yaml"))
BAD_FIXTURES = REPO / "tests" / "fixtures" / "blueprints" / "bad"
GOLDEN = REPO / "tests" / "golden"

_LEAKY_PREFIXES = ("AWS_", "GOOGLE_", "CLOUDSDK_", "PULUMI_", "GCP_")


@pytest.fixture(scope="session")
def _cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(autouse=True)
def _hermetic(monkeypatch: pytest.MonkeyPatch, _cache_dir: Path) -> Iterator[None]:
    """No test may depend on (or touch) the developer's cloud credentials, Pulumi state or caches."""
    for name in list(os.environ):
        if name.startswith(_LEAKY_PREFIXES):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("CLUSTERFAB_CACHE_DIR", str(_cache_dir))
    # Output is laid out for the terminal's width; tests see a fixed one unless they set their own.
    monkeypatch.setenv("COLUMNS", "120")
    return


@pytest.fixture
def today() -> dt.date:
    """The fixed date prices are judged stale against (tests.factories.TODAY)."""
    from tests.factories import TODAY

    return TODAY


def assert_golden(name: str, actual: str) -> None:
    """Compare with tests/golden/<name>; regenerate on purpose with UPDATE_GOLDEN=1."""
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual)
        return
    assert path.exists(), f"golden file {path} is missing; create it with UPDATE_GOLDEN=1 and review it"
    assert actual == path.read_text(), (
        f"{path} differs; if the change is intended, rerun with UPDATE_GOLDEN=1"
    )
