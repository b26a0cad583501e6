"""Typed view of the catalog data files (`clusterfab/catalog/data/*.yaml`).

Every record that holds changeable figures says where they come from (`source`, ids declared in
sources.yaml), when (`as_of`) and how sure we are (`confidence`); `unconfirmed` names the fields of a
record whose figure has no confirmed source, with a note. The models reject unknown keys so a typo in
the data fails the catalog tests instead of silently dropping a figure.
"""

# No `from __future__ import annotations`: pydantic would compile and evaluate every field's annotation
# string when each model class is created, on every run of every command.
import datetime as dt
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from clusterfab.catalog.parts import part
from clusterfab.core.plugins import BUILTIN_CLOUDS
from clusterfab.core.vocab import CapacityKind, Cloud, CpuArchitecture, Fabric

if TYPE_CHECKING:
    from clusterfab.catalog.query import Catalog

Confidence = Literal["official", "vendor-code", "secondary", "unconfirmed"]
PricingModel = Literal["on_demand", "spot", "capacity_block", "reservation", "flex_start", "cud_1y", "cud_3y"]
PriceUnit = Literal["hour", "chip_hour", "gib_month"]


class Record(BaseModel):
    # defer_build: a catalog read from the compiled cache (query.py) is unpickled, not validated, so a
    # command that uses it never pays for building these models' validators.
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class Sourced(Record):
    """Provenance of a record's figures."""

    source: list[str]
    as_of: dt.date
    confidence: Confidence
    unconfirmed: dict[str, str] = {}


class Source(Record):
    title: str
    url: str | None
    as_of: dt.date
    confidence: Confidence


class Accelerator(Record):
    model: str
    architecture: Literal["ampere", "hopper", "blackwell"]
    count: int = Field(gt=0)
    memory_gib: int = Field(gt=0, description="Memory per accelerator.")
    gcp_type: str | None = None


class EfaInterfaceRange(Record):
    cards: str = Field(pattern=r"^\d+(-\d+)?$")
    device_index: int = Field(ge=0)
    type: Literal["interface", "efa", "efa-only"]

    def card_indexes(self) -> range:
        first, _, last = self.cards.partition("-")
        return range(int(first), int(last or first) + 1)


class EfaInterface(Record):
    """One launch-template network interface."""

    network_card_index: int
    device_index: int
    interface_type: Literal["interface", "efa", "efa-only"]


class NetworkLayout(Sourced):
    description: str
    interfaces: list[EfaInterfaceRange]

    def expand(self) -> list[EfaInterface]:
        """The interfaces one by one, ordered by (card, device)."""
        expanded = [
            EfaInterface(network_card_index=card, device_index=r.device_index, interface_type=r.type)
            for r in self.interfaces
            for card in r.card_indexes()
        ]
        return sorted(expanded, key=lambda i: (i.network_card_index, i.device_index))


class AwsRegions(Sourced):
    zone_id_prefixes: dict[str, str]


class CapacityBlockLimits(Sourced):
    max_instances: int = Field(gt=0)


class CapacityBlockTimes(Sourced):
    """When an AWS Capacity Block ends, and what EC2 does before its end."""

    end_time_utc: dt.time
    """Every block ends at this time of day, UTC."""
    termination_lead_minutes: int = Field(gt=0)
    """EC2 begins terminating the block's instances this long before its end."""
    extension_window_days: int = Field(gt=0)
    """An extension can be requested from this long before the end (until an hour before it)."""


class InfinibandPorts(NamedTuple):
    """A machine type's InfiniBand: its HCAs (one port each) and the rate every port must run at."""

    hcas: int
    gbps_per_port: int


class MachineType(Sourced):
    """A GPU machine type; what differs per cloud is in the cloud's own class below."""

    cloud: Cloud
    name: str
    accelerator: Accelerator
    vcpus: int
    memory_gib: int
    cpu_architecture: CpuArchitecture
    fabric: Fabric | None
    """None: no high-speed fabric, only the general network (an Azure size without `r`)."""
    network_gbps: int
    nvswitch: bool
    purchase_options: list[CapacityKind]
    not_sold_as: dict[CapacityKind, str] = {}
    """Why the type is not sold with a capacity kind, and what to use instead (rule BP206's hint)."""

    def listing(self, catalog: "Catalog") -> dict[str, Any]:
        """The cloud's own fields of the type's row in `clusterfab catalog --format json` (its network
        and where it is offered)."""
        raise NotImplementedError(f"{type(self).__name__} does not say how it is listed")

    def infiniband_ports(self) -> InfinibandPorts | None:
        """The type's InfiniBand HCAs and their rated speed; None: the type has no InfiniBand."""
        return None


