"""The toy scheduler: a SchedulerPlugin written from scratch. Its section is one controller (the
blueprint's `scheduler.controller.machine_type`, else c7i.4xlarge), priced as a host; it renders one
file, ships a scrape job and an alert rule file, and its stack output adds a queue URL. Its deep health
check takes `--nodes` as `+`-separated names and fails the ones whose name starts with `bad`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from clusterfab.blueprint.models import Blueprint
from clusterfab.catalog import Catalog
from clusterfab.catalog.models import ExporterFacts
from clusterfab.core.errors import UsageError
from clusterfab.core.findings import FieldPath, Finding
from clusterfab.cost.estimate import CostLine
from clusterfab.monitoring.schedulers import Discover
from clusterfab.outputs import SchedulerOutput, StackOutputs
from clusterfab.scheduler import RuleView
from clusterfab.scheduler.healthreport import HealthReport, Progress, read_report
from clusterfab.spec import ClusterSpec, NodeGroup, SchedulerSection

KIND = "toy"
DEFAULT_CONTROLLER = "c7i.4xlarge"


@dataclass(frozen=True)
class ToySection:
    machine_type: str
    kind: str = KIND

    @property
    def path(self) -> FieldPath:
        return ("scheduler",)


@dataclass(frozen=True)
class ToyRules:
    file: str = "toy.yml"

    def document(self) -> dict[str, Any]:
        return {"groups": [{"name": "toy", "rules": [{"alert": "ToyDown", "expr": 'up{job="toy"} == 0'}]}]}


class ToyOutput(SchedulerOutput):
    queue_url: str


class ToyScheduler:
    kind = KIND
    title = "toy"
    render_help = "Write the toy scheduler's queue file.\n\nExits 1 without a toy scheduler."
    dashboards: tuple[str, ...] = ()
    outputs: type[BaseModel] = ToyOutput

    def resolve(
        self, blueprint: Blueprint, catalog: Catalog, groups: Sequence[NodeGroup]
    ) -> tuple[SchedulerSection | None, bool]:
        written = blueprint.scheduler.controller.machine_type if blueprint.scheduler is not None else None
        return ToySection(written or DEFAULT_CONTROLLER), True

    hosts_monitoring = True

    def host_monitoring(self, section: SchedulerSection, disk_gib: int) -> SchedulerSection:
        return section

    def check(self, ctx: RuleView) -> Iterator[Finding]:
        return iter(())

    def check_teams(self, ctx: RuleView) -> Iterator[Finding]:
        return iter(())

    def render(self, spec: ClusterSpec, catalog: Catalog) -> dict[str, str]:
        assert isinstance(spec.scheduler, ToySection)
        nodes = "".join(
            f"pool {g.name} {g.machine.name} {g.min_size}-{g.max_size}\n" for g in spec.node_groups
        )
        return {"toy.conf": f"cluster={spec.name}\ncontroller={spec.scheduler.machine_type}\n{nodes}"}

    def container_toolkit(self, spec: ClusterSpec) -> bool:
        return False

    def cost_lines(self, spec: ClusterSpec) -> list[CostLine]:
        assert isinstance(spec.scheduler, ToySection)
        machine = spec.scheduler.machine_type
        return [
            CostLine("toy-controller", "controller", ("scheduler",), machine, "on_demand", 1, None, "hour")
        ]

    def unpriced(self, spec: ClusterSpec) -> tuple[str, ...]:
        return ("the toy queue",)

    def monitored(self, spec: ClusterSpec) -> bool:
        return spec.monitoring is not None and spec.monitoring.host == "controller"

    def scrape_jobs(
        self, spec: ClusterSpec, exporters: ExporterFacts, discover: Discover
    ) -> list[dict[str, Any]]:
        return [{"job_name": KIND, "static_configs": [{"targets": ["localhost:9999"]}]}]

    def alert_rules(self, spec: ClusterSpec) -> Sequence[ToyRules]:
        return [ToyRules()]

    def health(
        self, outputs: StackOutputs, level: int, nodes: str | None, progress: Progress
    ) -> HealthReport:
        if outputs.scheduler is None or outputs.scheduler.kind != KIND:
            raise UsageError("the stack has no toy scheduler")
        names = sorted(nodes.split("+")) if nodes else ["toy-0"]
        progress(f"toy: checking {len(names)} node(s) at level {level}")
        rows = [_toy_node(name) for name in names]
        failed = any(row["status"] == "failed" for row in rows)
        return read_report(
            {"schema_version": 1, "level": level, "reservation": "clusterfab-health-1", "healthy": not failed,
             "error": None, "nodes": rows}
        )  # fmt: skip


def _toy_node(name: str) -> dict[str, Any]:
    failures = (
        [{"category": "GPU", "detail": "toy GPU lost", "reason": "clusterfab-health: GPU: toy GPU lost"}]
        if name.startswith("bad")
        else []
    )
    return {
        "node": name, "status": "failed" if failures else "healthy",
        "reason": failures[0]["reason"] if failures else None, "detail": None, "busbw_gbytes_per_s": None,
        "floor_gbytes_per_s": None, "partner": None, "failures": failures,
    }  # fmt: skip


PLUGIN = ToyScheduler()
