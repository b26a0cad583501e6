"""Every alert rule through the real `promtool test rules` (Debian's bookworm and trixie builds): a series
that fires it and a series that does not, with the labels the exporters really put on their metrics.

The cases are written here by hand: the series, the time, and whether the alert fires with which labels.
Annotations are expanded from the rule's own templates (what is tested is when a rule fires, not its prose).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from clusterfab.catalog import Catalog
from clusterfab.monitoring import render_monitoring, write_files
from clusterfab.spec import ClusterSpec
from tests.conftest import REPO
from tests.factories import TODAY
from tests.monitoring import tools
from tests.monitoring.conftest import STACK, spec_of

GPU = (
    'gpu="3",UUID="GPU-0f0f",pci_bus_id="00000000:53:00.0",device="nvidia3",'
    'modelName="NVIDIA H100 80GB HBM3",Hostname="ip-10-20-0-7"'
)
"""The labels dcgm-exporter 4.4.1-4.6.0 puts on a GPU's series (internal/pkg/rendermetrics)."""
NODE = 'instance="i-0abc",node_group="trainers",machine_type="p5.48xlarge"'
"""What the discovery relabeling adds to every target of a GPU node."""
OTHER = 'instance="i-0def",node_group="trainers",machine_type="p5.48xlarge"'


def dcgm(metric: str, extra: str = "") -> str:
    return f'{metric}{{job="dcgm",{NODE},{GPU}{"," + extra if extra else ""}}}'


@dataclass(frozen=True)
class Case:
    alert: str
    series: Mapping[str, str]
    at: str
    fires: list[dict[str, str]] = field(default_factory=list)
    """The labels of each alert that fires (beyond the rule's own labels); empty: the alert does not fire."""
    value: float | None = None
    """The alert's value, for annotations that print it."""


def gpu_labels(**extra: str) -> dict[str, str]:
    labels = dict(re.findall(r'(\w+)="([^"]*)"', f'job="dcgm",{NODE},{GPU}'))
    return {**labels, **extra}


def fs(avail: float, readonly: int = 0) -> dict[str, str]:
    labels = f'job="node",{NODE},device="/dev/nvme1n1",fstype="ext4",mountpoint="/scratch"'
    return {
        f"node_filesystem_avail_bytes{{{labels}}}": f"{avail}x40",
        f"node_filesystem_size_bytes{{{labels}}}": "100x40",
        f"node_filesystem_readonly{{{labels}}}": f"{readonly}x40",
    }


def nodes(count: int, minutes: int) -> dict[str, str]:
    samples = minutes * 2 + 2
    return {f'up{{job="node",instance="i-{k}",node_group="trainers"}}': f"1x{samples}" for k in range(count)}


def gpus(count: int) -> dict[str, str]:
    series = {f'up{{job="node",{NODE}}}': "1x20", f'up{{job="dcgm",{NODE}}}': "1x20"}
    for index in range(count):
        labels = f'job="dcgm",{NODE},gpu="{index}",UUID="GPU-{index}",device="nvidia{index}"'
        series[f"DCGM_FI_DEV_GPU_TEMP{{{labels}}}"] = "40x20"
    return series


FS_LABELS = {"job": "node", "instance": "i-0abc", "node_group": "trainers", "machine_type": "p5.48xlarge",
             "device": "/dev/nvme1n1", "fstype": "ext4", "mountpoint": "/scratch"}  # fmt: skip
NODE_LABELS = {"instance": "i-0abc", "node_group": "trainers", "machine_type": "p5.48xlarge"}
WINDOW = 'window_size_in_ms="300000"'


def xid(code: int, values: str = "1 1 1") -> dict[str, str]:
    return {dcgm("DCGM_EXP_XID_ERRORS_COUNT", f'xid="{code}"'): values}


def field(metric: str, values: str) -> dict[str, str]:
    return {dcgm(metric): values}


def events(event: str, values: str) -> dict[str, str]:
    return {dcgm("DCGM_EXP_CLOCK_EVENTS_COUNT", f'clock_event="{event}",{WINDOW}'): values}


