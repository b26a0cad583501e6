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

from clusterfab.clouds import profile
from clusterfab.core.vocab import INVENTORY_GROUP_PREFIX
from clusterfab.outputs import StackOutputs


def inventory_config(outputs: StackOutputs) -> dict[str, Any]:
    """The inventory plugin configuration for the cluster described by a stack's outputs."""
    return profile(outputs.blueprint.cloud).inventory(outputs)


def group_name(node_group: str) -> str:
    """The inventory group of a node group, for `--limit`."""
    return f"{INVENTORY_GROUP_PREFIX}_{node_group.replace('-', '_')}"


def inventory_yaml(config: Mapping[str, Any]) -> str:
    """The inventory plugin configuration as the YAML file the plugin reads."""
    stream = io.StringIO()
    # The round-trip dumper keeps the keys in order (`plugin:` first, as people write these files).
    yaml = YAML()
    yaml.default_flow_style = False
    yaml.dump(dict(config), stream)
    return stream.getvalue()
