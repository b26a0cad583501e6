"""gpu_node.yml applied for real to debootstrapped Debian root file systems.

Two variants run through clusterfab's runner with the extravars clusterfab renders for two examples:
an AWS p5 node (the CUDA repository's open driver, Fabric Manager and NSCQ, GDRCopy, GPUDirect
Storage, EFA, FSx for Lustre) and a GCP a3-ultra node booting the accelerator image's own driver
(Canonical's Fabric Manager, RoCE with gIB, Filestore over NFS). Each is applied twice; the second
run must change nothing. The stand-in repositories hold only what the catalog records, so the last
tests show a node refusing what does not exist.
"""

from __future__ import annotations

import json
import os
import subprocess

import chroot_standins as standins
import pytest
from chroot_runs import NodeRun, run_in_chroot

from clusterfab.provision.extravars import MPI_PACKAGES

pytestmark = pytest.mark.ansible

MANAGED = "#\n# Managed by clusterfab (Ansible). Local changes are overwritten on the next run.\n#\n"
KERNEL = os.uname().release

# Every pinned version below is the catalog's (clusterfab/catalog/data/packages.yaml, software.yaml).
STACK_VERSIONS = {
    "cuda-toolkit-13-0": standins.CUDA_DEB,
    "libnccl2": standins.NCCL_DEB,
    "libnccl-dev": standins.NCCL_DEB,
    "datacenter-gpu-manager-4-core": standins.DCGM_DEB,
    "datacenter-gpu-manager-4-cuda13": standins.DCGM_DEB,
    "datacenter-gpu-manager-exporter": standins.DCGM_EXPORTER_DEB,
    "prometheus-node-exporter": standins.NODE_EXPORTER_DEB,
}
STACK_HOLDS = set(STACK_VERSIONS)
EFA_VERSIONS = {
    **STACK_VERSIONS,
    # Driver branch 580 from the CUDA repository: Fabric Manager and NSCQ without a branch suffix.
    "nvidia-open": standins.DRIVER_DEB,
    "nvidia-fabricmanager": standins.DRIVER_DEB,
    "libnvidia-nscq": standins.DRIVER_DEB,
    "nvidia-gds-13-0": "13.0.2-1",
    "nvidia-fs": "2.26.6-1",
    "libgdrapi": standins.GDRCOPY,
    "gdrdrv-dkms": standins.GDRCOPY,
    "gdrcopy-tests": standins.GDRCOPY,
    "gdrcopy": standins.GDRCOPY,
    "libfabric1-aws": "2.7.0amzn2.0",
    "efa-config": "1.18-1",
    "libnccl-ofi": "1.22.0-1",
    f"lustre-client-modules-{KERNEL}": f"{standins.LUSTRE}-1",
}
EFA_HOLDS = STACK_HOLDS | {
    "nvidia-open",
    "nvidia-fabricmanager",
    "libnvidia-nscq",
    "nvidia-gds-13-0",
    "nvidia-fs",
    "libgdrapi",
    "gdrdrv-dkms",
    "gdrcopy-tests",
    "gdrcopy",
    # The image's kernel (node_tuning holds it, so no upgrade swaps it under the DKMS modules).
    f"linux-image-{KERNEL}",
}
# The accelerator image's own driver stays; Fabric Manager and NSCQ are Canonical's builds at its version.
GIB_VERSIONS = {
    **STACK_VERSIONS,
    "nvidia-utils-580-server": standins.IMAGE_DRIVER_DEB,
    "libnvidia-compute-580-server": standins.IMAGE_DRIVER_DEB,
    "nvidia-fabricmanager-580": "580.178.04-0ubuntu0.24.04.1",
    "libnvidia-nscq-580": "580.178.04-0ubuntu0.24.04.1",
    "nccl-gib": standins.GIB_DEB,
}
GIB_HOLDS = STACK_HOLDS | {
    "nvidia-utils-580-server",
    "libnvidia-compute-580-server",
    "nvidia-compute-utils-580-server",
    "nvidia-fabricmanager-580",
    "libnvidia-nscq-580",
    "nccl-gib",
}
VARIANT_NODES = ["efa_node", "gib_node"]


def chroot_output(node: NodeRun, *argv: str) -> str:
    return subprocess.run(
        ["chroot", str(node.rootfs), *argv], capture_output=True, text=True, check=True
    ).stdout