def health(watch: str, code: str, values: str) -> dict[str, str]:
    return {dcgm("DCGM_EXP_GPU_HEALTH_STATUS", f'health_watch="{watch}",health_error_code="{code}"'): values}


def up(job: str, values: str, node: str = NODE) -> dict[str, str]:
    return {f'up{{job="{job}",{node}}}': values}


NVLINK = "DCGM_FI_DEV_NVLINK_{}_ERROR_COUNT_TOTAL"
DBE = "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"
SBE = "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"
DBE_CODE = "DCGM_FR_VOLATILE_DBE_DETECTED"
DRAINED = 'slurm_nodes_drain{job="slurm",instance="localhost:8080"}'
SLURM = {"job": "slurm", "instance": "localhost:8080"}
EXPORTER_UP = 'clusterfab_slurm_exporter_up{job="slurm",instance="localhost:8080"}'
SLURM_UP = 'up{job="slurm",instance="localhost:8080"}'


SLURM_LABELS = 'job="slurm",instance="localhost:8080"'
LAST_RUN = f'clusterfab_slurm_node_program_last_run_timestamp_seconds{{{SLURM_LABELS},program="sync"}}'


def actions(program: str, action: str, outcome: str, values: str) -> dict[str, str]:
    labels = (
        f'job="slurm",instance="localhost:8080",program="{program}",action="{action}",outcome="{outcome}"'
    )
    return {f"clusterfab_slurm_node_actions_total{{{labels}}}": values}


def budget(used: int) -> dict[str, str]:
    """The exporter's GrpTRESMins series of QOS research: 1,800,000 GPU-minutes, `used` spent."""
    labels = 'job="slurm",instance="localhost:8080",qos="research"'
    return {
        f"clusterfab_slurm_qos_gpu_minutes_used{{{labels}}}": f"{used}x40",
        f"clusterfab_slurm_qos_gpu_minutes_limit{{{labels}}}": "1800000x40",
    }


