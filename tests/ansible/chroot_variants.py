"""Extra vars for the node variants the chroot tests run, pointed at the local stand-ins.

They have the shape the Python side generates from a blueprint and the catalog; only the package
sources differ from production (file: repositories and tarballs under /srv/clusterfab-standins).
"""

from __future__ import annotations

from typing import Any

from chroot_standins import (
    CUDA,
    DCGM,
    DCGM_EXPORTER,
    DOCA,
    DRIVER,
    EFA_INSTALLER,
    EFA_INSTALLER_NEWER,
    GIB,
    MOUNT,
    NCCL,
    NCCL_CUDA,
    NCCL_TESTS,
    NODE_EXPORTER,
    TCPXO_HELPER,
    Standins,
)

KEY_URL = f"file://{MOUNT}/keys/standin.asc"


def _common(standins: Standins) -> dict[str, Any]:
    return {
        "nvidia_driver_version": DRIVER,
        "nvidia_driver_open_kernel_modules": True,
        # No headers for the build machine's kernel exist in the Debian archive.
        "nvidia_driver_install_kernel_headers": False,
        "nvidia_driver_cuda_repo_url": f"file:{MOUNT}/cuda/",
        "nvidia_driver_cuda_repo_key_url": KEY_URL,
        "nvidia_fabricmanager_version": DRIVER,
        "cuda_toolkit_version": CUDA,
        "nccl_version": NCCL,
        "nccl_cuda_version": NCCL_CUDA,
        "dcgm_version": DCGM,
        "dcgm_cuda_major_version": NCCL_CUDA.split(".")[0],
        "dcgm_exporter_version": DCGM_EXPORTER,
        "dcgm_node_exporter_version": NODE_EXPORTER,
        "dcgm_node_exporter_url": f"file://{MOUNT}/{standins.node_exporter_tarball}",
        "dcgm_node_exporter_checksum": f"sha256:{standins.node_exporter_sha256}",
        "nccl_tests_version": NCCL_TESTS,
        # Templated like the role default, so a test bumps the version and checksum only.
        "nccl_tests_url": f"file://{MOUNT}/nccl-tests/v{{{{ nccl_tests_version }}}}.tar.gz",
        "nccl_tests_checksum": f"sha256:{standins.nccl_tests_sha256[NCCL_TESTS]}",
        # The stand-in Makefile compiles nothing; g++ would be a 60 MB download for every run.
        "nccl_tests_build_packages": ["make"],
    }


def efa_p5(standins: Standins) -> dict[str, Any]:
    """AWS p5.48xlarge: H100 with NVSwitch, open kernel modules, EFA, two FSx for Lustre file systems."""
    return {
        **_common(standins),
        "gpu_node_fabric": "efa",
        "gpu_node_nvswitch": True,
        "efa_installer_version": EFA_INSTALLER,
        "efa_installer_url": f"file://{MOUNT}/{standins.efa_tarball}",
        "efa_installer_checksum": f"sha256:{standins.efa_tarball_sha256}",
        "storage_mounts_list": [
            {
                "name": "scratch",
                "fstype": "lustre",
                "source": "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com@tcp:/abcdefgh",
                "mount_point": "/fsx",
            },
            {
                "name": "datasets",
                "fstype": "lustre",
                "source": "fs-0fedcba9876543210.fsx.us-east-1.amazonaws.com@tcp:/ijklmnop",
                "mount_point": "/datasets",
            },
        ],
        "storage_mounts_lustre_repo_url": f"file:{MOUNT}/lustre",
        "storage_mounts_lustre_repo_key_url": KEY_URL,
    }


def efa_signature_upgrade(standins: Standins) -> dict[str, Any]:
    """An EFA installer upgrade as clusterfab renders it: no checksum, so the GPG signature is verified."""
    return {
        "efa_installer_version": EFA_INSTALLER_NEWER,
        "efa_installer_url": f"file://{MOUNT}/efa/aws-efa-installer-{{{{ efa_installer_version }}}}.tar.gz",
        "efa_installer_checksum": "",
        "efa_installer_key_url": KEY_URL,
        "efa_installer_key_fingerprint": standins.key_fingerprint,
    }


def gib_a3_ultra(standins: Standins) -> dict[str, Any]:
    """GCP a3-ultragpu-8g: H200 with NVSwitch, RoCE through gIB, Filestore over NFS."""
    return {
        **_common(standins),
        "gpu_node_fabric": "rdma_gib",
        "gpu_node_nvswitch": True,
        "rdma_gib_version": GIB,
        "rdma_gib_repo_url": f"file:{MOUNT}/gib",
        "rdma_gib_repo_key_url": KEY_URL,
        "storage_mounts_list": [
            {
                "name": "home",
                "fstype": "nfs",
                "source": "10.20.0.2:/home_share",
                "mount_point": "/mnt/filestore-home",
                "options": "hard,_netdev,nconnect=8",
            }
        ],
    }


def tcpxo_a3_mega(standins: Standins) -> dict[str, Any]:
    """GCP a3-megagpu-8g: GPUDirect-TCPXO."""
    return {
        **_common(standins),
        "gpu_node_fabric": "gpudirect_tcpxo",
        "gpu_node_nvswitch": True,
        "gpudirect_tcpxo_helper_version": TCPXO_HELPER,
        "gpudirect_tcpxo_repo_url": f"file:{MOUNT}/tcpxo",
        "gpudirect_tcpxo_repo_key_url": KEY_URL,
    }


def tcpx_a3_high(standins: Standins) -> dict[str, Any]:
    """GCP a3-highgpu-8g: GPUDirect-TCPX."""
    return {**_common(standins), "gpu_node_fabric": "gpudirect_tcpx", "gpu_node_nvswitch": True}


def infiniband_nd_h100(standins: Standins) -> dict[str, Any]:
    """Azure ND H100 v5: InfiniBand through DOCA-OFED."""
    return {
        **_common(standins),
        "gpu_node_fabric": "infiniband",
        "gpu_node_nvswitch": True,
        "infiniband_doca_version": DOCA,
        "infiniband_repo_url": f"file:{MOUNT}/doca/",
        "infiniband_repo_key_url": KEY_URL,
    }


VARIANTS = {"efa_p5": efa_p5, "gib_a3_ultra": gib_a3_ultra}
# Variants whose fabric role alone is exercised (run with the role's tag).
FABRIC_ONLY_VARIANTS = {
    "gpudirect_tcpxo": tcpxo_a3_mega,
    "gpudirect_tcpx": tcpx_a3_high,
    "infiniband": infiniband_nd_h100,
}
