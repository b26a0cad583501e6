"""ClusterSpec -> GCP components: the only place that maps a resolved cluster to GCP component Args.

The system network (plus the second gVNIC network RoCE machines use), one set of fabric networks per
fabric kind in use, the cluster bucket, Managed Lustre / Filestore, a MIG per node group, TPU slices
and the budget. Resources are registered in that order.

Addresses are fixed slots of the cluster range (`clusterfab.addressing`): general network i is slot i,
the fabric networks follow in a fixed fabric order, and the last slot is reserved for private services
access (where Managed Lustre and Filestore get their addresses). Fabric network counts, MTUs and the
RoCE network profile come from the catalog (`GcpMachineType.network`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from ipaddress import IPv4Network
from typing import Any, Literal, TypedDict, assert_never, get_args

import pulumi
import pulumi_gcp as gcp
from compose import Cluster, NodeGroupExport, Realized, StorageExport, TpuSliceExport, controller_monitoring

from clusterfab import addressing
from clusterfab.bootstrap import FilesArchive, files_dir
from clusterfab.catalog.models import GcpMachineType
from clusterfab.clouds import profile
from clusterfab.core.naming import (
    GCP_CONTROLLER,
    GCP_LOGIN,
    GCP_MONITORING,
    GCP_MONITORING_ACCOUNT,
    GCP_NODE_SYNC_ROLE,
    GCP_SLURM_ACCOUNT,
    name_tag,
    physical,
)
from clusterfab.core.vocab import Fabric
from clusterfab.cost import monthly_budget_limit
from clusterfab.cost.estimate import CONTROLLER_ITEM, LOGIN_ITEM, MONITORING_ITEM
from clusterfab.monitoring.host import RenderedArchive, monitoring_host_vars
from clusterfab.monitoring.tunnel import GRAFANA_PORT
from clusterfab.provision.extravars import healthcheck_vars, storage_vars, tpu_host_vars
from clusterfab.scheduler.slurm.hostvars import (
    accounting_database_name,
    client_vars,
    controller_host_vars,
    munge_secret_name,
    slurm_node_groups,
)
from clusterfab.scheduler.slurm.nodes.accounting import DATABASE as ACCOUNTING_DATABASE
from clusterfab.scheduler.slurm.nodes.gcp import VM_NAME_MAX, GceGroup
from clusterfab.scheduler.slurm.render import controller_address
from clusterfab.scheduler.slurm.teardown import gce_fleet
from clusterfab.spec import (
    Capacity,
    CapacityBlock,
    ClusterSpec,
    FilestoreStorage,
    FlexStart,
    LustreStorage,
    NodeGroup,
    OnDemand,
    Reservation,
    Spot,
    TpuSlice,
)
from components._contracts import MountTarget
from components._naming import child
from components.gcp.bucket import GcpClusterBucket, GcpClusterBucketArgs
from components.gcp.budget import GcpBudget, GcpBudgetArgs
from components.gcp.monitoring import (
    GcpMonitoringAccess,
    GcpMonitoringAccessArgs,
    GcpMonitoringNode,
    GcpMonitoringNodeArgs,
)
from components.gcp.network import (
    GcpFabricNetwork,
    GcpFabricNetworkArgs,
    GcpNetwork,
    GcpNetworkArgs,
    SubnetArgs,
    VpcArgs,
)
from components.gcp.node_group import (
    BASE_INSTANCE_NAME_MAX,
    GcpGpuNodeGroup,
    GcpGpuNodeGroupArgs,
    Nic,
    Provisioning,
    instance_group_name,
)
from components.gcp.slurm import (
    GcpDatabaseNetwork,
    GcpElasticNodeGroup,
    GcpSlurmController,
    GcpSlurmControllerArgs,
)
from components.gcp.slurm_database import GcpSlurmDatabaseSettings
from components.gcp.storage import GcpFilestore, GcpFilestoreArgs, GcpManagedLustre, GcpManagedLustreArgs
from components.gcp.tpu import QUEUED_RESOURCE_ID_MAX, GcpTpuSlices, GcpTpuSlicesArgs

PSA_SLOT = addressing.GCP_PRIVATE_SERVICES_SLOT
"""The last block of the cluster range: allocated to private services access (Lustre, Filestore)."""
FABRIC_ORDER: tuple[Fabric, ...] = get_args(Fabric)
"""Fabric networks take their address slots in this order, so reordering node groups moves nothing."""
SERVICE_ACCOUNT_ID_MAX = 30
FLEX_PREFIX_MAX = 54
"""A flex-start MIG is `<prefix>-<8 hex digits>` within GCE's 63, and the prefix is its base instance name
(at most 58)."""
RESOURCE_POLICY_NAME_MAX = 63
"""compute.v1 ResourcePolicy.name: RFC1035, 1-63 characters."""
TOPOLOGY_DISTANCE: dict[int, Literal["SUBBLOCK", "BLOCK", "CLUSTER"]] = {
    1: "SUBBLOCK",
    2: "BLOCK",
    3: "CLUSTER",
}
"""Blueprint placement_max_distance -> the workload policy's maxTopologyDistance."""


