"""Resolve a schema-valid blueprint against the catalog into a ClusterSpec, once.

Resolution never fails: what the catalog does not know is left out and listed in `unresolved`, and
values the semantic rules will reject (a missing reservation id) resolve to neutral ones, so that the
rules can run on the spec of any schema-valid blueprint and report everything in one pass.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from clusterfab.blueprint.models import (
    Blueprint,
    FilestoreSpec,
    LustreSpec,
    NodeGroupSpec,
    TpuSliceSpec,
)
from clusterfab.blueprint.overlay import environment_protected
from clusterfab.catalog import Catalog
from clusterfab.catalog.models import MachineType
from clusterfab.clouds import CloudProfile, profile
from clusterfab.core.vocab import Fabric, Placement
from clusterfab.spec.capacity import capacity_of
from clusterfab.spec.model import (
    Budget,
    ClusterSpec,
    FilestoreStorage,
    LocalScratch,
    LustreStorage,
    NodeGroup,
    SoftwareVersions,
    Storage,
    TpuSlice,
    Unresolved,
)
from clusterfab.spec.monitoring import resolve_monitoring
from clusterfab.spec.scheduler import host_monitoring, hosts_monitoring, resolve_scheduler, resolve_teams

RESERVED_KINDS = frozenset({"reservation", "capacity_block"})
"""Capacity kinds bought as a reservation of particular hosts."""
"""Environments whose stateful resources are protected unless the blueprint says otherwise."""


def resolve(blueprint: Blueprint, catalog: Catalog, environment: str | None) -> ClusterSpec:
    """The spec of `blueprint` (already merged with `environment`'s overlay, if any)."""
    cloud = profile(blueprint.cloud)
    protected = environment_protected(blueprint.environments, environment)
    unresolved: list[Unresolved] = []
    storage: list[Storage] = []
    for index, item in enumerate(blueprint.storage):
        resolved = _storage(item, index, catalog, cloud, protected)
        if resolved is None:
            unresolved.append(Unresolved(("storage", index), item.name))
        else:
            storage.append(resolved)
    names = tuple(s.name for s in storage)
    groups: list[NodeGroup] = []
    for index, group in enumerate(blueprint.node_groups):
        machine = cloud.machine_types(catalog).get(group.machine_type)
        if machine is None:
            unresolved.append(Unresolved(("node_groups", index), group.name))
        else:
            groups.append(
                _node_group(group, index, machine, catalog, cloud=cloud, storage=_attached(group, names))
            )
    slices: list[TpuSlice] = []
    for index, tpu in enumerate(blueprint.tpu_slices):
        resolved_tpu = _tpu_slice(tpu, index, catalog, _attached(tpu, names))
        if resolved_tpu is None:
            unresolved.append(Unresolved(("tpu_slices", index), tpu.name))
        else:
            slices.append(resolved_tpu)
    scheduler, known = resolve_scheduler(blueprint, catalog, groups)
    if not known:
        unresolved.append(Unresolved(("scheduler",), "scheduler"))
    # A scheduler's controller hosts the monitoring stack; without one, clusterfab adds a monitoring node.
    host = scheduler.kind if scheduler is not None and hosts_monitoring(scheduler.kind) else None
    monitoring, known = resolve_monitoring(blueprint, catalog, groups, controller_of=host)
    if not known:
        unresolved.append(Unresolved(("monitoring", "machine_type"), "monitoring"))
    if scheduler is not None and monitoring is not None and monitoring.host == "controller":
        scheduler = host_monitoring(scheduler, monitoring.disk_gib)
    return ClusterSpec(
        name=blueprint.name,
        cloud=blueprint.cloud,
        region=blueprint.region,
        zone=blueprint.zone,
        project=blueprint.project,
        labels=dict(blueprint.labels),
        environment=environment,
        protected=protected,
        cidr=blueprint.network.cidr,
        ssh_ingress_cidrs=tuple(blueprint.network.ssh_ingress_cidrs),
        node_groups=tuple(groups),
        tpu_slices=tuple(slices),
        storage=tuple(storage),
        software=software_of(blueprint, catalog),
        budget=_budget(blueprint),
        unresolved=tuple(unresolved),
        monitoring=monitoring,
        scheduler=scheduler,
        teams=resolve_teams(blueprint),
        bucket_kms_key=blueprint.bucket_kms_key,
    )


def software_of(blueprint: Blueprint, catalog: Catalog) -> SoftwareVersions:
    chosen, default = blueprint.software, catalog.recommended
    return SoftwareVersions(
        nvidia_driver=chosen.nvidia_driver or default.nvidia_driver,
        cuda=chosen.cuda or default.cuda,
        nccl=chosen.nccl or default.nccl,
    )


def _attached(item: NodeGroupSpec | TpuSliceSpec, storage: tuple[str, ...]) -> tuple[str, ...]:
    """The storage mounted on a node group or TPU slice (default: all), in blueprint order."""
    if item.attach is None:
        return storage
    wanted = set(item.attach)
    return tuple(name for name in storage if name in wanted)


def _fabric(group: NodeGroupSpec, machine: MachineType) -> Fabric | None:
    return None if group.fabric == "none" else machine.fabric


def _placement(group: NodeGroupSpec, size: int, fabric: Fabric | None, cloud: CloudProfile) -> Placement:
    """The blueprint's choice, else compact for multi-node fabric groups, except on reserved capacity
    the cloud already places (a new AWS placement group can leave part of a reservation unusable)."""
    if group.placement is not None:
        return group.placement
    if cloud.reserved_capacity_is_placed and group.capacity.kind in RESERVED_KINDS:
        return "none"
    return "compact" if size > 1 and fabric is not None else "none"


def _node_group(
    group: NodeGroupSpec,
    index: int,
    machine: MachineType,
    catalog: Catalog,
    *,
    cloud: CloudProfile,
    storage: tuple[str, ...],
) -> NodeGroup:
    scaling = group.autoscaling
    low, high = (scaling.min, scaling.max) if scaling else (group.count or 0, group.count or 0)
    fabric = _fabric(group, machine)
    image = catalog.default_image(machine.cloud, machine.cpu_architecture)
    return NodeGroup(
        index=index,
        name=group.name,
        machine=machine,
        min_size=low,
        max_size=high,
        autoscaled=scaling is not None,
        capacity=capacity_of(group.capacity, termination_lead=_termination_lead(catalog)),
        fabric=fabric,
        placement=_placement(group, high, fabric, cloud),
        placement_max_distance=group.placement_max_distance,
        boot_disk_gib=group.boot_disk_gib,
        image=group.image or image.image,
        root_device=image.root_device,
        root_volume_type=image.root_volume_type,
        storage=storage,
        local_scratch=LocalScratch(group.local_scratch.enabled, group.local_scratch.mount_point),
        kms_key=group.kms_key,
    )


def _termination_lead(catalog: Catalog) -> dt.timedelta:
    """How long before a capacity block's end EC2 begins terminating its instances."""
    return dt.timedelta(minutes=catalog.capacity_block_times.termination_lead_minutes)


def _tpu_slice(tpu: TpuSliceSpec, index: int, catalog: Catalog, storage: tuple[str, ...]) -> TpuSlice | None:
    generation = catalog.tpu_generations.get(tpu.generation)
    shape = generation.topologies.get(tpu.topology) if generation else None
    if generation is None or shape is None:
        return None
    return TpuSlice(
        index=index,
        name=tpu.name,
        generation=generation,
        topology=tpu.topology,
        shape=shape,
        accelerator_type=generation.accelerator_type(tpu.topology),
        runtime_version=tpu.runtime_version or generation.runtime_version,
        slices=tpu.slices,
        capacity=capacity_of(tpu.capacity, termination_lead=_termination_lead(catalog)),
        storage=storage,
    )


def _storage(
    item: LustreSpec | FilestoreSpec, index: int, catalog: Catalog, cloud: CloudProfile, protected: bool
) -> Storage | None:
    keep = item.protect if item.protect is not None else protected
    mount_point = item.mount_path
    if isinstance(item, FilestoreSpec):
        tier = catalog.storage_tier(cloud.name, "filestore", item.tier)
        if tier is None:
            return None
        return FilestoreStorage(
            index=index,
            name=item.name,
            tier=tier,
            capacity_gib=item.capacity_gib,
            share_name=item.share_name,
            mount_point=mount_point,
            protected=keep,
            kms_key=item.kms_key,
            root_squash=item.root_squash,
        )
    tier_name = cloud.lustre_tier(item.deployment, item.throughput_mbps_per_tib)
    tier = catalog.storage_tier(cloud.name, "lustre", tier_name) if tier_name else None
    throughput = item.throughput_mbps_per_tib
    if tier is None or (tier.throughputs and throughput not in tier.throughputs):
        return None
    return LustreStorage(
        index=index,
        name=item.name,
        tier=tier,
        capacity_gib=item.capacity_gib,
        throughput_mbps_per_tib=throughput,
        deployment=item.deployment,
        mount_point=mount_point,
        import_path=item.import_path,
        export_changes=item.export_changes,
        efa=item.efa,
        protected=keep,
        kms_key=item.kms_key,
    )


def _budget(blueprint: Blueprint) -> Budget | None:
    spec = blueprint.budget
    if spec is None:
        return None
    return Budget(
        max_hourly_usd=None if spec.max_hourly_usd is None else Decimal(str(spec.max_hourly_usd)),
        max_monthly_usd=None if spec.max_monthly_usd is None else Decimal(str(spec.max_monthly_usd)),
        alert_emails=tuple(spec.alert_emails),
    )
