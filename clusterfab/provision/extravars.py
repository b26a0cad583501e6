"""Ansible extravars for a node, from the resolved blueprint and the catalog (the contract in
playbooks/README.md).

Every variable the playbooks need comes from here: versions from the spec's software (the blueprint's
or the catalog's recommended stack), package versions from the catalog's recorded repositories
(`packages.yaml`), the fabric role, NVLink services and driver source from the machine type and image,
mounts from the storage the node attaches. A test checks the result against every role's
`meta/argument_specs.yml`, so the two sides cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from clusterfab.bootstrap import Mount
from clusterfab.catalog import Catalog
from clusterfab.catalog.models import NvlinkService, OsImage
from clusterfab.core.vocab import Cloud, Fabric
from clusterfab.scheduler import plugin
from clusterfab.spec import ClusterSpec, NodeGroup, TpuSlice

FABRIC_ROLES: dict[Fabric, str] = {
    "efa": "efa",
    "gpudirect-tcpx": "gpudirect_tcpx",
    "gpudirect-tcpxo": "gpudirect_tcpxo",
    "rdma": "rdma_gib",
    "infiniband": "infiniband",
}
"""Which fabric role of gpu_node.yml (`gpu_node_fabric`) serves each catalog fabric."""

OPEN_MODULE_ARCHITECTURES = frozenset({"hopper", "blackwell"})
"""NVIDIA's open kernel modules: required for Blackwell, recommended for Hopper."""

CONTAINER_FABRICS: frozenset[Fabric] = frozenset({"gpudirect-tcpx", "gpudirect-tcpxo"})
"""Fabrics whose plugin and receive-datapath manager run as containers (Docker with the NVIDIA runtime)."""

GBITS_PER_GBYTE = 8
"""nccl-tests reports GB/s (the catalog's unit); the health check compares Gbps."""


def _apt_version(catalog: Catalog, package: str) -> str:
    """The recorded Debian version of a package ("" when the catalog knows none to pin)."""
    record = catalog.apt_package(package)
    if record is None:
        raise LookupError(f"packages.yaml records no package {package}")
    return record.version or ""


def _upstream(catalog: Catalog, package: str) -> str:
    """The recorded upstream version of a package: "1:4.4.2-1" -> "4.4.2"."""
    record = catalog.apt_package(package)
    if record is None or record.upstream_version is None:
        raise LookupError(f"packages.yaml records no version of {package}")
    return record.upstream_version


def storage_vars(cloud: Cloud, catalog: Catalog, mounts: Sequence[Mount]) -> dict[str, Any]:
    """The storage_mounts role's inputs: the mounts, and the cloud's Lustre client repository."""
    result: dict[str, Any] = {
        "storage_mounts_list": [
            {
                "name": m.name,
                "fstype": m.fs_type,
                "source": m.source,
                "mount_point": m.mount_point,
                "options": m.options,
            }
            for m in mounts
        ]
    }
    if any(m.fs_type == "lustre" for m in mounts):
        client = catalog.lustre_clients[cloud]
        result.update(
            storage_mounts_lustre_repo_url=client.repo_url,
            storage_mounts_lustre_repo_suite=client.suite,
            storage_mounts_lustre_repo_components=list(client.components),
            storage_mounts_lustre_repo_key_url=client.key_url,
            storage_mounts_lustre_repo_key_fingerprint=client.key_fingerprint,
            storage_mounts_lustre_packages=list(client.packages),
        )
    return result


def nvlink_services(group: NodeGroup, catalog: Catalog) -> list[NvlinkService]:
    """What brings NVLink up on the group's nodes: nothing without NVSwitch, else the GPU's services."""
    machine = group.machine
    support = catalog.gpus.get(machine.accelerator.model)
    if not machine.nvswitch or support is None:
        return []
    return list(support.nvlink_services)


def booted_image(spec: ClusterSpec, group: NodeGroup, catalog: Catalog) -> OsImage | None:
    """The catalog's record of the image the group's nodes boot; None: an image the blueprint names."""
    image = catalog.default_image(spec.cloud, group.machine.cpu_architecture)
    return image if group.image == image.image else None


def driver_source(spec: ClusterSpec, group: NodeGroup, catalog: Catalog) -> str:
    """`image` when the node boots the catalog's default image and that image ships a driver (GCP's
    accelerator images), else `cuda_repository`."""
    image = booted_image(spec, group, catalog)
    return "image" if image is not None and image.driver_branch else "cuda_repository"


def _nvlink_vars(spec: ClusterSpec, group: NodeGroup, catalog: Catalog) -> dict[str, Any]:
    services = nvlink_services(group, catalog)
    result: dict[str, Any] = {"gpu_node_nvlink_services": services}
    if "fabric_manager" in services:
        # Fabric Manager must run the exact driver version.
        result["nvidia_fabricmanager_version"] = spec.software.nvidia_driver
        result["nvidia_fabricmanager_nvlsm"] = "nvlsm" in services
        if "nvlsm" in services:
            result["nvidia_fabricmanager_nvlsm_version"] = _apt_version(catalog, "nvlsm")
    if "imex" in services:
        result["nvidia_imex_version"] = spec.software.nvidia_driver
    return result


