"""ClusterSpec -> AWS components: the only place that maps a resolved cluster to AWS component Args.

One VPC with a node subnet in the blueprint's zone, the cluster bucket, FSx for Lustre per file system,
an auto scaling group per node group (launch template with the machine's EFA layout from the catalog),
and the budget. Resources are registered in that order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, assert_never

import pulumi
import pulumi_aws as aws
from compose import Cluster, NodeGroupExport, Realized, StorageExport, controller_monitoring

from clusterfab import addressing
from clusterfab.bootstrap import FilesArchive, boot_script_key, files_dir
from clusterfab.catalog.models import AwsMachineType
from clusterfab.clouds import profile
from clusterfab.clouds.aws import is_zone_id
from clusterfab.core.items import CONTROLLER_ITEM, LOGIN_ITEM, MONITORING_ITEM
from clusterfab.core.vocab import BLUEPRINT_TAG, STACK_TAG
from clusterfab.cost import monthly_budget_limit
from clusterfab.health import HEALTH_PREFIX
from clusterfab.monitoring.host import monitoring_host_vars
from clusterfab.monitoring.tunnel import GRAFANA_PORT
from clusterfab.provision.extravars import healthcheck_vars, storage_vars
from clusterfab.scheduler.slurm.hostvars import (
    accounting_database_name,
    client_vars,
    controller_host_vars,
    munge_secret_name,
    slurm_node_groups,
)
from clusterfab.scheduler.slurm.render import controller_address
from clusterfab.scheduler.slurm.teardown import Fleet, ec2_fleet
from clusterfab.spec import (
    CapacityBlock,
    FlexStart,
    LustreStorage,
    NodeGroup,
    OnDemand,
    Reservation,
    Spot,
)
from components._contracts import MountTarget
from components._naming import child
from components.aws.bucket import AwsClusterBucket, AwsClusterBucketArgs
from components.aws.budget import AwsBudget, AwsBudgetArgs
from components.aws.lustre import AwsFsxLustre, AwsFsxLustreArgs
from components.aws.monitoring import (
    AwsMonitoringAccess,
    AwsMonitoringAccessArgs,
    AwsMonitoringNode,
    AwsMonitoringNodeArgs,
)
from components.aws.network import AwsNetwork, AwsNetworkArgs
from components.aws.node_group import (
    AwsGpuNodeGroup,
    AwsGpuNodeGroupArgs,
    Market,
    NetworkInterface,
    scaling_group_name,
)
from components.aws.slurm import (
    AwsSlurmController,
    AwsSlurmControllerArgs,
)
from components.aws.slurm_database import AwsSlurmDatabaseSettings


def deploy_identity() -> pulumi.Output[str]:
    """The principal that runs the program, as a policy's aws:PrincipalArn names it: the role of an
    assumed-role session (its issuer, with the role's path), else the user."""
    caller = aws.get_caller_identity_output()
    return aws.iam.get_session_context_output(arn=caller.arn).issuer_arn


def _teardown_hooks(cluster: Cluster) -> tuple[pulumi.ResourceHook, ...]:
    """The node groups' delete hooks: EC2 with the deploying user's credentials, scoped to the deleted
    auto scaling group's own launch template and instance profile."""
    region = cluster.spec.region

    def fleet(blueprint: str, stack: str, deleted: Mapping[str, Any]) -> Fleet:
        return ec2_fleet(region, blueprint=blueprint, stack=stack, deleted=deleted)

    return cluster.node_group_hooks(fleet, scaling_group_name)


def realize(cluster: Cluster) -> Realized:
    spec = cluster.spec
    # One explicit provider, in the blueprint's region: the stack's aws:region cannot move the cluster.
    opts = pulumi.ResourceOptions(providers=[aws.Provider(child(spec.name, "aws"), region=spec.region)])
    network = _network(cluster, opts)
    bucket = AwsClusterBucket(
        child(spec.name, "artifacts"),
        AwsClusterBucketArgs(
            protect=spec.protected,
            objects={"bundle": (cluster.bundle.key, cluster.bundle.path)},
            kms_key_arn=spec.bucket_kms_key,
            # The health record `promote` trusts comes from whoever deploys the stack, nobody else.
            guarded_prefixes={HEALTH_PREFIX: [deploy_identity()]},
            tags=cluster.tags("artifacts"),
        ),
        opts,
    )
    mounts: dict[str, MountTarget] = {}
    storage: dict[str, StorageExport] = {}
    for item in spec.storage:
        if not isinstance(item, LustreStorage):
            raise ValueError(f"storage {item.name}: AWS offers no {item.kind} (validation rejects it)")
        fs = _lustre(cluster, item, network, opts)
        mounts[item.name] = fs.mount_target
        storage[item.name] = StorageExport.of(fs.mount_target, fs.file_system_id)
    hooks = _teardown_hooks(cluster)
    built = {
        group.name: _node_group(
            cluster,
            group,
            network=network,
            bucket=bucket,
            mounts=[mounts[s] for s in group.storage],
            opts=opts,
            hooks=hooks,
        )
        for group in spec.node_groups
    }
    groups = {name: export for name, (export, _) in built.items()}
    _budget(cluster, opts)
    roles = {name: node_group.role_name for name, (_, node_group) in built.items()}
    nodes = {name: node_group for name, (_, node_group) in built.items()}
    scheduler = _slurm(cluster, network, bucket, roles, list(mounts.values()), opts, nodes)
    monitoring = _monitoring(cluster, network, bucket, opts) or controller_monitoring(spec, scheduler)
    return Realized(
        monitoring=monitoring,
        scheduler=scheduler,
        network={
            "vpc_id": network.vpc_id,
            "node_subnet_id": network.node_subnet_id,
            "node_security_group_id": network.node_security_group_id,
        },
        bucket=bucket.bucket_name,
        node_groups=groups,
        storage=storage,
        node_selector=profile("aws").node_selector(spec.name, cluster.stack),
    )


def _network(cluster: Cluster, opts: pulumi.ResourceOptions) -> AwsNetwork:
    spec = cluster.spec
    by_id = is_zone_id(spec.zone)
    return AwsNetwork(
        child(spec.name, "net"),
        AwsNetworkArgs(
            cidr=spec.cidr,
            node_subnet_cidr=str(addressing.aws_node_subnet(spec.cidr)),
            public_subnet_cidr=str(addressing.aws_public_subnet(spec.cidr)),
            region=spec.region,
            availability_zone=None if by_id else spec.zone,
            availability_zone_id=spec.zone if by_id else None,
            ssh_ingress_cidrs=spec.ssh_ingress_cidrs,
            protect=spec.protected,
            tags=cluster.tags("network"),
        ),
        opts,
    )


def _lustre(
    cluster: Cluster, item: LustreStorage, network: AwsNetwork, opts: pulumi.ResourceOptions
) -> AwsFsxLustre:
    return AwsFsxLustre(
        child(cluster.spec.name, item.name),
        AwsFsxLustreArgs(
            vpc_id=network.vpc_id,
            subnet_id=network.node_subnet_id,
            client_security_group_id=network.node_security_group_id,
            capacity_gib=item.capacity_gib,
            mount_point=item.mount_point,
            mount_name=item.name,
            deployment_type="PERSISTENT_2" if item.tier.tier == "PERSISTENT_2" else "SCRATCH_2",
            lustre_version=_required(item.tier.lustre_version, f"the Lustre version of FSx {item.tier.tier}"),
            per_unit_storage_throughput=item.throughput_mbps_per_tib,
            import_path=item.import_path,
            export_changes=item.export_changes,
            efa_enabled=item.efa,
            kms_key_arn=item.kms_key,
            protect=item.protected,
            tags=cluster.tags(f"storage-{item.name}"),
        ),
        opts,
    )


def _required(value: str | None, what: str) -> str:
    """A catalog figure AWS needs (the catalog tests check that every AWS record has it)."""
    if value is None:
        raise ValueError(f"the catalog has no {what}")
    return value


def _budget(cluster: Cluster, opts: pulumi.ResourceOptions) -> None:
    spec = cluster.spec
    monthly = monthly_budget_limit(spec.budget)
    if spec.budget is not None and monthly is not None:
        # The filter names the tag values the stack's resources carry, exactly as they carry them.
        tags = cluster.tags("budget")
        AwsBudget(
            child(spec.name, "budget"),
            AwsBudgetArgs(
                cluster=tags[BLUEPRINT_TAG],
                stack=tags[STACK_TAG],
                monthly_limit_usd=monthly,
                alert_emails=spec.budget.alert_emails,
                activate_cost_tags=cluster.input.settings.activate_cost_tags,
            ),
            opts,
        )


def _market(group: NodeGroup) -> tuple[Market, str | None]:
    """The launch template's market and the reservation it launches into."""
    capacity = group.capacity
    match capacity:
        case OnDemand():
            return "on-demand", None
        case Spot():
            return "spot", None
        case Reservation():
            return "on-demand", capacity.reservation
        case CapacityBlock():
            return "capacity-block", capacity.reservation
        case FlexStart():
            raise ValueError(
                f"node group {group.name}: AWS has no flex-start capacity (validation rejects it)"
            )
        case _:
            assert_never(capacity)


def _interfaces(cluster: Cluster, group: NodeGroup) -> tuple[NetworkInterface, ...]:
    machine = group.machine
    if group.fabric is None or not isinstance(machine, AwsMachineType):
        return (NetworkInterface(0, 0, "interface"),)
    layout = cluster.input.catalog.efa_interfaces(machine)
    return tuple(NetworkInterface(i.network_card_index, i.device_index, i.interface_type) for i in layout)


def _node_group(
    cluster: Cluster,
    group: NodeGroup,
    *,
    network: AwsNetwork,
    bucket: AwsClusterBucket,
    mounts: list[MountTarget],
    opts: pulumi.ResourceOptions,
    hooks: tuple[pulumi.ResourceHook, ...],
) -> tuple[NodeGroupExport, AwsGpuNodeGroup]:
    spec, catalog = cluster.spec, cluster.input.catalog
    market, reservation = _market(group)
    interfaces = _interfaces(cluster, group)
    boot_script = cluster.boot_script(
        name=group.name,
        bucket_name=bucket.uploaded_name,
        mounts=mounts,
        playbook="gpu_node.yml",
        playbook_vars=lambda resolved: cluster.gpu_node_playbook_vars(group, resolved),
        healthcheck_vars=healthcheck_vars(spec, group, catalog),
    )
    node_group = AwsGpuNodeGroup(
        child(spec.name, group.name),
        AwsGpuNodeGroupArgs(
            node_group=group.name,
            instance_type=group.machine.name,
            image_id=group.image,
            subnet_id=network.node_subnet_id,
            security_group_id=network.node_security_group_id,
            bucket_arn=bucket.bucket_arn,
            bucket_kms_key_arn=spec.bucket_kms_key,
            boot_script=boot_script,
            network_interfaces=interfaces,
            min_size=group.min_size,
            max_size=group.max_size,
            autoscaled=group.autoscaled,
            market=market,
            capacity_reservation_id=reservation,
            placement_group=group.placement == "compact",
            root_device_name=_required(group.root_device, "the image's root device"),
            root_volume_type=_required(group.root_volume_type, "the image's root volume type"),
            root_volume_gib=group.boot_disk_gib,
            kms_key_arn=group.kms_key,
            tags=cluster.tags(f"node-group-{group.name}"),
            before_delete=hooks,
        ),
        opts,
    )
    export = NodeGroupExport(
        machine_type=group.machine.name,
        min_size=group.min_size,
        max_size=group.max_size,
        capacity=group.capacity.kind,
        placement=group.placement,
        fabric=group.fabric,
        group=node_group.auto_scaling_group_name,
        template=node_group.launch_template_id,
        identity=node_group.role_arn,
        interfaces=len(interfaces),
        fabric_interfaces=sum(1 for i in interfaces if i.interface_type != "interface"),
    )
    return export, node_group


# --- Monitoring: Prometheus, Alertmanager and Grafana on their own node, or on the Slurm controller.


def _monitoring(
    cluster: Cluster, network: AwsNetwork, bucket: AwsClusterBucket, opts: pulumi.ResourceOptions
) -> dict[str, pulumi.Input[str] | int] | None:
    """The monitoring node, when the cluster monitors and has no Slurm controller to host the stack
    (on a controller, its realizer calls `monitoring_access` and boots the controller with
    monitoring.yml as well)."""
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
        ),
        opts,
    )
    return {
        "host": node.instance_id,
        "grafana_port": GRAFANA_PORT,
        "retention_days": monitoring.retention_days,
    }


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
            region=spec.region,
            smtp_secret=smtp.password_secret if smtp else None,
        ),
        opts,
    )


