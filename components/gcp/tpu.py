"""TPU slices: one TPU VM resource per slice, `slices` identical slices for multislice training.

The accelerator type name comes from the catalog (`v5p-128` for a 4x4x4 v5p slice: N counts
TensorCores; `v6e-256` for 16x16: N counts chips). Slices join over the data-centre network, so they
sit on the system VPC, without external IPs; each VM carries its slice index and the slice count as
labels, which is what multislice launchers and the inventory group hosts by.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import pulumi
import pulumi_gcp as gcp

from clusterfab.blueprint.models import TpuSliceSpec
from clusterfab.catalog import Catalog
from clusterfab.core import vocab as tagging
from components._naming import child
from components.gcp import GcpPlanError
from components.gcp.identity import CLOUD_PLATFORM_SCOPE, account_id, node_service_account

TYPE = "clusterfab:compute:GcpTpuSlices"


@dataclass(frozen=True)
class TpuPlan:
    """Pure decisions for one group of identical slices."""

    name: str
    generation: str
    topology: str
    accelerator_type: str
    runtime_version: str
    slices: int
    hosts_per_slice: int
    capacity: Literal["on_demand", "spot", "reservation"]


def plan_tpu(spec: TpuSliceSpec, catalog: Catalog) -> TpuPlan:
    generation = catalog.tpu_generations[spec.generation]
    kind = spec.capacity.kind
    if kind not in {"on_demand", "spot", "reservation"}:
        raise GcpPlanError(f"TPU slice {spec.name}: TPU VMs are not sold as {kind}")
    capacity: Literal["on_demand", "spot", "reservation"] = (
        "spot" if kind == "spot" else "reservation" if kind == "reservation" else "on_demand"
    )
    return TpuPlan(
        name=spec.name,
        generation=generation.name,
        topology=spec.topology,
        accelerator_type=generation.accelerator_type(spec.topology),
        runtime_version=spec.runtime_version or generation.runtime_version,
        slices=spec.slices,
        hosts_per_slice=generation.topologies[spec.topology].hosts,
        capacity=capacity,
    )


@dataclass(frozen=True)
class GcpTpuSlicesArgs:
    plan: TpuPlan
    cluster: str
    stack: str
    project: str
    zone: str
    network_id: pulumi.Input[str]
    subnetwork_id: pulumi.Input[str]
    bucket_name: pulumi.Input[str]
    startup_script: pulumi.Input[str] = ""
    """What the TPU hosts run at every boot (clusterfab.bootstrap renders it), as the startup-script."""
    labels: Mapping[str, str] = field(default_factory=dict)


class GcpTpuSlices(pulumi.ComponentResource):
    """A service account and one TPU VM per slice (`<cluster>-<slice>-<i>`)."""

    node_names: list[pulumi.Output[str]]
    """The TPU VM resources, slice 0 first."""
    service_account_email: pulumi.Output[str]
    """The TPU VMs' service account."""

    def __init__(self, name: str, args: GcpTpuSlicesArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, None, opts)
        plan = args.plan
        own = pulumi.ResourceOptions(parent=self)
        sa = node_service_account(
            self,
            name,
            project=args.project,
            account=account_id(args.cluster, args.stack, plan.name),
            description=f"clusterfab TPU VMs of {args.cluster}/{plan.name} ({args.stack})",
            bucket_name=args.bucket_name,
        )
        script = args.startup_script
        scheduling = None
        if plan.capacity == "spot":
            scheduling = gcp.tpu.V2VmSchedulingConfigArgs(spot=True)
        elif plan.capacity == "reservation":
            # The TPU API consumes the zone's TPU reservation for the project; it takes no name.
            scheduling = gcp.tpu.V2VmSchedulingConfigArgs(reserved=True)

        self.node_names = []
        for index in range(plan.slices):
            node = gcp.tpu.V2Vm(
                child(name, str(index)),
                project=args.project,
                zone=args.zone,
                accelerator_type=plan.accelerator_type,
                runtime_version=plan.runtime_version,
                description=f"clusterfab {args.cluster}/{plan.name} slice {index} of {plan.slices}",
                network_config=gcp.tpu.V2VmNetworkConfigArgs(
                    network=args.network_id,
                    subnetwork=args.subnetwork_id,
                    enable_external_ips=False,
                    can_ip_forward=False,
                ),
                scheduling_config=scheduling,
                service_account=gcp.tpu.V2VmServiceAccountArgs(email=sa.email, scopes=[CLOUD_PLATFORM_SCOPE]),
                metadata={"startup-script": script, "enable-oslogin": "TRUE"},
                labels={
                    **args.labels,
                    tagging.NODE_GROUP_TAG: tagging.label_value(plan.name),
                    tagging.SLICE_INDEX_LABEL: str(index),
                    tagging.SLICE_COUNT_LABEL: str(plan.slices),
                },
                opts=own,
            )
            self.node_names.append(node.name)
        self.service_account_email = sa.email
        self.register_outputs({"node_names": self.node_names, "service_account_email": sa.email})