class GcpRealizeError(ValueError):
    """A spec the GCP components cannot realize; validation should have refused it."""


@dataclass(frozen=True)
class NetworkPlan:
    """Every network of the cluster: general VPCs (general[0] is the system VPC) and fabric VPCs."""

    general: tuple[VpcArgs, ...]
    fabrics: dict[Fabric, tuple[VpcArgs, ...]]
    psa_range: str | None


def plan_networks(
    *,
    project: str,
    zone: str,
    cidr: str,
    fabric_machines: Sequence[GcpMachineType],
    general_slots: int,
    private_services: bool,
    system_mtus: Sequence[int] = (),
) -> NetworkPlan:
    """The networks for node groups on `fabric_machines` (the machine types of groups with a fabric).

    `general_slots` address slots stay reserved for general networks (the most any catalog machine
    type uses), so adding a RoCE group to a TCPXO cluster moves no existing subnet. `system_mtus` are
    the MTUs other users of the system network ask for (TPU slices, Managed Lustre clients).
    """
    blocks = addressing.blocks(cidr)
    general_count = max((m.network.general_vpcs for m in fabric_machines), default=1)
    if general_count > general_slots:
        raise GcpRealizeError(
            f"{general_count} general networks do not fit in {general_slots} reserved slots"
        )
    general: list[VpcArgs] = []
    for index in range(general_count):
        users = [m for m in fabric_machines if m.network.general_vpcs > index]
        asked = [m.network.general_mtu for m in users] + (list(system_mtus) if index == 0 else [])
        # One VPC serves several users: the smallest MTU any of them asks for works for all.
        mtu = min(asked, default=None)
        role = "sys" if index == 0 else f"gvnic-{index}"
        general.append(
            VpcArgs(
                role,
                mtu,
                (SubnetArgs(f"{role}-subnet", str(blocks[index])),),
                google_access=True,
                flow_logs=True,
            )
        )
    slot = general_slots
    fabrics: dict[Fabric, tuple[VpcArgs, ...]] = {}
    for fabric in FABRIC_ORDER:
        machines = [m for m in fabric_machines if m.fabric == fabric]
        if machines:
            fabrics[fabric], slot = _fabric_vpcs(
                fabric, machines, blocks, slot=slot, project=project, zone=zone
            )
    return NetworkPlan(tuple(general), fabrics, str(blocks[PSA_SLOT]) if private_services else None)


def _fabric_vpcs(
    fabric: Fabric,
    machines: list[GcpMachineType],
    blocks: list[IPv4Network],
    *,
    slot: int,
    project: str,
    zone: str,
) -> tuple[tuple[VpcArgs, ...], int]:
    """One fabric's VPCs from address slot `slot` on; returns them and the next free slot."""
    vpcs: list[VpcArgs] = []
    gpu_mtu = min((m.network.gpu_mtu for m in machines if m.network.gpu_mtu), default=None)
    for index in range(max(m.network.gpu_vpcs for m in machines)):
        if slot >= PSA_SLOT:
            break
        vpcs.append(VpcArgs(f"gpu-{index}", gpu_mtu, (SubnetArgs(f"gpu-{index}-subnet", str(blocks[slot])),)))
        slot += 1
    rdma_subnets = max(m.network.rdma_subnets for m in machines)
    if rdma_subnets:
        profiles = {m.network.rdma_profile for m in machines}
        if len(profiles) != 1 or None in profiles:
            raise GcpRealizeError(f"{fabric} machine types disagree on the RDMA network profile: {profiles}")
        subnets = []
        for index in range(rdma_subnets):
            if slot >= PSA_SLOT:
                break
            subnets.append(SubnetArgs(f"subnet-{index}", str(blocks[slot])))
            slot += 1
        vpcs.append(
            VpcArgs(
                "vpc",
                min(m.network.rdma_mtu for m in machines if m.network.rdma_mtu),
                tuple(subnets),
                network_profile=f"projects/{project}/global/networkProfiles/{zone}-{profiles.pop()}",
            )
        )
    needed = max(m.network.gpu_vpcs + m.network.rdma_subnets for m in machines)
    if sum(len(v.subnets) for v in vpcs) < needed:
        raise GcpRealizeError(
            f"the {fabric} fabric needs {needed} subnets; the cluster range has too few address blocks left"
        )
    return tuple(vpcs), slot