# --- Slurm: the controller (which serves the munge key to root on the nodes) and login nodes.

SLURM_ITEM = "slurm"


def _slurm(  # noqa: PLR0917 - the realizer's parts, in the order it built them
    cluster: Cluster,
    network: AwsNetwork,
    bucket: AwsClusterBucket,
    roles: Mapping[str, pulumi.Output[str]],
    mounts: list[MountTarget],
    opts: pulumi.ResourceOptions,
    nodes: Mapping[str, AwsGpuNodeGroup],
) -> dict[str, Any] | None:
    spec = cluster.spec
    slurm = spec.scheduler
    if slurm is None:
        return None
    archive = cluster.slurm_files()
    files = FilesArchive(archive.key, archive.sha256)
    slurm_groups = [g for g in slurm_node_groups(spec) if g.name in nodes]
    elastic = [g for g in slurm_groups if g.max_size > g.static_size]
    login = slurm.login
    controller = AwsSlurmController(
        child(spec.name, SLURM_ITEM),
        AwsSlurmControllerArgs(
            cluster=spec.name,
            munge_secret_name=munge_secret_name(spec, cluster.stack),
            vpc_id=network.vpc_id,
            subnet_id=network.node_subnet_id,
            availability_zone=network.node_subnet_zone,
            node_security_group_id=network.node_security_group_id,
            egress_ip=network.egress_ip,
            bucket_name=bucket.bucket_name,
            bucket_arn=bucket.bucket_arn,
            bucket_kms_key_arn=spec.bucket_kms_key,
            image_id=slurm.controller.image,
            private_ip=controller_address(spec),
            instance_type=slurm.controller.name,
            state_volume_gib=slurm.disk_gib,
            volume_type=slurm.controller.disk_type,
            kms_key_arn=slurm.kms_key,
            protect=spec.protected,
            boot_script=_controller_boot(cluster, bucket, archive.sha256, files, _fleet(slurm_groups, nodes)),
            boot_script_key=boot_script_key(CONTROLLER_ITEM),
            files=(archive.key, archive.path),
            login_count=slurm.login_count,
            login_instance_type=login.name if login else slurm.controller.name,
            login_boot_script=_login_boot(cluster, bucket, mounts),
            login_boot_script_key=boot_script_key(LOGIN_ITEM),
            region=spec.region,
            node_instance_profile_arns=[nodes[g.name].instance_profile_arn for g in slurm_groups],
            elastic_node_role_arns=[nodes[g.name].role_arn for g in elastic],
            elastic_instance_profile_arns=[nodes[g.name].instance_profile_arn for g in elastic],
            elastic_launch_template_arns=[nodes[g.name].launch_template_arn for g in elastic],
            elastic_instance_types=sorted({g.machine.name for g in elastic}),
            elastic_volume_keys=sorted({g.kms_key for g in elastic if g.kms_key}),
            database=_accounting_database(cluster),
            tags=cluster.tags(SLURM_ITEM),
        ),
        opts,
    )
    _slurm_grants(cluster, controller, network, opts)
    exports: dict[str, Any] = {
        "kind": "slurm",
        "controller": controller.instance_id,
        "controller_address": controller_address(spec),
        "login": controller.login_instance_ids,
        "munge_secret": controller.munge_secret_arn,
    }
    if controller.database is not None:
        exports["accounting_database"] = controller.database.address
    return exports


