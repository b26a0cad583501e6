"""Ansible extravars for a node, from the resolved blueprint and the catalog (the contract in
playbooks/README.md).

Every variable the playbooks need comes from here: versions from the spec's software (the blueprint's
or the catalog's recommended stack), the fabric role and NVSwitch from the machine type, node-software
versions from the catalog, mounts from the storage the node attaches. A test checks the result
against every role's `meta/argument_specs.yml`, so the two sides cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from clusterfab.bootstrap import Mount
from clusterfab.catalog import Catalog
from clusterfab.core.vocab import Cloud, Fabric
from clusterfab.spec import ClusterSpec, NodeGroup, TpuSlice

FABRIC_ROLES: dict[Fabric, str] = {
    "efa": "efa",
    "gpudirect-tcpx": "gpudirect_tcpx",
    "gpudirect-tcpxo": "gpudirect_tcpxo",
    "rdma": "rdma_gib",
}
"""Which fabric role of gpu_node.yml (`gpu_node_fabric`) serves each catalog fabric."""

OPEN_MODULE_ARCHITECTURES = frozenset({"hopper", "blackwell"})
"""NVIDIA's open kernel modules: required for Blackwell, recommended for Hopper."""

GBITS_PER_GBYTE = 8
"""nccl-tests reports GB/s (the catalog's unit); the health check compares Gbps."""


def _version(catalog: Catalog, package: str) -> str:
    """A node package's pinned version; "" when none is known (the role installs and holds one)."""
    return catalog.node_packages[package].version or ""


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
            storage_mounts_lustre_packages=list(client.packages),
        )
    return result


def gpu_node_vars(
    spec: ClusterSpec, group: NodeGroup, catalog: Catalog, mounts: Sequence[Mount]
) -> dict[str, Any]:
    """Extravars of playbooks/gpu_node.yml for the nodes of `group`."""
    machine, software, fabric = group.machine, spec.software, group.fabric
    cuda_major, cuda_minor = software.cuda.split(".")[:2]
    result: dict[str, Any] = {
        "gpu_node_fabric": FABRIC_ROLES[fabric] if fabric is not None else "none",
        "gpu_node_nvswitch": machine.nvswitch,
        "nvidia_driver_version": software.nvidia_driver,
        "nvidia_driver_open_kernel_modules": machine.accelerator.architecture in OPEN_MODULE_ARCHITECTURES,
        "cuda_toolkit_version": software.cuda,
        "nccl_version": software.nccl,
        "nccl_cuda_version": f"{cuda_major}.{cuda_minor}",
        "dcgm_version": _version(catalog, "dcgm"),
        "dcgm_cuda_major_version": cuda_major,
        "dcgm_exporter_version": _version(catalog, "dcgm-exporter"),
    }
    if machine.nvswitch:
        # Fabric Manager must run the exact driver version.
        result["nvidia_fabricmanager_version"] = software.nvidia_driver
    tests = catalog.node_packages["nccl-tests"]
    result["nccl_tests_version"] = tests.version or ""
    if tests.checksum:
        result["nccl_tests_checksum"] = tests.checksum
    if fabric == "efa":
        installer = catalog.node_packages["efa-installer"]
        result["efa_installer_version"] = installer.version or ""
        if installer.checksum:  # else the role verifies AWS's GPG signature
            result["efa_installer_checksum"] = installer.checksum
    elif fabric == "rdma":
        result["rdma_gib_version"] = _version(catalog, "nccl-gib")
    elif fabric == "gpudirect-tcpxo":
        result["gpudirect_tcpxo_helper_version"] = _version(catalog, "dmabuf-import-helper")
    result.update(storage_vars(spec.cloud, catalog, mounts))
    return result


def healthcheck_vars(spec: ClusterSpec, group: NodeGroup, catalog: Catalog) -> dict[str, Any]:
    """Extravars of playbooks/healthcheck.yml: what a healthy node of `group` shows."""
    machine = group.machine
    minimum = catalog.healthcheck.per_accelerator[machine.accelerator.model]
    return {
        "gpu_healthcheck_expected_gpu_count": machine.accelerator.count,
        "gpu_healthcheck_min_busbw_gbps": minimum * GBITS_PER_GBYTE,
        "gpu_healthcheck_expected_driver_version": spec.software.nvidia_driver,
    }


def tpu_host_vars(
    spec: ClusterSpec, tpu: TpuSlice, catalog: Catalog, mounts: Sequence[Mount]
) -> dict[str, Any]:
    """Extravars of playbooks/tpu_host.yml for the hosts of a TPU slice (tuning and storage only)."""
    del tpu  # every slice of a blueprint gets the same host setup today
    return storage_vars(spec.cloud, catalog, mounts)
