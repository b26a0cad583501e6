"""Monitoring: Prometheus, Alertmanager and Grafana on their own node, or on a scheduler's host."""

from __future__ import annotations

import pulumi
from cluster import MonitoringExport

from clusterfab.bootstrap import FilesArchive, files_dir
from clusterfab.core.items import MONITORING_ITEM
from clusterfab.core.naming import GCP_MONITORING, GCP_MONITORING_ACCOUNT, physical
from clusterfab.monitoring.host import monitoring_host_vars
from clusterfab.monitoring.tpu_hosts import tpu_discovery_enabled
from clusterfab.monitoring.tunnel import GRAFANA_PORT
from components._naming import child
from components.gcp.monitoring import (
    GcpMonitoringAccess,
    GcpMonitoringAccessArgs,
    GcpMonitoringNode,
    GcpMonitoringNodeArgs,
)

from .names import CUSTOM_ROLE_ID_MAX, SERVICE_ACCOUNT_ID_MAX, role_id
from .site import Site


def _discovery_role_id(site: Site) -> str:
    """A custom role id for the cluster and stack (letters, digits and underscores; unique in the project)."""
    return role_id(site.spec.name, site.cluster.stack, GCP_MONITORING, max_length=CUSTOM_ROLE_ID_MAX)


def monitoring_node(site: Site) -> MonitoringExport | None:
    """The monitoring node, when the cluster monitors on a node of its own (on a scheduler's host, the
    scheduler's module calls `monitoring_access` and boots the host with monitoring.yml as well)."""
    spec, cluster = site.spec, site.cluster
    monitoring = spec.monitoring
    if monitoring is None or monitoring.host != "node" or monitoring.machine is None:
        return None
    machine = monitoring.machine
    archive = cluster.monitoring_files()
    host_vars = monitoring_host_vars(
        spec, cluster.input.catalog, files_dir=files_dir(archive.sha256), project=site.project
    )
    node = GcpMonitoringNode(
        child(spec.name, MONITORING_ITEM),
        GcpMonitoringNodeArgs(
            project=site.project,
            zone=spec.zone,
            subnetwork_id=site.network.system_subnetwork_id,
            bucket_name=site.bucket.bucket_name,
            image=machine.image,
            service_account_id=physical(
                spec.name, cluster.stack, GCP_MONITORING_ACCOUNT, max_length=SERVICE_ACCOUNT_ID_MAX
            ),
            role_id=_discovery_role_id(site),
            machine_type=machine.name,
            disk_gib=monitoring.disk_gib,
            disk_type=machine.disk_type,
            startup_script=cluster.boot_script(
                name=MONITORING_ITEM,
                bucket_name=site.bucket.uploaded_name,
                mounts=[],
                playbook="monitoring.yml",
                playbook_vars=lambda _mounts: host_vars,
                healthcheck_vars=None,
                files=FilesArchive(archive.key, archive.sha256),
                follows=True,
            ),
            files=(archive.key, archive.path),
            smtp_secret=monitoring.smtp.password_secret if monitoring.smtp else None,
            tpu_discovery=tpu_discovery_enabled(spec),
            instance_name=physical(spec.name, cluster.stack, GCP_MONITORING),
            labels=cluster.tags(MONITORING_ITEM),
        ),
        site.opts,
    )
    return MonitoringExport(node.instance_name, GRAFANA_PORT, monitoring.retention_days)


def monitoring_access(site: Site, *, member: pulumi.Input[str]) -> GcpMonitoringAccess:
    """The hook for a host that runs the monitoring stack besides its own work (the Slurm controller):
    instance discovery and the SMTP secret for its service account (`member` is `serviceAccount:<email>`).
    Scrapes need no firewall rule while the host sits in the cluster's range (the system network admits
    it); Grafana needs none either: it listens on the host's loopback, reached through SSH over IAP."""
    spec = site.spec
    smtp = spec.monitoring.smtp if spec.monitoring is not None else None
    return GcpMonitoringAccess(
        child(spec.name, "monitoring-access"),
        GcpMonitoringAccessArgs(
            project=site.project,
            role_id=_discovery_role_id(site),
            member=member,
            smtp_secret=smtp.password_secret if smtp else None,
            tpu_discovery=tpu_discovery_enabled(spec),
        ),
        site.opts,
    )
