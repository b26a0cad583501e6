"""Monitoring on Azure under the mock engine: Prometheus runs on the Slurm controller, which gets Reader on
the stack's resource group for its node discovery and no other new role; the stack's
azure-native:subscriptionId, which discovery lists, must be the credentials' subscription; a stack without
that setting stops with a message that names it."""

from __future__ import annotations

import pulumi
import pytest

from clusterfab.plan.engine import PlanError
from clusterfab.plan.project import Plan
from clusterfab.policy import access
from clusterfab.policy.resources import Resource
from components.azure.monitoring import AzureMonitoringAccess, AzureMonitoringAccessArgs
from tests.components.azure_harness import build
from tests.components.harness import all_of, one, plan_configured

ROLE = "azure-native:authorization:RoleAssignment"
IDENTITY = "azure-native:managedidentity:UserAssignedIdentity"
SUBSCRIPTION_SETTING = "azure-native:subscriptionId"
"""The azure-native provider's own setting (www.pulumi.com/registry/packages/azure-native/
installation-configuration/, read 2026-11-29)."""
SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"
"""The mock engine's subscription (what its getClientConfig answers): the credentials' own."""
READER = "acdd72a7-3385-48ef-bd42-f606fba81ae7"
"""Reader, learn.microsoft.com/azure/role-based-access-control/built-in-roles/general#reader (read
2026-11-29)."""
BLUEPRINT = """version: 1
name: hpc
cloud: azure
region: southcentralus
zone: "1"
network: {cidr: 10.20.0.0/16}
node_groups:
  - name: h100
    machine_type: Standard_ND96isr_H100_v5
    count: 2
scheduler:
  kind: slurm
  login: {count: 1}
teams:
  - {name: research, max_gpus: 16, users: [alice]}
"""
MONITORING = """monitoring:
  kind: prometheus
  alert_emails: [ml-infra@example.com]
  smtp: {smarthost: "smtp.example.com:25", sender: alerts@example.com}
"""
SETTING = ((SUBSCRIPTION_SETTING, SUBSCRIPTION),)


def _monitored() -> Plan:
    return plan_configured(BLUEPRINT + MONITORING, SETTING)


def test_the_controller_gets_reader_on_the_stacks_resource_group_and_no_other_new_role() -> None:
    monitored, plain = _monitored(), plan_configured(BLUEPRINT, SETTING)
    new = {r.name for r in all_of(monitored, ROLE)} - {r.name for r in all_of(plain, ROLE)}
    assert new == {"hpc-monitoring-access-discovery-reader"}
    assert len(all_of(monitored, ROLE)) == len(all_of(plain, ROLE)) + 1
    reader = one(monitored, ROLE, "hpc-monitoring-access-discovery-reader").inputs
    assert reader == {
        "scope": "hpc-rg-rg-id",
        "roleDefinitionId": "/subscriptions/00000000-0000-0000-0000-000000000000/providers/"
        f"Microsoft.Authorization/roleDefinitions/{READER}",
        "principalId": "667fa008-bd26-5f03-bc38-dfd0c7007660",
        "principalType": "ServicePrincipal",
        "description": "clusterfab hpc-monitoring-access: Prometheus discovers the cluster's nodes",
    }
    # The mock engine answers the resource group's id as `hpc-rg-rg-id` and the controller identity's
    # principal id as above: the one principal that holds the munge key's vault role, not the nodes'.
    one(monitored, "azure-native:resources:ResourceGroup", "hpc-rg-rg")
    one(monitored, IDENTITY, "hpc-slurm-controller-identity")
    controller = one(monitored, ROLE, "hpc-slurm-vault-controller-secrets").inputs["principalId"]
    nodes = one(monitored, ROLE, "hpc-nodes-bundle-reader").inputs["principalId"]
    assert reader["principalId"] == controller != nodes


def test_a_setting_that_is_not_the_credentials_subscription_fails_the_deployment() -> None:
    other = "00000000-0000-0000-0000-0000000000aa"
    with pytest.raises(PlanError) as info:
        plan_configured(BLUEPRINT + MONITORING, ((SUBSCRIPTION_SETTING, other),))
    assert (
        "the stack setting azure-native:subscriptionId is 00000000-0000-0000-0000-0000000000aa, but the "
        "Azure credentials deploy to subscription 00000000-0000-0000-0000-000000000000: `az account set "
        "--subscription 00000000-0000-0000-0000-0000000000aa`, or correct the setting"
    ) in str(info.value)


def test_a_stack_without_the_subscription_stops_with_the_setting_named() -> None:
    with pytest.raises(PlanError) as info:
        plan_configured(BLUEPRINT + MONITORING, ())
    message = str(info.value)
    assert (
        "monitoring on Azure needs the stack setting azure-native:subscriptionId, the subscription "
        "Prometheus discovers the nodes in: `pulumi config set azure-native:subscriptionId "
        "$(az account show --query id -o tsv) --stack plan`"
    ) in message


def test_the_policy_pack_admits_reader_on_the_resource_group() -> None:
    inputs = dict(one(_monitored(), ROLE, "hpc-monitoring-access-discovery-reader").inputs)
    inputs["scope"] = "/subscriptions/s/resourceGroups/hpc-rg1234"  # what Azure answers for the group
    assignment = Resource(ROLE, "hpc-monitoring-access-discovery-reader", "urn:x", inputs)
    assert access.wildcard_iam(assignment) == []


def test_the_component_refuses_a_scope_wider_than_a_resource_group() -> None:
    def program() -> None:
        AzureMonitoringAccess(
            "hpc-monitoring-access",
            AzureMonitoringAccessArgs(
                subscription_id=SUBSCRIPTION,
                resource_group_id=f"/subscriptions/{SUBSCRIPTION}",
                principal_id="p",
            ),
        )

    with pytest.raises((pulumi.InputPropertiesError, PlanError)) as info:
        build(program)
    assert f"resource_group_id: '/subscriptions/{SUBSCRIPTION}' is not a resource group's id" in str(
        info.value
    )
