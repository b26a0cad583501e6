"""Every dashboard panel and alert rule reads only metrics the exporters really expose: dcgm-exporter with
clusterfab's counters file (its field names checked against go-dcgm elsewhere), the node exporter's names
read from a running node exporter, Prometheus' own (`up`, `ALERTS`), the Slurm exporter's, and the
recording rules clusterfab defines. The shipped dashboard JSON is what the code builds today."""

from __future__ import annotations

import dataclasses
import json
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from clusterfab.catalog import Catalog
from clusterfab.monitoring import render_monitoring, write_files
from clusterfab.monitoring.counters import dcgm_metrics
from clusterfab.monitoring.dashboard_build import render_all
from clusterfab.monitoring.grafana import dashboards
from clusterfab.scheduler.kubernetes.agent.rounds import Agent
from clusterfab.scheduler.slurm import exporter as slurm_exporter
from clusterfab.scheduler.slurm.nodes import counts
from clusterfab.spec import ClusterSpec
from tests.conftest import REPO
from tests.factories import TODAY
from tests.monitoring import tools
from tests.monitoring.conftest import STACK, spec_of
from tests.monitoring.node_exporter import node_exporter_names
from tests.monitoring.promql import metric_names
from tests.unit.kueue_agent_fakes import CONFIG, FakeApi

PROMETHEUS_OWN = {"up", "ALERTS"}
KUEUE = {
    line.strip()
    for line in (REPO / "tests" / "fixtures" / "kueue" / "metrics-v0.19.2.txt").read_text().splitlines()
    if line.strip() and not line.startswith("#")
}
"""The metrics Kueue v0.19.2 registers (its pkg/metrics/metrics.go), which the queue agent relays."""


def _queue_agent() -> set[str]:
    """Every metric the queue agent serves of its own, after a round on recorded Kueue API answers."""
    text = Agent(CONFIG, FakeApi(metrics=None), clock=lambda: 1795168800.0).round()
    return {
        line.split("{")[0].split(" ")[0] for line in text.splitlines() if line and not line.startswith("#")
    }


QUEUE_AGENT = _queue_agent()
SCONTROL = {
    "nodes": "NodeName=h100-0 State=IDLE+DRAIN CfgTRES=cpu=192,gres/gpu=8 AllocTRES= Gres=gpu:h100:8\n",
    "jobs": "JobId=7 UserId=alice(20001) Account=research JobState=RUNNING Partition=train "
    "AllocTRES=cpu=2,node=1,gres/gpu=8\n",
    "assoc_mgr": "QOS=research(2)\n    GrpTRESMins=cpu=N(0),gres/gpu=1800000(12)\n",
}


def _slurm_exporter() -> set[str]:
    with tempfile.TemporaryDirectory() as work:
        totals = f"{work}/counts.json"  # as the node programs write it
        counts.add(totals, "sync", Counter({"SetAddress": 1}), Counter({"Terminate": 1}), now=1.0)
        return set(slurm_exporter.collect(lambda argv: SCONTROL[argv[1]], counts=totals).samples)


SLURM_EXPORTER = _slurm_exporter()
"""What clusterfab's Slurm exporter serves (every metric it has, from scontrol's output shapes and the node
programs' totals)."""


@pytest.fixture(scope="module", params=tools.SUITES)
def node_names(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """Each query must read a name both builds bracketing the nodes' (Ubuntu's 1.7.0) expose."""
    suite: str = request.param
    return node_exporter_names(tmp_path_factory.mktemp(f"node-exporter-{suite}"), suite)


def _recorded(rules_dir: Path) -> set[str]:
    return {
        rule["record"]
        for path in rules_dir.glob("*.yml")
        for group in yaml.safe_load(path.read_text())["groups"]
        for rule in group["rules"]
        if "record" in rule
    }


@pytest.fixture
def rendered(cluster_spec: ClusterSpec, catalog: Catalog, tmp_path: Path) -> Path:
    """The cluster's files with Slurm on: every rule file and dashboard there is."""
    with_slurm = dataclasses.replace(
        cluster_spec, monitoring=dataclasses.replace(cluster_spec.monitoring, slurm=True)
    )
    write_files(render_monitoring(with_slurm, catalog, stack=STACK, project=None, today=TODAY), tmp_path)
    assert (tmp_path / "rules" / "slurm.yml").exists()
    # The Kubernetes cluster's rules beside them: every rule file there is.
    kubernetes = spec_of(REPO / "tests" / "fixtures" / "monitoring" / "kubernetes.yaml")
    files = render_monitoring(kubernetes, catalog, stack=STACK, project=None, today=TODAY)
    (tmp_path / "rules" / "kueue.yml").write_text(files["rules/kueue.yml"])
    return tmp_path


def _queries(board: dict[str, Any]) -> list[tuple[str, str]]:
    variables = board.get("templating", {}).get("list", [])
    found = [(f"variable {v['name']}", v["query"]) for v in variables]
    for panel in board["panels"]:
        found += [(panel["title"], target["expr"]) for target in panel.get("targets", [])]
    return found


def test_the_lexer_finds_metric_names_and_nothing_else() -> None:
    expr = (
        'sum by (team) (label_replace(count_over_time(DCGM_FI_DEV_GPU_TEMP{hpc_job!=""}[$__range]) '
        "* on (node_group) "
        'group_left clusterfab:gpu_hour_usd, "team", "$1", "hpc_job", "([^:]+):.*")) * 30 / 3600'
    )
    assert metric_names(expr) == {"DCGM_FI_DEV_GPU_TEMP", "clusterfab:gpu_hour_usd"}
    assert metric_names('label_values(up{job="node"}, node_group)') == {"up", "node_group"}


def test_every_dashboard_query_reads_exposed_metrics(node_names: set[str], rendered: Path) -> None:
    known = (
        dcgm_metrics()
        | node_names
        | PROMETHEUS_OWN
        | SLURM_EXPORTER
        | KUEUE
        | QUEUE_AGENT
        | _recorded(rendered / "rules")
    )
    unknown = []
    for name, board in dashboards().items():
        for title, expr in _queries(board):
            names = metric_names(expr)
            if expr.startswith("label_values("):
                names -= {expr.rstrip(")").rsplit(",", 1)[1].strip()}  # the label whose values it lists
            unknown += [f"{name}: {title}: {metric}" for metric in sorted(names - known)]
    assert unknown == []


def test_every_rule_reads_exposed_metrics(node_names: set[str], rendered: Path) -> None:
    known = (
        dcgm_metrics()
        | node_names
        | PROMETHEUS_OWN
        | SLURM_EXPORTER
        | KUEUE
        | QUEUE_AGENT
        | _recorded(rendered / "rules")
    )
    unknown = []
    for path in sorted((rendered / "rules").glob("*.yml")):
        for group in yaml.safe_load(path.read_text())["groups"]:
            for rule in group["rules"]:
                name = rule.get("alert") or rule.get("record")
                unknown += [f"{path.name}: {name}: {m}" for m in sorted(metric_names(rule["expr"]) - known)]
    assert unknown == []


def test_the_shipped_dashboards_are_what_the_code_builds() -> None:
    built = {name: json.loads(content) for name, content in render_all().items()}
    assert built == dashboards(), "stale: run `uv run python -m clusterfab.monitoring.dashboard_build`"


def test_every_panel_names_the_provisioned_data_source() -> None:
    for board in dashboards().values():
        for panel in board["panels"]:
            if panel["type"] != "text":
                assert panel["datasource"] == {"type": "prometheus", "uid": "prometheus"}, panel["title"]
