"""The Azure realizer under the mock engine: one Uniform scale set with a single placement group per
InfiniBand fabric unit (a 16-node group is one; a 200-node group two of 100, never one of more than 100),
NVL72 racks of 18 without one, spot capacity, the nodes' exact rights, the bundle and verdict containers, the
budget of the stack's resource group, and the deployer's settings."""

from __future__ import annotations

import datetime as dt
from typing import Any

from clusterfab.plan.project import Plan
from tests.components.harness import all_of, one, plan_configured, plan_text

SCALE_SET = "azure-native:compute:VirtualMachineScaleSet"
ROLE = "azure-native:authorization:RoleAssignment"
HEAD = """version: 1
name: {name}
cloud: azure
region: southcentralus
zone: "1"
network: {{cidr: 10.20.0.0/16}}
"""


def azure_plan(body: str, *, name: str = "az", env: str | None = None) -> Plan:
    return plan_text(HEAD.format(name=name) + body, env)


def _group(machine: str, size: str, extra: str = "") -> str:
    return f"node_groups:\n  - name: gpus\n    machine_type: {machine}\n    {size}\n{extra}"


def _sets(plan: Plan) -> list[tuple[str, int, bool, str]]:
    return sorted(
        (r.name, r.inputs["sku"]["capacity"], r.inputs["singlePlacementGroup"], r.inputs["sku"]["name"])
        for r in all_of(plan, SCALE_SET)
    )


def test_a_16_node_nd_h100_group_is_one_scale_set_with_a_single_placement_group() -> None:
    plan = azure_plan(_group("Standard_ND96isr_H100_v5", "count: 16"))
    assert _sets(plan) == [("az-gpus-vmss", 16, True, "Standard_ND96isr_H100_v5")]
    inputs = one(plan, SCALE_SET).inputs
    assert (inputs["orchestrationMode"], inputs["overprovision"], inputs["platformFaultDomainCount"]) == (
        "Uniform",
        False,
        1,
    )
    assert inputs["zones"] == ["1"]


def test_a_200_node_group_becomes_two_scale_sets_of_100_never_one_larger() -> None:
    plan = azure_plan(_group("Standard_ND96isr_H100_v5", "count: 200"), name="big")
    assert _sets(plan) == [
        ("big-gpus-0-vmss", 100, True, "Standard_ND96isr_H100_v5"),
        ("big-gpus-1-vmss", 100, True, "Standard_ND96isr_H100_v5"),
    ]
    # The node group's outputs name both scale sets; every one carries the group's tag.
    assert {r.inputs["tags"]["clusterfab-node-group"] for r in all_of(plan, SCALE_SET)} == {"gpus"}
    assert plan.outputs["node_groups"]["gpus"]["max_size"] == 200


def test_250_nodes_split_into_near_equal_units() -> None:
    plan = azure_plan(_group("Standard_ND96isr_H100_v5", "count: 250"), name="odd")
    assert [capacity for _, capacity, _, _ in _sets(plan)] == [84, 83, 83]


def test_gb300_racks_are_scale_sets_of_18_without_a_single_placement_group() -> None:
    plan = azure_plan(_group("Standard_ND128isr_GB300_v6", "count: 36"), name="gb")
    assert _sets(plan) == [
        ("gb-gpus-0-vmss", 18, False, "Standard_ND128isr_GB300_v6"),
        ("gb-gpus-1-vmss", 18, False, "Standard_ND128isr_GB300_v6"),
    ]
    image = one(plan, SCALE_SET, "gb-gpus-0-vmss").inputs["virtualMachineProfile"]["storageProfile"]
    assert image["imageReference"] == {
        "offer": "ubuntu-hpc",
        "publisher": "microsoft-dsvm",
        "sku": "2404-gb",
        "version": "latest",
    }


