"""Monitoring: Prometheus, Alertmanager and Grafana on their own node, or on a scheduler's host."""

from __future__ import annotations

import pulumi
from cluster import Cluster, MonitoringExport

from clusterfab.bootstrap import FilesArchive, boot_script_key, files_dir
from clusterfab.core.items import MONITORING_ITEM
from clusterfab.monitoring.host import monitoring_host_vars
from clusterfab.monitoring.schedulers import monitored_schedulers
from clusterfab.monitoring.targets import discovered_ports, scrape_configs
from clusterfab.monitoring.tunnel import GRAFANA_PORT
from components._naming import child
from components.aws.monitoring import (
    AwsMonitoringAccess,
    AwsMonitoringAccessArgs,
    AwsMonitoringNode,
    AwsMonitoringNodeArgs,
)
from components.aws.network import AwsNetwork

from .site import Site


def monitoring_node(site: Site) -> MonitoringExport | None:
    """The monitoring node, when the cluster monitors on a node of its own (on a scheduler's host, the
    scheduler's module calls `monitoring_access` and boots the host with monitoring.yml as well)."""
    cluster, network, bucket = site.cluster, site.network, site.bucket
    spec = cluster.spec
    monitoring = spec.monitoring
    if monitoring is None or monitoring.host != "node" or monitoring.machine is None:
        return None
    machine = monitoring.machine
    archive = cluster.monitoring_files()
    host_vars = monitoring_host_vars(spec, cluster.input.catalog, files_dir=files_dir(archive.sha256))
    node = AwsMonitoringNode(
        child(spec.name, MONITORING_ITEM),
        AwsMonitoringNodeArgs(
            vpc_id=network.vpc_id,
            subnet_id=network.node_subnet_id,
            node_security_group_id=network.node_security_group_id,
            bucket_name=bucket.bucket_name,
            bucket_arn=bucket.bucket_arn,
            bucket_kms_key_arn=spec.bucket_kms_key,
            image_id=machine.image,
            region=spec.region,
            instance_type=machine.name,
            volume_gib=monitoring.disk_gib,
            volume_type=machine.disk_type,
            boot_script=cluster.boot_script(
                name=MONITORING_ITEM,
                bucket_name=bucket.uploaded_name,
                mounts=[],
                playbook="monitoring.yml",
                playbook_vars=lambda _mounts: host_vars,
                healthcheck_vars=None,
                files=FilesArchive(archive.key, archive.sha256),
                follows=True,
            ),
            boot_script_key=boot_script_key(MONITORING_ITEM),
            files=(archive.key, archive.path),
            smtp_secret=monitoring.smtp.password_secret if monitoring.smtp else None,
            tags=cluster.tags(MONITORING_ITEM),
            scrape_ports=_scrape_ports(cluster),
        ),
        site.opts,
    )
    return MonitoringExport(node.instance_id, GRAFANA_PORT, monitoring.retention_days)


def _scrape_ports(cluster: Cluster) -> tuple[int, ...]:
    """The nodes' ports the scrape jobs reach (the exporters', a scheduler's own)."""
    spec = cluster.spec
    jobs = scrape_configs(
        spec,
        cluster.input.catalog.monitoring.exporters,
        stack=cluster.stack,
        project=None,
        schedulers=monitored_schedulers(spec),
    )
    return discovered_ports(jobs)


def monitoring_access(
    cluster: Cluster,
    *,
    role_name: pulumi.Input[str],
    host_security_group_id: pulumi.Input[str],
    network: AwsNetwork,
    opts: pulumi.ResourceOptions,
) -> AwsMonitoringAccess:
    """The hook for a host that runs the monitoring stack besides its own work (the Slurm controller):
    EC2 discovery and the SMTP secret on its role, the nodes' scrape ports open to its security group."""
    spec = cluster.spec
    smtp = spec.monitoring.smtp if spec.monitoring is not None else None
    return AwsMonitoringAccess(
        child(spec.name, "monitoring-access"),
        AwsMonitoringAccessArgs(
            role_name=role_name,
            host_security_group_id=host_security_group_id,
            node_security_group_id=network.node_security_group_id,
            scrape_ports=_scrape_ports(cluster),
            region=spec.region,
            smtp_secret=smtp.password_secret if smtp else None,
        ),
        opts,
    )
