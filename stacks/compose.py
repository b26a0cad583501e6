"""Blueprint -> components: the one place that knows both the blueprint language and the components.

`compose()` creates the components for one validated blueprint and returns the stack outputs. The
Pulumi program (`__main__.py`) and the offline plan (`clusterfab plan`) both call it, so what the plan
shows is what `pulumi up` creates. Provider packages are imported per cloud, only when needed.
"""

from __future__ import annotations

from typing import Any

import pulumi

from clusterfab.blueprint.models import LustreSpec
from clusterfab.resolve import attached_storage, fabric_of, is_protected, max_size, min_size, placement_of
from clusterfab.stackinput import StackInput


def compose(stack_input: StackInput, *, stack: str) -> dict[str, Any]:
    """Create the cluster's components; return the stack outputs."""
    blueprint = stack_input.blueprint
    outputs: dict[str, Any] = {
        "blueprint": {
            "name": blueprint.name,
            "file": stack_input.file,
            "digest": stack_input.digest,
            "environment": stack_input.environment,
            "catalog_version": stack_input.catalog.version,
            "cloud": blueprint.cloud,
            "region": blueprint.region,
            "zone": blueprint.zone,
        },
    }
    if blueprint.cloud == "aws":
        outputs.update(_compose_aws(stack_input, stack))
    else:
        outputs.update(_compose_gcp(stack_input, stack))
    return outputs


def _compose_aws(stack_input: StackInput, stack: str) -> dict[str, Any]:
    from components import tags as tagging
    from components.aws.bucket import AwsClusterBucket, AwsClusterBucketArgs
    from components.aws.budget import AwsBudget, AwsBudgetArgs
    from components.aws.lustre import AwsFsxLustre, AwsFsxLustreArgs, plan_lustre
    from components.aws.network import AwsNetwork, AwsNetworkArgs, plan_network
    from components.aws.node_group import AwsGpuNodeGroup, AwsGpuNodeGroupArgs, plan_node_group
    from components.contracts import MountTarget
    from components.naming import child

    bp, catalog, env = stack_input.blueprint, stack_input.catalog, stack_input.environment

    def tags(component: str) -> dict[str, str]:
        return tagging.standard(bp.name, stack, component, bp.labels)

    network = AwsNetwork(
        child(bp.name, "net"),
        AwsNetworkArgs(
            plan=plan_network(
                bp.network.cidr, bp.zone, catalog.is_aws_zone_id(bp.zone), bp.network.ssh_ingress_cidrs
            ),
            region=bp.region,
            tags=tags("network"),
        ),
    )
    bucket = AwsClusterBucket(
        child(bp.name, "artifacts"),
        AwsClusterBucketArgs(protect=env in {"prod"}, tags=tags("artifacts")),
    )

    mounts: dict[str, MountTarget] = {}
    storage_out: dict[str, Any] = {}
    for storage in bp.storage:
        if not isinstance(storage, LustreSpec):
            continue  # validation rejects other kinds on AWS
        fs = AwsFsxLustre(
            child(bp.name, storage.name),
            AwsFsxLustreArgs(
                plan=plan_lustre(
                    name=storage.name,
                    deployment=storage.deployment,
                    capacity_gib=storage.capacity_gib,
                    throughput=storage.throughput_mbps_per_tib,
                    mount_point=storage.mount_path,
                    import_path=storage.import_path,
                    protect=is_protected(storage, env),
                ),
                vpc_id=network.vpc_id,
                subnet_id=network.node_subnet_id,
                client_security_group_id=network.node_security_group_id,
                tags=tags(f"storage-{storage.name}"),
            ),
        )
        mounts[storage.name] = fs.mount_target
        storage_out[storage.name] = {
            "fs_type": "lustre",
            "file_system_id": fs.file_system_id,
            "source": fs.mount_target.source,
            "mount_point": fs.mount_target.mount_point,
        }

    groups_out: dict[str, Any] = {}
    for group in bp.node_groups:
        machine = catalog.aws_machine_types[group.machine_type]
        plan = plan_node_group(group, machine, catalog)
        node_group = AwsGpuNodeGroup(
            child(bp.name, group.name),
            AwsGpuNodeGroupArgs(
                plan=plan,
                cluster=bp.name,
                stack=stack,
                subnet_id=network.node_subnet_id,
                security_group_id=network.node_security_group_id,
                bucket_arn=bucket.bucket_arn,
                mounts=[mounts[s.name] for s in attached_storage(bp, group) if s.name in mounts],
                lustre_client=catalog.lustre_clients.get("aws"),
                tags=tags(f"node-group-{group.name}"),
            ),
        )
        fabric = fabric_of(group, machine)
        groups_out[group.name] = {
            "auto_scaling_group": node_group.auto_scaling_group_name,
            "launch_template_id": node_group.launch_template_id,
            "machine_type": machine.name,
            "min_size": min_size(group),
            "max_size": max_size(group),
            "capacity": group.capacity.kind,
            "placement": placement_of(group, machine),
            "fabric": fabric,
            "efa_interfaces": sum(1 for i in plan.interfaces if i.interface_type != "interface"),
        }

    budget = bp.budget
    monthly = None
    if budget is not None:
        monthly = budget.max_monthly_usd or (budget.max_hourly_usd * 730 if budget.max_hourly_usd else None)
    if budget is not None and monthly is not None:
        AwsBudget(
            child(bp.name, "budget"),
            AwsBudgetArgs(cluster=bp.name, monthly_limit_usd=monthly, alert_emails=budget.alert_emails),
        )

    return {
        "network": {
            "vpc_id": network.vpc_id,
            "node_subnet_id": network.node_subnet_id,
            "node_security_group_id": network.node_security_group_id,
        },
        "bucket": bucket.bucket_name,
        "node_groups": groups_out,
        "storage": storage_out,
        "node_selector": {
            f"tag:{tagging.BLUEPRINT}": bp.name,
            f"tag:{tagging.STACK}": tagging.label_value(stack),
        },
        "fabric": {name: g["fabric"] or "none" for name, g in groups_out.items()},
    }


def _compose_gcp(stack_input: StackInput, stack: str) -> dict[str, Any]:
    raise pulumi.RunError(
        f"{stack_input.file}: GCP blueprints cannot be deployed yet (the GCP components are not built); "
        "`clusterfab validate` and `clusterfab cost` work for them"
    )
