"""The InfiniBand alert rules: rendered only for clusters with an InfiniBand node group, with each group's
rated speed from the catalog, reading only metrics node_exporter's infiniband collector registers, and
through the real `promtool test rules` with a case that fires each rule and one that does not.

The cluster: tests/fixtures/monitoring/infiniband.yaml (trainers: 4 x Standard_ND96isr_H100_v5, 8 HCAs at
400 Gb/s; racks: 18 x Standard_ND128isr_GB300_v6, 4 at 800 Gb/s; eval: Standard_ND96is_H100_v5 without
InfiniBand), with the AWS fixture's monitoring section added (no monitoring host is built on Azure yet).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from clusterfab.catalog import Catalog
from clusterfab.monitoring import MonitoringFiles, render_monitoring, write_files
from clusterfab.spec import ClusterSpec
from tests.conftest import REPO
from tests.factories import TODAY
from tests.monitoring import tools
from tests.monitoring.conftest import STACK, spec_of
from tests.monitoring.promql import metric_names
from tests.monitoring.test_rules_promtool import _expand

IB_CLUSTER = REPO / "tests" / "fixtures" / "monitoring" / "infiniband.yaml"
NODE_EXPORTER_NAMES = REPO / "tests" / "fixtures" / "prometheus" / "node-exporter-v1.7.0-infiniband.txt"


def recorded_names() -> set[str]:
    lines = NODE_EXPORTER_NAMES.read_text().splitlines()
    return {line.strip() for line in lines if line.strip() and not line.startswith("#")}


@pytest.fixture(scope="module")
def ib_spec(cluster_spec: ClusterSpec) -> ClusterSpec:
    return dataclasses.replace(spec_of(IB_CLUSTER), monitoring=cluster_spec.monitoring)


@pytest.fixture(scope="module")
def ib_files(ib_spec: ClusterSpec, catalog: Catalog) -> MonitoringFiles:
    # file discovery: Azure discovery needs a subscription, and the rules do not depend on discovery
    return render_monitoring(ib_spec, catalog, stack=STACK, project=None, today=TODAY, file_sd_dir="/sd")


def _alerts(files: MonitoringFiles) -> list[dict[str, Any]]:
    [group] = yaml.safe_load(files["rules/infiniband.yml"])["groups"]
    assert group["name"] == "infiniband"
    rules: list[dict[str, Any]] = group["rules"]
    return rules


def test_a_cluster_without_infiniband_has_no_infiniband_rules(cluster_files: MonitoringFiles) -> None:
    assert sorted(p for p in cluster_files if p.startswith("rules/")) == [
        "rules/availability.yml",
        "rules/cost.yml",
        "rules/gpu.yml",
        "rules/storage.yml",
    ]


def test_the_rules_of_the_infiniband_groups(ib_files: MonitoringFiles) -> None:
    assert "rules/infiniband.yml" in yaml.safe_load(ib_files["prometheus.yml"])["rule_files"]
    both = 'job="node", node_group=~"trainers|racks"'
    assert [(r["alert"], r["expr"], r.get("for"), r["labels"]) for r in _alerts(ib_files)] == [
        (
            "InfinibandPortDown",
            f"node_infiniband_state_id{{{both}}} != 4 or node_infiniband_physical_state_id{{{both}}} != 5",
            "2m",
            {"severity": "critical"},
        ),
        (
            "InfinibandPortsBelowRatedSpeed",
            '(up{job="node", node_group="trainers"} == 1) unless on (instance) (count by (instance) '
            '(node_infiniband_rate_bytes_per_second{job="node", node_group="trainers"} >= 50000000000) >= 8)',
            "5m",
            {"severity": "critical", "expected_ports": "8", "rated_gbps": "400"},
        ),
        (
            "InfinibandPortsBelowRatedSpeed",
            '(up{job="node", node_group="racks"} == 1) unless on (instance) (count by (instance) '
            '(node_infiniband_rate_bytes_per_second{job="node", node_group="racks"} >= 100000000000) >= 4)',
            "5m",
            {"severity": "critical", "expected_ports": "4", "rated_gbps": "800"},
        ),
        (
            "InfinibandLinkDowned",
            f"increase(node_infiniband_link_downed_total{{{both}}}[10m]) > 0",
            None,
            {"severity": "warning"},
        ),
        (
            "InfinibandSymbolErrors",
            f"increase(node_infiniband_symbol_error_total{{{both}}}[10m]) > 0",
            None,
            {"severity": "warning"},
        ),
        (
            "InfinibandLinkErrorRecovery",
            f"increase(node_infiniband_link_error_recovery_total{{{both}}}[10m]) > 0",
            None,
            {"severity": "warning"},
        ),
        (
            "InfinibandPortReceiveErrors",
            f"increase(node_infiniband_port_errors_received_total{{{both}}}[10m]) > 100",
            None,
            {"severity": "warning"},
        ),
    ]


def test_one_infiniband_group_is_matched_by_name(
    cluster_spec: ClusterSpec, catalog: Catalog, ib_spec: ClusterSpec
) -> None:
    trainers = dataclasses.replace(ib_spec, node_groups=ib_spec.node_groups[:1])
    files = render_monitoring(trainers, catalog, stack=STACK, project=None, today=TODAY, file_sd_dir="/sd")
    assert [r["expr"] for r in _alerts(files)][2] == (
        'increase(node_infiniband_link_downed_total{job="node", node_group="trainers"}[10m]) > 0'
    )


def test_the_recorded_node_exporter_names_are_the_collectors() -> None:
    names = recorded_names()
    assert len(names) == 34
    assert {
        "node_infiniband_state_id",
        "node_infiniband_physical_state_id",
        "node_infiniband_rate_bytes_per_second",
        "node_infiniband_link_downed_total",
        "node_infiniband_symbol_error_total",
        "node_infiniband_link_error_recovery_total",
        "node_infiniband_port_errors_received_total",
    } <= names


def test_every_infiniband_metric_a_rule_or_dashboard_reads_is_registered(ib_files: MonitoringFiles) -> None:
    read: dict[str, set[str]] = {}
    for path, content in ib_files.items():
        if path.startswith("rules/"):
            for group in yaml.safe_load(content)["groups"]:
                for rule in group["rules"]:
                    read.setdefault(path, set()).update(metric_names(rule["expr"]))
        elif path.startswith("dashboards/"):
            for panel in json.loads(content)["panels"]:
                for target in panel.get("targets", []):
                    read.setdefault(path, set()).update(metric_names(target["expr"]))
    infiniband = {p: {n for n in names if n.startswith("node_infiniband_")} for p, names in read.items()}
    assert {path: names - recorded_names() for path, names in infiniband.items() if names} == {
        "rules/infiniband.yml": set(),
        "dashboards/fabric.json": set(),
    }
    assert len(infiniband["rules/infiniband.yml"]) == 7
    assert infiniband["dashboards/fabric.json"] == {
        "node_infiniband_port_data_transmitted_bytes_total",
        "node_infiniband_port_data_received_bytes_total",
        "node_infiniband_port_errors_received_total",
        "node_infiniband_port_discards_transmitted_total",
        "node_infiniband_link_downed_total",
        "node_infiniband_symbol_error_total",
        "node_infiniband_link_error_recovery_total",
    }


# promtool cases. The labels the node exporter puts on a port's series (device, port) and the discovery
# relabeling puts on every target of a GPU node (instance, node_group, machine_type).
H100 = "Standard_ND96isr_H100_v5"
GB300 = "Standard_ND128isr_GB300_v6"


def node(instance: str, group: str, machine: str) -> dict[str, str]:
    return {"job": "node", "instance": instance, "node_group": group, "machine_type": machine}


TRAINER = node("ib-trainers-0", "trainers", H100)
RACK = node("ib-racks-3", "racks", GB300)
EVAL = node("ib-eval-0", "eval", "Standard_ND96is_H100_v5")


def series(metric: str, labels: Mapping[str, str]) -> str:
    return metric + "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def port(labels: Mapping[str, str], device: str) -> dict[str, str]:
    return {**labels, "device": device, "port": "1"}


def ports(labels: Mapping[str, str], metric: str, values: Mapping[str, str]) -> dict[str, str]:
    """`metric` of each device of a node, and its node exporter's `up`."""
    found = {series("up", labels): "1x40"}
    found |= {series(metric, port(labels, device)): v for device, v in values.items()}
    return found


