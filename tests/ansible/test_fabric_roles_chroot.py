"""The fabric roles the two full variants do not cover, each run alone (by its tag, with the container
runtime the TCPX/TCPXO plugins run in) into its own copy of the golden root file system, twice, with the
extravars clusterfab renders for the machine type.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import chroot_standins as standins
import chroot_variants as variants
import pytest
from chroot_runs import TIMINGS, run_in_chroot

from clusterfab.provision.runner import PlaybookEvent, PlaybookResult

pytestmark = pytest.mark.ansible

MANAGED = "#\n# Managed by clusterfab (Ansible). Local changes are overwritten on the next run.\n#\n"


@dataclass
class FabricRun:
    role: str
    rootfs: Path
    first: PlaybookResult
    second: PlaybookResult
    first_events: list[PlaybookEvent]

    def path(self, inside: str) -> Path:
        return self.rootfs / inside.lstrip("/")

    def output(self, *argv: str) -> str:
        return subprocess.run(
            ["chroot", str(self.rootfs), *argv], capture_output=True, text=True, check=True
        ).stdout


# The roles each fabric's node runs: the fabric role, with Docker and the NVIDIA runtime where the
# fabric's plugins are containers.
FABRIC_TAGS = {
    "gpudirect_tcpxo": ["container_runtime", "gpudirect_tcpxo"],
    "gpudirect_tcpx": ["container_runtime", "gpudirect_tcpx"],
    "infiniband": ["infiniband"],
    # The same role on Azure's Ubuntu-HPC image, which carries DOCA-OFED.
    "infiniband_azure": ["infiniband"],
    # A pyxis node without a container fabric: the container runtime role in its CLI-only mode.
    "container_cli": ["container_runtime"],
}


def apply_fabric_role(role: str, rootfs: Path, built: standins.Standins, **overrides: object) -> FabricRun:
    extravars = {**variants.FABRIC_ONLY_VARIANTS[role](built), **overrides}
    events: list[PlaybookEvent] = []
    tags = FABRIC_TAGS[role]
    first = run_in_chroot("gpu_node.yml", rootfs, extravars, tags=tags, on_event=events.append)
    assert first.succeeded, first.failed_tasks
    second = run_in_chroot("gpu_node.yml", rootfs, extravars, tags=tags)
    TIMINGS[f"{role}_only_first_run_s"] = round(first.duration_s, 1)
    TIMINGS[f"{role}_only_second_run_s"] = round(second.duration_s, 1)
    return FabricRun(role, rootfs, first, second, events)


@pytest.fixture(scope="module")
def tcpxo_node(fresh_rootfs: Callable[[str], Path], built_standins: standins.Standins) -> FabricRun:
    return apply_fabric_role("gpudirect_tcpxo", fresh_rootfs("tcpxo"), built_standins)


@pytest.fixture(scope="module")
def tcpx_without_docker(
    fresh_rootfs: Callable[[str], Path], built_standins: standins.Standins
) -> tuple[Path, PlaybookResult]:
    rootfs = fresh_rootfs("tcpx")
    extravars = variants.FABRIC_ONLY_VARIANTS["gpudirect_tcpx"](built_standins)
    return rootfs, run_in_chroot("gpu_node.yml", rootfs, extravars, tags=["gpudirect_tcpx"])


@pytest.fixture(scope="module")
def tcpx_node(
    tcpx_without_docker: tuple[Path, PlaybookResult], built_standins: standins.Standins
) -> FabricRun:
    rootfs, _ = tcpx_without_docker
    return apply_fabric_role("gpudirect_tcpx", rootfs, built_standins)


@pytest.fixture(scope="module")
def infiniband_node(fresh_rootfs: Callable[[str], Path], built_standins: standins.Standins) -> FabricRun:
    return apply_fabric_role("infiniband", fresh_rootfs("infiniband"), built_standins)


# NCCL_TOPO_FILE's target, which Azure's image copies from its recipe's topology/ (stand-in content).
AZURE_TOPO_FILE = "/opt/microsoft/ndv5-topo.xml"


def azure_hpc_image(rootfs: Path, doca: str = "azure-doca") -> Path:
    """Make ``rootfs`` look like Azure's Ubuntu-HPC image: its DOCA-OFED, the ND v5 topology file."""
    standins.preinstall(rootfs, doca)
    topo = rootfs / AZURE_TOPO_FILE.lstrip("/")
    topo.parent.mkdir(parents=True, exist_ok=True)
    topo.write_text('<system version="1"/>\n')
    return rootfs


