"""The blueprint language, version 1 (architecture §3).

Field names are a contract: they are what users write. Models are strict (YAML already gives
numbers, strings and booleans; a quoted "16" where a count belongs is a mistake worth reporting),
frozen, and reject unknown keys. Every field carries a description, which becomes the hover text of
the exported JSON Schema. Cross-field and catalog checks live in `clusterfab.rules`, where they can
point at the right line; these models only check what a single field can know.
"""

# No `from __future__ import annotations`: pydantic would compile and evaluate every field's annotation
# string when each model class is created, on every run of every command.
import datetime as dt
import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field
from pydantic_core import PydanticCustomError

from clusterfab.blueprint.fields import KEY_FORMS, Cidr, ItemName, KmsKey, Spec
from clusterfab.blueprint.names import CloudName
from clusterfab.blueprint.scheduler import SchedulerSpec, TeamSpec
from clusterfab.core.text import shown
from clusterfab.core.vocab import CapacityKind, FabricChoice

NAMED_LISTS = ("node_groups", "tpu_slices", "storage", "teams")
"""Lists whose items have a `name`: they merge by name in environment overlays."""

CLUSTER_NAME_PATTERN = r"^[a-z][a-z0-9-]{1,30}$"
VERSION_PATTERN = r"^\d+(\.\d+){0,2}$"
MOUNT_POINT_PATTERN = r"(/[A-Za-z0-9_][A-Za-z0-9_.-]*)+"
"""A mount point: the storage_mounts and local_scratch roles' own pattern (their `*_mount_point_regex`),
so the roles never refuse what validated. It becomes a systemd unit name and a path in shell commands."""

# Sanity limits, not cloud facts: far above any real cluster, they turn a typo (`count: 1e29`, an
# extra zero in a budget) into a finding at its line instead of an estimate nobody can read or a cloud
# budget of "inf". The clouds' own limits are checked by the catalog rules.
MAX_GROUP_NODES = 10_000
MAX_CAPACITY_GIB = 100_000_000
MAX_THROUGHPUT_MBPS_PER_TIB = 100_000
MAX_HOURLY_USD = 100_000_000.0
MAX_MONTHLY_USD = MAX_HOURLY_USD * 730


def _absolute_path(value: str) -> str:
    path = value.rstrip("/")
    if re.fullmatch(MOUNT_POINT_PATTERN, path) is None:
        raise PydanticCustomError(
            "mount_point",
            "{value} is not an absolute path of letters, digits, '_', '.' and '-' whose parts do not start "
            "with '.' or '-' (e.g. /lustre)",
            {"value": shown(value)},
        )
    return path


UTC_EXAMPLE = "2026-12-15T11:30:00Z"
"""How a time in UTC is written in a blueprint (messages and descriptions show it)."""


def _utc_time(value: Any) -> dt.datetime:
    """An ISO 8601 time with its UTC offset (Z or +HH:MM), as an aware datetime in UTC. The YAML loader
    keeps timestamps as the text written, so the text is what is read here; a time without an offset is
    refused: it would be read in whatever zone the machine running clusterfab is in."""
    if not isinstance(value, str):
        raise PydanticCustomError(
            "utc_time",
            "{value} is not a time: write an ISO 8601 time in UTC, e.g. {example}",
            {"value": shown(str(value)), "example": UTC_EXAMPLE},
        )
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        raise PydanticCustomError(
            "utc_time",
            "{value} is not an ISO 8601 time: write it like {example}",
            {"value": shown(value), "example": UTC_EXAMPLE},
        ) from None
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        date_only = re.fullmatch(r"\d{4}-\d{2}-\d{2}", value) is not None
        raise PydanticCustomError(
            "utc_time",
            "{value} is a date, not a time: write the time in UTC too, e.g. {example}"
            if date_only
            else "{value} has no UTC offset, so its zone is unknown: did you mean {fixed} (UTC)?",
            {"value": shown(value), "example": f"{value}T11:30:00Z", "fixed": shown(f"{value}Z")},
        )
    return parsed.astimezone(dt.UTC)


