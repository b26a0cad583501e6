"""The infiniband role's inputs for Azure's ND sizes: DOCA-OFED verified on the image that carries it, and
the NCCL environment of Azure's own NCCL configurations (expected values written out from the vendor's
files: azhpc-images versions.json and topology/, ai-infrastructure-on-azure's hopper.conf and
graceblackwell.conf)."""

from __future__ import annotations

from typing import Any

from clusterfab.catalog import load_catalog
from clusterfab.provision.extravars import gpu_node_vars
from clusterfab.spec import ClusterSpec
from tests.factories import example_spec
from tests.factories import spec as spec_of

CATALOG = load_catalog()

# hopper.conf less SHARP, the MPI launcher's UCX and hcoll settings and NCCL_DEBUG; NCCL_P2P_NET_CHUNKSIZE
# is its $((2 * 1024 * 1024)).
NDV5_ENV = {
    "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
    "NCCL_IB_PCI_RELAXED_ORDERING": "1",
    "NCCL_IB_QPS_PER_CONNECTION": "4",
    "NCCL_IGNORE_CPU_AFFINITY": "1",
    "NCCL_MIN_NCHANNELS": "32",
    "NCCL_P2P_NET_CHUNKSIZE": "2097152",
    "NCCL_PXN_DISABLE": "1",
}
# graceblackwell.conf less the SHARP plugin's LD_LIBRARY_PATH, UCX, NCCL_DEBUG and MELLANOX_VISIBLE_DEVICES.
NDV6_ENV = {
    "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
    "NCCL_DMABUF_ENABLE": "1",
    "NCCL_IB_DISABLE": "0",
    "NCCL_IB_QPS_PER_CONNECTION": "4",
    "NCCL_IB_SL": "1",
    "NCCL_IGNORE_CPU_AFFINITY": "1",
    "NCCL_MNNVL_ENABLE": "1",
    "NCCL_NET_GDR_C2C": "1",
    "NCCL_NET_GDR_LEVEL": "PHB",
    "NCCL_NVLS_ENABLE": "1",
    "NCCL_P2P_DISABLE": "0",
    "NCCL_P2P_NET_CHUNKSIZE": "2097152",
    "NCCL_SHM_DISABLE": "1",
}


def _infiniband(spec: ClusterSpec) -> dict[str, Any]:
    variables = gpu_node_vars(spec, spec.node_groups[0], CATALOG, [])
    return {k: v for k, v in variables.items() if k.startswith("infiniband_")}


def test_the_azure_example_verifies_the_images_doca_and_gets_azures_ndv5_nccl_environment() -> None:
    for env in (None, "dev", "prod"):
        spec = example_spec("azure-ndv5-ib", env)
        variables = gpu_node_vars(spec, spec.node_groups[0], CATALOG, [])
        assert variables["gpu_node_fabric"] == "infiniband"
        assert variables["nvidia_driver_source"] == "image"
        assert _infiniband(spec) == {
            # versions.json doca ubuntu24.04 x86_64 at 8e9d055f: 3.2.3, installed through doca-host.
            "infiniband_doca_version": "3.2.3",
            "infiniband_doca_preinstalled": True,
            # The image copies topology/ndv5-topo.xml to /opt/microsoft; hopper.conf names that path.
            "infiniband_nccl_topo_file": "/opt/microsoft/ndv5-topo.xml",
            "infiniband_nccl_env": NDV5_ENV,
            "infiniband_socket_ifname": "eth0",
        }, env


def test_h200_gets_the_same_ndv5_environment() -> None:
    group = {"name": "trainers", "machine_type": "Standard_ND96isr_H200_v5", "count": 4}
    assert _infiniband(spec_of("azure", node_groups=[group])) == {
        "infiniband_doca_version": "3.2.3",
        "infiniband_doca_preinstalled": True,
        "infiniband_nccl_topo_file": "/opt/microsoft/ndv5-topo.xml",
        "infiniband_nccl_env": NDV5_ENV,
        "infiniband_socket_ifname": "eth0",
    }


def test_an_image_of_the_blueprints_own_installs_doca_and_names_no_topology_file() -> None:
    group = {
        "name": "trainers",
        "machine_type": "Standard_ND96isr_H100_v5",
        "count": 4,
        "image": "Canonical:ubuntu-24_04-lts:server:latest",
    }
    spec = spec_of("azure", node_groups=[group])
    assert _infiniband(spec) == {
        "infiniband_doca_version": "3.2.3",
        "infiniband_doca_preinstalled": False,
        "infiniband_nccl_topo_file": "",
        "infiniband_nccl_env": NDV5_ENV,
        "infiniband_socket_ifname": "eth0",
    }
    assert gpu_node_vars(spec, spec.node_groups[0], CATALOG, [])["nvidia_driver_source"] == "cuda_repository"


def test_grace_blackwell_gets_the_arm64_doca_release_and_azures_ndv6_environment() -> None:
    for machine_type in ("Standard_ND128isr_NDR_GB200_v6", "Standard_ND128isr_GB300_v6"):
        group = {"name": "racks", "machine_type": machine_type, "count": 18}
        assert _infiniband(spec_of("azure", node_groups=[group])) == {
            # versions.json doca ubuntu24.04 aarch64: 3.2.2; the arm64 image's release is not pinned, so
            # nothing says it carries DOCA-OFED.
            "infiniband_doca_version": "3.2.2",
            "infiniband_doca_preinstalled": False,
            "infiniband_nccl_topo_file": "",
            "infiniband_nccl_env": NDV6_ENV,
            "infiniband_socket_ifname": "eth0",
        }, machine_type


def test_every_infiniband_machine_type_has_its_nccl_environment_and_socket() -> None:
    infiniband = sorted(name for name, m in CATALOG.azure.machine_types.items() if m.fabric == "infiniband")
    assert infiniband == [
        "Standard_ND128isr_GB300_v6",
        "Standard_ND128isr_NDR_GB200_v6",
        "Standard_ND96isr_H100_v5",
        "Standard_ND96isr_H200_v5",
    ]
    assert all(name in CATALOG.fabric_env and name in CATALOG.socket_ifnames for name in infiniband)


def test_what_an_image_carries_is_a_node_package_or_a_file() -> None:
    for image in CATALOG.images:
        for item in image.carries:
            assert item.startswith("/") or item in CATALOG.node_packages, (image.image, item)
    records = [*CATALOG.fabric_env.values(), *CATALOG.socket_ifnames.values()]
    assert all(record.source and set(record.source) <= set(CATALOG.sources) for record in records)