CASES = [
    # Xids: one of each alert's Xids fires it; an Xid of another alert does not.
    Case("GpuXidFallenOffTheBus", xid(79, "0 1 1"), "1m", [gpu_labels(xid="79")]),
    Case("GpuXidFallenOffTheBus", xid(13, "0 1 1"), "1m"),
    Case("GpuXidUncorrectableMemoryError", xid(48), "1m", [gpu_labels(xid="48")]),
    Case("GpuXidUncorrectableMemoryError", xid(94), "1m"),
    Case("GpuXidUncorrectableMemoryError", xid(95, "0 0 2"), "1m", [gpu_labels(xid="95")]),
    Case("GpuXidUncorrectableMemoryError", xid(64, "0 0 0"), "1m"),
    Case("GpuXidContainedMemoryError", xid(94), "1m", [gpu_labels(xid="94")]),
    Case("GpuXidContainedMemoryError", xid(95), "1m"),
    Case("GpuXidRowRemapEvent", xid(63), "1m", [gpu_labels(xid="63")]),
    Case("GpuXidRowRemapEvent", xid(64), "1m"),
    Case("GpuXidNvlinkError", xid(74), "1m", [gpu_labels(xid="74")]),
    Case("GpuXidNvlinkError", xid(79), "1m"),
    Case("GpuXidResetRequired", xid(119), "1m", [gpu_labels(xid="119")]),
    Case("GpuXidResetRequired", xid(13), "1m"),
    Case("GpuXidApplicationFault", xid(31), "1m", [gpu_labels(xid="31")]),
    Case("GpuXidApplicationFault", xid(31, "0 0 0"), "1m"),
    # DCGM fields.
    Case("GpuDoubleBitEccError", field(DBE, "0 0 2"), "1m", [gpu_labels()]),
    Case("GpuDoubleBitEccError", {**field(DBE, "0 0 0"), **field(SBE, "0 5 9")}, "1m"),
    Case("GpuRowRemapFailure", field("DCGM_FI_DEV_ROW_REMAP_FAILURE", "0 1 1"), "1m", [gpu_labels()]),
    Case("GpuRowRemapFailure", field("DCGM_FI_DEV_ROW_REMAP_FAILURE", "0 0 0"), "1m"),
    Case("GpuRowRemapPending", field("DCGM_FI_DEV_ROW_REMAP_PENDING", "1x30"), "11m", [gpu_labels()]),
    # Pending for 5 minutes: not yet for the rule's 10.
    Case("GpuRowRemapPending", field("DCGM_FI_DEV_ROW_REMAP_PENDING", "1x30"), "5m"),
    Case(
        "GpuNvlinkErrors",
        {**field(NVLINK.format("CRC_DATA"), "0 0 3 3 3"), **field(NVLINK.format("RECOVERY"), "0 0 0 0 0")},
        "2m",
        [gpu_labels()],
    ),
    Case(  # flow-control CRC errors grow, data CRC and recovery errors stay flat
        "GpuNvlinkErrors",
        {
            **field(NVLINK.format("CRC_DATA"), "7 7 7 7 7"),
            **field(NVLINK.format("RECOVERY"), "1 1 1 1 1"),
            **field(NVLINK.format("CRC_FLIT"), "0 5 9 20 40"),
        },
        "2m",
    ),
    Case("GpuThermalThrottling", events("hw_thermal", "2x20"), "6m",
         [gpu_labels(clock_event="hw_thermal", window_size_in_ms="300000")]),
    Case("GpuThermalThrottling", events("power_cap", "9x20"), "6m"),
    Case("GpuPowerThrottling", events("hw_power_brake", "1x20"), "6m",
         [gpu_labels(clock_event="hw_power_brake", window_size_in_ms="300000")]),
    Case("GpuPowerThrottling", events("power_cap", "9x20"), "6m"),
    Case("GpuHealthFailing", health("MEM", DBE_CODE, "0 20 20"), "1m",
         [gpu_labels(health_watch="MEM", health_error_code=DBE_CODE)]),
    Case("GpuHealthFailing", health("MEM", "DCGM_FR_OK", "10 10 10"), "1m"),
    Case("GpuHealthWarning", health("PCIE", "DCGM_FR_PCI_REPLAY_RATE", "10x40"), "16m",
         [gpu_labels(health_watch="PCIE", health_error_code="DCGM_FR_PCI_REPLAY_RATE")]),
    Case("GpuHealthWarning", health("PCIE", "DCGM_FR_OK", "0x40"), "16m"),
    # Availability.
    Case("NodeDown", {**up("node", "0x20"), **up("node", "1x20", OTHER)}, "6m",
         [{"job": "node", **NODE_LABELS}]),
    Case("NodeDown", up("node", "1x20"), "6m"),
    Case("DcgmExporterDown", up("dcgm", "0x20"), "6m", [{"job": "dcgm", **NODE_LABELS}]),
    Case("DcgmExporterDown", up("dcgm", "1x20"), "6m"),
    Case("GpuMissing", gpus(7), "6m", [{"job": "node", **NODE_LABELS, "expected_gpus": "8"}]),
    Case("GpuMissing", gpus(8), "6m"),
    # Storage.
    Case("FilesystemNearlyFull", fs(5), "16m", [FS_LABELS]),
    Case("FilesystemNearlyFull", fs(50), "16m"),
    Case("FilesystemFull", fs(2), "6m", [FS_LABELS]),
    Case("FilesystemFull", fs(5), "6m"),
    # Budget: 6 nodes x $55.04 + $1.021348 fixed = $331.26/h > $300; 5 nodes = $276.22/h.
    Case("BudgetHourlyExceeded", nodes(6, 40), "31m", [{}], value=331.261348),
    Case("BudgetHourlyExceeded", nodes(5, 40), "31m"),
    # x 730 h: 6 nodes = $241,820/month > $200,000; 4 nodes = $161,465/month.
    Case("BudgetMonthlyBurnRate", nodes(6, 70), "61m", [{}], value=331.261348 * 730),
    Case("BudgetMonthlyBurnRate", nodes(4, 70), "61m"),
    # Slurm (rendered with the Slurm flag on).
    Case("SlurmNodesDrained", {DRAINED: "2x30"}, "11m", [SLURM], value=2),
    Case("SlurmNodesDrained", {DRAINED: "0x30"}, "11m"),
    # research: 1,800,000 GPU-minutes a month; 1,700,000 used = 0.94 > 0.9; 1,500,000 = 0.83.
    Case("SlurmTeamGpuBudgetNearlySpent", budget(1_700_000), "16m", [{**SLURM, "qos": "research"}],
         value=1_700_000 / 1_800_000),
    Case("SlurmTeamGpuBudgetNearlySpent", budget(1_500_000), "16m"),
    Case("SlurmExporterDown", {SLURM_UP: "0x20"}, "6m", [SLURM]),
    Case("SlurmExporterDown", {SLURM_UP: "1x20", EXPORTER_UP: "1x20"}, "6m"),
    # The sync last ran at 0 s: at 11 minutes that is 660 s ago (> 300 s for 5 minutes); one that runs every
    # 30 s (its timestamp keeps up with the clock) never is.
    Case("SlurmNodeSyncStale", {LAST_RUN: "0x30"}, "11m", [{**SLURM, "program": "sync"}]),
    Case("SlurmNodeSyncStale", {LAST_RUN: "0+30x30"}, "11m"),
    Case("SlurmNodeSyncFailing", actions("sync", "Terminate", "failed", "0 0 1 1"), "1m",
         [{**SLURM, "program": "sync", "action": "Terminate", "outcome": "failed"}]),
    Case("SlurmNodeSyncFailing", {**actions("sync", "Terminate", "failed", "1x20"),
                                  **actions("sync", "SetAddress", "done", "0+1x20")}, "6m"),
    Case("SlurmResumeFailing", actions("resume", "InsufficientInstanceCapacity", "failed", "0 0 8 8"), "1m",
         [{**SLURM, "program": "resume", "action": "InsufficientInstanceCapacity", "outcome": "failed"}]),
    Case("SlurmResumeFailing", {**actions("resume", "InsufficientInstanceCapacity", "failed", "8x80"),
                                **actions("resume", "create", "done", "0+4x80")}, "40m"),
]  # fmt: skip