@dataclass(frozen=True)
class _Site:
    """Where every component of the cluster is built: its project, provider, networks and bucket."""

    cluster: Cluster
    project: str
    opts: pulumi.ResourceOptions
    network: GcpNetwork
    fabrics: dict[Fabric, GcpFabricNetwork]
    bucket: GcpClusterBucket
    node_group_hooks: tuple[pulumi.ResourceHook, ...] = ()
    """Bound to each node group's managed instance group (Cluster.node_group_hooks)."""
    gce_groups: Mapping[str, GceGroup] = field(default_factory=dict)
    """Slurm's node groups as the controller's programs see them (`_gce_group`); empty without Slurm."""
    workload_policies: dict[str, pulumi.Output[str]] = field(default_factory=dict)
    """Each compactly placed node group's workload policy (name): a flex-start group's elastic MIGs use it."""

    @property
    def spec(self) -> ClusterSpec:
        return self.cluster.spec


def realize(cluster: Cluster) -> Realized:
    spec = cluster.spec
    project = cluster.input.project
    if not project:
        raise pulumi.RunError(
            f"{cluster.input.file}: no GCP project: set `project:` in the blueprint "
            "or the stack config `gcp:project`"
        )
    # One explicit provider, in the blueprint's project and region: stack config cannot move the cluster.
    opts = pulumi.ResourceOptions(
        providers=[gcp.Provider(child(spec.name, "gcp"), project=project, region=spec.region)]
    )
    network, fabrics = _networks(cluster, project, opts)
    bucket = GcpClusterBucket(
        child(spec.name, "artifacts"),
        GcpClusterBucketArgs(
            project=project,
            location=spec.region,
            protect=spec.protected,
            objects={"bundle": (cluster.bundle.key, cluster.bundle.path)},
            kms_key_name=spec.bucket_kms_key,
            labels=cluster.tags("artifacts"),
        ),
        opts,
    )
    sources = _gce_groups(spec, cluster.stack) if spec.scheduler is not None else {}
    hooks = cluster.node_group_hooks(
        # GCP: the VMs are found by the cluster's labels and names, which carry the group's hash tag.
        lambda blueprint, stack, _deleted: gce_fleet(project, spec.zone, blueprint=blueprint, stack=stack),
        instance_group_name,
    )
    site = _Site(cluster, project, opts, network, fabrics, bucket, hooks, sources)
    mounts, storage = _storage(site)
    groups = {g.name: _node_group(site, g, [mounts[s] for s in g.storage]) for g in spec.node_groups}
    tpus = {t.name: _tpu(site, t, [mounts[s] for s in t.storage]) for t in spec.tpu_slices}
    _budget(site)
    scheduler = _slurm(site, groups, list(mounts.values()))
    monitoring = _monitoring(site) or controller_monitoring(spec, scheduler)
    links: dict[str, pulumi.Input[str]] = dict(network.network_self_links)
    for fabric, fabric_network in fabrics.items():
        for role, link in fabric_network.network_self_links.items():
            links[f"{fabric}-{role}"] = link
    links.update(
        system_network_id=network.system_network_id, system_subnetwork_id=network.system_subnetwork_id
    )
    return Realized(
        network=links,
        bucket=bucket.bucket_name,
        project=project,
        node_groups=groups,
        tpu_slices=tpus,
        storage=storage,
        node_selector=profile("gcp").node_selector(spec.name, cluster.stack),
        monitoring=monitoring,
        scheduler=scheduler,
    )


