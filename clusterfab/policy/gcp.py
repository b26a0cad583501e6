"""How the budget policy reads GCP resources: the types that cost money and what each says.

Managed instance groups (target size, or the max of the autoscaler of the same component) with the
instance template of the same component (machine type, provisioning model, reservation affinity),
single instances (the monitoring node as such), TPU VMs (accelerator type; slices of one component and
shape form one multislice item) and queued resources, Managed Lustre and Filestore, GKE clusters (the
management fee) and node pools (GPU, TPU and system pools).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clusterfab.clouds.gcp.kubernetes import tpu_generation
from clusterfab.clouds.gcp.profile import INSTANCE_GROUP_MANAGER
from clusterfab.core.vocab import COMPONENT_TAG, MAX_NODES_LABEL, CapacityKind
from clusterfab.policy.pricing import CloudPricing, Reader
from clusterfab.policy.resources import Resource, integer, items, truthy
from clusterfab.scheduler.kubernetes.costs import (
    SYSTEM_NODES_ITEM,
    control_plane_line,
    fee_sku,
    system_nodes_line,
)

MIG = INSTANCE_GROUP_MANAGER
INSTANCE_TEMPLATE = "gcp:compute/instanceTemplate:InstanceTemplate"
AUTOSCALER = "gcp:compute/autoscaler:Autoscaler"
INSTANCE = "gcp:compute/instance:Instance"
TPU_VM = "gcp:tpu/v2Vm:V2Vm"
TPU_QUEUED = "pulumi-python:dynamic/gcp-tpu:QueuedResource"
"""components.gcp._queued_resource: multislice capacity as one TPU v2 queued resource."""
LUSTRE = "gcp:lustre/instance:Instance"
GKE_CLUSTER = "gcp:container/cluster:Cluster"
GKE_NODE_POOL = "gcp:container/nodePool:NodePool"
FILESTORE = "gcp:filestore/instance:Instance"


def _mig(reader: Reader, mig: Resource) -> None:
    template = reader.sibling(mig, INSTANCE_TEMPLATE, "versions")
    machine = template.props.get("machineType") if template is not None else None
    if template is None or not isinstance(machine, str):
        reader.skip(f"{mig.name}: no instance template with a machine type")
        return
    size = integer(mig.props.get("targetSize"))
    low, high = size, size
    autoscaler = reader.sibling(mig, AUTOSCALER, "target")
    if autoscaler is not None:
        policy = next(iter(items(autoscaler.props.get("autoscalingPolicy"))), {})
        low, high = integer(policy.get("minReplicas")), integer(policy.get("maxReplicas"))
    elif (most := integer(template.tags().get(MAX_NODES_LABEL))) is not None:
        high = most  # a group resized by a scheduler: priced at its most, as `clusterfab cost` does
    if high is None:
        reader.skip(f"{mig.name}: no target size or autoscaler max")
        return
    reader.group(mig, machine, low if low is not None else high, high, _capacity(template.props))


def _gke_cluster(reader: Reader, cluster: Resource) -> None:
    """The cluster management fee per cluster hour."""
    version = cluster.props.get("minMasterVersion")
    sku = fee_sku("gcp", version, reader.today) if isinstance(version, str) else None
    if sku is None:
        reader.skip(f"{cluster.name}: no Kubernetes version")
        return
    reader.lines.append(control_plane_line(sku))


def _gke_node_pool(reader: Reader, pool: Resource) -> None:
    """A GPU node pool (node count per zone, or its autoscaling limits), a TPU slice's pool (its topology),
    or the system pool."""
    config = next(iter(items(pool.props.get("nodeConfig"))), {})
    machine = config.get("machineType")
    if not isinstance(machine, str):
        reader.skip(f"{pool.name}: no machine type")
        return
    capacity = _pool_capacity(config, pool.props)
    labels = config.get("resourceLabels")
    component = labels.get(COMPONENT_TAG) if isinstance(labels, Mapping) else None
    topology = next(iter(items(pool.props.get("placementPolicy"))), {}).get("tpuTopology")
    if topology:
        generation = reader.catalog.tpu_generations.get(tpu_generation(machine) or "")
        kind = generation.accelerator_config_type if generation is not None else machine
        reader.add_slice(pool, f"{kind}:{topology}", capacity, group=component)
        return
    zones = len(items(pool.props.get("nodeLocations"))) or 1
    scaling = next(iter(items(pool.props.get("autoscaling"))), {})
    count = integer(pool.props.get("nodeCount"))
    low = integer(scaling.get("totalMinNodeCount")) if scaling else count
    high = integer(scaling.get("totalMaxNodeCount")) if scaling else count
    if not scaling and count is not None:
        low = high = count * zones
    if high is None:
        reader.skip(f"{pool.name}: no node count or autoscaling limits")
        return
    if component == SYSTEM_NODES_ITEM:
        reader.lines.append(system_nodes_line(machine, high))
        return
    reader.group(pool, machine, low if low is not None else high, high, capacity)


def _pool_capacity(config: Mapping[str, Any], props: Mapping[str, Any]) -> CapacityKind:
    """How a node pool's nodes are bought: spot, queued provisioning (flex-start), a reservation."""
    if truthy(config.get("spot")) or truthy(config.get("preemptible")):
        return "spot"
    if truthy(next(iter(items(props.get("queuedProvisioning"))), {}).get("enabled")):
        return "flex_start"
    affinity = next(iter(items(config.get("reservationAffinity"))), {})
    if affinity.get("consumeReservationType") == "SPECIFIC_RESERVATION":
        return "reservation"
    return "on_demand"


