"""The node programs' running totals: what each run adds, and what the Slurm exporter serves from them."""

from __future__ import annotations

import datetime as dt
import json
import stat
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from clusterfab.scheduler.slurm import exporter
from clusterfab.scheduler.slurm.nodes import __main__ as nodes_main
from clusterfab.scheduler.slurm.nodes import counts
from clusterfab.scheduler.slurm.nodes.fleet import CloudError, Instance
from clusterfab.scheduler.slurm.nodes.scontrol import SlurmNode

T0 = dt.datetime(2026, 11, 26, 12, 0, tzinfo=dt.UTC)


def test_runs_add_up_per_program_and_action(tmp_path: Path) -> None:
    path = str(tmp_path / "counts.json")
    counts.add(path, "sync", Counter({"SetAddress": 2, "Terminate": 0}), Counter({"PowerDown": 1}), now=100.0)
    counts.add(path, "sync", Counter({"SetAddress": 1, "MarkDown": 1}), Counter(), now=130.0)
    counts.add(
        path, "resume", Counter({"create": 4}), Counter({"InsufficientInstanceCapacity": 2}), now=140.0
    )
    assert json.loads(Path(path).read_text()) == {
        "format": 1,
        "programs": {
            "sync": {"runs": 2, "last_run": 130.0, "done": {"SetAddress": 3, "MarkDown": 1},
                     "failed": {"PowerDown": 1}},
            "resume": {"runs": 1, "last_run": 140.0, "done": {"create": 4},
                       "failed": {"InsufficientInstanceCapacity": 2}},
        },
    }  # fmt: skip
    # Readable by the exporter's user, whoever wrote it; nothing left behind but the file and its lock.
    assert stat.S_IMODE(Path(path).stat().st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["counts.json", "counts.json.lock"]


def test_a_damaged_or_foreign_file_starts_the_totals_over(tmp_path: Path) -> None:
    path = tmp_path / "counts.json"
    path.write_text("{not json")
    assert counts.load(str(path)) is None
    path.write_text(json.dumps({"format": 2, "programs": {}}))
    assert counts.load(str(path)) is None
    counts.add(str(path), "suspend", Counter({"delete": 3}), Counter(), now=5.0)
    assert counts.load(str(path)) == {
        "format": 1,
        "programs": {"suspend": {"runs": 1, "last_run": 5.0, "done": {"delete": 3}, "failed": {}}},
    }


def test_the_exporter_serves_the_totals_as_counters(tmp_path: Path) -> None:
    path = str(tmp_path / "counts.json")
    counts.add(path, "sync", Counter({"SetAddress": 3}), Counter({"Terminate": 1}), now=1764000000.0)
    counts.add(path, "resume", Counter({"create": 0}), Counter({"InsufficientInstanceCapacity": 2}), now=1.0)
    text = exporter.collect(lambda argv: "", counts=path).text()
    lines = text.splitlines()
    start = lines.index("# HELP clusterfab_slurm_node_program_runs_total Runs of a node program")
    assert lines[start : start + 14] == [
        "# HELP clusterfab_slurm_node_program_runs_total Runs of a node program",
        "# TYPE clusterfab_slurm_node_program_runs_total counter",
        'clusterfab_slurm_node_program_runs_total{program="resume"} 1',
        'clusterfab_slurm_node_program_runs_total{program="sync"} 1',
        "# HELP clusterfab_slurm_node_program_last_run_timestamp_seconds When a node program last ran"
        " (seconds since the epoch)",
        "# TYPE clusterfab_slurm_node_program_last_run_timestamp_seconds gauge",
        'clusterfab_slurm_node_program_last_run_timestamp_seconds{program="resume"} 1',
        'clusterfab_slurm_node_program_last_run_timestamp_seconds{program="sync"} 1764000000',
        "# HELP clusterfab_slurm_node_actions_total Actions of the node programs by kind and outcome",
        "# TYPE clusterfab_slurm_node_actions_total counter",
        'clusterfab_slurm_node_actions_total{action="InsufficientInstanceCapacity",outcome="failed",'
        'program="resume"} 2',
        'clusterfab_slurm_node_actions_total{action="SetAddress",outcome="done",program="sync"} 3',
        'clusterfab_slurm_node_actions_total{action="Terminate",outcome="failed",program="sync"} 1',
        "# HELP slurm_nodes_alloc Nodes in state alloc",
    ]


def test_without_totals_the_exporter_serves_only_slurm(tmp_path: Path) -> None:
    for source in (None, str(tmp_path / "absent.json")):
        names = set(exporter.collect(lambda argv: "", counts=source).samples)
        assert not {n for n in names if "node_program" in n or "node_actions" in n}


class FakeFleet:
    def __init__(self, instances: list[Instance], error: CloudError | None = None) -> None:
        self._instances, self._error = instances, error
        self.named: list[tuple[str, str]] = []

    def instances(self) -> list[Instance]:
        return list(self._instances)

    def name(self, instance_id: str, name: str) -> None:
        self.named.append((instance_id, name))

    def create(self, group: str, names: Any) -> list[str]:
        if self._error is not None:
            raise self._error
        return [f"i-{n}" for n in names]

    def terminate(self, ids: Any) -> None:
        return None

    def requests(self) -> list[Any]:
        return []

    def keep_sizes(self) -> list[str]:
        return []

    def withdraw(self, mig: str) -> None:
        raise AssertionError(f"nothing to withdraw: {mig}")


class FakeScontrol:
    def __init__(self) -> None:
        self.updates: list[tuple[list[str], Any]] = []

    def nodes(self) -> dict[str, SlurmNode]:
        return {}

    def hostnames(self, expression: str) -> list[str]:
        return expression.split(",")

    def apply(self, action: Any) -> None:
        self.updates.append(([action.name], action))

    def update(self, names: Any, action: Any) -> None:
        self.updates.append((list(names), action))


@pytest.fixture
def config(tmp_path: Path) -> str:
    path = tmp_path / "nodesync.json"
    path.write_text(json.dumps({"groups": {"h100": {"static": 1, "size": 3}}, "blueprint": "llm",
                                "stack": "prod", "region": "us-east-1", "fleet": FLEET}))  # fmt: skip
    return str(path)


FLEET = {"h100": {"template": "lt-0abc", "profile": "arn:aws:iam::111122223333:instance-profile/h100"}}


def test_aws_programs_refuse_to_run_without_the_fleet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the node groups' templates and profiles, tags alone would decide what is the cluster's."""
    path = tmp_path / "nodesync.json"
    path.write_text(json.dumps({"groups": {}, "blueprint": "llm", "stack": "prod", "region": "us-east-1"}))
    with pytest.raises(SystemExit) as exit_:
        nodes_main.main(["sync", "--config", str(path)])
    assert exit_.value.code == 2
    fleet = tmp_path / "fleet.json"
    fleet.write_text(json.dumps(FLEET))
    given: list[dict[str, Any]] = []
    monkeypatch.setattr(nodes_main, "Scontrol", FakeScontrol)
    monkeypatch.setattr(nodes_main, "_fleet", lambda settings: given.append(settings) or FakeFleet([]))
    nodes_main.main(["sync", "--config", str(path), "--fleet", str(fleet)])
    assert given[0]["fleet"] == FLEET


def test_each_program_adds_its_run_to_the_totals(
    tmp_path: Path, config: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    launched = Instance("i-0a", "h100", "10.0.1.7", T0, None)
    fleet = FakeFleet([launched], CloudError("InsufficientInstanceCapacity", "no p5 in use1-az4"))
    monkeypatch.setattr(nodes_main, "Scontrol", FakeScontrol)
    monkeypatch.setattr(nodes_main, "_fleet", lambda settings: fleet)
    monkeypatch.delenv("SLURM_RESUME_FILE", raising=False)
    totals = str(tmp_path / "counts.json")
    assert nodes_main.main(["sync", "--config", config, "--counts", totals]) == 0
    assert nodes_main.main(["resume", "--config", config, "--counts", totals, "h100-1,h100-2"]) == 1
    assert nodes_main.main(["suspend", "--config", config, "--counts", totals, "h100-2"]) == 0
    programs = json.loads(Path(totals).read_text())["programs"]
    assert fleet.named == [("i-0a", "h100-0")]
    assert {p: (e["runs"], e["done"], e["failed"]) for p, e in programs.items()} == {
        "sync": (1, {"NameInstance": 1, "SetAddress": 1}, {}),
        "resume": (1, {}, {"InsufficientInstanceCapacity": 2}),
        "suspend": (1, {}, {}),
    }


def test_a_run_that_cannot_count_still_does_its_work(
    tmp_path: Path, config: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(nodes_main, "Scontrol", FakeScontrol)
    monkeypatch.setattr(nodes_main, "_fleet", lambda settings: FakeFleet([]))
    missing = str(tmp_path / "no-such-dir" / "counts.json")
    assert nodes_main.main(["suspend", "--config", config, "--counts", missing, "h100-2"]) == 0
    assert f"could not add this run to {missing}" in caplog.text
