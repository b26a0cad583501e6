"""What planned resources cost, priced by the same estimator as `clusterfab cost`.

A CrossGuard stack policy sees resources, not the blueprint, and must price what will really be
created (a team's own Pulumi program included). The resources that cost money are read into the cost
lines `clusterfab cost` makes from a ClusterSpec (sku, capacity kind, quantity) and priced by the same
`estimate_lines`, so SKUs, pricing models, stand-in prices, full-size sizing and the budget verdict are
exactly those of `clusterfab cost`. For the example blueprints the two estimates agree item for item
(tested).

Read back:
- AWS: autoscaling groups (max size) with the launch template of the same component (instance type;
  spot / capacity-block market, capacity reservation), single instances, FSx for Lustre (capacity,
  deployment type, throughput per TiB).
- GCP: managed instance groups (target size, or the max of the autoscaler of the same component) with
  the instance template of the same component (machine type, provisioning model, reservation
  affinity), single instances (the monitoring node as such), TPU VMs (accelerator type; slices of one
  component and shape form one
  multislice item), Managed Lustre and Filestore.
Anything else (networks, roles, buckets, budgets) is not priced, as in `clusterfab cost`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from clusterfab.blueprint.fields import ITEM_NAME_PATTERN
from clusterfab.blueprint.models import CLUSTER_NAME_PATTERN
from clusterfab.catalog import Catalog
from clusterfab.clouds import profile
from clusterfab.core.vocab import (
    BLUEPRINT_TAG,
    CLOUDS,
    COMPONENT_TAG,
    MAX_NODES_LABEL,
    NODE_GROUP_TAG,
    SLURM_ROLE_TAG,
    CapacityKind,
    Cloud,
)
from clusterfab.cost.estimate import (
    CONTROLLER_ITEM,
    LOGIN_ITEM,
    MONITORING_ITEM,
    CostEstimate,
    CostLine,
    ItemKind,
    estimate_lines,
    storage_sku,
)
from clusterfab.policy.resources import Resource, integer, items, truthy
from clusterfab.spec import Budget

ASG = "aws:autoscaling/group:Group"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
AWS_INSTANCE = "aws:ec2/instance:Instance"
FSX_LUSTRE = "aws:fsx/lustreFileSystem:LustreFileSystem"
AWS_SUBNET = "aws:ec2/subnet:Subnet"
MIG = "gcp:compute/instanceGroupManager:InstanceGroupManager"
INSTANCE_TEMPLATE = "gcp:compute/instanceTemplate:InstanceTemplate"
AUTOSCALER = "gcp:compute/autoscaler:Autoscaler"
GCP_INSTANCE = "gcp:compute/instance:Instance"
TPU_VM = "gcp:tpu/v2Vm:V2Vm"
TPU_QUEUED = "pulumi-python:dynamic/gcp-tpu:QueuedResource"
"""components.gcp._queued_resource: multislice capacity as one TPU v2 queued resource."""
GCP_LUSTRE = "gcp:lustre/instance:Instance"
FILESTORE = "gcp:filestore/instance:Instance"

_ITEM = re.compile(ITEM_NAME_PATTERN)
_CLUSTER = re.compile(CLUSTER_NAME_PATTERN)


class PricingError(ValueError):
    """The resources cannot be priced (no region to price them in)."""


@dataclass(frozen=True)
class ResourceCost:
    estimate: CostEstimate
    skipped: tuple[str, ...]
    """Resources that cost money but could not be read (their items are missing from the estimate)."""


def price_resources(
    resources: Sequence[Resource],
    catalog: Catalog,
    *,
    today: dt.date,
    region: str | None = None,
    max_hourly_usd: float | None = None,
    max_monthly_usd: float | None = None,
) -> ResourceCost:
    """Price the resources (at full size) and judge them against the given limits."""
    cloud = _cloud(resources)
    reader = _Reader(resources, catalog, cloud)
    reader.read()
    where = region or reader.region()
    if where is None:
        raise PricingError("cannot tell which region the resources are in: set `region` in the policy config")
    budget = Budget(
        max_hourly_usd=None if max_hourly_usd is None else Decimal(str(max_hourly_usd)),
        max_monthly_usd=None if max_monthly_usd is None else Decimal(str(max_monthly_usd)),
        alert_emails=(),
    )
    estimate = estimate_lines(
        reader.lines,
        catalog,
        name=reader.cluster_name(),
        cloud=cloud,
        region=where,
        budget=budget,
        today=today,
    )
    return ResourceCost(estimate=estimate, skipped=tuple(reader.skipped))


def _cloud(resources: Sequence[Resource]) -> Cloud:
    """The one cloud the resources live in (a cluster spans one)."""
    found = [c for c in CLOUDS if any(r.cloud == c for r in resources)]
    if len(found) > 1:
        raise PricingError(f"the resources span several clouds ({', '.join(found)}); price one cluster")
    return found[0] if found else CLOUDS[0]


class _Reader:
    """Reads the priced items of a list of resources, in order."""

    def __init__(self, resources: Sequence[Resource], catalog: Catalog, cloud: Cloud) -> None:
        self.resources = resources
        self.catalog = catalog
        self.cloud = profile(cloud)
        self.lines: list[CostLine] = []
        self.skipped: list[str] = []
        self.zone: str | None = None
        self._names: set[str] = set()

    def _path(self, list_name: str) -> tuple[str, int]:
        """Where the next line of a kind would sit in a blueprint (warnings find their item by it)."""
        return (list_name, sum(1 for line in self.lines if line.path[0] == list_name))

    def read(self) -> None:
        tpus: dict[tuple[str | None, str, CapacityKind], list[Resource]] = {}
        for resource in self.resources:
            kind = resource.type
            if kind == ASG:
                self._asg(resource)
            elif kind == MIG:
                self._mig(resource)
            elif kind in {AWS_INSTANCE, GCP_INSTANCE}:
                self._instance(resource)
            elif kind == TPU_VM:
                accelerator = str(resource.props.get("acceleratorType") or _accelerator_config(resource))
                tpus.setdefault((resource.parent, accelerator, _tpu_capacity(resource)), []).append(resource)
            elif kind == TPU_QUEUED:
                self._queued_tpu(resource)
            elif kind in {FSX_LUSTRE, GCP_LUSTRE, FILESTORE}:
                self._storage(resource)
            self._note_zone(resource)
        for (_, accelerator, capacity), slices in tpus.items():
            self._tpu(slices[0], accelerator, capacity, len(slices))

    # --- where ------------------------------------------------------------------------------

    def _note_zone(self, resource: Resource) -> None:
        if self.zone is not None:
            return
        props = resource.props
        if resource.type == AWS_SUBNET:
            zone = props.get("availabilityZoneId") or props.get("availabilityZone")
        elif resource.type in {MIG, TPU_VM, GCP_INSTANCE, TPU_QUEUED}:
            zone = props.get("zone")
        elif resource.type in {GCP_LUSTRE, FILESTORE}:
            zone = props.get("location")
        else:
            zone = None
        if isinstance(zone, str) and self.cloud.region_of_zone(self.catalog, zone):
            self.zone = zone

    def region(self) -> str | None:
        if self.zone is not None:
            return self.cloud.region_of_zone(self.catalog, self.zone)
        for resource in self.resources:
            region = resource.props.get("region")
            if isinstance(region, str) and region:
                return region
        return None

    def cluster_name(self) -> str:
        for resource in self.resources:
            name = resource.tags().get(BLUEPRINT_TAG)
            if name and _CLUSTER.fullmatch(name):
                return name
        return "planned"

    # --- items ------------------------------------------------------------------------------

    def _name(self, resource: Resource, prefix: str) -> str:
        """The item name: the clusterfab label or tag naming it, else one made from the resource name."""
        tags = resource.tags()
        candidates = [tags.get(NODE_GROUP_TAG)]
        component = tags.get(COMPONENT_TAG, "")
        candidates.append(component.removeprefix(prefix) if component.startswith(prefix) else None)
        base = next((c for c in candidates if c and _ITEM.fullmatch(c)), None)
        if base is None:
            cleaned = re.sub(r"[^a-z0-9-]+", "-", resource.name.lower()).strip("-")[:30].strip("-")
            base = cleaned if cleaned and cleaned[0].isalpha() else f"item-{cleaned}"[:30].strip("-")
        name, counter = base, 2
        while name in self._names:
            suffix = f"-{counter}"
            name, counter = base[: 30 - len(suffix)] + suffix, counter + 1
        self._names.add(name)
        return name

    def _sibling(self, resource: Resource, kind: str, prop: str) -> Resource | None:
        """The resource of type `kind` this one refers to: by dependency, else the one of its component."""
        wanted = set(resource.dependencies.get(prop, ()))
        for other in self.resources:
            if other.type == kind and other.urn in wanted:
                return other
        siblings = [r for r in self.resources if r.type == kind and r.parent == resource.parent]
        return siblings[0] if resource.parent is not None and len(siblings) == 1 else None

    def _asg(self, asg: Resource) -> None:
        template = self._sibling(asg, LAUNCH_TEMPLATE, "launchTemplate")
        low, high = integer(asg.props.get("minSize")), integer(asg.props.get("maxSize"))
        machine = template.props.get("instanceType") if template is not None else None
        if template is None or not isinstance(machine, str) or high is None:
            self.skipped.append(f"{asg.name}: no launch template with an instance type, or no max size")
            return
        self._group(asg, machine, low if low is not None else high, high, _aws_capacity(template.props))

    def _mig(self, mig: Resource) -> None:
        template = self._sibling(mig, INSTANCE_TEMPLATE, "versions")
        machine = template.props.get("machineType") if template is not None else None
        if template is None or not isinstance(machine, str):
            self.skipped.append(f"{mig.name}: no instance template with a machine type")
            return
        size = integer(mig.props.get("targetSize"))
        low, high = size, size
        autoscaler = self._sibling(mig, AUTOSCALER, "target")
        if autoscaler is not None:
            policy = next(iter(items(autoscaler.props.get("autoscalingPolicy"))), {})
            low, high = integer(policy.get("minReplicas")), integer(policy.get("maxReplicas"))
        elif (most := integer(template.tags().get(MAX_NODES_LABEL))) is not None:
            high = most  # a group resized by a scheduler: priced at its most, as `clusterfab cost` does
        if high is None:
            self.skipped.append(f"{mig.name}: no target size or autoscaler max")
            return
        self._group(mig, machine, low if low is not None else high, high, _gcp_capacity(template.props))

    def _instance(self, instance: Resource) -> None:
        props = instance.props
        machine = props.get("instanceType") or props.get("machineType")
        if not isinstance(machine, str):
            self.skipped.append(f"{instance.name}: no machine type")
            return
        capacity = _INSTANCE_CAPACITY[instance.type](props)
        if instance.tags().get(COMPONENT_TAG) == MONITORING_ITEM:
            self.lines.append(
                CostLine(MONITORING_ITEM, "monitoring", ("monitoring",), machine, capacity, 1, None, "hour")
            )
            return
        role = instance.tags().get(SLURM_ROLE_TAG)
        if role in ("controller", "login"):
            self._slurm_host(role, machine, capacity)
            return
        self._group(instance, machine, 1, 1, capacity)

    def _slurm_host(self, role: str, machine: str, capacity: CapacityKind) -> None:
        """The controller, or one more login node (`clusterfab cost` prices them as one line)."""
        kind_of: ItemKind = "controller" if role == "controller" else "login"
        name = CONTROLLER_ITEM if role == "controller" else LOGIN_ITEM
        for index, line in enumerate(self.lines):
            if line.name == name and line.sku == machine:
                self.lines[index] = dataclasses.replace(line, quantity=line.quantity + 1)
                return
        self.lines.append(CostLine(name, kind_of, ("scheduler", role), machine, capacity, 1, None, "hour"))

    def _group(self, resource: Resource, machine: str, low: int, high: int, capacity: CapacityKind) -> None:
        if high < 1:
            return  # an empty group costs nothing
        self.lines.append(
            CostLine(
                name=self._name(resource, "node-group-"),
                kind="node_group",
                path=self._path("node_groups"),
                sku=machine,
                capacity=capacity,
                quantity=high,
                min_quantity=None if low == high else max(0, min(low, high)),
                unit="hour",
            )
        )

    def _queued_tpu(self, resource: Resource) -> None:
        body = resource.props.get("body")
        body = body if isinstance(body, Mapping) else {}
        specs = items((body.get("tpu") or {}).get("nodeSpec"))
        spec: Mapping[str, Any] = specs[0] if specs else {}
        node: Mapping[str, Any] = spec["node"] if isinstance(spec.get("node"), Mapping) else {}
        count = integer((spec.get("multisliceParams") or {}).get("nodeCount")) or 1
        if not node.get("acceleratorType"):
            self.skipped.append(f"{resource.name}: a queued resource without an accelerator type")
            return
        reserved = truthy((node.get("schedulingConfig") or {}).get("reserved"))
        capacity: CapacityKind = "spot" if "spot" in body else "reservation" if reserved else "on_demand"
        self._tpu(resource, str(node["acceleratorType"]), capacity, count)

    def _tpu(self, first: Resource, accelerator: str, capacity: CapacityKind, slices: int) -> None:
        found = self._tpu_shape(accelerator)
        if found is None:
            self.skipped.append(f"{first.name}: TPU accelerator {accelerator!r} is not in the catalog")
            return
        generation, chips = found
        self.lines.append(
            CostLine(
                name=self._name(first, "tpu-"),
                kind="tpu_slice",
                path=self._path("tpu_slices"),
                sku=f"tpu-{generation}",
                capacity=capacity,
                quantity=chips * slices,
                min_quantity=None,
                unit="chip_hour",
            )
        )

    def _tpu_shape(self, accelerator: str) -> tuple[str, int] | None:
        """(generation, chips per slice) of `v5p-128` (N counts cores or chips) or `V5P:4x4x4`."""
        generations = self.catalog.tpu_generations.values()
        if ":" in accelerator:
            kind, _, topology = accelerator.partition(":")
            for generation in generations:
                if generation.accelerator_config_type == kind and topology in generation.topologies:
                    return generation.name, generation.topologies[topology].chips
            return None
        prefix, _, number = accelerator.rpartition("-")
        count = integer(number)
        for generation in generations:
            if generation.type_prefix != prefix or count is None or count % generation.cores_per_chip:
                continue
            chips = count // generation.cores_per_chip
            if any(shape.chips == chips for shape in generation.topologies.values()):
                return generation.name, chips
        return None

    def _storage(self, resource: Resource) -> None:
        props = resource.props
        if resource.type == FSX_LUSTRE:
            kind, tier_name = "lustre", str(props.get("deploymentType", ""))
            capacity = integer(props.get("storageCapacity"))
            throughput = integer(props.get("perUnitStorageThroughput"))
        elif resource.type == GCP_LUSTRE:
            throughput = integer(props.get("perUnitStorageThroughput"))
            kind, tier_name = "lustre", str(throughput)
            capacity = integer(props.get("capacityGib"))
        else:
            share = next(iter(items(props.get("fileShares"))), {})
            kind, tier_name = "filestore", str(props.get("tier", ""))
            capacity, throughput = integer(share.get("capacityGb")), None
        tier = self.catalog.storage_tier(self.cloud.name, kind, tier_name)
        if capacity is None or capacity <= 0 or tier is None:
            self.skipped.append(f"{resource.name}: no capacity, or a {kind} tier the catalog lacks")
            return
        self.lines.append(
            CostLine(
                name=self._name(resource, "storage-"),
                kind="storage",
                path=self._path("storage"),
                sku=storage_sku(tier, throughput),
                capacity=None,
                quantity=capacity,
                min_quantity=None,
                unit="gib_month",
            )
        )


def _aws_capacity(props: Mapping[str, Any]) -> CapacityKind:
    market = next(iter(items(props.get("instanceMarketOptions"))), {}).get("marketType")
    reservation = next(iter(items(props.get("capacityReservationSpecification"))), {})
    target = next(iter(items(reservation.get("capacityReservationTarget"))), {})
    if market == "spot":
        return "spot"
    if market == "capacity-block":
        return "capacity_block"
    if target.get("capacityReservationId"):
        return "reservation"
    return "on_demand"


def _gcp_capacity(props: Mapping[str, Any]) -> CapacityKind:
    scheduling = next(iter(items(props.get("scheduling"))), {})
    model = str(scheduling.get("provisioningModel") or "").upper()
    if model == "SPOT" or truthy(scheduling.get("preemptible")):
        return "spot"
    if model == "FLEX_START":
        return "flex_start"
    affinity = next(iter(items(props.get("reservationAffinity"))), {})
    if affinity.get("type") == "SPECIFIC_RESERVATION":
        return "reservation"
    return "on_demand"


_INSTANCE_CAPACITY = {AWS_INSTANCE: _aws_capacity, GCP_INSTANCE: _gcp_capacity}
"""How a single instance of each type says how it is bought."""


def _tpu_capacity(resource: Resource) -> CapacityKind:
    scheduling = next(iter(items(resource.props.get("schedulingConfig"))), {})
    if truthy(scheduling.get("spot")) or truthy(scheduling.get("preemptible")):
        return "spot"
    if truthy(scheduling.get("reserved")):
        return "reservation"
    return "on_demand"


def _accelerator_config(resource: Resource) -> str:
    """`<type>:<topology>` from an acceleratorConfig (the other way to ask for a TPU shape)."""
    config = next(iter(items(resource.props.get("acceleratorConfig"))), {})
    return f"{config.get('type', '')}:{config.get('topology', '')}"