def rates(
    labels: Mapping[str, str], gbps: list[int], extra: Mapping[str, int] | None = None
) -> dict[str, str]:
    """node_infiniband_rate_bytes_per_second of mlx5_ib0.. at `gbps` (Gb/s x 125,000,000 bytes/s)."""
    values = {f"mlx5_ib{i}": f"{g * 125_000_000}x40" for i, g in enumerate(gbps)}
    values |= {device: f"{g * 125_000_000}x40" for device, g in (extra or {}).items()}
    return ports(labels, "node_infiniband_rate_bytes_per_second", values)


def states(labels: Mapping[str, str], state: int, phys: int) -> dict[str, str]:
    return {
        series("node_infiniband_state_id", port(labels, "mlx5_ib3")): f"{state}x20",
        series("node_infiniband_physical_state_id", port(labels, "mlx5_ib3")): f"{phys}x20",
    }


IB5 = "mlx5_ib5"


def counter(labels: Mapping[str, str], metric: str, values: str) -> dict[str, str]:
    return {series(metric, port(labels, IB5)): values}


@dataclass(frozen=True)
class IbCase:
    alert: str
    series: Mapping[str, str]
    at: str
    fires: list[dict[str, str]] = field(default_factory=list)
    group: str = "trainers"
    """The node group whose rule it is (the speed rule is one per group)."""