def _networks(
    cluster: Cluster, project: str, opts: pulumi.ResourceOptions
) -> tuple[GcpNetwork, dict[Fabric, GcpFabricNetwork]]:
    spec, catalog = cluster.spec, cluster.input.catalog
    plan = plan_networks(
        project=project,
        zone=spec.zone,
        cidr=spec.cidr,
        fabric_machines=[_machine(g) for g in spec.node_groups if g.fabric is not None],
        general_slots=max(m.network.general_vpcs for m in catalog.gcp_machine_types.values()),
        # Managed storage and the managed accounting database take their addresses from it.
        private_services=bool(spec.storage)
        or (spec.scheduler is not None and spec.scheduler.database is not None),
        system_mtus=[
            *(t.generation.network_mtu for t in spec.tpu_slices if t.generation.network_mtu),
            *(s.tier.network_mtu for s in spec.storage if s.tier.network_mtu),
        ],
    )
    network = GcpNetwork(
        child(spec.name, "net"),
        GcpNetworkArgs(
            project=project,
            region=spec.region,
            cidr=spec.cidr,
            general=plan.general,
            private_services_range=plan.psa_range,
            ssh_ingress_cidrs=spec.ssh_ingress_cidrs,
            labels=cluster.tags("network"),
        ),
        opts,
    )
    fabrics = {
        fabric: GcpFabricNetwork(
            child(spec.name, fabric),
            GcpFabricNetworkArgs(project=project, region=spec.region, vpcs=vpcs),
            opts,
        )
        for fabric, vpcs in plan.fabrics.items()
    }
    return network, fabrics


def _machine(group: NodeGroup) -> GcpMachineType:
    if not isinstance(group.machine, GcpMachineType):
        raise GcpRealizeError(f"node group {group.name}: {group.machine.name} is not a GCP machine type")
    return group.machine


def _storage(site: _Site) -> tuple[dict[str, MountTarget], dict[str, StorageExport]]:
    spec = site.spec
    mounts: dict[str, MountTarget] = {}
    exports: dict[str, StorageExport] = {}
    for item in spec.storage:
        component: GcpManagedLustre | GcpFilestore
        if isinstance(item, LustreStorage):
            component = GcpManagedLustre(
                child(spec.name, item.name),
                GcpManagedLustreArgs(
                    project=site.project,
                    zone=spec.zone,
                    instance_id=physical(spec.name, site.cluster.stack, item.name),
                    capacity_gib=item.capacity_gib,
                    per_unit_storage_throughput=item.throughput_mbps_per_tib or 0,
                    network_id=site.network.system_network_id,
                    mount_point=item.mount_point,
                    mount_name=item.name,
                    private_services=site.network.private_services,
                    kms_key=item.kms_key,
                    protect=item.protected,
                    labels=site.cluster.tags(f"storage-{item.name}"),
                ),
                site.opts,
            )
        else:
            component = _filestore(site, item)
        mounts[item.name] = component.mount_target
        exports[item.name] = StorageExport.of(component.mount_target, component.instance_name)
    return mounts, exports


def _filestore(site: _Site, item: FilestoreStorage) -> GcpFilestore:
    spec, network = site.spec, site.network
    return GcpFilestore(
        child(spec.name, item.name),
        GcpFilestoreArgs(
            project=site.project,
            location=spec.region if item.tier.location == "region" else spec.zone,
            capacity_gib=item.capacity_gib,
            network_name=network.system_network_name,
            mount_point=item.mount_point,
            tier=item.tier.tier,
            share_name=item.share_name,
            mount_name=item.name,
            private_services=network.private_services,
            private_services_range=network.private_services_range,
            # The nodes' subnet only: nothing else of the network has any business with the share.
            client_ranges=(network.system_subnet_cidr,),
            root_squash=item.root_squash,
            kms_key_name=item.kms_key,
            protect=item.protected,
            labels=site.cluster.tags(f"storage-{item.name}"),
        ),
        site.opts,
    )


def _provisioning(group_name: str, capacity: Capacity) -> tuple[Provisioning, int | None, str | None]:
    """(provisioning model, max run seconds, reservation) of a capacity."""
    match capacity:
        case OnDemand():
            return "STANDARD", None, None
        case Reservation():
            return "STANDARD", None, capacity.reservation
        case Spot():
            return "SPOT", None, None
        case FlexStart():
            hours = capacity.max_run_hours
            return "FLEX_START", hours * 3600 if hours is not None else None, None
        case CapacityBlock():
            raise GcpRealizeError(f"{group_name}: GCP has no capacity blocks (validation rejects them)")
        case _:
            assert_never(capacity)


