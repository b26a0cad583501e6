"""TPU slices: a TPU VM for one slice; for multislice training, `slices` identical slices in one
queued resource.

The accelerator type names the slice shape (`v5p-128` for a 4x4x4 v5p slice: N counts TensorCores;
`v6e-256` for 16x16: N counts chips). Slices join over the data-centre network, so they sit on the
system VPC, without external IPs; each VM carries its slice index and the slice count as labels, which
is what multislice launchers and the inventory group hosts by.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import pulumi
import pulumi_gcp as gcp

from clusterfab.core import vocab as tagging
from clusterfab.core.naming import physical
from components._naming import child, gcp_name
from components.gcp._queued_resource import QueuedResourceRequest, TpuQueuedResource, request_body
from components.gcp.identity import CLOUD_PLATFORM_SCOPE, node_service_account

TYPE = "clusterfab:compute:GcpTpuSlices"
QUEUED_RESOURCE_ID_MAX = 63


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
    """reservation: a single-slice TPU VM consumes the project's TPU reservation in the zone (that API
    takes no name); a multislice queued resource names `reservation`."""
    reservation: str | None = None
    startup_script: pulumi.Input[str] = ""
    """What the TPU hosts run at every boot, as the startup-script."""
    boot_object: tuple[str, pulumi.Input[str]] | None = None
    """(key, content): the hosts' boot script, kept in the bucket for a `startup_script` that fetches it
    at boot. A queued resource is recreated by any change of its request, so what changes with the stack
    (a file system's address) lives in the object, which is written before the slices are asked for."""
    node_prefix: str = ""
    """Multislice: the queued resource's id and its slices' name prefix (`<prefix>-<i>`), unique in the
    project and zone; default derived from the component's name."""
    description: str = ""
    """What the slices are, in their descriptions (e.g. `cluster/slice`); default the name."""
    service_account_description: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)


def _node_name(prefix: str, index: int) -> Callable[[str], str]:
    """The name the queued resource gives slice `index` (known once the queued resource exists)."""
    return lambda _: f"{prefix}-{index}"


class GcpTpuSlices(pulumi.ComponentResource):
    """A service account and the slices: one TPU VM for a single slice, one queued resource holding
    every slice for multislice (Google provisions and repairs multislice capacity as a unit)."""

    node_names: list[pulumi.Output[str]]
    """The TPU nodes, slice 0 first."""
    service_account_email: pulumi.Output[str]
    """The TPU VMs' service account."""

    def __init__(self, name: str, args: GcpTpuSlicesArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(TYPE, name, None, opts)
        self._name, self._args = name, args
        self._what = args.description or name
        sa = node_service_account(
            self,
            name,
            project=args.project,
            account=args.service_account_id,
            description=args.service_account_description or f"clusterfab TPU VMs of {self._what}",
            bucket_name=args.bucket_name,
        )
        after: list[pulumi.Resource] = []
        if args.boot_object is not None:
            key, content = args.boot_object
            after.append(
                gcp.storage.BucketObject(
                    child(name, "boot"),
                    bucket=args.bucket_name,
                    name=key,
                    # An asset, not `content`, which the provider keeps secret: a plan shows the script.
                    source=pulumi.Output.from_input(content).apply(pulumi.StringAsset),
                    content_type="text/x-shellscript",
                    opts=pulumi.ResourceOptions(parent=self),
                )
            )
        self._after = after
        self.node_names = self._queued(sa) if args.slices > 1 else [self._vm(sa)]
        self.service_account_email = sa.email
        self.register_outputs({"node_names": self.node_names, "service_account_email": sa.email})

    def _labels(self) -> dict[str, str]:
        args = self._args
        return {
            **args.labels,
            tagging.NODE_GROUP_TAG: tagging.label_value(args.node_group),
            tagging.SLICE_COUNT_LABEL: str(args.slices),
        }

    def _vm(self, sa: gcp.serviceaccount.Account) -> pulumi.Output[str]:
        args = self._args
        scheduling = None
        if args.capacity == "spot":
            scheduling = gcp.tpu.V2VmSchedulingConfigArgs(spot=True)
        elif args.capacity == "reservation":
            # The TPU API consumes the zone's TPU reservation for the project; it takes no name.
            scheduling = gcp.tpu.V2VmSchedulingConfigArgs(reserved=True)
        node = gcp.tpu.V2Vm(
            child(self._name, "0"),
            name=gcp_name(child(self._name, "0")),
            project=args.project,
            zone=args.zone,
            accelerator_type=args.accelerator_type,
            runtime_version=args.runtime_version,
            description=f"clusterfab {self._what} slice 0 of 1",
            network_config=gcp.tpu.V2VmNetworkConfigArgs(
                network=args.network_id,
                subnetwork=args.subnetwork_id,
                enable_external_ips=False,
                can_ip_forward=False,
            ),
            scheduling_config=scheduling,
            service_account=gcp.tpu.V2VmServiceAccountArgs(email=sa.email, scopes=[CLOUD_PLATFORM_SCOPE]),
            metadata={"startup-script": args.startup_script, "enable-oslogin": "TRUE"},
            labels={**self._labels(), tagging.SLICE_INDEX_LABEL: "0"},
            opts=pulumi.ResourceOptions(parent=self, depends_on=self._after),
        )
        return node.name

    def _queued(self, sa: gcp.serviceaccount.Account) -> list[pulumi.Output[str]]:
        args = self._args
        prefix = args.node_prefix or physical(self._name, max_length=QUEUED_RESOURCE_ID_MAX - 4)

        def body(values: list[Any]) -> dict[str, Any]:
            network, subnetwork, email, script = values
            return request_body(
                QueuedResourceRequest(
                    project=args.project,
                    zone=args.zone,
                    queued_resource_id=prefix,
                    node_prefix=prefix,
                    node_count=args.slices,
                    accelerator_type=args.accelerator_type,
                    runtime_version=args.runtime_version,
                    network=network,
                    subnetwork=subnetwork,
                    service_account=email,
                    scopes=[CLOUD_PLATFORM_SCOPE],
                    tier=args.capacity,
                    reservation=args.reservation,
                    description=f"clusterfab {self._what}: {args.slices} slices",
                    metadata={"startup-script": script, "enable-oslogin": "TRUE"},
                    labels=self._labels(),
                )
            )

        inputs = pulumi.Output.all(args.network_id, args.subnetwork_id, sa.email, args.startup_script)
        queued = TpuQueuedResource(
            child(self._name, "slices"),
            QueuedResourceRequest(
                project=args.project,
                zone=args.zone,
                queued_resource_id=prefix,
                node_prefix=prefix,
                node_count=args.slices,
                accelerator_type=args.accelerator_type,
                runtime_version=args.runtime_version,
                network="",
                subnetwork="",
                service_account="",
                scopes=(),
            ),
            inputs.apply(body),
            pulumi.ResourceOptions(parent=self, depends_on=self._after),
        )
        return [queued.id.apply(_node_name(prefix, i)) for i in range(args.slices)]