LINK_DOWNED = "node_infiniband_link_downed_total"
SYMBOL = "node_infiniband_symbol_error_total"
RECOVERY = "node_infiniband_link_error_recovery_total"
RCV = "node_infiniband_port_errors_received_total"
CASES = [
    # 1: DOWN, or 3: Disabled under 4: ACTIVE; for 2 minutes.
    IbCase("InfinibandPortDown", states(TRAINER, 1, 5), "3m", [port(TRAINER, "mlx5_ib3")]),
    IbCase("InfinibandPortDown", states(RACK, 4, 3), "3m", [port(RACK, "mlx5_ib3")], group="racks"),
    IbCase("InfinibandPortDown", states(TRAINER, 4, 5), "3m"),
    # A group without InfiniBand is not watched.
    IbCase("InfinibandPortDown", states(EVAL, 1, 3), "3m"),
    # One HCA trained at 200 Gb/s: 7 of 8 at 400.
    IbCase("InfinibandPortsBelowRatedSpeed", rates(TRAINER, [400] * 7 + [200]), "6m", [TRAINER]),
    # All 8 at 400; the Ethernet RDMA device (accelerated networking, 100 Gb/s) is not counted.
    IbCase("InfinibandPortsBelowRatedSpeed", rates(TRAINER, [400] * 8, {"mlx5_an0": 100}), "6m"),
    # An HCA missing: 7 devices.
    IbCase("InfinibandPortsBelowRatedSpeed", rates(TRAINER, [400] * 7, {"mlx5_an0": 100}), "6m", [TRAINER]),
    # No InfiniBand device at all (the driver lost them): the node answers, no port does.
    IbCase("InfinibandPortsBelowRatedSpeed", {series("up", TRAINER): "1x40"}, "6m", [TRAINER]),
    # GB300: 800 Gb/s ports; 400 is below.
    IbCase("InfinibandPortsBelowRatedSpeed", rates(RACK, [400] * 4), "6m", [RACK], group="racks"),
    IbCase("InfinibandPortsBelowRatedSpeed", rates(RACK, [800] * 4), "6m", group="racks"),
    IbCase("InfinibandLinkDowned", counter(TRAINER, LINK_DOWNED, "0 0 1 1 1"), "2m", [port(TRAINER, IB5)]),
    IbCase("InfinibandLinkDowned", counter(TRAINER, LINK_DOWNED, "2x20"), "5m"),
    IbCase("InfinibandSymbolErrors", counter(RACK, SYMBOL, "0 0 5 5 5"), "2m", [port(RACK, IB5)]),
    IbCase("InfinibandSymbolErrors", counter(RACK, SYMBOL, "7x20"), "5m"),
    IbCase("InfinibandLinkErrorRecovery", counter(TRAINER, RECOVERY, "0 3 3 3"), "1m", [port(TRAINER, IB5)]),
    IbCase("InfinibandLinkErrorRecovery", counter(TRAINER, RECOVERY, "3x20"), "5m"),
    # 50 every 30 s: about 1,000 in 10 minutes > 100; 2 every 30 s: about 40.
    IbCase("InfinibandPortReceiveErrors", counter(TRAINER, RCV, "0+50x40"), "15m", [port(TRAINER, IB5)]),
    IbCase("InfinibandPortReceiveErrors", counter(TRAINER, RCV, "0+2x40"), "15m"),
]  # fmt: skip


