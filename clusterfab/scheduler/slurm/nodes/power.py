"""Slurm's power programs for elastic nodes: `resume` creates the instances of the nodes slurmctld gave a
queued job, `suspend` deletes the instances of nodes idle for SuspendTime, `resume-fail` deletes what is
left of nodes that missed ResumeTimeout. slurmctld runs them as SlurmUser with the nodes as a hostlist
expression (SchedMD's elastic_computing guide); they return quickly and never leave a node half alive.

Resume works per job (SLURM_RESUME_FILE maps each job to the nodes it waits for): a job's nodes of one
group are created by one all-or-nothing request (RunInstances with MinCount = MaxCount on EC2, a zonal
bulkInsert with minCount = count on Compute Engine; at most `RUN_BATCH` a call; a job needing more is
rolled back if a later batch fails), so a 64-node job never holds 40 billed instances while it waits for
the other 24. When the cloud says no (no capacity, a limit),
the job's nodes are set DOWN with the cloud's error code as the reason, which puts the job back in the
queue; the node sync powers them down after a short wait, and Slurm tries again when it next schedules
the job. Nothing is left POWERING_UP until ResumeTimeout, and nothing stays DOWN (scheduler.md §A7).

Resume is idempotent: a node whose instance already exists is not created twice. Suspend deletes only
instances the resume program created (tagged, on GCP labelled, `clusterfab-slurm-elastic=true` with the
cluster's tags).
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from .actions import MarkDown, SlurmAction
from .fleet import CloudError, FlexRequest, Instance
from .groups import Group
from .reconcile import REASON_PREFIX, elastic_holders
from .scontrol import SlurmNode

log = logging.getLogger("clusterfab-slurm-nodes")

RUN_BATCH = 500
"""Most nodes of one group one create request asks for (ParallelCluster's launch_max_batch_size)."""


class Cloud(Protocol):
    def create(self, group: str, names: Sequence[str]) -> list[str]: ...
    def terminate(self, instance_ids: Sequence[str]) -> None: ...
    def instances(self) -> list[Instance]: ...
    def requests(self) -> list[FlexRequest]: ...
    def withdraw(self, mig: str) -> None: ...


class Slurm(Protocol):
    def update(self, names: Sequence[str], action: SlurmAction) -> None: ...


@dataclass(frozen=True, slots=True)
class ResumeJob:
    """A job waiting for nodes, from SLURM_RESUME_FILE: its id and the nodes it waits on."""

    job_id: int
    nodes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Launch:
    """One create request: `names` of one group, for `job_id` (None: nodes no job waits on)."""

    group: str
    names: tuple[str, ...]
    job_id: int | None


@dataclass(frozen=True, slots=True)
class ResumePlan:
    units: tuple[tuple[Launch, ...], ...]
    """Requests that stand or fall together: one job's nodes in every group it uses."""
    existing: tuple[str, ...]
    """Nodes that already have an instance (a repeated call): nothing to create."""
    unknown: tuple[str, ...]
    """Names that are no elastic node of this cluster: refused."""


@dataclass
class ResumeReport:
    created: dict[str, list[str]] = field(default_factory=dict)
    """Instance ids by job (`job 12` / `no job`); none where the cloud names no machine at the request (an
    Azure scale set's new VMs)."""
    resumed: list[str] = field(default_factory=list)
    """The nodes whose machines the cloud accepted to make (one machine per node)."""
    failed: dict[str, str] = field(default_factory=dict)
    """Node -> the reason it was set DOWN with."""
    codes: Counter[str] = field(default_factory=Counter)
    """Failed nodes by the cloud's error code (InsufficientInstanceCapacity, ...)."""


def group_of(name: str, groups: Mapping[str, Group]) -> Group | None:
    """The group whose elastic node `name` is (`h100-5` of h100 with static 2, size 8), else None."""
    prefix, _, number = name.rpartition("-")
    group = groups.get(prefix)
    if group is None or not number.isdigit() or number != str(int(number)):
        return None
    return group if group.static <= int(number) < group.size else None


def plan_resume(
    names: Sequence[str],
    jobs: Sequence[ResumeJob],
    groups: Mapping[str, Group],
    existing: Iterable[str] = (),
    *,
    batch: int = RUN_BATCH,
) -> ResumePlan:
    """Which create requests resume `names`: per job (in the resume file's order), per group, in batches;
    the nodes no job lists last. Pure: the same inputs give the same plan."""
    have = set(existing)
    wanted = [n for n in dict.fromkeys(names) if n not in have]
    unknown = tuple(n for n in wanted if group_of(n, groups) is None)
    left = [n for n in wanted if n not in unknown]
    pending = set(left)
    units: list[tuple[Launch, ...]] = []
    for job in jobs:
        mine = [n for n in job.nodes if n in pending]
        pending -= set(mine)
        if mine:
            units.append(_launches(mine, groups, job.job_id, batch))
    rest = [n for n in left if n in pending]
    if rest:
        units.append(_launches(rest, groups, None, batch))
    return ResumePlan(tuple(units), tuple(n for n in dict.fromkeys(names) if n in have), unknown)


def _launches(
    names: Sequence[str], groups: Mapping[str, Group], job_id: int | None, batch: int
) -> tuple[Launch, ...]:
    by_group: dict[str, list[str]] = {}
    for name in names:
        group = group_of(name, groups)
        assert group is not None  # filtered by plan_resume
        by_group.setdefault(group.name, []).append(name)
    return tuple(
        Launch(group, tuple(members[start : start + batch]), job_id)
        for group, members in by_group.items()
        for start in range(0, len(members), batch)
    )


def resume(plan: ResumePlan, cloud: Cloud, slurm: Slurm) -> ResumeReport:
    """Carry out a plan: each unit's requests in turn; when one fails, the unit's instances created so far
    are terminated and all its nodes set DOWN with the cloud's reason (the job is requeued)."""
    report = ResumeReport()
    if plan.unknown:
        log.error("not elastic nodes of this cluster, left alone: %s", ",".join(plan.unknown))
    if plan.existing:
        log.info("already have instances: %s", ",".join(plan.existing))
    for unit in plan.units:
        key = f"job {unit[0].job_id}" if unit[0].job_id is not None else "no job"
        created: list[str] = []
        try:
            for launch in unit:
                ids = cloud.create(launch.group, launch.names)
                log.info("%s: created %s for %s", key, ",".join(ids), ",".join(launch.names))
                created += ids
        except Exception as error:  # any failure: the nodes must not wait for ResumeTimeout
            cloud_error = (
                error if isinstance(error, CloudError) else CloudError(type(error).__name__, str(error))
            )
            _fail(unit, created, cloud_error, cloud=cloud, slurm=slurm, report=report)
            continue
        report.created[key] = created
        report.resumed += [name for launch in unit for name in launch.names]
    return report


def _fail(
    unit: Sequence[Launch],
    created: Sequence[str],
    error: CloudError,
    *,
    cloud: Cloud,
    slurm: Slurm,
    report: ResumeReport,
) -> None:
    names = [n for launch in unit for n in launch.names]
    reason = f"{REASON_PREFIX} resume failed: {error.code}"
    log.error("%s: %s; %s set DOWN: %s", unit[0].job_id, error, ",".join(names), reason)
    if created:
        try:
            cloud.terminate(created)
        except Exception:
            log.exception("could not terminate %s (the node sync will)", ",".join(created))
    slurm.update(names, MarkDown(names[0], reason))
    report.failed.update(dict.fromkeys(names, reason))
    report.codes[error.code] += len(names)


def suspend(names: Sequence[str], cloud: Cloud) -> list[str]:
    """Terminate the elastic instances of these nodes, and withdraw the flex-start requests still waiting
    for capacity for any of them (resume-fail after ResumeTimeout: capacity that arrives later would run
    for no job); the ids terminated."""
    holders = elastic_holders(cloud.instances(), names)
    ids = list(holders.values())
    if ids:
        cloud.terminate(ids)
    wanted = set(names)
    waiting = [r.mig for r in cloud.requests() if r.pending and wanted.intersection(r.nodes)]
    for mig in waiting:
        cloud.withdraw(mig)
    log.info(
        "suspended %s: terminated %s, withdrew %s",
        ",".join(names),
        ",".join(ids) or "nothing",
        ",".join(waiting) or "nothing",
    )
    return ids


def claimed_holders(
    instances: Iterable[Instance], nodes: Mapping[str, SlurmNode], names: Iterable[str]
) -> dict[str, str]:
    """Where machines claim their nodes (Azure): the live machines holding these nodes, name -> id."""
    hosts = {i.host: i.id for i in instances if i.host is not None}
    return {
        name: hosts[host]
        for name in names
        if name in nodes and (host := nodes[name].claimed_by) is not None and host in hosts
    }


def suspend_claimed(names: Sequence[str], cloud: Cloud, nodes: Mapping[str, SlurmNode]) -> list[str]:
    """Where machines claim their nodes: delete the machines holding these nodes (found by the host name
    each claimed with). Slurm gives a powered-down cloud node its own name back as address and host name
    (cloud_reg_addrs), which frees it for the next machine; the node sync releases any claim left."""
    holders = claimed_holders(cloud.instances(), nodes, names)
    ids = list(holders.values())
    if ids:
        cloud.terminate(ids)
    log.info("suspended %s: deleted %s", ",".join(names), ",".join(ids) or "nothing")
    return ids


def requested(cloud: Cloud) -> list[str]:
    """The nodes a flex-start request still waits for capacity for: a repeated resume asks for none again."""
    return [name for request in cloud.requests() if request.pending for name in request.nodes]


def read_resume_file(path: str | None, expand: Callable[[str], list[str]]) -> list[ResumeJob]:
    """The jobs of SLURM_RESUME_FILE (`{"jobs": [{"job_id": 1, "nodes_resume": "h100-[2-3]"}, ...]}`); no
    file, or one that cannot be read, gives no jobs (every node is then resumed without a job)."""
    if not path:
        return []
    try:
        data = json.loads(Path(path).read_text())
        return [
            ResumeJob(int(job["job_id"]), tuple(expand(job["nodes_resume"])))
            for job in data.get("jobs", [])
            if job.get("nodes_resume")
        ]
    except (OSError, ValueError, KeyError, TypeError):
        log.exception("SLURM_RESUME_FILE %s could not be read: resuming without job information", path)
        return []