def _nics(group: NodeGroup, machine: GcpMachineType) -> tuple[Nic, ...]:
    net = machine.network
    nics = [Nic("general", 0, net.general_nic_type)]
    if group.fabric is not None:
        nics += [Nic("general", i, net.general_nic_type) for i in range(1, net.general_vpcs)]
        nics += [Nic("fabric", i, net.gpu_nic_type) for i in range(net.gpu_vpcs + net.rdma_subnets)]
    return tuple(nics)


def _distance(group: NodeGroup, machine: GcpMachineType) -> Literal["SUBBLOCK", "BLOCK", "CLUSTER"] | None:
    """The workload policy's max distance: none where the machine places by accelerator topology."""
    distance = group.placement_max_distance
    if group.placement != "compact" or distance is None or machine.placement.accelerator_topology:
        return None
    return TOPOLOGY_DISTANCE[distance]


def _node_group(site: _Site, group: NodeGroup, mounts: list[MountTarget]) -> NodeGroupExport:
    spec, machine, stack = site.spec, _machine(group), site.cluster.stack
    model, max_run_seconds, reservation = _provisioning(group.name, group.capacity)
    nics = _nics(group, machine)
    compact = group.placement == "compact"
    component = GcpGpuNodeGroup(
        child(spec.name, group.name),
        GcpGpuNodeGroupArgs(
            node_group=group.name,
            project=site.project,
            region=spec.region,
            zone=spec.zone,
            machine_type=machine.name,
            image=group.image,
            service_account_id=physical(
                spec.name, site.cluster.stack, group.name, max_length=SERVICE_ACCOUNT_ID_MAX
            ),
            general_subnetworks=site.network.general_subnetworks,
            fabric_subnetworks=site.fabrics[group.fabric].nic_subnetworks if group.fabric is not None else (),
            bucket_name=site.bucket.bucket_name,
            nics=nics,
            boot_disk_type=machine.boot_disk_type,
            boot_disk_gib=group.boot_disk_gib,
            boot_disk_kms_key=group.kms_key,
            **_mig_size(site, group),
            provisioning_model=model,
            max_run_duration_seconds=max_run_seconds,
            reservation=reservation,
            compact_placement=compact,
            max_topology_distance=_distance(group, machine),
            accelerator_topology=machine.placement.accelerator_topology if compact else None,
            elastic_placement_policies=(
                site.gce_groups[group.name].placement_policies(group.static_size, group.max_size)
                if group.name in site.gce_groups
                else []
            ),
            startup_script=_node_boot(site, group, mounts),
            base_instance_name=_base_instance_name(spec, stack, group),
            description=f"{spec.name}/{group.name}",
            service_account_description=f"clusterfab nodes of {spec.name}/{group.name} ({stack})",
            labels=site.cluster.tags(f"node-group-{group.name}"),
            before_delete=site.node_group_hooks,
        ),
        site.opts,
    )
    if component.workload_policy is not None:
        site.workload_policies[group.name] = component.workload_policy
    return NodeGroupExport(
        machine_type=machine.name,
        min_size=group.min_size,
        max_size=group.max_size,
        capacity=group.capacity.kind,
        placement=group.placement,
        fabric=group.fabric,
        group=component.instance_group_manager_name,
        template=component.instance_template,
        identity=component.service_account_email,
        interfaces=len(nics),
        fabric_interfaces=sum(1 for n in nics if n.network == "fabric"),
    )


class _MigSize(TypedDict):
    min_size: int
    max_size: int
    autoscaled: bool


def _mig_size(site: _Site, group: NodeGroup) -> _MigSize:
    """The group's MIG's size. A flex-start group's elastic nodes are Slurm's requests, each a MIG of its
    own: the group's MIG holds its static nodes, all at once, and nothing resizes it."""
    source = site.gce_groups.get(group.name)
    if source is not None and source.flex_prefix:
        return _MigSize(min_size=group.static_size, max_size=group.static_size, autoscaled=False)
    return _MigSize(min_size=group.min_size, max_size=group.max_size, autoscaled=group.autoscaled)