def _instance(reader: Reader, instance: Resource) -> None:
    reader.instance(instance, instance.props.get("machineType"), _capacity(instance.props))


def _tpu_vm(reader: Reader, resource: Resource) -> None:
    accelerator = str(resource.props.get("acceleratorType") or _accelerator_config(resource))
    reader.add_slice(resource, accelerator, _tpu_capacity(resource))


def _queued_tpu(reader: Reader, resource: Resource) -> None:
    body = resource.props.get("body")
    body = body if isinstance(body, Mapping) else {}
    specs = items((body.get("tpu") or {}).get("nodeSpec"))
    spec: Mapping[str, Any] = specs[0] if specs else {}
    node: Mapping[str, Any] = spec["node"] if isinstance(spec.get("node"), Mapping) else {}
    count = integer((spec.get("multisliceParams") or {}).get("nodeCount")) or 1
    if not node.get("acceleratorType"):
        reader.skip(f"{resource.name}: a queued resource without an accelerator type")
        return
    reserved = truthy((node.get("schedulingConfig") or {}).get("reserved"))
    capacity: CapacityKind = "spot" if "spot" in body else "reservation" if reserved else "on_demand"
    reader.tpu(resource, str(node["acceleratorType"]), capacity, count)


def _lustre(reader: Reader, resource: Resource) -> None:
    throughput = integer(resource.props.get("perUnitStorageThroughput"))
    capacity = integer(resource.props.get("capacityGib"))
    reader.storage(resource, "lustre", str(throughput), capacity, throughput)


def _filestore(reader: Reader, resource: Resource) -> None:
    share = next(iter(items(resource.props.get("fileShares"))), {})
    tier = str(resource.props.get("tier", ""))
    reader.storage(resource, "filestore", tier, integer(share.get("capacityGb")), None)


def _capacity(props: Mapping[str, Any]) -> CapacityKind:
    """How an instance template or an instance is bought."""
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


def _zone(props: Mapping[str, Any]) -> Any:
    return props.get("zone")


def _location(props: Mapping[str, Any]) -> Any:
    return props.get("location")


PRICING = CloudPricing(
    readers={
        MIG: _mig,
        INSTANCE: _instance,
        TPU_VM: _tpu_vm,
        TPU_QUEUED: _queued_tpu,
        LUSTRE: _lustre,
        FILESTORE: _filestore,
        GKE_CLUSTER: _gke_cluster,
        GKE_NODE_POOL: _gke_node_pool,
    },
    zones={
        MIG: _zone,
        TPU_VM: _zone,
        INSTANCE: _zone,
        TPU_QUEUED: _zone,
        LUSTRE: _location,
        FILESTORE: _location,
    },
)
