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
from clusterfab.monitoring.tpu_hosts import tpu_discovery_enabled, tpu_scrape_job
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
    """The scrape jobs: the GPU nodes' two exporters, the TPU hosts' node exporter (tpu_hosts.py), the
    `schedulers`' own, the host itself."""

    def discover(
        job: str, port: int, *, component: str | None = None, tag: tuple[str, str] | None = None
    ) -> dict[str, Any]:
        if file_sd_dir is not None:
            return file_discovery(file_sd_dir, job)
        return profile(spec.cloud).scrape_discovery(
            spec, stack=stack, port=port, project=project, component=component, tag=tag
        )

    jobs: list[dict[str, Any]] = []
    for job, port in ((DCGM_JOB, exporters.dcgm_exporter_port), (NODE_JOB, exporters.node_exporter_port)):
        jobs.append({"job_name": job, **discover(job, port)})
    if tpu_discovery_enabled(spec):
        jobs.append(tpu_scrape_job(file_sd_dir))
    for scheduler in schedulers:
        jobs += scheduler.scrape_jobs(spec, exporters, discover)
    jobs.append(
        {
            "job_name": HOST_JOB,
            "static_configs": [{"targets": [f"localhost:{exporters.node_exporter_port}"]}],
        }
    )
    return jobs


def discovered_ports(jobs: Sequence[dict[str, Any]]) -> tuple[int, ...]:
    """The ports the scrape jobs reach the cloud's nodes on (their service discoveries' `port`), in order:
    the ports a cloud's firewall must open to the monitoring host."""
    ports = {
        config["port"]
        for job in jobs
        for key, configs in job.items()
        if key.endswith("_sd_configs")
        for config in configs
        if "port" in config
    }
    return tuple(sorted(ports))
