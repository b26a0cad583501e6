"""The blueprint's workload scheduler (`scheduler`) and the teams whose GPU quotas it enforces (`teams`).

`scheduler.kind` names a registered scheduler (clusterfab.core.plugins: the built-in ones and those a
package registers at run time) or `none`. The section's fields are those of the built-in scheduler,
Slurm: its controller, login nodes, accounting, containers, partitions and elastic nodes.
"""

# No `from __future__ import annotations`: pydantic evaluates every field's annotation when a model class
# is created (see models.py).
from collections.abc import Iterator, Sequence
from typing import Annotated, Any, Literal

from pydantic import Field, PlainValidator, WithJsonSchema
from pydantic_core import PydanticCustomError

from clusterfab.blueprint.fields import KEY_FORMS, Cidr, ItemName, KmsKey, Spec, TeamUser
from clusterfab.core.findings import FieldPath
from clusterfab.core.plugins import BUILTIN_SCHEDULERS, NO_SCHEDULER, schedulers

SLURM_TIME_PATTERN = r"^(UNLIMITED|\d+|\d+:\d{2}|\d+:\d{2}:\d{2}|\d+-\d+|\d+-\d+:\d{2}|\d+-\d+:\d{2}:\d{2})$"
SlurmTime = Annotated[
    str,
    Field(
        pattern=SLURM_TIME_PATTERN,
        description="A Slurm time: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS or UNLIMITED.",
    ),
]


def _scheduler_kind(value: Any) -> str:
    """`none` or a registered scheduler's kind, refused as a Literal of them is (the same error, so the
    same finding and did-you-mean)."""
    kinds = [NO_SCHEDULER, *schedulers()]
    if isinstance(value, str) and value in kinds:
        return value
    quoted = [repr(kind) for kind in kinds]
    expected = quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"
    raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": expected})


SchedulerKind = Annotated[
    str,
    PlainValidator(_scheduler_kind),
    # The published schema names the built-in kinds; one registered at run time is valid all the same.
    WithJsonSchema({"enum": [NO_SCHEDULER, *BUILTIN_SCHEDULERS], "type": "string"}),
]


class SchedulerMachineSpec(Spec):
    """The Slurm controller's machine."""

    machine_type: Annotated[
        str | None,
        Field(
            min_length=1,
            description=(
                "Machine type of the controller; default: the catalog's, c7i.4xlarge (AWS) or e2-standard-8 "
                "(GCP)."
            ),
        ),
    ] = None
    state_disk_gib: Annotated[
        int,
        Field(
            ge=20,
            le=16384,
            description=(
                "Size of the controller's encrypted state disk in GiB (slurmctld state, the accounting "
                "database); protected like the cluster's other stateful resources."
            ),
        ),
    ] = 100
    kms_key: Annotated[
        KmsKey | None,
        Field(
            description=(
                "Customer-managed key of the controller's disks (its state disk and boot disk); default the "
                f"cloud's own key. {KEY_FORMS}. Changing it replaces the state disk."
            )
        ),
    ] = None


class AccountingDatabaseSpec(Spec):
    """The managed accounting database (`accounting: managed`)."""

    machine_type: Annotated[
        str | None,
        Field(
            pattern=r"^(db(\.[a-z0-9]+\.[a-z0-9]+|-[a-z0-9]+(-[a-z0-9]+)*)|Standard_[A-Z][A-Za-z0-9]*(_v[0-9]+)?)$",
            description=(
                "Machine of the database: an RDS instance class on AWS, e.g. db.r7g.xlarge (default "
                "db.m7g.large), a Cloud SQL Enterprise machine type on GCP, e.g. db-custom-4-16384 (default "
                "db-custom-2-8192), an Azure Database for MySQL flexible server SKU on Azure, e.g. "
                "Standard_E4ads_v5 (default Standard_D2ads_v5); 2 vCPUs and 8 GiB by default: SchedMD asks "
                "for a buffer pool that holds the job tables."
            ),
        ),
    ] = None
    storage_gib: Annotated[
        int | None,
        Field(
            ge=20,
            le=16384,
            description=(
                "Allocated storage in GiB (RDS and Cloud SQL grow it up to 4 times on their own, Azure "
                "Database for MySQL as it fills); default 50."
            ),
        ),
    ] = None
    backup_days: Annotated[
        int,
        Field(
            ge=1,
            le=35,
            description="Days of daily backups the service keeps (point-in-time restore); default 7.",
        ),
    ] = 7


