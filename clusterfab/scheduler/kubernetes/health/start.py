"""`clusterfab health` on a Kubernetes stack: the check's settings from the stack's outputs and the
catalog, the API server client from the cluster's outputs, and the report."""

from __future__ import annotations

import time
from importlib import resources

from clusterfab.catalog import Catalog, load_catalog
from clusterfab.clouds.kubernetes import credentials
from clusterfab.core.errors import UsageError
from clusterfab.outputs import StackOutputs
from clusterfab.scheduler.healthreport import HealthReport, Progress, check_level, read_report
from clusterfab.scheduler.kubernetes import gpudirect
from clusterfab.scheduler.kubernetes.health.kubeapi import ApiError, HttpKubeApi, KubeApi
from clusterfab.scheduler.kubernetes.health.run import Check, Group, Settings, SetupError
from clusterfab.scheduler.kubernetes.manifests.nccl_installers import GIB_HOST_DIR
from clusterfab.scheduler.kubernetes.outputs import KubernetesOutput
from clusterfab.scheduler.kubernetes.software import cloud_part, kubernetes_software


def run_health(outputs: StackOutputs, level: int, nodes: str | None, progress: Progress) -> HealthReport:
    """`nodes`: comma-separated node names (None: every idle GPU node)."""
    check_level(level)
    cluster = outputs.scheduler
    if not isinstance(cluster, KubernetesOutput):
        raise UsageError("the stack's outputs name no Kubernetes cluster; run `clusterfab up` for it first")
    wanted = parse_nodes(nodes)
    blueprint = outputs.blueprint
    credential = credentials(blueprint.cloud)(
        cluster=cluster.controller, location=cluster.location, project=blueprint.project
    )
    api = HttpKubeApi(cluster.controller_address, cluster.certificate_authority, credential)
    return check_cluster(api, settings(outputs, level, load_catalog()), wanted, progress)


def check_cluster(
    api: KubeApi, settings: Settings, wanted: list[str] | None, progress: Progress, run: str | None = None
) -> HealthReport:
    check = Check(api, settings, run or f"clusterfab-health-{int(time.time())}", progress)
    try:
        return read_report(check.execute(wanted))
    except (SetupError, ApiError) as err:
        raise UsageError(f"the deep check could not run: {err}") from None


def parse_nodes(nodes: str | None) -> list[str] | None:
    """`--nodes` on Kubernetes: node names, comma-separated."""
    if nodes is None:
        return None
    names = [n.strip() for n in nodes.split(",")]
    if not all(names):
        raise UsageError(f"--nodes: {nodes!r} is not a comma-separated list of node names")
    return list(dict.fromkeys(names))


def settings(outputs: StackOutputs, level: int, catalog: Catalog) -> Settings:
    software = kubernetes_software()
    host_driver = cloud_part(outputs.blueprint.cloud).HOST_DRIVER
    groups = {}
    for name, group in outputs.node_groups.items():
        aws = catalog.aws_machine_types.get(group.machine_type)
        gcp = catalog.gcp_machine_types.get(group.machine_type)
        machine = aws or gcp
        efa = 0
        if group.fabric == "efa" and aws is not None:
            efa = sum(1 for i in catalog.efa_interfaces(aws) if i.interface_type != "interface")
        tcpxo = None
        if group.fabric == gpudirect.TCPXO and gcp is not None and host_driver is not None:
            # The pods ask for the Network objects the cluster's program made for the machine's GPU NICs.
            networks = tuple(gpudirect.gpu_network(i) for i in range(gcp.network.gpu_vpcs))
            rxdm = software.piece("nccl-tcpxo-installer").image("rxdm")
            tcpxo = gpudirect.Tcpxo(networks, rxdm, host_driver)
        tcpx = None
        if group.fabric == gpudirect.TCPX and gcp is not None and host_driver is not None:
            # The same GPU networks as on TCPXO: the machine's gpu_vpcs (4 on a3-highgpu-8g).
            networks = tuple(gpudirect.gpu_network(i) for i in range(gcp.network.gpu_vpcs))
            daemon = software.piece("nccl-tcpx-installer").image("rxdm")
            tcpx = gpudirect.Tcpx(networks, daemon, host_driver)
        rdma = None
        if group.fabric == gpudirect.RDMA and gcp is not None and host_driver is not None:
            # The Network objects the cluster's program made for the machine's RDMA subnets.
            subnets = tuple(gpudirect.rdma_network(i) for i in range(gcp.network.rdma_subnets))
            rdma = gpudirect.Rdma(subnets, host_driver, GIB_HOST_DIR)
        # The floor is the machine's on its own fabric: a group kept off it is measured, not judged.
        on_fabric = machine is not None and group.fabric == machine.fabric
        floor = catalog.pair_bandwidth.floor(group.machine_type) if on_fabric else None
        groups[name] = Group(group.machine_type, group.fabric, efa, floor, tcpxo, rdma, tcpx)
    program = resources.files("clusterfab.scheduler.kubernetes.health").joinpath("allreduce.py").read_text()
    return Settings(
        level=level,
        groups=groups,
        dcgm_image=software.piece("dcgm").image("diag"),
        pytorch_image=software.piece("pytorch").image("allreduce"),
        host_driver=host_driver,
        program=program,
    )
