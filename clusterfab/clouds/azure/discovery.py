"""Prometheus finds an Azure cluster's GPU nodes with azure_sd_configs (the monitoring host's managed
identity reads the subscription's VMs and scale set instances), and keeps those with the cluster's tags
by relabeling: Azure service discovery has no server-side filter, its tags arrive as
`__meta_azure_machine_tag_<name>` (prometheus.io/docs/prometheus/latest/configuration/configuration/
#azure_sd_config)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from clusterfab.clouds.azure.hostvars import resource_group_name
from clusterfab.clouds.discovery import meta_label, relabel
from clusterfab.core.vocab import BLUEPRINT_TAG, COMPONENT_TAG, NODE_GROUP_TAG, STACK_TAG, label_value

if TYPE_CHECKING:
    from clusterfab.clouds.base import Site

TAG_META = "__meta_azure_machine_tag_"
SUBSCRIPTION_NAMESPACE, SUBSCRIPTION_KEY = "azure-native", "subscriptionId"
SUBSCRIPTION_SETTING = f"{SUBSCRIPTION_NAMESPACE}:{SUBSCRIPTION_KEY}"
"""The stack setting that names the subscription the nodes live in: the azure-native provider's own
`subscriptionId` (www.pulumi.com/registry/packages/azure-native/installation-configuration/, "Configuration
options"; pulumi_azure_native.config.vars reads it as `azure-native:subscriptionId`, read 2026-11-29). The
monitoring host's files are rendered before any resource exists, so the deployer's subscription, known
only once the provider answers, cannot be written into them."""


def _keep(tag: str, regex: str) -> dict[str, Any]:
    return {"source_labels": [meta_label(TAG_META, tag)], "regex": regex, "action": "keep"}


def _escaped(value: str) -> str:
    """A literal value as a (fully anchored) Prometheus regular expression."""
    return "".join(f"\\{c}" if c in r".^$*+?()[]{}|\/" else c for c in value)


def scrape_discovery(
    spec: Site,
    *,
    stack: str,
    port: int,
    project: str | None,
    component: str | None = None,
    tag: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """azure_sd_configs in the subscription `project` (Azure's scope of VMs), authenticated with the
    host's managed identity, and relabeling that keeps the running machines with this cluster's and
    stack's tags and a node group tag (or `component`'s component tag, or the tag `tag[0]` = `tag[1]`)."""
    if project is None:
        raise ValueError("Azure discovery needs the subscription the nodes live in")
    if component is not None:
        tag = (COMPONENT_TAG, component)
    selected = _keep(NODE_GROUP_TAG, ".+") if tag is None else _keep(tag[0], _escaped(tag[1]))
    keep = [
        _keep(BLUEPRINT_TAG, _escaped(spec.name)),
        _keep(STACK_TAG, _escaped(label_value(stack))),
        selected,
    ]
    return {
        "azure_sd_configs": [
            {
                "environment": "AzurePublicCloud",
                "authentication_method": "ManagedIdentity",
                "subscription_id": project,
                # The stack's own group alone: the host's identity may read that group and nothing else.
                "resource_group": resource_group_name(spec.name, stack),
                "port": port,
            }
        ],
        "relabel_configs": [
            *keep,
            *relabel(
                instance="__meta_azure_machine_name",
                node_group=meta_label(TAG_META, NODE_GROUP_TAG),
                machine_type="__meta_azure_machine_size",
                machine_regex="(.+)",
            ),
        ],
    }
