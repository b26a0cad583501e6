"""What Prometheus scrapes: every GPU node's dcgm-exporter and node exporter, found through the cloud's
own API by the tags / labels clusterfab puts on the cluster's nodes, and the monitoring host itself.

Discovery is the cloud's (`CloudProfile.scrape_discovery`): it selects the instances of this cluster and
stack that carry a node-group tag (GPU nodes; the monitoring node has none), and relabels them alike on
every cloud: `instance` is the instance id (AWS) or name (GCP), so a node's two exporters share it, and
`node_group` is the node's group. Tag keys come from clusterfab.core.vocab, the same constants the
components tag with.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from clusterfab.catalog.models import ExporterFacts
from clusterfab.clouds import profile
from clusterfab.monitoring.schedulers import MonitoredScheduler
from clusterfab.spec import ClusterSpec

DCGM_JOB = "dcgm"
NODE_JOB = "node"
HOST_JOB = "monitoring-host"
"""The monitoring host's own node exporter (its disk holds the samples)."""


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
        else:
            discovery = profile(spec.cloud).scrape_discovery(spec, stack=stack, port=port, project=project)
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
