"""The queue agent ships alone (`clusterfab_queue_agent`, mounted from a ConfigMap into a plain python
image): the standard library and relative imports only, small modules, and a working entry point."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from clusterfab.scheduler.kubernetes import agent_files

AGENT = agent_files.AGENT
MODULES = sorted(AGENT.glob("*.py"))


def _absolute_imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name.partition(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            found.add((node.module or "").partition(".")[0])
    return found


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_a_module_imports_the_standard_library_and_its_own_package_only(path: Path) -> None:
    assert _absolute_imports(path) - set(sys.stdlib_module_names) - {"__future__"} == set()


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_a_module_stays_small(path: Path) -> None:
    assert len(path.read_text().splitlines()) < 300


def test_the_package_files_are_every_module_by_name() -> None:
    files = agent_files.package_files()
    assert sorted(files) == [
        "__init__.py",
        "__main__.py",
        "actions.py",
        "budget.py",
        "config.py",
        "kube.py",
        "ledger.py",
        "metrics.py",
        "quantity.py",
        "queues.py",
        "relay.py",
        "rounds.py",
        "server.py",
    ]
    assert files["__main__.py"] == (AGENT / "__main__.py").read_text()
    assert agent_files.PACKAGE == "clusterfab_queue_agent"


def _shipped(tmp_path: Path) -> Path:
    package = tmp_path / agent_files.PACKAGE
    package.mkdir()
    for name, text in agent_files.package_files().items():
        (package / name).write_text(text)
    return tmp_path


def test_the_shipped_package_runs_alone(tmp_path: Path) -> None:
    root = _shipped(tmp_path)
    done = subprocess.run(
        [sys.executable, "-E", "-s", "-m", "clusterfab_queue_agent", "--help"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.startswith("usage: clusterfab_queue_agent [-h] --config CONFIG [--port PORT]")
    script = (
        "import importlib, sys\n"
        f"for name in {sorted(p.stem for p in MODULES if p.stem != '__main__')}:\n"
        "    package = 'clusterfab_queue_agent'\n"
        "    importlib.import_module(package if name == '__init__' else package + '.' + name)\n"
        "print(sorted(m for m in sys.modules if m.partition('.')[0] == 'clusterfab'))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-E", "-s", "-c", script], cwd=root, capture_output=True, text=True, check=True
    )
    assert loaded.stdout == "[]\n"


def test_a_wrong_settings_file_stops_the_agent_with_its_reason(tmp_path: Path) -> None:
    root = _shipped(tmp_path)
    (tmp_path / "agent.json").write_text('{"cluster": "a3mega"}')
    done = subprocess.run(
        [sys.executable, "-E", "-s", "-m", "clusterfab_queue_agent", "--config", "agent.json"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "clusterfab_queue_agent: error: agent.json: lacks namespace, ledger_configmap, teams"
    )
