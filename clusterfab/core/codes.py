"""The registry of finding codes.

Codes are stable: tools, suppressions and CI scripts refer to them. BP0xx are parse and schema
problems, BP1xx semantic rules (no catalog needed), BP2xx catalog rules, BP4xx cost and policy.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterfab.core.findings import Severity


@dataclass(frozen=True, slots=True)
class Code:
    """What a finding code means."""

    code: str
    title: str
    severity: Severity
    explanation: str


_E, _W, _I = Severity.ERROR, Severity.WARNING, Severity.INFO

_CODES = [
    Code(
        "BP001",
        "file is not a readable blueprint",
        _E,
        "The file is empty, binary, not UTF-8, or larger than a blueprint can be.",
    ),
    Code("BP002", "YAML syntax error", _E, "The file is not valid YAML."),
    Code(
        "BP003",
        "duplicate key",
        _E,
        "A mapping names the same key twice; YAML parsers silently keep one of them.",
    ),
    Code(
        "BP004",
        "unsupported YAML construct",
        _E,
        "Custom tags, several documents in one file, and alias expansions beyond a sane size.",
    ),
    Code("BP005", "unknown field", _E, "The blueprint language has no such field here."),
    Code("BP006", "missing required field", _E, "A required field is not set."),
    Code("BP007", "value not allowed", _E, "The value is not one of the field's choices."),
    Code("BP008", "wrong type", _E, "The value has the wrong type (e.g. a list where a mapping belongs)."),
    Code("BP009", "invalid value", _E, "The value is out of range or not in the expected format."),
    Code(
        "BP010",
        "template syntax or control character in text",
        _E,
        "Blueprint text is data: no string may hold template syntax ({{, {%, {#), which Ansible and Jinja2 "
        "would run on the hosts, or control and invisible formatting characters (line breaks, escapes, "
        "bidirectional overrides), which would forge lines in rendered files, comments and terminals.",
    ),
    Code(
        "BP101",
        "duplicate name",
        _E,
        "Names must be unique across node_groups, tpu_slices and storage: they name resources.",
    ),
    Code(
        "BP102",
        "attach names unknown storage",
        _E,
        "`attach` lists storage names; each must be defined under `storage`.",
    ),
    Code(
        "BP103",
        "environment overlay names an unknown item",
        _E,
        "Overlays merge list items by name; a name the base blueprint lacks is almost always a typo.",
    ),
    Code("BP104", "invalid TPU topology", _E, "The topology is not one the TPU generation offers."),
    Code(
        "BP105",
        "reservation id missing",
        _E,
        "capacity kinds reservation and capacity_block consume an existing reservation.",
    ),
    Code(
        "BP106",
        "capacity block with autoscaling",
        _E,
        "A capacity block reserves a fixed number of instances for a fixed time: use `count`.",
    ),
    Code(
        "BP107",
        "flex-start with a reservation",
        _E,
        "Flex-start (DWS) obtains capacity on demand and cannot consume a reservation.",
    ),
    Code(
        "BP108",
        "node group size",
        _E,
        "A node group sets exactly one of `count` and `autoscaling`, with min <= max.",
    ),
    Code(
        "BP109",
        "run duration",
        _E,
        "flex_start needs max_run_duration_hours; other capacity kinds do not take it.",
    ),
    Code(
        "BP110",
        "field does not apply to this cloud",
        _E,
        "Some fields exist for one cloud only (project on GCP, import_path on AWS, ...).",
    ),
    Code(
        "BP111",
        "SSH open to the internet",
        _E,
        "ssh_ingress_cidrs allows a public range wider than a /24 (IPv6 /48); use SSM (AWS) or IAP (GCP) "
        "or a narrow range. The policy pack (clusterfab-no-ssh-rdp-from-internet) refuses the same plan.",
    ),
    Code(
        "BP112",
        "network range",
        _E,
        "The cluster network must be a private IPv4 range large enough for its subnets.",
    ),
    Code("BP113", "mount point", _E, "Each storage needs its own absolute mount point."),
    Code(
        "BP114",
        "invalid label",
        _E,
        "Labels must satisfy the cloud's rules: on GCP lowercase letters, digits, _ and - (keys start with "
        "a letter), at most 63 characters; on AWS letters, digits, spaces and + - = . _ : / @, keys of 1-128 "
        "and values of at most 256 characters.",
    ),
    Code(
        "BP115",
        "reservation id format",
        _E,
        "AWS reservation ids look like cr-0123456789abcdef0; GCP reservations are names or paths.",
    ),
    Code(
        "BP116",
        "environment changes a fixed field",
        _E,
        "An environment overlay cannot change `cloud` or `version`, or nest `environments`.",
    ),
    Code("BP117", "nothing to provision", _W, "The blueprint has no node groups and no TPU slices."),
    Code(
        "BP118",
        "export without an S3 link",
        _E,
        "export_changes writes back to the file system's import_path, which is not set.",
    ),
    Code(
        "BP119",
        "reservation without a reservation kind",
        _E,
        "A reservation id is only used by capacity kinds reservation and capacity_block.",
    ),
    Code(
        "BP120",
        "flex-start with autoscaling",
        _E,
        "Flex-start VMs arrive all at once in a fixed-size group; use `count`, or let Slurm ask for each "
        "job's nodes (elastic nodes of a group in a Slurm partition).",
    ),
    Code(
        "BP121",
        "partition names an unknown node group",
        _E,
        "A partition holds node groups by name; the name matches no node group of the blueprint.",
    ),
    Code("BP122", "duplicate partition name", _E, "Two partitions have the same name; Slurm keeps one."),
    Code(
        "BP123",
        "several default partitions",
        _E,
        "Jobs submitted without `-p` go to the one default partition; only one may say `default: true`.",
    ),
    Code(
        "BP124",
        "team quota above the cluster's GPUs",
        _W,
        "A team's max_gpus is more than every node group together has at its largest size: the limit "
        "never binds and is probably a typo.",
    ),
    Code(
        "BP125",
        "teams without a scheduler",
        _E,
        "Team quotas are Slurm accounts and QOS; without `scheduler: {kind: slurm}` nothing enforces them.",
    ),
    Code(
        "BP126",
        "monthly GPU-hours a team cannot use",
        _W,
        "gpu_hours_per_month is more than max_gpus GPUs running every hour of a 31-day month: the "
        "budget never binds.",
    ),
    Code(
        "BP127", "duplicate team name", _E, "Two teams have the same name: they would be one Slurm account."
    ),
    Code(
        "BP128",
        "reserved team name",
        _E,
        "`root` is Slurm's top account and `normal` its default QOS: a team cannot take either name.",
    ),
    Code(
        "BP129",
        "elastic Slurm node group on a reservation",
        _W,
        "Under Slurm an autoscaled group's nodes above `min` are created for queued jobs and deleted when "
        "idle; on a reservation (billed whether used or not) that saves nothing and delays jobs.",
    ),
    Code(
        "BP130",
        "Slurm without GPU nodes to schedule",
        _E,
        "Slurm needs at least one node group in a partition; TPU slices are not Slurm nodes.",
    ),
    Code(
        "BP131",
        "node group in no partition",
        _W,
        "Slurm knows only the nodes of its partitions; this group's nodes run but no job reaches them.",
    ),
    Code(
        "BP132",
        "scheduler setting without a scheduler",
        _W,
        "The setting has no effect with scheduler.kind none.",
    ),
    Code(
        "BP134",
        "user in several teams",
        _I,
        "A user in several teams submits to the first one unless the job names another with `--account`.",
    ),
    Code(
        "BP135",
        "production-like environment without protection",
        _W,
        "An environment named like production (prod-eu, production) protects nothing unless it says "
        "`protected: true`; only `prod` is protected by default.",
    ),
    Code(
        "BP136",
        "empty list in an environment overlay",
        _E,
        "Overlay lists of named items merge by name, so an empty one changes nothing; `null` removes.",
    ),
    Code(
        "BP138",
        "invalid customer-managed key",
        _E,
        "A `kms_key` must name a key of the blueprint's cloud where its resource can use it: an AWS KMS "
        "key ARN (not an alias: the providers read the key's ARN back, and would replace volumes over the "
        "difference) in the blueprint's region; a GCP Cloud KMS key (not a key version) in the blueprint's "
        "region, or global for disks.",
    ),
    Code(
        "BP139",
        "database setting without managed accounting",
        _W,
        "scheduler.database has no effect with accounting: embedded.",
    ),
    Code(
        "BP140",
        "database machine of another cloud",
        _E,
        "scheduler.database.machine_type names an RDS instance class (db.<family>.<size>) on AWS and a "
        "Cloud SQL machine type (db-custom-<vCPUs>-<MiB>, db-n1-standard-<vCPUs>, ...) on GCP.",
    ),
    Code(
        "BP141",
        "jobs outlive their flex-start VMs",
        _W,
        "A Slurm partition of a flex-start node group lets jobs run longer than the VMs' run duration (less "
        "the 10 minutes before a VM's end when its node takes no job); Compute Engine deletes the VMs then.",
    ),
    Code(
        "BP142",
        "reserved label key",
        _E,
        "Label keys starting with clusterfab- or clusterfab: (any case) are clusterfab's own tags, which the "
        "node sync, the inventory and the cost policy find instances by; aws: is reserved by AWS, and Name "
        "names a resource. A label with such a key would land on every resource of the cluster.",
    ),
    Code(
        "BP143",
        "system account as a team user",
        _E,
        "Team users become Linux users with a private group of the same name on every host: a name the "
        "images or the installed packages already have (root, slurm, munge, ubuntu, sudo, systemd-*, "
        "nvidia-*, ...) would take over that account or group, or break the service that runs as it.",
    ),
    Code(
        "BP144",
        "reserved name",
        _E,
        "Some names are Slurm's or the stack's own: a partition named default is Slurm's template line "
        "(PartitionName=DEFAULT), a node group named root is topology.conf's top switch, and on GCP a node "
        "group or TPU slice named like the stack's own resources (controller, login, slurm, mon, monitoring, "
        "sync) would share their service account or VM names.",
    ),
    Code(
        "BP145",
        "team user is not a Unix name",
        _E,
        "Slurm's users are accounts on the hosts, so a team user of a Slurm cluster is a Unix login name "
        "(lower case, at most 32 characters); e-mail addresses name Google accounts on GKE clusters.",
    ),
    Code(
        "BP170",
        "Slurm setting on a Kubernetes cluster",
        _E,
        "A Kubernetes cluster has no Slurm controller, login nodes, accounting, pyxis, partitions or "
        "elastic settings: its control plane is the cloud's managed service and its queues are Kueue's.",
    ),
    Code(
        "BP171",
        "Kubernetes setting on another scheduler",
        _W,
        "scheduler.version, api_access_cidrs and system_nodes describe a Kubernetes control plane and "
        "its system node pool; another scheduler ignores them.",
    ),
    Code(
        "BP172",
        "no managed Kubernetes on the cloud",
        _E,
        "clusterfab builds Kubernetes clusters as GKE (GCP) and EKS (AWS) clusters.",
    ),
    Code(
        "BP173",
        "Kubernetes version not offered",
        _E,
        "The control plane's minor version must be one the cloud's managed service offers a new cluster "
        "(the catalog records them with the end of their support).",
    ),
    Code(
        "BP174",
        "Kubernetes version at the end of its support",
        _W,
        "Past a version's standard support GKE upgrades the cluster on its own (an error) and EKS moves it "
        "to extended support at a higher fee per cluster hour; within 30 days of the end it is a warning.",
    ),
    Code(
        "BP175",
        "unknown system node machine",
        _E,
        "The system node pool's machine must be one the catalog knows (and prices) on the cloud.",
    ),
    Code(
        "BP176",
        "Kubernetes API open to the internet",
        _E,
        "The API server's endpoint is private by default; scheduler.api_access_cidrs lets listed ranges "
        "in, and a range wider than a /8 (0.0.0.0/0 above all) lets nearly anyone try its authentication.",
    ),
    Code(
        "BP177",
        "machine without a Kubernetes node image",
        _E,
        "A node pool's GPU machines run one of the service's accelerated node images: EKS's AL2023 NVIDIA "
        "AMIs (x86_64, and ARM for Grace machines) and GKE's image of its GPU node pools; the catalog "
        "records the machine families each runs (Kubernetes facts).",
    ),
    Code(
        "BP178",
        "multislice of single-host TPU slices on GKE",
        _E,
        "GKE joins only multi-host TPU slice node pools into a multislice (a v5p 2x2x1 or v6e 2x2 slice is "
        "one host); all slices share one TPU type and topology.",
    ),
    Code(
        "BP179",
        "flex-start node pool with a minimum size",
        _E,
        "GKE buys flex-start for a node pool as queued provisioning: the pool starts empty and gets all of a "
        "queued workload's nodes at once, so its autoscaling minimum is 0.",
    ),
    Code(
        "BP180",
        "flex-start node pool with compact placement",
        _E,
        "A GKE queued provisioning node pool of GPUs takes no compact placement policy.",
    ),
    Code(
        "BP181",
        "autoscaled node pool on a reservation",
        _W,
        "A reservation is billed whether its instances run or not: a node pool that the cluster autoscaler "
        "shrinks on reserved capacity saves nothing and makes the next pod wait for a node to boot.",
    ),
    Code(
        "BP182",
        "autoscaled node group without an autoscaler",
        _W,
        "EKS managed node groups keep their desired size: only a cluster autoscaler (Cluster Autoscaler, "
        "Karpenter) running in the cluster resizes them, and clusterfab installs none yet. GKE's node pools "
        "resize themselves.",
    ),
    Code(
        "BP150",
        "alerts go to nobody",
        _W,
        "Monitoring is on but neither monitoring.alert_emails nor budget.alert_emails names a recipient.",
    ),
    Code(
        "BP151",
        "alert e-mails without a mail relay",
        _W,
        "Alertmanager sends e-mail only through monitoring.smtp; without it alerts show only in Grafana.",
    ),
    Code(
        "BP152",
        "monitoring setting without monitoring",
        _W,
        "With monitoring.kind none the other monitoring fields have no effect.",
    ),
    Code(
        "BP153",
        "monitoring disk too small for the retention",
        _W,
        "Prometheus needs retention x samples per second x bytes per sample of disk; it deletes old "
        "data early.",
    ),
    Code(
        "BP154",
        "SMTP secret the cloud's secret store cannot name",
        _E,
        "monitoring.smtp.password_secret names one secret of the blueprint's cloud: an AWS Secrets Manager "
        "name (1-512 letters, digits and /_+=.@-) or full ARN in the blueprint's region, or a GCP Secret "
        "Manager name (1-255 letters, digits, - and _) or projects/PROJECT/secrets/NAME, or an Azure Key "
        "Vault secret's resource id (.../providers/Microsoft.KeyVault/vaults/VAULT/secrets/NAME). The "
        "monitoring host's role may read exactly that secret, so a wildcard or a pattern would read many.",
    ),
    Code(
        "BP155",
        "unprotected storage in a protected environment",
        _E,
        "An environment that protects its stateful resources (prod by default, or `protected: true`) "
        "keeps every file system protected; the policy pack (clusterfab-protect-stateful) refuses a plan "
        "with one that is not.",
    ),
    Code(
        "BP160",
        "capacity block has ended",
        _E,
        "A capacity block's `ends_at` is past: EC2 has terminated its instances and launches none into it "
        "any more, so its node group cannot run.",
    ),
    Code(
        "BP161",
        "capacity block ends soon",
        _W,
        "A capacity block ends within two weeks: EC2 terminates its instances 30 minutes before the end, "
        "whatever runs on them; an extension is bought before then (AWS gives no notice but an event 40 "
        "minutes ahead).",
    ),
    Code(
        "BP162",
        "capacity block without an end",
        _W,
        "Without `ends_at` a capacity block is priced as if it ran every month forever, nothing warns "
        "before it ends, and Slurm starts jobs on its nodes that its end will kill.",
    ),
    Code(
        "BP163",
        "end time on capacity without one",
        _E,
        "`capacity.ends_at` is the end of a capacity block; other capacity kinds have none clusterfab "
        "tracks.",
    ),
    Code(
        "BP164",
        "capacity block resized",
        _W,
        "A capacity block is bought for a number of instances: a node group on the same block with another "
        "count launches instances the block does not hold (they fail) or pays for instances it never runs.",
    ),
    Code(
        "BP165",
        "another capacity block with the base's end",
        _W,
        "An environment that consumes another capacity block (its own reservation) but not its own "
        "`ends_at` inherits the end of the base's block.",
    ),
    Code(
        "BP166",
        "accelerators given up by a replacement",
        _W,
        "`clusterfab diff`: the change replaces the instance group, node pool or TPU request that holds a "
        "node group's GPUs or a TPU slice's chips. They are released while it is recreated; a reservation "
        "or capacity block keeps them, on-demand and spot capacity may not come back, and a queued request "
        "(a TPU queued resource, flex-start) is queued again with no guarantee of when it is granted.",
    ),
    Code(
        "BP167",
        "machine type changed on held capacity",
        _W,
        "`clusterfab diff`: a node group keeps its reservation or capacity block but changes its machine "
        "type. A reservation or block holds the machine type it was made for: nodes of the new type "
        "cannot use it.",
    ),
    Code("BP201", "unknown machine type", _E, "The machine type is not in the catalog for this cloud."),
    Code(
        "BP202",
        "machine type not offered in the zone",
        _E,
        "The catalog does not list the zone among the machine type's locations.",
    ),
    Code("BP203", "zone and region", _E, "The zone is unknown or not in the blueprint's region."),
    Code(
        "BP204", "fabric not available", _E, "The requested fabric is not the machine type's native fabric."
    ),
    Code(
        "BP205",
        "compact placement limit",
        _E,
        "Compact placement caps the number of VMs (per max distance) a group can hold.",
    ),
    Code(
        "BP206",
        "capacity kind not offered",
        _E,
        "The machine type or TPU is not sold with this capacity kind.",
    ),
    Code(
        "BP207",
        "TPU generation not offered in the zone",
        _E,
        "The catalog does not list the zone for the TPU generation.",
    ),
    Code(
        "BP208",
        "storage capacity off the grid",
        _E,
        "Storage capacity must lie within the tier's range and on its step grid.",
    ),
    Code(
        "BP209", "throughput not offered", _E, "The per-TiB throughput must be one the storage tier offers."
    ),
    Code(
        "BP210",
        "storage kind not available on this cloud",
        _E,
        "e.g. Filestore exists only on GCP; use lustre on AWS.",
    ),
    Code(
        "BP211",
        "driver too old for the GPU",
        _E,
        "The NVIDIA driver is older than the oldest one that supports the GPU.",
    ),
    Code(
        "BP212",
        "driver too old for CUDA",
        _E,
        "The NVIDIA driver is older than the CUDA toolkit's minimum driver.",
    ),
    Code("BP213", "NCCL too old for the fabric", _E, "The fabric's NCCL plugin needs a newer NCCL."),
    Code("BP214", "version not in the catalog", _W, "The catalog cannot check a version it does not know."),
    Code(
        "BP215",
        "fabric without compact placement",
        _W,
        "A multi-node group on a high-speed fabric loses bandwidth without compact placement.",
    ),
    Code("BP216", "capacity block size", _W, "A capacity block holds up to 64 instances."),
    Code(
        "BP217",
        "not in the catalog",
        _E,
        "The TPU generation or storage tier is not one the catalog knows for this cloud.",
    ),
    Code(
        "BP218",
        "CUDA too old for the GPU",
        _E,
        "The CUDA toolkit is older than the first release that supports the GPU.",
    ),
    Code(
        "BP219",
        "placement group on reserved capacity",
        _W,
        "A new placement group around reserved capacity (a capacity block, a targeted reservation) can "
        "leave part of the reservation unusable; the reservation already decides where the nodes are.",
    ),
    Code(
        "BP220",
        "EFA not offered by the storage tier",
        _E,
        "Only some file system tiers can be created EFA-enabled (FSx for Lustre: PERSISTENT_2).",
    ),
    Code(
        "BP221",
        "NCCL not built for the CUDA major",
        _E,
        "NVIDIA builds each NCCL release for particular CUDA majors (the nvidia-nccl-cu<major> wheels and "
        "the CUDA repository's libnccl2 builds); a stack asking for a build that does not exist cannot "
        "install on any node.",
    ),
    Code(
        "BP222",
        "unknown Slurm machine type",
        _E,
        "The controller or login machine type is not one the catalog knows for the blueprint's cloud.",
    ),
    Code(
        "BP223",
        "customer-managed key not offered by the storage tier",
        _E,
        "Some tiers are always encrypted with the service's own key (FSx for Lustre scratch, Filestore "
        "BASIC_HDD and BASIC_SSD).",
    ),
    Code(
        "BP224",
        "capacity block end off the hour blocks end at",
        _W,
        "Every AWS Capacity Block ends at the same time of day (11:30 UTC); an `ends_at` at another time "
        "is most likely written in another time zone.",
    ),
    Code(
        "BP225",
        "InfiniBand group split into fabric units",
        _W,
        "An Azure InfiniBand fabric is one scale set with a single placement group, of at most 100 VMs by "
        "default: a larger group becomes several scale sets, and InfiniBand does not span them (a job across "
        "two units talks over Ethernet).",
    ),
    Code(
        "BP226",
        "rack-scale group not whole racks",
        _E,
        "Azure GB200 / GB300 VMs come in NVL72 racks of 18: a group's size must be a multiple of 18.",
    ),
    Code(
        "BP227",
        "network overlaps Azure's RDMA range",
        _E,
        "Azure's InfiniBand (RDMA) network reserves 172.16.0.0/16: the cluster's network must not overlap "
        "it.",
    ),
    Code(
        "BP228",
        "no Slurm hosts on the cloud",
        _E,
        "The catalog records no Slurm controller machine for the blueprint's cloud: clusterfab does not "
        "build Slurm there yet, and the scheduler section would be dropped.",
    ),
    Code(
        "BP229",
        "no subnet for a Managed Lustre file system",
        _E,
        "Azure wants each Managed Lustre file system in a subnet of its own, at least as large as its "
        "capacity needs (/27 for 4-16 TiB up to /23 for 200-400 TiB): the file system is larger than "
        "Microsoft's table, or the cluster's network has no room left for its subnet.",
    ),
    Code(
        "BP232",
        "elastic Slurm nodes on a cloud without node programs",
        _E,
        "Slurm's elastic nodes are created and deleted by the controller's node programs (AWS, GCP and "
        "Azure today): on a cloud without them nothing would start a node a queued job is given.",
    ),
    Code(
        "BP233",
        "managed accounting without a managed database",
        _E,
        "The blueprint asks for managed Slurm accounting on a cloud where the catalog records no managed "
        "database service for it: the controller would boot without its accounting database.",
    ),
    Code(
        "BP234",
        "customer-managed key on Azure",
        _E,
        "A kms_key on an Azure blueprint: clusterfab builds no disk encryption set or customer-managed "
        "storage encryption on Azure yet, so the key would be ignored while the blueprint names it.",
    ),
    Code(
        "BP235",
        "autoscaled group on Azure",
        _E,
        "An Azure node group with autoscaling and no scheduler: nothing grows its scale sets (Slurm's resume "
        "program does, for its elastic nodes), so the group would never run more than its minimum.",
    ),
    Code(
        "BP250",
        "unknown monitoring machine type",
        _E,
        "The monitoring node's machine type is not one the catalog knows for this cloud.",
    ),
    Code(
        "BP251",
        "no monitoring host on the cloud",
        _E,
        "The monitoring stack would run on a node of its own (the cluster has no scheduler controller to "
        "host it), and the catalog records no monitoring machine for the blueprint's cloud: clusterfab does "
        "not build that node there yet, and the monitoring section would be dropped. A cluster whose "
        "scheduler has a controller (Slurm) monitors on it.",
    ),
    Code("BP401", "hourly budget exceeded", _E, "The estimated hourly cost is above budget.max_hourly_usd."),
    Code(
        "BP402",
        "monthly budget exceeded",
        _E,
        "The estimated monthly cost (730 h) is above budget.max_monthly_usd.",
    ),
    Code(
        "BP403",
        "price missing",
        _W,
        "The catalog has no price for an item in this region: it is left out of the totals.",
    ),
    Code(
        "BP404",
        "price stale or unconfirmed",
        _I,
        "A price used is older than the catalog's stale limit, or has no confirmed source.",
    ),
    Code(
        "BP410",
        "no GCP budget without a billing account",
        _W,
        "A Cloud Billing budget is created under a billing account, which the stack names in its setting "
        "clusterfab:billingAccount; a stack without it gets no budget and no budget alerts. Validating a "
        "blueprint without a stack notes what a stack needs.",
    ),
    Code(
        "BP411",
        "AWS budget counts by cost allocation tags",
        _I,
        "An AWS budget counts the cost of the resources tagged with the blueprint and the stack, once both "
        "tag keys are active cost allocation tags of the account, and only from their activation on. AWS "
        "lists a new tag key for activation up to 24 hours after a resource first carries it.",
    ),
    Code(
        "BP252",
        "Azure monitoring without the stack's subscription",
        _W,
        "Prometheus discovers an Azure cluster's nodes in one subscription, written into its configuration "
        "when the program renders it, before any resource exists: the stack names it in the azure-native "
        "provider's setting azure-native:subscriptionId, and `pulumi up` stops without it (the offline plan "
        "uses its mock subscription). Validating a blueprint without a stack notes what a stack needs.",
    ),
    Code(
        "BP253",
        "SMTP password read from the operator's Key Vault",
        _I,
        "On Azure the Slurm controller (the monitoring host) reads monitoring.smtp.password_secret with its "
        "own managed identity, which gets Key Vault Secrets User on that one secret. The vault is the "
        "operator's: it must use Azure role-based access (access policies ignore role assignments) and "
        "admit the controller subnet, or the controller stops at boot while it cannot read the password.",
    ),
    Code(
        "BP255",
        "Lustre import path the cloud cannot import from",
        _E,
        "storage[].import_path is the data set a Lustre file system imports, in its cloud's form: on AWS "
        "s3://bucket/prefix (FSx for Lustre's data repository association), on Azure a Blob container's "
        "resource id, optionally followed by /prefix (Azure Managed Lustre's blob integration).",
    ),
    Code(
        "BP256",
        "Azure Managed Lustre blob integration prerequisites",
        _I,
        "Azure Managed Lustre imports from the operator's storage account only once the HPC Cache Resource "
        "Provider holds Storage Account Contributor and Storage Blob Data Contributor on it and the account "
        "allows shared key access (the provider creates SAS tokens). A stack cannot grant these (the "
        "provider's principal has its own object id in each tenant), so `validate` says what to run; the "
        "stack makes the logging container beside the data one.",
    ),
]

CODES: dict[str, Code] = {c.code: c for c in _CODES}


def code_info(code: str) -> Code:
    """The registry entry for a code (KeyError for an unregistered code: a programming error)."""
    return CODES[code]
