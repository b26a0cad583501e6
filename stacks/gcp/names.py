"""Names of the stack's own GCP resources: `<cluster>-<stack>-<name>` (`clusterfab.core.naming.physical`)
within each resource kind's length limit."""

from __future__ import annotations

from clusterfab.core.naming import name_tag, physical
from clusterfab.spec import ClusterSpec, NodeGroup
from components.gcp.node_group import BASE_INSTANCE_NAME_MAX

SERVICE_ACCOUNT_ID_MAX = 30
CUSTOM_ROLE_ID_MAX = 64


def role_id(*parts: str, max_length: int) -> str:
    """A custom role id from name parts: letters, digits and underscores only."""
    return physical(*parts, max_length=max_length).replace("-", "_")


def group_name(spec: ClusterSpec, stack: str, group: NodeGroup, *role: str, max_length: int) -> str:
    """`<cluster>-<stack>-<group>-<tag>[-<role>]`, the tag telling this cluster, stack and group apart from
    any other whose parts join to the same words (`ml` `prod` `prod-h100` and `ml-prod` `prod` `h100`): the
    controller's rights are conditioned on these names as prefixes, so they must name this group's VMs,
    disks, MIGs and policies only, in a project that holds other clusters and stacks."""
    tag = name_tag(spec.name, stack, group.name)
    return physical(spec.name, stack, group.name, tag, *role, max_length=max_length)


def base_instance_name(spec: ClusterSpec, stack: str, group: NodeGroup) -> str:
    """The group's MIG's base instance name: its VMs are `<this>-xxxx`. With the stack and the tag in it,
    other stacks and clusters in the project (and zone) name their VMs apart, and each controller's rights,
    conditioned on these names, reach its own stack's VMs only."""
    return group_name(spec, stack, group, max_length=BASE_INSTANCE_NAME_MAX)