def installed_versions(node: NodeRun, packages: list[str]) -> dict[str, str]:
    output = chroot_output(node, "dpkg-query", "-W", "-f", "${Package} ${Version}\n", *packages)
    return dict(line.split(" ", 1) for line in output.splitlines())


@pytest.fixture(params=VARIANT_NODES)
def node(request: pytest.FixtureRequest) -> NodeRun:
    run: NodeRun = request.getfixturevalue(request.param)
    return run


def test_first_run_converges_the_node(node: NodeRun) -> None:
    assert node.first.succeeded
    assert list(node.first.hosts) == ["node"]
    assert node.first.hosts["node"].failed == 0
    assert node.first.hosts["node"].changed > 0
    assert node.first.failed_tasks == ()


def test_second_run_changes_nothing(node: NodeRun) -> None:
    assert node.second.succeeded, node.second.failed_tasks
    assert node.second.hosts["node"].changed == 0
    assert node.second.hosts["node"].failed == 0


START_TASKS = {
    "Start nvidia-persistenced",
    "Start Fabric Manager",
    "Start nvidia-dcgm",
    "Start dcgm-exporter",
    "Start the node exporter",
    "Mount the file systems",
    "Assemble and mount the local scratch",
}


@pytest.mark.parametrize(
    ("fixture", "start_tasks"),
    [
        pytest.param("efa_node", START_TASKS | {"Start the gdrdrv service"}, id="efa"),
        pytest.param("gib_node", START_TASKS, id="gib"),
    ],
)
def test_services_are_enabled_but_never_started_in_a_chroot(
    fixture: str, start_tasks: set[str], request: pytest.FixtureRequest
) -> None:
    node: NodeRun = request.getfixturevalue(fixture)
    outcomes = {
        event.task: event.kind
        for event in node.first_events
        if event.task in start_tasks
        and event.kind.startswith("runner_on_")
        and event.kind != "runner_on_start"
    }
    assert outcomes == dict.fromkeys(start_tasks, "runner_on_skipped")
    handlers = {"Apply kernel parameters"}
    handler_outcomes = {
        event.task: event.kind
        for event in node.first_events
        if event.task in handlers and event.kind.startswith("runner_on_") and event.kind != "runner_on_start"
    }
    assert handler_outcomes == dict.fromkeys(handlers, "runner_on_skipped")


def test_a_driver_install_flags_the_reboot(efa_node: NodeRun) -> None:
    # The boot-time caller reboots on this flag once the play is over.
    assert efa_node.path("/run/reboot-required").read_text() == (
        f"*** System restart required: NVIDIA driver {standins.DRIVER} ***\n"
    )


def test_the_images_driver_is_kept_and_held(gib_node: NodeRun) -> None:
    # Nothing from the CUDA repository's driver: no second driver over the image's.
    listing = chroot_output(gib_node, "dpkg-query", "-W", "-f", "${Package}\n")
    assert {"nvidia-open", "cuda-drivers", "nvidia-fabricmanager", "libnvidia-nscq"}.isdisjoint(
        listing.split()
    )
    assert not gib_node.path("/etc/apt/preferences.d/clusterfab-nvidia-driver").exists()
    assert not gib_node.path("/run/reboot-required").exists()
    # gdrdrv and nvidia-fs would build against a driver source the image's driver lacks.
    assert {"gdrcopy", "nvidia-gds-13-0"}.isdisjoint(listing.split())


