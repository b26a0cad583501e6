"""Catalog rules for the NVIDIA stack: driver vs CUDA, driver and CUDA vs GPU, NCCL vs fabric."""

from __future__ import annotations

from collections.abc import Iterator

from clusterfab.catalog import at_least, version_tuple
from clusterfab.core.findings import FieldPath, Finding, Severity
from clusterfab.rules.context import RuleContext


def check_software(ctx: RuleContext) -> Iterator[Finding]:
    groups = ctx.spec.node_groups
    if not groups:
        return
    versions = ctx.spec.software
    first = groups[0].index
    yield from _unreleased(ctx, "nvidia_driver", versions.nvidia_driver, _anchor(ctx, "nvidia_driver", first))
    yield from _unreleased(ctx, "nccl", versions.nccl, _anchor(ctx, "nccl", first))
    yield from _cuda_driver(ctx, first)
    yield from _nccl_build(ctx, _anchor(ctx, "nccl", first))
    yield from _gpu_minimums(ctx)
    yield from _fabric_minimums(ctx)


def _anchor(ctx: RuleContext, field: str, index: int) -> FieldPath:
    # An unset version comes from the catalog's defaults: point at the group that needs more.
    path: FieldPath = ("software", field)
    return path if ctx.written(path) else ("node_groups", index, "machine_type")


def _cuda_driver(ctx: RuleContext, first: int) -> Iterator[Finding]:
    """The driver against the CUDA release's minimum, from the catalog's driver table."""
    catalog, versions = ctx.catalog, ctx.spec.software
    release = catalog.min_driver_for_cuda(versions.cuda)
    if release is None:
        known = sorted({r.cuda for r in catalog.cuda_drivers.releases})
        yield ctx.finding(
            "BP214",
            ("software", "cuda"),
            f"CUDA {versions.cuda} is not in the catalog's driver table; the driver "
            "cannot be checked against it",
            hint=f"known CUDA releases: {', '.join(known)}",
            anchor=_anchor(ctx, "cuda", first),
        )
    elif not at_least(versions.nvidia_driver, release.driver):
        yield ctx.finding(
            "BP212",
            ("software", "nvidia_driver"),
            f"driver {versions.nvidia_driver} is older than {release.driver}, the minimum "
            f"for CUDA {versions.cuda}",
            hint=f"use driver {release.driver} or newer, or an older CUDA",
            anchor=_anchor(ctx, "nvidia_driver", first),
        )


def _gpu_minimums(ctx: RuleContext) -> Iterator[Finding]:
    """The driver and CUDA against each GPU model's minimums, once per model."""
    catalog, groups, versions = ctx.catalog, ctx.spec.node_groups, ctx.spec.software
    checked: set[str] = set()
    for group in groups:
        machine, index = group.machine, group.index
        model = machine.accelerator.model
        support = catalog.gpus.get(model)
        if support is None or model in checked:
            continue
        checked.add(model)
        unsure = support.confidence == "unconfirmed"
        severity = Severity.WARNING if unsure else None
        note = " (this minimum is unconfirmed)" if unsure else ""
        if not at_least(versions.nvidia_driver, support.min_driver):
            yield ctx.finding(
                "BP211",
                ("software", "nvidia_driver"),
                f"driver {versions.nvidia_driver} is older than {support.min_driver}, the "
                f"minimum for {model} ({machine.name}){note}",
                hint=f"use driver {support.min_driver} or newer",
                anchor=_anchor(ctx, "nvidia_driver", index),
                severity=severity,
            )
        if not at_least(versions.cuda, support.min_cuda):
            yield ctx.finding(
                "BP218",
                ("software", "cuda"),
                f"CUDA {versions.cuda} does not support {model} ({machine.name}); it needs "
                f"CUDA {support.min_cuda} or newer{note}",
                hint=f"use CUDA {support.min_cuda} or newer",
                anchor=_anchor(ctx, "cuda", index),
                severity=severity,
            )


