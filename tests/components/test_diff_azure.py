"""Diffs of the Azure example: which changes replace a resource, as pulumi-azure-native decides it.

The rules are the catalog's (replacements.yaml, from scripts/replacement_azure.py): Managed Lustre's size,
tier (its SKU) and zone are create-only in the REST specification (amlfilesystem.json 2024-03-01,
x-ms-mutability read/create), so a change replaces the file system, which holds data; a scale set has no
create-only property, so its size and count change in place.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from clusterfab.plan.compare import compare
from clusterfab.plan.report import DiffReport
from tests.conftest import REPO
from tests.factories import TODAY

EXAMPLE = REPO / "blueprints" / "examples" / "azure-ndv5-ib.yaml"
AMLFS = "ndv5-train-lustre-amlfs"
VMSS = "ndv5-train-trainers-vmss"


def _variant(tmp_path: Path, old: str, new: str) -> Path:
    text = EXAMPLE.read_text()
    assert old in text, old
    path = tmp_path / "new.yaml"
    path.write_text(text.replace(old, new, 1))
    return path


def _changes(report: DiffReport) -> list[tuple[str, tuple[str, ...], bool, tuple[str, ...]]]:
    return sorted((u.after.name, u.changed, u.replace, u.replaces) for u in report.resources.update)


def test_another_lustre_tier_replaces_the_file_system(tmp_path: Path) -> None:
    new = _variant(tmp_path, "throughput_mbps_per_tib: 125", "throughput_mbps_per_tib: 250")
    report = compare(EXAMPLE, new, env="prod", today=TODAY)
    assert _changes(report) == [
        (AMLFS, ("sku.name",), True, ("sku.name",)),
        # the nodes' boot script mounts the new file system: the scale set's model changes in place
        (VMSS, ("virtualMachineProfile.userData",), False, ()),
    ]
    assert (report.resources.create, report.resources.delete) == ((), ())
    assert [r.name for r, _ in report.resources.destructive()] == [AMLFS]
    assert report.refused(allow_replace=False)


def test_a_larger_lustre_file_system_is_a_new_one(tmp_path: Path) -> None:
    new = _variant(tmp_path, "capacity_gib: 32768", "capacity_gib: 49152")
    report = compare(EXAMPLE, new, env="prod", today=TODAY)
    assert _changes(report) == [
        (AMLFS, ("storageCapacityTiB",), True, ("storageCapacityTiB",)),
        (VMSS, ("virtualMachineProfile.userData",), False, ()),
    ]
    assert report.refused(allow_replace=False)


def test_another_node_count_resizes_the_scale_set_in_place(tmp_path: Path) -> None:
    new = _variant(tmp_path, "    count: 16\n", "    count: 12\n")
    report = compare(EXAMPLE, new, env="prod", today=TODAY)
    assert _changes(report) == [(VMSS, ("sku.capacity",), False, ())]
    assert report.resources.destructive() == []
    assert not report.refused(allow_replace=False)


def test_another_vm_size_changes_the_scale_set_model_without_restarting_a_vm(tmp_path: Path) -> None:
    new = _variant(
        tmp_path, "machine_type: Standard_ND96isr_H100_v5", "machine_type: Standard_ND96isr_H200_v5"
    )
    report = compare(EXAMPLE, new, env="prod", today=TODAY)
    # The scale sets' upgrade policy is Manual: existing VMs keep the old model until upgraded, so the
    # update stops none of them (restarts.yaml has no Azure entry). The boot script changes with the size
    # too: its health check expects the H200's InfiniBand loopback floor.
    ((update,),) = [report.resources.update]
    assert (update.after.name, update.changed, update.replace, update.restarts) == (
        VMSS,
        ("sku.name", "virtualMachineProfile.userData"),
        False,
        (),
    )
    assert update.after.inputs["upgradePolicy"] == {"mode": "Manual"}


def test_another_zone_replaces_what_the_zone_is_create_only_on(tmp_path: Path) -> None:
    new = _variant(tmp_path, 'zone: "1"', 'zone: "2"')
    report = compare(EXAMPLE, new, env="prod", today=TODAY)
    # Only Managed Lustre marks its zones create-only; the provider updates the others' zones in place
    # (Azure refuses that for a scale set: its zones are set at creation).
    assert _changes(report) == [
        (AMLFS, ("zones[0]",), True, ("zones[0]",)),
        ("ndv5-train-net-nat", ("zones[0]",), False, ()),
        ("ndv5-train-net-nat-ip", ("zones[0]",), False, ()),
        (VMSS, ("virtualMachineProfile.userData", "zones[0]"), False, ()),
    ]
    assert [r.name for r, _ in report.resources.destructive()] == [AMLFS]


BLOB = (
    "/subscriptions/5b1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d/resourceGroups/data/providers/Microsoft.Storage/"
    "storageAccounts/mldata/blobServices/default/containers/datasets"
)


def test_a_blob_import_added_to_a_file_system_is_a_new_file_system(tmp_path: Path) -> None:
    """The blob integration is create-only (amlfilesystem.json): the provider would update it in place and
    Azure refuse, so the diff shows the file system replaced, not an update that fails mid-`up`."""
    new = _variant(
        tmp_path, "    mount_point: /lustre\n", f"    mount_point: /lustre\n    import_path: {BLOB}\n"
    )
    report = compare(EXAMPLE, new, env="prod", today=TODAY)
    assert _changes(report) == [
        (AMLFS, ("hsm",), True, ("hsm",)),
        # the new file system's address reaches the nodes through their boot script, in place
        (VMSS, ("virtualMachineProfile.userData",), False, ()),
    ]
    assert [r.name for r in report.resources.create] == ["ndv5-train-lustre-hsm-logs"]
    assert [r.name for r, _ in report.resources.destructive()] == [AMLFS]
    assert report.refused(allow_replace=False)


def _diff_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "clusterfab", "diff", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "CLUSTERFAB_TODAY": "2026-11-22"},
    )


def test_diff_exits_1_when_the_lustre_file_system_would_be_replaced(tmp_path: Path) -> None:
    new = _variant(tmp_path, "throughput_mbps_per_tib: 125", "throughput_mbps_per_tib: 250")
    refused = _diff_cli(str(EXAMPLE), str(new), "--env", "prod", "-f", "json")
    assert refused.returncode == 1, refused.stderr
    assert f"stateful resource {AMLFS}" in " ".join(json.loads(refused.stdout)["warnings"])
    assert refused.stderr.strip() == (
        f"error: this change destroys data: {AMLFS} (replaced); if that is intended, rerun with "
        "--allow-replace"
    )
    allowed = _diff_cli(str(EXAMPLE), str(new), "--env", "prod", "--allow-replace")
    assert allowed.returncode == 0, allowed.stderr
