"""What the program hands a cloud's realizer, and what the realizer hands back.

`Cluster` is the validated, resolved cluster with the stack it is built for; `Realized` and its exports
are the stack outputs in the shape `clusterfab.outputs.StackOutputs` reads back. `compose.py` builds the
one and turns the other into outputs; the realizers (`stacks/<cloud>/`) import this module, never
compose.py, so the program's modules import each other in one direction only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import pulumi

from clusterfab.bootstrap import FilesArchive, Mount, NodeBootstrap, render_boot_script
from clusterfab.core import dates
from clusterfab.core.plugins import NO_SCHEDULER
from clusterfab.core.vocab import standard_tags
from clusterfab.monitoring import render_monitoring
from clusterfab.monitoring.host import RenderedArchive, build_archive
from clusterfab.provision.bundle import Bundle
from clusterfab.provision.extravars import gpu_node_vars
from clusterfab.spec import ClusterSpec, NodeGroup
from clusterfab.stackinput import StackInput
from components._contracts import MountTarget

BUNDLE_CACHE = Path(".cache") / "bundles"
"""Where the program writes the playbook bundle, relative to the project root (git-ignored)."""


@dataclass(frozen=True)
class Cluster:
    """What a realizer gets: the validated, resolved cluster and the stack it is built for."""

    input: StackInput
    stack: str
    bundle: Bundle

    @property
    def spec(self) -> ClusterSpec:
        return self.input.spec

    @property
    def scheduler_kind(self) -> str:
        """The spec's scheduler kind (`none` without one): a realizer realizes the scheduler with the module
        its table names for this kind."""
        scheduler = self.input.spec.scheduler
        return scheduler.kind if scheduler is not None else NO_SCHEDULER

    def tags(self, component: str) -> dict[str, str]:
        """The tags / labels of a component's resources: the blueprint's own plus clusterfab's."""
        spec = self.input.spec
        return standard_tags(spec.name, self.stack, component, spec.labels)

    def boot_script(
        self,
        *,
        name: str,
        bucket_name: pulumi.Input[str],
        mounts: Sequence[MountTarget],
        playbook: str,
        playbook_vars: Callable[[list[Mount]], dict[str, Any]],
        healthcheck_vars: dict[str, Any] | None,
        files: FilesArchive | None = None,
        follows: bool = False,
        playbook_inputs: Mapping[str, pulumi.Input[Any]] | None = None,
    ) -> pulumi.Output[str]:
        """A node's boot script, once the bucket's name and the mounted file systems' addresses are known;
        `follows`: a host's, which runs the stack's current copy while it runs (NodeBootstrap.follows);
        `playbook_inputs`: more playbook variables, known only once the resources they name exist."""
        spec, catalog = self.input.spec, self.input.catalog

        def render(values: list[Any]) -> str:
            bucket, known, *sources = values
            resolved = [
                Mount(m.name, m.fs_type, source, m.mount_point, m.options)
                for m, source in zip(mounts, sources, strict=True)
            ]
            return render_boot_script(
                NodeBootstrap(
                    cloud=spec.cloud,
                    cluster=spec.name,
                    stack=self.stack,
                    node_group=name,
                    region=spec.region,
                    bucket=bucket,
                    bundle_key=self.bundle.key,
                    bundle_sha256=self.bundle.sha256,
                    ansible_core_version=catalog.node_packages["ansible-core"].version or "",
                    playbook=playbook,
                    playbook_vars={**playbook_vars(resolved), **known},
                    healthcheck_vars=healthcheck_vars,
                    files=files,
                    follows=follows,
                )
            )

        inputs = pulumi.Output.from_input(dict(playbook_inputs or {}))
        return pulumi.Output.all(bucket_name, inputs, *[m.source for m in mounts]).apply(render)

    def monitoring_files(self) -> RenderedArchive:
        """The monitoring host's rendered files (`clusterfab render monitoring`) archived for the bucket."""
        files = render_monitoring(
            self.spec, self.input.catalog, stack=self.stack, project=self.input.project, today=dates.today()
        )
        return build_archive(files, self.input.project_root / BUNDLE_CACHE)

    def gpu_node_playbook_vars(
        self, group: NodeGroup, resolved: list[Mount], scheduler_vars: Mapping[str, Any]
    ) -> dict[str, Any]:
        """gpu_node.yml's vars for a node group: the node software's, then its scheduler's (slurmd's)."""
        return gpu_node_vars(self.spec, group, self.input.catalog, resolved) | dict(scheduler_vars)


