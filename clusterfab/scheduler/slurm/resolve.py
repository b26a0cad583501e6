"""Resolve the blueprint's `scheduler` (kind slurm) into the spec's Slurm.

Partitions default to one per node group, named after it, the first one the default (Cluster Toolkit's
and ParallelCluster's shape: a queue per kind of node). Machine types the catalog lacks fall back to the
controller's default so that the rules can report them at their lines; `known` says whether they did.
"""

from __future__ import annotations

from collections.abc import Sequence

from clusterfab.blueprint.models import Blueprint
from clusterfab.blueprint.scheduler import SchedulerSpec
from clusterfab.catalog import Catalog
from clusterfab.catalog.models import ManagedDatabase
from clusterfab.spec.model import NodeGroup, Partition, Slurm

DEFAULT_TIME = "01:00:00"
"""A job's time limit without `--time`: safe enforcement of GrpTRESMins starts only jobs whose limit fits
the team's remaining GPU-minutes, so a job with no limit would wait for ever."""


def resolve_slurm(
    blueprint: Blueprint, catalog: Catalog, groups: Sequence[NodeGroup]
) -> tuple[Slurm | None, bool]:
    """The spec's Slurm, and whether its machine types are ones the catalog knows."""
    spec = blueprint.scheduler
    if spec is None:
        return None, True
    facts = catalog.slurm
    controller = facts.machine(blueprint.cloud, "controller", spec.controller.machine_type)
    login = facts.machine(blueprint.cloud, "login", spec.login.machine_type) if spec.login.count else None
    known = controller is not None and (login is not None or not spec.login.count)
    fallback = facts.machine(blueprint.cloud, "controller", None)
    if controller is None:
        if fallback is None:
            return None, False
        controller = fallback
    return (
        Slurm(
            controller=controller,
            login=login,
            login_count=spec.login.count if login is not None else 0,
            state_disk_gib=spec.controller.state_disk_gib,
            accounting=spec.accounting,
            containers=spec.containers,
            partitions=_partitions(spec, groups),
            version=facts.release.version,
            package_version=facts.release.package_version,
            kms_key=spec.controller.kms_key,
            idle_minutes=spec.elastic.idle_minutes,
            resume_timeout_minutes=spec.elastic.resume_timeout_minutes,
            flex_start_wait_minutes=spec.elastic.flex_start_wait_minutes,
            database=_database(blueprint, catalog) if spec.accounting == "managed" else None,
        ),
        known,
    )


def _database(blueprint: Blueprint, catalog: Catalog) -> ManagedDatabase | None:
    """The cloud's managed database as the catalog records it, sized as the blueprint says."""
    recorded = catalog.slurm.managed_database(blueprint.cloud)
    if recorded is None or blueprint.scheduler is None:
        return recorded
    asked = blueprint.scheduler.database
    return recorded.model_copy(
        update={
            "machine_type": asked.machine_type or recorded.machine_type,
            "storage_gib": asked.storage_gib or recorded.storage_gib,
            "backup_days": asked.backup_days,
        }
    )


def _partitions(spec: SchedulerSpec, groups: Sequence[NodeGroup]) -> tuple[Partition, ...]:
    if spec.partitions is None:
        return tuple(
            Partition(
                name=g.name,
                node_groups=(g.name,),
                default=i == 0,
                max_time=None,
                default_time=DEFAULT_TIME,
                exclusive=True,
                index=None,
            )
            for i, g in enumerate(groups)
        )
    known = {g.name for g in groups}
    any_default = any(p.default for p in spec.partitions)
    return tuple(
        Partition(
            name=p.name,
            node_groups=tuple(name for name in p.node_groups if name in known),
            default=p.default or (not any_default and i == 0),
            max_time=p.max_time,
            default_time=p.default_time,
            exclusive=p.exclusive,
            index=i,
        )
        for i, p in enumerate(spec.partitions)
    )