def _fabric_minimums(ctx: RuleContext) -> Iterator[Finding]:
    """NCCL against the minimum of each group's fabric plugin."""
    catalog, groups, versions = ctx.catalog, ctx.spec.node_groups, ctx.spec.software
    for group in groups:
        fabric, index = group.fabric, group.index
        software = catalog.fabric_software.get(fabric) if fabric else None
        if software is None or software.min_nccl is None:
            continue
        if not at_least(versions.nccl, software.min_nccl):
            yield ctx.finding(
                "BP213",
                ("software", "nccl"),
                f"NCCL {versions.nccl} is older than {software.min_nccl}, the minimum for "
                f"{software.plugin} on {fabric}",
                hint=f"use NCCL {software.min_nccl} or newer",
                anchor=_anchor(ctx, "nccl", index),
            )


def _nccl_build(ctx: RuleContext, anchor: FieldPath) -> Iterator[Finding]:
    """The stack's NCCL must exist as a build for its CUDA major (BP221). A release the catalog does not
    know at all is BP214's (`_unreleased`); one newer than every recorded build of that major cannot be
    checked (BP214 too)."""
    versions, builds = ctx.spec.software, ctx.catalog.nccl_builds
    major = int(versions.cuda.split(".")[0])
    known = builds.versions_for(major)
    if not _released(ctx, "nccl", versions.nccl) or not known:
        return
    if versions.nccl in known or any(v.startswith(versions.nccl + ".") for v in known):
        return
    if version_tuple(versions.nccl) > version_tuple(known[-1]):
        yield ctx.finding(
            "BP214",
            ("software", "nccl"),
            f"NCCL {versions.nccl} is newer than every CUDA {major} build the catalog knows "
            f"(newest {known[-1]}, as of {builds.as_of.isoformat()}); its build cannot be checked",
            hint="refresh the record with `python -m clusterfab.catalog.refresh.nccl_builds`",
            anchor=anchor,
        )
        return
    below = [v for v in known if version_tuple(v) < version_tuple(versions.nccl)]
    above = [v for v in known if version_tuple(v) > version_tuple(versions.nccl)]
    nearest = [*below[-1:], *above[:1]]
    elsewhere = builds.majors_of(versions.nccl)
    built_for = f"; it was built for CUDA {', '.join(map(str, elsewhere))}" if elsewhere else ""
    yield ctx.finding(
        "BP221",
        ("software", "nccl"),
        f"NCCL {versions.nccl} has no build for CUDA {major}{built_for}",
        hint=f"the nearest NCCL releases built for CUDA {major}: {' or '.join(nearest)}",
        anchor=anchor,
    )


_WHAT = {"nvidia_driver": "NVIDIA driver", "nccl": "NCCL"}


def _unreleased(ctx: RuleContext, field: str, version: str, anchor: FieldPath) -> Iterator[Finding]:
    """BP214 for a driver or NCCL version NVIDIA never released (as far as the catalog knows): nodes
    would fail to install it. A driver given as a branch ("580") is known when a release of it is."""
    record = ctx.catalog.releases[field]
    if _released(ctx, field, version):
        return
    prefix = ".".join(version.split(".")[:2])
    same_line = [v for v in record.versions if v.startswith(prefix + ".") or v == prefix]
    branch = version.partition(".")[0]
    near = same_line or [v for v in record.versions if v.partition(".")[0] == branch]
    listed = (
        f"{_WHAT[field]} releases of that line: {', '.join(near[-6:])}"
        if near
        else (f"the newest {_WHAT[field]} releases: {', '.join(record.versions[-4:])}")
    )
    yield ctx.finding(
        "BP214",
        ("software", field),
        f"{_WHAT[field]} {version} is not a release the catalog knows (its list is of "
        f"{record.as_of.isoformat()}); nodes cannot install a version that does not exist",
        hint=f"{listed}; if {version} is newer than the list, ignore this warning",
        anchor=anchor,
    )


def _released(ctx: RuleContext, field: str, version: str) -> bool:
    """Whether NVIDIA released this driver or NCCL version, as far as the catalog knows."""
    catalog = ctx.catalog
    known = set(catalog.releases[field].versions)
    if field == "nvidia_driver":
        known |= {r.driver for r in catalog.cuda_drivers.releases} | {catalog.recommended.nvidia_driver}
    return version in known or any(v.startswith(version + ".") for v in known)
