"""Alert and recording rules: NVIDIA's Xid catalog, DCGM's error, throttling and health fields, exporter
and node availability, InfiniBand ports (clusters with an InfiniBand node group), full file systems and the
cluster's burn rate; the scheduler's own come from its plugin (Slurm's: drained nodes, team budgets, the
node sync).

Each rule watches a metric the exporters really expose (dcgm-exporter with clusterfab's counters file,
the node exporter, the scheduler's exporter) or a recording rule defined here; tests check that, and run every
alert through `promtool test rules` with series that fire it and series that do not. Severities: critical
(the GPU or node needs an operator now: drain it, reset the GPU, reboot or replace the node), warning
(degraded, act soon), info (worth seeing on a dashboard, not worth an e-mail).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

from clusterfab.catalog import Catalog
from clusterfab.catalog.models import InfinibandPorts, Xid
from clusterfab.cost.estimate import HOURS_PER_MONTH, estimate_cost
from clusterfab.monitoring.schedulers import MonitoredScheduler, RuleFile
from clusterfab.monitoring.targets import DCGM_JOB, NODE_JOB
from clusterfab.monitoring.tpu_hosts import TPU_JOB, tpu_discovery_enabled
from clusterfab.spec import ClusterSpec

Severity = Literal["critical", "warning", "info"]

XID_ALERTS: dict[str, tuple[Severity, str]] = {
    "GpuXidFallenOffTheBus": (
        "critical",
        "the GPU is gone from PCIe: drain the node and restart it (RESTART_BM)",
    ),
    "GpuXidUncorrectableMemoryError": (
        "critical",
        "uncorrectable GPU memory error: drain the node and reset the GPU; replace it if it recurs",
    ),
    "GpuXidNvlinkError": ("critical", "NVLink fault: drain the node and reset the GPU (or the node)"),
    "GpuXidResetRequired": ("critical", "the GPU needs a reset: drain the node and reset the GPU"),
    "GpuXidContainedMemoryError": (
        "warning",
        "contained memory error: the affected application must restart; reset the GPU when convenient",
    ),
    "GpuXidRowRemapEvent": (
        "info",
        "memory rows were remapped or single-bit errors are frequent: watch the GPU",
    ),
    "GpuXidApplicationFault": (
        "info",
        "an application fault (illegal address, exception): check the job's code",
    ),
}
"""The Xid alerts (the catalog's `alert` of each row) with their severity and what to do."""

PAGE_ACTIONS = frozenset(
    {"RESTART_BM", "RESET_GPU", "WORKFLOW_XID_48", "WORKFLOW_NVLINK_ERR", "WORKFLOW_NVLINK5_ERR"}
)
"""Immediate actions in NVIDIA's catalog that need an operator: their Xids alert at critical."""

HEALTH_FAIL, HEALTH_WARN = 20, 10
"""DCGM_HEALTH_RESULT_FAIL and _WARN (go-dcgm pkg/dcgm/const.go), the values of DCGM_EXP_GPU_HEALTH_STATUS."""

FILESYSTEMS = 'fstype!~"tmpfs|ramfs|overlay|squashfs|nsfs"'
"""File systems worth watching: not memory-backed or image layers."""


@dataclass(frozen=True)
class Rule:
    """One alerting or recording rule, in the form Prometheus' rule files take."""

    name: str
    expr: str
    record: bool = False
    duration: str | None = None
    severity: Severity | None = None
    labels: dict[str, str] = field(default_factory=dict)
    summary: str = ""
    description: str = ""

    def document(self) -> dict[str, Any]:
        if self.record:
            doc: dict[str, Any] = {"record": self.name, "expr": self.expr}
            if self.labels:
                doc["labels"] = dict(self.labels)
            return doc
        doc = {"alert": self.name, "expr": self.expr}
        if self.duration:
            doc["for"] = self.duration
        doc["labels"] = {"severity": self.severity or "warning", **self.labels}
        doc["annotations"] = {"summary": self.summary, "description": self.description}
        return doc


@dataclass(frozen=True)
class RuleGroup:
    file: str
    """The rule file's name under rules/."""
    name: str
    rules: tuple[Rule, ...]

    def document(self) -> dict[str, Any]:
        return {"groups": [{"name": self.name, "rules": [r.document() for r in self.rules]}]}


def _gpu(what: str) -> str:
    return f"{what} on GPU {{{{ $labels.gpu }}}} of {{{{ $labels.instance }}}} ({{{{ $labels.node_group }}}})"


def xid_rules(rows: Sequence[Xid]) -> list[Rule]:
    """One alert per Xid group of NVIDIA's catalog, on dcgm-exporter's per-Xid event count."""
    grouped: dict[str, list[Xid]] = {}
    for row in rows:
        grouped.setdefault(row.alert, []).append(row)
    rules = []
    for alert in sorted(grouped, key=list(XID_ALERTS).index):
        members = grouped[alert]
        severity, action = XID_ALERTS[alert]
        codes = "|".join(str(row.xid) for row in members)
        catalog = "; ".join(f"Xid {r.xid} {r.description} ({r.immediate})" for r in members)
        rules.append(
            Rule(
                name=alert,
                expr=f'DCGM_EXP_XID_ERRORS_COUNT{{xid=~"{codes}"}} > 0',
                severity=severity,
                summary=_gpu("Xid {{ $labels.xid }}"),
                description=f"{action}. NVIDIA's Xid catalog: {catalog}.",
            )
        )
    return rules


def gpu_health_rules() -> list[Rule]:
    """DCGM's error fields, clock events and health checks."""
    return [*_gpu_error_rules(), *_gpu_throttling_rules(), *_gpu_health_check_rules()]


def _gpu_error_rules() -> list[Rule]:
    """Memory (ECC, row remapping) and NVLink errors."""
    nvlink = " + ".join(
        f"increase(DCGM_FI_DEV_NVLINK_{kind}_ERROR_COUNT_TOTAL[10m])" for kind in ("CRC_DATA", "RECOVERY")
    )
    return [
        Rule(
            "GpuDoubleBitEccError",
            "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL > 0",
            severity="critical",
            summary=_gpu("uncorrectable (double-bit) ECC errors"),
            description="The GPU reported double-bit ECC errors since the driver loaded: drain the "
            "node and reset "
            "the GPU; replace it if they recur.",
        ),
        Rule(
            "GpuRowRemapFailure",
            "DCGM_FI_DEV_ROW_REMAP_FAILURE > 0",
            severity="critical",
            summary=_gpu("row remapping failed"),
            description="The GPU ran out of spare memory rows or could not remap one: replace the GPU.",
        ),
        Rule(
            "GpuRowRemapPending",
            "DCGM_FI_DEV_ROW_REMAP_PENDING > 0",
            duration="10m",
            severity="warning",
            summary=_gpu("a row remap is pending"),
            description="Memory rows are marked for remapping; they are remapped at the next GPU reset.",
        ),
        Rule(
            "GpuNvlinkErrors",
            f"({nvlink}) > 0",
            severity="warning",
            summary=_gpu("NVLink data CRC or recovery errors"),
            description="NVLink links of the GPU logged data CRC or recovery errors in the last 10 minutes; "
            "collective bandwidth may drop. Check `nvidia-smi nvlink -e` and reset the GPU if they persist.",
        ),
    ]


def _gpu_throttling_rules() -> list[Rule]:
    """Clocks held down by temperature or by the hardware's power protection."""
    return [
        Rule(
            "GpuThermalThrottling",
            'DCGM_EXP_CLOCK_EVENTS_COUNT{clock_event=~"hw_thermal|sw_thermal"} > 0',
            duration="5m",
            severity="warning",
            summary=_gpu("clocks held down by temperature ({{ $labels.clock_event }})"),
            description="The GPU has been thermally throttled for 5 minutes: check cooling and airflow.",
        ),
        Rule(
            "GpuPowerThrottling",
            'DCGM_EXP_CLOCK_EVENTS_COUNT{clock_event=~"hw_power_brake|hw_slowdown"} > 0',
            duration="5m",
            severity="warning",
            summary=_gpu("hardware power brake or slowdown ({{ $labels.clock_event }})"),
            description="The GPU's clocks are cut by the hardware (power brake or slowdown, not the normal "
            "power cap): check the power supply and the board.",
        ),
    ]


def _gpu_health_check_rules() -> list[Rule]:
    """DCGM's background health watches."""
    return [
        Rule(
            "GpuHealthFailing",
            f"DCGM_EXP_GPU_HEALTH_STATUS == {HEALTH_FAIL}",
            severity="critical",
            summary=_gpu(
                "DCGM health check {{ $labels.health_watch }} fails ({{ $labels.health_error_code }})"
            ),
            description="DCGM's background health watch reports a failure: drain the node and run "
            "`dcgmi diag -r 3` on it.",
        ),
        Rule(
            "GpuHealthWarning",
            f"DCGM_EXP_GPU_HEALTH_STATUS == {HEALTH_WARN}",
            duration="15m",
            severity="warning",
            summary=_gpu(
                "DCGM health check {{ $labels.health_watch }} warns ({{ $labels.health_error_code }})"
            ),
            description="DCGM's background health watch has warned for 15 minutes.",
        ),
    ]


def availability_rules(spec: ClusterSpec) -> list[Rule]:
    """Exporters and nodes that stop answering, and nodes that show fewer GPUs than their machine has."""
    rules = [
        Rule(
            "NodeDown",
            f'up{{job="{NODE_JOB}"}} == 0',
            duration="5m",
            severity="critical",
            summary="node {{ $labels.instance }} ({{ $labels.node_group }}) does not answer",
            description="The node exporter of a running instance has not answered for 5 minutes: "
            "the node hangs, "
            "is still booting, or its network is down.",
        ),
        Rule(
            "DcgmExporterDown",
            f'up{{job="{DCGM_JOB}"}} == 0',
            duration="5m",
            severity="critical",
            summary="dcgm-exporter on {{ $labels.instance }} ({{ $labels.node_group }}) does not answer",
            description="No GPU metrics (and no GPU alerts) from this node: check nvidia-dcgm and "
            "dcgm-exporter.",
        ),
    ]
    for group in spec.node_groups:
        gpus = group.gpus_per_node
        rules.append(
            Rule(
                "GpuMissing",
                f'(up{{job="{NODE_JOB}", node_group="{group.name}"}} == 1) unless on (instance) '
                f'(count by (instance) (DCGM_FI_DEV_GPU_TEMP{{node_group="{group.name}"}}) >= {gpus}) '
                f'unless on (instance) (up{{job="{DCGM_JOB}"}} == 0)',
                duration="5m",
                severity="critical",
                labels={"expected_gpus": str(gpus)},
                summary=f"node {{{{ $labels.instance }}}} shows fewer than {gpus} GPUs",
                description=f"A {group.machine.name} node of {group.name} has {gpus} GPUs; DCGM "
                f"reports fewer "
                "(a GPU fell off the bus or the driver lost it): drain and reboot the node.",
            )
        )
    if tpu_discovery_enabled(spec):
        rules.append(
            Rule(
                "TpuHostDown",
                f'up{{job="{TPU_JOB}"}} == 0',
                duration="5m",
                severity="critical",
                summary="TPU host {{ $labels.instance }} ({{ $labels.tpu_slice }}) does not answer",
                description="The node exporter of a worker of a READY TPU VM has not answered for 5 "
                "minutes: the host hangs, is still booting, or its network is down.",
            )
        )
    return rules


IB_ACTIVE, IB_LINK_UP = 4, 5
"""The kernel's port state 4: ACTIVE and physical state 5: LinkUp, node_exporter's
node_infiniband_state_id and node_infiniband_physical_state_id (collector/infiniband_linux.go)."""

BYTES_PER_SECOND_PER_GBPS = 125_000_000
"""node_infiniband_rate_bytes_per_second is the port's rate file ("400 Gb/sec (4X NDR)") in Gb/s times
125,000,000 (prometheus/procfs v0.12.0, the node exporter v1.7.0's: sysfs/class_infiniband.go parseRate)."""

IB_ERROR_COUNTERS: tuple[tuple[str, str, int, str, str], ...] = (
    ("InfinibandLinkDowned", "node_infiniband_link_downed_total", 0, "the link went down",
     "The port failed to recover from an error state and went down: jobs using it lost their "
     "connections. Check the cable and the switch port; `ibstat` shows the port now."),
    ("InfinibandSymbolErrors", "node_infiniband_symbol_error_total", 0, "symbol errors",
     "Minor link errors on the physical lanes (a cable or transceiver going bad): watch the port and "
     "replace the cable if they keep rising."),
    ("InfinibandLinkErrorRecovery", "node_infiniband_link_error_recovery_total", 0,
     "link error recoveries", "The link retrained after errors (it flaps): bandwidth drops while it "
     "does; check the cable and the switch port."),
    ("InfinibandPortReceiveErrors", "node_infiniband_port_errors_received_total", 100,
     "more than 100 receive errors", "The port received malformed packets: a bad cable or a remote "
     "port in trouble."),
)  # fmt: skip
"""The error counters watched, each an alert when it grows more than its limit in 10 minutes: the
counters Azure's InfiniBand link validation reads with perfquery and the counts it calls for a look
("Investigate": SymbolErrorCounter, LinkErrorRecoveryCounter, LinkDownedCounter above 0, PortRcvErrors
above 100), Azure/ai-infrastructure-on-azure a01b073 skills/slurm/ib_link_validation/SKILL.md
"Threshold guidance", read 2026-11-29."""


def _port(what: str) -> str:
    return (
        f"{what} on InfiniBand port {{{{ $labels.device }}}}:{{{{ $labels.port }}}} of "
        "{{ $labels.instance }} ({{ $labels.node_group }})"
    )


def infiniband_rules(spec: ClusterSpec) -> list[Rule]:
    """Port state, speed and error counters of the node groups whose fabric is InfiniBand, from the node
    exporter's infiniband collector; the speed a group's ports must run at is its machine type's."""
    groups = [
        (group, ports)
        for group in spec.node_groups
        if group.fabric == "infiniband" and (ports := group.machine.infiniband_ports()) is not None
    ]
    if not groups:
        return []
    names = [group.name for group, _ in groups]
    matcher = f'node_group="{names[0]}"' if len(names) == 1 else f'node_group=~"{"|".join(names)}"'
    selector = f'job="{NODE_JOB}", {matcher}'
    rules = [
        Rule(
            "InfinibandPortDown",
            f"node_infiniband_state_id{{{selector}}} != {IB_ACTIVE} "
            f"or node_infiniband_physical_state_id{{{selector}}} != {IB_LINK_UP}",
            duration="2m",
            severity="critical",
            summary=_port("not Active or not LinkUp"),
            description="The port is not in state 4: ACTIVE with physical state 5: LinkUp, so NCCL cannot "
            "use it: drain the node; `ibstat` shows the port's state.",
        ),
        *(_rated_speed_rule(group.name, group.machine.name, ports) for group, ports in groups),
    ]
    for name, metric, limit, what, description in IB_ERROR_COUNTERS:
        rules.append(
            Rule(
                name,
                f"increase({metric}{{{selector}}}[10m]) > {limit}",
                severity="warning",
                summary=_port(f"{what} in 10 minutes"),
                description=description,
            )
        )
    return rules


def _rated_speed_rule(group: str, machine: str, ports: InfinibandPorts) -> Rule:
    """Counted per node, not per port: a port that vanished has no rate to compare, and RDMA devices of
    a node that are not its InfiniBand HCAs (an Ethernet one) run at other speeds."""
    selector = f'job="{NODE_JOB}", node_group="{group}"'
    rated = ports.gbps_per_port * BYTES_PER_SECOND_PER_GBPS
    return Rule(
        "InfinibandPortsBelowRatedSpeed",
        f"(up{{{selector}}} == 1) unless on (instance) (count by (instance) "
        f"(node_infiniband_rate_bytes_per_second{{{selector}}} >= {rated}) >= {ports.hcas})",
        duration="5m",
        severity="critical",
        labels={"expected_ports": str(ports.hcas), "rated_gbps": str(ports.gbps_per_port)},
        summary=f"node {{{{ $labels.instance }}}} ({{{{ $labels.node_group }}}}) has fewer than {ports.hcas} "
        f"InfiniBand ports at {ports.gbps_per_port} Gb/s",
        description=f"A {machine} node has {ports.hcas} InfiniBand HCAs at {ports.gbps_per_port} Gb/s "
        "each; fewer run at that rate (an HCA is missing or a link trained at a lower speed), which slows "
        "every collective the node is in: drain the node and read /sys/class/infiniband/*/ports/1/rate.",
    )


def storage_rules() -> list[Rule]:
    ratio = f"node_filesystem_avail_bytes{{{FILESYSTEMS}}} / node_filesystem_size_bytes{{{FILESYSTEMS}}}"
    return [
        Rule(
            "FilesystemNearlyFull",
            f"{ratio} < 0.10 and node_filesystem_readonly{{{FILESYSTEMS}}} == 0",
            duration="15m",
            severity="warning",
            summary="{{ $labels.mountpoint }} on {{ $labels.instance }} is over 90% full",
            description="Less than 10% of the file system is free.",
        ),
        Rule(
            "FilesystemFull",
            f"{ratio} < 0.03 and node_filesystem_readonly{{{FILESYSTEMS}}} == 0",
            duration="5m",
            severity="critical",
            summary="{{ $labels.mountpoint }} on {{ $labels.instance }} is over 97% full",
            description="Jobs writing checkpoints here will fail soon.",
        ),
    ]


def _usd(amount: Decimal) -> str:
    """A price as PromQL takes it: to the millionth of a dollar, without trailing zeros."""
    return format(amount.quantize(Decimal("0.000001")).normalize(), "f")


def cost_rules(spec: ClusterSpec, catalog: Catalog, today: dt.date) -> list[Rule]:
    """The cluster's running cost priced as `clusterfab cost` prices it, and burn-rate alerts on the budget.

    Node groups are priced per running node (each discovered node-exporter target is a running instance);
    TPU slices, storage and the monitoring node at their estimate. Unpriced items add nothing.
    """
    estimate = estimate_cost(spec, catalog, today=today)
    rules = [
        Rule("clusterfab:node_group_nodes", f'count by (node_group) (up{{job="{NODE_JOB}"}})', record=True)
    ]
    fixed = Decimal(0)
    gpus = {g.name: g.gpus_per_node for g in spec.node_groups}
    for item in estimate.items:
        if item.unit_price_usd is None:
            continue
        if item.kind != "node_group":
            fixed += item.hourly_usd or Decimal(0)
            continue
        price = _usd(item.unit_price_usd)
        rules.append(
            Rule(
                "clusterfab:node_group_hourly_usd",
                f'clusterfab:node_group_nodes{{node_group="{item.name}"}} * {price}',
                record=True,
            )
        )
        per_gpu = _usd(item.unit_price_usd / gpus[item.name])
        rules.append(
            Rule(
                "clusterfab:gpu_hour_usd", f"vector({per_gpu})", record=True, labels={"node_group": item.name}
            )
        )
    rules.append(Rule("clusterfab:fixed_hourly_usd", f"vector({_usd(fixed)})", record=True))
    rules.append(
        Rule(
            "clusterfab:cluster_hourly_usd",
            "(sum(clusterfab:node_group_hourly_usd) or vector(0)) + clusterfab:fixed_hourly_usd",
            record=True,
        )
    )
    return rules + list(_budget_alerts(spec))


def _budget_alerts(spec: ClusterSpec) -> Iterable[Rule]:
    budget = spec.budget
    if budget is None:
        return
    if budget.max_hourly_usd is not None:
        limit = _usd(budget.max_hourly_usd)
        yield Rule(
            "BudgetHourlyExceeded",
            f"clusterfab:cluster_hourly_usd > {limit}",
            duration="30m",
            severity="warning",
            summary=f'the cluster costs {{{{ $value | printf "%.2f" }}}} USD/h, over the {limit} USD/h '
            "budget",
            description="Running nodes priced with the catalog's prices exceed budget.max_hourly_usd.",
        )
    if budget.max_monthly_usd is not None:
        limit = _usd(budget.max_monthly_usd)
        hours = _usd(HOURS_PER_MONTH)
        yield Rule(
            "BudgetMonthlyBurnRate",
            f"avg_over_time(clusterfab:cluster_hourly_usd[1d]) * {hours} > {limit}",
            duration="1h",
            severity="warning",
            summary=f'at the last day\'s rate the cluster costs {{{{ $value | printf "%.0f" }}}} '
            f"USD a month, "
            f"over the {limit} USD budget",
            description=f"The average hourly cost of the last 24 hours times {hours} hours exceeds "
            "budget.max_monthly_usd.",
        )


def _infiniband_group(spec: ClusterSpec) -> list[RuleGroup]:
    """The InfiniBand rule file, only for a cluster with an InfiniBand node group."""
    rules = infiniband_rules(spec)
    return [RuleGroup("infiniband.yml", "infiniband", tuple(rules))] if rules else []


def rule_groups(
    spec: ClusterSpec, catalog: Catalog, *, schedulers: Sequence[MonitoredScheduler], today: dt.date
) -> list[RuleFile]:
    """Every rule file of the cluster, in a fixed order: the cluster's own, then those of the `schedulers`
    it monitors."""
    groups: list[RuleFile] = [
        RuleGroup("gpu.yml", "gpu", (*xid_rules(catalog.monitoring.xids.rows), *gpu_health_rules())),
        RuleGroup("availability.yml", "availability", tuple(availability_rules(spec))),
        RuleGroup("storage.yml", "storage", tuple(storage_rules())),
        *_infiniband_group(spec),
        RuleGroup("cost.yml", "cost", tuple(cost_rules(spec, catalog, today))),
    ]
    for scheduler in schedulers:
        groups += scheduler.alert_rules(spec)
    return groups
