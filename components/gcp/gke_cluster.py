"""A GKE Standard cluster for training: regional control plane, private nodes, its node service account
and the system node pool.

The control plane is regional (three replicas, the same fee as a zonal one), its node pools live in the
cluster's one zone. Nodes have private addresses only. The API server's IP endpoint is private unless
access ranges are listed (then those ranges alone may reach it, never Google's public ranges), and GKE's
DNS-based endpoint, authenticated by IAM, is how the program and kubectl reach a private cluster. Pods get
Google credentials through Workload Identity, never the node's; Dataplane V2 enforces network policy;
multi-networking lets pods use the GPU fabric's NICs; the Filestore and Managed Lustre CSI drivers mount
the cluster's file systems. Upgrades run in a weekly window, and an exclusion keeps minor and node
upgrades away until the version's end of standard support, so no training job is drained by one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_gcp as gcp

from components._errors import check_inputs
from components._naming import child
from components.gcp.gke_node_pool import GkeNodePool, GkeNodePoolArgs
from components.gcp.identity import CLOUD_PLATFORM_SCOPE

TYPE = "clusterfab:compute:GkeCluster"

CLUSTER_NAME_MAX = 40
"""GKE cluster names: a lowercase letter and at most 39 lowercase letters, digits or hyphens."""
NODE_ROLE = "roles/container.defaultNodeServiceAccount"
"""The least a node service account needs (logs, metrics, node status): GKE's 'Configure GKE node service
accounts', https://cloud.google.com/kubernetes-engine/docs/how-to/service-accounts (read 2026-11-29)."""
EXCLUSION_SCOPE = "NO_MINOR_OR_NODE_UPGRADES"
"""Only control plane patches run during the exclusion: nodes (and their jobs) are left alone."""
POD_RANGE = "/14"
SERVICE_RANGE = "/20"
"""Netmasks of the pod and service ranges GKE picks in the system subnet (gcloud's defaults): the cluster
range stays the blueprint's, and GKE avoids the VPC's other subnets."""


@dataclass(frozen=True)
class MaintenanceWindow:
    """A recurring window (RFC 3339 start and end of its first occurrence, RFC 5545 recurrence)."""

    start: str
    end: str
    recurrence: str


@dataclass(frozen=True, kw_only=True)
class GkeClusterArgs:
    """Inputs of GkeCluster."""

    name: str
    """The cluster's name (at most 40 characters)."""
    project: str
    region: str
    """The control plane's location (regional cluster)."""
    zone: str
    """Where the system node pool runs."""
    network: pulumi.Input[str]
    subnetwork: pulumi.Input[str]
    release_channel: str
    version: str
    """The control plane's least version (a minor: 1.35); the channel upgrades patches."""
    api_access_cidrs: Sequence[str] = ()
    """Ranges that may reach the API server's IP endpoint; none: the IP endpoint is private."""
    multi_networking: bool = False
    """Nodes get additional networks (a GPU fabric)."""
    maintenance_window: MaintenanceWindow
    exclusion_start: str
    exclusion_end: str
    """When the upgrade exclusion ends: at the latest the version's end of standard support."""
    service_account_id: str
    """The node service account's id (6-30 characters)."""
    system_machine_type: str
    system_node_count: int
    protect: bool = False
    """Keep the cluster from deletion (GKE's deletion protection and Pulumi's)."""
    labels: Mapping[str, str] = field(default_factory=dict)
    system_labels: Mapping[str, str] | None = None
    """The system pool's nodes' labels (default `labels`)."""
    description: str = ""


def _problems(args: GkeClusterArgs) -> list[tuple[str, str]]:
    problems = []
    if len(args.name) > CLUSTER_NAME_MAX:
        problems.append(("name", f"'{args.name}' is longer than {CLUSTER_NAME_MAX} characters"))
    if args.exclusion_end <= args.exclusion_start:
        problems.append(("exclusion_end", "the upgrade exclusion must end after it starts"))
    if args.system_node_count < 1:
        problems.append(("system_node_count", "the cluster's own pods need at least one node"))
    return problems


def _endpoints(
    args: GkeClusterArgs,
) -> tuple[
    gcp.container.ClusterPrivateClusterConfigArgs,
    gcp.container.ClusterMasterAuthorizedNetworksConfigArgs,
    gcp.container.ClusterControlPlaneEndpointsConfigArgs,
]:
    """Private nodes always; the IP endpoint private, or reachable from the listed ranges only; the DNS
    endpoint open to IAM-authenticated callers where the IP endpoint is private."""
    private = not args.api_access_cidrs
    return (
        gcp.container.ClusterPrivateClusterConfigArgs(
            enable_private_nodes=True, enable_private_endpoint=private
        ),
        gcp.container.ClusterMasterAuthorizedNetworksConfigArgs(
            cidr_blocks=[
                gcp.container.ClusterMasterAuthorizedNetworksConfigCidrBlockArgs(
                    cidr_block=cidr, display_name=f"api-access-{index}"
                )
                for index, cidr in enumerate(args.api_access_cidrs)
            ],
            gcp_public_cidrs_access_enabled=False,
        ),
        gcp.container.ClusterControlPlaneEndpointsConfigArgs(
            dns_endpoint_config=gcp.container.ClusterControlPlaneEndpointsConfigDnsEndpointConfigArgs(
                allow_external_traffic=private
            )
        ),
    )


