"""The tags (AWS) and labels (GCP) every resource carries.

They name the blueprint, the stack and the component that owns the resource, so a bill, an inventory
or a console filter can always find a cluster's resources. Keys use characters valid on both clouds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

BLUEPRINT = "clusterfab-blueprint"
STACK = "clusterfab-stack"
COMPONENT = "clusterfab-component"
NODE_GROUP = "clusterfab-node-group"
"""Set on GPU nodes (and TPU VMs): the dynamic inventory selects nodes by it."""


def label_value(value: str) -> str:
    """A value valid as a GCP label value (lowercase letters, digits, _ and -, at most 63)."""
    return re.sub(r"[^a-z0-9_-]", "-", value.lower())[:63]


def standard(
    blueprint: str, stack: str, component: str, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The blueprint's own labels plus clusterfab's identifying ones (which win on a clash)."""
    tags = dict(extra or {})
    tags.update({BLUEPRINT: blueprint, STACK: label_value(stack), COMPONENT: component})
    return tags
