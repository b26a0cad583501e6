"""Slurm on GCP: the controller (slurmctld, slurmdbd and its database on a protected state disk), the
login nodes, the munge key's secret, and the rights of the controller's node sync.

Nothing has an external IP: people reach the login nodes with IAP (`gcloud compute ssh --tunnel-through-iap`,
OS Login). The munge key never passes through the stack or metadata: the stack creates an empty Secret
Manager secret, the controller adds its first version at first boot (secretVersionAdder on that secret
alone), and the controller's service account alone may read it. GPU and login nodes hold no right to it:
they fetch the key from the controller's key service as root (a privileged source port), so a job that
reached a node's service-account token would still find no key. Slurm's ports (and the key service's)
need no firewall rule of their own: the controller and login nodes sit in the system subnet, and the
system network admits traffic from the cluster's range only (components/gcp/network.py). The state disk
is snapshotted every day by a snapshot schedule attached to it; the snapshots stay in the cluster's region
and outlive the disk.

The node sync names each GPU VM by setting one metadata key on it; its role is split because IAM
conditions on instance names can only apply to calls on an instance: `compute.instances.list` and
`compute.instanceGroupManagers.list` (on the zone) are granted as is, `get` and `setMetadata` only on VMs
named like the cluster's node groups. A static node drained for its hardware is replaced by its group's MIG
(`recreateInstances`, which needs `compute.instanceGroupManagers.update` on the MIG: the Compute Engine API
reference of the method), granted on the cluster's MIGs only, by name; the MIG itself deletes and creates
the VM, so the controller needs no right on the VM for it. Where a group's VMs' hosts may be reported
faulty (`faulty_host_prefixes`), `compute.instances.update` on those VMs, the one permission the report
needs (docs.cloud.google.com/ai-hypercomputer/docs/manage/report-faulty-host, Required permissions).

With elastic node groups the controller's resume and suspend programs create VMs (one bulkInsert from a
group's own instance template) and delete them. As on AWS (components/aws/slurm.py elastic_statements),
what names no one resource is granted as is: listing MIGs (how the template is found), waiting for the
operation, using the subnets and images the template names. Everything else is conditioned on names
(IAM's resource-based access, cloud.google.com/iam/docs/configuring-resource-based-access): creating,
naming, labelling and deleting only VMs and boot disks named `<the group's elastic prefix>-*`, reading
and using only the elastic groups' current templates, and acting as only their nodes' service accounts
(granted on those accounts).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pulumi
import pulumi_gcp as gcp

from clusterfab.core.naming import GCP_NAME_MAX, physical
from clusterfab.core.vocab import SLURM_ROLE_TAG
from components._errors import check_inputs, slurm_controller_problems, snapshot_problems
from components._naming import child, gcp_name
from components.gcp.identity import CLOUD_PLATFORM_SCOPE, node_service_account
from components.gcp.slurm_database import GcpSlurmDatabase, GcpSlurmDatabaseArgs, GcpSlurmDatabaseSettings

CONTROLLER_TYPE = "clusterfab:slurm:GcpSlurmController"
STATE_DEVICE_NAME = "slurm-state"
"""The state disk's device name: the guest sees it as /dev/disk/by-id/google-slurm-state."""
LIST_PERMISSIONS = ("compute.instanceGroupManagers.list", "compute.instances.list")
NAMING_PERMISSIONS = ("compute.instances.get", "compute.instances.setMetadata")
LAUNCH_INPUT_PERMISSIONS = (
    "compute.images.useReadOnly",
    "compute.subnetworks.use",
    "compute.zoneOperations.get",
)
"""Unconditioned: a list names no resource, and the subnets and images are the template's (as on AWS)."""
ELASTIC_PERMISSIONS = (
    "compute.disks.create",
    "compute.disks.setLabels",
    "compute.instanceTemplates.get",
    "compute.instanceTemplates.useReadOnly",
    "compute.instances.create",
    "compute.instances.delete",
    "compute.instances.get",
    "compute.instances.setLabels",
    "compute.instances.setMetadata",
    "compute.instances.setServiceAccount",
    "compute.instances.updateShieldedVmConfig",
    "compute.resourcePolicies.use",
)
"""Creating a VM from a template with metadata, labels, a service account, Shielded VM settings and a new
labelled boot disk (Compute Engine's "Create a VM that uses a user-managed service account", required
permissions; instances.insert: sourceInstanceTemplate needs compute.instanceTemplates.useReadOnly on the
template; a VM that names a resource policy needs compute.resourcePolicies.use on it), naming it,
deleting it: conditioned on the elastic VMs', disks', templates' and placement policies' names."""
FLEX_PERMISSIONS = (
    "compute.instanceGroupManagers.create",
    "compute.instanceGroupManagers.delete",
    "compute.instanceGroupManagers.get",
    "compute.instanceGroupManagers.update",
)
"""Flex-start elastic nodes: creating a MIG for a job's VMs, its resize request and reading it (a request
is part of its MIG), deleting VMs through it (deleteInstances) and the MIG itself: conditioned on the
flex-start MIGs' names, with the elastic permissions (the MIG uses the group's template and workload
policy, and names the elastic VMs)."""
ACT_AS_PERMISSIONS = ("iam.serviceAccounts.actAs",)
RECREATE_PERMISSIONS = ("compute.instanceGroupManagers.update",)
"""instanceGroupManagers.recreateInstances (API reference: on the instanceGroupManager)."""
REPORT_PERMISSIONS = ("compute.instances.update",)
"""instances.reportHostAsFaulty (the report-faulty-host guide: on the compute instance)."""
SECRET_ACCESSOR = "roles/secretmanager.secretAccessor"
SECRET_VERSION_ADDER = "roles/secretmanager.secretVersionAdder"


