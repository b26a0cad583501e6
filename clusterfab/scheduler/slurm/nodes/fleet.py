"""What the node programs need of a cloud: a `Fleet` (list, name, create, replace and delete the cluster's
instances, report a faulty host, follow queued capacity requests), the instances it lists, and the tags
(GCP: labels) by which an instance is the cluster's. One module per cloud implements it (`aws.py`,
`gcp.py`); `clouds.py` finds the one the settings name.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

NODE_TAG = "clusterfab-slurm-node"
"""The node name an instance holds (kept in step with clusterfab.core.vocab by a test)."""
GROUP_TAG = "clusterfab-node-group"
BLUEPRINT_TAG = "clusterfab-blueprint"
STACK_TAG = "clusterfab-stack"
ELASTIC_TAG = "clusterfab-slurm-elastic"
"""On an instance the resume program created (value `true`)."""


@dataclass(frozen=True, slots=True)
class Instance:
    """A running (or starting) instance of a node group."""

    id: str
    group: str
    address: str
    launched: dt.datetime
    name: str | None
    """Its node-name tag, if it has one."""
    elastic: bool = False
    """Created by the resume program (tagged `clusterfab-slurm-elastic=true`), not by the group."""
    reportable: bool = False
    """Its host may be reported faulty (GCE: a machine type and provisioning model the report takes)."""
    started: dt.datetime | None = None
    """When it last started, if that is not `launched` (GCE lastStartTimestamp: a VM restarted after its
    host's repair; EC2's LaunchTime is the last start already)."""
    intended: str | None = None
    """The node its name was asked for, where no one could name it at creation: a flex-start VM, which
    its MIG creates when capacity arrives, long after the resume program asked for it by name."""
    ends: dt.datetime | None = None
    """When the cloud deletes it whatever runs on it (a flex-start VM at the end of its run duration, an
    instance of a capacity block when EC2 begins terminating the block's instances)."""
    host: str | None = None
    """Its host name, where the machine claims its Slurm node itself (Azure's scale-set VMs): the node it
    holds is the one slurmctld knows by this NodeHostname, and `name` stays None."""

    @property
    def last_start(self) -> dt.datetime:
        return self.started or self.launched


@dataclass(frozen=True, slots=True)
class ElasticInstance:
    """An instance Slurm's resume program created that still exists (in any state but gone): what the
    stack's destroy hook deletes (clusterfab.scheduler.slurm.teardown)."""

    id: str
    """The EC2 instance id; on GCP, the VM's name."""
    group: str
    """Its node group (`clusterfab-node-group`; empty if it has none)."""
    managed: bool = False
    """Created by a flex-start MIG: it goes with its MIG (`FlexRequest`), never deleted on its own."""


@dataclass(frozen=True, slots=True)
class FlexRequest:
    """A flex-start MIG the resume program made for one job's nodes of a group, with its resize request."""

    mig: str
    group: str
    nodes: tuple[str, ...]
    """The nodes whose VMs its resize request names."""
    state: str
    """The resize request's state (ACCEPTED, CREATING, SUCCEEDED, FAILED, CANCELLED); empty if it has none
    (the resume program failed between the MIG and its request)."""
    error: str
    """The first error code of a FAILED request."""
    created: dt.datetime
    size: int
    """The MIG's target size: the VMs it holds or is creating."""

    @property
    def pending(self) -> bool:
        """Capacity not granted yet: no VM of it exists (flex-start creates them all at once)."""
        return self.state in {"ACCEPTED", "CREATING"}


class CloudError(Exception):
    """The cloud refused a request: `code` is its error code (InsufficientInstanceCapacity, ...)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code, self.message = code, message


class Fleet(Protocol):
    """The cluster's instances on one cloud, as the node sync and the power programs read and change them.
    Where machines claim their Slurm nodes themselves (`Instance.host`), `name` is never asked for.
    A cloud without queued capacity requests lists none and refuses to withdraw one; one whose hosts
    cannot be reported faulty lists no instance as `reportable` and refuses the report."""

    def instances(self) -> list[Instance]:
        """The node groups' live instances that have an address, static and elastic."""
        ...

    def name(self, instance_id: str, name: str) -> None:
        """Give the instance its node name (EC2: the tag, GCE: the metadata key `NODE_TAG`)."""
        ...

    def create(self, group: str, names: Sequence[str]) -> list[str]:
        """Elastic instances of the group's own template, one per node name, all or none; their ids."""
        ...

    def terminate(self, instance_ids: Sequence[str]) -> None:
        """Delete these instances (only the cluster's own)."""
        ...

    def recreate(self, group: str, instance_id: str) -> None:
        """Have the group replace this static instance with a new one."""
        ...

    def report_faulty(self, instance_id: str, behavior: str, description: str) -> None:
        """Report the instance's host faulty, with one fault reason."""
        ...

    def requests(self) -> list[FlexRequest]:
        """The capacity requests that wait, or waited, for this cluster's elastic nodes."""
        ...

    def withdraw(self, mig: str) -> None:
        """Delete a capacity request with whatever it created."""
        ...

    def keep_sizes(self) -> list[str]:
        """Bring each static group back to its size where the cloud does not (an Azure scale set's capacity
        drops with each instance deleted from it; an auto scaling group or a MIG keeps its own); what it
        changed, one line each."""
        ...