DOCA_PACKAGES: dict[str, str] = {"x86_64": "doca-ofed", "arm64": "doca-ofed-arm64"}
"""The node_packages entry of each CPU architecture's DOCA-OFED release."""


def _infiniband_vars(spec: ClusterSpec, group: NodeGroup, catalog: Catalog) -> dict[str, Any]:
    """DOCA-OFED (verified and held where the image carries it, else installed) and the machine type's
    NCCL environment; NCCL_TOPO_FILE only where the image carries the file."""
    machine = group.machine
    image = booted_image(spec, group, catalog)
    carried = image.carries if image is not None else []
    doca = DOCA_PACKAGES[machine.cpu_architecture]
    nccl = catalog.fabric_env.get(machine.name)
    result: dict[str, Any] = {
        "infiniband_doca_version": catalog.node_packages[doca].version or "",
        "infiniband_doca_preinstalled": doca in carried,
        "infiniband_nccl_topo_file": nccl.topo_file if nccl and nccl.topo_file in carried else "",
        "infiniband_nccl_env": dict(nccl.env) if nccl else {},
    }
    ifname = catalog.socket_ifnames.get(machine.name)
    if ifname is not None:
        result["infiniband_socket_ifname"] = ifname.ifname
    return result


def _fabric_vars(spec: ClusterSpec, group: NodeGroup, catalog: Catalog) -> dict[str, Any]:
    fabric, machine = group.fabric, group.machine
    result: dict[str, Any] = {}
    if fabric == "efa":
        installer = catalog.node_packages["efa-installer"]
        result["efa_installer_version"] = installer.version or ""
        if installer.checksum:  # else the role verifies AWS's GPG signature
            result["efa_installer_checksum"] = installer.checksum
        result["efa_installer_key_fingerprint"] = installer.key_fingerprint or ""
    elif fabric == "rdma":
        result["rdma_gib_socket_ifname"] = catalog.socket_ifnames[machine.name].ifname
        if machine.cpu_architecture == "arm64":
            # No arm64 nccl-gib package exists: Google ships gIB for A4X as an installer container.
            result["rdma_gib_install_method"] = "container"
            result["rdma_gib_container_image"] = catalog.node_packages["nccl-plugin-gib-arm64"].version or ""
        else:
            result["rdma_gib_install_method"] = "package"
            result["rdma_gib_version"] = _apt_version(catalog, "nccl-gib")
    elif fabric == "gpudirect-tcpxo":
        result["gpudirect_tcpxo_helper_version"] = _apt_version(catalog, "dmabuf-import-helper")
    elif fabric == "infiniband":
        result.update(_infiniband_vars(spec, group, catalog))
    return result


def _container_runtime_vars(spec: ClusterSpec, group: NodeGroup, catalog: Catalog) -> dict[str, Any]:
    docker = group.fabric in CONTAINER_FABRICS or (
        group.fabric == "rdma" and group.machine.cpu_architecture == "arm64"
    )
    # The scheduler's containers may need the NVIDIA container CLI without Docker (Slurm's pyxis does).
    scheduled = spec.scheduler is not None and plugin(spec.scheduler.kind).container_toolkit(spec)
    needed = docker or scheduled
    result: dict[str, Any] = {"gpu_node_container_runtime": needed}
    if needed:
        result.update(
            container_runtime_docker=docker,
            container_runtime_nvidia_toolkit_version=_apt_version(catalog, "nvidia-container-toolkit"),
        )
    if docker:
        result.update(
            container_runtime_docker_version=_apt_version(catalog, "docker-ce"),
            container_runtime_containerd_version=_apt_version(catalog, "containerd.io"),
        )
    return result


MPI_PACKAGES = ("libopenmpi-dev", "openmpi-bin", "libopenmpi3t64", "openmpi-common", "libpmix2t64")
"""Ubuntu's Open MPI, every package of it pinned: nccl-tests builds with it (MPI=1) and Slurm's mpi/pmix
plugin loads its libpmix.so.2, so a deep-check pair runs as one MPI world."""