AGENT = 'job="queue-agent",instance="i-0sys",machine_type="m7i.xlarge"'
"""What the discovery relabeling puts on the queue agent's series (a system node has no node group)."""
AGENT_LABELS = {"job": "queue-agent", "instance": "i-0sys", "machine_type": "m7i.xlarge"}
RESEARCH = {**AGENT_LABELS, "team": "research", "cluster_queue": "research"}


def agent(metric: str, values: str, **labels: str) -> dict[str, str]:
    extra = "".join(f',{k}="{v}"' for k, v in labels.items())
    return {f"{metric}{{{AGENT}{extra}}}": values}


def research(metric: str, values: str, **labels: str) -> dict[str, str]:
    return agent(metric, values, team="research", cluster_queue="research", **labels)


OLDEST = "clusterfab_kueue_oldest_pending_gpu_workload_seconds"
HELD = "clusterfab_kueue_cluster_queue_held"


def hours(used: int) -> dict[str, str]:
    """research: 5,000 GPU-hours a month (the fixture's budget)."""
    return {
        **research("clusterfab_kueue_team_gpu_hours_used", f"{used}x40"),
        **research("clusterfab_kueue_team_gpu_hours_limit", "5000x40"),
    }


KUEUE_CASES = [
    # The oldest waits 15,000 s and counts on: at 11 minutes 15,660 s (4h 21m) > 4 h, for 10 minutes; one
    # that waits an hour does not.
    Case("KueueGpuWorkloadPendingTooLong", research(OLDEST, "15000+30x40"), "11m", [RESEARCH], value=15660),
    Case("KueueGpuWorkloadPendingTooLong", research(OLDEST, "3600+30x40"), "11m"),
    # A held queue's workloads wait by design: that alert is KueueQueueHeldByBudget's.
    Case("KueueGpuWorkloadPendingTooLong",
         {**research(OLDEST, "15000+30x40"), **research(HELD, "1x40", held_by="gpu-budget")}, "11m"),
    # 4,250 of 5,000 = 85 % >= 80 %; 3,500 = 70 %.
    Case("KueueTeamGpuBudgetNearlySpent", hours(4250), "16m", [RESEARCH], value=0.85),
    Case("KueueTeamGpuBudgetNearlySpent", hours(3500), "16m"),
    Case("KueueQueueHeldByBudget", research(HELD, "1x20", held_by="gpu-budget"), "6m",
         [{**RESEARCH, "held_by": "gpu-budget"}]),
    Case("KueueQueueHeldByBudget", research(HELD, "1x20", held_by="other"), "6m"),
    # Two system nodes, neither answering; then the one the agent runs on answers, the other does not.
    Case("KueueQueueAgentDown", {**up("queue-agent", "0x30", 'instance="i-0sys"'),
                                 **up("queue-agent", "0x30", 'instance="i-1sys"')}, "11m", [{}]),
    Case("KueueQueueAgentDown", {**up("queue-agent", "1x30", 'instance="i-0sys"'),
                                 **up("queue-agent", "0x30", 'instance="i-1sys"'),
                                 **agent("clusterfab_kueue_agent_round_success", "1x30")}, "11m"),
    Case("KueueQueueAgentDown", {**up("queue-agent", "1x30", 'instance="i-0sys"'),
                                 **agent("clusterfab_kueue_agent_round_success", "0x30")}, "11m", [{}]),
    Case("KueueMetricsUnavailable", agent("clusterfab_kueue_relay_success", "0x40"), "16m", [{}]),
    Case("KueueMetricsUnavailable", agent("clusterfab_kueue_relay_success", "1x40"), "16m"),
]  # fmt: skip


