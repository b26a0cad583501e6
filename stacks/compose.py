"""ClusterSpec -> cloud: the cloud-neutral half of the program.

`compose()` builds the playbook bundle, hands the resolved cluster to its cloud's realizer
(`compose_<cloud>.py`, the only code that maps a ClusterSpec to component Args) and returns the stack
outputs in the shape `clusterfab.outputs.StackOutputs` reads back. The Pulumi program
(`__main__.py`) and the offline plan (`clusterfab plan`) both call it, so what the plan shows is what
`pulumi up` creates. A realizer's provider package is imported only for clusters on its cloud.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, assert_never

import pulumi

from clusterfab.bootstrap import FilesArchive, Mount, NodeBootstrap, render_boot_script
from clusterfab.core import dates
from clusterfab.core.vocab import BLUEPRINT_TAG, STACK_TAG, Cloud, standard_tags
from clusterfab.monitoring import render_monitoring
from clusterfab.monitoring.host import RenderedArchive, build_archive
from clusterfab.monitoring.tunnel import GRAFANA_PORT
from clusterfab.provision.bundle import Bundle, build_bundle
from clusterfab.provision.extravars import gpu_node_vars
from clusterfab.scheduler.slurm.hostvars import MONITORING_DIR, controller_files, health_files, node_vars
from clusterfab.scheduler.slurm.nodes.gcp import GceGroup
from clusterfab.scheduler.slurm.teardown import Fleet, delete_elastic, group_filter
from clusterfab.spec import ClusterSpec, NodeGroup
from clusterfab.stackinput import StackInput
from components._contracts import MountTarget
from components._naming import child
from components.health_signing import HealthSigningKey

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
        self, group: NodeGroup, resolved: list[Mount], project: str | None = None
    ) -> dict[str, Any]:
        """gpu_node.yml's vars for a node group: the node software's and, under Slurm, slurmd's."""
        spec, catalog = self.spec, self.input.catalog
        variables = gpu_node_vars(spec, group, catalog, resolved)
        if spec.scheduler is not None:
            variables |= node_vars(spec, catalog.slurm, group, stack=self.stack, project=project)
        return variables

    def slurm_files(
        self, project: str | None = None, gce_groups: Mapping[str, GceGroup] | None = None
    ) -> RenderedArchive:
        """The Slurm controller's files (`clusterfab render slurm`'s, the node sync) for the bucket."""
        files = controller_files(
            self.spec, self.input.catalog.slurm, stack=self.stack, project=project, gce_groups=gce_groups
        )
        files |= health_files(self.spec, self.input.catalog.pair_bandwidth)
        monitoring = self.spec.monitoring
        if monitoring is not None and monitoring.host == "controller":
            rendered = render_monitoring(
                self.spec, self.input.catalog, stack=self.stack, project=project, today=dates.today()
            )
            files |= {f"{MONITORING_DIR}/{name}": text for name, text in rendered.items()}
        return build_archive(files, self.input.project_root / BUNDLE_CACHE, prefix="slurm/")

    def node_group_hooks(
        self, fleet: FleetFactory, group_resource: Callable[[str], str]
    ) -> tuple[pulumi.ResourceHook, ...]:
        """The before-delete hooks of each node group's instance group (its AWS auto scaling group, its GCP
        managed instance group, named by `group_resource` from the node group component's name): under
        Slurm, the teardown of the instances Slurm created (`elastic_teardown`).

        Every cluster registers the hook, Slurm or not: the engine finds a delete hook by name when the
        bound resource goes, and an update that drops Slurm and a node group together still deletes that
        group's instance group, bound when it was created ("resource hook not registered" otherwise).
        Only a Slurm cluster binds it: until elastic node groups are allowed (rule BP129), every node group
        of a Slurm cluster is bound, which costs one query of the cloud per group at its delete.
        """
        tags = self.tags("node-group")
        groups = {group_resource(child(self.spec.name, g.name)): g.name for g in self.spec.node_groups}
        callback = elastic_teardown(
            lambda deleted: fleet(tags[BLUEPRINT_TAG], tags[STACK_TAG], deleted), groups
        )
        hook = pulumi.ResourceHook(ELASTIC_TEARDOWN_HOOK, callback)
        return (hook,) if self.spec.scheduler is not None else ()


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
class Realized:
    """What a realizer built, in the shape of the stack outputs."""

    network: Mapping[str, pulumi.Input[str]]
    bucket: pulumi.Input[str]
    project: str | None = None
    node_groups: Mapping[str, NodeGroupExport] = field(default_factory=dict)
    tpu_slices: Mapping[str, TpuSliceExport] = field(default_factory=dict)
    storage: Mapping[str, StorageExport] = field(default_factory=dict)
    node_selector: Mapping[str, str] = field(default_factory=dict)
    monitoring: Mapping[str, pulumi.Input[str] | int] | None = None
    """clusterfab.outputs.MonitoringOutput: the host Grafana runs on; None without monitoring."""
    scheduler: Mapping[str, Any] | None = None
    """clusterfab.outputs.SchedulerOutput: the Slurm controller and login nodes; None without Slurm."""


