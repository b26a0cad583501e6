"""Dynamic inventory for push mode: the cluster's nodes, found by their tags / labels, by node group.

The inventory is a plugin configuration (amazon.aws.aws_ec2 or google.cloud.gcp_compute), built
from the stack's outputs, so it always lists the nodes that exist now (autoscaled, replaced spot
nodes) instead of a stale host list. Nodes have no public addresses: Ansible reaches them through
SSM Session Manager on AWS and through an IAP tunnel on GCP, the same paths a person uses.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

from ruamel.yaml import YAML

from clusterfab.core.errors import UsageError
from clusterfab.core.vocab import NODE_GROUP_TAG

GROUP_PREFIX = "node_group"
"""Inventory groups are `node_group_<name>` (hyphens become underscores, as Ansible group names need)."""


def _require(outputs: Mapping[str, Any], *keys: str) -> Any:
    value: Any = outputs
    for key in keys:
        if not isinstance(value, Mapping) or key not in value:
            raise UsageError(f"the stack has no output {'.'.join(keys)}; run `clusterfab up` for it first")
        value = value[key]
    return value


def inventory_config(outputs: Mapping[str, Any]) -> dict[str, Any]:
    """The inventory plugin configuration for the cluster described by a stack's outputs."""
    blueprint = _require(outputs, "blueprint")
    cloud = _require(outputs, "blueprint", "cloud")
    selector: Mapping[str, str] = _require(outputs, "node_selector")
    if cloud == "aws":
        return _aws(blueprint, selector, outputs)
    if cloud == "gcp":
        return _gcp(blueprint, selector, outputs)
    raise UsageError(f"unknown cloud {cloud!r} in the stack outputs")


def _aws(
    blueprint: Mapping[str, Any], selector: Mapping[str, str], outputs: Mapping[str, Any]
) -> dict[str, Any]:
    region = blueprint["region"]
    return {
        "plugin": "amazon.aws.aws_ec2",
        "regions": [region],
        "filters": {**selector, "instance-state-name": "running"},
        "hostnames": ["instance-id"],
        "keyed_groups": [{"key": f"tags['{NODE_GROUP_TAG}']", "prefix": GROUP_PREFIX, "separator": "_"}],
        "compose": {
            # No public IPs and no SSH from outside: Session Manager carries the connection; its
            # file transfers go through the cluster bucket, which the node role may read.
            "ansible_connection": "'amazon.aws.aws_ssm'",
            "ansible_aws_ssm_region": f"'{region}'",
            "ansible_aws_ssm_bucket_name": f"'{_require(outputs, 'bucket')}'",
            "ansible_become": "true",
        },
    }


def _gcp(
    blueprint: Mapping[str, Any], selector: Mapping[str, str], outputs: Mapping[str, Any]
) -> dict[str, Any]:
    project = _require(outputs, "project")
    zone = blueprint["zone"]
    # The selector's keys are already filter terms (`labels.clusterfab-stack`).
    filters = [f"{key} = {value}" for key, value in selector.items()]
    tunnel = (
        f'-o ProxyCommand="gcloud compute start-iap-tunnel %h 22 --listen-on-stdin '
        f'--project={project} --zone={zone}"'
    )
    return {
        "plugin": "google.cloud.gcp_compute",
        "projects": [project],
        "zones": [zone],
        "filters": filters,
        "auth_kind": "application",
        "hostnames": ["name"],
        "keyed_groups": [{"key": f"labels['{NODE_GROUP_TAG}']", "prefix": GROUP_PREFIX, "separator": "_"}],
        "compose": {
            "ansible_host": "name",
            # Nodes have no external IP; IAP forwards SSH to the internal address (firewall allows
            # only 35.235.240.0/20 on port 22).
            "ansible_ssh_common_args": f"'{tunnel}'",
            "ansible_become": "true",
        },
    }


def group_name(node_group: str) -> str:
    """The inventory group of a node group, for `--limit`."""
    return f"{GROUP_PREFIX}_{node_group.replace('-', '_')}"


def inventory_yaml(config: Mapping[str, Any]) -> str:
    """The inventory plugin configuration as the YAML file the plugin reads."""
    stream = io.StringIO()
    # The round-trip dumper keeps the keys in order (`plugin:` first, as people write these files).
    yaml = YAML()
    yaml.default_flow_style = False
    yaml.dump(dict(config), stream)
    return stream.getvalue()
