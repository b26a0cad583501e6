"""The Slurm realization both clouds share: the controller's files, the GPU nodes' slurmd settings, the
teardown of the instances Slurm creates, and the scheduler's outputs.

Each cloud's Slurm module (`stacks/<cloud>/slurm.py`) builds the controller and login nodes with these.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import pulumi
from cluster import BUNDLE_CACHE, Cluster, MonitoringExport, SchedulerRealized

from clusterfab.bootstrap import FilesArchive, files_dir
from clusterfab.core import dates
from clusterfab.core.items import CONTROLLER_ITEM, LOGIN_ITEM
from clusterfab.core.vocab import BLUEPRINT_TAG, STACK_TAG
from clusterfab.monitoring import render_monitoring
from clusterfab.monitoring.host import RenderedArchive, build_archive
from clusterfab.monitoring.tunnel import GRAFANA_PORT
from clusterfab.provision.extravars import node_exporter_vars, storage_vars
from clusterfab.scheduler.slurm.hostvars import (
    MONITORING_DIR,
    client_vars,
    controller_files,
    controller_host_vars,
    health_files,
    node_vars,
)
from clusterfab.scheduler.slurm.render import controller_address
from clusterfab.scheduler.slurm.teardown import Fleet, delete_elastic, group_filter
from clusterfab.spec import ClusterSpec, NodeGroup
from components._contracts import MountTarget
from components._naming import child

KIND = "slurm"
"""The blueprint's `scheduler.kind` these modules realize (the realizers' tables are keyed by it)."""
SLURM_ITEM = "slurm"
"""The controller component's name (with the login nodes under it)."""


def slurmd_vars(cluster: Cluster, group: NodeGroup, project: str | None = None) -> dict[str, Any]:
    """gpu_node.yml's Slurm part for a node group (slurmd's settings)."""
    return node_vars(cluster.spec, cluster.input.catalog.slurm, group, stack=cluster.stack, project=project)


def slurm_files(
    cluster: Cluster, project: str | None = None, cloud_settings: Mapping[str, Any] | None = None
) -> RenderedArchive:
    """The Slurm controller's files (`clusterfab render slurm`'s, the node sync, with the cloud's own
    settings of the node programs) for the bucket."""
    spec, catalog, stack = cluster.spec, cluster.input.catalog, cluster.stack
    files = controller_files(spec, catalog.slurm, stack=stack, project=project, cloud_settings=cloud_settings)
    files |= health_files(spec, catalog.pair_bandwidth)
    if hosts_monitoring(spec):
        rendered = render_monitoring(spec, catalog, stack=stack, project=project, today=dates.today())
        files |= {f"{MONITORING_DIR}/{name}": text for name, text in rendered.items()}
    return build_archive(files, cluster.input.project_root / BUNDLE_CACHE, prefix="slurm/")


def controller_boot(
    cluster: Cluster,
    bucket_name: pulumi.Input[str],
    archive: RenderedArchive,
    *,
    project: str | None = None,
    inputs: Mapping[str, pulumi.Input[Any]] | None = None,
) -> pulumi.Output[str]:
    """The controller's boot script: slurm_controller.yml with the rendered files (`archive`), following
    the stack; `inputs`: the cloud's playbook variables known only once the resources they name exist."""
    host_vars = controller_host_vars(
        cluster.spec,
        cluster.input.catalog,
        stack=cluster.stack,
        files_dir=files_dir(archive.sha256),
        project=project,
    )
    return cluster.boot_script(
        name=CONTROLLER_ITEM,
        bucket_name=bucket_name,
        mounts=[],
        playbook="slurm_controller.yml",
        playbook_vars=lambda _mounts: host_vars,
        healthcheck_vars=None,
        files=FilesArchive(archive.key, archive.sha256),
        follows=True,
        playbook_inputs=inputs,
    )


def login_boot(
    cluster: Cluster, bucket_name: pulumi.Input[str], mounts: list[MountTarget], *, project: str | None = None
) -> pulumi.Output[str]:
    """The login nodes' boot script: slurm_login.yml with the file systems mounted, following the stack."""
    spec, catalog = cluster.spec, cluster.input.catalog
    return cluster.boot_script(
        name=LOGIN_ITEM,
        bucket_name=bucket_name,
        mounts=mounts,
        playbook="slurm_login.yml",
        playbook_vars=lambda resolved: {
            **client_vars(spec, catalog.slurm, stack=cluster.stack, project=project),
            **storage_vars(spec.cloud, catalog, resolved),
            **node_exporter_vars(spec, catalog),
        },
        healthcheck_vars=None,
        follows=True,
    )


def hosts_monitoring(spec: ClusterSpec) -> bool:
    """Whether the controller runs the monitoring stack besides Slurm (`monitoring.host: controller`)."""
    return spec.monitoring is not None and spec.monitoring.host == "controller"


def slurm_export(
    cluster: Cluster,
    *,
    controller: pulumi.Input[str],
    login: pulumi.Input[Any],
    munge_secret: pulumi.Input[str],
    accounting_database: pulumi.Input[str] | None,
) -> SchedulerRealized:
    """The scheduler's outputs (clusterfab.outputs.SchedulerOutput) and, when the controller hosts the
    monitoring stack, the monitoring output: `clusterfab dashboard` tunnels to the controller."""
    spec = cluster.spec
    exports: dict[str, Any] = {
        "kind": KIND,
        "controller": controller,
        "controller_address": controller_address(spec),
        "login": login,
        "munge_secret": munge_secret,
    }
    if accounting_database is not None:
        exports["accounting_database"] = accounting_database
    monitoring = spec.monitoring
    if monitoring is None or not hosts_monitoring(spec):
        return SchedulerRealized(exports)
    return SchedulerRealized(exports, MonitoringExport(controller, GRAFANA_PORT, monitoring.retention_days))


# --- Slurm's elastic nodes: gone before what they stand in ------------------------------------------

ELASTIC_TEARDOWN_HOOK = "clusterfab-slurm-elastic-teardown"
FleetFactory = Callable[[str, str, Mapping[str, Any]], Fleet]
"""(blueprint tag, stack tag, the deleted instance group's state) -> the cluster's instances in its cloud
that the group's delete may remove, with the deploying user's credentials
(clusterfab.scheduler.slurm.teardown_aws.ec2_fleet / teardown_gcp.gce_fleet)."""


def teardown_hooks(
    cluster: Cluster, fleet: FleetFactory, group_resource: Callable[[str], str]
) -> tuple[pulumi.ResourceHook, ...]:
    """The before-delete hook of each node group's instance group (its AWS auto scaling group, its GCP
    managed instance group, named by `group_resource` from the node group component's name): the teardown
    of the instances Slurm created (`elastic_teardown`).

    The realizer makes it for every cluster and binds it under Slurm (`cluster.bound_hooks`): until
    elastic node groups are allowed (rule BP129), every node group of a Slurm cluster is bound, which costs
    one query of the cloud per group at its delete.
    """
    tags = cluster.tags("node-group")
    spec = cluster.spec
    groups = {group_resource(child(spec.name, g.name)): g.name for g in spec.node_groups}
    callback = elastic_teardown(lambda deleted: fleet(tags[BLUEPRINT_TAG], tags[STACK_TAG], deleted), groups)
    return (pulumi.ResourceHook(ELASTIC_TEARDOWN_HOOK, callback),)


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
