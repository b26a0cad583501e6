"""Blueprint -> components: the one place that knows both the blueprint language and the components.

`compose()` creates the components for one validated blueprint and returns the stack outputs. The
Pulumi program (`__main__.py`) and the offline plan (`clusterfab plan`) both call it, so what the plan
shows is what `pulumi up` creates. Provider packages are imported per cloud, only when needed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pulumi

from clusterfab.blueprint.models import LustreSpec
from clusterfab.bootstrap import Mount, NodeBootstrap, render_boot_script
from clusterfab.cost import monthly_budget_limit
from clusterfab.provision.bundle import Bundle, build_bundle
from clusterfab.provision.extravars import gpu_node_vars, healthcheck_vars, tpu_host_vars
from clusterfab.resolve import (
    PROTECTED_ENVIRONMENTS,
    attached_storage,
    fabric_of,
    is_protected,
    max_size,
    min_size,
    placement_of,
)
from clusterfab.stackinput import CONFIG_NAMESPACE, StackInput
from components._contracts import MountTarget

BILLING_ACCOUNT_KEY = "billingAccount"
"""Stack config `clusterfab:billingAccount`: the billing account a GCP budget is created under."""


BUNDLE_CACHE = Path(".cache") / "bundles"
"""Where the program writes the playbook bundle, relative to the project root (git-ignored)."""


def _bundle(stack_input: StackInput) -> Bundle:
    root = stack_input.project_root
    return build_bundle(root / "playbooks", root / BUNDLE_CACHE)


def _boot_script(
    stack_input: StackInput,
    *,
    stack: str,
    name: str,
    bucket_name: pulumi.Input[str],
    bundle: Bundle,
    mounts: Sequence[MountTarget],
    playbook: str,
    playbook_vars: Callable[[list[Mount]], dict[str, Any]],
    healthcheck_vars: dict[str, Any] | None,
) -> pulumi.Output[str]:
    """A node's boot script, once the bucket's name and the mounted file systems' addresses are known."""
    bp = stack_input.blueprint

    def render(values: list[Any]) -> str:
        bucket, *sources = values
        resolved = [
            Mount(m.name, m.fs_type, source, m.mount_point, m.options)
            for m, source in zip(mounts, sources, strict=True)
        ]
        return render_boot_script(
            NodeBootstrap(
                cloud=bp.cloud,
                cluster=bp.name,
                stack=stack,
                node_group=name,
                region=bp.region,
                bucket=bucket,
                bundle_key=bundle.key,
                bundle_sha256=bundle.sha256,
                ansible_core_version=stack_input.catalog.node_packages["ansible-core"].version or "",
                playbook=playbook,
                playbook_vars=playbook_vars(resolved),
                healthcheck_vars=healthcheck_vars,
            )
        )

    return pulumi.Output.all(bucket_name, *[m.source for m in mounts]).apply(render)


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
    from clusterfab.core import vocab as tagging
    from components._naming import child
    from components.aws.bucket import AwsClusterBucket, AwsClusterBucketArgs
    from components.aws.budget import AwsBudget, AwsBudgetArgs
    from components.aws.lustre import AwsFsxLustre, AwsFsxLustreArgs, plan_lustre
    from components.aws.network import AwsNetwork, AwsNetworkArgs, plan_network
    from components.aws.node_group import AwsGpuNodeGroup, AwsGpuNodeGroupArgs, plan_node_group

    bp, catalog, env = stack_input.blueprint, stack_input.catalog, stack_input.environment

    def tags(component: str) -> dict[str, str]:
        return tagging.standard_tags(bp.name, stack, component, bp.labels)

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
    bundle = _bundle(stack_input)
    bucket = AwsClusterBucket(
        child(bp.name, "artifacts"),
        AwsClusterBucketArgs(
            protect=env in {"prod"}, objects={"bundle": (bundle.key, bundle.path)}, tags=tags("artifacts")
        ),
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
            "options": fs.mount_target.options,
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
                boot_script=_boot_script(
                    stack_input,
                    stack=stack,
                    name=group.name,
                    bucket_name=bucket.bucket_name,
                    bundle=bundle,
                    mounts=[mounts[s.name] for s in attached_storage(bp, group) if s.name in mounts],
                    playbook="gpu_node.yml",
                    playbook_vars=lambda resolved, group=group: gpu_node_vars(bp, group, catalog, resolved),
                    healthcheck_vars=healthcheck_vars(bp, group, catalog),
                ),
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

    budget, monthly = bp.budget, monthly_budget_limit(bp)
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
            f"tag:{tagging.BLUEPRINT_TAG}": bp.name,
            f"tag:{tagging.STACK_TAG}": tagging.label_value(stack),
        },
        "fabric": {name: g["fabric"] or "none" for name, g in groups_out.items()},
    }