class LoginSpec(Spec):
    """The login nodes users submit jobs from."""

    machine_type: Annotated[
        str | None,
        Field(
            min_length=1,
            description="Machine type of the login nodes; default: c7i.2xlarge (AWS) or e2-standard-4 (GCP).",
        ),
    ] = None
    count: Annotated[
        int,
        Field(ge=0, le=16, description="How many login nodes (0: none; users submit from the controller)."),
    ] = 1


class PartitionSpec(Spec):
    """A Slurm partition (queue) over one or more node groups."""

    name: Annotated[
        ItemName, Field(description="Partition name, e.g. train; what users pass to `sbatch -p`.")
    ]
    node_groups: Annotated[
        list[ItemName], Field(min_length=1, description="Names of the node groups whose nodes it holds.")
    ]
    default: Annotated[
        bool, Field(description="The partition jobs go to without `-p` (at most one; default: the first).")
    ] = False
    max_time: Annotated[
        SlurmTime | None,
        Field(description="Longest run time of a job in it, e.g. 7-00:00:00; default: no limit."),
    ] = None
    default_time: Annotated[
        SlurmTime,
        Field(
            description=(
                "Time limit of a job submitted without `--time` (default 01:00:00): a team with a monthly "
                "GPU-hour budget can only start jobs whose limit fits in what is left of it."
            )
        ),
    ] = "01:00:00"
    exclusive: Annotated[
        bool,
        Field(
            description=(
                "Whole nodes per job (default true, as distributed training wants); false lets small jobs "
                "share a node's GPUs, each charged only the GPUs it asked for."
            )
        ),
    ] = True


class ElasticSpec(Spec):
    """How Slurm grows and shrinks elastic node groups (those with `autoscaling`)."""

    idle_minutes: Annotated[
        int,
        Field(
            ge=1,
            le=10080,
            description=(
                "Minutes an elastic node may sit idle before Slurm deletes its instance (SuspendTime); "
                "default 10, ParallelCluster's ScaledownIdletime default."
            ),
        ),
    ] = 10
    resume_timeout_minutes: Annotated[
        int,
        Field(
            ge=5,
            le=180,
            description=(
                "Minutes from a node's creation until its slurmd must have registered (ResumeTimeout): a "
                "GPU node boots, installs its driver stack and joins within it, or Slurm gives up on it "
                "and requeues the job; default 30, ParallelCluster's compute-node bootstrap timeout."
            ),
        ),
    ] = 30
    flex_start_wait_minutes: Annotated[
        int,
        Field(
            ge=30,
            le=1080,
            description=(
                "Minutes a flex-start elastic node may wait for Dynamic Workload Scheduler capacity and boot "
                "(its partitions' ResumeTimeout); past it the request is withdrawn and the job requeued to "
                "ask again. Default 240; at most 1080 (Slurm refuses a ResumeTimeout over 65,535 s)."
            ),
        ),
    ] = 240


class SystemNodesSpec(Spec):
    """The nodes of a Kubernetes cluster's system pods."""

    machine_type: Annotated[
        str | None,
        Field(
            min_length=1,
            description="Machine type; default the catalog's, e2-standard-8 (GKE) or c7i.2xlarge (EKS).",
        ),
    ] = None
    count: Annotated[
        int,
        Field(
            ge=1, le=10, description="Nodes, spread over the zone's nodes; default 2, so one can be replaced."
        ),
    ] = 2


