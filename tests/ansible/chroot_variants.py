"""Extra vars for the node variants the chroot tests run: what clusterfab renders for an example node
group (`gpu_node_vars` over the catalog), with only the package sources pointed at the local stand-ins
and a few allowances for the build machine.

Versions, package names, the driver's source, NVLink services and fabric settings are therefore the
catalog's, exactly as a node gets them; the stand-in repositories hold only what the catalog records.
"""

from __future__ import annotations

from typing import Any

from chroot_standins import DOCA, EFA_INSTALLER_NEWER, GDRCOPY, MOUNT, NCCL_TESTS, Standins

from clusterfab.bootstrap import Mount
from clusterfab.catalog import load_catalog
from clusterfab.provision.extravars import gpu_node_vars
from clusterfab.spec import ClusterSpec
from tests.factories import example_spec
from tests.factories import spec as spec_of

CATALOG = load_catalog()
KEY_URL = f"file://{MOUNT}/keys/standin.asc"

FSX_MOUNTS = [
    Mount(
        "scratch",
        "lustre",
        "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com@tcp:/abcdefgh",
        "/fsx",
        "noatime,flock,_netdev",
    ),
    Mount(
        "datasets",
        "lustre",
        "fs-0fedcba9876543210.fsx.us-east-1.amazonaws.com@tcp:/ijklmnop",
        "/datasets",
        "noatime,flock,_netdev",
    ),
]
FILESTORE_MOUNTS = [
    Mount("home", "nfs", "10.20.0.2:/home_share", "/mnt/filestore-home", "hard,_netdev,nconnect=8")
]


def nccl_tests_url(version: str) -> str:
    """The stand-in tarball of an nccl-tests release. Spelt out, not templated on nccl_tests_version as
    the role's default is: extra variables are data that Ansible never templates."""
    return f"file://{MOUNT}/nccl-tests/v{version}.tar.gz"


def _sources(standins: Standins) -> dict[str, Any]:
    """Every package source a role reads, redirected to the stand-ins (a mirror would do the same), with
    the stand-ins' signing key as the pinned one."""
    return {
        "nvidia_driver_cuda_repo_url": f"file:{MOUNT}/cuda/",
        "nvidia_driver_cuda_repo_key_url": KEY_URL,
        "nvidia_driver_cuda_repo_key_fingerprint": standins.key_fingerprint,
        "storage_mounts_lustre_repo_url": f"file:{MOUNT}/lustre",
        "storage_mounts_lustre_repo_key_url": KEY_URL,
        "storage_mounts_lustre_repo_key_fingerprint": standins.key_fingerprint,
        "rdma_gib_repo_url": f"file:{MOUNT}/gib",
        "rdma_gib_repo_key_url": KEY_URL,
        "rdma_gib_repo_key_fingerprint": standins.key_fingerprint,
        "gpudirect_tcpxo_repo_url": f"file:{MOUNT}/tcpxo",
        "gpudirect_tcpxo_repo_key_url": KEY_URL,
        "gpudirect_tcpxo_repo_key_fingerprint": standins.key_fingerprint,
        # The recorded Docker repository is Ubuntu 24.04's (suite noble).
        "container_runtime_docker_repo_url": f"file:{MOUNT}/docker",
        "container_runtime_docker_repo_suite": "noble",
        "container_runtime_docker_repo_key_url": KEY_URL,
        "container_runtime_docker_repo_key_fingerprint": standins.key_fingerprint,
        "container_runtime_nvidia_repo_url": f"file:{MOUNT}/nvidia-container-toolkit",
        "container_runtime_nvidia_repo_key_url": KEY_URL,
        "container_runtime_nvidia_repo_key_fingerprint": standins.key_fingerprint,
        "nccl_tests_url": nccl_tests_url(NCCL_TESTS),
        "nccl_tests_checksum": f"sha256:{standins.nccl_tests_sha256[NCCL_TESTS]}",
        "gdrcopy_url": f"file://{MOUNT}/gdrcopy/v{GDRCOPY}.tar.gz",
        "gdrcopy_checksum": f"sha256:{standins.gdrcopy_sha256}",
    }


# The build machine's limits, not the nodes': no headers for its kernel exist in the Debian archive,
# and the stand-in tarballs compile nothing (g++ and devscripts would be ~200 MB for every run).
BUILD_MACHINE = {
    "nvidia_driver_install_kernel_headers": False,
    "nccl_tests_build_packages": ["make"],
    "gdrcopy_build_packages": [],
}


def node_vars(spec: ClusterSpec, standins: Standins, mounts: list[Mount] | None = None) -> dict[str, Any]:
    """What clusterfab renders for the spec's first node group, pointed at the stand-ins."""
    rendered = gpu_node_vars(spec, spec.node_groups[0], CATALOG, mounts or [])
    return {**rendered, **_sources(standins), **BUILD_MACHINE}


