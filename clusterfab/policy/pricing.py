"""What planned resources cost, priced by the same estimator as `clusterfab cost`.

A CrossGuard stack policy sees resources, not the blueprint. Rather than pricing resources a second
way, the resources that cost money are read back into the blueprint shape the estimator prices (node
groups, TPU slices, storage, with their capacity kinds and sizes) and handed to `estimate_cost`, so
SKUs, pricing models, stand-in prices, full-size sizing and the budget verdict are exactly those of
`clusterfab cost`. For the example blueprints the two estimates agree item for item (tested).

Read back:
- AWS: autoscaling groups (max size) with the launch template of the same component (instance type;
  spot / capacity-block market, capacity reservation), single instances, FSx for Lustre (capacity,
  deployment type, throughput per TiB).
- GCP: managed instance groups (target size, or the max of the autoscaler of the same component) with
  the instance template of the same component (machine type, provisioning model, reservation
  affinity), single instances, TPU VMs (accelerator type; slices of one component and shape form one
  multislice item), Managed Lustre and Filestore.
Anything else (networks, roles, buckets, budgets) is not priced, as in `clusterfab cost`.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from clusterfab.blueprint.models import CLUSTER_NAME_PATTERN, ITEM_NAME_PATTERN, Blueprint
from clusterfab.catalog import Catalog
from clusterfab.core.vocab import BLUEPRINT_TAG, COMPONENT_TAG, NODE_GROUP_TAG
from clusterfab.cost.estimate import CostEstimate, estimate_cost
from clusterfab.policy.resources import Resource, items, truthy

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
    reader = _Reader(resources, catalog)
    reader.read()
    cloud = "aws" if any(r.cloud == "aws" for r in resources) else "gcp"
    where = region or reader.region(cloud)
    if where is None:
        raise PricingError("cannot tell which region the resources are in: set `region` in the policy config")
    budget: dict[str, float] = {}
    if max_hourly_usd is not None:
        budget["max_hourly_usd"] = float(max_hourly_usd)
    if max_monthly_usd is not None:
        budget["max_monthly_usd"] = float(max_monthly_usd)
    shape: dict[str, Any] = {
        "version": 1,
        "name": reader.cluster_name(),
        "cloud": cloud,
        "region": where,
        "zone": reader.zone or f"{where}-a",
        "node_groups": reader.node_groups,
        "tpu_slices": reader.tpu_slices,
        "storage": reader.storage,
        "budget": budget or None,
    }
    try:
        blueprint = Blueprint.model_validate(shape)
    except ValidationError as exc:  # a value the reader let through that the blueprint rejects
        raise PricingError(
            f"the planned resources do not form a priceable cluster: {exc.errors()[0]['msg']}"
        ) from None
    return ResourceCost(
        estimate=estimate_cost(blueprint, catalog, today=today), skipped=tuple(reader.skipped)
    )


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


class _Reader:
    """Reads the priced items of a list of resources, in order."""

    def __init__(self, resources: Sequence[Resource], catalog: Catalog) -> None:
        self.resources = resources
        self.catalog = catalog
        self.node_groups: list[dict[str, Any]] = []
        self.tpu_slices: list[dict[str, Any]] = []
        self.storage: list[dict[str, Any]] = []
        self.skipped: list[str] = []
        self.zone: str | None = None
        self._names: set[str] = set()

    def read(self) -> None:
        tpus: dict[tuple[str | None, str, str], list[Resource]] = {}
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
            elif kind in {FSX_LUSTRE, GCP_LUSTRE, FILESTORE}:
                self._storage(resource)
            self._note_zone(resource)
        for (_, accelerator, capacity), slices in tpus.items():
            self._tpu(slices, accelerator, capacity)

    # --- where ------------------------------------------------------------------------------

    def _note_zone(self, resource: Resource) -> None:
        if self.zone is not None:
            return
        props = resource.props
        if resource.type == AWS_SUBNET:
            zone = props.get("availabilityZoneId") or props.get("availabilityZone")
        elif resource.type in {MIG, TPU_VM, GCP_INSTANCE}:
            zone = props.get("zone")
        elif resource.type in {GCP_LUSTRE, FILESTORE}:
            zone = props.get("location")
        else:
            zone = None
        if isinstance(zone, str) and self.catalog.region_of_zone(resource.cloud, zone):  # type: ignore[arg-type]
            self.zone = zone

    def region(self, cloud: str) -> str | None:
        if self.zone is not None:
            return self.catalog.region_of_zone(cloud, self.zone)  # type: ignore[arg-type]
        for resource in self.resources:
            region = resource.props.get("region")
            if isinstance(region, str) and region:
                return region
        return None

    def cluster_name(self) -> str:
        for resource in self.resources:
            name = resource.tags().get(BLUEPRINT_TAG)
            if name and _CLUSTER.match(name):
                return name
        return "planned"

    # --- items ------------------------------------------------------------------------------

    def _name(self, resource: Resource, prefix: str) -> str:
        """The item name: the clusterfab label or tag naming it, else one made from the resource name."""
        tags = resource.tags()
        candidates = [tags.get(NODE_GROUP_TAG)]
        component = tags.get(COMPONENT_TAG, "")
        candidates.append(component.removeprefix(prefix) if component.startswith(prefix) else None)
        base = next((c for c in candidates if c and _ITEM.match(c)), None)
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
        low, high = _int(asg.props.get("minSize")), _int(asg.props.get("maxSize"))
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
        size = _int(mig.props.get("targetSize"))
        low, high = size, size
        autoscaler = self._sibling(mig, AUTOSCALER, "target")
        if autoscaler is not None:
            policy = next(iter(items(autoscaler.props.get("autoscalingPolicy"))), {})
            low, high = _int(policy.get("minReplicas")), _int(policy.get("maxReplicas"))
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
        capacity = _aws_capacity(props) if instance.cloud == "aws" else _gcp_capacity(props)
        self._group(instance, machine, 1, 1, capacity)

    def _group(self, resource: Resource, machine: str, low: int, high: int, capacity: dict[str, Any]) -> None:
        if high < 1:
            return  # an empty group costs nothing
        group: dict[str, Any] = {
            "name": self._name(resource, "node-group-"),
            "machine_type": machine,
            "capacity": capacity,
        }
        if low == high:
            group["count"] = high
        else:
            group["autoscaling"] = {"min": max(0, min(low, high)), "max": high}
        self.node_groups.append(group)

    def _tpu(self, slices: list[Resource], accelerator: str, capacity: str) -> None:
        first = slices[0]
        found = self._tpu_shape(accelerator)
        if found is None:
            self.skipped.append(f"{first.name}: TPU accelerator {accelerator!r} is not in the catalog")
            return
        spec: dict[str, Any] = {"kind": capacity}
        self.tpu_slices.append(
            {
                "name": self._name(first, "tpu-"),
                "generation": found[0],
                "topology": found[1],
                "slices": len(slices),
                "capacity": spec,
            }
        )

    def _tpu_shape(self, accelerator: str) -> tuple[str, str] | None:
        """(generation, topology) of `v5p-128` (N counts cores or chips) or `V5P:4x4x4` (a config)."""
        generations = self.catalog.tpu_generations.values()
        if ":" in accelerator:
            kind, _, topology = accelerator.partition(":")
            for generation in generations:
                if generation.accelerator_config_type == kind and topology in generation.topologies:
                    return generation.name, topology
            return None
        prefix, _, number = accelerator.rpartition("-")
        count = _int(number)
        for generation in generations:
            if generation.type_prefix != prefix or count is None or count % generation.cores_per_chip:
                continue
            chips = count // generation.cores_per_chip
            for topology, shape in generation.topologies.items():
                if shape.chips == chips:
                    return generation.name, topology
        return None

    def _storage(self, resource: Resource) -> None:
        props = resource.props
        name = self._name(resource, "storage-")
        if resource.type == FSX_LUSTRE:
            capacity = _int(props.get("storageCapacity"))
            deployment = (
                "scratch" if str(props.get("deploymentType", "")).startswith("SCRATCH") else "persistent"
            )
            spec: dict[str, Any] = {
                "kind": "lustre",
                "name": name,
                "capacity_gib": capacity,
                "deployment": deployment,
            }
            throughput = _int(props.get("perUnitStorageThroughput"))
            if deployment == "persistent" and throughput:
                spec["throughput_mbps_per_tib"] = throughput
        elif resource.type == GCP_LUSTRE:
            capacity = _int(props.get("capacityGib"))
            spec = {"kind": "lustre", "name": name, "capacity_gib": capacity}
            throughput = _int(props.get("perUnitStorageThroughput"))
            if throughput:
                spec["throughput_mbps_per_tib"] = throughput
        else:
            share = next(iter(items(props.get("fileShares"))), {})
            capacity = _int(share.get("capacityGb"))
            spec = {"kind": "filestore", "name": name, "capacity_gib": capacity}
            if isinstance(props.get("tier"), str):
                spec["tier"] = props["tier"]
        if capacity is None or capacity <= 0:
            self.skipped.append(f"{resource.name}: no capacity")
            return
        self.storage.append(spec)


def _aws_capacity(props: Mapping[str, Any]) -> dict[str, Any]:
    market = next(iter(items(props.get("instanceMarketOptions"))), {}).get("marketType")
    reservation = next(iter(items(props.get("capacityReservationSpecification"))), {})
    target = next(iter(items(reservation.get("capacityReservationTarget"))), {})
    reservation_id = target.get("capacityReservationId")
    if market == "spot":
        return {"kind": "spot"}
    if market == "capacity-block":
        return {"kind": "capacity_block", "reservation": str(reservation_id or "unknown")}
    if reservation_id:
        return {"kind": "reservation", "reservation": str(reservation_id)}
    return {"kind": "on_demand"}


def _gcp_capacity(props: Mapping[str, Any]) -> dict[str, Any]:
    scheduling = next(iter(items(props.get("scheduling"))), {})
    model = str(scheduling.get("provisioningModel") or "").upper()
    if model == "SPOT" or truthy(scheduling.get("preemptible")):
        return {"kind": "spot"}
    if model == "FLEX_START":
        return {"kind": "flex_start"}
    affinity = next(iter(items(props.get("reservationAffinity"))), {})
    if affinity.get("type") == "SPECIFIC_RESERVATION":
        specific = next(iter(items(affinity.get("specificReservation"))), {})
        values = specific.get("values")
        name = values[0] if isinstance(values, list) and values else "unknown"
        return {"kind": "reservation", "reservation": str(name)}
    return {"kind": "on_demand"}


def _tpu_capacity(resource: Resource) -> str:
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