def gpu_node_vars(
    spec: ClusterSpec, group: NodeGroup, catalog: Catalog, mounts: Sequence[Mount]
) -> dict[str, Any]:
    """Extravars of playbooks/gpu_node.yml for the nodes of `group`."""
    machine, software, fabric = group.machine, spec.software, group.fabric
    cuda_major = software.cuda.split(".")[0]
    tests = catalog.node_packages["nccl-tests"]
    gdrcopy = catalog.node_packages["gdrcopy"]
    source = driver_source(spec, group, catalog)
    # gdrdrv and nvidia-fs build with DKMS against the driver's module source, which the CUDA repository's
    # driver ships; an image's prebuilt driver is not known to.
    dkms_source = source == "cuda_repository"
    result: dict[str, Any] = {
        "gpu_node_fabric": FABRIC_ROLES[fabric] if fabric is not None else "none",
        "nvidia_driver_version": software.nvidia_driver,
        "nvidia_driver_open_kernel_modules": machine.accelerator.architecture in OPEN_MODULE_ARCHITECTURES,
        "nvidia_driver_source": source,
        "cuda_toolkit_version": software.cuda,
        "nccl_version": software.nccl,
        "nccl_cuda_version": catalog.nccl_package_cuda(software.nccl, software.cuda),
        "nccl_tests_version": tests.version or "",
        "nccl_tests_mpi_packages": [f"{name}={_apt_version(catalog, name)}" for name in MPI_PACKAGES],
        "dcgm_version": _upstream(catalog, "datacenter-gpu-manager-4-core"),
        "dcgm_cuda_major_version": cuda_major,
        "dcgm_exporter_version": _upstream(catalog, "datacenter-gpu-manager-exporter"),
        "dcgm_node_exporter_version": _apt_version(catalog, "prometheus-node-exporter"),
        "gdrcopy_enabled": dkms_source,
        "gdrcopy_version": gdrcopy.version or "",
        "gpudirect_storage_enabled": dkms_source,
        "gpudirect_storage_nvidia_fs_version": _apt_version(catalog, "nvidia-fs"),
        "local_scratch_enabled": group.local_scratch.enabled,
        "local_scratch_mount_point": group.local_scratch.mount_point,
        "local_scratch_device_patterns": list(catalog.local_disks[spec.cloud].patterns),
    }
    if tests.checksum:
        result["nccl_tests_checksum"] = tests.checksum
    if gdrcopy.checksum:
        result["gdrcopy_checksum"] = gdrcopy.checksum
    result.update(_nvlink_vars(spec, group, catalog))
    result.update(_container_runtime_vars(spec, group, catalog))
    result.update(_fabric_vars(spec, group, catalog))
    result.update(storage_vars(spec.cloud, catalog, mounts))
    return result


def healthcheck_vars(spec: ClusterSpec, group: NodeGroup, catalog: Catalog) -> dict[str, Any]:
    """Extravars of playbooks/healthcheck.yml: what a healthy node of `group` shows."""
    machine = group.machine
    minimum = catalog.healthcheck.per_accelerator[machine.accelerator.model]
    # A driver the image ships is held at whatever release the image carries: only the branch is known.
    image_driver = driver_source(spec, group, catalog) == "image"
    return {
        "gpu_healthcheck_expected_gpu_count": machine.accelerator.count,
        "gpu_healthcheck_min_busbw_gbps": minimum * GBITS_PER_GBYTE,
        "gpu_healthcheck_expected_driver_version": "" if image_driver else spec.software.nvidia_driver,
        **_infiniband_healthcheck_vars(group, catalog),
    }


def _infiniband_healthcheck_vars(group: NodeGroup, catalog: Catalog) -> dict[str, Any]:
    """The InfiniBand checks' expectations (fabric infiniband only; elsewhere the role skips them): the
    machine type's HCAs and port rate, and the GPUDirect loopback floor where the catalog records one."""
    ports = group.machine.infiniband_ports() if group.fabric == "infiniband" else None
    if ports is None:
        return {}
    floors = catalog.gdr_loopback
    return {
        "gpu_healthcheck_ib_expected_hcas": ports.hcas,
        "gpu_healthcheck_ib_gbps_per_port": ports.gbps_per_port,
        "gpu_healthcheck_ib_min_gdr_gbps": floors.per_machine_type.get(group.machine.name, 0.0),
        "gpu_healthcheck_ib_gdr_message_size": floors.message_size_bytes,
    }


def node_exporter_vars(spec: ClusterSpec, catalog: Catalog) -> dict[str, Any]:
    """A host that is no GPU node runs the GPU nodes' node exporter (the dcgm role's `node_exporter`
    tasks) where the cluster is monitored, for the monitoring host's Prometheus: a login node, a TPU host."""
    if spec.monitoring is None:
        return {"clusterfab_monitoring_enabled": False}
    return {
        "clusterfab_monitoring_enabled": True,
        "dcgm_node_exporter_version": _apt_version(catalog, "prometheus-node-exporter"),
        "dcgm_node_exporter_port": catalog.monitoring.exporters.node_exporter_port,
    }


def tpu_host_vars(
    spec: ClusterSpec, tpu: TpuSlice, catalog: Catalog, mounts: Sequence[Mount]
) -> dict[str, Any]:
    """Extravars of playbooks/tpu_host.yml for the hosts of a TPU slice: tuning, storage, and the node
    exporter where the cluster is monitored."""
    del tpu  # every slice of a blueprint gets the same host setup today
    return storage_vars(spec.cloud, catalog, mounts) | node_exporter_vars(spec, catalog)