@dataclass(frozen=True, kw_only=True)
class GcpElasticNodeGroup:
    """A node group with elastic nodes: the controller creates their VMs from its template."""

    node_group: str
    vm_prefix: str
    """Its elastic VMs are `<vm_prefix>-<i>` (their boot disks take the VMs' names)."""
    placement_prefix: str = ""
    """Its elastic VMs are placed by the compact placement policies `<placement_prefix>-<k>` (in the
    controller's region); empty: no placement."""
    flex_prefix: str = ""
    """Flex-start: its elastic VMs are asked for through MIGs `<flex_prefix>-*` the controller creates and
    deletes (in its zone); empty: bulkInsert."""
    workload_policy: pulumi.Input[str] | None = None
    """Flex-start with compact placement: the workload policy (name, in the controller's region) those MIGs
    are placed by."""
    template: pulumi.Input[str]
    """The group's instance template (its unique self link)."""
    service_account_email: pulumi.Input[str]
    """The nodes' service account: the VMs the controller creates run as it."""


@dataclass(frozen=True, kw_only=True)
class GcpSlurmControllerArgs:
    """Inputs of GcpSlurmController; defaults: e2-standard-8, 100 GiB balanced state disk, one login node."""

    cluster: str
    project: str
    region: str
    zone: str
    subnetwork_id: pulumi.Input[str]
    bucket_name: pulumi.Input[str]
    image: str
    private_ip: str
    """The controller's fixed address in the system subnet (slurm.conf names it before the VM exists)."""
    munge_secret_id: str
    """The munge key's secret: nodes name it at boot, before any output of this component is known."""
    instance_name: str
    """The controller VM's name (what `gcloud compute ssh` takes)."""
    service_account_id: str
    login_service_account_id: str
    role_id_prefix: str
    """Prefix of the node sync's custom role ids (letters, digits, underscores; unique per stack): it is
    followed by `_` and a suffix of at most four characters."""
    node_instance_prefixes: Sequence[str]
    """The node groups' base instance names: the only VMs whose metadata the node sync may change. The rights
    reach every VM named `<prefix>-*`, so no other group's, cluster's or stack's names in the project may
    start so (the stacks end each prefix in a hash of its cluster, stack and group)."""
    instance_group_managers: Sequence[pulumi.Input[str]] = ()
    """The node groups' MIGs (names): the only MIGs the node sync may have recreate a VM."""
    faulty_host_prefixes: Sequence[str] = ()
    """Base instance names of the groups whose VMs' hosts the node sync may report faulty (a machine type
    and provisioning model the report takes: nodesync.FAULTY_HOST_MACHINE_TYPES)."""
    elastic_groups: Sequence[GcpElasticNodeGroup] = ()
    """The node groups with elastic nodes, whose VMs the controller creates and deletes."""
    machine_type: str = "e2-standard-8"
    boot_disk_gib: int = 50
    state_disk_gib: int = 100
    disk_type: str = "pd-balanced"
    protect: bool = True
    """Keep the state disk (slurmctld state, the accounting database) from deletion and replacement."""
    snapshot_time_utc: str = "03:00"
    """The hour (HH:00, UTC) the state disk's daily snapshot starts (within the hour after)."""
    snapshots_kept: int = 7
    """Days each daily snapshot of the state disk is kept; they outlive the disk."""
    kms_key: str | None = None
    """The customer-managed key (projects/*/locations/*/keyRings/*/cryptoKeys/*) of the controller's and
    login nodes' disks; None: Google's own key. The Compute Engine service agent needs
    roles/cloudkms.cryptoKeyEncrypterDecrypter on it."""
    startup_script: pulumi.Input[str] = ""
    files: tuple[str, Path] | None = None
    """(object name, local path) of the rendered Slurm files the controller's boot fetches."""
    login_count: int = 1
    login_name_prefix: str = ""
    """Login VMs are `<prefix>-<i>` (`login_vm_name`); default `<instance_name>-login`."""
    login_machine_type: str = "e2-standard-4"
    login_startup_script: pulumi.Input[str] = ""
    database: GcpSlurmDatabaseSettings | None = None
    """Managed accounting: slurmdbd's database on Cloud SQL (in the controller's zone, on `database_network`,
    encrypted with `kms_key`); None: MariaDB on the state disk."""
    database_network: GcpDatabaseNetwork | None = None
    """Where the database takes its private address (with `database`)."""
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class GcpDatabaseNetwork:
    """The system VPC's private services access, which gives the database its private address."""

    network_id: pulumi.Input[str]
    private_services_range: pulumi.Input[str]
    private_services: pulumi.Resource


