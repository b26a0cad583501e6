"""What every cloud's Prometheus service discovery shares: the labels the monitoring's rules and dashboards
read, relabeled alike from each cloud's own meta labels (a cloud's `discovery` module)."""

from __future__ import annotations

from typing import Any


def meta_label(prefix: str, key: str) -> str:
    """Prometheus' meta label for a tag / label key (characters outside [a-zA-Z0-9_] become _)."""
    return prefix + "".join(c if c.isalnum() or c == "_" else "_" for c in key)


def relabel(*, instance: str, node_group: str, machine_type: str, machine_regex: str) -> list[dict[str, Any]]:
    """`instance`, `node_group` and `machine_type` from the discovery's meta labels (`machine_regex` takes the
    type's name out of the cloud's form of it)."""
    return [
        {"source_labels": [instance], "target_label": "instance"},
        {"source_labels": [node_group], "target_label": "node_group"},
        {"source_labels": [machine_type], "regex": machine_regex, "target_label": "machine_type"},
    ]
