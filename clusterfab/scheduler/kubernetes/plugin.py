"""Kubernetes behind the SchedulerPlugin Protocol: a managed cluster (GKE, EKS) whose node pools are the
blueprint's node groups and TPU slices (architecture §11.2)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from pydantic import BaseModel

from clusterfab.blueprint.models import Blueprint
from clusterfab.catalog import Catalog
from clusterfab.catalog.models import ExporterFacts
from clusterfab.core.findings import Finding
from clusterfab.cost.estimate import CostLine
from clusterfab.monitoring.schedulers import Discover, RuleFile
from clusterfab.outputs import StackOutputs
from clusterfab.scheduler.base import RuleView, SchedulerPlugin
from clusterfab.scheduler.healthreport import HealthReport, Progress
from clusterfab.scheduler.kubernetes import alerts, rules
from clusterfab.scheduler.kubernetes.costs import SYSTEM_NODES_ITEM, host_lines
from clusterfab.scheduler.kubernetes.facts import kubernetes_facts
from clusterfab.scheduler.kubernetes.manifests.queue_agent import PORT as AGENT_PORT
from clusterfab.scheduler.kubernetes.outputs import KubernetesOutput
from clusterfab.scheduler.kubernetes.render import kubernetes_section, render_kubernetes
from clusterfab.scheduler.kubernetes.section import KIND, Kubernetes
from clusterfab.spec.model import ClusterSpec, NodeGroup, SchedulerSection

DASHBOARD = "kueue.json"
"""The Kueue dashboard (clusterfab.monitoring.dashboard_build.kueue): the teams' queues and budgets."""
RENDER_HELP = """Write the Kubernetes cluster's own objects: each team's Namespace and the RoleBinding that
gives its users the edit role there (teams.yaml); Kueue's ResourceFlavors, Topology, WorkloadPriorityClasses,
Cohort, a ClusterQueue per team with its GPU quota and a LocalQueue in its namespace (kueue.yaml); the
queue agent that keeps the teams' GPU-hour budgets, with its rights and its program (agent.yaml).

Exits 1 when the blueprint is invalid or has no Kubernetes scheduler."""


class KubernetesPlugin:
    """`scheduler.kind: kubernetes`."""

    @property
    def kind(self) -> str:
        return KIND

    @property
    def title(self) -> str:
        return "Kubernetes"

    @property
    def render_help(self) -> str:
        return RENDER_HELP

    def resolve(
        self, blueprint: Blueprint, catalog: Catalog, groups: Sequence[NodeGroup]
    ) -> tuple[SchedulerSection | None, bool]:
        section = blueprint.scheduler
        facts = kubernetes_facts()
        plane = facts.control_plane(blueprint.cloud)
        if section is None or plane is None:
            return None, plane is not None
        written = section.system_nodes.machine_type
        machine = facts.system_machine(blueprint.cloud, written)
        known = machine is not None
        machine = machine or facts.system_machine(blueprint.cloud, None)
        if machine is None:
            return None, False
        return (
            Kubernetes(
                service=plane.service,
                version=section.version or plane.default_version,
                release_channel=plane.release_channel,
                system_machine=machine.name,
                system_count=section.system_nodes.count,
                api_access_cidrs=tuple(section.api_access_cidrs),
            ),
            known,
        )

    @property
    def hosts_monitoring(self) -> bool:
        # The control plane is the cloud's: monitoring runs on a node of its own (monitoring.host: node),
        # which finds the node pools' nodes as it finds any cluster's.
        return False

    def host_monitoring(self, section: SchedulerSection, disk_gib: int) -> SchedulerSection:
        return section

    def check(self, ctx: RuleView) -> Iterator[Finding]:
        return rules.check(ctx)

    def check_teams(self, ctx: RuleView) -> Iterator[Finding]:
        return iter(())

    def render(self, spec: ClusterSpec, catalog: Catalog) -> dict[str, str]:
        return render_kubernetes(spec)

    def container_toolkit(self, spec: ClusterSpec) -> bool:
        # The node images of GKE and EKS carry their container runtime and NVIDIA's toolkit.
        return False

    def cost_lines(self, spec: ClusterSpec) -> list[CostLine]:
        section = kubernetes_section(spec)
        return [] if section is None else host_lines(spec.cloud, section)

    def unpriced(self, spec: ClusterSpec) -> tuple[str, ...]:
        return ()

    def monitored(self, spec: ClusterSpec) -> bool:
        # The queue agent runs on Kubernetes clusters with team queues to watch.
        return kubernetes_section(spec) is not None and spec.monitoring is not None and bool(spec.teams)

    def scrape_jobs(
        self, spec: ClusterSpec, exporters: ExporterFacts, discover: Discover
    ) -> list[dict[str, Any]]:
        # The agent runs on one of the system nodes, behind each node's port: the job lists them all.
        return [
            {
                "job_name": alerts.SCRAPE_JOB,
                **discover(alerts.SCRAPE_JOB, AGENT_PORT, component=SYSTEM_NODES_ITEM),
            }
        ]

    def alert_rules(self, spec: ClusterSpec) -> Sequence[RuleFile]:
        return alerts.rule_files()

    @property
    def dashboards(self) -> tuple[str, ...]:
        return (DASHBOARD,)

    @property
    def outputs(self) -> type[BaseModel]:
        return KubernetesOutput

    def health(
        self, outputs: StackOutputs, level: int, nodes: str | None, progress: Progress
    ) -> HealthReport:
        # Jobs and JobSets in the cluster, through its API server (health/); `nodes`: node names.
        from clusterfab.scheduler.kubernetes.health.start import run_health  # noqa: PLC0415

        return run_health(outputs, level, nodes, progress)


PLUGIN: SchedulerPlugin = KubernetesPlugin()