def test_a_group_without_infiniband_is_one_scale_set_without_a_single_placement_group() -> None:
    plan = azure_plan(_group("Standard_ND96isr_H100_v5", "count: 4", "    fabric: none\n"), name="plain")
    assert _sets(plan) == [("plain-gpus-vmss", 4, False, "Standard_ND96isr_H100_v5")]


def test_spot_capacity_is_a_spot_scale_set_whose_evicted_vms_are_deleted() -> None:
    body = _group("Standard_ND96isr_H100_v5", "count: 2", "    capacity: {kind: spot}\n")
    profile = one(azure_plan(body, name="spot"), SCALE_SET).inputs["virtualMachineProfile"]
    assert (profile["priority"], profile["evictionPolicy"], profile["billingProfile"]) == (
        "Spot",
        "Delete",
        {"maxPrice": -1},
    )


def _role(plan: Plan, name: str) -> dict[str, Any]:
    return dict(one(plan, ROLE, name).inputs)


def test_the_nodes_may_read_the_bundle_container_and_write_the_verdict_container_nothing_else() -> None:
    plan = azure_plan(_group("Standard_ND96isr_H100_v5", "count: 2"), name="rights")
    roles = sorted((r.name, r.inputs["scope"], r.inputs["roleDefinitionId"]) for r in all_of(plan, ROLE))
    sub = "/subscriptions/00000000-0000-0000-0000-000000000000/providers/Microsoft.Authorization/"
    reader = f"{sub}roleDefinitions/2a2b9908-6ea1-4ae2-8e65-a410df84e7d1"  # Storage Blob Data Reader
    writer = f"{sub}roleDefinitions/ba92f5b4-2d11-453d-a403-e96b0029c9fe"  # Storage Blob Data Contributor
    assert roles == [
        ("rights-artifacts-uploader", "rights-artifacts-container-id", writer),
        ("rights-nodes-bundle-reader", "rights-artifacts-container-id", reader),
        ("rights-nodes-verdict-writer", "rights-artifacts-verdicts-id", writer),
    ]
    verdicts = one(plan, "azure-native:storage:BlobContainer", "rights-artifacts-verdicts").inputs
    assert (verdicts["containerName"], verdicts["publicAccess"]) == ("clusterfab-health", "None")


def test_the_budget_counts_the_stacks_resource_group() -> None:
    body = (
        _group("Standard_ND96isr_H100_v5", "count: 2")
        + "budget: {max_monthly_usd: 50000, alert_emails: [a@example.com]}\n"
    )
    budget = one(azure_plan(body, name="bud"), "azure-native:consumption:Budget").inputs
    assert budget["scope"] == "bud-rg-rg-id"
    assert (budget["amount"], budget["category"], budget["timeGrain"]) == (50000.0, "Cost", "Monthly")
    start = dt.date.fromisoformat(budget["timePeriod"]["startDate"][:10])
    assert start.day == 1
    assert sorted(budget["notifications"]) == ["actual", "forecast"]
    assert budget["notifications"]["actual"] == {
        "contactEmails": ["a@example.com"],
        "enabled": True,
        "operator": "GreaterThanOrEqualTo",
        "threshold": 80.0,
        "thresholdType": "Actual",
    }


def test_the_deployers_ranges_and_principal_type_come_from_the_stack_config() -> None:
    text = HEAD.format(name="dep") + _group("Standard_ND96isr_H100_v5", "count: 2")
    config = (
        ("clusterfab:deployerRanges", '["198.51.100.0/28"]'),
        ("clusterfab:deployerPrincipalType", "ServicePrincipal"),
    )
    plan = plan_configured(text, config)
    account = one(plan, "azure-native:storage:StorageAccount").inputs
    assert account["networkRuleSet"]["defaultAction"] == "Deny"
    assert [r["iPAddressOrRange"] for r in account["networkRuleSet"]["ipRules"]] == ["198.51.100.0/28"]
    assert _role(plan, "dep-artifacts-uploader")["principalType"] == "ServicePrincipal"
