"""The resource the policies look at: a type token, camelCase props, the protect flag, the parent.

CrossGuard hands policies `ResourceValidationArgs` and `PolicyResource` objects; the offline plan
engine records `PlannedResource`s. Both become a `Resource`, so the rules are written once and tested
on the plans of the example blueprints.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from clusterfab.plan.engine import PlannedResource


@dataclass(frozen=True)
class Resource:
    type: str
    name: str
    urn: str
    props: Mapping[str, Any]
    protect: bool = False
    parent: str | None = None
    """URN of the parent (the clusterfab component that created it), if known."""
    dependencies: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """URNs each property depends on (CrossGuard stack policies know them; plans do not)."""

    @property
    def stack(self) -> str:
        """The stack name in the URN (`urn:pulumi:<stack>::<project>::<type>::<name>`)."""
        head = self.urn.split("::", 1)[0]
        return head.rsplit(":", 1)[-1] if head.startswith("urn:pulumi:") else ""

    @property
    def cloud(self) -> str:
        return self.type.split(":", 1)[0]

    def tags(self) -> dict[str, str]:
        """Tags (AWS: a map, or an autoscaling group's list of {key, value}) or labels (GCP)."""
        for key in ("tags", "labels", "resourceLabels"):
            value = self.props.get(key)
            if isinstance(value, Mapping):
                return {str(k): str(v) for k, v in value.items()}
            if isinstance(value, list):
                return {
                    str(t["key"]): str(t.get("value", ""))
                    for t in value
                    if isinstance(t, Mapping) and "key" in t
                }
        return {}


def from_planned(resource: PlannedResource) -> Resource:
    """A resource recorded by the offline plan engine (`clusterfab plan`)."""
    return Resource(
        type=resource.type,
        name=resource.name,
        urn=resource.urn,
        props=resource.inputs,
        protect=resource.protect,
        parent=resource.parent,
    )


def truthy(value: Any) -> bool:
    """True, or the string "true" (some provider types, such as launch template flags, are strings)."""
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def items(value: Any) -> list[Mapping[str, Any]]:
    """A nested block as a list of objects: a list as is, one object as a list of one, else empty."""
    if isinstance(value, Mapping):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, Mapping)]
    return []
