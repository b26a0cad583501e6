"""Push mode: configure a deployed stack's nodes from here (`clusterfab configure --stack S`).

Day-2 work (a driver or NCCL upgrade, a new mount) reaches running nodes this way; new and replaced
nodes get the same playbooks at boot. One run per node group, limited to that group's inventory
group (node groups differ in machine type, so their extravars differ), then the health check. The
outcome goes to the stack's cluster bucket as a health record (`clusterfab.health`): passed only
when every group's check passed on at least the group's minimum number of hosts and the nodes run
the stack's own playbook bundle; it is what `clusterfab promote` requires of a source stack.

Everything that touches the outside (the stack, ansible-runner) is passed in, so the flow is tested
without a cloud; the CLI wires the real ones.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from clusterfab.bootstrap import Mount
from clusterfab.clouds import profile
from clusterfab.clouds.base import HealthStore
from clusterfab.core.errors import UsageError
from clusterfab.core.vocab import Cloud
from clusterfab.health import HealthRecord, Provenance, check_record, health_key
from clusterfab.outputs import StackOutputs, read_outputs
from clusterfab.provision.extravars import gpu_node_vars, healthcheck_vars
from clusterfab.provision.inventory import group_name, inventory_config, inventory_yaml
from clusterfab.provision.runner import PlaybookResult
from clusterfab.stackinput import StackInput


class ConfiguredStack(Protocol):
    def outputs(self) -> dict[str, Any]: ...

    def config(self) -> Mapping[str, str]: ...

    def set_config(self, key: str, value: str) -> None: ...


Runner = Callable[..., PlaybookResult]


@dataclass(frozen=True)
class PushTarget:
    """One node group to configure: its inventory group and its extravars."""

    node_group: str
    limit: str
    extravars: dict[str, Any]
    healthcheck_vars: dict[str, Any]


@dataclass(frozen=True)
class PushResult:
    runs: tuple[tuple[str, str, PlaybookResult], ...]
    """(node group, playbook, result) in the order they ran."""
    health: HealthRecord | None
    """The record written to the bucket, None when the health check did not run or was partial."""
    location: str | None = None
    """Where the record was written."""

    @property
    def succeeded(self) -> bool:
        return all(result.succeeded for _, _, result in self.runs)


def _mounts(outputs: StackOutputs, names: Sequence[str]) -> list[Mount]:
    mounts = []
    for name in names:
        entry = outputs.storage.get(name)
        if entry is None:
            raise UsageError(f"the stack has no output for storage {name}; run `clusterfab up` for it first")
        mounts.append(Mount(name, entry.fs_type, entry.source, entry.mount_point, entry.options))
    return mounts


def push_targets(
    stack_input: StackInput, outputs: StackOutputs, only: Sequence[str] | None = None
) -> list[PushTarget]:
    """What to run on each node group of the stack (all groups, or the ones named in `only`)."""
    spec, catalog = stack_input.spec, stack_input.catalog
    groups = [g for g in spec.node_groups if not only or g.name in only]
    unknown = sorted(set(only or ()) - {g.name for g in spec.node_groups})
    if unknown:
        raise UsageError(
            f"no node group {', '.join(unknown)} in {stack_input.file} "
            f"(node groups: {', '.join(g.name for g in spec.node_groups) or 'none'})"
        )
    targets = []
    for group in groups:
        mounts = _mounts(outputs, group.storage)
        targets.append(
            PushTarget(
                node_group=group.name,
                limit=group_name(group.name),
                extravars=gpu_node_vars(spec, group, catalog, mounts),
                healthcheck_vars=healthcheck_vars(spec, group, catalog),
            )
        )
    return targets


def require_collection(cloud: Cloud) -> None:
    """Fail with what to install when Ansible or the inventory plugin's collection is missing."""
    if importlib.util.find_spec("ansible_runner") is None or importlib.util.find_spec("ansible") is None:
        raise UsageError(
            "push mode runs Ansible on this machine: install it with clusterfab's `configure` extra "
            "(`pip install 'clusterfab[configure]'`, or `uv sync` in a checkout)"
        )
    name = profile(cloud).inventory_collection
    namespace, collection = name.split(".")
    if importlib.util.find_spec(f"ansible_collections.{namespace}.{collection}") is None:
        raise UsageError(
            f"push mode needs the Ansible collection {name}: "
            f"`ansible-galaxy collection install {name}` (or `pip install ansible`)"
        )


