"""What a workload scheduler answers the rest of clusterfab: the SchedulerPlugin Protocol (§11.1).

Everything of a scheduler lives in its package, `clusterfab.scheduler.<kind>`, whose `PLUGIN` is one of
these: how its blueprint section resolves into the spec, its rules, the files it renders, what it changes
on the GPU nodes, the hosts it adds to the bill, and what monitoring scrapes, alerts on and shows of it.
The rest of the house asks the plugin of `spec.scheduler.kind` and never which scheduler it is.

This module and the plugins import what sits below or beside them (core, blueprint, catalog, spec, cost,
monitoring's rule types, the outputs' models). The rules and the provisioning call `plugin(kind)`; cost,
monitoring, outputs and the spec, which a plugin builds on, find it by kind in the name table
(clusterfab.core.plugins) and ask it through narrow Protocols of their own, so no package imports
another that imports it back. What a plugin hands them is theirs to read: cost lines that cost prices,
rule files, scrape configs.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from pydantic import BaseModel

from clusterfab.blueprint.models import Blueprint
from clusterfab.catalog import Catalog
from clusterfab.catalog.models import ExporterFacts
from clusterfab.clouds import CloudProfile
from clusterfab.core.findings import FieldPath, Finding, Severity
from clusterfab.cost.estimate import CostLine
from clusterfab.monitoring.schedulers import Discover, RuleFile
from clusterfab.outputs import StackOutputs
from clusterfab.scheduler.healthreport import HealthReport, Progress
from clusterfab.spec.model import ClusterSpec, NodeGroup, SchedulerSection


class RuleView(Protocol):
    """What a scheduler's rules see of a blueprint under validation (clusterfab.rules.context.RuleContext)."""

    @property
    def blueprint(self) -> Blueprint: ...

    @property
    def spec(self) -> ClusterSpec: ...

    @property
    def catalog(self) -> Catalog: ...

    @property
    def today(self) -> dt.date:
        """The date dated facts (prices, support ends) are judged against."""
        ...

    @property
    def cloud(self) -> CloudProfile:
        """The blueprint's cloud's profile."""
        ...

    def finding(
        self,
        code: str,
        path: FieldPath,
        message: str,
        *,
        hint: str = "",
        at_key: bool = False,
        anchor: FieldPath | None = None,
        severity: Severity | None = None,
    ) -> Finding: ...

    def written(self, path: FieldPath) -> bool: ...


class RenderError(ValueError):
    """The spec asks for something the scheduler (or its target release) cannot do: nothing is rendered."""


class SchedulerPlugin(Protocol):
    """One workload scheduler: `kind` is what `scheduler.kind` names in a blueprint."""

    @property
    def kind(self) -> str: ...

    @property
    def title(self) -> str:
        """How people write its name: Slurm."""
        ...

    @property
    def render_help(self) -> str:
        """The help of `clusterfab render <kind>`: what it writes; its first line is the summary."""
        ...

    def resolve(
        self, blueprint: Blueprint, catalog: Catalog, groups: Sequence[NodeGroup]
    ) -> tuple[SchedulerSection | None, bool]:
        """The spec's section for the blueprint's `scheduler`, and whether the catalog knows every machine
        it names (None, False when nothing could be resolved)."""
        ...

    @property
    def hosts_monitoring(self) -> bool:
        """Whether its controller runs the monitoring stack (Slurm's does); else a cluster that monitors
        gets a monitoring node of its own."""
        ...

    def host_monitoring(self, section: SchedulerSection, disk_gib: int) -> SchedulerSection:
        """The section with the monitoring stack on its controller, `disk_gib` of samples beside it."""
        ...

    def check(self, ctx: RuleView) -> Iterator[Finding]:
        """The rules of its blueprint section (and of the node groups it schedules on)."""
        ...

    def check_teams(self, ctx: RuleView) -> Iterator[Finding]:
        """What its enforcement of `teams` refuses or warns about, beyond the quotas' own rules."""
        ...

    def render(self, spec: ClusterSpec, catalog: Catalog) -> dict[str, str]:
        """Its configuration files by name (`clusterfab render <kind>`); RenderError when it cannot."""
        ...

    def container_toolkit(self, spec: ClusterSpec) -> bool:
        """Whether the GPU nodes need the NVIDIA container toolkit for the scheduler's containers."""
        ...

    def cost_lines(self, spec: ClusterSpec) -> list[CostLine]:
        """The hosts it adds to the cluster, as the cost estimate prices them."""
        ...

    def unpriced(self, spec: ClusterSpec) -> tuple[str, ...]:
        """Services it creates that the catalog has no price for, each said in a few words."""
        ...

    def monitored(self, spec: ClusterSpec) -> bool:
        """Whether the cluster's monitoring scrapes it (then its jobs, alerts and dashboards ship)."""
        ...

    def scrape_jobs(
        self, spec: ClusterSpec, exporters: ExporterFacts, discover: Discover
    ) -> list[dict[str, Any]]:
        """Prometheus scrape configs of its exporters (`discover` finds nodes of the cluster)."""
        ...

    def alert_rules(self, spec: ClusterSpec) -> Sequence[RuleFile]:
        """Its alert and recording rule files."""
        ...

    @property
    def dashboards(self) -> tuple[str, ...]:
        """The shipped Grafana dashboards (file names) that show it: only its clusters get them."""
        ...

    @property
    def outputs(self) -> type[BaseModel]:
        """The model of the stack's `scheduler` output for it (clusterfab.outputs.SchedulerOutput and what
        it adds)."""
        ...

    def health(
        self, outputs: StackOutputs, level: int, nodes: str | None, progress: Progress
    ) -> HealthReport:
        """`clusterfab health`: the deep GPU check of the stack's idle GPU nodes (DCGM level `level`, NCCL
        across node pairs), failing nodes taken out of scheduling, and its report. `nodes` is what `--nodes`
        says, in the scheduler's own notation (None: every idle node); UsageError when the check cannot
        run."""
        ...