def _group_name(spec: ClusterSpec, stack: str, group: NodeGroup, *role: str, max_length: int) -> str:
    """`<cluster>-<stack>-<group>-<tag>[-<role>]`, the tag telling this cluster, stack and group apart from
    any other whose parts join to the same words (`ml` `prod` `prod-h100` and `ml-prod` `prod` `h100`): the
    controller's rights are conditioned on these names as prefixes, so they must name this group's VMs,
    disks, MIGs and policies only, in a project that holds other clusters and stacks."""
    tag = name_tag(spec.name, stack, group.name)
    return physical(spec.name, stack, group.name, tag, *role, max_length=max_length)


def _base_instance_name(spec: ClusterSpec, stack: str, group: NodeGroup) -> str:
    """The group's MIG's base instance name: its VMs are `<this>-xxxx`. With the stack and the tag in it,
    other stacks and clusters in the project (and zone) name their VMs apart, and each controller's rights,
    conditioned on these names, reach its own stack's VMs only."""
    return _group_name(spec, stack, group, max_length=BASE_INSTANCE_NAME_MAX)


def _node_boot(site: _Site, group: NodeGroup, mounts: list[MountTarget]) -> pulumi.Output[str]:
    """A GPU node's boot: gpu_node.yml with the node software's vars and, under Slurm, slurmd's."""
    spec, catalog = site.spec, site.cluster.input.catalog
    return site.cluster.boot_script(
        name=group.name,
        bucket_name=site.bucket.uploaded_name,
        mounts=mounts,
        playbook="gpu_node.yml",
        playbook_vars=lambda resolved: site.cluster.gpu_node_playbook_vars(group, resolved, site.project),
        healthcheck_vars=healthcheck_vars(spec, group, catalog),
    )


def _tpu_capacity(tpu: TpuSlice) -> Literal["on_demand", "spot", "reservation"]:
    capacity = tpu.capacity
    match capacity:
        case OnDemand():
            return "on_demand"
        case Spot():
            return "spot"
        case Reservation():
            return "reservation"
        case CapacityBlock() | FlexStart():
            raise GcpRealizeError(f"TPU slice {tpu.name}: TPU VMs are not sold as {capacity.kind}")
        case _:
            assert_never(capacity)


def _tpu(site: _Site, tpu: TpuSlice, mounts: list[MountTarget]) -> TpuSliceExport:
    spec, catalog, stack = site.spec, site.cluster.input.catalog, site.cluster.stack
    slices = GcpTpuSlices(
        child(spec.name, tpu.name),
        GcpTpuSlicesArgs(
            node_group=tpu.name,
            project=site.project,
            zone=spec.zone,
            accelerator_type=tpu.accelerator_type,
            runtime_version=tpu.runtime_version,
            service_account_id=physical(spec.name, stack, tpu.name, max_length=SERVICE_ACCOUNT_ID_MAX),
            network_id=site.network.system_network_id,
            subnetwork_id=site.network.system_subnetwork_id,
            bucket_name=site.bucket.bucket_name,
            slices=tpu.slices,
            capacity=_tpu_capacity(tpu),
            reservation=tpu.capacity.reservation if isinstance(tpu.capacity, Reservation) else None,
            node_prefix=physical(spec.name, stack, tpu.name, max_length=QUEUED_RESOURCE_ID_MAX - 4),
            startup_script=site.cluster.boot_script(
                name=tpu.name,
                bucket_name=site.bucket.uploaded_name,
                mounts=mounts,
                playbook="tpu_host.yml",
                playbook_vars=lambda resolved: tpu_host_vars(spec, tpu, catalog, resolved),
                healthcheck_vars=None,
            ),
            description=f"{spec.name}/{tpu.name}",
            service_account_description=f"clusterfab TPU VMs of {spec.name}/{tpu.name} ({stack})",
            labels=site.cluster.tags(f"tpu-{tpu.name}"),
        ),
        site.opts,
    )
    return TpuSliceExport(
        nodes=slices.node_names,
        accelerator_type=tpu.accelerator_type,
        topology=tpu.topology,
        runtime_version=tpu.runtime_version,
        slices=tpu.slices,
        hosts_per_slice=tpu.hosts_per_slice,
        capacity=tpu.capacity.kind,
        identity=slices.service_account_email,
    )


def _budget(site: _Site) -> None:
    spec = site.spec
    monthly = monthly_budget_limit(spec.budget)
    if spec.budget is None or monthly is None:
        return
    billing_account = site.cluster.input.settings.billing_account
    if not billing_account:
        # A finding of the stack's blueprint says so (BP410), located at `budget`, with the setting.
        return
    GcpBudget(
        child(spec.name, "budget"),
        GcpBudgetArgs(
            cluster=spec.name,
            stack=site.cluster.stack,
            project=site.project,
            billing_account=billing_account,
            monthly_limit_usd=monthly,
            alert_emails=spec.budget.alert_emails,
            labels=site.cluster.tags("budget"),
        ),
        site.opts,
    )


