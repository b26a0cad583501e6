"""ClusterSpec: a blueprint resolved against the catalog for one environment.

Blueprints leave much to defaults (placement, fabric, mounted storage, software versions, images,
protection) and name catalog entries by key. The spec holds the answers, decided once by
`clusterfab.spec.resolve`: the machine record itself instead of its name, the fabric and placement the
group really gets, its size range, typed capacity, the storage tier record. Rules, cost, the node
software's variables, render and the Pulumi program all read the spec; none re-derives it.

Every item keeps its blueprint `path` so that a rule reading the spec can still point at the line.
Items that name something the catalog lacks are not resolved; they are listed in `unresolved` (the
catalog rules report why), and the spec is `complete` only without them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import ClassVar, Literal, Protocol

from clusterfab.catalog.models import (
    MachineType,
    ManagedDatabase,
    MonitoringMachine,
    SlurmMachine,
    StorageTier,
    TpuGeneration,
    TpuTopology,
)
from clusterfab.core.findings import FieldPath
from clusterfab.core.vocab import Cloud, Fabric, Placement
from clusterfab.spec.capacity import Capacity, FlexStart


@dataclass(frozen=True, slots=True)
class SoftwareVersions:
    """The NVIDIA stack for GPU nodes, with the blueprint's choices over the catalog's defaults."""

    nvidia_driver: str
    cuda: str
    nccl: str


@dataclass(frozen=True, slots=True)
class LocalScratch:
    """The node group's local NVMe as RAID 0 scratch: mounted at `mount_point` when `enabled`."""

    enabled: bool
    mount_point: str


class _Item:
    """Where a resolved item sits in the blueprint, for findings about it."""

    index: int
    list_name: ClassVar[str]

    @property
    def path(self) -> FieldPath:
        return (self.list_name, self.index)


@dataclass(frozen=True)
class NodeGroup(_Item):
    list_name: ClassVar[str] = "node_groups"
    index: int
    """Position in the blueprint's `node_groups`."""
    name: str
    machine: MachineType
    min_size: int
    max_size: int
    autoscaled: bool
    capacity: Capacity
    fabric: Fabric | None
    """The fabric the nodes attach to; None: only the general network."""
    placement: Placement
    placement_max_distance: int | None
    boot_disk_gib: int
    image: str
    """The blueprint's image, else the catalog's default for the machine's CPU architecture."""
    root_device: str | None
    """The default image's root device name (AWS block device mapping); None where the cloud needs none."""
    root_volume_type: str | None
    """The boot volume type (AWS: gp3); None where the machine type decides (GCP)."""
    storage: tuple[str, ...]
    """Names of the storage mounted on the nodes, in blueprint order."""
    local_scratch: LocalScratch
    kms_key: str | None = None
    """The customer-managed key of the boot disks; None: the cloud's own key."""

    @property
    def gpus_per_node(self) -> int:
        return self.machine.accelerator.count

    @property
    def static_size(self) -> int:
        """Nodes that are always up: all of a fixed-size group, `min` of an autoscaled one (under Slurm
        the rest are elastic nodes that Slurm creates for queued jobs)."""
        return self.min_size if self.autoscaled else self.max_size

    @property
    def flex_elastic(self) -> bool:
        """Elastic nodes on flex-start capacity: under Slurm asked for per job, granted when capacity
        arrives."""
        return isinstance(self.capacity, FlexStart) and self.static_size < self.max_size

    @property
    def max_gpus(self) -> int:
        return self.max_size * self.gpus_per_node


@dataclass(frozen=True)
class TpuSlice(_Item):
    list_name: ClassVar[str] = "tpu_slices"
    index: int
    """Position in the blueprint's `tpu_slices`."""
    name: str
    generation: TpuGeneration
    topology: str
    shape: TpuTopology
    accelerator_type: str
    """`v5p-128` for a 4x4x4 v5p slice (N counts TensorCores), `v6e-256` for 16x16 (N counts chips)."""
    runtime_version: str
    slices: int
    capacity: Capacity
    storage: tuple[str, ...]

    @property
    def hosts_per_slice(self) -> int:
        return self.shape.hosts

    @property
    def chips(self) -> int:
        """Chips over all slices."""
        return self.shape.chips * self.slices


@dataclass(frozen=True)
class LustreStorage(_Item):
    list_name: ClassVar[str] = "storage"
    index: int
    """Position in the blueprint's `storage`."""
    name: str
    tier: StorageTier
    capacity_gib: int
    throughput_mbps_per_tib: int | None
    deployment: Literal["persistent", "scratch"]
    mount_point: str
    import_path: str | None
    export_changes: bool
    efa: bool
    protected: bool
    kms_key: str | None = None
    """The customer-managed key of the file system; None: the cloud's own key."""
    kind: Literal["lustre"] = "lustre"


@dataclass(frozen=True)
class FilestoreStorage(_Item):
    list_name: ClassVar[str] = "storage"
    index: int
    """Position in the blueprint's `storage`."""
    name: str
    tier: StorageTier
    capacity_gib: int
    share_name: str
    mount_point: str
    protected: bool
    kms_key: str | None = None
    """The customer-managed key of the share; None: Google's own key."""
    root_squash: bool = False
    """Clients' root acts as nobody on the share."""
    kind: Literal["filestore"] = "filestore"


Storage = LustreStorage | FilestoreStorage


@dataclass(frozen=True, slots=True)
class Unresolved:
    """An item that names something the catalog lacks (the catalog rules say what and where)."""

    path: FieldPath
    name: str


@dataclass(frozen=True, slots=True)
class Budget:
    max_hourly_usd: Decimal | None
    max_monthly_usd: Decimal | None
    alert_emails: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Smtp:
    smarthost: str
    sender: str
    username: str | None
    password_secret: str | None


