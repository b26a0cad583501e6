"""The Grafana dashboards as code (grafana-foundation-sdk, pinned to the Grafana release the monitoring
host installs: 1769699379!11.6.0 for Grafana 11.6).

A development tool: `uv run python -m clusterfab.monitoring.dashboard_build` writes the JSON into
clusterfab/monitoring/dashboards/, which is what ships and what `clusterfab render monitoring` copies;
a test rebuilds them and fails when the shipped JSON is stale. Every query names only metrics the
exporters expose (dcgm-exporter with clusterfab's counters file, the node exporter) or the recording
rules of clusterfab.monitoring.rules, which another test checks.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grafana_foundation_sdk.builders import dashboard, prometheus, stat, table, text, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import DataSourceRef, GridPos, VariableRefresh
from grafana_foundation_sdk.models.prometheus import PromQueryFormat

from clusterfab.monitoring.grafana import DATASOURCE_UID
from clusterfab.spec.monitoring import SCRAPE_INTERVAL_SECONDS

OUT = Path(__file__).parent / "dashboards"
DATASOURCE = DataSourceRef(type_val="prometheus", uid=DATASOURCE_UID)
WIDTH, HEIGHT = 12, 8
SAMPLE_HOURS = f"{SCRAPE_INTERVAL_SECONDS} / 3600"
"""Each sample of a scraped series stands for one scrape interval: count_over_time x this = hours."""
GROUP = 'node_group=~"$node_group"'
NODE = 'instance="$instance"'
JOB_GPUS = 'DCGM_FI_DEV_GPU_TEMP{hpc_job!=""}'
PRICED = "* on (node_group) group_left clusterfab:gpu_hour_usd"
"""GPU samples times the node group's price per GPU-hour."""
NICS = 'device!~"lo|docker.*|veth.*"'
"""Every NIC but the loopback and container interfaces."""
TEAM = '"team", "$1", "hpc_job", "([^:]+):.*"'
"""Slurm's prolog writes `<account>:<job id>` into dcgm-exporter's job-mapping files; the team is the
account."""


@dataclass(frozen=True)
class Query:
    expr: str
    legend: str = ""
    instant: bool = False


@dataclass(frozen=True)
class Panel:
    """One panel, as data: each dashboard is a table of these (OVERVIEW_PANELS, ...), which build() lays
    out left to right in rows 24 units wide."""

    kind: str
    """timeseries | stat | table | text"""
    title: str
    queries: tuple[Query, ...] = ()
    unit: str = ""
    description: str = ""
    width: int = WIDTH
    height: int = HEIGHT


def _target(query: Query, ref: str) -> prometheus.Dataquery:
    target = prometheus.Dataquery().expr(query.expr).ref_id(ref).datasource(DATASOURCE)
    if query.legend:
        target = target.legend_format(query.legend)
    if query.instant:
        # Instant tables, formatted as tables (one row per series).
        target = target.instant().format(PromQueryFormat.TABLE)
    return target


def _panel(spec: Panel, x: int, y: int) -> Any:
    builders: dict[str, Any] = {
        "timeseries": timeseries.Panel,
        "stat": stat.Panel,
        "table": table.Panel,
        "text": text.Panel,
    }
    panel = builders[spec.kind]().title(spec.title).grid_pos(GridPos(h=spec.height, w=spec.width, x=x, y=y))
    if spec.kind == "text":
        return panel.mode("markdown").content(spec.description)
    panel = panel.datasource(DATASOURCE)
    if spec.description:
        panel = panel.description(spec.description)
    if spec.unit:
        panel = panel.unit(spec.unit)
    for index, query in enumerate(spec.queries):
        panel = panel.with_target(_target(query, chr(ord("A") + index)))
    return panel


def _variable(name: str, label: str, query: str, *, multi: bool) -> dashboard.QueryVariable:
    variable = (
        dashboard.QueryVariable(name)
        .label(label)
        .datasource(DATASOURCE)
        .query(query)
        .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
    )
    if multi:
        variable = variable.multi(True).include_all(True)
    return variable


