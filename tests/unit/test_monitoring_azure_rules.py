"""The monitoring rules of Azure clusters, word for word: the subscription Prometheus discovers the nodes in
is the stack's azure-native:subscriptionId (BP252), the SMTP password's secret is a Key Vault secret's
resource id (BP154) whose vault must admit the controller (BP253, a note), and a Slurm controller hosts
monitoring where the catalog has no monitoring node (BP251 stays for a cluster without one)."""

from __future__ import annotations

from pathlib import Path

from clusterfab.core.findings import Finding
from clusterfab.load import load
from clusterfab.rules.context import StackView
from tests.conftest import BAD_FIXTURES
from tests.factories import TODAY

NEEDS_SUBSCRIPTION = BAD_FIXTURES / "BP252-azure-monitoring-needs-the-subscription.yaml"


def _findings(path: Path, stack: StackView | None, code: str) -> list[Finding]:
    result = load(path, display=path.name, today=TODAY, stack=stack)
    return [f for f in result.findings if f.code == code]


def test_a_stack_without_the_subscription_gets_a_warning_that_names_the_setting() -> None:
    (found,) = _findings(NEEDS_SUBSCRIPTION, StackView(name="prod"), "BP252")
    assert (found.severity.value, found.field, found.line, found.column) == ("warning", "monitoring", 19, 1)
    assert found.message == (
        "stack prod names no subscription (azure-native:subscriptionId): Prometheus could not discover "
        "the nodes, and `pulumi up` stops"
    )
    assert found.hint == (
        "`pulumi config set azure-native:subscriptionId 00000000-0000-0000-0000-000000000000 --stack prod` "
        "with the id of the subscription the stack deploys to (`az account show --query id -o tsv`)"
    )


def test_a_stack_with_the_subscription_validates_and_a_command_without_a_stack_says_nothing() -> None:
    view = StackView(
        name="prod", provider_settings={"azure-native:subscriptionId": "00000000-0000-0000-0000-0000000000aa"}
    )
    assert _findings(NEEDS_SUBSCRIPTION, view, "BP252") == []
    assert _findings(NEEDS_SUBSCRIPTION, None, "BP252") == []
    result = load(NEEDS_SUBSCRIPTION, display="bp.yaml", today=TODAY, stack=view)
    assert result.ok


def test_validating_without_a_stack_notes_what_a_stack_needs() -> None:
    (found,) = _findings(NEEDS_SUBSCRIPTION, StackView(), "BP252")
    assert (found.severity.value, found.line, found.column) == ("info", 19, 1)
    assert found.message == (
        "Prometheus discovers the nodes in the subscription the stack names (azure-native:subscriptionId); "
        "a stack without it does not deploy"
    )


def test_an_smtp_password_secret_on_azure_notes_what_the_operators_vault_must_allow() -> None:
    path = BAD_FIXTURES / "BP253-azure-smtp-password-secret.yaml"
    (found,) = _findings(path, None, "BP253")
    assert (found.severity.value, found.field, found.line, found.column) == (
        "info",
        "monitoring.smtp.password_secret",
        23,
        22,
    )
    assert found.message == (
        "the Slurm controller reads secret smtp-password from vault ops-mail with its own identity (Key "
        "Vault Secrets User on that secret): the vault must use Azure role-based access and admit the "
        "controller subnet"
    )
    assert found.hint == (
        "`az keyvault update --name ops-mail --enable-rbac-authorization true`; a vault that denies public "
        "networks must admit the cluster's controller subnet (`az keyvault network-rule add --name ops-mail "
        "--subnet SUBNET_ID`); the controller stops at boot while it cannot read the password"
    )


def test_a_key_vault_secret_named_without_its_vault_is_refused_with_the_form_to_write() -> None:
    path = BAD_FIXTURES / "BP154-azure-smtp-secret.yaml"
    (found,) = _findings(path, None, "BP154")
    assert (found.severity.value, found.field, found.line, found.column) == (
        "error",
        "monitoring.smtp.password_secret",
        22,
        22,
    )
    assert found.message == "'smtp-password' is not a Key Vault secret's resource id"
    assert _findings(path, None, "BP253") == []


def test_without_a_controller_an_azure_cluster_still_gets_bp251() -> None:
    (found,) = _findings(BAD_FIXTURES / "BP251-azure-monitoring.yaml", None, "BP251")
    assert (found.severity.value, found.field, found.line, found.column) == ("error", "monitoring", 13, 1)
    assert found.message == (
        "clusterfab builds no monitoring node of its own on azure yet (the catalog has no monitoring "
        "machine for it), and the cluster has no scheduler controller to host monitoring"
    )
    assert found.hint == (
        "add scheduler: {kind: slurm} (its controller hosts monitoring), remove monitoring, or monitor a "
        "cluster on aws or gcp"
    )