class AwsMachineType(MachineType):
    cloud: Literal["aws"] = "aws"
    local_nvme_gb: int
    network_cards: int
    max_efa_interfaces: int
    efa_layout: str
    locations: dict[str, list[str]] = Field(description="Region -> AZ ids offering the type.")

    def listing(self, catalog: "Catalog") -> dict[str, Any]:
        return {
            "network_cards": self.network_cards,
            "max_efa_interfaces": self.max_efa_interfaces,
            "locations": sorted(z for zones in self.locations.values() for z in zones),
            "efa_interfaces": [i.model_dump() for i in catalog.efa_interfaces(self)],
        }


class GcpNetworks(Record):
    general_vpcs: int = Field(ge=1)
    general_mtu: int
    gpu_vpcs: int = Field(ge=0)
    gpu_mtu: int | None
    rdma_subnets: int = Field(ge=0)
    rdma_mtu: int | None
    rdma_profile: str | None
    general_nic_type: Literal["GVNIC", "VIRTIO_NET"]
    gpu_nic_type: Literal["GVNIC", "MRDMA"]


class GcpPlacement(Record):
    max_vms: int
    max_vms_by_distance: dict[int, int]
    min_max_distance: int | None
    accelerator_topology: str | None = Field(
        default=None,
        description=(
            "Workload-policy accelerator topology that compact placement of this machine type uses instead "
            "of a max topology distance (A4X: 1x72, one NVL72 domain)."
        ),
    )

    def limit(self, max_distance: int | None) -> int:
        """Most VMs a compact placement policy may hold at `max_distance` (None: unspecified)."""
        if max_distance is None:
            return self.max_vms
        return self.max_vms_by_distance.get(max_distance, self.max_vms)


class GcpMachineType(MachineType):
    cloud: Literal["gcp"] = "gcp"
    gpu_nics: int
    network: GcpNetworks
    placement: GcpPlacement
    boot_disk_type: Literal["pd-ssd", "pd-balanced", "hyperdisk-balanced"] = Field(
        description="Boot disk type the machine type supports and the Cluster Toolkit boots it from."
    )
    zones: list[str]

    def listing(self, catalog: "Catalog") -> dict[str, Any]:
        return {
            "gpu_nics": self.gpu_nics,
            "locations": sorted(self.zones),
            "networks": self.network.model_dump(),
            "placement": self.placement.model_dump(),
        }


class TpuTopology(Record):
    chips: int = Field(gt=0)
    hosts: int = Field(gt=0)


class TpuGeneration(Sourced):
    cloud: Literal["gcp"] = "gcp"
    name: str
    type_prefix: str
    accelerator_config_type: str
    cores_per_chip: int = Field(gt=0, description="What the N in `<prefix>-N` counts per chip.")
    chips_per_host: int
    host_shapes: list[int]
    dimensions: Literal[2, 3]
    hbm_gib: int
    runtime_version: str
    purchase_options: list[CapacityKind]
    zones: list[str]
    multislice: bool
    max_chips_per_slice: int | None = None
    """The largest slice Google offers (None: the topology table is the limit)."""
    network_mtu: int | None = None
    """The VPC MTU Google's setup guide creates the slices' network with (None: GCP's default)."""
    topologies: dict[str, TpuTopology]

    def accelerator_type(self, topology: str) -> str:
        """The accelerator type name for a topology: v5p-128 for 4x4x4, v6e-256 for 16x16."""
        return f"{self.type_prefix}-{self.topologies[topology].chips * self.cores_per_chip}"


class CapacityBand(Record):
    min_gib: int = Field(gt=0)
    max_gib: int | None
    step_gib: int = Field(gt=0)

    def contains(self, capacity: int) -> bool:
        in_range = self.min_gib <= capacity and (self.max_gib is None or capacity <= self.max_gib)
        return in_range and capacity % self.step_gib == 0


