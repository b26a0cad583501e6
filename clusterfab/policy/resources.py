"""The resource the policies look at: a type token, camelCase props, the protect flag, the parent.

CrossGuard hands policies `ResourceValidationArgs` and `PolicyResource` objects; the offline plan
engine records `PlannedResource`s. Both become a `Resource`, so the rules are written once and tested
on the plans of the example blueprints.

The two do not hand over the same objects: a plan's props are dicts and lists, but CrossGuard wraps
every nested object and list in its own `Mapping` and `Sequence` proxies (which raise
`UnknownValueError` when a value is unknown during preview, and CrossGuard reports the policy as not
run). So the rules read props only through `Mapping` / `Sequence` (the helpers below), never
`isinstance(..., dict | list)`, which is false for every proxy.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pulumi_policy.proxy import UnknownValueError

if TYPE_CHECKING:
    from clusterfab.plan.engine import PlannedResource


PACKAGE_CLOUDS = {"azure-native": "azure"}
"""The cloud of a Pulumi package whose name is not the cloud's (a type token starts with its package)."""


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
        package = self.type.split(":", 1)[0]
        return PACKAGE_CLOUDS.get(package, package)

    def tags(self) -> dict[str, str]:
        """Tags (AWS: a map, or an autoscaling group's list of {key, value}) or labels (GCP)."""
        for key in ("tags", "labels", "resourceLabels"):
            value = self.props.get(key)
            if isinstance(value, Mapping):
                return {str(k): str(v) for k, v in value.items()}
            if _is_list(value):
                return {str(t["key"]): str(t.get("value", "")) for t in items(value) if t.get("key")}
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


def _is_list(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


def items(value: Any) -> list[Mapping[str, Any]]:
    """A nested block as a list of objects: a list as is, one object as a list of one, else empty."""
    if isinstance(value, Mapping):
        return [value]
    if _is_list(value):
        return [v for v in value if isinstance(v, Mapping)]
    return []


def block(value: Any) -> Mapping[str, Any]:
    """A nested object (`metadataOptions`), or an empty one when it is not set."""
    return value if isinstance(value, Mapping) else {}


def strings(value: Any) -> list[str]:
    """A list of strings (`cidrBlocks`, `members`), or one string as a list of one."""
    if isinstance(value, str):
        return [value]
    return [v for v in value if isinstance(v, str)] if _is_list(value) else []


def integer(value: Any) -> int | None:
    """A whole number, however it arrives: the engine's wire format has only floats (2 -> 2.0), and
    some provider types are strings."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


def known(props: Mapping[str, Any], key: str) -> Any:
    """`props[key]`, or None while it is unknown (a preview, before the resource it comes from exists).

    For rules that can decide without it: a stack rule matching configurations to buckets falls back
    on the component they share. Rules that need a value read it plainly, so that CrossGuard says the
    policy could not run during preview instead of passing it.
    """
    try:
        return props.get(key)
    except UnknownValueError:
        return None


def document(value: Any) -> Mapping[str, Any]:
    """A policy document (IAM, S3 bucket policy, GCS IAM policy): the providers take JSON text; an
    object is read as is; anything else is empty."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return block(value)