def build(uid: str, title: str, description: str, panels: Sequence[Panel], variables: Sequence[Any]) -> Any:
    board = (
        dashboard.Dashboard(title)
        .uid(uid)
        .description(description)
        .tags(["clusterfab", "gpu"])
        .time("now-6h", "now")
        .refresh("1m")
        .editable()
    )
    for variable in variables:
        board = board.with_variable(variable)
    x = y = 0
    for spec in panels:
        if x + spec.width > 24:
            x, y = 0, y + HEIGHT
        board = board.with_panel(_panel(spec, x, y))
        x += spec.width
    return board.build()


def _node_group_variable() -> Any:
    return _variable("node_group", "Node group", 'label_values(up{job="node"}, node_group)', multi=True)


OVERVIEW_PANELS: tuple[Panel, ...] = (
    Panel("stat", "Nodes up", (Query(f'sum(up{{job="node", {GROUP}}})'),), width=6, height=4),
    Panel("stat", "GPUs reporting", (Query(f"count(DCGM_FI_DEV_GPU_TEMP{{{GROUP}}})"),), width=6, height=4),
    Panel(
        "stat",
        "Critical alerts firing",
        (Query('count(ALERTS{alertstate="firing", severity="critical"}) or vector(0)'),),
        width=6,
        height=4,
    ),
    Panel(
        "stat",
        "Cluster cost",
        (Query("clusterfab:cluster_hourly_usd"),),
        unit="currencyUSD",
        width=6,
        height=4,
    ),
    Panel(
        "timeseries",
        "GPU utilization",
        (Query(f"avg by (node_group) (DCGM_FI_DEV_GPU_UTIL{{{GROUP}}})", "{{node_group}}"),),
        unit="percent",
    ),
    Panel(
        "timeseries",
        "Tensor core and SM activity",
        (
            Query(
                f"avg by (node_group) (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{{{GROUP}}})", "tensor {{node_group}}"
            ),
            Query(f"avg by (node_group) (DCGM_FI_PROF_SM_ACTIVE{{{GROUP}}})", "SM {{node_group}}"),
        ),
        unit="percentunit",
    ),
    Panel(
        "timeseries",
        "Memory bandwidth (DRAM active)",
        (Query(f"avg by (node_group) (DCGM_FI_PROF_DRAM_ACTIVE{{{GROUP}}})", "{{node_group}}"),),
        unit="percentunit",
    ),
    Panel(
        "timeseries",
        "GPU memory used",
        (
            Query(
                f"sum by (node_group) (DCGM_FI_DEV_FB_USED{{{GROUP}}}) / "
                f"sum by (node_group) (DCGM_FI_DEV_FB_USED{{{GROUP}}} + DCGM_FI_DEV_FB_FREE{{{GROUP}}})",
                "{{node_group}}",
            ),
        ),
        unit="percentunit",
    ),
    Panel(
        "timeseries",
        "Power draw",
        (Query(f"sum by (node_group) (DCGM_FI_DEV_POWER_USAGE{{{GROUP}}})", "{{node_group}}"),),
        unit="watt",
    ),
    Panel(
        "timeseries",
        "Time throttled (thermal, power)",
        (
            Query(
                f"avg by (node_group) (rate(DCGM_FI_DEV_THERMAL_VIOLATION{{{GROUP}}}[5m])) / 1e6",
                "thermal {{node_group}}",
            ),
            Query(
                f"avg by (node_group) (rate(DCGM_FI_DEV_POWER_VIOLATION{{{GROUP}}}[5m])) / 1e6",
                "power {{node_group}}",
            ),
        ),
        unit="percentunit",
        description="Share of time the clocks were held down (violation counters count microseconds).",
    ),
    Panel(
        "table",
        "Xid events in the last day",
        (
            Query(
                "sum by (instance, node_group, gpu, xid) (max_over_time(DCGM_EXP_XID_ERRORS_COUNT[1d])) > 0",
                instant=True,
            ),
        ),
        width=24,
    ),
)


def overview() -> Any:
    return build(
        "clusterfab-overview",
        "Cluster overview",
        "Is the cluster up, healthy and busy: nodes, GPUs, utilization, tensor activity, memory, power, "
        "throttling, Xids and cost.",
        OVERVIEW_PANELS,
        [_node_group_variable()],
    )


