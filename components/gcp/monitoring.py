"""The monitoring host on GCP: what any host running Prometheus needs (GcpMonitoringAccess: a custom role
with compute.instances.list for discovery, and read access to the SMTP password's secret), and the small
monitoring node clusterfab creates when the cluster has no Slurm controller (GcpMonitoringNode).

The node has no external IP, and Grafana listens on its loopback address only: people reach it through
SSH over IAP (`gcloud compute ssh --tunnel-through-iap` with a local port forward, what `clusterfab
dashboard` runs), which the network's IAP rule for port 22 already admits, so no rule opens Grafana's port.
IAP's own TCP forwarding to Grafana's port would not do: it connects to the VM's address, where Grafana,
whose viewers are anonymous, would then listen for every job on the cluster's network too. Scrapes need
no rule of their own: the node sits in the system subnet, and the system network already admits all
traffic from the cluster's range. Shielded VM with Secure Boot (the host loads no unsigned modules), OS
Login, and a service account that may write logs and metrics, read the cluster bucket, list instances and
read one secret.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pulumi
import pulumi_gcp as gcp

from components._naming import child
from components.gcp.identity import CLOUD_PLATFORM_SCOPE, node_service_account

ACCESS_TYPE = "clusterfab:monitoring:GcpMonitoringAccess"
NODE_TYPE = "clusterfab:monitoring:GcpMonitoringNode"
DISCOVERY_PERMISSIONS = ("compute.instances.list",)
"""All Prometheus' gce_sd_configs call (instances.list per zone)."""
TPU_DISCOVERY_PERMISSIONS = ("tpu.nodes.list",)
"""All the TPU discovery program calls: the Cloud TPU API's tpu.projects.locations.nodes.list (googleapis
discovery document tpu.v2.json, revision 20261001), whose permission is tpu.nodes.list (Cloud TPU's IAM
permissions, https://cloud.google.com/iam/docs/roles-permissions/tpu, read 2026-11-29)."""


@dataclass(frozen=True, kw_only=True)
class GcpMonitoringAccessArgs:
    """What lets a host (the monitoring node, or a Slurm controller) run the cluster's monitoring."""

    project: str
    role_id: str
    """The custom role's id (letters, digits, underscores and periods; unique in the project)."""
    member: pulumi.Input[str]
    """The host's service account as an IAM member (serviceAccount:...)."""
    smtp_secret: str | None = None
    """The Secret Manager secret holding the SMTP password; None: no mail login."""
    tpu_discovery: bool = False
    """The host lists the cluster's TPU VMs (the Cloud TPU API) for Prometheus, too."""


class GcpMonitoringAccess(pulumi.ComponentResource):
    """A discovery role bound to the host's account and access to the SMTP password's secret."""

    def __init__(
        self, name: str, args: GcpMonitoringAccessArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(ACCESS_TYPE, name, None, opts)
        own = pulumi.ResourceOptions(parent=self)
        role = gcp.projects.IAMCustomRole(
            child(name, "discovery-role"),
            project=args.project,
            role_id=args.role_id,
            title=f"clusterfab monitoring discovery ({name})",
            description="List instances: what Prometheus' GCE service discovery calls",
            permissions=[*DISCOVERY_PERMISSIONS, *(TPU_DISCOVERY_PERMISSIONS if args.tpu_discovery else ())],
            opts=own,
        )
        gcp.projects.IAMMember(
            child(name, "discovery"), project=args.project, role=role.name, member=args.member, opts=own
        )
        if args.smtp_secret is not None:
            gcp.secretmanager.SecretIamMember(
                child(name, "smtp-secret"),
                project=args.project,
                secret_id=args.smtp_secret,
                role="roles/secretmanager.secretAccessor",
                member=args.member,
                opts=own,
            )
        self.register_outputs({})


@dataclass(frozen=True, kw_only=True)
class GcpMonitoringNodeArgs:
    """Inputs of GcpMonitoringNode; defaults: the catalog's e2-standard-2 with a 50 GiB balanced disk."""

    project: str
    zone: str
    subnetwork_id: pulumi.Input[str]
    bucket_name: pulumi.Input[str]
    image: str
    service_account_id: str
    role_id: str
    machine_type: str = "e2-standard-2"
    disk_gib: int = 50
    disk_type: str = "pd-balanced"
    startup_script: pulumi.Input[str] = ""
    files: tuple[str, Path] | None = None
    """(object name, local path) of the rendered monitoring files the host's boot fetches."""
    smtp_secret: str | None = None
    tpu_discovery: bool = False
    """The host lists the cluster's TPU VMs for Prometheus (GcpMonitoringAccessArgs.tpu_discovery)."""
    instance_name: str = ""
    """The VM's name (what `gcloud compute ssh` takes); default the component's name."""
    labels: Mapping[str, str] = field(default_factory=dict)


class GcpMonitoringNode(pulumi.ComponentResource):
    """Service account, the rendered files in the bucket, the VM, monitoring access."""

    instance_name: pulumi.Output[str]
    service_account_email: pulumi.Output[str]

    def __init__(
        self, name: str, args: GcpMonitoringNodeArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(NODE_TYPE, name, None, opts)
        own = pulumi.ResourceOptions(parent=self)
        sa = node_service_account(
            self,
            name,
            project=args.project,
            account=args.service_account_id,
            description=f"clusterfab monitoring host {name}",
            bucket_name=args.bucket_name,
        )
        depends: list[pulumi.Resource] = []
        if args.files is not None:
            key, path = args.files
            depends.append(
                gcp.storage.BucketObject(
                    child(name, "files"),
                    bucket=args.bucket_name,
                    name=key,
                    source=pulumi.FileAsset(str(path)),
                    opts=own,
                )
            )
        instance = self._instance(name, args, sa, depends)
        GcpMonitoringAccess(
            child(name, "access"),
            GcpMonitoringAccessArgs(
                project=args.project,
                role_id=args.role_id,
                member=sa.member,
                smtp_secret=args.smtp_secret,
                tpu_discovery=args.tpu_discovery,
            ),
            own,
        )
        self.instance_name = instance.name
        self.service_account_email = sa.email
        self.register_outputs({"instance_name": instance.name, "service_account_email": sa.email})

    def _instance(
        self,
        name: str,
        args: GcpMonitoringNodeArgs,
        sa: gcp.serviceaccount.Account,
        depends: list[pulumi.Resource],
    ) -> gcp.compute.Instance:
        return gcp.compute.Instance(
            child(name, "instance"),
            name=args.instance_name or name,
            project=args.project,
            zone=args.zone,
            machine_type=args.machine_type,
            boot_disk=gcp.compute.InstanceBootDiskArgs(
                auto_delete=True,
                initialize_params=gcp.compute.InstanceBootDiskInitializeParamsArgs(
                    image=args.image, size=args.disk_gib, type=args.disk_type, labels=dict(args.labels)
                ),
            ),
            network_interfaces=[gcp.compute.InstanceNetworkInterfaceArgs(subnetwork=args.subnetwork_id)],
            service_account=gcp.compute.InstanceServiceAccountArgs(
                email=sa.email, scopes=[CLOUD_PLATFORM_SCOPE]
            ),
            shielded_instance_config=gcp.compute.InstanceShieldedInstanceConfigArgs(
                enable_secure_boot=True, enable_vtpm=True, enable_integrity_monitoring=True
            ),
            metadata={"startup-script": args.startup_script, "enable-oslogin": "TRUE"},
            allow_stopping_for_update=True,
            labels=dict(args.labels),
            opts=pulumi.ResourceOptions(parent=self, depends_on=depends),
        )
