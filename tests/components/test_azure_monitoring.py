"""Monitoring on Azure under the mock engine: Prometheus runs on the Slurm controller, which discovers the
nodes with the Reader on the stack's resource group it holds anyway and gets no new role; the stack's
azure-native:subscriptionId, which discovery lists, must be the credentials' subscription; a stack without
that setting stops with a message that names it."""

from __future__ import annotations

import pytest

from clusterfab.plan.engine import PlanError
from clusterfab.plan.project import Plan
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


def test_monitoring_adds_no_role_the_controller_reads_the_group_with_its_node_sync_reader() -> None:
    """Azure refuses a second assignment of one role to one principal at one scope: Prometheus' discovery
    uses the Reader the controller holds for its node sync (test_azure_controller_access.py)."""
    monitored, plain = _monitored(), plan_configured(BLUEPRINT, SETTING)
    assert {r.name for r in all_of(monitored, ROLE)} == {r.name for r in all_of(plain, ROLE)}
    reader = one(monitored, ROLE, "hpc-controller-access-reader").inputs
    assert (reader["scope"], reader["roleDefinitionId"].rpartition("/")[2]) == ("hpc-rg-rg-id", READER)


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
