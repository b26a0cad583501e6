"""The toy cloud's realizer: the stack program hands it the cluster (`cluster.Cluster`), it creates toy
resources (a made-up provider's type tokens, `toy:<module>:<Type>`) and hands back what the stack outputs.

One network and bucket, a node pool per node group (its nodes boot with the script `Cluster.boot_script`
renders, with the toy's parts of it), and the scheduler's hosts by kind, as the built-in realizers keep
them (`scheduler_entry`): the toy scheduler gets a controller. Imported by name from
`stacks/compose.py` while the program runs, with the program's directory on the path (hence `cluster`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pulumi
from cluster import Cluster, NodeGroupExport, Realized, SchedulerExport, scheduler_entry

from clusterfab.addressing import SLURM_CONTROLLER_HOST
from clusterfab.clouds import profile
from clusterfab.core.plugins import NO_SCHEDULER
from clusterfab.provision.extravars import healthcheck_vars
from tests.plugins.toy_cloud import NAME
from tests.plugins.toy_scheduler import KIND, ToySection


class _ToyResource(pulumi.CustomResource):
    """A resource of the made-up toy provider: its inputs as given, `address` computed by the cloud."""

    TOKEN = ""
    address: pulumi.Output[str]

    def __init__(self, name: str, inputs: Mapping[str, Any], opts: pulumi.ResourceOptions | None = None):
        super().__init__(self.TOKEN, name, {**inputs, "address": None}, opts)


class Network(_ToyResource):
    TOKEN = "toy:network:Network"


class Bucket(_ToyResource):
    TOKEN = "toy:storage:Bucket"


class NodePool(_ToyResource):
    TOKEN = "toy:compute:NodePool"


class Controller(_ToyResource):
    TOKEN = "toy:scheduler:Controller"


def _controller(cluster: Cluster, network: Network) -> SchedulerExport:
    spec = cluster.spec
    assert isinstance(spec.scheduler, ToySection)
    address = str(profile(NAME).host_subnet(spec.cidr)[SLURM_CONTROLLER_HOST])
    host = Controller(
        f"{spec.name}-controller",
        {
            "machineType": spec.scheduler.machine_type,
            "network": network.id,
            "privateIp": address,
            "tags": cluster.tags("scheduler"),
        },
    )
    url = host.address.apply(lambda at: f"toyq://{at}/queue")
    return {"kind": KIND, "controller": host.id, "controller_address": address, "login": [], "queue_url": url}


SCHEDULERS: Mapping[str, Callable[[Cluster, Network], SchedulerExport | None]] = {
    NO_SCHEDULER: lambda _cluster, _network: None,
    KIND: _controller,
}
"""The scheduler kinds the toy cloud realizes: kind -> what builds its hosts."""


def realize(cluster: Cluster) -> Realized:
    spec = cluster.spec
    scheduler = scheduler_entry(cluster, SCHEDULERS, "toy")
    network = Network(
        f"{spec.name}-network", {"region": spec.region, "cidr": spec.cidr, "tags": cluster.tags("network")}
    )
    bucket = Bucket(f"{spec.name}-bucket", {"region": spec.region, "tags": cluster.tags("storage")})
    node_groups: dict[str, NodeGroupExport] = {}
    for group in spec.node_groups:
        boot_script = cluster.boot_script(
            name=group.name,
            bucket_name=bucket.id,
            mounts=[],
            playbook="gpu_node.yml",
            playbook_vars=lambda resolved, group=group: cluster.gpu_node_playbook_vars(group, resolved, {}),
            healthcheck_vars=healthcheck_vars(spec, group, cluster.input.catalog),
        )
        pool = NodePool(
            f"{spec.name}-{group.name}",
            {
                "zone": spec.zone,
                "network": network.id,
                "machineType": group.machine.name,
                "minSize": group.min_size,
                "maxSize": group.max_size,
                "capacity": group.capacity.kind,
                "image": group.image,
                "userData": boot_script,
                "tags": cluster.tags("compute") | {"clusterfab-node-group": group.name},
            },
        )
        node_groups[group.name] = NodeGroupExport(
            machine_type=group.machine.name,
            min_size=group.min_size,
            max_size=group.max_size,
            capacity=group.capacity.kind,
            placement=group.placement,
            fabric=group.fabric,
            group=pool.id,
            template=pool.id,
            identity=pool.address,
            interfaces=1,
            fabric_interfaces=0,
        )
    return Realized(
        network={"network_id": network.id},
        bucket=bucket.id,
        node_groups=node_groups,
        node_selector=profile(NAME).node_selector(spec.name, cluster.stack),
        scheduler=scheduler(cluster, network),
    )