def write_inventory(outputs: StackOutputs, directory: Path) -> Path:
    """The inventory plugin config for the stack's nodes, as a file the plugin accepts."""
    config = inventory_config(outputs)
    path = directory / f"clusterfab{profile(outputs.blueprint.cloud).inventory_suffix}"
    path.write_text(inventory_yaml(config))
    return path


@dataclass(frozen=True)
class HealthTarget:
    """Where and against what a health check is recorded."""

    store: HealthStore
    stack: str
    commit: str
    """The checkout's commit (`clusterfab.deploy.checkout.checkout_commit`)."""
    bundle_sha256: str
    """The bundle of the playbooks this run pushes: a pass needs it to be the stack's own."""
    signing_key: str
    """The stack's health signing key (its `health_signing_key` output): `promote` takes only records
    signed with it."""


def configure(
    stack: ConfiguredStack,
    stack_input: StackInput,
    *,
    runner: Runner,
    playbooks: Path,
    only: Sequence[str] | None = None,
    limit: str | None = None,
    tags: Sequence[str] | None = None,
    health: HealthTarget | None = None,
    on_event: Callable[[Any], None] | None = None,
) -> PushResult:
    """Run the node playbook, then the health check, on the stack's node groups; record the health.

    `only` names node groups; `limit` is an Ansible host pattern applied within each group.
    """
    outputs = read_outputs(stack.outputs())
    targets = push_targets(stack_input, outputs, only)
    # ':&' intersects: the group's hosts that the user's pattern also matches.
    hosts = {t.node_group: f"{t.limit}:&{limit}" if limit else t.limit for t in targets}
    runs: list[tuple[str, str, PlaybookResult]] = []
    with tempfile.TemporaryDirectory(prefix="clusterfab-inventory-") as tmp:
        inventory = write_inventory(outputs, Path(tmp))
        for target in targets:
            result = runner(
                playbooks / "gpu_node.yml",
                inventory=inventory,
                extravars=target.extravars,
                limit=hosts[target.node_group],
                tags=list(tags) if tags else None,
                on_event=on_event,
            )
            runs.append((target.node_group, "gpu_node.yml", result))
        if health is None or not all(r.succeeded for _, _, r in runs):
            return PushResult(runs=tuple(runs), health=None)
        for target in targets:
            result = runner(
                playbooks / "healthcheck.yml",
                inventory=inventory,
                extravars=target.healthcheck_vars,
                limit=hosts[target.node_group],
                on_event=on_event,
            )
            runs.append((target.node_group, "healthcheck.yml", result))
    record = _health_record(health, stack_input, outputs, runs)
    # A run on some nodes proves nothing about the whole cluster: record only its failure.
    if (only or limit) and record.passed:
        return PushResult(runs=tuple(runs), health=None)
    key = health_key(health.stack)
    health.store.put(key, record.to_json(health.signing_key).encode())
    return PushResult(runs=tuple(runs), health=record, location=health.store.location(key))


def _passing_hosts(result: PlaybookResult) -> int:
    return sum(1 for stats in result.hosts.values() if not stats.failed and not stats.unreachable)


def _health_record(
    health: HealthTarget,
    stack_input: StackInput,
    outputs: StackOutputs,
    runs: Sequence[tuple[str, str, PlaybookResult]],
) -> HealthRecord:
    checks = [(group, result) for group, playbook, result in runs if playbook == "healthcheck.yml"]
    record = check_record(
        stack=health.stack,
        provenance=Provenance(
            blueprint_digest=outputs.blueprint.digest,
            bundle_sha256=outputs.blueprint.bundle_sha256,
            catalog_version=outputs.blueprint.catalog_version,
            commit=health.commit,
        ),
        hosts={group: _passing_hosts(result) for group, result in checks},
        required={g.name: g.min_size for g in stack_input.spec.node_groups},
        checks_passed=all(result.succeeded for _, result in checks),
    )
    if record.passed and health.bundle_sha256 != outputs.blueprint.bundle_sha256:
        reason = (
            f"the nodes were configured with playbooks (bundle {health.bundle_sha256[:12]}) other than "
            f"the stack's own (bundle {outputs.blueprint.bundle_sha256[:12]}): run `clusterfab up` first"
        )
        return dataclasses.replace(record, status="failed", reason=reason)
    return record
