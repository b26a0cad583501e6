"""Slurm's rules: its partitions and machines, the node groups it schedules on, the names Slurm keeps for
itself, and what its accounts make of the teams."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Literal

from clusterfab.blueprint.fields import UNIX_NAME_PATTERN
from clusterfab.blueprint.scheduler import SchedulerSpec
from clusterfab.core.findings import Finding
from clusterfab.core.hints import did_you_mean
from clusterfab.scheduler.base import RuleView
from clusterfab.scheduler.slurm.nodes import clouds as node_programs
from clusterfab.scheduler.slurm.render import SLURM_TEMPLATE_NAME, TOPOLOGY_ROOT_SWITCH
from clusterfab.spec.capacity import END_MARGIN


@functools.cache
def elastic_clouds() -> tuple[str, ...]:
    """The clouds whose resume program creates machines by node name: elastic Slurm groups run there alone.
    Asked only for an elastic group: naming them imports every cloud's node programs."""
    return tuple(sorted(c for c in node_programs.CLOUDS if node_programs.cloud(c).creates_nodes))


RESERVED_TEAM_NAMES = ("root", "normal")
"""Slurm's top account and its default QOS."""


def check(ctx: RuleView, spec: SchedulerSpec) -> Iterator[Finding]:
    """The rules of a blueprint whose `scheduler` (`spec`) is kind slurm."""
    yield from _partitions(ctx, spec)
    yield from _groups(ctx, spec)
    yield from _flex_time_limits(ctx, spec)
    for name in ("version", "api_access_cidrs", "system_nodes"):
        if ctx.written(("scheduler", name)):
            yield ctx.finding(
                "BP171",
                ("scheduler", name),
                f"scheduler.{name} is a Kubernetes setting: Slurm ignores it",
                hint=f"remove scheduler.{name}",
                at_key=True,
            )
    if spec.accounting == "embedded" and ctx.written(("scheduler", "database")):
        yield ctx.finding(
            "BP139",
            ("scheduler", "database"),
            "scheduler.database sizes the managed accounting database; with accounting: embedded there is "
            "none (MariaDB runs on the controller's state disk, sized by controller.state_disk_gib)",
            hint="set scheduler.accounting: managed, or remove scheduler.database",
            at_key=True,
        )
    yield from _machines(ctx, spec)
    yield from _reserved_names(ctx, spec)
    yield from _database_machine(ctx, spec)


def _database_machine(ctx: RuleView, spec: SchedulerSpec) -> Iterator[Finding]:
    """BP140: the managed accounting database's machine, named as the cloud's database service names them;
    BP233: managed accounting where the catalog records no managed database."""
    cloud = ctx.blueprint.cloud
    if spec.accounting == "managed" and ctx.catalog.slurm.managed_database(cloud) is None:
        clouds = sorted({d.cloud for d in ctx.catalog.slurm.managed_databases})
        yield ctx.finding(
            "BP233",
            ("scheduler", "accounting"),
            f"clusterfab builds no managed accounting database on {cloud} yet: the catalog records none "
            "for it",
            hint=f"use accounting: embedded (MariaDB on the controller's state disk) on {cloud}, or managed "
            f"accounting on {' or '.join(clouds)}",
        )
        return
    machine = spec.database.machine_type
    if machine is None:
        return
    naming = ctx.cloud.database_machine
    what, example = naming.what, naming.example
    if not naming.pattern.fullmatch(machine):
        yield ctx.finding(
            "BP140",
            ("scheduler", "database", "machine_type"),
            f"'{machine}' is not {what}, which the managed accounting database takes on {cloud}",
            hint=f"name {what}, e.g. {example}, or leave machine_type out for the catalog's default",
        )


def slurm_minutes(value: str) -> int | None:
    """A Slurm time (the schema's forms: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS) in whole
    minutes, rounded up; None for UNLIMITED."""
    if value == "UNLIMITED":
        return None
    days, _, clock = value.rpartition("-")
    parts = [int(p) for p in clock.split(":")]
    if days:  # D-HH[:MM[:SS]]
        hours, minutes, seconds = [*parts, 0, 0][:3]
        return int(days) * 1440 + hours * 60 + minutes + (seconds > 0)
    if len(parts) == 1:  # minutes
        return parts[0]
    if len(parts) == 2:  # MM:SS
        return parts[0] + (parts[1] > 0)
    return parts[0] * 60 + parts[1] + (parts[2] > 0)  # HH:MM:SS


