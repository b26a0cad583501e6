"""Prometheus finds an AWS cluster's GPU nodes with ec2_sd_configs, by the tags the stack puts on them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from clusterfab.clouds.discovery import meta_label, relabel
from clusterfab.core.vocab import BLUEPRINT_TAG, COMPONENT_TAG, NODE_GROUP_TAG, STACK_TAG, label_value

if TYPE_CHECKING:
    from clusterfab.clouds.base import Site


def scrape_discovery(
    spec: Site,
    *,
    stack: str,
    port: int,
    project: str | None,
    component: str | None = None,
    tag: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """ec2_sd_configs and relabeling: running instances with this cluster's and stack's tags, and a node
    group tag (or `component`'s component tag, or the `tag` (key, value))."""
    del project  # an EC2 region is the whole scope
    if component is not None:
        tag = (COMPONENT_TAG, component)
    selected = (
        {"name": "tag-key", "values": [NODE_GROUP_TAG]}
        if tag is None
        else {"name": f"tag:{tag[0]}", "values": [tag[1]]}
    )
    filters = [
        {"name": f"tag:{BLUEPRINT_TAG}", "values": [spec.name]},
        {"name": f"tag:{STACK_TAG}", "values": [label_value(stack)]},
        selected,
        {"name": "instance-state-name", "values": ["running"]},
    ]
    return {
        "ec2_sd_configs": [{"region": spec.region, "port": port, "filters": filters}],
        "relabel_configs": relabel(
            instance="__meta_ec2_instance_id",
            node_group=meta_label("__meta_ec2_tag_", NODE_GROUP_TAG),
            machine_type="__meta_ec2_instance_type",
            machine_regex="(.+)",
        ),
    }
