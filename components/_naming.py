"""Names: stable logical names for children and physical names within each cloud's limits.

Logical names are `<component name>-<role>`: never list indexes, so adding a node group or a subnet
never renames (and thereby replaces) another resource. Physical names, where a cloud needs one, are
built from the same parts (clusterfab.core.naming.physical).

Most GCP resources are auto-named by Pulumi: the logical name, a hyphen and 7 random hex characters. That
fits GCP's 63 characters only while the logical name has at most 55; a resource with a longer one (a
31-character cluster name and a 30-character node group make such names) gets an explicit name from
`gcp_name`. The cluster bucket alone keeps its auto-name always (components.gcp.bucket).
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi

from clusterfab.core.naming import GCP_NAME_MAX, physical

AUTONAME_SUFFIX = len("-0123abc")
"""What Pulumi's auto-naming appends to the logical name: a hyphen and 7 random hex characters."""


def child(name: str, role: str) -> str:
    """The logical name of a component's child: `trainers` + `lt` -> `trainers-lt`."""
    return f"{name}-{role}"


def gcp_name(
    logical: str, *, max_length: int = GCP_NAME_MAX, replaced_on: Sequence[object] = ()
) -> str | None:
    """The `name` of a GCP resource Pulumi would auto-name from `logical`: None (auto-naming) while the
    auto-name fits `max_length`, so the names of existing resources never change (a new name replaces the
    resource); else a stable name within it, from the logical name and the stack. The stack stands in for
    the random suffix: two stacks of one blueprint in one project name their resources apart.
    `replaced_on`: the values whose change replaces the resource (all of an immutable one's): they take
    part in the name's hash, so the replacement, created before the resource it replaces is deleted, gets
    a name of its own, as an auto-named one would."""
    if len(logical) + AUTONAME_SUFFIX <= max_length:
        return None
    return physical(
        logical, pulumi.get_stack(), *(str(value) for value in replaced_on), max_length=max_length
    )


NAME_PREFIX_SUFFIX = 9
"""What the provider appends to a `name_prefix` of 38 to 54 characters: 9 random characters."""


def gcp_name_prefix(logical: str, *, max_length: int = GCP_NAME_MAX) -> str | None:
    """The `name_prefix` of a GCP resource that is replaced whenever it changes (an instance template) and
    whose auto-name would not fit: a fixed name would make its replacement collide with the resource it
    replaces, while the provider gives each generation of a prefix its own random ending. None while the
    auto-name fits (existing resources keep their names)."""
    if len(logical) + AUTONAME_SUFFIX <= max_length:
        return None
    return physical(logical, pulumi.get_stack(), max_length=max_length - NAME_PREFIX_SUFFIX - 1) + "-"
