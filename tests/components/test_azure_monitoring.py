"""Monitoring on Azure under the mock engine: Prometheus runs on the Slurm controller, which discovers the
nodes with the Reader on the stack's resource group it holds anyway and gets no new role; the stack's
azure-native:subscriptionId, which discovery lists, must be the credentials' subscription; a stack without
that setting stops with a message that names it."""

from __future__ import annotations

import base64

import pytest

from clusterfab.plan.engine import PlanError
from clusterfab.plan.project import Plan
from tests.components.harness import all_of, boot_vars, one, plan_configured

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
KEY_VAULT_SECRETS_USER = "4633458b-17de-408a-b874-0445c86b69e6"
"""Key Vault Secrets User, learn.microsoft.com/azure/role-based-access-control/built-in-roles/
security#key-vault-secrets-user (read 2026-11-29)."""
SMTP_SECRET = (
    "/subscriptions/5b1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d/resourceGroups/ops/providers/Microsoft.KeyVault/vaults/"
    "Ops-Mail/secrets/smtp-password"
)


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


def test_the_smtp_password_is_read_with_a_role_on_that_one_secret_of_the_operators_vault() -> None:
    mailing = MONITORING.replace(
        "sender: alerts@example.com}",
        f"sender: alerts@example.com, username: alerts, password_secret: {SMTP_SECRET}}}",
    )
    plan = plan_configured(BLUEPRINT + mailing, SETTING)
    extra = {r.name for r in all_of(plan, ROLE)} - {r.name for r in all_of(_monitored(), ROLE)}
    assert extra == {"hpc-controller-access-smtp-password"}
    grant = one(plan, ROLE, "hpc-controller-access-smtp-password").inputs
    reader = one(plan, ROLE, "hpc-controller-access-reader").inputs
    assert grant == {
        "scope": SMTP_SECRET,
        "roleDefinitionId": (
            f"/subscriptions/{SUBSCRIPTION}/providers/Microsoft.Authorization/roleDefinitions/"
            f"{KEY_VAULT_SECRETS_USER}"
        ),
        # The controller's identity: the one that runs Alertmanager and holds the Reader.
        "principalId": reader["principalId"],
        "principalType": "ServicePrincipal",
        "description": "clusterfab hpc-controller-access: Alertmanager logs in to the mail relay",
    }
    controller = one(plan, "azure-native:compute:VirtualMachine", "hpc-slurm-controller").inputs
    host = boot_vars(base64.b64decode(controller["userData"]).decode())
    assert host["alertmanager_smtp_password_secret"] == SMTP_SECRET
    # Key Vault's data plane names the vault in lower case; the token is the controller identity's.
    assert host["alertmanager_vault_url"] == "https://ops-mail.vault.azure.net/"
    assert host["alertmanager_client_id"] == host["munge_key_client_id"]
    assert (host["alertmanager_cloud"], host["alertmanager_region"]) == ("azure", "southcentralus")


def test_without_a_password_the_controller_gets_no_secret_role_and_no_vault_settings() -> None:
    controller = one(_monitored(), "azure-native:compute:VirtualMachine", "hpc-slurm-controller").inputs
    host = boot_vars(base64.b64decode(controller["userData"]).decode())
    assert host["alertmanager_smtp_password_secret"] == ""
    assert "alertmanager_vault_url" not in host
    assert "alertmanager_client_id" not in host
