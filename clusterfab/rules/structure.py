"""Semantic rules that need no catalog: names, references, sizes, per-cloud fields, labels, network."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator

from clusterfab import addressing
from clusterfab.blueprint.models import LustreSpec
from clusterfab.blueprint.overlay import PROTECTED_BY_DEFAULT
from clusterfab.core import exposure
from clusterfab.core.findings import Finding, render_path
from clusterfab.core.hints import did_you_mean
from clusterfab.core.vocab import reserved_tag_key
from clusterfab.rules.context import RuleContext

_SYSTEM_DIRS = (
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/proc",
    "/run",
    "/sbin",
    "/sys",
    "/usr",
    "/var/lib",
    "/var/log",
)


def check_unique_names(ctx: RuleContext) -> Iterator[Finding]:
    first: dict[str, tuple[str, int]] = {}
    for list_name, index, item in ctx.blueprint.named_items():
        if item.name in first:
            other = render_path(first[item.name])
            yield ctx.finding(
                "BP101",
                (list_name, index, "name"),
                f"name '{item.name}' is already used by {other}",
                hint="names identify resources; give each item its own",
            )
        else:
            first[item.name] = (list_name, index)


def check_attach(ctx: RuleContext) -> Iterator[Finding]:
    known = [s.name for s in ctx.blueprint.storage]
    items = [("node_groups", i, g.attach) for i, g in enumerate(ctx.blueprint.node_groups)]
    items += [("tpu_slices", i, s.attach) for i, s in enumerate(ctx.blueprint.tpu_slices)]
    for list_name, index, attach in items:
        for position, name in enumerate(attach or []):
            if name not in known:
                yield ctx.finding(
                    "BP102",
                    (list_name, index, "attach", position),
                    f"no storage named '{name}'",
                    hint=did_you_mean(name, known, what="storage defined")
                    or "define it under `storage` or remove it from attach",
                )


def check_mount_points(ctx: RuleContext) -> Iterator[Finding]:
    seen: dict[str, int] = {}
    for index, storage in enumerate(ctx.blueprint.storage):
        path = storage.mount_path
        anchor = ("storage", index, "mount_point")
        if path in seen:
            yield ctx.finding(
                "BP113",
                anchor,
                f"mount point {path} is also used by storage[{seen[path]}]",
                hint="give each storage its own mount point",
                anchor=anchor if ctx.written(anchor) else ("storage", index, "name"),
            )
        seen.setdefault(path, index)
        clash = next((d for d in _SYSTEM_DIRS if path == d or path.startswith(d + "/")), None)
        if clash is not None:
            yield ctx.finding(
                "BP113",
                anchor,
                f"mount point {path} would hide the system directory {clash}",
                hint="mount shared storage under its own directory, e.g. /lustre or /mnt/data",
            )


def check_local_scratch(ctx: RuleContext) -> Iterator[Finding]:
    """A group's local scratch must not share a mount point with the storage it mounts, nor hide a system
    directory."""
    mounts = {s.name: s.mount_path for s in ctx.blueprint.storage}
    for index, group in enumerate(ctx.blueprint.node_groups):
        scratch = group.local_scratch
        if not scratch.enabled:
            continue
        anchor = ("node_groups", index, "local_scratch", "mount_point")
        at = anchor if ctx.written(anchor) else ("node_groups", index, "name")
        attached = group.attach if group.attach is not None else list(mounts)
        clash = next((name for name in attached if mounts.get(name) == scratch.mount_point), None)
        if clash is not None:
            yield ctx.finding(
                "BP113",
                anchor,
                f"local scratch mount point {scratch.mount_point} is also the mount point of storage {clash}",
                hint="mount it elsewhere (default /mnt/localssd), or set local_scratch.enabled: false",
                anchor=at,
            )
        system = next(
            (d for d in _SYSTEM_DIRS if scratch.mount_point == d or scratch.mount_point.startswith(d + "/")),
            None,
        )
        if system is not None:
            yield ctx.finding(
                "BP113",
                anchor,
                f"local scratch mount point {scratch.mount_point} would hide the system directory {system}",
                hint="mount it under its own directory, e.g. /mnt/localssd or /scratch",
                anchor=at,
            )


def check_export(ctx: RuleContext) -> Iterator[Finding]:
    for index, storage in enumerate(ctx.blueprint.storage):
        if isinstance(storage, LustreSpec) and storage.export_changes and storage.import_path is None:
            yield ctx.finding(
                "BP118",
                ("storage", index, "export_changes"),
                "export_changes needs an import_path to write back to",
                hint="add `import_path: s3://bucket/prefix`, or remove export_changes",
                at_key=True,
            )


def check_group_sizes(ctx: RuleContext) -> Iterator[Finding]:
    for index, group in enumerate(ctx.blueprint.node_groups):
        base = ("node_groups", index)
        if group.count is not None and group.autoscaling is not None:
            yield ctx.finding(
                "BP108",
                (*base, "autoscaling"),
                "set either count or autoscaling, not both",
                hint="use count for a fixed size, autoscaling {min, max} for a range",
                at_key=True,
            )
        elif group.count is None and group.autoscaling is None:
            yield ctx.finding(
                "BP108",
                (*base, "count"),
                "the group has no size",
                hint="add `count: N` or `autoscaling: {min: 0, max: N}`",
                anchor=(*base, "name"),
            )
        scaling = group.autoscaling
        if scaling is not None and scaling.min > scaling.max:
            yield ctx.finding(
                "BP108",
                (*base, "autoscaling", "min"),
                f"autoscaling min {scaling.min} is larger than max {scaling.max}",
                hint="min must be at most max",
            )


def check_cloud_fields(ctx: RuleContext) -> Iterator[Finding]:
    """BP110 for a field of another cloud; a cloud's own code (BP255, BP256) for a field whose form or
    prerequisites are that cloud's."""
    for problem in ctx.cloud.foreign_fields(ctx.blueprint):
        yield ctx.finding(
            problem.code or "BP110",
            problem.path,
            problem.message,
            hint=problem.hint,
            at_key=problem.at_key,
            severity=problem.severity,
        )


