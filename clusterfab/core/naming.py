"""Physical names of cloud resources: built from stable parts, within each cloud's limits, shortened with
a stable hash when they exceed them. Shared by the components and the hosts' settings that must name the
same resource (a controller finds its accounting database by name)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from types import MappingProxyType

GCP_NAME_MAX = 63
"""RFC 1035 names on GCP: [a-z]([-a-z0-9]*[a-z0-9])?, at most 63 characters."""


def physical(*parts: str, max_length: int = GCP_NAME_MAX) -> str:
    """A cloud resource name from `parts`, lowercase, hyphenated, shortened with a hash if needed."""
    joined = "-".join(p for p in parts if p)
    cleaned = re.sub(r"[^a-z0-9-]+", "-", joined.lower()).strip("-")
    cleaned = re.sub(r"-{2,}", "-", cleaned)
    if not cleaned or not cleaned[0].isalpha():
        cleaned = f"c-{cleaned}"
    if len(cleaned) <= max_length:
        return cleaned
    digest = hashlib.sha256(joined.encode()).hexdigest()[:8]
    return f"{cleaned[: max_length - 9].rstrip('-')}-{digest}"


def name_tag(*parts: str) -> str:
    """Eight hex digits that tell `parts` apart where their hyphen-joined name does not: `ml` + `prod` +
    `prod-h100` and `ml-prod` + `prod` + `h100` both join to `ml-prod-prod-h100`, but their tags differ (a
    hash of the parts as they are, joined by a character no part has). A name that ends in the tag, and an
    IAM condition on the prefix `<name>-`, belongs to one set of parts only."""
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:8]


# The GCP stack's own resources are named `<cluster>-<stack>-<name>` (physical), as its node groups' and TPU
# slices' are `<cluster>-<stack>-<group>`: these names are the stack's, and a group may not take one.
GCP_CONTROLLER = "controller"
"""The Slurm controller's VM."""
GCP_LOGIN = "login"
"""The login VMs (`<cluster>-<stack>-login-<i>`) and their service account."""
GCP_SLURM_ACCOUNT = "slurm"
"""The controller's service account, whose rights (IAM conditions on names) reach the nodes."""
GCP_MONITORING = "monitoring"
"""The monitoring VM and its discovery role."""
GCP_MONITORING_ACCOUNT = "mon"
"""The monitoring VM's service account."""
GCP_NODE_SYNC_ROLE = "sync"
"""The prefix of the node sync's custom roles."""
GCP_GKE_NODES = "gke-nodes"
"""The GKE cluster's node service account."""
GCP_STACK_NAMES: Mapping[str, str] = MappingProxyType(
    {
        GCP_CONTROLLER: "the Slurm controller's VM",
        GCP_LOGIN: "the login nodes' VMs and service account",
        GCP_SLURM_ACCOUNT: "the Slurm controller's service account",
        GCP_MONITORING: "the monitoring VM",
        GCP_MONITORING_ACCOUNT: "the monitoring VM's service account",
        GCP_NODE_SYNC_ROLE: "the node sync's roles",
        GCP_GKE_NODES: "the GKE nodes' service account",
    }
)
"""Every name above, with what it names: a node group or TPU slice called so would share a service account
or a VM name with the stack's own resource (a group named `login` would run as the login nodes' account)."""
