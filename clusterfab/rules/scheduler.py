"""Scheduler rules: settings that need a scheduler under `scheduler.kind: none`, the scheduler's own rules
(its plugin's), and the teams' quotas."""

from __future__ import annotations

from collections.abc import Iterator

from clusterfab.core.findings import Finding
from clusterfab.core.plugins import NO_SCHEDULER
from clusterfab.rules.context import RuleContext
from clusterfab.scheduler import plugin

HOURS_IN_LONGEST_MONTH = 31 * 24

_SETTINGS = ("controller", "login", "accounting", "database", "containers", "partitions")
"""The fields that only mean something when a scheduler runs."""


def check_scheduler(ctx: RuleContext) -> Iterator[Finding]:
    spec = ctx.blueprint.scheduler
    if spec is None:
        return
    if spec.kind == NO_SCHEDULER:
        for name in _SETTINGS:
            if ctx.written(("scheduler", name)):
                yield ctx.finding(
                    "BP132",
                    ("scheduler", name),
                    f"scheduler.{name} has no effect with scheduler.kind none",
                    hint="set scheduler.kind: slurm, or remove the setting",
                    at_key=True,
                )
        return
    yield from plugin(spec.kind).check(ctx)


def scheduled_groups(ctx: RuleContext) -> set[str]:
    """The node groups the scheduler schedules on (none without a `scheduler` section)."""
    spec = ctx.blueprint.scheduler
    if spec is None:
        return set()
    return spec.scheduled_groups([g.name for g in ctx.blueprint.node_groups])


def check_teams(ctx: RuleContext) -> Iterator[Finding]:
    teams = ctx.blueprint.teams
    if not teams:
        return
    scheduler = ctx.blueprint.scheduler
    if scheduler is None or scheduler.kind == NO_SCHEDULER:
        yield ctx.finding(
            "BP125",
            ("teams",),
            "teams have GPU quotas, but no scheduler enforces them",
            hint="add `scheduler: {kind: slurm}`, or remove teams",
            at_key=True,
        )
    else:
        yield from plugin(scheduler.kind).check_teams(ctx)
    gpus = ctx.spec.gpu_count
    # A group the catalog cannot resolve, or whose size is invalid (reported where it is written), is
    # missing from the count: comparing quotas with it would blame every team for one bad field.
    groups_resolved = not any(u.path[0] == "node_groups" for u in ctx.spec.unresolved) and all(
        group.count is not None or group.autoscaling is not None for group in ctx.blueprint.node_groups
    )
    seen: dict[str, int] = {}
    for index, team in enumerate(teams):
        if team.name in seen:
            yield ctx.finding(
                "BP127",
                ("teams", index, "name"),
                f"team '{team.name}' is already defined by teams[{seen[team.name]}]",
                hint="give each team its own name",
            )
        seen.setdefault(team.name, index)
        if groups_resolved and team.max_gpus > gpus:
            yield ctx.finding(
                "BP124",
                ("teams", index, "max_gpus"),
                f"team '{team.name}' may hold {team.max_gpus} GPUs, but the cluster has {gpus}",
                hint=f"lower max_gpus to {gpus} or less, or grow the node groups",
            )
        usable = team.max_gpus * HOURS_IN_LONGEST_MONTH
        if team.gpu_hours_per_month is not None and team.gpu_hours_per_month > usable:
            yield ctx.finding(
                "BP126",
                ("teams", index, "gpu_hours_per_month"),
                f"{team.gpu_hours_per_month} GPU-hours a month is more than {team.max_gpus} GPUs can use "
                f"in 31 days ({usable})",
                hint=f"lower gpu_hours_per_month to {usable} or less, or raise max_gpus",
            )