class Realizer(Protocol):
    def __call__(self, cluster: Cluster) -> Realized: ...


def _realizer(cloud: Cloud) -> Realizer:
    # Imported here: each cloud's provider package takes seconds to import.
    match cloud:
        case "aws":
            module = importlib.import_module("compose_aws")
        case "gcp":
            module = importlib.import_module("compose_gcp")
        case _:
            assert_never(cloud)
    realize: Realizer = module.realize
    return realize


def _fields(export: NodeGroupExport | TpuSliceExport | StorageExport) -> dict[str, Any]:
    # Not dataclasses.asdict: it deep-copies values, and pulumi Outputs must stay as they are.
    return {f.name: getattr(export, f.name) for f in dataclasses.fields(export)}


def compose(stack_input: StackInput, *, stack: str) -> dict[str, Any]:
    """Create the cluster's components; return the stack outputs."""
    spec, root = stack_input.spec, stack_input.project_root
    cluster = Cluster(stack_input, stack, build_bundle(root / "playbooks", root / BUNDLE_CACHE))
    realized = _realizer(spec.cloud)(cluster)
    # Cloud-neutral: the key that signs the stack's health records (clusterfab.health).
    signing = HealthSigningKey("health-signing-key")
    return {
        "blueprint": {
            "name": spec.name,
            "file": stack_input.file,
            "digest": stack_input.digest,
            "bundle_sha256": cluster.bundle.sha256,
            "environment": stack_input.environment,
            "catalog_version": stack_input.catalog.version,
            "cloud": spec.cloud,
            "region": spec.region,
            "zone": spec.zone,
            "project": realized.project,
        },
        "network": dict(realized.network),
        "bucket": realized.bucket,
        "node_groups": {k: _fields(v) for k, v in realized.node_groups.items()},
        "tpu_slices": {k: _fields(v) for k, v in realized.tpu_slices.items()},
        "storage": {k: _fields(v) for k, v in realized.storage.items()},
        "node_selector": dict(realized.node_selector),
        "monitoring": dict(realized.monitoring) if realized.monitoring is not None else None,
        "scheduler": dict(realized.scheduler) if realized.scheduler is not None else None,
        "health_signing_key": pulumi.Output.secret(signing.key),
    }


# --- Slurm's elastic nodes: gone before what they stand in ------------------------------------------

ELASTIC_TEARDOWN_HOOK = "clusterfab-slurm-elastic-teardown"
FleetFactory = Callable[[str, str, Mapping[str, Any]], Fleet]
"""(blueprint tag, stack tag, the deleted instance group's state) -> the cluster's instances in its cloud
that the group's delete may remove, with the deploying user's credentials
(clusterfab.scheduler.slurm.teardown.ec2_fleet / gce_fleet)."""


def elastic_teardown(
    fleet: Callable[[Mapping[str, Any]], Fleet], groups: Mapping[str, str]
) -> Callable[[pulumi.ResourceHookArgs], Awaitable[None]]:
    """A before-delete hook's callback (Pulumi resource hooks, Python SDK `pulumi.ResourceHook`:
    https://www.pulumi.com/docs/iac/concepts/resources/options/hooks/): delete the instances Slurm created
    for the node group whose instance group is going, and wait until they are gone, so that the deletes
    after it (launch template, placement group, security group, subnet) find nothing in use. `groups`
    maps each instance group's logical name to its node group; a name it lacks is a group the blueprint
    no longer has, whose instances are those of no group it keeps. An error fails that delete, with the
    instances it names."""
    kept = frozenset(groups.values())

    async def before_delete(args: pulumi.ResourceHookArgs) -> None:
        wanted = group_filter(groups.get(args.name), kept)
        # The engine calls hooks on the program's asyncio callback server: the cloud calls and the wait run
        # in a thread, so that the server goes on answering the other groups' hooks meanwhile.
        found = await asyncio.to_thread(fleet, dict(args.old_outputs or {}))
        deleted = await asyncio.to_thread(delete_elastic, found, wanted)
        if deleted:
            pulumi.log.info(
                f"{args.name}: deleted {len(deleted)} instance(s) and flex-start MIG(s) Slurm created: "
                f"{', '.join(deleted)}"
            )

    return before_delete


def controller_monitoring(
    spec: ClusterSpec, scheduler: Mapping[str, Any] | None
) -> dict[str, pulumi.Input[str] | int] | None:
    """The `monitoring` output when the Slurm controller hosts the stack: `clusterfab dashboard` tunnels
    to the controller."""
    if spec.monitoring is None or spec.monitoring.host != "controller" or scheduler is None:
        return None
    return {
        "host": scheduler["controller"],
        "grafana_port": GRAFANA_PORT,
        "retention_days": spec.monitoring.retention_days,
    }