MonitoringHost = Literal["node", "controller"]
"""Where the monitoring stack runs: its own monitoring node, or the Slurm controller."""


@dataclass(frozen=True)
class Monitoring:
    """Prometheus, Alertmanager and Grafana for the cluster (the blueprint's `monitoring`, resolved)."""

    retention_days: int
    alert_emails: tuple[str, ...]
    """The blueprint's monitoring.alert_emails, else budget.alert_emails."""
    smtp: Smtp | None
    host: MonitoringHost
    machine: MonitoringMachine | None
    """The monitoring node's machine (host "node"); None on the controller."""
    disk_gib: int
    """The monitoring host's data disk: the blueprint's, else sized for the retention at full size."""
    needed_disk_gib: int
    """What the retention needs at the cluster's full size (Prometheus' own sizing rule)."""
    scrape_interval_seconds: int
    slurm: bool
    """Scrape the Slurm exporter and alert on drained nodes (set when the cluster runs Slurm)."""

    @property
    def path(self) -> FieldPath:
        return ("monitoring",)


TeamPriority = Literal["low", "normal", "high"]


@dataclass(frozen=True)
class Team(_Item):
    """A team with a GPU quota (the blueprint's `teams` item): a Slurm account with a QOS of its own."""

    list_name: ClassVar[str] = "teams"
    index: int
    name: str
    max_gpus: int
    gpu_hours_per_month: int | None
    priority: TeamPriority
    users: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Partition:
    """A Slurm partition over whole node groups."""

    name: str
    node_groups: tuple[str, ...]
    default: bool
    max_time: str | None
    default_time: str
    exclusive: bool
    index: int | None
    """Position in scheduler.partitions; None for a partition made from a node group by default."""

    @property
    def path(self) -> FieldPath:
        return ("scheduler", "partitions", self.index) if self.index is not None else ("scheduler",)


class SchedulerSection(Protocol):
    """A scheduler's part of the spec: its blueprint section resolved by the plugin of `kind`
    (clusterfab.scheduler), which alone reads the rest of it. Slurm's is `Slurm`; a scheduler registered
    at run time brings its own."""

    @property
    def kind(self) -> str: ...

    @property
    def path(self) -> FieldPath: ...


@dataclass(frozen=True)
class Slurm:
    """The blueprint's `scheduler` (kind slurm), resolved: machines, accounting, partitions, release."""

    controller: SlurmMachine
    login: SlurmMachine | None
    """The login nodes' machine; None when `login.count` is 0."""
    login_count: int
    state_disk_gib: int
    """The blueprint's: Slurm's state and the accounting database."""
    accounting: Literal["embedded", "managed"]
    containers: Literal["pyxis", "none"]
    partitions: tuple[Partition, ...]
    version: str
    """The Slurm release every daemon runs (the nodes' image's)."""
    package_version: str
    """Its packages' version string in the nodes' distribution (what the roles pin)."""
    kms_key: str | None = None
    """The customer-managed key of the controller's disks (state and boot); None: the cloud's own key."""
    monitoring_disk_gib: int = 0
    """The monitoring stack's samples, when it runs on the controller: they live on the state disk."""
    idle_minutes: int = 10
    """An elastic node's idle time before Slurm deletes its instance (SuspendTime)."""
    resume_timeout_minutes: int = 30
    """How long a created node has to register before Slurm gives up on it (ResumeTimeout)."""
    flex_start_wait_minutes: int = 240
    """How long a flex-start elastic node may wait for capacity and boot (its partitions' ResumeTimeout)."""
    database: ManagedDatabase | None = None
    """Managed accounting's database service (`accounting: managed`); None: MariaDB on the controller."""
    kind: Literal["slurm"] = "slurm"

    @property
    def path(self) -> FieldPath:
        return ("scheduler",)

    @property
    def disk_gib(self) -> int:
        """The state disk's size: Slurm's share and, with monitoring on the controller, Prometheus'."""
        return self.state_disk_gib + self.monitoring_disk_gib


@dataclass(frozen=True)
class ClusterSpec:
    name: str
    cloud: Cloud
    region: str
    zone: str
    project: str | None
    """GCP: the blueprint's project (the stack config `gcp:project` may supply it instead)."""
    labels: Mapping[str, str]
    environment: str | None
    protected: bool
    """Whether the environment protects stateful resources by default."""
    cidr: str
    ssh_ingress_cidrs: tuple[str, ...]
    node_groups: tuple[NodeGroup, ...]
    tpu_slices: tuple[TpuSlice, ...]
    storage: tuple[Storage, ...]
    software: SoftwareVersions
    budget: Budget | None
    unresolved: tuple[Unresolved, ...]
    monitoring: Monitoring | None = None
    """None: no monitoring (the blueprint's monitoring.kind none)."""
    scheduler: SchedulerSection | None = None
    """The scheduler's section, told apart by its `kind`; None: no scheduler (scheduler.kind none)."""
    teams: tuple[Team, ...] = ()
    bucket_kms_key: str | None = None
    """The customer-managed key of the cluster bucket; None: the cloud's own key."""

    @property
    def gpu_count(self) -> int:
        """GPUs of every node group at its largest size."""
        return sum(group.max_gpus for group in self.node_groups)

    @property
    def complete(self) -> bool:
        """Whether every item resolved (a validated blueprint's spec always is)."""
        return not self.unresolved

    def storage_named(self, names: tuple[str, ...]) -> tuple[Storage, ...]:
        """The storage items with these names, in blueprint order."""
        wanted = set(names)
        return tuple(s for s in self.storage if s.name in wanted)
