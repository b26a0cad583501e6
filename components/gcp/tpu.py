"""TPU slices: one TPU VM resource per slice, `slices` identical slices for multislice training.

The accelerator type names the slice shape (`v5p-128` for a 4x4x4 v5p slice: N counts TensorCores;
`v6e-256` for 16x16: N counts chips). Slices join over the data-centre network, so they sit on the
system VPC, without external IPs; each VM carries its slice index and the slice count as labels, which
is what multislice launchers and the inventory group hosts by.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import pulumi
import pulumi_gcp as gcp

from clusterfab.core import vocab as tagging
from components._naming import child
from components.gcp.identity import CLOUD_PLATFORM_SCOPE, node_service_account

TYPE = "clusterfab:compute:GcpTpuSlices"


@dataclass(frozen=True, kw_only=True)
class GcpTpuSlicesArgs:
    """Inputs of GcpTpuSlices."""

    node_group: str
    """The slice group's name: the `clusterfab-node-group` label of its VMs."""
    project: str
    zone: str
    accelerator_type: str
    runtime_version: str
    service_account_id: str
    network_id: pulumi.Input[str]
    subnetwork_id: pulumi.Input[str]
    bucket_name: pulumi.Input[str]
    """The cluster bucket the hosts may read."""
    slices: int = 1
    capacity: Literal["on_demand", "spot", "reservation"] = "on_demand"
    """reservation consumes the project's TPU reservation in the zone (the API takes no name)."""
    startup_script: pulumi.Input[str] = ""
    """What the TPU hosts run at every boot, as the startup-script."""
    description: str = ""
    """What the slices are, in their descriptions (e.g. `cluster/slice`); default the name."""
    service_account_description: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)


class GcpTpuSlices(pulumi.ComponentResource):
    """A service account and one TPU VM per slice (`<cluster>-<slice>-<i>`)."""

    node_names: list[pulumi.Output[str]]
    """The TPU VM resources, slice 0 first."""
    service_account_email: pulumi.Output[str]
    """The TPU VMs' service account."""

    def __init__(self, name: str, args: GcpTpuSlicesArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, None, opts)
        own = pulumi.ResourceOptions(parent=self)
        what = args.description or name
        sa = node_service_account(
            self,
            name,
            project=args.project,
            account=args.service_account_id,
            description=args.service_account_description or f"clusterfab TPU VMs of {what}",
            bucket_name=args.bucket_name,
        )
        script = args.startup_script
        scheduling = None
        if args.capacity == "spot":
            scheduling = gcp.tpu.V2VmSchedulingConfigArgs(spot=True)
        elif args.capacity == "reservation":
            # The TPU API consumes the zone's TPU reservation for the project; it takes no name.
            scheduling = gcp.tpu.V2VmSchedulingConfigArgs(reserved=True)

        self.node_names = []
        for index in range(args.slices):
            node = gcp.tpu.V2Vm(
                child(name, str(index)),
                project=args.project,
                zone=args.zone,
                accelerator_type=args.accelerator_type,
                runtime_version=args.runtime_version,
                description=f"clusterfab {what} slice {index} of {args.slices}",
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
                    tagging.NODE_GROUP_TAG: tagging.label_value(args.node_group),
                    tagging.SLICE_INDEX_LABEL: str(index),
                    tagging.SLICE_COUNT_LABEL: str(args.slices),
                },
                opts=own,
            )
            self.node_names.append(node.name)
        self.service_account_email = sa.email
        self.register_outputs({"node_names": self.node_names, "service_account_email": sa.email})
