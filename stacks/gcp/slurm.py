"""Slurm on GCP: the controller and login nodes, the elastic nodes' VMs the controller creates from each
group's template, and their teardown."""

from __future__ import annotations

from collections.abc import Mapping

import pulumi
from cluster import Cluster, NodeGroupExport, SchedulerRealized
from slurm_common import (
    SLURM_ITEM,
    controller_boot,
    hosts_monitoring,
    login_boot,
    slurm_export,
    slurm_files,
    slurmd_vars,
    teardown_hooks,
)

from clusterfab.core.naming import GCP_CONTROLLER, GCP_LOGIN, GCP_NODE_SYNC_ROLE, GCP_SLURM_ACCOUNT, physical
from clusterfab.scheduler.slurm.hostvars import (
    accounting_database_name,
    munge_secret_name,
    slurm_node_groups,
)
from clusterfab.scheduler.slurm.nodes.accounting import DATABASE as ACCOUNTING_DATABASE
from clusterfab.scheduler.slurm.nodes.gcp import VM_NAME_MAX, GceGroup, gce_settings
from clusterfab.scheduler.slurm.render import controller_address, require_slurm
from clusterfab.scheduler.slurm.teardown_gcp import gce_fleet
from clusterfab.spec import ClusterSpec, NodeGroup
from components._contracts import MountTarget
from components._naming import child
from components.gcp.network import GcpNetwork
from components.gcp.node_group import instance_group_name
from components.gcp.slurm import (
    GcpDatabaseNetwork,
    GcpElasticNodeGroup,
    GcpSlurmController,
    GcpSlurmControllerArgs,
)
from components.gcp.slurm_database import GcpSlurmDatabaseSettings

from .compute import provisioning
from .monitoring import monitoring_access
from .names import CUSTOM_ROLE_ID_MAX, SERVICE_ACCOUNT_ID_MAX, base_instance_name, group_name
from .site import GcpScheduler, Site, machine_type

FLEX_PREFIX_MAX = 54
"""A flex-start MIG is `<prefix>-<8 hex digits>` within GCE's 63, and the prefix is its base instance name
(at most 58)."""
RESOURCE_POLICY_NAME_MAX = 63
"""compute.v1 ResourcePolicy.name: RFC1035, 1-63 characters."""


def _teardown_hooks(cluster: Cluster, project: str) -> tuple[pulumi.ResourceHook, ...]:
    """The node groups' delete hooks: the VMs are found by the cluster's labels and names, which carry the
    group's hash tag."""
    zone = cluster.spec.zone
    return teardown_hooks(
        cluster,
        lambda blueprint, stack, _deleted: gce_fleet(project, zone, blueprint=blueprint, stack=stack),
        instance_group_name,
    )


def _needs_private_services(spec: ClusterSpec) -> bool:
    """Managed accounting's database takes its address from the network's private services access."""
    return require_slurm(spec).database is not None


def _realize(
    site: Site, groups: dict[str, NodeGroupExport], login_mounts: list[MountTarget]
) -> SchedulerRealized:
    """The controller and login nodes, once the node groups (their exports by name) exist: the controller's
    rights reach their MIGs and templates."""
    spec, cluster = site.spec, site.cluster
    slurm = require_slurm(spec)
    stack = cluster.stack
    sources = site.gce_groups
    archive = slurm_files(cluster, project=site.project, cloud_settings=gce_settings(sources))
    login = slurm.login
    bucket_name = site.bucket.uploaded_name
    controller_script = controller_boot(cluster, bucket_name, archive, project=site.project)
    login_script = login_boot(cluster, bucket_name, login_mounts, project=site.project)
    controller = GcpSlurmController(
        child(spec.name, SLURM_ITEM),
        GcpSlurmControllerArgs(
            cluster=spec.name,
            project=site.project,
            region=spec.region,
            zone=spec.zone,
            subnetwork_id=site.network.system_subnetwork_id,
            bucket_name=site.bucket.bucket_name,
            image=slurm.controller.image,
            private_ip=controller_address(spec),
            munge_secret_id=munge_secret_name(spec, stack),
            instance_name=physical(spec.name, stack, GCP_CONTROLLER),
            login_name_prefix=physical(spec.name, stack, GCP_LOGIN),
            service_account_id=physical(
                spec.name, stack, GCP_SLURM_ACCOUNT, max_length=SERVICE_ACCOUNT_ID_MAX
            ),
            login_service_account_id=physical(spec.name, stack, GCP_LOGIN, max_length=SERVICE_ACCOUNT_ID_MAX),
            role_id_prefix=physical(
                spec.name, stack, GCP_NODE_SYNC_ROLE, max_length=CUSTOM_ROLE_ID_MAX - 5
            ).replace("-", "_"),
            node_instance_prefixes=[base_instance_name(spec, stack, g) for g in spec.node_groups],
            instance_group_managers=[export.group for export in groups.values()],
            elastic_groups=_elastic_groups(sources, groups, site.workload_policies),
            machine_type=slurm.controller.name,
            state_disk_gib=slurm.disk_gib,
            disk_type=slurm.controller.disk_type,
            protect=spec.protected,
            kms_key=slurm.kms_key,
            startup_script=controller_script,
            files=(archive.key, archive.path),
            login_count=slurm.login_count,
            login_machine_type=login.name if login else slurm.controller.name,
            login_startup_script=login_script,
            database=_database_settings(cluster),
            database_network=_database_network(site.network) if slurm.database is not None else None,
            labels=cluster.tags(SLURM_ITEM),
        ),
        site.opts,
    )
    _slurm_grants(site, controller)
    return slurm_export(
        cluster,
        controller=controller.instance_name,
        login=controller.login_instance_names,
        munge_secret=controller.munge_secret_id,
        accounting_database=controller.database.connection_name if controller.database is not None else None,
    )