def _problems(args: GcpSlurmControllerArgs) -> list[tuple[str, str]]:
    problems = slurm_controller_problems("state_disk_gib", args.state_disk_gib, args.login_count)
    problems += snapshot_problems(args.snapshot_time_utc, args.snapshots_kept)
    if not args.node_instance_prefixes:
        problems.append(("node_instance_prefixes", "name at least one node group's base instance name"))
    if (args.database is None) != (args.database_network is None):
        problems.append(("database_network", "give the database and its network together, or neither"))
    return problems


def login_vm_name(prefix: str, index: int) -> str:
    """Login VM `index`: `<prefix>-<index>`, or where that passes 63 characters (a prefix of up to 63 built
    from a long cluster and stack name) a name shortened with a hash of both; names that fit never change."""
    name = f"{prefix}-{index}"
    return name if len(name) <= GCP_NAME_MAX else physical(prefix, str(index))


def naming_condition(project: str, zone: str, prefixes: Sequence[str]) -> str:
    """A CEL expression true for the cluster's node VMs only (their names start with a group's base name)."""
    base = f"projects/{project}/zones/{zone}/instances/"
    return " || ".join(f'resource.name.startsWith("{base}{prefix}-")' for prefix in prefixes)


def mig_condition(project: str, zone: str, names: Sequence[str]) -> str:
    """A CEL expression true for these managed instance groups (by name) only."""
    base = f"projects/{project}/zones/{zone}/instanceGroupManagers/"
    return " || ".join(f'resource.name == "{base}{name}"' for name in names)


