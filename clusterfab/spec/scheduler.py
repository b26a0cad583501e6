"""Resolve the blueprint's `scheduler` and `teams` into the spec's scheduler section and Team items.

The section is the scheduler plugin's to resolve (clusterfab.scheduler.<kind>); the spec layer sits below
the plugins, so it finds the plugin by kind through the name table (clusterfab.core.plugins).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from clusterfab.blueprint.models import Blueprint
from clusterfab.catalog import Catalog
from clusterfab.core.plugins import NO_SCHEDULER, load_scheduler
from clusterfab.spec.model import NodeGroup, SchedulerSection, Team


class _Resolver(Protocol):
    """What the spec asks of a scheduler plugin (clusterfab.scheduler.SchedulerPlugin)."""

    def resolve(
        self, blueprint: Blueprint, catalog: Catalog, groups: Sequence[NodeGroup]
    ) -> tuple[SchedulerSection | None, bool]: ...

    @property
    def hosts_monitoring(self) -> bool: ...

    def host_monitoring(self, section: SchedulerSection, disk_gib: int) -> SchedulerSection: ...


def resolve_teams(blueprint: Blueprint) -> tuple[Team, ...]:
    return tuple(
        Team(
            index=index,
            name=team.name,
            max_gpus=team.max_gpus,
            gpu_hours_per_month=team.gpu_hours_per_month,
            priority=team.priority,
            users=tuple(team.users),
        )
        for index, team in enumerate(blueprint.teams)
    )


def resolve_scheduler(
    blueprint: Blueprint, catalog: Catalog, groups: Sequence[NodeGroup]
) -> tuple[SchedulerSection | None, bool]:
    """The spec's scheduler section (None for kind none), and whether its machine types are ones the
    catalog knows."""
    spec = blueprint.scheduler
    if spec is None or spec.kind == NO_SCHEDULER:
        return None, True
    resolver: _Resolver = load_scheduler(spec.kind)
    return resolver.resolve(blueprint, catalog, groups)


def host_monitoring(section: SchedulerSection, disk_gib: int) -> SchedulerSection:
    """`section` with the monitoring stack on its controller, `disk_gib` of samples beside it."""
    resolver: _Resolver = load_scheduler(section.kind)
    return resolver.host_monitoring(section, disk_gib)


def hosts_monitoring(kind: str) -> bool:
    """Whether the controller of a scheduler of `kind` runs the monitoring stack."""
    resolver: _Resolver = load_scheduler(kind)
    return resolver.hosts_monitoring