# --- Monitoring: Prometheus, Alertmanager and Grafana on their own node, or on the Slurm controller.

CUSTOM_ROLE_ID_MAX = 64


def _discovery_role_id(site: _Site) -> str:
    """A custom role id for the cluster and stack (letters, digits and underscores; unique in the project)."""
    return _role_id(site.spec.name, site.cluster.stack, GCP_MONITORING, max_length=CUSTOM_ROLE_ID_MAX)


def _monitoring(site: _Site) -> dict[str, pulumi.Input[str] | int] | None:
    """The monitoring node, when the cluster monitors and has no Slurm controller to host the stack
    (on a controller, its realizer calls `monitoring_access` and boots the controller with
    monitoring.yml as well)."""
    spec, cluster = site.spec, site.cluster
    monitoring = spec.monitoring
    if monitoring is None or monitoring.host != "node" or monitoring.machine is None:
        return None
    machine = monitoring.machine
    archive = cluster.monitoring_files()
    host_vars = monitoring_host_vars(
        spec, cluster.input.catalog, files_dir=files_dir(archive.sha256), project=site.project
    )
    node = GcpMonitoringNode(
        child(spec.name, MONITORING_ITEM),
        GcpMonitoringNodeArgs(
            project=site.project,
            zone=spec.zone,
            subnetwork_id=site.network.system_subnetwork_id,
            bucket_name=site.bucket.bucket_name,
            image=machine.image,
            service_account_id=physical(
                spec.name, cluster.stack, GCP_MONITORING_ACCOUNT, max_length=SERVICE_ACCOUNT_ID_MAX
            ),
            role_id=_discovery_role_id(site),
            machine_type=machine.name,
            disk_gib=monitoring.disk_gib,
            disk_type=machine.disk_type,
            startup_script=cluster.boot_script(
                name=MONITORING_ITEM,
                bucket_name=site.bucket.uploaded_name,
                mounts=[],
                playbook="monitoring.yml",
                playbook_vars=lambda _mounts: host_vars,
                healthcheck_vars=None,
                files=FilesArchive(archive.key, archive.sha256),
                follows=True,
            ),
            files=(archive.key, archive.path),
            smtp_secret=monitoring.smtp.password_secret if monitoring.smtp else None,
            instance_name=physical(spec.name, cluster.stack, GCP_MONITORING),
            labels=cluster.tags(MONITORING_ITEM),
        ),
        site.opts,
    )
    return {
        "host": node.instance_name,
        "grafana_port": GRAFANA_PORT,
        "retention_days": monitoring.retention_days,
    }


def monitoring_access(site: _Site, *, member: pulumi.Input[str]) -> GcpMonitoringAccess:
    """The hook for a host that runs the monitoring stack besides its own work (the Slurm controller):
    instance discovery and the SMTP secret for its service account (`member` is `serviceAccount:<email>`).
    Scrapes need no firewall rule while the host sits in the cluster's range (the system network admits
    it); Grafana needs none either: it listens on the host's loopback, reached through SSH over IAP."""
    spec = site.spec
    smtp = spec.monitoring.smtp if spec.monitoring is not None else None
    return GcpMonitoringAccess(
        child(spec.name, "monitoring-access"),
        GcpMonitoringAccessArgs(
            project=site.project,
            role_id=_discovery_role_id(site),
            member=member,
            smtp_secret=smtp.password_secret if smtp else None,
        ),
        site.opts,
    )


# --- Slurm: the controller and login nodes; the GPU nodes' accounts may read the munge key.

SLURM_ITEM = "slurm"


