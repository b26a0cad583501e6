"""Grafana's provisioning (the Prometheus data source and the dashboard folder) and the dashboards.

The dashboards are code (clusterfab.monitoring.dashboard_build, grafana-foundation-sdk, a development
dependency); their JSON is generated into this package's dashboards/ and shipped as data, so rendering
needs no SDK. A test rebuilds them and fails when the shipped JSON is stale.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

DATASOURCE_UID = "prometheus"
"""The provisioned data source's uid, which every dashboard panel names."""
DASHBOARDS_DIR = "/var/lib/grafana/dashboards/clusterfab"
"""Where the monitoring host puts the dashboards/*.json files for Grafana's file provider."""


def dashboards() -> dict[str, dict[str, Any]]:
    """The shipped dashboards by file name."""
    folder = resources.files("clusterfab.monitoring").joinpath("dashboards")
    return {
        entry.name: json.loads(entry.read_text())
        for entry in sorted(folder.iterdir(), key=lambda e: e.name)
        if entry.name.endswith(".json")
    }


def datasources(prometheus_url: str = "http://localhost:9090") -> dict[str, Any]:
    return {
        "apiVersion": 1,
        "datasources": [
            {
                "name": "Prometheus",
                "uid": DATASOURCE_UID,
                "type": "prometheus",
                "access": "proxy",
                "url": prometheus_url,
                "isDefault": True,
                "editable": False,
            }
        ],
    }


def dashboard_provider() -> dict[str, Any]:
    return {
        "apiVersion": 1,
        "providers": [
            {
                "name": "clusterfab",
                "folder": "clusterfab",
                "type": "file",
                "disableDeletion": True,
                "allowUiUpdates": False,
                "options": {"path": DASHBOARDS_DIR},
            }
        ],
    }