def _rule_of(rules: list[dict[str, Any]], case: IbCase) -> dict[str, Any]:
    [rule] = [r for r in rules if r["alert"] == case.alert and _matches(r, case.group)]
    return rule


def _test_file(rules: list[dict[str, Any]]) -> dict[str, Any]:
    tests = []
    for case in CASES:
        rule = _rule_of(rules, case)
        expected = []
        for extra in case.fires:
            labels = {**extra, **rule["labels"]}
            annotations = {k: _expand(v, labels, None) for k, v in rule["annotations"].items()}
            expected.append({"exp_labels": labels, "exp_annotations": annotations})
        tests.append(
            {
                "interval": "30s",
                "input_series": [{"series": s, "values": v} for s, v in case.series.items()],
                "alert_rule_test": [{"eval_time": case.at, "alertname": case.alert, "exp_alerts": expected}],
            }
        )
    return {"rule_files": ["rules/infiniband.yml"], "evaluation_interval": "30s", "tests": tests}


def test_every_infiniband_rule_has_a_case_that_fires_it_and_one_that_does_not(
    ib_files: MonitoringFiles,
) -> None:
    rules = _alerts(ib_files)
    every = {(r["alert"], group) for r in rules for group in ("trainers", "racks") if _matches(r, group)}
    firing = {(c.alert, c.group) for c in CASES if c.fires}
    quiet = {(c.alert, c.group) for c in CASES if not c.fires}
    speed = {("InfinibandPortsBelowRatedSpeed", "trainers"), ("InfinibandPortsBelowRatedSpeed", "racks")}
    assert {a for a, _ in every} == {a for a, _ in firing} == {a for a, _ in quiet}
    assert speed <= firing & quiet


def _matches(rule: dict[str, Any], group: str) -> bool:
    return re.search(rf'node_group=~?"[^"]*\b{group}\b', rule["expr"]) is not None


@pytest.mark.parametrize("suite", tools.SUITES)
def test_promtool_unit_tests_of_the_infiniband_rules(
    suite: str, ib_files: MonitoringFiles, tmp_path: Path
) -> None:
    write_files({"rules/infiniband.yml": ib_files["rules/infiniband.yml"]}, tmp_path)
    test_file = tmp_path / "rules-test.yml"
    test_file.write_text(yaml.safe_dump(_test_file(_alerts(ib_files)), sort_keys=False, width=4096))
    result = tools.run(suite, "promtool", "test", "rules", test_file, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout + result.stderr
