"""Shared test setup: hermetic environment, repository paths, golden files."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.labs import in_ci
from tests.timings import REPORTS, merge

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((REPO / "blueprints" / "examples").glob("*.yaml"))
PLANNED_EXAMPLES = EXAMPLES
"""The examples the Pulumi program plans: every one."""
BAD_FIXTURES = REPO / "tests" / "fixtures" / "blueprints" / "bad"
GOLDEN = REPO / "tests" / "golden"

_LEAKY_PREFIXES = ("AWS_", "GOOGLE_", "CLOUDSDK_", "PULUMI_", "GCP_")


NODE_RUNS = {"efa_node": "efa-node-run", "gib_node": "gib-node-run"}
"""Session fixtures that run a whole playbook (minutes each) -> the xdist group of every test using one:
a session fixture is computed once per worker, so its users must share a worker; the two runs' groups
go to different workers."""
SLOW_MARKS = ("slurm", "ansible", "quality")
"""Tests that run real daemons, playbooks or whole-tree linters: handed out first, so none starts last."""


def _node_runs(item: pytest.Item) -> set[str]:
    """The node-run groups an item needs: through its fixtures, or a fixture it looks up by a name it is
    parametrized with (request.getfixturevalue)."""
    names = set(getattr(item, "fixturenames", ()))
    callspec = getattr(item, "callspec", None)
    if callspec is not None:
        names |= {value for value in callspec.params.values() if isinstance(value, str)}
    return {NODE_RUNS[name] for name in names if name in NODE_RUNS}


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups (--dist loadgroup)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """One xdist group per module (a module's lab or fixtures start once), except that the tests using a
    playbook run form that run's group; the slow groups go first."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            runs = _node_runs(item)
            if len(runs) > 1:
                raise pytest.UsageError(f"{item.nodeid} needs {sorted(runs)}: one playbook run per test")
            group = runs.pop() if runs else item.nodeid.split("::")[0]
            item.add_marker(pytest.mark.xdist_group(group))
    items.sort(key=lambda item: not any(item.get_closest_marker(m) for m in SLOW_MARKS))


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: the controller prints
        workeroutput["clusterfab_timings"] = {k: dict(v) for k, v in REPORTS.items()}


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    merge(getattr(node, "workeroutput", {}).get("clusterfab_timings", {}))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for title, values in REPORTS.items():
        if values:
            terminalreporter.section(title)
            for key, value in sorted(values.items()):
                terminalreporter.write_line(f"{key:<34} {value}")


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


def check_golden_switch() -> None:
    """Refuse a golden switch that would not mean what it says: only UPDATE_GOLDEN=1 rewrites the golden
    files (any other value, even 0, is a usage error, not a silent rewrite), and never under CI, which
    checks them."""
    value = os.environ.get("UPDATE_GOLDEN", "")
    if value == "":
        return
    if value != "1":
        raise pytest.UsageError(
            f"UPDATE_GOLDEN={value!r}: set UPDATE_GOLDEN=1 to rewrite the golden files, "
            "or unset it to check them"
        )
    if in_ci():
        raise pytest.UsageError(
            "UPDATE_GOLDEN=1 under CI=true: CI checks the golden files and never rewrites them; "
            "unset UPDATE_GOLDEN"
        )


def pytest_configure(config: pytest.Config) -> None:
    check_golden_switch()


def assert_golden(name: str, actual: str) -> None:
    """Compare with tests/golden/<name>. With UPDATE_GOLDEN=1 a differing (or missing) file is rewritten
    and the test fails, naming it: a run that rewrote a golden file is never green, so it cannot pass for
    a check."""
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN") == "1":
        if path.exists() and path.read_text() == actual:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual)
        pytest.fail(
            f"rewrote {path}; review the diff, then rerun without UPDATE_GOLDEN to check",
            pytrace=False,
        )
    assert path.exists(), f"golden file {path} is missing; create it with UPDATE_GOLDEN=1 and review it"
    assert actual == path.read_text(), (
        f"{path} differs; if the change is intended, rerun with UPDATE_GOLDEN=1"
    )