def _database_settings(cluster: Cluster) -> GcpSlurmDatabaseSettings | None:
    """Managed accounting: Cloud SQL as the catalog records it, named as the controller looks for it."""
    spec = cluster.spec
    database = require_slurm(spec).database
    if database is None:
        return None
    return GcpSlurmDatabaseSettings(
        name=accounting_database_name(spec, cluster.stack),
        database=ACCOUNTING_DATABASE,
        database_version=database.engine,
        edition=str(database.edition),
        tier=database.machine_type,
        storage_gib=database.storage_gib,
        server_ca_mode=database.ca,
        backup_retention_days=database.backup_days,
    )


def _database_network(network: GcpNetwork) -> GcpDatabaseNetwork:
    if network.private_services is None or network.private_services_range is None:
        raise ValueError("managed accounting needs the network's private services access")
    return GcpDatabaseNetwork(
        network_id=network.system_network_id,
        private_services_range=network.private_services_range,
        private_services=network.private_services,
    )


def _elastic_groups(
    sources: Mapping[str, GceGroup],
    groups: dict[str, NodeGroupExport],
    workload_policies: Mapping[str, pulumi.Output[str]],
) -> list[GcpElasticNodeGroup]:
    """The groups with elastic nodes, whose VMs the controller creates from the group's template."""
    return [
        GcpElasticNodeGroup(
            node_group=name,
            vm_prefix=source.vm_prefix,
            placement_prefix=source.placement_prefix,
            flex_prefix=source.flex_prefix,
            workload_policy=workload_policies.get(name) if source.flex_prefix else None,
            template=groups[name].template,
            service_account_email=groups[name].identity,
        )
        for name, source in sources.items()
        if source.vm_prefix
    ]


def _gce_groups(spec: ClusterSpec, stack: str) -> dict[str, GceGroup]:
    """Slurm's node groups as the controller's programs see them (`_gce_group`)."""
    return {g.name: _gce_group(spec, stack, g) for g in slurm_node_groups(spec)}


def _gce_group(spec: ClusterSpec, stack: str, group: NodeGroup) -> GceGroup:
    """A Slurm node group as the controller's programs see it: its MIG (by its base instance name), which
    recreates a static node's VM and through which an elastic group's current template is found, and for
    elastic groups their VMs' names, `<cluster>-<stack>-<group>-<tag>-elastic-<i>` (unique per stack and
    group, `_group_name`, within 63 characters up to the group's highest node number), which the
    controller's rights to create and delete VMs are conditioned on; with compact placement, the placement
    policies of those VMs, `<cluster>-<stack>-<group>-<tag>-placement-<k>`, each holding as many VMs as the
    catalog says one compact placement policy may hold for the machine type (compute.v1 has no max
    distance for them). A flex-start group's elastic VMs are asked for per job through MIGs
    `<cluster>-<stack>-<group>-<tag>-flex-<8 hex digits>` (the controller's rights are conditioned on that
    prefix), placed by the group's workload policy, for the capacity's run duration."""
    elastic = group.max_size > group.static_size
    flex = group.flex_elastic
    # Flex-start VMs are placed by their MIG's workload policy (the group's), not by placement policies.
    placed = elastic and group.placement == "compact" and not flex
    chunk = machine_type(group).placement.limit(None)
    chunks = (group.max_size - 1) // chunk
    run_seconds = provisioning(group.name, group.capacity)[1]
    return GceGroup(
        base_instance_name=base_instance_name(spec, stack, group),
        vm_prefix=group_name(
            spec, stack, group, "elastic", max_length=VM_NAME_MAX - 1 - len(str(group.max_size - 1))
        )
        if elastic
        else "",
        placement_prefix=group_name(
            spec, stack, group, "placement", max_length=RESOURCE_POLICY_NAME_MAX - 1 - len(str(chunks))
        )
        if placed
        else "",
        placement_chunk=chunk if placed else 0,
        flex_prefix=group_name(spec, stack, group, "flex", max_length=FLEX_PREFIX_MAX) if flex else "",
        run_seconds=run_seconds if flex and run_seconds is not None else 0,
    )


def _slurm_grants(site: Site, controller: GcpSlurmController) -> None:
    """A controller that hosts monitoring gets its rights. The GPU nodes' accounts get none for Slurm: the
    munge key comes from the controller's key service."""
    if hosts_monitoring(site.spec):
        member = pulumi.Output.concat("serviceAccount:", controller.service_account_email)
        monitoring_access(site, member=member)


SLURM = GcpScheduler(
    node_vars=slurmd_vars,
    delete_hooks=_teardown_hooks,
    gce_groups=_gce_groups,
    private_services=_needs_private_services,
    realize=_realize,
)
"""Slurm's entry in the GCP realizer's table of schedulers."""
