"""The stack outputs: what the program exports and what push mode, health and promotion read back.

The program (`stacks/compose.py`) exports exactly these fields; `read_outputs` turns what a real stack
(or an offline plan) returns into these models, so a stack updated by an older clusterfab fails with
one clear message instead of a KeyError deep in the inventory code. A test plans every example and
reads its outputs back through these models.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError

from clusterfab.core.errors import UsageError
from clusterfab.core.plugins import load_scheduler, schedulers
from clusterfab.core.vocab import CapacityKind, Cloud, Fabric, MountFsType, Placement


class _Output(BaseModel):
    # Extra keys are accepted: a stack updated by a newer clusterfab may export more.
    model_config = ConfigDict(extra="ignore", frozen=True)


class BlueprintOutput(_Output):
    name: str
    file: str
    digest: str
    """sha256 of the blueprint file the stack was last updated from."""
    bundle_sha256: str
    """sha256 of the playbook bundle its nodes boot from (`bundles/<sha256>.tar.gz` in the bucket)."""
    environment: str | None
    catalog_version: str
    cloud: Cloud
    region: str
    zone: str
    project: str | None = None
    """GCP: the project every resource lives in."""


class NodeGroupOutput(_Output):
    machine_type: str
    min_size: int
    max_size: int
    capacity: CapacityKind
    placement: Placement
    fabric: Fabric | None
    group: str
    """The cloud's instance group: auto scaling group (AWS) or managed instance group (GCP)."""
    template: str
    """What the group's nodes boot from: launch template id (AWS), instance template link (GCP)."""
    identity: str
    """The nodes' cloud identity: instance role ARN (AWS), service account e-mail (GCP)."""
    interfaces: int
    """Network interfaces per node."""
    fabric_interfaces: int
    """Of those, the ones on the fabric (EFA / GPU NICs)."""


class TpuSliceOutput(_Output):
    nodes: list[str]
    accelerator_type: str
    topology: str
    runtime_version: str
    slices: int
    hosts_per_slice: int
    capacity: CapacityKind
    identity: str


class StorageOutput(_Output):
    fs_type: MountFsType
    id: str
    """The file system (FSx id) or instance (GCP) name."""
    source: str
    """What `mount` takes: `<nid>@tcp:/<fsname>` for Lustre, `<ip>:/<share>` for NFS."""
    mount_point: str
    options: str


class MonitoringOutput(_Output):
    """Where Grafana runs and how `clusterfab dashboard` reaches it (SSM port forwarding / SSH over IAP)."""

    host: str
    """What the tunnel targets: the instance id (AWS) or the instance name (GCP)."""
    grafana_port: int
    retention_days: int


class SchedulerOutput(_Output):
    """The scheduler's controller and login nodes (what `aws ssm start-session --target` / `gcloud compute
    ssh --tunnel-through-iap` take); its plugin's model (`SchedulerPlugin.outputs`) adds what is its own."""

    kind: str
    controller: str
    controller_address: str
    login: list[str]


class StackOutputs(_Output):
    blueprint: BlueprintOutput
    network: dict[str, str]
    bucket: str
    node_groups: dict[str, NodeGroupOutput] = {}
    tpu_slices: dict[str, TpuSliceOutput] = {}
    storage: dict[str, StorageOutput] = {}
    node_selector: dict[str, str]
    """The tags / labels that select the stack's nodes in the cloud's API."""
    monitoring: MonitoringOutput | None = None
    """None: the cluster has no monitoring (or the stack predates it)."""
    scheduler: SchedulerOutput | None = None
    """None: the cluster has no scheduler (or the stack predates it)."""
    health_signing_key: str | None = None
    """The key health records are signed with (a secret in the stack's state); None: the stack predates
    signed records."""


class _Exports(Protocol):
    """What the outputs ask of a scheduler plugin, found by kind (clusterfab.scheduler builds on this
    module)."""

    @property
    def outputs(self) -> type[BaseModel]: ...


def read_outputs(raw: Mapping[str, Any]) -> StackOutputs:
    """A stack's outputs as models (UsageError when the stack was never updated by this clusterfab)."""
    try:
        outputs = StackOutputs.model_validate(dict(raw))
    except ValidationError as exc:
        raise _not_ours(exc) from None
    scheduler = outputs.scheduler
    if scheduler is not None and scheduler.kind in schedulers():
        # What the scheduler's plugin exports beyond the common fields must be there too.
        try:
            exports: _Exports = load_scheduler(scheduler.kind)
            own = exports.outputs.model_validate(raw["scheduler"])
        except ValidationError as exc:
            raise _not_ours(exc, ("scheduler",)) from None
        if isinstance(own, SchedulerOutput):
            # Kept as the plugin's model, so what it adds (a cluster's CA, ...) reaches its own code.
            outputs = outputs.model_copy(update={"scheduler": own})
    return outputs


def _not_ours(exc: ValidationError, within: tuple[str, ...] = ()) -> UsageError:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in (*within, *first["loc"]))
    return UsageError(
        f"the stack's outputs are not clusterfab's ({where}: {first['msg']}); "
        "run `clusterfab up` for it first"
    )