GPU_NODE_PANELS: tuple[Panel, ...] = (
    Panel(
        "timeseries",
        "GPU utilization",
        (Query(f"DCGM_FI_DEV_GPU_UTIL{{{NODE}}}", "GPU {{gpu}}"),),
        unit="percent",
    ),
    Panel(
        "timeseries",
        "Temperature",
        (
            Query(f"DCGM_FI_DEV_GPU_TEMP{{{NODE}}}", "GPU {{gpu}}"),
            Query(f"DCGM_FI_DEV_MEMORY_TEMP{{{NODE}}}", "HBM {{gpu}}"),
        ),
        unit="celsius",
    ),
    Panel(
        "timeseries",
        "Power draw and limit",
        (
            Query(f"DCGM_FI_DEV_POWER_USAGE{{{NODE}}}", "GPU {{gpu}}"),
            Query(f"DCGM_FI_DEV_POWER_MGMT_LIMIT{{{NODE}}}", "limit {{gpu}}"),
        ),
        unit="watt",
    ),
    Panel("timeseries", "SM clock", (Query(f"DCGM_FI_DEV_SM_CLOCK{{{NODE}}}", "GPU {{gpu}}"),), unit="MHz"),
    Panel(
        "timeseries",
        "GPU memory used",
        (Query(f"DCGM_FI_DEV_FB_USED{{{NODE}}}", "GPU {{gpu}}"),),
        unit="decmbytes",
    ),
    Panel(
        "timeseries",
        "Clock events",
        (Query(f"DCGM_EXP_CLOCK_EVENTS_COUNT{{{NODE}}} > 0", "GPU {{gpu}} {{clock_event}}"),),
        description="Clock events counted over dcgm-exporter's window (power cap is normal under load; "
        "thermal, "
        "power brake and hardware slowdown are not).",
    ),
    Panel(
        "timeseries",
        "ECC errors",
        (
            Query(f"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL{{{NODE}}}", "single-bit {{gpu}}"),
            Query(f"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{{{NODE}}}", "double-bit {{gpu}}"),
        ),
    ),
    Panel(
        "timeseries",
        "Remapped rows",
        (
            Query(f"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS{{{NODE}}}", "correctable {{gpu}}"),
            Query(f"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{{{NODE}}}", "uncorrectable {{gpu}}"),
            Query(f"DCGM_FI_DEV_ROW_REMAP_PENDING{{{NODE}}}", "pending {{gpu}}"),
        ),
    ),
    Panel(
        "timeseries",
        "NVLink errors per second",
        (
            Query(f"rate(DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL{{{NODE}}}[5m])", "CRC flit {{gpu}}"),
            Query(f"rate(DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL{{{NODE}}}[5m])", "CRC data {{gpu}}"),
            Query(f"rate(DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL{{{NODE}}}[5m])", "replay {{gpu}}"),
            Query(f"rate(DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL{{{NODE}}}[5m])", "recovery {{gpu}}"),
        ),
    ),
    Panel(
        "timeseries",
        "PCIe replays per second",
        (Query(f"rate(DCGM_FI_DEV_PCIE_REPLAY_COUNTER{{{NODE}}}[5m])", "GPU {{gpu}}"),),
    ),
    Panel(
        "table",
        "DCGM health (0 pass, 10 warn, 20 fail)",
        (Query(f"DCGM_EXP_GPU_HEALTH_STATUS{{{NODE}}} > 0", instant=True),),
    ),
    Panel(
        "timeseries",
        "Host CPU busy and memory available",
        (
            Query(f'1 - avg(rate(node_cpu_seconds_total{{{NODE}, mode="idle"}}[5m]))', "CPU busy"),
            Query(
                f"node_memory_MemAvailable_bytes{{{NODE}}} / node_memory_MemTotal_bytes{{{NODE}}}",
                "memory available",
            ),
        ),
        unit="percentunit",
    ),
)


def gpu_node() -> Any:
    node = _variable("instance", "Node", "label_values(DCGM_FI_DEV_GPU_TEMP, instance)", multi=False)
    return build(
        "clusterfab-gpu-node",
        "GPU node detail",
        "One node's GPUs: utilization, temperature, power, clocks, memory, clock events, ECC, row remapping, "
        "NVLink and PCIe errors, DCGM health, host CPU and memory.",
        GPU_NODE_PANELS,
        [node],
    )


