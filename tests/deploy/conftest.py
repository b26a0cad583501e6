"""Fixtures for the deploy tests: a fake `pulumi` CLI on PATH, and offline plans cached per session."""

from __future__ import annotations

import functools
import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from clusterfab.plan.project import Plan, plan_blueprint
from tests.conftest import REPO

FAKE_SOURCE = Path(__file__).with_name("fake_pulumi.py")


class FakePulumi:
    """The fake CLI installed at `<root>/bin/pulumi`, with its state and the calls it received."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.bin = root / "bin"
        self.bin.mkdir(parents=True)
        script = self.bin / "pulumi"
        script.write_text(f"#!{sys.executable}\n" + FAKE_SOURCE.read_text())
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
        self.state_file = root / "state.json"
        self.calls_file = root / "calls.jsonl"
        self.write({"version": "v3.200.0", "stacks": {}})

    def write(self, state: dict[str, Any]) -> None:
        self.state_file.write_text(json.dumps(state, indent=2))

    def state(self) -> dict[str, Any]:
        result: dict[str, Any] = json.loads(self.state_file.read_text())
        return result

    def add_stack(self, name: str, **fields: Any) -> None:
        state = self.state()
        state["stacks"][name] = {"config": {}, "outputs": {}, "resources": [], "events": {}, **fields}
        self.write(state)

    def stack(self, name: str) -> dict[str, Any]:
        result: dict[str, Any] = self.state()["stacks"][name]
        return result

    def calls(self) -> list[list[str]]:
        if not self.calls_file.exists():
            return []
        return [json.loads(line) for line in self.calls_file.read_text().splitlines()]

    def operations(self) -> list[tuple[str, str]]:
        """(operation, stack) of every preview / up / destroy call, in order."""
        found = []
        for argv in self.calls():
            args = [a for a in argv if a != "--non-interactive"]
            if args and args[0] in {"preview", "up", "destroy"}:
                operation = "preview-destroy" if "--preview-only" in args else args[0]
                found.append((operation, args[args.index("--stack") + 1]))
        return found


@pytest.fixture
def fake_pulumi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakePulumi:
    fake = FakePulumi(tmp_path / "pulumi")
    monkeypatch.setenv("PATH", f"{fake.bin}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.chdir(REPO)
    return fake


@pytest.fixture
def no_pulumi(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A PATH without any `pulumi` (but with the tools the tests need)."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.chdir(REPO)


@functools.cache
def cached_plan(example: str, env: str | None) -> Plan:
    """The offline plan of blueprints/examples/<example>.yaml (planning takes seconds; done once)."""
    path = REPO / "blueprints" / "examples" / f"{example}.yaml"
    return plan_blueprint(path, env=env, stack=env or "plan", display=str(path.relative_to(REPO)))
