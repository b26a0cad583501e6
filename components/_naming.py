"""Names: stable logical names for children and physical names within each cloud's limits.

Logical names are `<component name>-<role>`: never list indexes, so adding a node group or a subnet
never renames (and thereby replaces) another resource. Physical names, where a cloud needs one, are
built from the same parts (clusterfab.core.naming.physical).
"""

from __future__ import annotations


def child(name: str, role: str) -> str:
    """The logical name of a component's child: `trainers` + `lt` -> `trainers-lt`."""
    return f"{name}-{role}"