def _maintenance(args: GkeClusterArgs) -> gcp.container.ClusterMaintenancePolicyArgs:
    window = args.maintenance_window
    return gcp.container.ClusterMaintenancePolicyArgs(
        recurring_window=gcp.container.ClusterMaintenancePolicyRecurringWindowArgs(
            start_time=window.start, end_time=window.end, recurrence=window.recurrence
        ),
        maintenance_exclusions=[
            gcp.container.ClusterMaintenancePolicyMaintenanceExclusionArgs(
                exclusion_name="training-runs",
                start_time=args.exclusion_start,
                end_time=args.exclusion_end,
                exclusion_options=gcp.container.ClusterMaintenancePolicyMaintenanceExclusionExclusionOptionsArgs(
                    scope=EXCLUSION_SCOPE
                ),
            )
        ],
    )


def _addons() -> gcp.container.ClusterAddonsConfigArgs:
    return gcp.container.ClusterAddonsConfigArgs(
        gcp_filestore_csi_driver_config=gcp.container.ClusterAddonsConfigGcpFilestoreCsiDriverConfigArgs(
            enabled=True
        ),
        lustre_csi_driver_config=gcp.container.ClusterAddonsConfigLustreCsiDriverConfigArgs(enabled=True),
    )


class GkeCluster(pulumi.ComponentResource):
    """The cluster, its node service account and its system node pool."""

    cluster_id: pulumi.Output[str]
    """projects/P/locations/L/clusters/C: what node pools attach to."""
    cluster_name: pulumi.Output[str]
    endpoint: pulumi.Output[str]
    """The API server's address clients use: the DNS endpoint of a private cluster, else the IP one."""
    certificate_authority: pulumi.Output[str]
    """The CA (base64 PEM) to trust at `endpoint`: the cluster's own for the IP endpoint; empty for the DNS
    endpoint, whose certificate is publicly trusted."""
    node_service_account_email: pulumi.Output[str]

    def __init__(self, name: str, args: GkeClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        check_inputs(TYPE, _problems(args))
        super().__init__(TYPE, name, None, opts)
        own = pulumi.ResourceOptions(parent=self)
        account = gcp.serviceaccount.Account(
            child(name, "nodes-sa"),
            project=args.project,
            account_id=args.service_account_id,
            display_name=f"GKE nodes of {args.description or args.name}",
            description=f"GKE nodes of {args.description or args.name}",
            opts=own,
        )
        grant = gcp.projects.IAMMember(
            child(name, "nodes-role"), project=args.project, role=NODE_ROLE, member=account.member, opts=own
        )
        cluster = self._cluster(name, args, account.email, grant)
        GkeNodePool(
            child(name, "system"),
            GkeNodePoolArgs(
                name="system",
                cluster=cluster.id,
                project=args.project,
                location=args.region,
                node_locations=[args.zone],
                machine_type=args.system_machine_type,
                service_account_email=account.email,
                node_count=args.system_node_count,
                resource_labels=args.labels if args.system_labels is None else args.system_labels,
            ),
            own,
        )
        private = not args.api_access_cidrs
        self.cluster_id = cluster.id
        self.cluster_name = cluster.name
        self.endpoint = (
            cluster.control_plane_endpoints_config.apply(_dns_endpoint) if private else cluster.endpoint
        )
        self.certificate_authority = (
            pulumi.Output.from_input("")
            if private
            else cluster.master_auth.apply(lambda auth: auth.cluster_ca_certificate or "")
        )
        self.node_service_account_email = account.email
        self.register_outputs(
            {
                "cluster_id": self.cluster_id,
                "endpoint": self.endpoint,
                "node_service_account_email": self.node_service_account_email,
            }
        )

    def _cluster(
        self, name: str, args: GkeClusterArgs, node_account: pulumi.Output[str], grant: pulumi.Resource
    ) -> gcp.container.Cluster:
        private_config, authorized, endpoints = _endpoints(args)
        return gcp.container.Cluster(
            child(name, "cluster"),
            name=args.name,
            project=args.project,
            location=args.region,
            description=args.description or None,
            network=args.network,
            subnetwork=args.subnetwork,
            # Node pools are their own resources: the default pool goes once the cluster exists.
            remove_default_node_pool=True,
            initial_node_count=1,
            node_config=gcp.container.ClusterNodeConfigArgs(
                service_account=node_account,
                oauth_scopes=[CLOUD_PLATFORM_SCOPE],
                workload_metadata_config=gcp.container.ClusterNodeConfigWorkloadMetadataConfigArgs(
                    mode="GKE_METADATA"
                ),
            ),
            networking_mode="VPC_NATIVE",
            ip_allocation_policy=gcp.container.ClusterIpAllocationPolicyArgs(
                cluster_ipv4_cidr_block=POD_RANGE, services_ipv4_cidr_block=SERVICE_RANGE
            ),
            private_cluster_config=private_config,
            master_authorized_networks_config=authorized,
            control_plane_endpoints_config=endpoints,
            workload_identity_config=gcp.container.ClusterWorkloadIdentityConfigArgs(
                workload_pool=f"{args.project}.svc.id.goog"
            ),
            datapath_provider="ADVANCED_DATAPATH",
            enable_multi_networking=True if args.multi_networking else None,
            addons_config=_addons(),
            release_channel=gcp.container.ClusterReleaseChannelArgs(channel=args.release_channel),
            min_master_version=args.version,
            maintenance_policy=_maintenance(args),
            deletion_protection=args.protect,
            resource_labels=dict(args.labels) or None,
            opts=pulumi.ResourceOptions(
                parent=self,
                protect=args.protect,
                depends_on=[grant],
                # The default pool's settings matter only until it is removed (Cluster Toolkit ignores them
                # too).
                ignore_changes=["nodeConfig"],
            ),
        )


def _dns_endpoint(config: gcp.container.outputs.ClusterControlPlaneEndpointsConfig | None) -> str:
    dns = config.dns_endpoint_config if config is not None else None
    return (dns.endpoint if dns is not None else None) or ""