UtcTime = Annotated[dt.datetime, BeforeValidator(_utc_time)]
"""An ISO 8601 time with a UTC offset (`2026-12-15T11:30:00Z`), held in UTC."""
MountPoint = Annotated[str, AfterValidator(_absolute_path)]
Email = Annotated[str, Field(pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")]
EnvironmentName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,30}$")]


class NetworkSpec(Spec):
    """The cluster's private network."""

    cidr: Annotated[
        Cidr,
        Field(
            description=(
                "Private IPv4 range of the cluster network, e.g. 10.20.0.0/16. Subnets (and GCP's extra GPU "
                "networks) are carved out of it."
            )
        ),
    ] = "10.0.0.0/16"
    ssh_ingress_cidrs: Annotated[
        list[Cidr],
        Field(
            description=(
                "CIDRs allowed to reach nodes on port 22. Default none: reach nodes through SSM Session "
                "Manager (AWS) or IAP (GCP)."
            )
        ),
    ] = []


class AutoscalingSpec(Spec):
    """Autoscaled node group size."""

    min: Annotated[
        int, Field(ge=0, le=MAX_GROUP_NODES, description="Fewest nodes (0 lets the group scale to zero).")
    ]
    max: Annotated[
        int,
        Field(ge=1, le=MAX_GROUP_NODES, description="Most nodes; cost estimates price the group at max."),
    ]


class CapacitySpec(Spec):
    """How the capacity is bought."""

    kind: Annotated[
        CapacityKind,
        Field(
            description=(
                "on_demand | spot | reservation (consume an existing reservation) | capacity_block (AWS "
                "Capacity Blocks for ML; fixed size) | flex_start (GCP DWS flex-start)."
            )
        ),
    ] = "on_demand"
    reservation: Annotated[
        str | None,
        Field(
            description=(
                "Reservation to consume: an AWS capacity reservation id (cr-...) for reservation and "
                "capacity_block, or a GCP reservation name or projects/P/reservations/R path."
            )
        ),
    ] = None
    max_run_duration_hours: Annotated[
        int | None,
        Field(
            ge=1,
            le=168,
            description=("flex_start only: how long the VMs may run (1-168 hours) before GCP stops them."),
        ),
    ] = None
    ends_at: Annotated[
        UtcTime | None,
        Field(
            description=(
                "capacity_block only: when the block ends, as its end date shows (ISO 8601 with Z, e.g. "
                f"{UTC_EXAMPLE}; AWS blocks end at 11:30 UTC). EC2 terminates the block's instances 30 "
                "minutes before; `cost` prices the block until its end, and Slurm starts no job on its nodes "
                "that would run past it."
            ),
        ),
    ] = None


class LocalScratchSpec(Spec):
    """The nodes' local NVMe disks (AWS instance store, GCP Local SSD) as one RAID 0 scratch file system."""

    enabled: Annotated[
        bool,
        Field(
            description=(
                "Assemble the local NVMe disks into RAID 0 (one disk: formatted as it is), format it ext4 "
                "and mount it at every boot; its contents do not survive a stop or a replacement."
            )
        ),
    ] = True
    mount_point: Annotated[
        MountPoint,
        Field(
            description=(
                "Where the scratch file system is mounted (world-writable with the sticky bit, like /tmp)."
            )
        ),
    ] = "/mnt/localssd"


class NodeGroupSpec(Spec):
    """A group of identical GPU nodes."""

    name: Annotated[
        ItemName,
        Field(
            description=(
                "Name of the group, unique across node_groups, tpu_slices and storage; names its resources."
            )
        ),
    ]
    machine_type: Annotated[
        str,
        Field(
            min_length=1,
            description=(
                "A catalog machine type of the blueprint's cloud, e.g. p5.48xlarge or a3-megagpu-8g "
                "(`clusterfab catalog` lists them)."
            ),
        ),
    ]
    count: Annotated[
        int | None,
        Field(
            ge=1,
            le=MAX_GROUP_NODES,
            description=("Fixed number of nodes. Set this or `autoscaling`, not both."),
        ),
    ] = None
    autoscaling: Annotated[
        AutoscalingSpec | None, Field(description=("Autoscaled size {min, max} instead of a fixed count."))
    ] = None
    capacity: Annotated[CapacitySpec, Field(description="How the nodes' capacity is bought.")] = (
        CapacitySpec.model_construct()
    )
    placement: Annotated[
        Literal["compact", "none"] | None,
        Field(
            description=(
                "compact puts nodes close together (AWS cluster placement group, GCP compact placement); "
                "default: compact for multi-node groups on a fabric, none otherwise."
            )
        ),
    ] = None
    placement_max_distance: Annotated[
        int | None,
        Field(
            ge=1,
            le=3,
            description=(
                "GCP only: compact placement max topology distance (1-3); lower is closer but caps the "
                "group size."
            ),
        ),
    ] = None
    fabric: Annotated[
        FabricChoice,
        Field(
            description=(
                "auto uses the machine type's native fabric (EFA, GPUDirect-TCPX/TCPXO, RDMA over RoCE); "
                "none attaches only the general network; naming a fabric checks it is the native one."
            )
        ),
    ] = "auto"
    boot_disk_gib: Annotated[
        int, Field(ge=50, le=65536, description=("Size of the encrypted boot disk in GiB."))
    ] = 200
    kms_key: Annotated[
        KmsKey | None,
        Field(
            description=(
                "Customer-managed key of the nodes' boot disks; default the cloud's own key. "
                f"{KEY_FORMS} (GCP also takes a global key). AWS: the key policy must let the Auto "
                "Scaling service-linked role (AWSServiceRoleForAutoScaling) use the key, or nodes fail to "
                "launch; GCP: the Compute Engine service agent needs "
                "roles/cloudkms.cryptoKeyEncrypterDecrypter on it."
            )
        ),
    ] = None
    image: Annotated[
        str | None,
        Field(
            min_length=1,
            description=(
                "OS image: an AMI id or `resolve:ssm:` parameter (AWS), or an image / image family path "
                "(GCP). Default: the catalog's Ubuntu image for the machine's CPU architecture."
            ),
        ),
    ] = None
    attach: Annotated[
        list[ItemName] | None,
        Field(description=("Names of the storage to mount on these nodes; default all storage.")),
    ] = None
    local_scratch: Annotated[
        LocalScratchSpec,
        Field(
            description=(
                "The machine's local NVMe (p5/p6 instance store, A3/A4 Local SSD) as a RAID 0 scratch file "
                "system at /mnt/localssd; `enabled: false` leaves the disks alone."
            )
        ),
    ] = LocalScratchSpec.model_construct()


class TpuSliceSpec(Spec):
    """One or more TPU slices of the same shape (multislice when slices > 1)."""

    name: Annotated[ItemName, Field(description="Name of the slice group, unique across the blueprint.")]
    generation: Annotated[
        str,
        Field(
            pattern=r"^v\d+[a-z]*$",
            description="TPU generation, e.g. v5p or v6e (Trillium); `clusterfab catalog` lists them.",
        ),
    ]
    topology: Annotated[
        str,
        Field(
            pattern=r"^\d+x\d+(x\d+)?$",
            description=(
                "Slice topology, e.g. 4x4x4 (v5p, 3D) or 16x16 (v6e, 2D); must be one the generation offers."
            ),
        ),
    ]
    slices: Annotated[
        int, Field(ge=1, le=64, description=("Number of identical slices joined for multislice training."))
    ] = 1
    capacity: Annotated[CapacitySpec, Field(description="How the TPU capacity is bought.")] = (
        CapacitySpec.model_construct()
    )
    runtime_version: Annotated[
        str | None,
        Field(
            min_length=1,
            description=("TPU VM runtime version; default: the catalog's runtime for the generation."),
        ),
    ] = None
    attach: Annotated[
        list[ItemName] | None,
        Field(description=("Names of the storage to mount on the TPU hosts; default all storage.")),
    ] = None


class LustreSpec(Spec):
    """A Lustre file system: FSx for Lustre on AWS, Managed Lustre on GCP."""

    kind: Annotated[Literal["lustre"], Field(description="Storage kind.")]
    name: Annotated[ItemName, Field(description="Name of the file system, unique across the blueprint.")]
    capacity_gib: Annotated[
        int,
        Field(
            gt=0,
            le=MAX_CAPACITY_GIB,
            description=(
                "Capacity in GiB; must lie on the tier's capacity grid (`clusterfab catalog` shows it)."
            ),
        ),
    ]
    throughput_mbps_per_tib: Annotated[
        int | None,
        Field(
            gt=0,
            le=MAX_THROUGHPUT_MBPS_PER_TIB,
            description=(
                "Throughput per TiB (MB/s): one the tier offers (FSx PERSISTENT_2) or the tier itself "
                "(GCP Managed Lustre); not used with AWS scratch. `clusterfab catalog` lists them."
            ),
        ),
    ] = None
    deployment: Annotated[
        Literal["persistent", "scratch"],
        Field(
            description=(
                "AWS only: persistent (PERSISTENT_2, replicated, for datasets and checkpoints) or scratch "
                "(SCRATCH_2, cheaper, no replication)."
            )
        ),
    ] = "persistent"
    mount_point: Annotated[
        MountPoint | None, Field(description=("Where nodes mount it; default /mnt/<name>."))
    ] = None
    import_path: Annotated[
        str | None,
        Field(
            # Each cloud's own form is checked by its profile (BP255): an S3 URL, or a Blob container's
            # resource id. Never a wildcard.
            pattern=r"^(s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/.*)?|/subscriptions/[^\s*?]+)$",
            description=(
                "The data set the file system imports. AWS: s3://bucket/prefix, linked to the file system "
                "(data repository association). Azure: a Blob container's resource id, optionally followed "
                "by /prefix (Azure Managed Lustre's blob integration, set at creation)."
            ),
        ),
    ] = None
    efa: Annotated[
        bool,
        Field(
            description=(
                "AWS only: an EFA-enabled FSx for Lustre file system (PERSISTENT_2): clients on EFA reach it "
                "over the fabric and with GPUDirect Storage. Set at creation; it cannot be changed later."
            )
        ),
    ] = False
    export_changes: Annotated[
        bool,
        Field(
            description=(
                "AWS only: also write new and changed files back to import_path (deletions are never "
                "exported, so a `rm -rf` on a node cannot delete the source data set). Default: import only."
            )
        ),
    ] = False
    kms_key: Annotated[
        KmsKey | None,
        Field(
            description=(
                "Customer-managed key the file system is encrypted with; default the cloud's own key. "
                f"{KEY_FORMS}. AWS: persistent deployments only (FSx encrypts scratch file systems with "
                "its own key); GCP: the Managed Lustre service agent needs "
                "roles/cloudkms.cryptoKeyEncrypterDecrypter on it. Set at creation: changing it replaces the "
                "file system."
            )
        ),
    ] = None
    protect: Annotated[
        bool | None,
        Field(
            description=(
                "Protect from deletion and replacement; default: protected in environments named prod."
            )
        ),
    ] = None

    @property
    def mount_path(self) -> str:
        return self.mount_point or f"/mnt/{self.name}"


class FilestoreSpec(Spec):
    """A Filestore NFS share (GCP only)."""

    kind: Annotated[Literal["filestore"], Field(description="Storage kind.")]
    name: Annotated[ItemName, Field(description="Name of the share, unique across the blueprint.")]
    tier: Annotated[
        str,
        Field(
            pattern=r"^[A-Z][A-Z0-9_]*$",
            description="Filestore service tier, e.g. ZONAL or REGIONAL; `clusterfab catalog` lists them.",
        ),
    ] = "ZONAL"
    capacity_gib: Annotated[
        int,
        Field(
            gt=0,
            le=MAX_CAPACITY_GIB,
            description=(
                "Capacity in GiB, within the tier's range and on its capacity grid (`clusterfab catalog` "
                "shows it)."
            ),
        ),
    ]
    share_name: Annotated[
        str, Field(pattern=r"^[a-z][a-z0-9_]{0,15}$", description=("Name of the NFS export."))
    ] = "share"
    root_squash: Annotated[
        bool,
        Field(
            description=(
                "Clients' root acts as nobody (uid and gid 65534) on the share. Off by default: the share's "
                "top directory belongs to root with mode 755, so with root squash no node can create "
                "anything there; make the users' directories first, then turn it on. Either way only the "
                "nodes' subnet may mount the share."
            )
        ),
    ] = False
    kms_key: Annotated[
        KmsKey | None,
        Field(
            description=(
                "Customer-managed key the share is encrypted with; default Google's own key. "
                "projects/<project>/locations/<region>/keyRings/<ring>/cryptoKeys/<key>, in the blueprint's "
                "region; not on the BASIC_HDD and BASIC_SSD tiers. The Filestore service agent needs "
                "roles/cloudkms.cryptoKeyEncrypterDecrypter on it. Set at creation: changing it replaces the "
                "share."
            )
        ),
    ] = None
    mount_point: Annotated[
        MountPoint | None, Field(description=("Where nodes mount it; default /mnt/<name>."))
    ] = None
    protect: Annotated[
        bool | None,
        Field(
            description=(
                "Protect from deletion and replacement; default: protected in environments named prod."
            )
        ),
    ] = None

    @property
    def mount_path(self) -> str:
        return self.mount_point or f"/mnt/{self.name}"


StorageSpec = Annotated[LustreSpec | FilestoreSpec, Field(discriminator="kind")]


class SoftwareSpec(Spec):
    """The NVIDIA stack installed on GPU nodes; unset fields take the catalog's recommended versions."""

    nvidia_driver: Annotated[
        str | None,
        Field(pattern=VERSION_PATTERN, description=('NVIDIA driver version, e.g. "580.95.05" (quote it).')),
    ] = None
    cuda: Annotated[
        str | None,
        Field(
            pattern=r"^\d+\.\d+(\.\d+)?$",
            description=('CUDA toolkit version, e.g. "13.0" or "13.0.2" (update 2; quote it).'),
        ),
    ] = None
    nccl: Annotated[
        str | None, Field(pattern=r"^\d+\.\d+\.\d+$", description=('NCCL version, e.g. "2.28.9" (quote it).'))
    ] = None


class BudgetSpec(Spec):
    """Spending limits checked by validate, plan, cost and diff, and alerts in the cloud."""

    max_hourly_usd: Annotated[
        float | None,
        Field(
            gt=0,
            le=MAX_HOURLY_USD,
            allow_inf_nan=False,
            description=("Most the cluster may cost per hour at full size."),
        ),
    ] = None
    max_monthly_usd: Annotated[
        float | None,
        Field(
            gt=0,
            le=MAX_MONTHLY_USD,
            allow_inf_nan=False,
            description=(
                "Most the cluster may cost per month (730 hours) at full size; also the cloud budget amount."
            ),
        ),
    ] = None
    alert_emails: Annotated[list[Email], Field(description="Addresses the cloud budget alerts go to.")] = []


class SmtpSpec(Spec):
    """The mail relay Alertmanager sends alert e-mails through."""

    smarthost: Annotated[
        str,
        Field(
            pattern=r"^[A-Za-z0-9.-]+:[0-9]{1,5}$",
            description=(
                "host:port of the SMTP relay, e.g. email-smtp.us-east-1.amazonaws.com:587 (STARTTLS)."
            ),
        ),
    ]
    sender: Annotated[Email, Field(description="The From address of alert e-mails.")]
    username: Annotated[
        str | None, Field(min_length=1, description="SMTP user name; default: no authentication.")
    ] = None
    password_secret: Annotated[
        str | None,
        Field(
            min_length=1,
            max_length=2048,
            # The characters of both stores' names and references (letters, digits, /_+=.@- and an ARN's
            # colons): never a wildcard, which the host's policy would turn into read access to many
            # secrets. Each cloud's own form is checked by its profile (rule BP154).
            pattern=r"^[A-Za-z0-9/_+=.@:-]+$",
            description=(
                "The SMTP password's secret: an AWS Secrets Manager secret name or full ARN, a GCP "
                "Secret Manager secret name or projects/PROJECT/secrets/NAME, or an Azure Key Vault "
                "secret's resource id; never a wildcard. The monitoring host may read this secret and no "
                "other."
            ),
        ),
    ] = None


class MonitoringSpec(Spec):
    """GPU observability: Prometheus, Alertmanager and Grafana for the cluster."""

    kind: Annotated[
        Literal["none", "prometheus"],
        Field(
            description=(
                "prometheus runs Prometheus (discovering the nodes by the cluster's tags or labels), "
                "Alertmanager and Grafana on the Slurm controller, or on a small monitoring node of its own; "
                "none (default) runs nothing."
            )
        ),
    ] = "none"
    retention_days: Annotated[
        int, Field(ge=1, le=3650, description="How many days Prometheus keeps samples (default 30).")
    ] = 30
    alert_emails: Annotated[
        list[Email] | None,
        Field(description="Addresses alert e-mails go to; default: budget.alert_emails."),
    ] = None
    smtp: Annotated[
        SmtpSpec | None,
        Field(description="The mail relay alert e-mails go through; without it alerts are not e-mailed."),
    ] = None
    machine_type: Annotated[
        str | None,
        Field(
            min_length=1,
            description=(
                "Machine type of the monitoring node (when there is no Slurm controller); default: the "
                "catalog's, m7i.large (AWS) or e2-standard-2 (GCP)."
            ),
        ),
    ] = None
    disk_gib: Annotated[
        int | None,
        Field(
            ge=20,
            le=16384,
            description=(
                "Size of the monitoring host's encrypted disk in GiB; default: sized for the retention and "
                "the cluster's largest size."
            ),
        ),
    ] = None


class Blueprint(Spec):
    """A cluster blueprint."""

    version: Annotated[Literal[1], Field(description="Blueprint language version.")]
    name: Annotated[
        str,
        Field(
            pattern=CLUSTER_NAME_PATTERN,
            description=(
                "Cluster name: lowercase letters, digits and hyphens, 2-31 characters; prefix of every "
                "resource name."
            ),
        ),
    ]
    cloud: CloudName
    region: Annotated[
        str,
        Field(
            pattern=r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$",
            description=("Cloud region, e.g. us-east-1, us-central1 or southcentralus."),
        ),
    ]
    zone: Annotated[
        str,
        Field(
            pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$",
            description=(
                "The one zone of the cluster (fabrics and compact placement are single-zone). AWS: a zone "
                "name (us-east-1a) or, better, a zone id (use1-az6), which is the same in every account. "
                'Azure: the zone\'s number in the region ("1").'
            ),
        ),
    ]
    project: Annotated[
        str | None,
        Field(
            pattern=r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$",
            description=("GCP only: the project id; default the Pulumi config gcp:project."),
        ),
    ] = None
    labels: Annotated[
        dict[str, str],
        Field(
            description=(
                "Added to every resource as tags (AWS) or labels (GCP). Keys starting with clusterfab- or "
                "clusterfab: (clusterfab's own tags) or aws:, and the key Name, are reserved."
            )
        ),
    ] = {}
    bucket_kms_key: Annotated[
        KmsKey | None,
        Field(
            description=(
                "Customer-managed key of the cluster bucket (node bootstrap files, health records); default "
                f"the cloud's own key. {KEY_FORMS}. AWS: the cluster's roles may decrypt with it through "
                "S3; people who run `clusterfab configure` or read health records need kms:Decrypt and "
                "kms:GenerateDataKey on it. GCP: the Cloud Storage service agent needs "
                "roles/cloudkms.cryptoKeyEncrypterDecrypter on it."
            )
        ),
    ] = None
    network: Annotated[
        NetworkSpec, Field(description="Address range of the cluster network and who may reach nodes by SSH.")
    ] = NetworkSpec.model_construct()
    node_groups: Annotated[list[NodeGroupSpec], Field(description="GPU node groups.")] = []
    tpu_slices: Annotated[list[TpuSliceSpec], Field(description="TPU slices (GCP).")] = []
    storage: Annotated[list[StorageSpec], Field(description="Shared file systems.")] = []
    software: Annotated[SoftwareSpec, Field(description="NVIDIA software versions on GPU nodes.")] = (
        SoftwareSpec.model_construct()
    )
    budget: Annotated[BudgetSpec | None, Field(description="Spending limits and alerts.")] = None
    monitoring: Annotated[
        MonitoringSpec | None,
        Field(description="Prometheus, alert rules and Grafana dashboards for the cluster."),
    ] = None
    scheduler: Annotated[
        SchedulerSpec | None, Field(description="The workload scheduler (Slurm) of the cluster.")
    ] = None
    teams: Annotated[
        list[TeamSpec],
        Field(description="Teams with GPU quotas (Slurm accounts and QOS); needs a scheduler."),
    ] = []
    environments: Annotated[
        dict[EnvironmentName, dict[str, Any]],
        Field(
            description=(
                "Per-environment overlays (e.g. dev, prod): partial blueprints deep-merged over the base; "
                "node_groups, tpu_slices and storage items, and teams, merge by name."
            )
        ),
    ] = {}

    def named_items(self) -> list[tuple[str, int, NodeGroupSpec | TpuSliceSpec | LustreSpec | FilestoreSpec]]:
        """Every named item as (list name, index, item), in document order."""
        items: list[tuple[str, int, NodeGroupSpec | TpuSliceSpec | LustreSpec | FilestoreSpec]] = []
        items += [("node_groups", i, g) for i, g in enumerate(self.node_groups)]
        items += [("tpu_slices", i, s) for i, s in enumerate(self.tpu_slices)]
        items += [("storage", i, s) for i, s in enumerate(self.storage)]
        return items