def _rules(rules_dir: Path) -> dict[str, dict[str, Any]]:
    found = {}
    for path in sorted(rules_dir.glob("*.yml")):
        for group in yaml.safe_load(path.read_text())["groups"]:
            for rule in group["rules"]:
                if "alert" in rule:
                    found[rule["alert"]] = rule
    return found


def _humanize_duration(seconds: float) -> str:
    """Prometheus' humanizeDuration for a whole number of seconds over a minute (template/template.go)."""
    whole = int(seconds)
    days, hours, minutes, secs = whole // 86400, whole // 3600 % 24, whole // 60 % 60, whole % 60
    if days:
        return f"{days}d {hours}h {minutes}m {secs}s"
    return f"{hours}h {minutes}m {secs}s" if hours else f"{minutes}m {secs}s"


def _expand(template: str, labels: Mapping[str, str], value: float | None) -> str:
    text = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels.get(m.group(1), ""), template)
    if value is not None:
        text = text.replace("{{ $value | humanizeDuration }}", _humanize_duration(value))
        text = text.replace("{{ $value | humanizePercentage }}", f"{value * 100:.4g}%")
    text = re.sub(r'\{\{ \$value \| printf "(%[.0-9]*f)" \}\}', lambda m: m.group(1) % value, text)
    return text.replace("{{ $value }}", f"{value:g}" if value is not None else "")