def _accounting_database(cluster: Cluster) -> AwsSlurmDatabaseSettings | None:
    """Managed accounting: RDS for MariaDB as the catalog records it, named as the controller looks for it."""
    spec = cluster.spec
    database = spec.scheduler.database if spec.scheduler is not None else None
    if database is None:
        return None
    return AwsSlurmDatabaseSettings(
        identifier=accounting_database_name(spec, cluster.stack),
        second_subnet_cidr=str(addressing.aws_database_subnet(spec.cidr)),
        engine_version=database.version,
        parameter_family=str(database.parameter_family),
        instance_class=database.machine_type,
        storage_gib=database.storage_gib,
        ca=database.ca,
        backup_retention_days=database.backup_days,
    )


def _slurm_grants(
    cluster: Cluster, controller: AwsSlurmController, network: AwsNetwork, opts: pulumi.ResourceOptions
) -> None:
    """A controller that hosts monitoring gets its rights. The GPU nodes' roles get none for Slurm: the
    munge key comes from the controller's key service."""
    spec = cluster.spec
    if spec.monitoring is not None and spec.monitoring.host == "controller":
        monitoring_access(
            cluster,
            role_name=controller.role_name,
            host_security_group_id=controller.security_group_id,
            network=network,
            opts=opts,
        )