def _gpu_hours(by: str, selector: str = JOB_GPUS) -> str:
    return f"sum by ({by}) (count_over_time({selector}[$__range])) * {SAMPLE_HOURS}"


def _gpu_cost(by: str) -> str:
    return f"sum by ({by}) (count_over_time({JOB_GPUS}[$__range]) {PRICED}) * {SAMPLE_HOURS}"


def _by_team(expr_of_series: str) -> str:
    return f"label_replace({expr_of_series}, {TEAM})"


TEAM_GPU_HOURS = f"sum by (team) ({_by_team(f'count_over_time({JOB_GPUS}[$__range])')}) * {SAMPLE_HOURS}"
TEAM_GPU_COST = (
    f"sum by (team) ({_by_team(f'count_over_time({JOB_GPUS}[$__range]) {PRICED}')}) * {SAMPLE_HOURS}"
)
GPU_COST_PANELS: tuple[Panel, ...] = (
    Panel(
        "timeseries",
        "Cluster cost per hour",
        (
            Query("clusterfab:cluster_hourly_usd", "cluster"),
            Query("clusterfab:node_group_hourly_usd", "{{node_group}}"),
        ),
        unit="currencyUSD",
        description="Running nodes priced with the catalog's prices, as `clusterfab cost` prices them.",
    ),
    Panel(
        "stat",
        "Spent in the time range",
        (Query(f"sum_over_time(clusterfab:cluster_hourly_usd[$__range]) * {SAMPLE_HOURS}", instant=True),),
        unit="currencyUSD",
    ),
    Panel(
        "table",
        "GPU hours by node group (allocated and busy)",
        (
            Query(_gpu_hours("node_group", 'DCGM_FI_DEV_GPU_TEMP{node_group=~"$node_group"}'), instant=True),
            Query(
                "sum by (node_group) "
                '(sum_over_time(DCGM_FI_DEV_GPU_UTIL{node_group=~"$node_group"}[$__range]))'
                f" / 100 * {SAMPLE_HOURS}",
                instant=True,
            ),
        ),
    ),
    Panel("table", "GPU hours by job", (Query(_gpu_hours("hpc_job"), instant=True),), unit="h"),
    Panel("table", "GPU cost by job", (Query(_gpu_cost("hpc_job"), instant=True),), unit="currencyUSD"),
    Panel("table", "GPU hours by team", (Query(TEAM_GPU_HOURS, instant=True),), unit="h"),
    Panel("table", "GPU cost by team", (Query(TEAM_GPU_COST, instant=True),), unit="currencyUSD"),
    Panel(
        "text",
        "How jobs and teams are counted",
        description="A GPU counts for a job while dcgm-exporter's job-mapping file for it names the job "
        "(`hpc_job`); with Slurm, the prolog writes `<account>:<job id>`, and the team is the Slurm "
        "account. "
        "Cost is GPU hours times the node group's price per GPU-hour (`clusterfab:gpu_hour_usd`).",
        width=24,
        height=4,
    ),
)


def gpu_cost() -> Any:
    return build(
        "clusterfab-gpu-cost",
        "GPU hours and cost",
        "Who used the GPUs and what it cost: per node group, per job and per team.",
        GPU_COST_PANELS,
        [_node_group_variable()],
    )