FLEX_END_MARGIN_MINUTES = int(END_MARGIN.total_seconds() // 60)
"""The node sync keeps jobs off a flex-start node from this long before its VM's end (nodesync's
END_MARGIN): a job may run at most the run duration less this."""


def _flex_time_limits(ctx: RuleView, spec: SchedulerSpec) -> Iterator[Finding]:
    """A partition whose jobs may run longer than its flex-start VMs live: Compute Engine deletes the VMs
    at the end of their run duration, whatever runs on them."""
    groups = {g.name: (i, g) for i, g in enumerate(ctx.blueprint.node_groups)}
    partitions = (
        [(None, g.name, [g.name], None) for g in ctx.blueprint.node_groups]
        if spec.partitions is None
        else [(i, p.name, p.node_groups, p.max_time) for i, p in enumerate(spec.partitions)]
    )
    for index, name, members, max_time in partitions:
        flex = [
            (groups[m][0], hours)
            for m in members
            if m in groups
            and groups[m][1].capacity.kind == "flex_start"
            and (hours := groups[m][1].capacity.max_run_duration_hours) is not None
        ]
        if not flex:
            continue
        group_index, hours = min(flex, key=lambda item: item[1])
        longest = hours * 60 - FLEX_END_MARGIN_MINUTES
        limit = slurm_minutes(max_time) if max_time is not None else None
        if limit is not None and limit <= longest:
            continue
        duration = ("node_groups", group_index, "capacity", "max_run_duration_hours")
        path = ("scheduler", "partitions", index, "max_time") if index is not None else duration
        anchor = ("scheduler", "partitions", index) if index is not None else duration
        yield ctx.finding(
            "BP141",
            path,
            f"partition '{name}' lets a job run "
            f"{'without limit' if limit is None else f'{limit // 60}:{limit % 60:02d}:00'}, "
            f"but its flex-start VMs are deleted after {hours} hours: such a job is killed with them",
            hint=f"set max_time: {longest // 60:d}:{longest % 60:02d}:00 (or less) on partition '{name}', "
            "or lengthen max_run_duration_hours",
            anchor=anchor,
        )


def _partitions(ctx: RuleView, spec: SchedulerSpec) -> Iterator[Finding]:
    if spec.partitions is None:
        return
    known = [g.name for g in ctx.blueprint.node_groups]
    seen: dict[str, int] = {}
    defaults: list[int] = []
    for index, partition in enumerate(spec.partitions):
        if partition.name in seen:
            yield ctx.finding(
                "BP122",
                ("scheduler", "partitions", index, "name"),
                f"partition '{partition.name}' is already defined by "
                f"scheduler.partitions[{seen[partition.name]}]",
                hint="give each partition its own name, or list both node groups in one partition",
            )
        seen.setdefault(partition.name, index)
        if partition.default:
            defaults.append(index)
        for position, name in enumerate(partition.node_groups):
            if name not in known:
                yield ctx.finding(
                    "BP121",
                    ("scheduler", "partitions", index, "node_groups", position),
                    f"no node group named '{name}'",
                    hint=did_you_mean(name, known, what="node groups")
                    or "name a node group of `node_groups`, or remove it from the partition",
                )
    for index in defaults[1:]:
        yield ctx.finding(
            "BP123",
            ("scheduler", "partitions", index, "default"),
            f"scheduler.partitions[{defaults[0]}] is already the default partition",
            hint="keep `default: true` on one partition only",
        )


def _scheduled(ctx: RuleView, spec: SchedulerSpec) -> set[str]:
    return spec.scheduled_groups([g.name for g in ctx.blueprint.node_groups])


def _groups(ctx: RuleView, spec: SchedulerSpec) -> Iterator[Finding]:
    partitioned = _scheduled(ctx, spec)
    if not ctx.blueprint.node_groups:
        yield ctx.finding(
            "BP130",
            ("scheduler", "kind"),
            "Slurm has no node group to schedule on (TPU slices are not Slurm nodes)",
            hint="add a GPU node group, or set scheduler.kind: none",
        )
    cloud = ctx.blueprint.cloud
    for index, group in enumerate(ctx.blueprint.node_groups):
        if group.autoscaling is not None and cloud not in elastic_clouds():
            yield ctx.finding(
                "BP232",
                ("node_groups", index, "autoscaling"),
                f"node group '{group.name}' is elastic, but Slurm's node programs create no machines on "
                f"{cloud}: nothing would start a node a queued job is given",
                hint=f"use `count: {group.autoscaling.max}` (static nodes), or an elastic group on "
                f"{' or '.join(elastic_clouds())}",
            )
        if group.autoscaling is not None and group.capacity.kind == "reservation":
            yield ctx.finding(
                "BP129",
                ("node_groups", index, "autoscaling"),
                f"node group '{group.name}' is elastic on a reservation: a reservation is billed whether "
                "its instances run or not, so deleting idle nodes saves nothing and makes the next job "
                "wait for nodes to boot",
                hint=f"use `count: {group.autoscaling.max}` (static nodes) on reserved capacity",
                at_key=True,
            )
        if group.name not in partitioned and spec.partitions is not None:
            yield ctx.finding(
                "BP131",
                ("node_groups", index, "name"),
                f"node group '{group.name}' is in no partition: its nodes run, but no job reaches them",
                hint=f"add '{group.name}' to a partition's node_groups",
            )


def _machines(ctx: RuleView, spec: SchedulerSpec) -> Iterator[Finding]:
    facts = ctx.catalog.slurm
    cloud = ctx.blueprint.cloud
    if facts.machine(cloud, "controller", None) is None:
        clouds = sorted({m.cloud for m in facts.machines})
        yield ctx.finding(
            "BP228",
            ("scheduler", "kind"),
            f"clusterfab builds no Slurm hosts on {cloud} yet: the catalog has no Slurm controller machine "
            "for it",
            hint=f"use scheduler kind none on {cloud}, or Slurm on {' or '.join(clouds)}",
        )
        return
    roles: tuple[tuple[Literal["controller", "login"], str | None], ...] = (
        ("controller", spec.controller.machine_type),
        ("login", spec.login.machine_type),
    )
    for role, machine_type in roles:
        if machine_type is None or facts.machine(cloud, role, machine_type) is not None:
            continue
        known = [m.name for m in facts.machines if m.cloud == cloud]
        yield ctx.finding(
            "BP222",
            ("scheduler", role, "machine_type"),
            f"'{machine_type}' is not a Slurm {role} machine type the catalog knows for {cloud}",
            hint=did_you_mean(machine_type, known, what="Slurm machine types")
            or f"known: {', '.join(known)}; or leave machine_type out for the default",
        )


def _reserved_names(ctx: RuleView, spec: SchedulerSpec) -> Iterator[Finding]:
    """Partitions and node groups named like Slurm's own (BP144)."""
    for index, partition in enumerate(spec.partitions or []):
        if partition.name.lower() == SLURM_TEMPLATE_NAME:
            yield ctx.finding(
                "BP144",
                ("scheduler", "partitions", index, "name"),
                f"a partition named {partition.name} is Slurm's template line (PartitionName=DEFAULT), not "
                "a partition: its nodes would be in none",
                hint="call it something else, e.g. main; `default: true` makes a partition the default",
            )
    scheduled = _scheduled(ctx, spec)
    for index, group in enumerate(ctx.blueprint.node_groups):
        if group.name not in scheduled:
            continue
        if spec.partitions is None and group.name.lower() == SLURM_TEMPLATE_NAME:
            yield ctx.finding(
                "BP144",
                ("node_groups", index, "name"),
                f"node group {group.name} gets a partition of its name, which is Slurm's template line "
                "(PartitionName=DEFAULT), not a partition: its nodes would be in none",
                hint="rename the group, or list partitions under scheduler.partitions",
            )
        if group.name == TOPOLOGY_ROOT_SWITCH:
            yield ctx.finding(
                "BP144",
                ("node_groups", index, "name"),
                f"node group {group.name} would be a switch of topology.conf named like the top switch over "
                "every group's, which would hold itself",
                hint=f"rename the group, e.g. {group.name}-nodes",
            )


def check_teams(ctx: RuleView) -> Iterator[Finding]:
    """Team names Slurm keeps (BP128), and users in two teams, whose first stays their default account."""
    users: dict[str, str] = {}
    for index, team in enumerate(ctx.blueprint.teams):
        if team.name in RESERVED_TEAM_NAMES:
            yield ctx.finding(
                "BP128",
                ("teams", index, "name"),
                f"'{team.name}' is reserved by Slurm",
                hint=f"call the team something else, e.g. {team.name}-team",
            )
        for position, user in enumerate(team.users):
            if re.fullmatch(UNIX_NAME_PATTERN, user) is None:
                yield ctx.finding(
                    "BP145",
                    ("teams", index, "users", position),
                    f"'{user}' is not a Unix user name: Slurm's users are the hosts' accounts",
                    hint="write the person's login name, e.g. alice (e-mail addresses name GKE users)",
                )
            if user in users and users[user] != team.name:
                yield ctx.finding(
                    "BP134",
                    ("teams", index, "users", position),
                    f"'{user}' is also in team '{users[user]}', which stays their default account",
                    hint=f"jobs for this team need `sbatch --account={team.name}`",
                )
            users.setdefault(user, team.name)