class SchedulerSpec(Spec):
    """The workload scheduler of the cluster."""

    kind: Annotated[
        SchedulerKind,
        Field(
            description=(
                "slurm runs a Slurm controller, login nodes and slurmd on every GPU node; kubernetes a "
                "managed Kubernetes cluster (GKE on GCP, EKS on AWS) with a node pool per node group and TPU "
                "slice; none (default)."
            )
        ),
    ] = "none"
    version: Annotated[
        str | None,
        Field(
            pattern=r"^1\.[0-9]{2}$",
            description=(
                "kubernetes: the control plane's minor version, e.g. 1.35; default the catalog's (GKE's "
                "Regular channel default, EKS's newest in standard support)."
            ),
        ),
    ] = None
    api_access_cidrs: Annotated[
        list[Cidr],
        Field(
            description=(
                "kubernetes: CIDRs allowed to reach the API server's endpoint from outside the cluster's "
                "network (EKS's public endpoint, GKE's authorized networks). Default none: the endpoint is "
                "private (GKE's IAM-authenticated DNS endpoint stays reachable for `up` and kubectl)."
            )
        ),
    ] = []
    system_nodes: Annotated[
        SystemNodesSpec,
        Field(
            description="kubernetes: the node pool that runs the cluster's own pods (DNS, device plugins)."
        ),
    ] = SystemNodesSpec.model_construct()
    controller: Annotated[
        SchedulerMachineSpec, Field(description="The controller (slurmctld, slurmdbd) and its state disk.")
    ] = SchedulerMachineSpec.model_construct()
    login: Annotated[LoginSpec, Field(description="Login nodes.")] = LoginSpec.model_construct()
    accounting: Annotated[
        Literal["embedded", "managed"],
        Field(
            description=(
                "embedded runs MariaDB on the controller's state disk; managed keeps it in RDS for MariaDB "
                "(AWS; its master password in the secret RDS manages), Cloud SQL for MySQL (GCP; private "
                "IP only) or Azure Database for MySQL flexible server (Azure; in a subnet delegated to it, "
                "its administrator password made by the controller), TLS only each way."
            )
        ),
    ] = "embedded"
    database: Annotated[
        AccountingDatabaseSpec,
        Field(description="The managed accounting database's size and backups (`accounting: managed`)."),
    ] = AccountingDatabaseSpec.model_construct()
    containers: Annotated[
        Literal["pyxis", "none"],
        Field(
            description="pyxis: enroot and NVIDIA's pyxis SPANK plugin, built on the nodes from "
            "checksum-pinned releases, so that `srun --container-image=nvcr.io#nvidia/pytorch:<tag>` "
            "runs a job step in a container (with the job's GPUs). none (default): jobs run on the "
            "node's own software."
        ),
    ] = "none"
    partitions: Annotated[
        list[PartitionSpec] | None,
        Field(
            description="Partitions; default: one per node group, named after it, the first one the default."
        ),
    ] = None
    elastic: Annotated[
        ElasticSpec,
        Field(
            description=(
                "Elastic node groups: a group with `autoscaling: {min, max}` keeps `min` nodes up and lets "
                "Slurm create up to `max - min` more for queued jobs, deleting them after `idle_minutes`."
            )
        ),
    ] = ElasticSpec.model_construct()

    def scheduled_groups(self, groups: Sequence[str]) -> set[str]:
        """Of the node groups named `groups`, those the scheduler schedules on: the ones in a partition,
        every one without `partitions`."""
        if self.partitions is None:
            return set(groups)
        return {name for partition in self.partitions for name in partition.node_groups}

    def kms_keys(self) -> Iterator[tuple[FieldPath, str, bool]]:
        """The customer-managed keys the section names: (where, the key, whether a disk uses it)."""
        if self.controller.kms_key is not None:
            yield ("scheduler", "controller", "kms_key"), self.controller.kms_key, True


class TeamSpec(Spec):
    """A team with a GPU quota: a Slurm account with its own QOS."""

    name: Annotated[
        ItemName,
        Field(description="Team name; becomes the Slurm account and QOS name, or the Kubernetes namespace."),
    ]
    max_gpus: Annotated[
        int, Field(ge=1, le=1_000_000, description="Most GPUs the team's running jobs may hold at once.")
    ]
    gpu_hours_per_month: Annotated[
        int | None,
        Field(
            ge=1,
            le=1_000_000_000,
            description=(
                "GPU-hours the team may use per calendar month (a GrpTRESMins limit reset monthly); "
                "default: no limit."
            ),
        ),
    ] = None
    priority: Annotated[
        Literal["low", "normal", "high"],
        Field(description="Scheduling priority; a higher team's jobs preempt (requeue) a lower team's."),
    ] = "normal"
    users: Annotated[
        list[TeamUser],
        Field(
            description=(
                "The team's members: Unix user names on Slurm; on Kubernetes the names the cluster "
                "authenticates (EKS access entries' usernames, Google accounts' e-mail addresses on GKE)."
            )
        ),
    ] = []
