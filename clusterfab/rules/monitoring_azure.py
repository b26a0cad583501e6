"""Monitoring rules of Azure clusters: Prometheus on the Slurm controller discovers the nodes in the
subscription the stack names (BP252), and nothing built on Azure reads an SMTP password secret yet
(BP253)."""

from __future__ import annotations

from collections.abc import Iterator

from clusterfab.clouds.azure.discovery import SUBSCRIPTION_SETTING
from clusterfab.core.findings import Finding, Severity
from clusterfab.rules.context import RuleContext

AZURE = "azure"
SUBSCRIPTION_EXAMPLE = "00000000-0000-0000-0000-000000000000"


def check_azure_discovery_subscription(ctx: RuleContext) -> Iterator[Finding]:
    """The subscription azure_sd_configs lists, from the stack's `azure-native:subscriptionId`: the
    program renders prometheus.yml before any resource exists, so the deployer's subscription, which the
    provider answers only once it runs, cannot be written into it.

    Only for a command that deploys or plans a deployment (`ctx.stack`); a note without a stack named."""
    stack = ctx.stack
    if ctx.blueprint.cloud != AZURE or stack is None or ctx.spec.monitoring is None:
        return
    setting = SUBSCRIPTION_SETTING
    if stack.name is None:
        yield ctx.finding(
            "BP252",
            ("monitoring",),
            f"Prometheus discovers the nodes in the subscription the stack names ({setting}); a stack "
            "without it does not deploy",
            hint=f"`pulumi config set {setting} {SUBSCRIPTION_EXAMPLE} --stack STACK` (`az account show "
            "--query id -o tsv`); `clusterfab validate --stack STACK` checks a stack's settings",
            at_key=True,
            severity=Severity.INFO,
        )
    elif stack.provider_settings.get(setting) is None:
        yield ctx.finding(
            "BP252",
            ("monitoring",),
            f"stack {stack.name} names no subscription ({setting}): Prometheus could not discover the "
            "nodes, and `pulumi up` stops",
            hint=f"`pulumi config set {setting} {SUBSCRIPTION_EXAMPLE} --stack {stack.name}` with the id "
            "of the subscription the stack deploys to (`az account show --query id -o tsv`)",
            at_key=True,
        )


def check_azure_smtp_secret(ctx: RuleContext) -> Iterator[Finding]:
    """No host built on Azure has a right to a Key Vault secret of the operator's, so Alertmanager could
    not read the SMTP password: an error, rather than a relay that refuses every mail."""
    spec = ctx.blueprint.monitoring
    if ctx.blueprint.cloud != AZURE or spec is None or spec.smtp is None or spec.smtp.password_secret is None:
        return
    yield ctx.finding(
        "BP253",
        ("monitoring", "smtp", "password_secret"),
        "on Azure nothing clusterfab builds reads monitoring.smtp.password_secret yet: the monitoring host "
        "has no right to a Key Vault secret",
        hint="remove password_secret (and use a relay that accepts the cluster without a password), or "
        "remove smtp; alerts still show in Grafana and Alertmanager",
    )