def efa_p5(standins: Standins) -> dict[str, Any]:
    """AWS p5.48xlarge (example aws-p5-efa-fsx): H100 with NVSwitch, CUDA repository driver, EFA, FSx."""
    variables = node_vars(example_spec("aws-p5-efa-fsx"), standins, FSX_MOUNTS)
    # AWS publishes no installer checksum (the role then verifies its signature, see the day-2 test);
    # the first install pins the stand-in tarball's.
    variables.update(
        efa_installer_url=f"file://{MOUNT}/{standins.efa_tarball}",
        efa_installer_checksum=f"sha256:{standins.efa_tarball_sha256}",
    )
    return variables


def efa_signature_upgrade(standins: Standins) -> dict[str, Any]:
    """An EFA installer upgrade as clusterfab renders it: no checksum, so the GPG signature is verified."""
    return {
        "efa_installer_version": EFA_INSTALLER_NEWER,
        "efa_installer_url": f"file://{MOUNT}/efa/aws-efa-installer-{EFA_INSTALLER_NEWER}.tar.gz",
        "efa_installer_checksum": "",
        "efa_installer_key_url": KEY_URL,
        "efa_installer_key_fingerprint": standins.key_fingerprint,
    }


def gib_a3_ultra(standins: Standins) -> dict[str, Any]:
    """GCP a3-ultragpu-8g (example gcp-a3ultra-roce-lustre): H200 with NVSwitch on the accelerator image's
    driver, RoCE through gIB, a Filestore share over NFS."""
    return node_vars(example_spec("gcp-a3ultra-roce-lustre"), standins, FILESTORE_MOUNTS)


def tcpxo_a3_mega(standins: Standins) -> dict[str, Any]:
    """GCP a3-megagpu-8g (example gcp-a3mega-tcpxo-filestore): GPUDirect-TCPXO."""
    return node_vars(example_spec("gcp-a3mega-tcpxo-filestore"), standins)


def tcpx_a3_high(standins: Standins) -> dict[str, Any]:
    """GCP a3-highgpu-8g: GPUDirect-TCPX."""
    group = {"name": "trainers", "machine_type": "a3-highgpu-8g", "count": 2}
    return node_vars(spec_of("gcp", node_groups=[group]), standins)


def container_cli_p5(standins: Standins) -> dict[str, Any]:
    """AWS p5.48xlarge of a `containers: pyxis` cluster (example aws-p5-slurm): the NVIDIA container CLI
    that enroot's GPU hook runs, without Docker."""
    return node_vars(example_spec("aws-p5-slurm"), standins)


def b200_p6(standins: Standins) -> dict[str, Any]:
    """AWS p6-b200.48xlarge (example aws-p6-b200-capacity-block): NVLink5, Fabric Manager with NVLSM."""
    return node_vars(example_spec("aws-p6-b200-capacity-block"), standins)


def gb200_p6e(standins: Standins) -> dict[str, Any]:
    """AWS p6e-gb200.36xlarge: a GB200 NVL72 tray, IMEX instead of Fabric Manager."""
    group = {
        "name": "trays",
        "machine_type": "p6e-gb200.36xlarge",
        "count": 18,
        "capacity": {"kind": "capacity_block", "reservation": "cr-0123456789abcdef0"},
    }
    return node_vars(spec_of("aws", node_groups=[group]), standins)


def infiniband_nd_h100(standins: Standins) -> dict[str, Any]:
    """Azure ND H100 v5: InfiniBand through DOCA-OFED (no catalog machine type: the role alone)."""
    return {
        "gpu_node_fabric": "infiniband",
        "gpu_node_nvlink_services": [],
        "gpu_node_container_runtime": False,
        "infiniband_doca_version": DOCA,
        "infiniband_repo_url": f"file:{MOUNT}/doca/",
        "infiniband_repo_key_url": KEY_URL,
    }


def infiniband_azure_ndv5(standins: Standins) -> dict[str, Any]:
    """Azure ND H100 v5 (example azure-ndv5-ib) on Azure's Ubuntu-HPC image: the DOCA-OFED it carries is
    verified and held, and the NCCL environment is Azure's."""
    return node_vars(example_spec("azure-ndv5-ib"), standins)


VARIANTS = {"efa_p5": efa_p5, "gib_a3_ultra": gib_a3_ultra}
# Variants whose fabric role (with the container runtime it needs) is exercised alone, by tags.
FABRIC_ONLY_VARIANTS = {
    "gpudirect_tcpxo": tcpxo_a3_mega,
    "gpudirect_tcpx": tcpx_a3_high,
    "infiniband": infiniband_nd_h100,
    "infiniband_azure": infiniband_azure_ndv5,
    "container_cli": container_cli_p5,
}