def _compose_gcp(stack_input: StackInput, stack: str) -> dict[str, Any]:
    from clusterfab.core import vocab as tagging
    from components._naming import child
    from components.gcp import GcpPlanError
    from components.gcp.bucket import GcpClusterBucket, GcpClusterBucketArgs
    from components.gcp.budget import GcpBudget, GcpBudgetArgs
    from components.gcp.network import (
        GcpFabricNetwork,
        GcpFabricNetworkArgs,
        GcpNetwork,
        GcpNetworkArgs,
        plan_network,
    )
    from components.gcp.node_group import GcpGpuNodeGroup, GcpGpuNodeGroupArgs, plan_node_group
    from components.gcp.storage import (
        GcpFilestore,
        GcpFilestoreArgs,
        GcpManagedLustre,
        GcpManagedLustreArgs,
        LustrePlan,
        plan_filestore,
        plan_lustre,
    )
    from components.gcp.tpu import GcpTpuSlices, GcpTpuSlicesArgs, plan_tpu

    bp, catalog, env = stack_input.blueprint, stack_input.catalog, stack_input.environment
    project = bp.project or pulumi.Config("gcp").get("project")
    if not project:
        raise pulumi.RunError(
            f"{stack_input.file}: no GCP project: set `project:` in the blueprint "
            "or the stack config `gcp:project`"
        )

    def labels(component: str) -> dict[str, str]:
        return tagging.standard_tags(bp.name, stack, component, bp.labels)

    machines = {g.name: catalog.gcp_machine_types[g.machine_type] for g in bp.node_groups}
    try:
        # Plan everything before creating anything: a blueprint GCP cannot realize fails cleanly.
        group_plans = {g.name: plan_node_group(g, machines[g.name], catalog) for g in bp.node_groups}
        tpu_plans = {t.name: plan_tpu(t, catalog) for t in bp.tpu_slices}
        net_plan = plan_network(
            project=project,
            region=bp.region,
            zone=bp.zone,
            cidr=bp.network.cidr,
            fabric_machines=[machines[n] for n, p in group_plans.items() if p.fabric is not None],
            general_slots=max(m.network.general_vpcs for m in catalog.gcp_machine_types.values()),
            private_services=bool(bp.storage),
            ssh_ingress_cidrs=bp.network.ssh_ingress_cidrs,
        )
        storage_plans = {
            s.name: (
                plan_lustre(
                    cluster=bp.name,
                    stack=stack,
                    name=s.name,
                    capacity_gib=s.capacity_gib,
                    throughput=s.throughput_mbps_per_tib,
                    mount_point=s.mount_path,
                    protect=is_protected(s, env),
                )
                if isinstance(s, LustreSpec)
                else plan_filestore(
                    name=s.name,
                    tier=s.tier,
                    region=bp.region,
                    zone=bp.zone,
                    capacity_gib=s.capacity_gib,
                    share_name=s.share_name,
                    mount_point=s.mount_path,
                    protect=is_protected(s, env),
                )
            )
            for s in bp.storage
        }
    except GcpPlanError as exc:
        raise pulumi.RunError(f"{stack_input.file}: {exc}") from None

    network = GcpNetwork(child(bp.name, "net"), GcpNetworkArgs(plan=net_plan, labels=labels("network")))
    fabrics = {
        f.fabric: GcpFabricNetwork(
            child(bp.name, f.fabric),
            GcpFabricNetworkArgs(plan=f, project=project, region=bp.region),
        )
        for f in net_plan.fabrics
    }
    bundle = _bundle(stack_input)
    bucket = GcpClusterBucket(
        child(bp.name, "artifacts"),
        GcpClusterBucketArgs(
            project=project,
            location=bp.region,
            protect=env in PROTECTED_ENVIRONMENTS,
            objects={"bundle": (bundle.key, bundle.path)},
            labels=labels("artifacts"),
        ),
    )

    mounts: dict[str, MountTarget] = {}
    storage_out: dict[str, Any] = {}
    for storage in bp.storage:
        plan = storage_plans[storage.name]
        component: GcpManagedLustre | GcpFilestore
        if isinstance(plan, LustrePlan):
            component = GcpManagedLustre(
                child(bp.name, storage.name),
                GcpManagedLustreArgs(
                    plan=plan,
                    project=project,
                    zone=bp.zone,
                    network_id=network.system_network_id,
                    private_services=network.private_services,
                    labels=labels(f"storage-{storage.name}"),
                ),
            )
        else:
            component = GcpFilestore(
                child(bp.name, storage.name),
                GcpFilestoreArgs(
                    plan=plan,
                    project=project,
                    network_name=network.system_network_name,
                    private_services=network.private_services,
                    private_services_range=network.private_services_range,
                    labels=labels(f"storage-{storage.name}"),
                ),
            )
        mounts[storage.name] = component.mount_target
        storage_out[storage.name] = {
            "fs_type": component.mount_target.fs_type,
            "instance": component.instance_name,
            "source": component.mount_target.source,
            "mount_point": component.mount_target.mount_point,
            "options": component.mount_target.options,
        }

    groups_out: dict[str, Any] = {}
    for group in bp.node_groups:
        group_plan = group_plans[group.name]
        node_group = GcpGpuNodeGroup(
            child(bp.name, group.name),
            GcpGpuNodeGroupArgs(
                plan=group_plan,
                cluster=bp.name,
                stack=stack,
                project=project,
                region=bp.region,
                zone=bp.zone,
                general_subnetworks=network.general_subnetworks,
                fabric_subnetworks=(
                    fabrics[group_plan.fabric].nic_subnetworks if group_plan.fabric is not None else []
                ),
                bucket_name=bucket.bucket_name,
                startup_script=_boot_script(
                    stack_input,
                    stack=stack,
                    name=group.name,
                    bucket_name=bucket.bucket_name,
                    bundle=bundle,
                    mounts=[mounts[s.name] for s in attached_storage(bp, group)],
                    playbook="gpu_node.yml",
                    playbook_vars=lambda resolved, group=group: gpu_node_vars(bp, group, catalog, resolved),
                    healthcheck_vars=healthcheck_vars(bp, group, catalog),
                ),
                labels=labels(f"node-group-{group.name}"),
            ),
        )
        groups_out[group.name] = {
            "instance_group_manager": node_group.instance_group_manager_name,
            "instance_template": node_group.instance_template,
            "service_account": node_group.service_account_email,
            "machine_type": group_plan.machine_type,
            "min_size": group_plan.min_size,
            "max_size": group_plan.max_size,
            "capacity": group.capacity.kind,
            "placement": group_plan.placement,
            "fabric": group_plan.fabric,
            "general_nics": group_plan.general_nics,
            "gpu_nics": group_plan.gpu_nics,
        }

    tpus_out: dict[str, Any] = {}
    for tpu in bp.tpu_slices:
        tpu_plan = tpu_plans[tpu.name]
        slices = GcpTpuSlices(
            child(bp.name, tpu.name),
            GcpTpuSlicesArgs(
                plan=tpu_plan,
                cluster=bp.name,
                stack=stack,
                project=project,
                zone=bp.zone,
                network_id=network.system_network_id,
                subnetwork_id=network.system_subnetwork_id,
                bucket_name=bucket.bucket_name,
                startup_script=_boot_script(
                    stack_input,
                    stack=stack,
                    name=tpu.name,
                    bucket_name=bucket.bucket_name,
                    bundle=bundle,
                    mounts=[mounts[s.name] for s in attached_storage(bp, tpu)],
                    playbook="tpu_host.yml",
                    playbook_vars=lambda resolved, tpu=tpu: tpu_host_vars(bp, tpu, catalog, resolved),
                    healthcheck_vars=None,
                ),
                labels=labels(f"tpu-{tpu.name}"),
            ),
        )
        tpus_out[tpu.name] = {
            "nodes": slices.node_names,
            "accelerator_type": tpu_plan.accelerator_type,
            "topology": tpu_plan.topology,
            "runtime_version": tpu_plan.runtime_version,
            "slices": tpu_plan.slices,
            "hosts_per_slice": tpu_plan.hosts_per_slice,
            "capacity": tpu.capacity.kind,
            "service_account": slices.service_account_email,
        }

    budget, monthly = bp.budget, monthly_budget_limit(bp)
    if budget is not None and monthly is not None:
        billing_account = pulumi.Config(CONFIG_NAMESPACE).get(BILLING_ACCOUNT_KEY)
        if billing_account:
            GcpBudget(
                child(bp.name, "budget"),
                GcpBudgetArgs(
                    cluster=bp.name,
                    stack=stack,
                    project=project,
                    billing_account=billing_account,
                    monthly_limit_usd=monthly,
                    alert_emails=budget.alert_emails,
                    labels=labels("budget"),
                ),
            )
        else:
            pulumi.log.info(
                f"budget: no GCP budget created; set the stack config "
                f"{CONFIG_NAMESPACE}:{BILLING_ACCOUNT_KEY} to a billing account id "
                f"to get a ${monthly:,.0f}/month budget with e-mail alerts"
            )

    networks_out: dict[str, Any] = dict(network.network_self_links)
    for fabric, fabric_network in fabrics.items():
        for role, link in fabric_network.network_self_links.items():
            networks_out[f"{fabric}-{role}"] = link
    return {
        "project": project,
        "network": {
            "system_network": network.system_network_name,
            "system_network_id": network.system_network_id,
            "system_subnetwork_id": network.system_subnetwork_id,
            "networks": networks_out,
        },
        "bucket": bucket.bucket_name,
        "node_groups": groups_out,
        "tpu_slices": tpus_out,
        "storage": storage_out,
        "node_selector": {
            f"labels.{tagging.BLUEPRINT_TAG}": bp.name,
            f"labels.{tagging.STACK_TAG}": tagging.label_value(stack),
        },
        "fabric": {name: g["fabric"] or "none" for name, g in groups_out.items()},
    }