@pytest.fixture(scope="module")
def infiniband_azure_node(
    fresh_rootfs: Callable[[str], Path], built_standins: standins.Standins
) -> FabricRun:
    rootfs = azure_hpc_image(fresh_rootfs("infiniband-azure"))
    return apply_fabric_role("infiniband_azure", rootfs, built_standins)


@pytest.fixture(scope="module")
def container_cli_node(fresh_rootfs: Callable[[str], Path], built_standins: standins.Standins) -> FabricRun:
    return apply_fabric_role("container_cli", fresh_rootfs("container-cli"), built_standins)


@pytest.fixture(
    params=["tcpxo_node", "tcpx_node", "infiniband_node", "infiniband_azure_node", "container_cli_node"]
)
def fabric_node(request: pytest.FixtureRequest) -> FabricRun:
    run: FabricRun = request.getfixturevalue(request.param)
    return run


def test_second_run_changes_nothing(fabric_node: FabricRun) -> None:
    assert fabric_node.first.hosts["node"].changed > 0
    assert fabric_node.second.succeeded, fabric_node.second.failed_tasks
    assert fabric_node.second.hosts["node"].changed == 0


def test_only_the_tagged_role_ran(fabric_node: FabricRun) -> None:
    roles = {event.role for event in fabric_node.first_events if event.kind == "runner_on_ok" and event.role}
    assert roles == set(FABRIC_TAGS[fabric_node.role])


def test_tcpxo_helper_source_is_unpacked_patched_and_loaded_at_boot(tcpxo_node: FabricRun) -> None:
    source = f"/usr/src/dmabuf-import-helper-{standins.TCPXO_HELPER_UPSTREAM}"
    # The Cluster Toolkit's patch for kernels >= 6.13: the namespace is a string literal there.
    patched = standins.IMPORT_HELPER_C.replace("MODULE_IMPORT_NS(DMA_BUF);", 'MODULE_IMPORT_NS("DMA_BUF");')
    assert tcpxo_node.path(f"{source}/import-helper.c").read_text() == patched
    # Unpacked, not installed (its own DKMS build fails on those kernels); DKMS builds it on the live node.
    listing = tcpxo_node.output("dpkg-query", "-W", "-f", "${Package}\n")
    assert "dmabuf-import-helper" not in listing.split()
    deb = f"dmabuf-import-helper_{standins.TCPXO_HELPER_DEB}_all.deb"
    assert tcpxo_node.path(f"/var/cache/clusterfab/dmabuf-import-helper/{deb}").is_file()
    dkms_tasks = {"Add the helper to DKMS", "Build and install the helper module for the running kernel"}
    dkms = {
        event.task: event.kind
        for event in tcpxo_node.first_events
        if event.task in dkms_tasks and event.kind in ("runner_on_ok", "runner_on_skipped")
    }
    assert dkms == dict.fromkeys(dkms_tasks, "runner_on_skipped")
    assert tcpxo_node.output("dpkg-query", "-W", "-f", "${Status}", "dkms") == "install ok installed"
    assert tcpxo_node.path("/etc/modules-load.d/clusterfab-tcpxo.conf").read_text() == "import-helper\n"
    sources = tcpxo_node.path("/etc/apt/sources.list.d/clusterfab-gpudirect-tcpxo.sources").read_text()
    assert "Suites: gpudirect-tcpxo-apt\nComponents: main\nArchitectures: all\n" in sources
    # A file: repository needs no Artifact Registry transport.
    assert not tcpxo_node.path(
        "/etc/apt/sources.list.d/clusterfab-artifact-registry-transport.sources"
    ).exists()


@pytest.mark.parametrize("fixture", ["tcpxo_node", "tcpx_node"])
def test_docker_and_the_nvidia_runtime_are_pinned_held_and_enabled(
    fixture: str, request: pytest.FixtureRequest
) -> None:
    node: FabricRun = request.getfixturevalue(fixture)
    packages = {
        "docker-ce": standins.DOCKER_DEB,
        "docker-ce-cli": standins.DOCKER_DEB,
        "containerd.io": "1.7.28-1~ubuntu.24.04~noble",
        "nvidia-container-toolkit": "1.19.1-1",
        "nvidia-container-toolkit-base": "1.19.1-1",
        "libnvidia-container-tools": "1.19.1-1",
        "libnvidia-container1": "1.19.1-1",
    }
    listing = node.output("dpkg-query", "-W", "-f", "${Package} ${Version}\n", *packages)
    assert dict(line.split(" ", 1) for line in listing.splitlines()) == packages
    assert set(packages) <= set(node.output("apt-mark", "showhold").split())
    assert json.loads(node.path("/etc/docker/daemon.json").read_text()) == {
        "runtimes": {"nvidia": {"args": [], "path": "nvidia-container-runtime"}}
    }
    link = node.path("/etc/systemd/system/multi-user.target.wants/docker.service")
    assert str(link.readlink()) == "/lib/systemd/system/docker.service"


