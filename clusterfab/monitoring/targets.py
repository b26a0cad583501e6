"""What Prometheus scrapes: every GPU node's dcgm-exporter and node exporter, found through the cloud's
own API by the tags / labels clusterfab puts on the cluster's nodes, and the monitoring host itself.

Discovery selects the instances of this cluster and stack that carry a node-group tag (GPU nodes; the
monitoring node has none), and relabels them alike on both clouds: `instance` is the instance id (AWS)
or name (GCP), so a node's two exporters share it, and `node_group` is the node's group. Tag keys come
from clusterfab.core.vocab, the same constants the components tag with.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from clusterfab.catalog.models import ExporterFacts
from clusterfab.core.vocab import BLUEPRINT_TAG, NODE_GROUP_TAG, STACK_TAG, label_value
from clusterfab.monitoring.schedulers import MonitoredScheduler
from clusterfab.spec import ClusterSpec

DCGM_JOB = "dcgm"
NODE_JOB = "node"
HOST_JOB = "monitoring-host"
"""The monitoring host's own node exporter (its disk holds the samples)."""


def meta_label(prefix: str, key: str) -> str:
    """Prometheus' meta label for a tag / label key (characters outside [a-zA-Z0-9_] become _)."""
    return prefix + "".join(c if c.isalnum() or c == "_" else "_" for c in key)


def _relabel(
    *, instance: str, node_group: str, machine_type: str, machine_regex: str
) -> list[dict[str, Any]]:
    return [
        {"source_labels": [instance], "target_label": "instance"},
        {"source_labels": [node_group], "target_label": "node_group"},
        {"source_labels": [machine_type], "regex": machine_regex, "target_label": "machine_type"},
    ]


def aws_discovery(spec: ClusterSpec, stack: str, port: int) -> dict[str, Any]:
    """ec2_sd_configs and relabeling: running instances with this cluster's and stack's tags."""
    filters = [
        {"name": f"tag:{BLUEPRINT_TAG}", "values": [spec.name]},
        {"name": f"tag:{STACK_TAG}", "values": [label_value(stack)]},
        {"name": "tag-key", "values": [NODE_GROUP_TAG]},
        {"name": "instance-state-name", "values": ["running"]},
    ]
    return {
        "ec2_sd_configs": [{"region": spec.region, "port": port, "filters": filters}],
        "relabel_configs": _relabel(
            instance="__meta_ec2_instance_id",
            node_group=meta_label("__meta_ec2_tag_", NODE_GROUP_TAG),
            machine_type="__meta_ec2_instance_type",
            machine_regex="(.+)",
        ),
    }


def gcp_filter(spec: ClusterSpec, stack: str) -> str:
    """The instances.list filter of this cluster's and stack's running GPU nodes."""
    terms = [
        f'labels.{BLUEPRINT_TAG} = "{spec.name}"',
        f'labels.{STACK_TAG} = "{label_value(stack)}"',
        f"labels.{NODE_GROUP_TAG}:*",
        "status = RUNNING",
    ]
    return " AND ".join(f"({term})" for term in terms)


def gcp_discovery(spec: ClusterSpec, stack: str, port: int, project: str) -> dict[str, Any]:
    """gce_sd_configs, one per zone the cluster's nodes live in, and relabeling."""
    zones = sorted({spec.zone})  # one zone today (fabrics are single-zone); one config per zone regardless
    return {
        "gce_sd_configs": [
            {"project": project, "zone": zone, "port": port, "filter": gcp_filter(spec, stack)}
            for zone in zones
        ],
        "relabel_configs": _relabel(
            instance="__meta_gce_instance_name",
            node_group=meta_label("__meta_gce_label_", NODE_GROUP_TAG),
            machine_type="__meta_gce_machine_type",
            machine_regex=".*/([^/]+)",
        ),
    }


def file_discovery(directory: str, job: str) -> dict[str, Any]:
    """file_sd_configs reading `<directory>/<job>.json` (tests, or a host outside the cloud)."""
    return {"file_sd_configs": [{"files": [f"{directory}/{job}.json"], "refresh_interval": "5s"}]}


def scrape_configs(
    spec: ClusterSpec,
    exporters: ExporterFacts,
    *,
    stack: str,
    project: str | None,
    schedulers: Sequence[MonitoredScheduler],
    file_sd_dir: str | None = None,
) -> list[dict[str, Any]]:
    """The scrape jobs: the GPU nodes' two exporters, the `schedulers`' own, the host itself."""
    jobs: list[dict[str, Any]] = []
    for job, port in ((DCGM_JOB, exporters.dcgm_exporter_port), (NODE_JOB, exporters.node_exporter_port)):
        if file_sd_dir is not None:
            discovery = file_discovery(file_sd_dir, job)
        elif spec.cloud == "aws":
            discovery = aws_discovery(spec, stack, port)
        else:
            if project is None:
                raise ValueError("GCP discovery needs the project the nodes live in")
            discovery = gcp_discovery(spec, stack, port, project)
        jobs.append({"job_name": job, **discovery})
    for scheduler in schedulers:
        jobs += scheduler.scrape_jobs(spec, exporters)
    jobs.append(
        {
            "job_name": HOST_JOB,
            "static_configs": [{"targets": [f"localhost:{exporters.node_exporter_port}"]}],
        }
    )
    return jobs
