"""Slurm behind the SchedulerPlugin Protocol: what the rest of clusterfab asks of a Slurm cluster."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import Any

from pydantic import BaseModel

from clusterfab.blueprint.models import Blueprint
from clusterfab.catalog import Catalog
from clusterfab.catalog.models import ExporterFacts
from clusterfab.core.findings import Finding
from clusterfab.core.vocab import SLURM_ROLE_TAG
from clusterfab.cost.estimate import CostLine
from clusterfab.monitoring.rules import RuleGroup
from clusterfab.monitoring.schedulers import Discover
from clusterfab.outputs import StackOutputs
from clusterfab.scheduler.base import RuleView, SchedulerPlugin
from clusterfab.scheduler.healthreport import HealthReport, Progress
from clusterfab.scheduler.slurm import alerts, rules
from clusterfab.scheduler.slurm.costs import host_lines
from clusterfab.scheduler.slurm.outputs import SlurmOutput
from clusterfab.scheduler.slurm.render import render_slurm, slurm_section
from clusterfab.scheduler.slurm.resolve import resolve_slurm
from clusterfab.spec.model import ClusterSpec, NodeGroup, SchedulerSection, Slurm

DASHBOARD = "slurm.json"
"""The Slurm dashboard (clusterfab.monitoring.dashboard_build.slurm): nodes and GPUs by state, the teams'
jobs and budgets, the elastic nodes' actions."""


RENDER_HELP = """Write the controller's Slurm configuration: slurm.conf, gres.conf, cgroup.conf,
topology.conf, slurmdbd.conf (secrets as placeholders), plugstack.conf (pyxis), accounts.cfg and qos.cfg.

Exits 1 when the blueprint is invalid or has no Slurm scheduler."""


class SlurmPlugin:
    """The built-in scheduler (`scheduler.kind: slurm`)."""

    @property
    def kind(self) -> str:
        return "slurm"

    @property
    def title(self) -> str:
        return "Slurm"

    @property
    def render_help(self) -> str:
        return RENDER_HELP

    def resolve(
        self, blueprint: Blueprint, catalog: Catalog, groups: Sequence[NodeGroup]
    ) -> tuple[SchedulerSection | None, bool]:
        return resolve_slurm(blueprint, catalog, groups)

    @property
    def hosts_monitoring(self) -> bool:
        return True

    def host_monitoring(self, section: SchedulerSection, disk_gib: int) -> SchedulerSection:
        # Prometheus' samples live on the controller's state disk, which grows by them.
        return dataclasses.replace(_slurm(section), monitoring_disk_gib=disk_gib)

    def check(self, ctx: RuleView) -> Iterator[Finding]:
        if ctx.blueprint.scheduler is not None:
            yield from rules.check(ctx, ctx.blueprint.scheduler)

    def check_teams(self, ctx: RuleView) -> Iterator[Finding]:
        return rules.check_teams(ctx)

    def render(self, spec: ClusterSpec, catalog: Catalog) -> dict[str, str]:
        return render_slurm(spec, catalog.slurm)

    def container_toolkit(self, spec: ClusterSpec) -> bool:
        # enroot's GPU hook runs nvidia-container-cli in every pyxis container that asks for GPUs (NGC
        # images set NVIDIA_VISIBLE_DEVICES): pyxis nodes get the NVIDIA container CLI, without Docker.
        slurm = slurm_section(spec)
        return slurm is not None and slurm.containers == "pyxis"

    def cost_lines(self, spec: ClusterSpec) -> list[CostLine]:
        slurm = slurm_section(spec)
        return [] if slurm is None else host_lines(slurm)

    def unpriced(self, spec: ClusterSpec) -> tuple[str, ...]:
        slurm = slurm_section(spec)
        database = slurm.database if slurm is not None else None
        if database is None:
            return ()
        return (
            f"the accounting database ({database.machine_type}, {database.storage_gib} GiB and its backups)",
        )

    def monitored(self, spec: ClusterSpec) -> bool:
        return spec.monitoring is not None and spec.monitoring.slurm

    def scrape_jobs(
        self, spec: ClusterSpec, exporters: ExporterFacts, discover: Discover
    ) -> list[dict[str, Any]]:
        # The exporter runs next to slurmctld, on the monitoring host itself (the controller).
        targets = [f"localhost:{exporters.slurm_exporter_port}"]
        jobs = [{"job_name": alerts.SCRAPE_JOB, "static_configs": [{"targets": targets}]}]
        if _logins(spec):
            # The login nodes' node exporters, found by their Slurm role tag (they have no node group).
            login = discover(
                alerts.LOGIN_JOB, exporters.node_exporter_port, tag=(SLURM_ROLE_TAG, alerts.LOGIN_ROLE)
            )
            relabel = [*login.get("relabel_configs", []), {"target_label": "role", "replacement": "login"}]
            jobs.append({"job_name": alerts.LOGIN_JOB, **login, "relabel_configs": relabel})
        return jobs

    def alert_rules(self, spec: ClusterSpec) -> Sequence[RuleGroup]:
        return alerts.rule_files(logins=_logins(spec))

    @property
    def dashboards(self) -> tuple[str, ...]:
        return (DASHBOARD,)

    @property
    def outputs(self) -> type[BaseModel]:
        return SlurmOutput

    def health(
        self, outputs: StackOutputs, level: int, nodes: str | None, progress: Progress
    ) -> HealthReport:
        # The check runs on the controller (bin/clusterfab-slurm-healthcheck), reached by the cloud's
        # remote command; `nodes` is a Slurm hostlist.
        from clusterfab.scheduler.slurm.healthrun import run_health  # noqa: PLC0415 - only `health` needs it

        return run_health(outputs, level, nodes, progress)


def _logins(spec: ClusterSpec) -> bool:
    """Whether the cluster has login nodes."""
    slurm = slurm_section(spec)
    return slurm is not None and slurm.login_count > 0


def _slurm(section: SchedulerSection) -> Slurm:
    if not isinstance(section, Slurm):
        raise TypeError(f"a {section.kind} scheduler's section is not Slurm's")
    return section


PLUGIN: SchedulerPlugin = SlurmPlugin()