def test_dockers_recorded_conflicts_hold_in_the_stand_in_repository(tcpx_node: FabricRun) -> None:
    # docker-ce conflicts with the distribution's docker.io, as Docker's packaging declares.
    completed = subprocess.run(
        ["chroot", str(tcpx_node.rootfs), "apt-get", "install", "--simulate", "--yes", "docker.io"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode != 0
    assert "docker-ce : Conflicts: docker.io" in completed.stdout + completed.stderr


def test_tcpxo_units_run_the_paired_images(tcpxo_node: FabricRun) -> None:
    wants = tcpxo_node.path("/etc/systemd/system/multi-user.target.wants")
    for unit in (
        "clusterfab-tcpxo-aperture.service",
        "clusterfab-tcpxo-nccl-plugin.service",
        "clusterfab-tcpxo-rxdm.service",
    ):
        assert str((wants / unit).readlink()) == f"/etc/systemd/system/{unit}"
    plugin = tcpxo_node.path("/etc/systemd/system/clusterfab-tcpxo-nccl-plugin.service").read_text()
    assert (
        "ExecStart=/usr/bin/docker run --rm --name clusterfab-tcpxo-nccl-installer --network=host "
        "--volume /var/lib:/var/lib "
        "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:v1.0.15 "
        "install --install-nccl\n"
    ) in plugin
    rxdm = tcpxo_node.path("/etc/systemd/system/clusterfab-tcpxo-rxdm.service").read_text()
    assert (
        "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.21 --num_hops=2 --num_nics=8"
        in rxdm
    )
    started = {
        event.task: event.kind
        for event in tcpxo_node.first_events
        if event.task == "Start the TCPXO units" and event.kind not in ("runner_on_start",)
    }
    assert started == {"Start the TCPXO units": "runner_on_skipped"}


def test_tcpxo_profile(tcpxo_node: FabricRun) -> None:
    assert tcpxo_node.path("/etc/profile.d/nccl-fabric.sh").read_text() == MANAGED + (
        "# NCCL over GPUDirect-TCPXO (FasTrak). The plugin installer writes nccl-env-profile.sh"
        " with the tuned\n"
        "# values for its release; it is sourced first and the interface selection follows.\n"
        "if [ -r /var/lib/tcpxo/lib64/nccl-env-profile.sh ]; then\n"
        "  . /var/lib/tcpxo/lib64/nccl-env-profile.sh\n"
        "fi\n"
        "export NCCL_FASTRAK_CTRL_DEV=enp0s12\n"
        "export NCCL_FASTRAK_IFNAME=enp6s0,enp7s0,enp13s0,enp14s0,enp134s0,enp135s0,enp141s0,enp142s0\n"
        "export NCCL_SOCKET_IFNAME=enp0s12\n"
        "export NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY=/dev/aperture_devices\n"
        'export LD_LIBRARY_PATH="/var/lib/tcpxo/lib64${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}"\n'
    )


def test_tcpx_refuses_an_image_without_a_container_cli(
    tcpx_without_docker: tuple[Path, PlaybookResult],
) -> None:
    _, result = tcpx_without_docker
    [failure] = result.failed_tasks
    assert failure.task == "Assert the container CLI is installed"
    assert failure.message.startswith(
        "The TCPX plugin installer and RxDM run as containers, but /usr/bin/docker does not exist. "
        "Run the container_runtime role first"
    )
    assert result.hosts["node"].changed == 0


def test_tcpx_profile_and_units(tcpx_node: FabricRun) -> None:
    assert tcpx_node.path("/etc/profile.d/nccl-fabric.sh").read_text() == MANAGED + (
        "# NCCL over GPUDirect-TCPX (A3 High); values from Google's Cluster Toolkit A3 High configuration.\n"
        "export NCCL_NET=GPUDirectTCPX_v7\n"
        "export NCCL_SOCKET_IFNAME=enp0s12\n"
        "export NCCL_GPUDIRECTTCPX_CTRL_DEV=enp0s12\n"
        "export NCCL_GPUDIRECTTCPX_SOCKET_IFNAME=enp6s0,enp12s0,enp134s0,enp140s0\n"
        "export NCCL_CROSS_NIC=0\n"
        "export NCCL_ALGO=Ring\n"
        "export NCCL_PROTO=Simple\n"
        "export NCCL_NSOCKS_PERTHREAD=4\n"
        "export NCCL_SOCKET_NTHREADS=1\n"
        "export NCCL_DYNAMIC_CHUNK_SIZE=524288\n"
        "export NCCL_P2P_NET_CHUNKSIZE=524288\n"
        "export NCCL_P2P_PCI_CHUNKSIZE=524288\n"
        "export NCCL_P2P_NVL_CHUNKSIZE=1048576\n"
        "export NCCL_BUFFSIZE=4194304\n"
        "export NCCL_NET_GDR_LEVEL=PIX\n"
        "export NCCL_P2P_PXN_LEVEL=0\n"
        "export NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX=/run/tcpx\n"
        "export NCCL_GPUDIRECTTCPX_PROGRAM_FLOW_STEERING_WAIT_MICROS=500000\n"
        # The Cluster Toolkit's a3-highgpu-8g bindings: each NIC's cores on its own NUMA node.
        "export NCCL_GPUDIRECTTCPX_TX_BINDINGS='enp6s0:8-21,112-125;enp12s0:8-21,112-125;"
        "enp134s0:60-73,164-177;enp140s0:60-73,164-177'\n"
        "export NCCL_GPUDIRECTTCPX_RX_BINDINGS='enp6s0:22-35,126-139;enp12s0:22-35,126-139;"
        "enp134s0:74-87,178-191;enp140s0:74-87,178-191'\n"
        'export LD_LIBRARY_PATH="/var/lib/tcpx/lib64${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}"\n'
    )
    wants = tcpx_node.path("/etc/systemd/system/multi-user.target.wants")
    assert sorted(path.name for path in wants.glob("clusterfab-tcpx-*")) == [
        "clusterfab-tcpx-nccl-plugin.service",
        "clusterfab-tcpx-rxdm.service",
    ]


def test_infiniband_stack(infiniband_node: FabricRun) -> None:
    version = infiniband_node.output("dpkg-query", "-W", "-f", "${Version}", "doca-ofed")
    assert version == f"{standins.DOCA_OFED}-1"
    assert infiniband_node.output("apt-mark", "showhold").split() == ["doca-ofed"]
    assert infiniband_node.path("/etc/modules-load.d/clusterfab-infiniband.conf").read_text() == (
        MANAGED + "ib_umad\nrdma_ucm\nib_ipoib\nnvidia-peermem\n"
    )
    assert infiniband_node.path("/etc/profile.d/nccl-fabric.sh").read_text() == MANAGED + (
        "# NCCL over InfiniBand with its native IB transport and GPUDirect RDMA; no network plugin.\n"
        "export NCCL_SOCKET_IFNAME=eth0\n"
    )
    assert infiniband_node.path("/run/reboot-required").read_text() == (
        f"*** System restart required: DOCA-OFED {standins.DOCA} ***\n"
    )
    assert not infiniband_node.path("/etc/systemd/system/multi-user.target.wants/opensm.service").exists()


def test_infiniband_on_azures_image_verifies_and_holds_its_doca_and_writes_azures_nccl_environment(
    infiniband_azure_node: FabricRun,
) -> None:
    node = infiniband_azure_node
    installed = node.output("dpkg-query", "-W", "-f", "${Package} ${Version}\n", "doca-host", "doca-ofed")
    assert installed == (
        f"doca-host {standins.AZURE_DOCA_HOST_DEB}\ndoca-ofed {standins.AZURE_DOCA_OFED_DEB}\n"
    )
    assert node.output("apt-mark", "showhold").split() == ["doca-host", "doca-ofed"]
    # Nothing installed: no DOCA repository, no key, no reboot.
    assert not node.path("/etc/apt/sources.list.d/clusterfab-doca.sources").exists()
    assert not node.path("/etc/apt/keyrings/clusterfab-doca.asc").exists()
    assert not node.path("/run/reboot-required").exists()
    install = {e.task for e in node.first_events if e.kind == "runner_on_ok" and e.task.startswith("Install")}
    assert install == set()
    # nvidia-peermem at boot, as Azure's ndv5.sh loads it.
    assert node.path("/etc/modules-load.d/clusterfab-infiniband.conf").read_text() == (
        MANAGED + "ib_umad\nrdma_ucm\nib_ipoib\nnvidia-peermem\n"
    )
    # Azure's hopper.conf less SHARP, the MPI launcher's UCX and NCCL_DEBUG; its topology file.
    assert node.path("/etc/profile.d/nccl-fabric.sh").read_text() == MANAGED + (
        "# NCCL over InfiniBand with its native IB transport and GPUDirect RDMA; no network plugin.\n"
        "export NCCL_SOCKET_IFNAME=eth0\n"
        "export NCCL_TOPO_FILE=/opt/microsoft/ndv5-topo.xml\n"
        "export CUDA_DEVICE_ORDER=PCI_BUS_ID\n"
        "export NCCL_IB_PCI_RELAXED_ORDERING=1\n"
        "export NCCL_IB_QPS_PER_CONNECTION=4\n"
        "export NCCL_IGNORE_CPU_AFFINITY=1\n"
        "export NCCL_MIN_NCHANNELS=32\n"
        "export NCCL_P2P_NET_CHUNKSIZE=2097152\n"
        "export NCCL_PXN_DISABLE=1\n"
    )


def test_infiniband_refuses_an_image_with_another_doca_release(
    fresh_rootfs: Callable[[str], Path], built_standins: standins.Standins
) -> None:
    rootfs = azure_hpc_image(fresh_rootfs("infiniband-azure-other"), "azure-doca-other")
    extravars = variants.FABRIC_ONLY_VARIANTS["infiniband_azure"](built_standins)
    result = run_in_chroot("gpu_node.yml", rootfs, extravars, tags=FABRIC_TAGS["infiniband_azure"])
    assert not result.succeeded
    (failure,) = result.failed_tasks
    assert failure.task == "Assert the host carries no other DOCA release"
    assert failure.message == (
        f"This host carries DOCA 3.2.1 (doca-host {standins.AZURE_OTHER_DOCA_HOST_DEB}), but the catalog pins"
        " DOCA-OFED 3.2.3. Boot the image release the catalog names, or update the catalog's doca-ofed"
        " release to the image's."
    )
    assert rootfs.joinpath("etc/apt/sources.list.d/clusterfab-doca.sources").exists() is False


def test_infiniband_refuses_an_image_said_to_carry_doca_that_does_not(
    fresh_rootfs: Callable[[str], Path], built_standins: standins.Standins
) -> None:
    rootfs = fresh_rootfs("infiniband-azure-bare")
    extravars = variants.FABRIC_ONLY_VARIANTS["infiniband_azure"](built_standins)
    result = run_in_chroot("gpu_node.yml", rootfs, extravars, tags=FABRIC_TAGS["infiniband_azure"])
    assert not result.succeeded
    (failure,) = result.failed_tasks
    assert failure.task == "Assert the image carries the DOCA-OFED packages"
    assert failure.message == (
        "infiniband_doca_preinstalled says this host's image carries DOCA-OFED 3.2.3, but the host lacks"
        " doca-host, doca-ofed. Boot the image the catalog names, or install DOCA-OFED from its repository"
        " (infiniband_doca_preinstalled: false)."
    )


def test_a_pyxis_node_gets_the_nvidia_container_cli_and_no_docker(container_cli_node: FabricRun) -> None:
    installed = dict(
        line.split("\t")
        for line in container_cli_node.output(
            "dpkg-query", "-W", "-f", "${Package}\t${Version}\n"
        ).splitlines()
    )
    pinned = standins.NVIDIA_TOOLKIT_DEB
    assert installed["libnvidia-container-tools"] == pinned
    assert installed["libnvidia-container1"] == pinned
    assert not {"docker-ce", "docker-ce-cli", "containerd.io", "nvidia-container-toolkit"} & set(installed)
    assert not container_cli_node.path("/etc/docker/daemon.json").exists()
    sources = {p.name for p in container_cli_node.path("/etc/apt/sources.list.d").iterdir()}
    assert "clusterfab-nvidia-container-toolkit.sources" in sources
    assert "clusterfab-docker.sources" not in sources
