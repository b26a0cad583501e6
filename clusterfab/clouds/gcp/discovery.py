"""Prometheus finds a GCP cluster's GPU nodes with gce_sd_configs, by the labels the stack puts on them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from clusterfab.clouds.discovery import meta_label, relabel
from clusterfab.core.vocab import BLUEPRINT_TAG, COMPONENT_TAG, NODE_GROUP_TAG, STACK_TAG, label_value

if TYPE_CHECKING:
    from clusterfab.clouds.base import Site


def gcp_filter(
    spec: Site, stack: str, component: str | None = None, tag: tuple[str, str] | None = None
) -> str:
    """The instances.list filter of this cluster's and stack's running GPU nodes (or, with `component`,
    those of that component; with `tag`, those whose label `tag[0]` is `tag[1]`)."""
    if component is not None:
        tag = (COMPONENT_TAG, component)
    selected = f"labels.{NODE_GROUP_TAG}:*" if tag is None else f'labels.{tag[0]} = "{tag[1]}"'
    terms = [
        f'labels.{BLUEPRINT_TAG} = "{spec.name}"',
        f'labels.{STACK_TAG} = "{label_value(stack)}"',
        selected,
        "status = RUNNING",
    ]
    return " AND ".join(f"({term})" for term in terms)


def scrape_discovery(
    spec: Site,
    *,
    stack: str,
    port: int,
    project: str | None,
    component: str | None = None,
    tag: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """gce_sd_configs, one per zone the cluster's nodes live in, and relabeling."""
    if project is None:
        raise ValueError("GCP discovery needs the project the nodes live in")
    zones = sorted({spec.zone})  # one zone today (fabrics are single-zone); one config per zone regardless
    return {
        "gce_sd_configs": [
            {
                "project": project,
                "zone": zone,
                "port": port,
                "filter": gcp_filter(spec, stack, component, tag),
            }
            for zone in zones
        ],
        "relabel_configs": relabel(
            instance="__meta_gce_instance_name",
            node_group=meta_label("__meta_gce_label_", NODE_GROUP_TAG),
            machine_type="__meta_gce_machine_type",
            machine_regex=".*/([^/]+)",
        ),
    }