@dataclass(frozen=True)
class NodeGroupExport:
    """A node group's outputs (clusterfab.outputs.NodeGroupOutput)."""

    machine_type: str
    min_size: int
    max_size: int
    capacity: str
    placement: str
    fabric: str | None
    group: pulumi.Input[str]
    template: pulumi.Input[str]
    identity: pulumi.Input[str]
    interfaces: int
    fabric_interfaces: int


@dataclass(frozen=True)
class TpuSliceExport:
    """A TPU slice group's outputs (clusterfab.outputs.TpuSliceOutput)."""

    nodes: Sequence[pulumi.Input[str]]
    accelerator_type: str
    topology: str
    runtime_version: str
    slices: int
    hosts_per_slice: int
    capacity: str
    identity: pulumi.Input[str]


@dataclass(frozen=True)
class StorageExport:
    """A file system's outputs (clusterfab.outputs.StorageOutput)."""

    fs_type: str
    id: pulumi.Input[str]
    source: pulumi.Input[str]
    mount_point: str
    options: str

    @classmethod
    def of(cls, target: MountTarget, resource_id: pulumi.Input[str]) -> StorageExport:
        return cls(target.fs_type, resource_id, target.source, target.mount_point, target.options)


@dataclass(frozen=True)
class MonitoringExport:
    """Where Grafana runs (clusterfab.outputs.MonitoringOutput): the monitoring node, or a scheduler's host
    that runs the monitoring stack besides its own work."""

    host: pulumi.Input[str]
    grafana_port: int
    retention_days: int


NetworkExport = Mapping[str, pulumi.Input[str]]
"""The cloud's network ids by name (the cloud's own keys: VPC and subnets, or networks and subnetworks)."""
SchedulerExport = Mapping[str, Any]
"""clusterfab.outputs.SchedulerOutput, in the shape of the scheduler's kind (`kind` first)."""


@dataclass(frozen=True)
class SchedulerRealized:
    """What a realizer's scheduler module built: its outputs and, when its hosts run the monitoring stack,
    where Grafana is."""

    scheduler: SchedulerExport
    monitoring: MonitoringExport | None = None


@dataclass(frozen=True)
class Realized:
    """What a realizer built, in the shape of the stack outputs."""

    network: NetworkExport
    bucket: pulumi.Input[str]
    project: str | None = None
    node_groups: Mapping[str, NodeGroupExport] = field(default_factory=dict)
    tpu_slices: Mapping[str, TpuSliceExport] = field(default_factory=dict)
    storage: Mapping[str, StorageExport] = field(default_factory=dict)
    node_selector: Mapping[str, str] = field(default_factory=dict)
    monitoring: MonitoringExport | None = None
    """None without monitoring."""
    scheduler: SchedulerExport | None = None
    """None without a scheduler."""


class Realizer(Protocol):
    """A cloud's realizer: the `realize` of the module the name table gives for the cloud
    (`clusterfab.core.plugins.realizer`)."""

    def __call__(self, cluster: Cluster) -> Realized: ...


_Entry = TypeVar("_Entry")


def scheduler_entry(cluster: Cluster, table: Mapping[str, _Entry], cloud: str) -> _Entry:
    """A realizer's entry for the cluster's scheduler kind in its `table` (kind -> what realizes it)."""
    entry = table.get(cluster.scheduler_kind)
    if entry is None:
        raise ValueError(
            f"{cluster.spec.name}: the {cloud} realizer has no scheduler of kind {cluster.scheduler_kind!r} "
            f"(it realizes {', '.join(table)})"
        )
    return entry


def bound_hooks(
    cluster: Cluster, made: Mapping[str, tuple[pulumi.ResourceHook, ...]]
) -> tuple[pulumi.ResourceHook, ...]:
    """The before-delete hooks to bind to each node group's instance group: those of the cluster's
    scheduler kind, of `made` (every kind's hooks of the realizer's table).

    The realizer makes every kind's hooks, and so registers them with the engine, whichever kind the
    cluster runs: the engine finds a delete hook by name when the bound resource goes, and an update that
    drops a scheduler and a node group together still deletes that group's instance group, bound when it
    was created ("resource hook not registered" otherwise)."""
    return made[cluster.scheduler_kind]