def test_the_cuda_repositorys_driver_cannot_join_the_images(gib_node: NodeRun) -> None:
    """Audit item 5: why the image's driver is kept rather than the CUDA repository's installed over it.
    Canonical's packaging (S-UBUNTU-NVIDIA-CONTROL) makes every kernel-common build conflict with and
    provide nvidia-kernel-common, so the CUDA repository's branch-580 driver can only come in by removing
    the image's, and with it the held Fabric Manager that depends on it: apt refuses, as it does on such
    images. The stand-in repositories carry exactly the recorded relations."""
    installed = chroot_output(
        gib_node, "dpkg-query", "-W", "-f", "${Conflicts}|${Provides}", "nvidia-kernel-common-580-server"
    )
    assert installed == (
        "nvidia-kernel-common|nvidia-kernel-common, nvidia-kernel-common-580-server-580.178.04"
    )
    cuda_build = standins.CATALOG.apt_package("nvidia-kernel-common-580")
    assert cuda_build is not None
    assert cuda_build.repository == "cuda"
    simulated = subprocess.run(
        [
            "chroot",
            str(gib_node.rootfs),
            "apt-get",
            "install",
            "--simulate",
            "--no-install-recommends",
            f"nvidia-kernel-common-580={cuda_build.version}",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert simulated.returncode == 100
    depends = " nvidia-fabricmanager-580 : Depends: nvidia-kernel-common-580-server-580.178.04\n"
    assert depends in simulated.stdout
    assert simulated.stderr == (
        "E: Error, pkgProblemResolver::Resolve generated breaks, this may be caused by held packages.\n"
    )


@pytest.mark.parametrize(
    ("fixture", "expected"),
    [pytest.param("efa_node", EFA_VERSIONS, id="efa"), pytest.param("gib_node", GIB_VERSIONS, id="gib")],
)
def test_pinned_versions_are_installed(
    fixture: str, expected: dict[str, str], request: pytest.FixtureRequest
) -> None:
    node: NodeRun = request.getfixturevalue(fixture)
    assert installed_versions(node, sorted(expected)) == expected


@pytest.mark.parametrize(
    ("fixture", "holds"),
    [pytest.param("efa_node", EFA_HOLDS, id="efa"), pytest.param("gib_node", GIB_HOLDS, id="gib")],
)
def test_pinned_packages_are_held(fixture: str, holds: set[str], request: pytest.FixtureRequest) -> None:
    node: NodeRun = request.getfixturevalue(fixture)
    assert set(chroot_output(node, "apt-mark", "showhold").split()) == holds


def test_efa_profile_is_the_modern_one(efa_node: NodeRun) -> None:
    profile = efa_node.path("/etc/profile.d/nccl-fabric.sh").read_text()
    assert profile == MANAGED + (
        "# NCCL over AWS EFA through aws-ofi-nccl (plugin >= 1.7, libfabric >= 1.18)."
        " FI_EFA_USE_DEVICE_RDMA,\n"
        "# FI_PROVIDER and NCCL_PROTO were only needed by plugin <= 1.5; RDMAV_* must stay unset.\n"
        'export LD_LIBRARY_PATH="/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu:/opt/amazon/efa/lib'
        '${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}"\n'
    )


def test_gib_profile_sources_google_env_then_selects_interfaces(gib_node: NodeRun) -> None:
    profile = gib_node.path("/etc/profile.d/nccl-fabric.sh").read_text()
    assert profile == MANAGED + (
        "# NCCL over GPUDirect RDMA (RoCE) with Google's gIB plugin. set_nccl_env.sh carries Google's tuned\n"
        "# values and changes with nccl-gib releases, so it is sourced first and only the interface\n"
        "# selection and explicit overrides follow it.\n"
        "if [ -r /usr/local/gib/scripts/set_nccl_env.sh ]; then\n"
        "  . /usr/local/gib/scripts/set_nccl_env.sh\n"
        "fi\n"
        "export NCCL_NET=gIB\n"
        "export NCCL_SOCKET_IFNAME=enp0s19,enp192s20\n"
        'export LD_LIBRARY_PATH="/usr/local/gib/lib64${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}"\n'
    )
    # The profile must work in a login shell on the node, with the package's script in place.
    env = chroot_output(gib_node, "sh", "-c", ". /etc/profile.d/nccl-fabric.sh && env")
    assert {"NCCL_NET=gIB", "NCCL_IB_TC=52", "NCCL_SOCKET_IFNAME=enp0s19,enp192s20"} <= set(env.splitlines())


LIB_UNITS = "/lib/systemd/system"
ETC_UNITS = "/etc/systemd/system"
ENABLED_SERVICES = {
    "multi-user.target.wants/nvidia-persistenced.service": f"{LIB_UNITS}/nvidia-persistenced.service",
    "multi-user.target.wants/nvidia-fabricmanager.service": f"{LIB_UNITS}/nvidia-fabricmanager.service",
    "multi-user.target.wants/nvidia-dcgm.service": f"{LIB_UNITS}/nvidia-dcgm.service",
    "multi-user.target.wants/dcgm-exporter.service": f"{ETC_UNITS}/dcgm-exporter.service",
    # The package's own unit (shipped in /usr/lib; this Debian's systemctl links it by /lib, merged /usr).
    "multi-user.target.wants/prometheus-node-exporter.service": (
        f"{LIB_UNITS}/prometheus-node-exporter.service"
    ),
    "multi-user.target.wants/clusterfab-local-scratch.service": (
        f"{ETC_UNITS}/clusterfab-local-scratch.service"
    ),
}
NFS_UNIT = "mnt-filestore\\x2dhome.mount"


@pytest.mark.parametrize(
    ("fixture", "units"),
    [
        pytest.param(
            "efa_node",
            {
                **ENABLED_SERVICES,
                "remote-fs.target.wants/fsx.mount": f"{ETC_UNITS}/fsx.mount",
                "remote-fs.target.wants/datasets.mount": f"{ETC_UNITS}/datasets.mount",
            },
            id="efa",
        ),
        pytest.param(
            "gib_node",
            {**ENABLED_SERVICES, f"remote-fs.target.wants/{NFS_UNIT}": f"{ETC_UNITS}/{NFS_UNIT}"},
            id="gib",
        ),
    ],
)
def test_units_are_enabled(fixture: str, units: dict[str, str], request: pytest.FixtureRequest) -> None:
    node: NodeRun = request.getfixturevalue(fixture)
    links = {name: str(node.path(f"/etc/systemd/system/{name}").readlink()) for name in units}
    assert links == units


def test_lustre_mount_unit(efa_node: NodeRun) -> None:
    assert efa_node.path("/etc/systemd/system/fsx.mount").read_text() == MANAGED + (
        "# clusterfab storage_mounts unit: removed when its entry leaves storage_mounts_list\n"
        "[Unit]\n"
        "Description=clusterfab lustre storage scratch\n"
        "Wants=network-online.target\n"
        "After=network-online.target\n"
        "\n"
        "[Mount]\n"
        "What=fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com@tcp:/abcdefgh\n"
        "Where=/fsx\n"
        "Type=lustre\n"
        "Options=noatime,flock,_netdev\n"
        "\n"
        "[Install]\n"
        "WantedBy=remote-fs.target\n"
    )


def test_nfs_mount_unit_has_an_escaped_name_and_its_own_options(gib_node: NodeRun) -> None:
    unit = gib_node.path("/etc/systemd/system/mnt-filestore\\x2dhome.mount").read_text()
    assert "Where=/mnt/filestore-home\n" in unit
    assert (
        "What=10.20.0.2:/home_share\nWhere=/mnt/filestore-home\nType=nfs\nOptions=hard,_netdev,nconnect=8\n"
        in unit
    )
    # systemd must agree with the role about the unit name.
    escaped = chroot_output(gib_node, "systemd-escape", "--path", "--suffix=mount", "/mnt/filestore-home")
    assert escaped.strip() == "mnt-filestore\\x2dhome.mount"
    assert installed_versions(gib_node, ["nfs-common"])["nfs-common"].startswith("1:2.6.")


def test_kernel_and_limits_tuning(node: NodeRun) -> None:
    assert node.path("/etc/sysctl.d/90-clusterfab-node-tuning.conf").read_text() == MANAGED + (
        "kernel.numa_balancing = 0\n"
        "net.core.netdev_max_backlog = 250000\n"
        "net.core.rmem_default = 16777216\n"
        "net.core.rmem_max = 268435456\n"
        "net.core.wmem_default = 16777216\n"
        "net.core.wmem_max = 268435456\n"
        "net.ipv4.tcp_mtu_probing = 1\n"
        "net.ipv4.tcp_rmem = 4096 87380 268435456\n"
        "net.ipv4.tcp_wmem = 4096 65536 268435456\n"
        "vm.max_map_count = 1048576\n"
    )
    assert node.path("/etc/security/limits.d/90-clusterfab-node-tuning.conf").read_text() == MANAGED + (
        "*    soft    memlock    unlimited\n"
        "*    hard    memlock    unlimited\n"
        "*    soft    nofile     1048576\n"
        "*    hard    nofile     1048576\n"
    )
    assert node.path("/etc/systemd/system.conf.d/90-clusterfab-node-tuning.conf").read_text() == (
        MANAGED + "[Manager]\nDefaultLimitMEMLOCK=infinity\nDefaultLimitNOFILE=1048576\n"
    )
    blacklist = node.path("/etc/apt/apt.conf.d/51clusterfab-node-tuning").read_text()
    assert blacklist.startswith(MANAGED.replace("#", "//"))
    assert '    "nvidia-";\n    "libnvidia-";\n' in blacklist
    # Unattended upgrades off altogether, as the Cluster Toolkit's GPU blueprints have it.
    assert node.path("/etc/apt/apt.conf.d/20auto-upgrades").read_text() == MANAGED.replace("#", "//") + (
        'APT::Periodic::Update-Package-Lists "0";\nAPT::Periodic::Unattended-Upgrade "0";\n'
    )
    # apt itself reads it so: the periodic jobs see both switches off.
    settings = chroot_output(node, "apt-config", "dump")
    assert 'APT::Periodic::Update-Package-Lists "0";' in settings
    assert 'APT::Periodic::Unattended-Upgrade "0";' in settings


def test_driver_pin_and_repository(efa_node: NodeRun) -> None:
    assert efa_node.path("/etc/apt/preferences.d/clusterfab-nvidia-driver").read_text() == MANAGED + (
        f"Explanation: NVIDIA driver {standins.DRIVER} (branch 580) is pinned by clusterfab.\n"
        "Package: nvidia-* libnvidia-* cuda-drivers cuda-drivers-* libcuda1 libcuda1-* libxnvctrl* "
        "xserver-xorg-video-nvidia* firmware-nvidia-*\n"
        f"Pin: version {standins.DRIVER}-*\n"
        "Pin-Priority: 1001\n"
    )
    assert efa_node.path("/etc/apt/sources.list.d/clusterfab-nvidia-cuda.sources").read_text() == MANAGED + (
        "Types: deb\n"
        "URIs: file:/srv/clusterfab-standins/cuda/\n"
        "Suites: /\n"
        "Signed-By: /etc/apt/keyrings/clusterfab-nvidia-cuda.asc\n"
    )
    # apt verified the stand-in repository's signature with the downloaded key, so the newer
    # driver is visible and only the pin keeps it out.
    policy = chroot_output(efa_node, "apt-cache", "policy", "nvidia-open")
    assert f"Candidate: {standins.DRIVER_DEB}" in policy
    assert standins.decoy(standins.DRIVER_DEB) in policy
    persistenced = efa_node.path("/etc/systemd/system/nvidia-persistenced.service.d/clusterfab.conf")
    assert persistenced.read_text() == MANAGED + (
        "[Service]\nExecStart=\n"
        "ExecStart=/usr/bin/nvidia-persistenced --user nvidia-persistenced --persistence-mode --verbose\n"
    )


def test_efa_installer_runs_once_and_leaves_its_record(efa_node: NodeRun) -> None:
    assert efa_node.path("/var/log/clusterfab-standin-efa-installer.log").read_text() == "-y\n"
    record = efa_node.path("/opt/amazon/efa_installed_packages").read_text()
    assert record.splitlines()[0] == f"# EFA installer version: {standins.EFA_INSTALLER}"
    # The unpacked installer is removed once it has run.
    assert not efa_node.path(f"/var/cache/clusterfab/efa/{standins.EFA_INSTALLER}").exists()


def test_nccl_tests_are_built_once_for_the_pinned_version(node: NodeRun) -> None:
    link = node.path("/opt/nccl-tests/build")
    assert str(link.readlink()) == f"nccl-tests-{standins.NCCL_TESTS}/build"
    assert sorted(path.name for path in link.glob("*_perf")) == sorted(
        f"{name}_perf" for name in standins.NCCL_TESTS_BINARIES
    )
    assert os.access(link / "all_reduce_perf", os.X_OK)
    # One make run over both playbook runs, with the arguments the role documents: with Ubuntu's Open
    # MPI, every package of it at the catalog's version (libpmix.so.2 is what Slurm's mpi/pmix loads).
    assert node.path(standins.NCCL_TESTS_BUILD_LOG).read_text() == (
        f"{standins.NCCL_TESTS} MPI=1 CUDA_HOME=/usr/local/cuda-13.0 NCCL_HOME=/usr"
        " MPI_HOME=/usr/lib/x86_64-linux-gnu/openmpi\n"
    )
    installed = subprocess.run(
        ["chroot", str(node.rootfs), "dpkg-query", "-W", "-f", "${Package}=${Version}\n", *MPI_PACKAGES],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert sorted(installed) == [
        "libopenmpi-dev=4.1.6-7ubuntu2",
        "libopenmpi3t64=4.1.6-7ubuntu2",
        "libpmix2t64=5.0.1-4.1build1",
        "openmpi-bin=4.1.6-7ubuntu2",
        "openmpi-common=4.1.6-7ubuntu2",
    ]
    assert node.path("/usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.so.2").is_file()


def test_pinned_installs_refresh_apt_lists_only_for_unknown_versions(efa_node: NodeRun) -> None:
    # nvidia_driver refreshed the lists when it added the CUDA repository, so every later pinned
    # version is known and no install refreshes them again.
    installs = {
        "Install the pinned Fabric Manager packages",
        "Install the pinned CUDA toolkit",
        "Install the pinned NCCL packages",
        "Install the pinned DCGM packages",
        "Install the pinned dcgm-exporter package",
        "Install the pinned GPUDirect Storage packages",
    }
    refreshed = {
        event.task: event.raw["event_data"]["res"].get("cache_updated")
        for event in efa_node.first_events
        if event.kind == "runner_on_ok" and event.task in installs
    }
    assert refreshed == dict.fromkeys(installs, False)


def test_the_node_exporter_is_the_packages_service_on_its_port_with_mountstats(efa_node: NodeRun) -> None:
    defaults = efa_node.path("/etc/default/prometheus-node-exporter").read_text()
    assert defaults == MANAGED + (
        "# Read by the package's prometheus-node-exporter.service. mountstats: NFS (Filestore) client"
        " throughput\n# for the storage dashboard.\n"
        'ARGS="--web.listen-address=:9100 --collector.mountstats"\n'
    )
    # Nothing downloaded beside the package: no release tarball, no unit of clusterfab's own.
    assert not efa_node.path("/usr/local/bin/node_exporter").exists()
    assert not efa_node.path("/etc/systemd/system/node-exporter.service").exists()


MISMATCHED_DRIVER = "580.65.06"


def test_fabric_manager_version_mismatch_is_refused(efa_node: NodeRun) -> None:
    result = run_in_chroot(
        "gpu_node.yml",
        efa_node.rootfs,
        {**efa_node.extravars, "nvidia_fabricmanager_version": MISMATCHED_DRIVER},
        tags=["nvidia_fabricmanager"],
    )
    assert not result.succeeded
    [failure] = result.failed_tasks
    assert failure.task == "Assert Fabric Manager matches the driver version exactly"
    assert failure.message == (
        f"Fabric Manager must run the exact driver version: nvidia_fabricmanager_version is "
        f"'{MISMATCHED_DRIVER}' but the driver is '{standins.DRIVER}'. "
        f"Set nvidia_fabricmanager_version to '{standins.DRIVER}'."
    )


def test_legacy_efa_variables_are_refused(efa_node: NodeRun) -> None:
    result = run_in_chroot(
        "gpu_node.yml",
        efa_node.rootfs,
        {**efa_node.extravars, "efa_nccl_env": {"FI_EFA_USE_DEVICE_RDMA": "1", "RDMAV_FORK_SAFE": "1"}},
        tags=["efa"],
    )
    [failure] = result.failed_tasks
    assert failure.task == "Assert the NCCL environment avoids legacy EFA variables"
    assert failure.message.startswith("efa_nccl_env sets ['FI_EFA_USE_DEVICE_RDMA', 'RDMAV_FORK_SAFE']; ")


def test_unknown_fabric_is_refused_before_any_role_runs(efa_node: NodeRun) -> None:
    result = run_in_chroot("gpu_node.yml", efa_node.rootfs, {**efa_node.extravars, "gpu_node_fabric": "roce"})
    [failure] = result.failed_tasks
    assert failure.task == "Validate the playbook inputs"
    assert (
        "value of gpu_node_fabric must be one of: efa, gpudirect_tcpx, gpudirect_tcpxo, rdma_gib,"
        " infiniband, none, got: roce" in failure.message
    )
    assert result.hosts["node"].changed == 0


def test_an_nccl_build_that_does_not_exist_fails_as_on_a_node(efa_node: NodeRun) -> None:
    # NCCL 2.27.5 was never built for CUDA 13 (the first CUDA 13 build is 2.27.7): the old stack's pin.
    result = run_in_chroot(
        "gpu_node.yml", efa_node.rootfs, {**efa_node.extravars, "nccl_version": "2.27.5"}, tags=["nccl"]
    )
    [failure] = result.failed_tasks
    assert failure.task == "Install the pinned NCCL packages"
    assert failure.message == "no available installation candidate for libnccl2=2.27.5-1+cuda13.0"
    assert installed_versions(efa_node, ["libnccl2"]) == {"libnccl2": standins.NCCL_DEB}


def test_a_repository_key_without_the_pinned_fingerprint_is_refused(efa_node: NodeRun) -> None:
    # The catalog's fingerprint of NVIDIA's CUDA key, against a key file holding another key (the
    # stand-ins'): the node must stop before any apt source trusts it.
    pinned = standins.CATALOG.apt_repositories["cuda"].key_fingerprint
    held = efa_node.extravars["nvidia_driver_cuda_repo_key_fingerprint"]  # the stand-ins' key
    result = run_in_chroot(
        "gpu_node.yml",
        efa_node.rootfs,
        {**efa_node.extravars, "nvidia_driver_cuda_repo_key_fingerprint": pinned},
        tags=["nvidia_driver"],
    )
    [failure] = result.failed_tasks
    url = efa_node.extravars["nvidia_driver_cuda_repo_key_url"]
    assert failure.task == f"Assert the key is the pinned one, {url}"
    assert failure.message.startswith(
        f"CUDA repository key check failed: {url} does not hold the key with the pinned fingerprint {pinned}"
        f" (it holds {held})."
    )


def test_the_branch_suffixed_fabric_manager_is_not_in_the_cuda_repository(efa_node: NodeRun) -> None:
    # nvidia-fabricmanager-580 is Canonical's build; the CUDA repository names branch >= 580 without a suffix.
    result = run_in_chroot(
        "gpu_node.yml",
        efa_node.rootfs,
        {**efa_node.extravars, "nvidia_fabricmanager_packages": ["nvidia-fabricmanager-580"]},
        tags=["nvidia_fabricmanager"],
    )
    [failure] = result.failed_tasks
    assert failure.task == "Install the pinned Fabric Manager packages"
    assert "nvidia-fabricmanager-580" in failure.message


def test_canonicals_fabric_manager_needs_canonicals_driver(efa_node: NodeRun) -> None:
    # On a node with the CUDA repository's driver there is no image driver to match.
    result = run_in_chroot(
        "gpu_node.yml",
        efa_node.rootfs,
        {**efa_node.extravars, "nvidia_driver_source": "image"},
        tags=["nvidia_fabricmanager"],
    )
    [failure] = result.failed_tasks
    assert failure.task == "Assert the image's driver is installed"
    assert failure.message.startswith(
        "nvidia_fabricmanager_driver_source is image but nvidia-utils-580-server is not installed"
    )


def test_gdrcopy_is_built_once_and_its_service_enabled(efa_node: NodeRun) -> None:
    assert efa_node.path(standins.GDRCOPY_BUILD_LOG).read_text() == (
        f"{standins.GDRCOPY} CUDA=/usr/local/cuda-13.0\n"
    )
    # gdrdrv is a SysV service: enabled through its rc links.
    assert sorted(path.name for path in efa_node.path("/etc/rc2.d").glob("S*gdrdrv")) != []


def test_cufile_configuration(efa_node: NodeRun) -> None:
    config = json.loads(efa_node.path("/etc/cufile.json").read_text())
    assert config == {
        "logging": {"dir": "/var/log/cufile", "level": "ERROR"},
        "properties": {
            "allow_compat_mode": True,
            "max_device_cache_size_kb": 131072,
            "max_device_pinned_mem_size_kb": 33554432,
            "max_direct_io_size_kb": 16384,
            "poll_mode_max_size_kb": 4,
            "rdma_dev_addr_list": [],
            "use_poll_mode": False,
        },
    }
    assert efa_node.path("/etc/modules-load.d/clusterfab-gpudirect-storage.conf").read_text() == "nvidia_fs\n"
