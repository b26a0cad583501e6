"""Flex-start elastic nodes on GCP, as planned: the group's MIG holds only its static nodes (all at once),
Slurm asks for the rest per job through MIGs the controller may create, resize, read and delete by their
name prefix only, placed by the group's own workload policy; the controller's programs learn the prefix and
the run duration; flex-start without Slurm still cannot autoscale (BP120)."""

from __future__ import annotations

import pytest

from clusterfab.plan.engine import PlanError
from tests.components.harness import all_of, gcp_plan, one
from tests.components.test_gcp_iam_conditions import conditions, grants
from tests.components.test_gcp_slurm import IAM_MEMBER, _nodesync_config
from tests.components.test_gcp_slurm import placement_policies as vm_placement_policies

MIG = "gcp:compute/instanceGroupManager:InstanceGroupManager"
ROLE = "gcp:projects/iAMCustomRole:IAMCustomRole"
IGM = "compute.googleapis.com/InstanceGroupManager"
ZONAL = "projects/test-project/zones/us-central1-b"
REGIONAL = "projects/test-project/regions/us-central1/resourcePolicies"
GFX_H100 = "gfx-cluster-prod-h100-68d48832"
"""The group's names in the stack (gcp.names.group_name): `printf 'gfx-cluster\\0prod\\0h100' | sha256sum`
starts 68d48832."""

FLEX = """network:
  cidr: 10.60.0.0/16
node_groups:
  - name: h100
    machine_type: a3-megagpu-8g
    capacity: {kind: flex_start, max_run_duration_hours: 24}
    autoscaling: {min: 0, max: 4}
scheduler:
  kind: slurm
environments:
  prod: {}
"""


def test_the_groups_mig_holds_only_its_static_nodes_and_slurm_asks_for_the_rest() -> None:
    plan = gcp_plan(FLEX, name="gfx", env="prod")
    mig = one(plan, MIG, "gfx-cluster-h100-mig")
    assert (mig.inputs["targetSize"], mig.inputs["targetSizePolicies"]) == (0, [{"mode": "BULK"}])
    # Flex-start VMs are placed by their MIG's workload policy: no placement policies for elastic VMs.
    assert [p.name for p in vm_placement_policies(plan)] == ["gfx-cluster-h100-placement"]
    config = _nodesync_config(
        one(plan, "gcp:storage/bucketObject:BucketObject", "gfx-cluster-slurm-files").inputs["name"]
    )
    assert config["gce_groups"] == {
        "h100": {
            "base_instance_name": GFX_H100,
            "vm_prefix": f"{GFX_H100}-elastic",
            "placement_prefix": "",
            "placement_chunk": 0,
            "flex_prefix": f"{GFX_H100}-flex",
            "run_seconds": 86400,
        }
    }


def test_the_controller_may_make_and_delete_only_its_flex_start_migs() -> None:
    plan = gcp_plan(FLEX, name="gfx", env="prod")
    roles = {r.name: r.inputs for r in all_of(plan, ROLE)}
    permissions = roles["gfx-cluster-slurm-vms-role"]["permissions"]
    assert [p for p in permissions if p.startswith("compute.instanceGroupManagers.")] == [
        "compute.instanceGroupManagers.create",
        "compute.instanceGroupManagers.delete",
        "compute.instanceGroupManagers.get",
        "compute.instanceGroupManagers.update",
    ]
    expression = conditions(plan)["gfx-cluster-slurm-vms"]
    policy = one(plan, "gcp:compute/resourcePolicy:ResourcePolicy", "gfx-cluster-h100-placement")
    name = policy.inputs.get("name") or policy.computed["name"]  # auto-named where the name fits
    assert grants(expression, "compute.googleapis.com/ResourcePolicy", f"{REGIONAL}/{name}")
    assert not grants(expression, "compute.googleapis.com/ResourcePolicy", f"{REGIONAL}/{name}-2")
    assert grants(expression, IGM, f"{ZONAL}/instanceGroupManagers/{GFX_H100}-flex-0a1b2c3d")
    # Not the group's own MIG, another stack's flex MIGs, or one in another zone.
    static = one(plan, MIG, "gfx-cluster-h100-mig").computed["name"]
    assert not grants(expression, IGM, f"{ZONAL}/instanceGroupManagers/{static}")
    dev = "gfx-cluster-dev-h100-f82a12ab"  # the dev stack's tag
    assert not grants(expression, IGM, f"{ZONAL}/instanceGroupManagers/{dev}-flex-0a1b2c3d")
    other_zone = f"projects/test-project/zones/us-central1-a/instanceGroupManagers/{GFX_H100}-flex-0"
    assert not grants(expression, IGM, other_zone)
    # The VMs a flex-start MIG makes are named by the node sync as any elastic VM.
    assert grants(expression, "compute.googleapis.com/Instance", f"{ZONAL}/instances/{GFX_H100}-elastic-3")


def test_bulk_insert_groups_get_no_mig_rights() -> None:
    body = FLEX.replace("    capacity: {kind: flex_start, max_run_duration_hours: 24}\n", "")
    permissions = one(gcp_plan(body, name="gfx", env="prod"), ROLE, "gfx-cluster-slurm-vms-role").inputs
    assert not [p for p in permissions["permissions"] if p.startswith("compute.instanceGroupManagers.")]
    assert (
        "instanceGroupManagers"
        not in one(gcp_plan(body, name="gfx", env="prod"), IAM_MEMBER, "gfx-cluster-slurm-vms").inputs[
            "condition"
        ]["expression"]
    )


def test_flex_start_outside_slurm_still_cannot_autoscale() -> None:
    partitioned = FLEX.replace(
        "  kind: slurm\n",
        "  kind: slurm\n  partitions: [{name: main, node_groups: [l4]}]\n",
    ).replace(
        "node_groups:\n",
        "node_groups:\n  - name: l4\n    machine_type: g2-standard-96\n    count: 1\n",
        1,
    )
    with pytest.raises(PlanError, match=r"error\[BP120\] node_groups\[1\].autoscaling: flex-start capacity"):
        gcp_plan(partitioned, name="gfx", env="prod")
