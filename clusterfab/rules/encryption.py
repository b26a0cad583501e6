"""Customer-managed keys: each `kms_key` names a key of the blueprint's cloud where its resource can use it.

The format and the location are the cloud profile's to judge (an AWS key ARN in the blueprint's region; a
GCP key in the blueprint's region, or `global` for disks); whether a storage tier takes a key at all is the
catalog's (`rules.storage`).
"""

from __future__ import annotations

from collections.abc import Iterator

from clusterfab.blueprint.models import Blueprint
from clusterfab.core.findings import FieldPath, Finding
from clusterfab.rules.context import RuleContext


def _keys(blueprint: Blueprint) -> Iterator[tuple[FieldPath, str, bool]]:
    """Every key the blueprint names: (where, the key, whether a disk uses it)."""
    if blueprint.bucket_kms_key is not None:
        yield ("bucket_kms_key",), blueprint.bucket_kms_key, False
    for index, group in enumerate(blueprint.node_groups):
        if group.kms_key is not None:
            yield ("node_groups", index, "kms_key"), group.kms_key, True
    for index, storage in enumerate(blueprint.storage):
        if storage.kms_key is not None:
            yield ("storage", index, "kms_key"), storage.kms_key, False
    if blueprint.scheduler is not None:
        yield from blueprint.scheduler.kms_keys()


def check_kms_keys(ctx: RuleContext) -> Iterator[Finding]:
    region = ctx.blueprint.region
    for path, key, disk in _keys(ctx.blueprint):
        for problem in ctx.cloud.kms_key_problems(key, region=region, disk=disk):
            yield ctx.finding(
                problem.code or "BP138", (*path, *problem.path), problem.message, hint=problem.hint
            )
