"""What the Slurm controller's identity holds on Azure besides the munge key's vault, under the mock engine:
Reader on the stack's resource group and Virtual Machine Contributor on each Slurm scale set, exactly; the
node groups outside Slurm's partitions get no grant; the component refuses a scope wider than its own."""

from __future__ import annotations

import pulumi
import pytest

from clusterfab.plan.engine import PlanError
from clusterfab.policy import access
from clusterfab.policy.resources import Resource
from components.azure.controller_access import AzureControllerAccess, AzureControllerAccessArgs
from tests.components.azure_harness import build
from tests.components.harness import all_of, one, plan_text

ROLE = "azure-native:authorization:RoleAssignment"
SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"
"""The mock engine's subscription (what its getClientConfig answers)."""
READER = "acdd72a7-3385-48ef-bd42-f606fba81ae7"
"""Reader, learn.microsoft.com/azure/role-based-access-control/built-in-roles/general#reader (read
2026-11-29)."""
VIRTUAL_MACHINE_CONTRIBUTOR = "9980e02c-c2be-4d73-94e8-173b1dc7cf3c"
"""Virtual Machine Contributor, learn.microsoft.com/azure/role-based-access-control/built-in-roles/
compute#virtual-machine-contributor (read 2026-11-29)."""
CONTROLLER_PRINCIPAL = "667fa008-bd26-5f03-bc38-dfd0c7007660"
"""The controller identity's principal id as the mock engine answers it (a UUID of its name)."""
BLUEPRINT = """version: 1
name: hpc
cloud: azure
region: southcentralus
zone: "1"
network: {cidr: 10.20.0.0/16}
node_groups:
  - name: h100
    machine_type: Standard_ND96isr_H100_v5
    count: 150
  - name: spare
    machine_type: Standard_ND96isr_H100_v5
    count: 2
scheduler:
  kind: slurm
  partitions:
    - {name: train, node_groups: [h100], default: true}
teams:
  - {name: research, max_gpus: 64, users: [alice]}
"""
PLAN = plan_text(BLUEPRINT, None)


def _role(definition: str) -> str:
    return f"/subscriptions/{SUBSCRIPTION}/providers/Microsoft.Authorization/roleDefinitions/{definition}"


def test_the_controller_reads_the_group_and_manages_the_slurm_scale_sets_alone() -> None:
    granted = {r.name: r.inputs for r in all_of(PLAN, ROLE) if r.name.startswith("hpc-controller-access-")}
    assert granted == {
        "hpc-controller-access-reader": {
            "scope": "hpc-rg-rg-id",
            "roleDefinitionId": _role(READER),
            "principalId": CONTROLLER_PRINCIPAL,
            "principalType": "ServicePrincipal",
            "description": "clusterfab hpc-controller-access: the node sync lists the scale sets, "
            "Prometheus the nodes",
        },
        **{
            f"hpc-controller-access-{unit}": {
                "scope": f"hpc-{unit}-vmss-id",
                "roleDefinitionId": _role(VIRTUAL_MACHINE_CONTRIBUTOR),
                "principalId": CONTROLLER_PRINCIPAL,
                "principalType": "ServicePrincipal",
                "description": "clusterfab hpc-controller-access: the node sync replaces failed VMs of "
                f"fabric unit {unit}",
            }
            for unit in ("h100-0", "h100-1")
        },
    }
    # The group outside every partition has a scale set and no grant on it.
    one(PLAN, "azure-native:compute:VirtualMachineScaleSet", "hpc-spare-vmss")
    # The principal is the controller's, which also holds the vault's role; not the nodes'.
    assert one(PLAN, ROLE, "hpc-slurm-vault-controller-secrets").inputs["principalId"] == CONTROLLER_PRINCIPAL
    assert one(PLAN, ROLE, "hpc-nodes-bundle-reader").inputs["principalId"] != CONTROLLER_PRINCIPAL


def test_the_policy_pack_admits_the_grants() -> None:
    for name, scope in (
        ("hpc-controller-access-reader", "/subscriptions/s/resourceGroups/hpc-rg1234"),
        (
            "hpc-controller-access-h100-0",
            "/subscriptions/s/resourceGroups/hpc-rg1234/providers/Microsoft.Compute/"
            "virtualMachineScaleSets/hpc-h100-0-vmss1234",
        ),
    ):
        inputs = {**one(PLAN, ROLE, name).inputs, "scope": scope}  # what Azure answers for the scope
        assert access.wildcard_iam(Resource(ROLE, name, "urn:x", inputs)) == []


@pytest.mark.parametrize(
    ("group", "scale_set", "problem"),
    [
        (
            f"/subscriptions/{SUBSCRIPTION}",
            f"/subscriptions/{SUBSCRIPTION}/resourceGroups/g/providers/Microsoft.Compute/"
            "virtualMachineScaleSets/s",
            f"resource_group_id: '/subscriptions/{SUBSCRIPTION}' is not a resource group's id",
        ),
        (
            f"/subscriptions/{SUBSCRIPTION}/resourceGroups/g",
            f"/subscriptions/{SUBSCRIPTION}/resourceGroups/g",
            f"scale_sets.h100-0: '/subscriptions/{SUBSCRIPTION}/resourceGroups/g' is not a scale set's "
            "resource id",
        ),
    ],
)
def test_the_component_refuses_a_scope_wider_than_its_own(group: str, scale_set: str, problem: str) -> None:
    def program() -> None:
        AzureControllerAccess(
            "hpc-controller-access",
            AzureControllerAccessArgs(
                subscription_id=SUBSCRIPTION,
                resource_group_id=group,
                scale_sets={"h100-0": scale_set},
                principal_id="p",
            ),
        )

    with pytest.raises((pulumi.InputPropertiesError, PlanError)) as info:
        build(program)
    assert problem in str(info.value)


@pytest.mark.parametrize(
    "secret",
    [
        "/subscriptions/s/resourceGroups/ops/providers/Microsoft.KeyVault/vaults/ops-mail",
        "/subscriptions/s/resourceGroups/ops/providers/Microsoft.KeyVault/vaults/ops-mail/secrets/*",
        "/subscriptions/s/resourceGroups/ops/providers/Microsoft.KeyVault/vaults/ops-mail/secrets/a/versions/1",
        "smtp-password",
    ],
)
def test_the_smtp_grant_names_one_secret_or_nothing_is_built(secret: str) -> None:
    def program() -> None:
        AzureControllerAccess(
            "hpc-controller-access",
            AzureControllerAccessArgs(
                subscription_id=SUBSCRIPTION,
                resource_group_id=f"/subscriptions/{SUBSCRIPTION}/resourceGroups/g",
                principal_id="p",
                smtp_secret_id=secret,
            ),
        )

    with pytest.raises((pulumi.InputPropertiesError, PlanError)) as info:
        build(program)
    assert f"smtp_secret_id: '{secret}' is not a Key Vault secret's resource id" in str(info.value)


def test_the_policy_pack_admits_the_grant_on_one_secret() -> None:
    secret = "/subscriptions/s/resourceGroups/ops/providers/Microsoft.KeyVault/vaults/ops-mail/secrets/smtp"
    inputs = {
        "scope": secret,
        "roleDefinitionId": _role("4633458b-17de-408a-b874-0445c86b69e6"),
        "principalId": CONTROLLER_PRINCIPAL,
        "principalType": "ServicePrincipal",
    }
    assert access.wildcard_iam(Resource(ROLE, "hpc-controller-access-smtp-password", "urn:x", inputs)) == []