def _test_file(
    rules_dir: Path, cases: list[Case] = CASES, *, recording: Callable[[], dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The promtool test file of `cases`, and the recording rules' test `recording` makes (default: the
    cost rules')."""
    rules = _rules(rules_dir)
    tests = []
    for case in cases:
        rule = rules[case.alert]
        expected = []
        for extra in case.fires:
            labels = {**extra, **rule["labels"]}
            annotations = {k: _expand(v, labels, case.value) for k, v in rule["annotations"].items()}
            expected.append({"exp_labels": labels, "exp_annotations": annotations})
        tests.append(
            {
                "interval": "30s",
                "input_series": [{"series": s, "values": v} for s, v in case.series.items()],
                "alert_rule_test": [{"eval_time": case.at, "alertname": case.alert, "exp_alerts": expected}],
            }
        )
    tests.append((recording or _cost_recording_test)())
    return {"rule_files": [str(p.relative_to(rules_dir.parent)) for p in sorted(rules_dir.glob("*.yml"))],
            "evaluation_interval": "30s", "tests": tests}  # fmt: skip


def _cost_recording_test() -> dict[str, Any]:
    """The cost recording rules price 6 running nodes as `clusterfab cost` does: 6 x 55.04 + 1.021348."""
    return {
        "interval": "30s",
        "input_series": [{"series": s, "values": v} for s, v in nodes(6, 5).items()],
        "promql_expr_test": [
            _sample("clusterfab:cluster_hourly_usd", "clusterfab:cluster_hourly_usd", 331.261348),
            _sample("clusterfab:gpu_hour_usd", 'clusterfab:gpu_hour_usd{node_group="trainers"}', 6.88),
        ],
    }


def _team_gpus_recording_test() -> dict[str, Any]:
    """Kubernetes: a team's GPUs in use, over its queues."""
    series = {
        **research("clusterfab_kueue_team_gpus_in_use", "16x5"),
        **agent("clusterfab_kueue_team_gpus_in_use", "8x5", team="infra", cluster_queue="infra"),
    }
    return {
        "interval": "30s",
        "input_series": [{"series": s, "values": v} for s, v in series.items()],
        "promql_expr_test": [
            {
                "expr": "clusterfab:team_gpus_in_use",
                "eval_time": "1m",
                "exp_samples": [
                    {"labels": 'clusterfab:team_gpus_in_use{team="infra"}', "value": 8},
                    {"labels": 'clusterfab:team_gpus_in_use{team="research"}', "value": 16},
                ],
            }
        ],
    }


def _sample(expr: str, labels: str, value: float) -> dict[str, Any]:
    return {"expr": expr, "eval_time": "1m", "exp_samples": [{"labels": labels, "value": value}]}


@pytest.fixture
def rules_with_slurm(cluster_spec: ClusterSpec, catalog: Catalog, tmp_path: Path) -> Path:
    assert cluster_spec.monitoring is not None
    spec = dataclasses.replace(
        cluster_spec, monitoring=dataclasses.replace(cluster_spec.monitoring, slurm=True)
    )
    write_files(render_monitoring(spec, catalog, stack=STACK, project=None, today=TODAY), tmp_path / "out")
    return tmp_path / "out"


def test_every_alert_has_a_case_that_fires_it_and_one_that_does_not(rules_with_slurm: Path) -> None:
    alerts = set(_rules(rules_with_slurm / "rules"))
    firing = {c.alert for c in CASES if c.fires}
    quiet = {c.alert for c in CASES if not c.fires}
    assert alerts == firing == quiet


@pytest.mark.parametrize("suite", tools.SUITES)
def test_promtool_unit_tests_of_every_rule(suite: str, rules_with_slurm: Path) -> None:
    test_file = rules_with_slurm / "rules-test.yml"
    test_file.write_text(yaml.safe_dump(_test_file(rules_with_slurm / "rules"), sort_keys=False, width=4096))
    result = tools.run(suite, "promtool", "test", "rules", test_file, cwd=rules_with_slurm)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout + result.stderr


@pytest.fixture
def rules_with_kueue(catalog: Catalog, tmp_path: Path) -> Path:
    """The Kubernetes fixture's rules: the cluster's own and Kueue's."""
    spec = spec_of(REPO / "tests" / "fixtures" / "monitoring" / "kubernetes.yaml")
    write_files(render_monitoring(spec, catalog, stack=STACK, project=None, today=TODAY), tmp_path / "out")
    return tmp_path / "out"


def test_kueue_alerts_have_a_case_that_fires_each_and_one_that_does_not(rules_with_kueue: Path) -> None:
    document = yaml.safe_load((rules_with_kueue / "rules" / "kueue.yml").read_text())
    alerts = {rule["alert"] for group in document["groups"] for rule in group["rules"] if "alert" in rule}
    firing = {c.alert for c in KUEUE_CASES if c.fires}
    quiet = {c.alert for c in KUEUE_CASES if not c.fires}
    assert (
        alerts
        == firing
        == quiet
        == {
            "KueueGpuWorkloadPendingTooLong",
            "KueueTeamGpuBudgetNearlySpent",
            "KueueQueueHeldByBudget",
            "KueueQueueAgentDown",
            "KueueMetricsUnavailable",
        }
    )


@pytest.mark.parametrize("suite", tools.SUITES)
def test_promtool_unit_tests_of_the_kueue_rules(suite: str, rules_with_kueue: Path) -> None:
    test_file = rules_with_kueue / "rules-test.yml"
    document = _test_file(rules_with_kueue / "rules", KUEUE_CASES, recording=_team_gpus_recording_test)
    test_file.write_text(yaml.safe_dump(document, sort_keys=False, width=4096))
    result = tools.run(suite, "promtool", "test", "rules", test_file, cwd=rules_with_kueue)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout + result.stderr


TPU_WORKER = {
    "job": "tpu-node",
    "instance": "pretrain-0-w3",
    "tpu_slice": "pretrain",
    "machine_type": "v5p-128",
}
"""What the tpu-node job's file puts on a TPU worker's target (monitoring/tpu_discovery)."""
TPU_UP = 'up{job="tpu-node",instance="pretrain-0-w3",tpu_slice="pretrain",machine_type="v5p-128"}'
TPU_CASES = [
    Case("TpuHostDown", {TPU_UP: "0x20"}, "6m", [TPU_WORKER]),
    Case("TpuHostDown", {TPU_UP: "1x20"}, "6m"),
]


def _tpu_up_test() -> dict[str, Any]:
    """The TPU job's targets as the file puts them: a worker that answers is up."""
    return {
        "interval": "30s",
        "input_series": [{"series": TPU_UP, "values": "1x5"}],
        "promql_expr_test": [_sample('up{job="tpu-node"}', TPU_UP, 1)],
    }


@pytest.fixture
def rules_with_tpu(catalog: Catalog, tmp_path: Path) -> Path:
    """A monitored TPU cluster's rules (the v5p multislice example with monitoring)."""
    example = REPO / "blueprints" / "examples" / "gcp-tpu-v5p-multislice.yaml"
    path = tmp_path / "tpu.yaml"
    path.write_text(
        example.read_text().replace("environments:", "monitoring:\n  kind: prometheus\nenvironments:", 1)
    )
    spec = spec_of(path, "dev")
    files = render_monitoring(spec, catalog, stack=STACK, project="my-project-123", today=TODAY)
    write_files(files, tmp_path / "out")
    return tmp_path / "out"


def test_the_tpu_host_alert_has_a_case_that_fires_it_and_one_that_does_not(rules_with_tpu: Path) -> None:
    alerts = set(_rules(rules_with_tpu / "rules")) - {c.alert for c in CASES}
    assert alerts == {c.alert for c in TPU_CASES if c.fires} == {c.alert for c in TPU_CASES if not c.fires}
    assert alerts == {"TpuHostDown"}


@pytest.mark.parametrize("suite", tools.SUITES)
def test_promtool_unit_tests_of_the_tpu_host_rule(suite: str, rules_with_tpu: Path) -> None:
    test_file = rules_with_tpu / "rules-test.yml"
    test_file.write_text(
        yaml.safe_dump(
            _test_file(rules_with_tpu / "rules", TPU_CASES, recording=_tpu_up_test),
            sort_keys=False,
            width=4096,
        )
    )
    result = tools.run(suite, "promtool", "test", "rules", test_file, cwd=rules_with_tpu)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout + result.stderr