_RESERVED_LABELS = {
    "clusterfab": (
        "keys starting with clusterfab- or clusterfab: are clusterfab's own tags, which it finds nodes by",
        "rename the label (e.g. team, cost-center); clusterfab sets its own tags itself",
    ),
    "aws:": ("keys starting with aws: are reserved by AWS", "rename the label; AWS refuses keys with aws:"),
    "Name": (
        "Name is the name AWS shows for a resource, which clusterfab sets itself",
        "rename the label (e.g. cluster-name)",
    ),
}
"""Why each reserved key (vocab.reserved_tag_key) is refused, and what to do instead."""


def check_labels(ctx: RuleContext) -> Iterator[Finding]:
    for key, value in ctx.blueprint.labels.items():
        reserved = reserved_tag_key(key)
        if reserved is not None:
            why, hint = _RESERVED_LABELS.get(reserved, _RESERVED_LABELS["clusterfab"])
            yield ctx.finding(
                "BP142", ("labels", key), f"label key {key!r} is reserved: {why}", hint=hint, at_key=True
            )
        for problem in ctx.cloud.label_problems(key, value):
            if reserved is not None and problem.at_key:
                continue  # the key is refused once, as reserved
            path = ("labels", key, *problem.path)
            yield ctx.finding("BP114", path, problem.message, hint=problem.hint, at_key=problem.at_key)


def check_network(ctx: RuleContext) -> Iterator[Finding]:
    bp = ctx.blueprint
    network = ipaddress.IPv4Network(bp.network.cidr)
    if not network.is_private:
        yield ctx.finding(
            "BP112",
            ("network", "cidr"),
            f"{network} is not a private range",
            hint="use a range inside 10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16",
        )
    elif network.prefixlen > addressing.MAX_CLUSTER_PREFIX:
        yield ctx.finding(
            "BP112",
            ("network", "cidr"),
            f"{network} is too small: the cluster needs at least a "
            f"/{addressing.MAX_CLUSTER_PREFIX} to cut 16 subnets from",
            hint=f"use e.g. {network.supernet(new_prefix=16)}",
        )
    else:
        hosts = sum(g.count or (g.autoscaling.max if g.autoscaling else 0) for g in bp.node_groups)
        usable = addressing.blocks(str(network))[0].num_addresses - ctx.cloud.reserved_addresses
        if hosts > usable:
            yield ctx.finding(
                "BP112",
                ("network", "cidr"),
                f"{network} leaves {usable} addresses per subnet but the node groups can hold {hosts} nodes",
                hint=f"use a larger range, e.g. {network.supernet(prefixlen_diff=2)}",
            )
    for index, cidr in enumerate(bp.network.ssh_ingress_cidrs):
        yield from _ssh_exposure(ctx, index, ipaddress.IPv4Network(cidr))


def _ssh_exposure(ctx: RuleContext, index: int, network: ipaddress.IPv4Network) -> Iterator[Finding]:
    if not exposure.too_public(network):
        return
    yield ctx.finding(
        "BP111",
        ("network", "ssh_ingress_cidrs", index),
        f"SSH would be open to {exposure.describe(network)}",
        hint="remove it and use SSM Session Manager (AWS) or IAP (GCP), "
        f"or allow only your office or VPN range (a /{exposure.PUBLIC_PREFIX_MIN} or narrower)",
    )


_PRODUCTION_LIKE = re.compile(r"(prod|production|prd)([-_].*)?|.*[-_](prod|production|prd)")


def check_environment_protection(ctx: RuleContext) -> Iterator[Finding]:
    """A production-looking environment that says nothing about protection gets none: say so once."""
    if ctx.environment is not None:
        return  # reported with the base blueprint, where every environment is visible
    for name, overlay in ctx.blueprint.environments.items():
        says = isinstance(overlay, dict) and "protected" in overlay
        if _PRODUCTION_LIKE.fullmatch(name) and name not in PROTECTED_BY_DEFAULT and not says:
            yield ctx.finding(
                "BP135",
                ("environments", name),
                f"environment '{name}' looks like production but protects no stateful resources",
                hint=f"add `protected: true` to environments.{name} (or `protected: false` to confirm)",
                at_key=True,
            )


def check_not_empty(ctx: RuleContext) -> Iterator[Finding]:
    if not ctx.blueprint.node_groups and not ctx.blueprint.tpu_slices:
        yield ctx.finding(
            "BP117",
            ("node_groups",),
            "the blueprint defines no node groups and no TPU slices",
            hint="add a node group (or a TPU slice on GCP)",
            anchor=("name",),
        )
