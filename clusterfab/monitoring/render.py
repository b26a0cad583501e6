"""Render every monitoring file of a cluster (architecture §10.3 `clusterfab render monitoring`)."""

from __future__ import annotations

import datetime as dt
import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from clusterfab.catalog import Catalog
from clusterfab.monitoring.alertmanager import alertmanager_config
from clusterfab.monitoring.counters import COUNTERS_FILE, counters_csv
from clusterfab.monitoring.grafana import dashboard_provider, dashboards, datasources
from clusterfab.monitoring.rules import rule_groups
from clusterfab.monitoring.schedulers import hidden_dashboards, monitored_schedulers
from clusterfab.monitoring.targets import scrape_configs
from clusterfab.monitoring.tpu_hosts import tpu_discovery_enabled, tpu_discovery_files
from clusterfab.spec import ClusterSpec

MonitoringFiles = dict[str, str]
"""Relative path -> content."""

RULES_DIR = "rules"
ALERTMANAGER_URL = "localhost:9093"
HEADER = (
    "# Rendered by clusterfab from blueprint {name} (stack {stack}); edit the blueprint, not this file.\n"
)


def _yaml(document: Mapping[str, Any], header: str) -> str:
    stream = io.StringIO()
    yaml = YAML()
    yaml.default_flow_style = False
    yaml.width = 4096  # PromQL stays on one line
    yaml.dump(json.loads(json.dumps(document)), stream)  # plain dicts and lists, in insertion order
    return header + stream.getvalue()


def prometheus_config(
    spec: ClusterSpec,
    catalog: Catalog,
    *,
    stack: str,
    project: str | None,
    rule_files: list[str],
    file_sd_dir: str | None = None,
) -> dict[str, Any]:
    monitoring = spec.monitoring
    if monitoring is None:
        raise ValueError(f"{spec.name} has no monitoring")
    interval = f"{monitoring.scrape_interval_seconds}s"
    return {
        "global": {
            "scrape_interval": interval,
            "evaluation_interval": interval,
            "external_labels": {"cluster": spec.name, "stack": stack},
        },
        "rule_files": rule_files,
        "alerting": {"alertmanagers": [{"static_configs": [{"targets": [ALERTMANAGER_URL]}]}]},
        "scrape_configs": scrape_configs(
            spec,
            catalog.monitoring.exporters,
            stack=stack,
            project=project,
            schedulers=monitored_schedulers(spec),
            file_sd_dir=file_sd_dir,
        ),
    }


def render_monitoring(
    spec: ClusterSpec,
    catalog: Catalog,
    *,
    stack: str,
    project: str | None,
    today: dt.date,
    file_sd_dir: str | None = None,
) -> MonitoringFiles:
    """Every file of the cluster's monitoring, by path relative to the output directory.

    Args:
        spec: a cluster with monitoring (ValueError otherwise).
        stack: the stack whose nodes Prometheus discovers (their `clusterfab-stack` tag).
        project: GCP: the project the nodes live in.
        today: the date prices are judged by (the cost rules price the cluster as `clusterfab cost`).
        file_sd_dir: discover targets from `<dir>/<job>.json` files instead of the cloud (tests).
    """
    monitoring = spec.monitoring
    if monitoring is None:
        raise ValueError(f"{spec.name} has no monitoring (monitoring.kind is none)")
    header = HEADER.format(name=spec.name, stack=stack)
    schedulers = monitored_schedulers(spec)
    groups = rule_groups(spec, catalog, schedulers=schedulers, today=today)
    files: MonitoringFiles = {}
    for group in groups:
        files[f"{RULES_DIR}/{group.file}"] = _yaml(group.document(), header)
    config = prometheus_config(
        spec,
        catalog,
        stack=stack,
        project=project,
        rule_files=[f"{RULES_DIR}/{g.file}" for g in groups],
        file_sd_dir=file_sd_dir,
    )
    files["prometheus.yml"] = _yaml(config, header)
    files["alertmanager.yml"] = _yaml(alertmanager_config(monitoring, cluster=spec.name, stack=stack), header)
    files["grafana/datasources.yml"] = _yaml(datasources(), header)
    files["grafana/dashboards.yml"] = _yaml(dashboard_provider(), header)
    # A scheduler's dashboards ship only where it is monitored: their metrics come from its exporter.
    hidden = hidden_dashboards(spec)
    for name, dashboard in dashboards().items():
        if name in hidden:
            continue
        files[f"dashboards/{name}"] = json.dumps(dashboard, indent=2, sort_keys=True) + "\n"
    files[COUNTERS_FILE] = counters_csv()
    if tpu_discovery_enabled(spec):
        port = catalog.monitoring.exporters.node_exporter_port
        files |= tpu_discovery_files(spec, stack=stack, project=project, port=port)
    return files


def write_files(files: MonitoringFiles, out: Path) -> list[Path]:
    """Write `files` under `out` (created as needed); returns the paths written."""
    written = []
    for relative, content in sorted(files.items()):
        path = out / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
        written.append(path)
    return written
