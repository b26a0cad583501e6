"""The words every layer shares: clouds, capacity kinds, fabrics, and the tag / label keys.

Blueprint models, the catalog, the cloud profiles, the components and the node-side tools all speak
of these; defining them once here (at the bottom of the import graph) keeps a tag key from drifting
between the program that sets it and the inventory that filters on it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal, get_args

from clusterfab.core.plugins import BUILTIN_CLOUDS

Cloud = str
"""A cloud's name: an open set (`clusterfab.core.plugins.clouds()` lists the known ones)."""
CLOUDS: tuple[Cloud, ...] = BUILTIN_CLOUDS
"""The clouds clusterfab ships (a registered one is not among them)."""

CapacityKind = Literal["on_demand", "spot", "reservation", "capacity_block", "flex_start"]
CAPACITY_KINDS: tuple[CapacityKind, ...] = get_args(CapacityKind)

Fabric = Literal["efa", "gpudirect-tcpx", "gpudirect-tcpxo", "rdma", "infiniband"]
"""A high-speed GPU fabric a machine type attaches to."""
FabricChoice = Literal["auto", "none", "efa", "gpudirect-tcpx", "gpudirect-tcpxo", "rdma", "infiniband"]
"""What a blueprint may ask for: the machine's own fabric (auto), none, or a named one."""

Placement = Literal["compact", "none"]
StorageKind = Literal["lustre", "filestore"]
MountFsType = Literal["lustre", "nfs"]
"""How nodes mount shared storage (Filestore is NFS)."""
CpuArchitecture = Literal["x86_64", "arm64"]

# Tag (AWS) and label (GCP) keys; the characters are valid on both clouds.
BLUEPRINT_TAG = "clusterfab-blueprint"
STACK_TAG = "clusterfab-stack"
COMPONENT_TAG = "clusterfab-component"
NODE_GROUP_TAG = "clusterfab-node-group"
"""Set on GPU nodes and TPU VMs: the dynamic inventory and the cost policy select nodes by it."""
FABRIC_UNIT_TAG = "clusterfab-fabric-unit"
"""On an Azure scale set, the name of its fabric unit: a VM reads it from the instance metadata service (a
scale set's VMs carry its tags) and claims a free Slurm node of that unit (the nodes' feature)."""
SLURM_ROLE_TAG = "clusterfab-slurm-role"
"""On the Slurm controller and login instances: `controller` or `login` (what the instance is for)."""
SLURM_NODE_TAG = "clusterfab-slurm-node"
"""On a GPU instance of a Slurm cluster: the node name the controller gave it (its slurmd runs as it)."""
SLURM_ELASTIC_TAG = "clusterfab-slurm-elastic"
"""On an instance that Slurm's resume program created for an elastic node (value `true`): no Pulumi
resource owns it, so the reconcile loop, the suspend program and the stack's destroy hook find it by this
tag (with the blueprint's and stack's) and delete it."""
BOOT_DIGEST_TAG = "clusterfab-boot-sha256"
"""On an AWS host that follows the stack: the sha256 of its current boot script, which the host checks the
bucket's copy against (tagging the instance, not writing the bucket, is what changes what it runs)."""
CAPACITY_ENDS_TAG = "clusterfab-capacity-ends-at"
"""On a node group whose capacity ends (a capacity block with `ends_at`) and its instances: when, as
`2027-07-22T11:30:00Z`. The budget policy, which sees resources and not the blueprint, prices the group for
what is left of its term from it, as `clusterfab cost` does."""
IDENTITY_TAG = "clusterfab-identity"
"""On a host with more than one managed identity (the Azure Slurm controller: its own, and the system-assigned
one Microsoft Entra sign-in needs): the client id of the one its programs act as, which its token requests
name; a host with one identity has no such tag and names none."""
HEALTH_TAG = "clusterfab-health"
"""A node records its health-check verdict in this tag of its own instance (AWS) or, as
`clusterfab/health`, in a guest attribute (GCP)."""
INVENTORY_GROUP_PREFIX = "node_group"
"""Push mode's inventory groups are `node_group_<name>` (hyphens become underscores)."""
MAX_NODES_LABEL = "clusterfab-max-nodes"
"""On a resizable group's instance template (GCP): the most nodes the group may have, for cost policies."""
SLICE_INDEX_LABEL = "clusterfab-slice-index"
SLICE_COUNT_LABEL = "clusterfab-slice-count"

MUNGE_KEY_PORT = 6816
"""clusterfab's own port: the Slurm controller's MUNGE key service, which hands the key to root on the
cluster's hosts (a connection from a privileged source port); the security rules open it to them alone."""

RESERVED_TAG_PREFIXES = ("clusterfab-", "clusterfab:", "aws:")
"""Tag / label key prefixes a blueprint's labels may not use, in any case: clusterfab's own tags (the node
sync, the inventory, the cost policy and the teardown find instances by them, so a label that copied one
would make the controller pass for a node) and AWS's reserved `aws:`."""
RESERVED_TAG_KEYS = ("Name",)
"""Tag keys a blueprint's labels may not use: AWS shows `Name` as the resource's name, and the components
set it on the resources that have one."""

IAP_TCP_FORWARDING_RANGE = "35.235.240.0/20"
"""The range Google's IAP TCP forwarding connects from (a fixed, documented range:
https://cloud.google.com/iap/docs/using-tcp-forwarding#create-firewall-rule). The GCP network opens SSH
to it, and the policy pack accepts it on port 22: it is IAP's proxies, not the internet."""

_LABEL_VALUE_INVALID = re.compile(r"[^a-z0-9_-]")
LABEL_VALUE_MAX = 63


def label_value(value: str) -> str:
    """A value valid as a GCP label value (lowercase letters, digits, _ and -, at most 63)."""
    return _LABEL_VALUE_INVALID.sub("-", value.lower())[:LABEL_VALUE_MAX]


def reserved_tag_key(key: str) -> str | None:
    """What reserves `key` for clusterfab or the cloud (a prefix or the key itself); None when a blueprint's
    label may use it."""
    if key in RESERVED_TAG_KEYS:
        return key
    return next((p for p in RESERVED_TAG_PREFIXES if key.lower().startswith(p)), None)


def standard_tags(
    blueprint: str, stack: str, component: str, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The blueprint's own labels plus clusterfab's identifying ones, which come last so that they win.

    Labels with a reserved key (validation refuses them, rule BP142) are dropped rather than passed on: a
    label that copied one of clusterfab's tags would land on every resource, the controller included, and
    the tags components add for their own resources (the node group, the elastic mark) could not undo it.
    """
    tags = {k: v for k, v in (extra or {}).items() if reserved_tag_key(k) is None}
    tags.update({BLUEPRINT_TAG: blueprint, STACK_TAG: label_value(stack), COMPONENT_TAG: component})
    return tags


# The stack settings the program reads besides the blueprint (stacks/Pulumi.<stack>.yaml).
CONFIG_NAMESPACE = "clusterfab"
"""The namespace of the stack settings the program reads (stacks/Pulumi.<stack>.yaml)."""
BILLING_ACCOUNT_KEY = "billingAccount"
"""Stack config `clusterfab:billingAccount`: the billing account a GCP budget is created under."""
ACTIVATE_COST_TAGS_KEY = "activateCostTags"
"""Stack config `clusterfab:activateCostTags` (default false): AWS, the program activates the blueprint and
stack tag keys as cost allocation tags, which the budget counts by (components/aws/budget.py)."""