SLURM_NODE_STATES = ("alloc", "mix", "idle", "drain", "down")
NODE_ACTIONS = "clusterfab_slurm_node_actions_total"
SLURM_PANELS: tuple[Panel, ...] = (
    Panel("stat", "GPUs allocated", (Query("slurm_gpus_alloc"),), width=6, height=4),
    Panel("stat", "GPUs idle", (Query("slurm_gpus_idle"),), width=6, height=4),
    Panel("stat", "Nodes drained", (Query("slurm_nodes_drain"),), width=6, height=4),
    Panel(
        "stat",
        "Node sync last ran",
        (Query('time() - clusterfab_slurm_node_program_last_run_timestamp_seconds{program="sync"}'),),
        unit="s",
        width=6,
        height=4,
        description="Seconds since the controller's node sync last ran (every 30 s when all is well).",
    ),
    Panel(
        "timeseries",
        "Nodes by state",
        tuple(Query(f"slurm_nodes_{state}", state) for state in SLURM_NODE_STATES),
    ),
    Panel(
        "timeseries",
        "GPUs in use by team",
        (Query("clusterfab:team_gpus_in_use", "{{account}}"),),
    ),
    Panel(
        "timeseries",
        "Jobs by team and state",
        (Query("sum by (account, state) (slurm_account_jobs)", "{{account}} {{state}}"),),
    ),
    Panel(
        "timeseries",
        "Team GPU-hour budget spent",
        (
            Query(
                "clusterfab_slurm_qos_gpu_minutes_used / clusterfab_slurm_qos_gpu_minutes_limit",
                "{{qos}}",
            ),
        ),
        unit="percentunit",
        description="GrpTRESMins of each team's QOS: at 100% Slurm holds the team's jobs until the "
        "month starts over.",
    ),
    Panel(
        "timeseries",
        "Elastic nodes created, and refused by the cloud (per hour)",
        (
            Query(
                f'sum by (action, outcome) (increase({NODE_ACTIONS}{{program="resume"}}[1h]))',
                "{{action}} ({{outcome}})",
            ),
            Query(f'sum(increase({NODE_ACTIONS}{{program="suspend"}}[1h]))', "deleted when idle"),
        ),
        description="A refusal names the cloud's error code (InsufficientInstanceCapacity, ...); its "
        "nodes went back to power saving with that reason and their jobs wait.",
    ),
    Panel(
        "timeseries",
        "Node sync actions (per hour)",
        (
            Query(
                f'sum by (action, outcome) (increase({NODE_ACTIONS}{{program="sync"}}[1h]))',
                "{{action}} ({{outcome}})",
            ),
        ),
        description="Instances named, addresses set, lost nodes marked down and powered down, orphaned "
        "instances terminated, drained nodes replaced.",
    ),
)


def slurm() -> Any:
    """Only on clusters with Slurm (render.SLURM_DASHBOARD): its metrics come from the controller."""
    return build(
        "clusterfab-slurm",
        "Slurm",
        "The scheduler: nodes and GPUs by state, each team's jobs, GPUs and budget, and what the elastic "
        "node programs did.",
        SLURM_PANELS,
        [],
    )


GPU = 'resource="nvidia.com/gpu"'
KUEUE_BUDGET = "clusterfab_kueue_team_gpu_hours_used / clusterfab_kueue_team_gpu_hours_limit"
KUEUE_PANELS: tuple[Panel, ...] = (
    Panel("stat", "GPUs admitted", (Query("sum(clusterfab_kueue_team_gpus_in_use)"),), width=6, height=4),
    Panel(
        "stat",
        "GPU workloads pending",
        (Query("sum(clusterfab_kueue_pending_gpu_workloads)"),),
        width=6,
        height=4,
    ),
    Panel("stat", "Queues held", (Query("sum(clusterfab_kueue_cluster_queue_held)"),), width=6, height=4),
    Panel(
        "stat",
        "Queue agent last round",
        (Query("time() - max(clusterfab_kueue_agent_last_success_timestamp_seconds)"),),
        unit="s",
        width=6,
        height=4,
        description="Seconds since the queue agent last read the queues (every 30 s when all is well).",
    ),
    Panel("timeseries", "GPUs in use by team", (Query("clusterfab:team_gpus_in_use", "{{team}}"),)),
    Panel(
        "timeseries",
        "Share of the GPU quota in use",
        (
            Query(
                f"sum by (cluster_queue) (kueue_cluster_queue_resource_usage{{{GPU}}}) / "
                f"sum by (cluster_queue) (kueue_cluster_queue_nominal_quota{{{GPU}}})",
                "{{cluster_queue}}",
            ),
        ),
        unit="percentunit",
        description="Admitted GPUs over the queue's nominal quota (its max_gpus): above 100% the team "
        "borrows idle GPUs of the cohort, which their owners reclaim when they need them.",
    ),
    Panel(
        "timeseries",
        "Pending workloads by queue",
        (Query("sum by (cluster_queue, status) (kueue_pending_workloads)", "{{cluster_queue}} {{status}}"),),
        description="active: in the admission queue; inadmissible: tried and waiting for the cluster to "
        "change (quota freed, nodes added).",
    ),
    Panel(
        "timeseries",
        "Admitted workloads by queue",
        (Query("sum by (cluster_queue) (kueue_admitted_active_workloads)", "{{cluster_queue}}"),),
    ),
    Panel(
        "timeseries",
        "Oldest pending GPU workload",
        (Query("clusterfab_kueue_oldest_pending_gpu_workload_seconds", "{{cluster_queue}}"),),
        unit="s",
    ),
    Panel(
        "timeseries",
        "Team GPU-hour budget spent",
        (Query(KUEUE_BUDGET, "{{team}}"),),
        unit="percentunit",
        description="The queue agent's count of each team's GPU-hours this month over its "
        "gpu_hours_per_month: at 100% it holds the team's ClusterQueue until the month starts over.",
    ),
    Panel(
        "table",
        "GPU-hours this month by team",
        (
            Query("clusterfab_kueue_team_gpu_hours_used", instant=True),
            Query("clusterfab_kueue_team_gpu_hours_limit", instant=True),
        ),
        unit="h",
    ),
)


