"""Slurm on AWS: the controller (which serves the munge key to root on the nodes) and login nodes, and the
teardown of the instances Slurm creates for elastic nodes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
from cluster import Cluster, SchedulerRealized
from slurm_common import (
    SLURM_ITEM,
    controller_boot,
    hosts_monitoring,
    login_boot,
    slurm_export,
    slurm_files,
    slurmd_vars,
    teardown_hooks,
)

from clusterfab import addressing
from clusterfab.bootstrap import boot_script_key
from clusterfab.core.items import CONTROLLER_ITEM, LOGIN_ITEM
from clusterfab.scheduler.slurm.hostvars import (
    accounting_database_name,
    munge_secret_name,
    slurm_node_groups,
)
from clusterfab.scheduler.slurm.render import controller_address, require_slurm
from clusterfab.scheduler.slurm.teardown import Fleet
from clusterfab.scheduler.slurm.teardown_aws import ec2_fleet
from clusterfab.spec import NodeGroup
from components._contracts import MountTarget
from components._naming import child
from components.aws.node_group import AwsGpuNodeGroup, scaling_group_name
from components.aws.slurm import AwsSlurmController, AwsSlurmControllerArgs
from components.aws.slurm_database import AwsSlurmDatabaseSettings

from .monitoring import monitoring_access
from .site import AwsScheduler, Site


def _teardown_hooks(cluster: Cluster) -> tuple[pulumi.ResourceHook, ...]:
    """The node groups' delete hooks: EC2 with the deploying user's credentials, scoped to the deleted
    auto scaling group's own launch template and instance profile."""
    region = cluster.spec.region

    def fleet(blueprint: str, stack: str, deleted: Mapping[str, Any]) -> Fleet:
        return ec2_fleet(region, blueprint=blueprint, stack=stack, deleted=deleted)

    return teardown_hooks(cluster, fleet, scaling_group_name)


def _realize(
    site: Site, nodes: Mapping[str, AwsGpuNodeGroup], mounts: list[MountTarget]
) -> SchedulerRealized:
    """The controller and login nodes, once the node groups (`nodes`, by name) exist: the controller's
    rights reach their launch templates and instance profiles."""
    cluster, network, bucket = site.cluster, site.network, site.bucket
    spec = cluster.spec
    slurm = require_slurm(spec)
    archive = slurm_files(cluster)
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
            boot_script=controller_boot(
                cluster,
                bucket.uploaded_name,
                archive,
                inputs={"slurm_controller_fleet": _fleet(slurm_groups, nodes)},
            ),
            boot_script_key=boot_script_key(CONTROLLER_ITEM),
            files=(archive.key, archive.path),
            login_count=slurm.login_count,
            login_instance_type=login.name if login else slurm.controller.name,
            login_boot_script=login_boot(cluster, bucket.uploaded_name, mounts),
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
        site.opts,
    )
    _slurm_grants(site, controller)
    return slurm_export(
        cluster,
        controller=controller.instance_id,
        login=controller.login_instance_ids,
        munge_secret=controller.munge_secret_arn,
        accounting_database=controller.database.address if controller.database is not None else None,
    )


def _accounting_database(cluster: Cluster) -> AwsSlurmDatabaseSettings | None:
    """Managed accounting: RDS for MariaDB as the catalog records it, named as the controller looks for it."""
    spec = cluster.spec
    database = require_slurm(spec).database
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


def _slurm_grants(site: Site, controller: AwsSlurmController) -> None:
    """A controller that hosts monitoring gets its rights. The GPU nodes' roles get none for Slurm: the
    munge key comes from the controller's key service."""
    if hosts_monitoring(site.spec):
        monitoring_access(
            site.cluster,
            role_name=controller.role_name,
            host_security_group_id=controller.security_group_id,
            network=site.network,
            opts=site.opts,
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


SLURM = AwsScheduler(
    node_vars=slurmd_vars,
    delete_hooks=_teardown_hooks,
    realize=_realize,
)
"""Slurm's entry in the AWS realizer's table of schedulers."""
