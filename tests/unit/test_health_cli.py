"""`clusterfab health` asks the plugin of the stack's scheduler kind: a scheduler registered at run time
(the toy one, defined only in tests/plugins) gets the stack's outputs, the level and `--nodes` as written,
and its report is shown, printed as JSON and turned into the exit status as Slurm's is."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from clusterfab import cli
from clusterfab.cli import live
from clusterfab.core import plugins
from tests.json_contract import check_document
from tests.plugins import toy_scheduler

OUTPUTS = {
    "blueprint": {"name": "toy-cluster", "file": "bp.yaml", "digest": "0" * 64, "bundle_sha256": "1" * 64,
                  "environment": "prod", "catalog_version": "x", "cloud": "aws", "region": "us-east-1",
                  "zone": "use1-az6", "project": None},
    "network": {}, "bucket": "b", "node_selector": {},
    "scheduler": {"kind": "toy", "controller": "toy-0", "controller_address": "10.0.0.9", "login": [],
                  "queue_url": "https://queue.invalid/toy"},
}  # fmt: skip


@pytest.fixture
def toy() -> Iterator[None]:
    plugins.register_scheduler(toy_scheduler.KIND, toy_scheduler.__name__)
    yield
    plugins.unregister(toy_scheduler.KIND)


def _cli(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], outputs: dict[str, Any], *args: str
) -> tuple[int, str, str]:
    project = SimpleNamespace(stack=lambda name: SimpleNamespace(outputs=lambda: outputs))
    monkeypatch.setattr(live, "deploy_project", lambda: project)
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.setattr(sys, "argv", ["clusterfab", "health", "--stack", "prod", *args])
    with pytest.raises(SystemExit) as exited:
        cli.main()
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


def test_the_stacks_scheduler_plugin_runs_the_check_and_its_report_is_printed(
    toy: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _cli(monkeypatch, capsys, OUTPUTS, "--level", "2", "--nodes", "ok-1+bad-0", "-f", "json")
    assert (code, err) == (1, "toy: checking 2 node(s) at level 2\n")
    document = json.loads(out)
    check_document(document, "health")
    assert [(n["node"], n["status"]) for n in document["nodes"]] == [("bad-0", "failed"), ("ok-1", "healthy")]
    assert document["level"] == 2


def test_the_table_shows_the_plugins_rows_and_a_healthy_check_exits_0(
    toy: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _cli(monkeypatch, capsys, OUTPUTS, "--level", "1")
    assert code == 0
    text = " ".join(out.split())
    assert text.startswith("deep health check of prod, DCGM level 1: 1 healthy, 0 failed, 0 skipped")
    assert "│ toy-0 │ healthy │" in text


def test_a_stack_of_an_unknown_scheduler_kind_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _cli(monkeypatch, capsys, OUTPUTS)
    assert (code, out) == (2, "")
    assert "this clusterfab knows no scheduler 'toy'" in err