def _login_boot(cluster: Cluster, bucket: AwsClusterBucket, mounts: list[MountTarget]) -> pulumi.Output[str]:
    spec = cluster.spec
    return cluster.boot_script(
        name=LOGIN_ITEM,
        bucket_name=bucket.uploaded_name,
        mounts=mounts,
        playbook="slurm_login.yml",
        playbook_vars=lambda resolved: {
            **client_vars(spec, cluster.input.catalog.slurm, stack=cluster.stack),
            **storage_vars(spec.cloud, cluster.input.catalog, resolved),
        },
        healthcheck_vars=None,
        follows=True,
    )


def _fleet(groups: list[NodeGroup], nodes: Mapping[str, AwsGpuNodeGroup]) -> pulumi.Output[dict[str, Any]]:
    """What the node sync checks each instance against before it names, launches or terminates one: each
    Slurm node group's launch template (id) and instance profile (ARN), known once they exist."""
    return pulumi.Output.all(
        *[
            pulumi.Output.all(nodes[g.name].launch_template_id, nodes[g.name].instance_profile_arn)
            for g in groups
        ]
    ).apply(
        lambda found: {
            group.name: {"template": template, "profile": profile}
            for group, (template, profile) in zip(groups, found, strict=True)
        }
    )


def _controller_boot(
    cluster: Cluster,
    bucket: AwsClusterBucket,
    sha256: str,
    files: FilesArchive,
    fleet: pulumi.Output[dict[str, Any]],
) -> pulumi.Output[str]:
    host_vars = controller_host_vars(
        cluster.spec, cluster.input.catalog, stack=cluster.stack, files_dir=files_dir(sha256)
    )
    return cluster.boot_script(
        name=CONTROLLER_ITEM,
        bucket_name=bucket.uploaded_name,
        mounts=[],
        playbook="slurm_controller.yml",
        playbook_vars=lambda _mounts: host_vars,
        healthcheck_vars=None,
        files=files,
        follows=True,
        playbook_inputs={"slurm_controller_fleet": fleet},
    )
