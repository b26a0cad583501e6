"""Who else opens `clusterfab dashboard` on an Azure stack: the stack setting `clusterfab:operators` names
users, groups or service principals by object id, and each gets Virtual Machine User Login (a regular
user's Microsoft Entra sign-in, no sudo) on the Slurm controller VM alone; the deployer keeps its
administrator login. A malformed entry stops the program with what to write instead."""

from __future__ import annotations

import json

import pulumi
import pytest

from clusterfab.clouds.azure.access import operators
from clusterfab.plan.engine import PlanError
from components.azure.node_group import AzureImage
from components.azure.slurm import (
    AzureEntraLogin,
    AzureSlurmController,
    AzureSlurmControllerArgs,
    AzureSlurmHost,
)
from tests.components.azure_harness import build
from tests.components.harness import all_of, plan_configured
from tests.components.test_azure_slurm import BLUEPRINT, SUBSCRIPTION

ROLE = "azure-native:authorization:RoleAssignment"
GROUP = "0b8f6c2e-5a4d-4f1e-9c3b-2d7e8f9a0b1c"
USER = "7A1E2B3C-4D5E-4F60-8A9B-0C1D2E3F4A5B"
USER_LOGIN = f"{SUBSCRIPTION}roleDefinitions/fb879df8-f326-4884-b1cf-06f3ad86be52"
"""Virtual Machine User Login (Microsoft's built-in roles, compute)."""


def test_each_operator_gets_user_login_on_the_controller_alone() -> None:
    setting = json.dumps([f"Group:{GROUP}", f"User:{USER}"])
    plan = plan_configured(BLUEPRINT, (("clusterfab:operators", setting),))
    grants = {
        r.name: (
            r.inputs["scope"],
            r.inputs["roleDefinitionId"],
            r.inputs["principalId"],
            r.inputs["principalType"],
        )
        for r in all_of(plan, ROLE)
        if r.name.startswith("hpc-slurm-operator-login-")
    }
    assert grants == {
        "hpc-slurm-operator-login-0": ("hpc-slurm-controller-id", USER_LOGIN, GROUP, "Group"),
        # Object ids as Entra ID writes them: lower case.
        "hpc-slurm-operator-login-1": ("hpc-slurm-controller-id", USER_LOGIN, USER.lower(), "User"),
    }


def test_without_the_setting_only_the_deployer_signs_in() -> None:
    plan = plan_configured(BLUEPRINT, ())
    names = {r.name for r in all_of(plan, ROLE)}
    assert "hpc-slurm-admin-login" in names
    assert not any(name.startswith("hpc-slurm-operator-login-") for name in names)


def test_a_malformed_operator_stops_the_program_with_the_form_to_write() -> None:
    setting = json.dumps([f"Group:{GROUP}", "ops-team", f"Owner:{USER}"])
    with pytest.raises(PlanError) as refused:
        plan_configured(BLUEPRINT, (("clusterfab:operators", setting),))
    assert str(refused.value) == (
        "clusterfab:operators must be a list of <User|Group|ServicePrincipal>:<object id>, e.g. "
        '["Group:$(az ad group show --group ops --query id -o tsv)"]; '
        f"not 'ops-team', 'Owner:{USER}'"
    )


@pytest.mark.parametrize(
    ("value", "found"),
    [
        (None, ()),
        ([], ()),
        ([f"ServicePrincipal:{GROUP}"], ((GROUP, "ServicePrincipal"),)),
    ],
)
def test_the_setting_reads_as_object_ids_and_types(value: object, found: tuple[tuple[str, str], ...]) -> None:
    assert operators(value) == found


def test_a_single_string_is_not_a_list() -> None:
    with pytest.raises(ValueError, match=f"; not 'Group:{GROUP}'$"):
        operators(f"Group:{GROUP}")


def test_the_controller_component_refuses_an_operator_that_is_no_principal() -> None:
    """The component checks its own Args (the stack's parser aside): each operator is an object id and a
    principal type a role assignment takes."""
    login = AzureEntraLogin(
        subscription_id="s",
        principal_id=GROUP,
        principal_type="User",
        own_client_id="c",
        resource_group_id="g",
        operators=((GROUP, "Owner"), ("ops-team", "Group")),
    )

    def program() -> None:
        host = AzureSlurmHost(
            vm_size="Standard_D16s_v5", computer_name="hpc-controller", identity_id="i", launcher="#!/bin/sh",
            boot_script="true", private_ip="10.20.16.10",
        )  # fmt: skip
        AzureSlurmController(
            "hpc-slurm",
            AzureSlurmControllerArgs(
                cluster="hpc",
                resource_group_name="rg",
                location="southcentralus",
                subnet_id="subnet",
                image=AzureImage(publisher="Canonical", offer="ubuntu-24_04-lts", sku="server", version="1"),
                ssh_public_key="ssh-ed25519 AAAA",
                controller=host,
                entra_login=login,
            ),
        )

    with pytest.raises((pulumi.InputPropertiesError, PlanError)) as info:
        build(program)
    assert (
        "entra_login.operators[0]: 'Owner' is not one of User, ServicePrincipal, Group; "
        "entra_login.operators[1]: 'ops-team' is not an object id (a GUID)"
    ) in str(info.value)