def template_name(self_link: str) -> str:
    """An instance template's name, from its self link (`.../instanceTemplates/NAME`, maybe `?uniqueId=`)."""
    return self_link.split("?", 1)[0].rsplit("/", 1)[-1]


def elastic_condition(
    project: str,
    zone: str,
    prefixes: Sequence[str],
    templates: Sequence[str],
    *,
    placements: Sequence[str] = (),
    region: str = "",
    flex: Sequence[str] = (),
    policies: Sequence[str] = (),
) -> str:
    """A CEL expression true for the elastic VMs and their boot disks (by name prefix), the node groups'
    instance templates (by name, given as self links), their elastic VMs' placement policies (by name
    prefix), flex-start MIGs (by name prefix) and the workload policies those use (by name)."""
    zonal = f"projects/{project}/zones/{zone}"
    names = [
        f'resource.name.startsWith("{zonal}/{kind}/{prefix}-")'
        for prefix in prefixes
        for kind in ("instances", "disks")
    ]
    names += [
        f'resource.name == "projects/{project}/global/instanceTemplates/{template_name(link)}"'
        for link in templates
    ]
    names += [
        f'resource.name.startsWith("projects/{project}/regions/{region}/resourcePolicies/{prefix}-")'
        for prefix in placements
    ]
    names += [f'resource.name.startsWith("{zonal}/instanceGroupManagers/{prefix}-")' for prefix in flex]
    names += [
        f'resource.name == "projects/{project}/regions/{region}/resourcePolicies/{p}"' for p in policies
    ]
    return " || ".join(names)