def _slurm(
    site: _Site, groups: dict[str, NodeGroupExport], login_mounts: list[MountTarget]
) -> dict[str, Any] | None:
    spec, cluster = site.spec, site.cluster
    slurm = spec.scheduler
    if slurm is None:
        return None
    stack = cluster.stack
    sources = site.gce_groups
    archive = cluster.slurm_files(project=site.project, gce_groups=sources)
    login = slurm.login
    controller_boot, login_boot = _slurm_boot_scripts(site, archive, login_mounts)
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
            node_instance_prefixes=[_base_instance_name(spec, stack, g) for g in spec.node_groups],
            instance_group_managers=[export.group for export in groups.values()],
            elastic_groups=_elastic_groups(sources, groups, site.workload_policies),
            machine_type=slurm.controller.name,
            state_disk_gib=slurm.disk_gib,
            disk_type=slurm.controller.disk_type,
            protect=spec.protected,
            kms_key=slurm.kms_key,
            startup_script=controller_boot,
            files=(archive.key, archive.path),
            login_count=slurm.login_count,
            login_machine_type=login.name if login else slurm.controller.name,
            login_startup_script=login_boot,
            database=_database_settings(cluster),
            database_network=_database_network(site.network) if slurm.database is not None else None,
            labels=cluster.tags(SLURM_ITEM),
        ),
        site.opts,
    )
    _slurm_grants(site, controller)
    exports: dict[str, Any] = {
        "kind": "slurm",
        "controller": controller.instance_name,
        "controller_address": controller_address(spec),
        "login": controller.login_instance_names,
        "munge_secret": controller.munge_secret_id,
    }
    if controller.database is not None:
        exports["accounting_database"] = controller.database.connection_name
    return exports


def _database_settings(cluster: Cluster) -> GcpSlurmDatabaseSettings | None:
    """Managed accounting: Cloud SQL as the catalog records it, named as the controller looks for it."""
    spec = cluster.spec
    database = spec.scheduler.database if spec.scheduler is not None else None
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
    chunk = _machine(group).placement.limit(None)
    chunks = (group.max_size - 1) // chunk
    run_seconds = _provisioning(group.name, group.capacity)[1]
    return GceGroup(
        base_instance_name=_base_instance_name(spec, stack, group),
        vm_prefix=_group_name(
            spec, stack, group, "elastic", max_length=VM_NAME_MAX - 1 - len(str(group.max_size - 1))
        )
        if elastic
        else "",
        placement_prefix=_group_name(
            spec, stack, group, "placement", max_length=RESOURCE_POLICY_NAME_MAX - 1 - len(str(chunks))
        )
        if placed
        else "",
        placement_chunk=chunk if placed else 0,
        flex_prefix=_group_name(spec, stack, group, "flex", max_length=FLEX_PREFIX_MAX) if flex else "",
        run_seconds=run_seconds if flex and run_seconds is not None else 0,
    )


def _slurm_grants(site: _Site, controller: GcpSlurmController) -> None:
    """A controller that hosts monitoring gets its rights. The GPU nodes' accounts get none for Slurm: the
    munge key comes from the controller's key service."""
    spec = site.spec
    if spec.monitoring is not None and spec.monitoring.host == "controller":
        member = pulumi.Output.concat("serviceAccount:", controller.service_account_email)
        monitoring_access(site, member=member)


def _role_id(*parts: str, max_length: int) -> str:
    """A custom role id from name parts: letters, digits and underscores only."""
    return physical(*parts, max_length=max_length).replace("-", "_")


def _slurm_boot_scripts(
    site: _Site, archive: RenderedArchive, login_mounts: list[MountTarget]
) -> tuple[pulumi.Output[str], pulumi.Output[str]]:
    """The controller's boot (slurm_controller.yml with the rendered files) and the login nodes'."""
    spec, cluster, project = site.spec, site.cluster, site.project
    facts = cluster.input.catalog.slurm
    host_vars = controller_host_vars(
        spec, cluster.input.catalog, stack=cluster.stack, files_dir=files_dir(archive.sha256), project=project
    )
    controller = cluster.boot_script(
        name=CONTROLLER_ITEM,
        bucket_name=site.bucket.uploaded_name,
        mounts=[],
        playbook="slurm_controller.yml",
        playbook_vars=lambda _mounts: host_vars,
        healthcheck_vars=None,
        files=FilesArchive(archive.key, archive.sha256),
        follows=True,
    )
    login = cluster.boot_script(
        name=LOGIN_ITEM,
        bucket_name=site.bucket.uploaded_name,
        mounts=login_mounts,
        playbook="slurm_login.yml",
        playbook_vars=lambda resolved: {
            **client_vars(spec, facts, stack=cluster.stack, project=project),
            **storage_vars(spec.cloud, cluster.input.catalog, resolved),
        },
        healthcheck_vars=None,
        follows=True,
    )
    return controller, login