def kueue() -> Any:
    """Only on Kubernetes clusters with teams: the queue agent serves its metrics and relays Kueue's."""
    return build(
        "clusterfab-kueue",
        "Kueue",
        "The teams' queues: GPUs admitted against each quota, pending and admitted workloads, how long GPU "
        "work waits, and each team's GPU-hour budget.",
        KUEUE_PANELS,
        [],
    )


FABRIC_PANELS: tuple[Panel, ...] = (
    Panel(
        "timeseries",
        "RDMA / InfiniBand throughput",
        (
            Query(
                f"sum by (instance) (rate(node_infiniband_port_data_transmitted_bytes_total{{{GROUP}}}[5m]))",
                "tx {{instance}}",
            ),
            Query(
                f"sum by (instance) (rate(node_infiniband_port_data_received_bytes_total{{{GROUP}}}[5m]))",
                "rx {{instance}}",
            ),
        ),
        unit="Bps",
        description="RoCE and InfiniBand ports (GCP A3 Ultra / A4 MRDMA NICs) from the node exporter.",
    ),
    Panel(
        "timeseries",
        "RDMA / InfiniBand errors per second",
        (
            Query(
                f"sum by (instance, device) "
                f"(rate(node_infiniband_port_errors_received_total{{{GROUP}}}[5m]))",
                "rx errors {{instance}} {{device}}",
            ),
            Query(
                f"sum by (instance, device) "
                f"(rate(node_infiniband_port_discards_transmitted_total{{{GROUP}}}[5m]))",
                "tx discards {{instance}} {{device}}",
            ),
            Query(
                f"sum by (instance, device) (increase(node_infiniband_link_downed_total{{{GROUP}}}[5m]))",
                "link down {{instance}} {{device}}",
            ),
            Query(
                f"sum by (instance, device) (increase(node_infiniband_symbol_error_total{{{GROUP}}}[5m]))",
                "symbol errors {{instance}} {{device}}",
            ),
            Query(
                f"sum by (instance, device) "
                f"(increase(node_infiniband_link_error_recovery_total{{{GROUP}}}[5m]))",
                "link recoveries {{instance}} {{device}}",
            ),
        ),
    ),
    Panel(
        "timeseries",
        "NIC throughput (GPUDirect-TCPX/TCPXO GPU NICs, ENA, gVNIC)",
        (
            Query(
                f"sum by (instance, device) (rate(node_network_transmit_bytes_total{{{GROUP}, {NICS}}}[5m]))",
                "tx {{instance}} {{device}}",
            ),
            Query(
                f"sum by (instance, device) (rate(node_network_receive_bytes_total{{{GROUP}, {NICS}}}[5m]))",
                "rx {{instance}} {{device}}",
            ),
        ),
        unit="Bps",
    ),
    Panel(
        "timeseries",
        "NVLink throughput",
        (
            Query(f"sum by (instance) (DCGM_FI_PROF_NVLINK_TX_BYTES{{{GROUP}}})", "tx {{instance}}"),
            Query(f"sum by (instance) (DCGM_FI_PROF_NVLINK_RX_BYTES{{{GROUP}}})", "rx {{instance}}"),
        ),
        unit="Bps",
    ),
    Panel(
        "timeseries",
        "PCIe throughput",
        (
            Query(f"sum by (instance) (DCGM_FI_PROF_PCIE_TX_BYTES{{{GROUP}}})", "tx {{instance}}"),
            Query(f"sum by (instance) (DCGM_FI_PROF_PCIE_RX_BYTES{{{GROUP}}})", "rx {{instance}}"),
        ),
        unit="Bps",
    ),
    Panel(
        "text",
        "EFA",
        description="EFA devices expose their byte counters only under hw_counters, which the node "
        "exporter does not read: EFA traffic is not on this dashboard (NVLink and the ENA interface "
        "are).",
    ),
)