class StorageTier(Sourced):
    cloud: Cloud
    kind: Literal["lustre", "filestore"]
    service: Literal["fsx-lustre", "managed-lustre", "filestore", "amlfs"]
    tier: str
    deployment: Literal["persistent", "scratch"]
    capacity_bands: list[CapacityBand]
    throughputs: list[int]
    fixed_throughput: int | None
    grow_only: bool
    location: Literal["zone", "region"] = "zone"
    lustre_version: str | None = None
    efa: bool = False
    """Whether the tier can be created EFA-enabled (FSx for Lustre PERSISTENT_2)."""
    customer_managed_key: bool = False
    """Whether the tier's file systems can be encrypted with a key of the customer's (`kms_key`)."""
    network_mtu: int | None = None
    """The VPC MTU the service's performance guide recommends for its clients' network."""
    capacity_unit: Literal["GiB", "TiB"] = "GiB"
    """The unit the service sizes in, for messages (the bands stay in GiB, as the blueprint writes it)."""

    def fits(self, capacity: int) -> bool:
        return any(band.contains(capacity) for band in self.capacity_bands)

    def nearest(self, capacity: int) -> list[int]:
        """The valid capacities just below and just above `capacity` (one or two values)."""
        below: list[int] = []
        above: list[int] = []
        for band in self.capacity_bands:
            step = band.step_gib
            high = capacity if band.max_gib is None else min(capacity, band.max_gib)
            down = high - high % step
            if down >= band.min_gib:
                below.append(down)
            up = -(-max(capacity, band.min_gib) // step) * step
            if band.max_gib is None or up <= band.max_gib:
                above.append(up)
        picks = ([max(below)] if below else []) + ([min(above)] if above else [])
        return sorted(set(picks))


class Price(Record):
    cloud: Cloud
    sku: str
    pricing_model: PricingModel
    unit: PriceUnit
    usd: float = Field(gt=0)
    regions: list[str] = Field(min_length=1)
    source: str
    as_of: dt.date
    confidence: Confidence
    note: str | None = None


class CudaRelease(Record):
    cuda: str
    update: int
    driver: str


class CudaDriverTable(Sourced):
    releases: list[CudaRelease]


NvlinkService = Literal["fabric_manager", "nvlsm", "imex"]


class GpuSupport(Sourced):
    model: str
    min_driver: str
    min_cuda: str
    nvlink_services: list[NvlinkService] = Field(
        default=[],
        description=(
            "What a node with these GPUs on NVSwitch runs to bring NVLink up: Fabric Manager (HGX), plus "
            "the NVLink subnet manager on NVLink5 (HGX B200/B300), or IMEX across the trays of an NVL72 "
            "domain (GB200)."
        ),
    )
    note: str | None = None


class ReleaseList(Sourced):
    """Every released version of a piece of NVIDIA software (as of the record's date)."""

    versions: tuple[str, ...]


class RecommendedStack(Sourced):
    nvidia_driver: str
    cuda: str
    nccl: str


class FabricSoftware(Sourced):
    name: Fabric
    plugin: str
    plugin_version: str
    installer_version: str | None
    min_nccl: str | None
    note: str | None = None


class AptRepository(Sourced):
    """An apt repository and the key it is signed with; `{distro}`, `{arch}` (x86_64 / sbsa) and
    `{debarch}` (amd64 / arm64) in `url` and `key_url` stand for the node's values."""

    url: str
    suite: str
    components: list[str]
    key_url: str | None
    key_fingerprint: str | None = Field(default=None, pattern=r"^[0-9A-F]{40}$")
    """The primary key's fingerprint a node checks the downloaded key against before trusting it."""

    @model_validator(mode="after")
    def _key_pinned(self) -> Self:
        if self.key_url is not None and self.key_fingerprint is None:
            raise ValueError(f"repository {self.url}: a key_url needs its key_fingerprint")
        return self


class NodeRepository(AptRepository):
    """A repository the GPU node roles install from (packages.yaml), named by `id`."""

    id: str
    title: str


class AptPackage(Sourced):
    """A package of a recorded repository, with its Debian version string and relations.

    `version` None: the package exists but no version is known to pin (the role installs what the
    repository carries and holds it).
    """

    repository: str
    name: str
    version: str | None
    architectures: list[Literal["amd64", "arm64", "all"]]
    depends: list[str] = []
    conflicts: list[str] = []
    provides: list[str] = []
    note: str | None = None

    @property
    def upstream_version(self) -> str | None:
        """The version without epoch and Debian revision: "1:4.4.2-1" -> "4.4.2"."""
        if self.version is None:
            return None
        without_epoch = self.version.split(":", 1)[-1]
        return without_epoch.rsplit("-", 1)[0] if "-" in without_epoch else without_epoch


class NcclBuild(Record):
    nccl: str
    cuda_major: int
    released: dt.date = Field(description="First upload of the wheel to PyPI.")


class NcclBuilds(Sourced):
    """Which NCCL releases NVIDIA built for which CUDA major (PyPI nvidia-nccl-cu<major> wheels)."""

    builds: list[NcclBuild]

    def versions_for(self, cuda_major: int) -> list[str]:
        """The NCCL releases built for a CUDA major, oldest first."""
        found = {b.nccl for b in self.builds if b.cuda_major == cuda_major}
        return sorted(found, key=lambda v: tuple(int(p) for p in v.split(".")))

    def majors_of(self, nccl: str) -> list[int]:
        return sorted({b.cuda_major for b in self.builds if b.nccl == nccl})


class SocketIfname(Sourced):
    """NCCL_SOCKET_IFNAME (the bootstrap / socket interfaces) of a machine type."""

    machine_type: str
    ifname: str


class NcclFabricEnv(Sourced):
    """The NCCL environment of a machine type's fabric beyond NCCL_SOCKET_IFNAME: NCCL_TOPO_FILE, a file
    its image carries (None: NCCL detects the topology), and further variables."""

    machine_type: str
    topo_file: str | None
    env: dict[str, str]


class LocalDisks(Sourced):
    """The /dev/disk/by-id link names of a cloud's local NVMe disks (glob patterns)."""

    cloud: Cloud
    patterns: list[str]


class NcclTestsSupport(Sourced):
    """The oldest nccl-tests release that compiles with each CUDA major."""

    per_cuda_major: dict[int, str]


class LustreClient(Sourced):
    """The apt repository a node installs the Lustre client from (Ubuntu 24.04)."""

    cloud: Cloud
    key_url: str
    key_fingerprint: str = Field(pattern=r"^[0-9A-F]{40}$")
    repo_url: str
    suite: str
    components: list[str]
    packages: list[str]


class NodePackage(Sourced):
    """A piece of node software the Ansible roles pin; `version` None: nothing known to pin."""

    name: str
    version: str | None
    checksum: str | None
    key_fingerprint: str | None = Field(default=None, pattern=r"^[0-9A-F]{40}$")
    """The fingerprint of the key whose signature a node verifies when no checksum is published."""
    note: str | None = None


class OsImage(Sourced):
    cloud: Cloud
    cpu_architecture: CpuArchitecture
    image: str
    os: str
    root_device: str | None
    """The image's root device name, where the cloud's launch configuration names it (AWS)."""
    root_volume_type: str | None = None
    """The root volume type nodes boot from, where the cloud's launch configuration names it (AWS)."""
    driver_branch: str | None = None
    """The NVIDIA driver branch the image ships; None: nodes install the driver themselves."""
    carries: list[str] = []
    """Other node software the image ships, which nodes verify and hold instead of installing: node_packages
    names (at the catalog's version) and absolute paths of files."""


class MonitoringMachine(Sourced):
    """The monitoring node of a cloud when the cluster has no Slurm controller to host the stack."""

    cloud: Cloud
    name: str
    vcpus: int = Field(gt=0)
    memory_gib: int = Field(gt=0)
    image: str
    root_device: str | None
    disk_type: str


class MonitoringPackage(Sourced):
    """A package the monitoring host installs, pinned to an exact version string of its repository."""

    name: str
    package: str
    version: str
    note: str | None = None


class ExporterFacts(Sourced):
    dcgm_exporter_release: str
    dcgm_exporter_port: int
    node_exporter_port: int
    event_window_ms: int = Field(gt=0)
    slurm_exporter_port: int


class StorageSizing(Sourced):
    bytes_per_sample: int = Field(gt=0)
    dcgm_series_per_gpu: int = Field(gt=0)
    node_exporter_series_base: int = Field(gt=0)
    node_exporter_series_per_vcpu: int = Field(gt=0)
    min_disk_gib: int = Field(gt=0)


XidAction = Literal[
    "RESTART_APP",
    "RESET_GPU",
    "RESTART_BM",
    "IGNORE",
    "WORKFLOW_XID_48",
    "WORKFLOW_NVLINK_ERR",
    "WORKFLOW_NVLINK5_ERR",
]


class Xid(Record):
    """One row of NVIDIA's Xid catalog, and the alert rule that watches it."""

    xid: int = Field(gt=0)
    mnemonic: str
    description: str
    immediate: XidAction
    investigatory: str
    alert: str


class XidCatalog(Sourced):
    rows: list[Xid]


class MonitoringFacts(Record):
    machines: list[MonitoringMachine]
    packages: list[MonitoringPackage]
    grafana_repository: AptRepository
    exporters: ExporterFacts
    storage: StorageSizing
    xids: XidCatalog

    def machine(self, cloud: Cloud, name: str | None = None) -> MonitoringMachine | None:
        """The named machine of `cloud` (None: the default, the cloud's first)."""
        for machine in self.machines:
            if machine.cloud == cloud and (name is None or machine.name == name):
                return machine
        return None

    def package(self, name: str) -> MonitoringPackage:
        for package in self.packages:
            if package.name == name:
                return package
        raise KeyError(f"no monitoring package {name!r} in the catalog")


class SlurmMachine(Sourced):
    """The default controller or login machine of a cloud."""

    cloud: Cloud
    role: Literal["controller", "login"]
    name: str
    vcpus: int = Field(gt=0)
    memory_gib: int = Field(gt=0)
    image: str
    root_device: str | None
    disk_type: str


class SlurmPackages(Record):
    controller: list[str]
    node: list[str]
    login: list[str]
    development: str
    """The package with Slurm's headers (slurm/spank.h), which SPANK plugins such as pyxis build against."""


class SlurmRelease(Sourced):
    """The Slurm release the nodes' image carries (every daemon of a cluster runs it)."""

    version: str = Field(pattern=r"^\d+\.\d+(\.\d+)?$")
    package_version: str
    """The distribution's version string of the Slurm packages (`apt-get install slurmd=<this>`)."""
    distribution: str
    packages: SlurmPackages


class SlurmFeature(Record):
    setting: str
    since: str = Field(pattern=r"^\d+\.\d+$")
    why: str


class SlurmPorts(Sourced):
    slurmctld: int
    slurmd: int
    slurmdbd: int
    srun: tuple[int, int]


class ManagedDatabase(Sourced):
    """The managed database service slurmdbd keeps the accounting in (`scheduler.accounting: managed`)."""

    cloud: Cloud
    engine: str
    """The service's name for the engine: RDS CreateDBInstance Engine; Cloud SQL databaseVersion (which
    names the major version too)."""
    version: str
    """The engine's major version; the service applies its minor releases."""
    parameter_family: str | None = None
    """RDS: the DB parameter group family of that version."""
    machine_type: str
    """The default instance class (RDS) or machine type (Cloud SQL tier)."""
    edition: str | None = None
    """Cloud SQL: the edition the machine type belongs to (ENTERPRISE, ENTERPRISE_PLUS)."""
    storage_gib: int = Field(ge=10)
    """The default allocated storage."""
    backup_days: int = Field(default=7, ge=1, le=35)
    """Days of daily backups kept by default."""
    ca: str
    """The certificate authority the database's server certificate is signed by (RDS CA identifier, Cloud
    SQL serverCaMode)."""
    ca_bundle_url: str | None = None
    """RDS: where its CA bundle is published, `{region}` standing for the region (fetched over HTTPS).
    None: the service hands the CA certificate out with the instance (Cloud SQL's serverCaCert)."""
    ca_certificates: tuple[str, ...] | None = None
    """Azure: the root certificates that sign the servers' certificates, as files of the controller's own
    trust store (Ubuntu's ca-certificates), which become slurmdbd's CA bundle."""

    @model_validator(mode="after")
    def _cloud_fields(self) -> Self:
        needed = part(self.cloud).MANAGED_DATABASE_FIELDS if self.cloud in BUILTIN_CLOUDS else ()
        missing = [name for name in needed if getattr(self, name) is None]
        if missing:
            raise ValueError(f"a {self.cloud} managed database needs {', '.join(missing)}")
        return self


class SourceArchive(Sourced):
    """A source release the nodes build: the tarball's URL and its sha256 (what the role verifies)."""

    name: str
    version: str
    url: str = Field(pattern=r"^https://")
    checksum: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    commit: str = Field(pattern=r"^[0-9a-f]{40}$")
    """The git commit the tag names: what the archive was made from."""


class SlurmContainers(Record):
    """`containers: pyxis`: enroot (with the archives of the two git submodules its build needs, at the
    commits its release pins) and the pyxis SPANK plugin."""

    enroot: SourceArchive
    enroot_makeself: SourceArchive
    enroot_kernel_headers: SourceArchive
    pyxis: SourceArchive


class SlurmFacts(Record):
    machines: list[SlurmMachine]
    release: SlurmRelease
    containers: SlurmContainers
    features: list[SlurmFeature]
    features_source: list[str]
    features_as_of: dt.date
    ports: SlurmPorts
    managed_databases: list[ManagedDatabase]

    def managed_database(self, cloud: Cloud) -> ManagedDatabase | None:
        """The cloud's managed accounting database; None where clusterfab provisions none."""
        return next((d for d in self.managed_databases if d.cloud == cloud), None)

    def machine(
        self, cloud: Cloud, role: Literal["controller", "login"], name: str | None
    ) -> SlurmMachine | None:
        """The named machine of `cloud` for `role` (None: the role's default)."""
        for machine in self.machines:
            if machine.cloud == cloud and machine.role == role and name is None:
                return machine
        for machine in self.machines:
            if machine.cloud == cloud and machine.name == name:
                return machine
        return None

    def since(self, setting: str) -> str:
        """The first Slurm release that has `setting`."""
        for feature in self.features:
            if feature.setting == setting:
                return feature.since
        raise KeyError(f"no Slurm feature {setting!r} in the catalog")


class StatefulType(Sourced):
    """A resource type that holds data: replacing or deleting one destroys it."""

    type: str


class RestartingUpdate(Sourced):
    """The input changes a provider makes in place by stopping and starting the instance (Pulumi property
    names, dotted, without list indexes): the instance stays, and is down meanwhile."""

    type: str
    properties: list[str]
    why: str


ReplaceCondition = Literal["decrease", "cidr_shrinks", "kind_changes", "flag", "always"]


class ReplaceWhen(Record):
    """A change that replaces the resource only under a condition the provider checks at plan time."""

    property: str
    when: ReplaceCondition = Field(
        description="decrease: the new value is lower (numbers, booleans, dotted versions); cidr_shrinks: "
        "the new range does not contain the old; kind_changes: the property appears or disappears; flag: "
        "the input `flag` is true; always: any change (the condition cannot be judged offline)."
    )
    why: str
    flag: str | None = None


class ReplacementRule(Sourced):
    """Which input changes make the provider replace a resource type (Pulumi property names, dotted,
    without list indexes), read from the provider's schema."""

    type: str
    provider: str
    terraform_type: str | None = None
    read: list[str] = []
    """The upstream source files the schema was read from."""
    replace_on: list[str] = []
    replace_when: list[ReplaceWhen] = []
    replace_on_any: bool = False
    inherits: dict[str, str] = {}
    """Provider property -> resource property the resource takes from its provider when unset."""
    inherited: dict[str, str] = {}
    """On a provider resource: the properties it hands down (provider property -> resource property)."""
    not_in_upstream: list[str] = []
    why: str | None = None


class ProviderSchemas(Sourced):
    """Which Pulumi provider package the replacement rules are for, and the upstream release read."""

    pulumi_package: str
    pulumi_version: str
    upstream: str
    upstream_version: str
    read_from: str


class Replacements(Record):
    providers: dict[str, ProviderSchemas]
    types: dict[str, ReplacementRule]


class CatalogIndex(Record):
    version: str
    as_of: dt.date
    stale_after_days: int