class GcpSlurmController(pulumi.ComponentResource):
    """The munge key's secret, the controller with its address and state disk, the login nodes, their
    service accounts and the node sync's rights."""

    instance_name: pulumi.Output[str]
    login_instance_names: list[pulumi.Output[str]]
    munge_secret_id: pulumi.Output[str]
    service_account_email: pulumi.Output[str]
    database: GcpSlurmDatabase | None
    """The accounting database (managed accounting)."""

    def __init__(
        self, name: str, args: GcpSlurmControllerArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        check_inputs(CONTROLLER_TYPE, _problems(args))
        super().__init__(CONTROLLER_TYPE, name, None, opts)
        self._name, self._args = name, args
        self._own = pulumi.ResourceOptions(parent=self)
        secret = gcp.secretmanager.Secret(
            child(name, "munge-key"),
            project=args.project,
            secret_id=args.munge_secret_id,
            replication=gcp.secretmanager.SecretReplicationArgs(
                user_managed=gcp.secretmanager.SecretReplicationUserManagedArgs(
                    replicas=[gcp.secretmanager.SecretReplicationUserManagedReplicaArgs(location=args.region)]
                )
            ),
            labels=dict(args.labels),
            opts=self._own,
        )
        sa = self._account("sa", args.service_account_id, "controller")
        login_sa = self._account("login-sa", args.login_service_account_id, "login nodes")
        for member_name, member, role in (
            ("controller-reads-key", sa.member, SECRET_ACCESSOR),
            ("controller-writes-key", sa.member, SECRET_VERSION_ADDER),
        ):
            gcp.secretmanager.SecretIamMember(
                child(name, member_name),
                project=args.project,
                secret_id=secret.secret_id,
                role=role,
                member=member,
                opts=self._own,
            )
        self._naming_rights(sa.member)
        if args.elastic_groups:
            self._elastic_rights(sa.member)
        depends = self._files()
        self.database = self._database(sa.member)
        if self.database is not None:
            depends.append(self.database)
        instance = self._controller(sa, depends)
        logins = [self._login(i, login_sa, depends) for i in range(args.login_count)]
        self.instance_name = instance.name
        self.login_instance_names = [login.name for login in logins]
        self.munge_secret_id = secret.secret_id
        self.service_account_email = sa.email
        self.register_outputs(
            {
                "instance_name": instance.name,
                "login_instance_names": self.login_instance_names,
                "munge_secret_id": secret.secret_id,
                "service_account_email": sa.email,
            }
        )

    def _database(self, member: pulumi.Input[str]) -> GcpSlurmDatabase | None:
        args = self._args
        if args.database is None or args.database_network is None:
            return None
        network = args.database_network
        return GcpSlurmDatabase(
            child(self._name, "accounting"),
            GcpSlurmDatabaseArgs(
                cluster=args.cluster,
                settings=args.database,
                project=args.project,
                region=args.region,
                zone=args.zone,
                network_id=network.network_id,
                private_services_range=network.private_services_range,
                private_services=network.private_services,
                client_member=member,
                role_id=f"{args.role_id_prefix}_acct",
                kms_key=args.kms_key,
                protect=args.protect,
                labels=args.labels,
            ),
            pulumi.ResourceOptions(parent=self),
        )

    def _account(self, suffix: str, account: str, what: str) -> gcp.serviceaccount.Account:
        args = self._args
        return node_service_account(
            self,
            child(self._name, suffix),
            project=args.project,
            account=account,
            description=f"clusterfab Slurm {what} of {args.cluster}",
            bucket_name=args.bucket_name,
        )

    def _naming_rights(self, member: pulumi.Input[str]) -> None:
        args = self._args
        self._grant(
            "list", LIST_PERMISSIONS, "List the zone's VMs and MIGs: what the node sync reads", member
        )
        self._grant(
            "name",
            NAMING_PERMISSIONS,
            "Read and set metadata of the cluster's node VMs: the node sync's names",
            member,
            gcp.projects.IAMMemberConditionArgs(
                title="clusterfab node VMs only",
                expression=naming_condition(args.project, args.zone, args.node_instance_prefixes),
            ),
        )
        if args.instance_group_managers:
            expression = pulumi.Output.all(*args.instance_group_managers).apply(
                lambda names: mig_condition(args.project, args.zone, names)
            )
            self._grant(
                "mig",
                RECREATE_PERMISSIONS,
                "Have the node groups' MIGs recreate a failed node's VM",
                member,
                gcp.projects.IAMMemberConditionArgs(title="clusterfab node MIGs only", expression=expression),
            )
        if args.faulty_host_prefixes:
            self._grant(
                "host",
                REPORT_PERMISSIONS,
                "Report the hosts of failed node VMs faulty",
                member,
                gcp.projects.IAMMemberConditionArgs(
                    title="clusterfab reportable node VMs only",
                    expression=naming_condition(args.project, args.zone, args.faulty_host_prefixes),
                ),
            )

    def _elastic_rights(self, member: pulumi.Input[str]) -> None:
        """The resume and suspend programs' rights (module docstring); the node sync deletes elastic VMs
        with them too."""
        name, args = self._name, self._args
        groups = args.elastic_groups
        self._grant(
            "use",
            LAUNCH_INPUT_PERMISSIONS,
            "Find node groups' MIGs, wait for operations, use the subnets and images elastic VMs launch with",
            member,
        )
        prefixes = [g.vm_prefix for g in groups]
        placements = [g.placement_prefix for g in groups if g.placement_prefix]
        flex = [g.flex_prefix for g in groups if g.flex_prefix]
        workload = [g.workload_policy for g in groups if g.workload_policy is not None]
        expression = pulumi.Output.all(
            pulumi.Output.all(*[g.template for g in groups]), pulumi.Output.all(*workload)
        ).apply(
            lambda found: elastic_condition(
                args.project,
                args.zone,
                prefixes,
                found[0],
                placements=placements,
                region=args.region,
                flex=flex,
                policies=found[1],
            )
        )
        self._grant(
            "vms",
            ELASTIC_PERMISSIONS + (FLEX_PERMISSIONS if flex else ()),
            "Create, name and delete the cluster's elastic VMs from their node groups' templates",
            member,
            gcp.projects.IAMMemberConditionArgs(
                title="clusterfab elastic VMs and node templates only", expression=expression
            ),
        )
        act = self._role("act", ACT_AS_PERMISSIONS, "Run elastic VMs as their node groups' service accounts")
        for group in groups:
            gcp.serviceaccount.IAMMember(
                child(name, f"act-{group.node_group}"),
                service_account_id=pulumi.Output.concat(
                    "projects/", args.project, "/serviceAccounts/", group.service_account_email
                ),
                role=act.name,
                member=member,
                opts=self._own,
            )

    def _role(self, suffix: str, permissions: Sequence[str], description: str) -> gcp.projects.IAMCustomRole:
        args = self._args
        return gcp.projects.IAMCustomRole(
            child(self._name, f"{suffix}-role"),
            project=args.project,
            role_id=f"{args.role_id_prefix}_{suffix}",
            title=f"clusterfab Slurm node sync ({suffix}) of {args.cluster}",
            description=description,
            permissions=list(permissions),
            opts=self._own,
        )

    def _grant(
        self,
        suffix: str,
        permissions: Sequence[str],
        description: str,
        member: pulumi.Input[str],
        condition: gcp.projects.IAMMemberConditionArgs | None = None,
    ) -> None:
        """A custom role of these permissions, granted to `member` on the project (under `condition`)."""
        gcp.projects.IAMMember(
            child(self._name, suffix),
            project=self._args.project,
            role=self._role(suffix, permissions, description).name,
            member=member,
            condition=condition,
            opts=self._own,
        )

    def _files(self) -> list[pulumi.Resource]:
        name, args = self._name, self._args
        if args.files is None:
            return []
        key, path = args.files
        return [
            gcp.storage.BucketObject(
                child(name, "files"),
                bucket=args.bucket_name,
                name=key,
                source=pulumi.FileAsset(str(path)),
                opts=self._own,
            )
        ]

    def _vm(
        self,
        resource: str,
        *,
        vm_name: str,
        machine_type: str,
        sa: gcp.serviceaccount.Account,
        startup_script: pulumi.Input[str],
        depends: Sequence[pulumi.Resource],
        role: str,
        network_ip: pulumi.Input[str] | None = None,
        attached_disks: Sequence[gcp.compute.InstanceAttachedDiskArgs] = (),
    ) -> gcp.compute.Instance:
        args = self._args
        labels = {**args.labels, SLURM_ROLE_TAG: role}
        return gcp.compute.Instance(
            resource,
            name=vm_name,
            project=args.project,
            zone=args.zone,
            machine_type=machine_type,
            boot_disk=gcp.compute.InstanceBootDiskArgs(
                auto_delete=True,
                initialize_params=gcp.compute.InstanceBootDiskInitializeParamsArgs(
                    image=args.image, size=args.boot_disk_gib, type=args.disk_type, labels=labels
                ),
                kms_key_self_link=args.kms_key,
            ),
            attached_disks=list(attached_disks),
            network_interfaces=[
                gcp.compute.InstanceNetworkInterfaceArgs(subnetwork=args.subnetwork_id, network_ip=network_ip)
            ],
            service_account=gcp.compute.InstanceServiceAccountArgs(
                email=sa.email, scopes=[CLOUD_PLATFORM_SCOPE]
            ),
            shielded_instance_config=gcp.compute.InstanceShieldedInstanceConfigArgs(
                enable_secure_boot=True, enable_vtpm=True, enable_integrity_monitoring=True
            ),
            metadata={
                "startup-script": startup_script,
                "enable-oslogin": "TRUE",
                "block-project-ssh-keys": "TRUE",
            },
            allow_stopping_for_update=True,
            labels=labels,
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(depends)),
        )

    def _controller(
        self, sa: gcp.serviceaccount.Account, depends: list[pulumi.Resource]
    ) -> gcp.compute.Instance:
        name, args = self._name, self._args
        address = gcp.compute.Address(
            child(name, "address"),
            name=gcp_name(child(name, "address")),
            project=args.project,
            region=args.region,
            subnetwork=args.subnetwork_id,
            address_type="INTERNAL",
            address=args.private_ip,
            description=f"clusterfab Slurm controller of {args.cluster} (slurm.conf names this address)",
            labels=dict(args.labels),
            opts=self._own,
        )
        state = gcp.compute.Disk(
            child(name, "state"),
            name=gcp_name(child(name, "state")),
            project=args.project,
            zone=args.zone,
            size=args.state_disk_gib,
            type=args.disk_type,
            description=f"clusterfab Slurm controller state of {args.cluster}: slurmctld state, accounting",
            disk_encryption_key=(
                gcp.compute.DiskDiskEncryptionKeyArgs(kms_key_self_link=args.kms_key)
                if args.kms_key is not None
                else None
            ),
            labels=dict(args.labels),
            opts=pulumi.ResourceOptions(parent=self, protect=args.protect, retain_on_delete=args.protect),
        )
        self._snapshots(state)
        return self._vm(
            child(name, "controller"),
            vm_name=args.instance_name,
            machine_type=args.machine_type,
            sa=sa,
            startup_script=args.startup_script,
            depends=depends,
            role="controller",
            network_ip=address.address,
            attached_disks=[
                gcp.compute.InstanceAttachedDiskArgs(source=state.self_link, device_name=STATE_DEVICE_NAME)
            ],
        )

    def _snapshots(self, disk: gcp.compute.Disk) -> None:
        """A daily snapshot of the state disk in the cluster's region, kept `snapshots_kept` days and past
        the disk's deletion; attached to the disk, so an existing disk is not recreated for it."""
        name, args = self._name, self._args
        policy = gcp.compute.ResourcePolicy(
            child(name, "snapshots"),
            name=gcp_name(child(name, "snapshots")),
            project=args.project,
            region=args.region,
            description=f"clusterfab Slurm state of {args.cluster}: daily, kept {args.snapshots_kept} days",
            snapshot_schedule_policy=gcp.compute.ResourcePolicySnapshotSchedulePolicyArgs(
                schedule=gcp.compute.ResourcePolicySnapshotSchedulePolicyScheduleArgs(
                    daily_schedule=gcp.compute.ResourcePolicySnapshotSchedulePolicyScheduleDailyScheduleArgs(
                        days_in_cycle=1, start_time=args.snapshot_time_utc
                    )
                ),
                retention_policy=gcp.compute.ResourcePolicySnapshotSchedulePolicyRetentionPolicyArgs(
                    max_retention_days=args.snapshots_kept, on_source_disk_delete="KEEP_AUTO_SNAPSHOTS"
                ),
                snapshot_properties=gcp.compute.ResourcePolicySnapshotSchedulePolicySnapshotPropertiesArgs(
                    labels=dict(args.labels), storage_locations=args.region
                ),
            ),
            opts=self._own,
        )
        gcp.compute.DiskResourcePolicyAttachment(
            child(name, "state-snapshots"),
            project=args.project,
            zone=args.zone,
            disk=disk.name,
            name=policy.name,
            opts=self._own,
        )

    def _login(
        self, index: int, sa: gcp.serviceaccount.Account, depends: list[pulumi.Resource]
    ) -> gcp.compute.Instance:
        args = self._args
        return self._vm(
            child(self._name, f"login-{index}"),
            vm_name=login_vm_name(args.login_name_prefix or args.instance_name + "-login", index),
            machine_type=args.login_machine_type,
            sa=sa,
            startup_script=args.login_startup_script,
            depends=depends,
            role="login",
        )