def fabric() -> Any:
    return build(
        "clusterfab-fabric",
        "Fabric",
        "The GPU fabric: RDMA / InfiniBand ports, GPU NICs, NVLink and PCIe.",
        FABRIC_PANELS,
        [_node_group_variable()],
    )


SHARED_FS = 'fstype=~"lustre|nfs4?"'
STORAGE_PANELS: tuple[Panel, ...] = (
    Panel(
        "timeseries",
        "Shared file systems used",
        (
            Query(
                f"1 - max by (mountpoint) (node_filesystem_avail_bytes{{{SHARED_FS}}} / "
                f"node_filesystem_size_bytes{{{SHARED_FS}}})",
                "{{mountpoint}}",
            ),
        ),
        unit="percentunit",
    ),
    Panel(
        "timeseries",
        "NFS (Filestore) read and write throughput",
        (
            Query(
                f"sum by (export) (rate(node_mountstats_nfs_read_bytes_total{{{GROUP}}}[5m]))",
                "read {{export}}",
            ),
            Query(
                f"sum by (export) (rate(node_mountstats_nfs_write_bytes_total{{{GROUP}}}[5m]))",
                "write {{export}}",
            ),
        ),
        unit="Bps",
        description="From the node exporter's mountstats collector.",
    ),
    Panel(
        "timeseries",
        "Local disk throughput (boot disk, local NVMe / SSD)",
        (
            Query(
                f"sum by (instance) (rate(node_disk_read_bytes_total{{{GROUP}}}[5m]))", "read {{instance}}"
            ),
            Query(
                f"sum by (instance) (rate(node_disk_written_bytes_total{{{GROUP}}}[5m]))",
                "write {{instance}}",
            ),
        ),
        unit="Bps",
    ),
    Panel(
        "timeseries",
        "Node file systems used",
        (
            Query(
                f'1 - node_filesystem_avail_bytes{{{GROUP}, fstype!~"tmpfs|ramfs|overlay|squashfs|nsfs"}} / '
                f'node_filesystem_size_bytes{{{GROUP}, fstype!~"tmpfs|ramfs|overlay|squashfs|nsfs"}}',
                "{{instance}} {{mountpoint}}",
            ),
        ),
        unit="percentunit",
    ),
    Panel(
        "text",
        "Lustre",
        description="Lustre client throughput has no node exporter collector: FSx for Lustre and Managed "
        "Lustre traffic shows as NIC throughput on the Fabric dashboard and in the clouds' own metrics.",
        width=24,
        height=4,
    ),
)


def storage() -> Any:
    return build(
        "clusterfab-storage",
        "Storage",
        "Shared and local file systems: space used and throughput.",
        STORAGE_PANELS,
        [_node_group_variable()],
    )


DASHBOARDS = {
    "cluster-overview.json": overview,
    "gpu-node.json": gpu_node,
    "gpu-cost.json": gpu_cost,
    "slurm.json": slurm,
    "kueue.json": kueue,
    "fabric.json": fabric,
    "storage.json": storage,
}


def render_all() -> dict[str, str]:
    """Every dashboard's JSON, by file name."""
    encoder = JSONEncoder(sort_keys=True, indent=2)
    return {name: encoder.encode(make()) + "\n" for name, make in DASHBOARDS.items()}


def main(argv: Sequence[str] = ()) -> int:
    out = Path(argv[0]) if argv else OUT
    out.mkdir(parents=True, exist_ok=True)
    for name, content in render_all().items():
        # Normalized as grafana.dashboards() reads them back.
        (out / name).write_text(json.dumps(json.loads(content), indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
