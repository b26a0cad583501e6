"""Stand-ins for the NVIDIA, AWS, Google and Docker software the roles install, built from the catalog's
recorded repositories (clusterfab/catalog/data/packages.yaml), not from what the roles ask for.

Every package the catalog records in a repository becomes a stand-in .deb with its exact name, Debian
version, architecture and Depends / Conflicts / Provides, and nothing else is in the stand-in
repositories: a role asking for a package or version recorded nowhere, or for two that conflict, fails
in the chroot as it would on a node. The files inside are test doubles (unit files, scripts printing
canned output in the real tools' formats), keyed by package name. Two kinds of synthetic versions sit
beside the recorded ones and are never requested by the catalog's stack: a `decoy` newer version of every
pinned package (a role that forgets to pin installs it), and the `later` releases a day-2 test publishes
after the node fetched its lists (``publish_later_release``).

The repositories are signed with a throw-away key, so the roles' Signed-By handling and the EFA
installer's signature check are exercised for real. Tarball sources (the EFA installer, nccl-tests,
GDRCopy) are built here too; the EFA installer's packages are those AWS's changelog
lists for its version. Everything is built under one directory that tests copy to
``/srv/clusterfab-standins`` inside each root file system.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from email.utils import formatdate
from pathlib import Path

from clusterfab.catalog import load_catalog
from clusterfab.catalog.models import AptPackage

CATALOG = load_catalog()
STACK = CATALOG.recommended
MOUNT = "/srv/clusterfab-standins"
CANNED = "/usr/share/clusterfab-standin"


def _recorded(name: str) -> AptPackage:
    package = CATALOG.apt_package(name)
    assert package is not None, name
    assert package.version is not None, name
    return package


def _version(name: str) -> str:
    version = _recorded(name).version
    assert version is not None
    return version


DRIVER = STACK.nvidia_driver
DRIVER_DEB = _version("nvidia-open")
CUDA_DEB = _version("cuda-toolkit-13-0")
NCCL = STACK.nccl
NCCL_DEB = _version("libnccl2")
DCGM_DEB = _version("datacenter-gpu-manager-4-core")
DCGM = _recorded("datacenter-gpu-manager-4-core").upstream_version
DCGM_EXPORTER_DEB = _version("datacenter-gpu-manager-exporter")
GIB_DEB = _version("nccl-gib")
TCPXO_HELPER_DEB = _version("dmabuf-import-helper")
TCPXO_HELPER_UPSTREAM = _recorded("dmabuf-import-helper").upstream_version
DOCKER_DEB = _version("docker-ce")
NVIDIA_TOOLKIT_DEB = _version("nvidia-container-toolkit")
IMAGE_DRIVER_DEB = _version("nvidia-utils-580-server")
# Pinned to a CUDA minor line (13.0.*): a newer update of that line is what the role should take, so
# these get no decoy.
MINOR_LINE_PINNED = frozenset({"cuda-toolkit-13-0", "nvidia-gds-13-0"})
# What the GCP accelerator image carries before any role runs (Canonical's driver; the catalog's
# `ubuntu` repository records these).
IMAGE_DRIVER_PACKAGES = (
    "nvidia-kernel-common-580-server",
    "libnvidia-compute-580-server",
    "nvidia-utils-580-server",
    "nvidia-compute-utils-580-server",
)
LUSTRE = "2.15.6"
DOCA = "2.9.1"
DOCA_OFED = "24.10-1.1.4.0"
# Azure's Ubuntu-HPC 24.04 image installs DOCA-OFED through doca-host, whose version these are: the
# vendor's package file names (azhpc-images versions.json `doca`: ubuntu24.04 x86_64
# doca-host_3.2.3-019000-25.10-ubuntu2404_amd64.deb, ubuntu22.04
# doca-host_3.2.1-044000-25.10-ubuntu2204_amd64.deb).
AZURE_DOCA_HOST_DEB = "3.2.3-019000-25.10-ubuntu2404"
AZURE_OTHER_DOCA_HOST_DEB = "3.2.1-044000-25.10-ubuntu2204"
# No stored source gives the doca-ofed version on that image: a stand-in (the role reads the release from
# doca-host, as Azure's recipe does).
AZURE_DOCA_OFED_DEB = "0.standin-1"
NODE_EXPORTER_DEB = _version("prometheus-node-exporter")
EFA_INSTALLER = CATALOG.node_packages["efa-installer"].version or ""
# Synthetic: a release after the catalog's, for the day-2 upgrade.
EFA_INSTALLER_NEWER = "1.52.0"
# The newer installer with a modified script, next to the genuine tarball's signature.
EFA_TAMPERED_TARBALL = f"efa-tampered/aws-efa-installer-{EFA_INSTALLER_NEWER}.tar.gz"
NCCL_TESTS = CATALOG.node_packages["nccl-tests"].version or ""
# Synthetic: a release after the catalog's, for the day-2 rebuild.
NCCL_TESTS_NEWER = "2.19.7"
GDRCOPY = CATALOG.node_packages["gdrcopy"].version or ""
# The stand-in nccl-tests Makefile appends one line per make run here.
NCCL_TESTS_BUILD_LOG = "/var/log/clusterfab-standin-nccl-tests-build.log"
# The stand-in GDRCopy package build appends one line per build here.
GDRCOPY_BUILD_LOG = "/var/log/clusterfab-standin-gdrcopy-build.log"
# The order in which the later releases appear in the CUDA repository; each stage keeps the earlier ones.
LATER_RELEASES = ("nccl", "cuda_toolkit", "dcgm")
LATER_PACKAGES = {
    "nccl": ("libnccl2", "libnccl-dev"),
    "cuda_toolkit": ("cuda-toolkit-13-0",),
    "dcgm": ("datacenter-gpu-manager-4-core", "datacenter-gpu-manager-4-cuda13"),
}
GPU_COUNT = 8

# What the stand-in EFA installer installs, as (package, version, architecture): EFA installer 1.51.0
# ships libfabric 2.7.0amzn2.0 and aws-ofi-nccl 1.22.0 (AWS's EFA installer changelog).
EFA_DEBS = (
    ("libfabric1-aws", "2.7.0amzn2.0", "amd64"),
    ("efa-config", "1.18-1", "all"),
    ("libnccl-ofi", "1.22.0-1", "amd64"),
)
# GDRCopy's own packages as packages/build-deb-packages.sh of v2.5.1 builds them (packages/*/control):
# (name, Depends, Conflicts). The version of all four is the release's.
GDRCOPY_DEBS = (
    ("libgdrapi", (), ("gdrcopy (<= 2.2-1)",)),
    ("gdrdrv-dkms", ("dkms (>= 1.95)",), ()),
    ("gdrcopy-tests", (f"libgdrapi (>= {GDRCOPY})",), ("gdrcopy (<= 2.2-1)",)),
    (
        "gdrcopy",
        (f"gdrdrv-dkms (= {GDRCOPY})", f"libgdrapi (= {GDRCOPY})", f"gdrcopy-tests (= {GDRCOPY})"),
        (),
    ),
)


@dataclass(frozen=True)
class Deb:
    """A stand-in Debian package."""

    name: str
    version: str
    arch: str = "amd64"
    depends: tuple[str, ...] = ()
    conflicts: tuple[str, ...] = ()
    provides: tuple[str, ...] = ()
    files: Mapping[str, str] = field(default_factory=dict)
    executables: frozenset[str] = frozenset()

    @property
    def filename(self) -> str:
        return f"{self.name}_{self.version.split(':')[-1]}_{self.arch}.deb"

    def control(self) -> str:
        lines = [
            f"Package: {self.name}",
            f"Version: {self.version}",
            f"Architecture: {self.arch}",
            "Maintainer: clusterfab tests <standin@clusterfab.invalid>",
        ]
        for field_name, relations in (
            ("Depends", self.depends),
            ("Conflicts", self.conflicts),
            ("Provides", self.provides),
        ):
            if relations:
                lines.append(f"{field_name}: {', '.join(relations)}")
        lines.append(f"Description: clusterfab test stand-in for {self.name}")
        return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Standins:
    """Paths and checksums of the built stand-ins (paths are relative to the build directory)."""

    root: Path
    efa_tarball_sha256: str
    nccl_tests_sha256: Mapping[str, str]
    gdrcopy_sha256: str
    key_fingerprint: str

    @property
    def efa_tarball(self) -> str:
        return f"efa/aws-efa-installer-{EFA_INSTALLER}.tar.gz"


# ---------------------------------------------------------------- canned tool output


def nvidia_smi_query(driver: str = DRIVER, gpus: int = GPU_COUNT) -> str:
    """``nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader,nounits``."""
    return "".join(f"{index}, NVIDIA H100 80GB HBM3, {driver}, 81559\n" for index in range(gpus))


def nvidia_smi_summary(driver: str = DRIVER, gpus: int = GPU_COUNT) -> str:
    """The default ``nvidia-smi`` table (header and first GPU rows)."""
    rows = [
        "+-----------------------------------------------------------------------------------------+",
        f"| NVIDIA-SMI {driver}              Driver Version: {driver}      CUDA Version: 13.0     |",
        "|-----------------------------------------+------------------------+----------------------+",
        "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |",
        "|=========================================+========================+======================|",
    ]
    for index in range(gpus):
        rows.append(
            f"|   {index}  NVIDIA H100 80GB HBM3          On  |   00000000:{0x53 + index:02X}:00.0 Off |"
            "                    0 |"
        )
    return "\n".join(rows) + "\n"


def dcgmi_diag(level: int = 1, failures: Mapping[str, str] | None = None) -> str:
    """``dcgmi diag -r <level>`` output; ``failures`` maps test names to their Fail text."""
    failures = failures or {}

    def row(name: str, default: str) -> str:
        return f"| {name:<25} | {failures.get(name, default):<46} |"

    lines = [
        "Successfully ran diagnostic for group.",
        "+---------------------------+------------------------------------------------+",
        "| Diagnostic                | Result                                         |",
        "+===========================+================================================+",
        "|-----  Metadata  ----------+------------------------------------------------|",
        f"| {'DCGM Version':<25} | {DCGM:<46} |",
        f"| {'Driver Version Detected':<25} | {DRIVER:<46} |",
        f"| {'GPU Device IDs Detected':<25} | {','.join(['2330'] * GPU_COUNT):<46} |",
        "|-----  Deployment  --------+------------------------------------------------|",
    ]
    for name in (
        "Denylist",
        "NVML Library",
        "CUDA Main Library",
        "Permissions and OS Blocks",
        "Persistence Mode",
        "Environment Variables",
        "Page Retirement/Row Remap",
        "Graphics Processes",
        "Inforom",
    ):
        lines.append(row(name, "Pass"))
    if level >= 2:
        lines.append("+-----  Integration  -------+------------------------------------------------+")
        lines.append(row("PCIe", "Pass - All"))
        lines.append("+-----  Hardware  ----------+------------------------------------------------+")
        lines.append(row("GPU Memory", "Pass - All"))
    lines.append("+---------------------------+------------------------------------------------+")
    return "\n".join(lines) + "\n"


def all_reduce_perf(peak_busbw_gbytes: float, gpus: int = GPU_COUNT, wrong: int = 0) -> str:
    """nccl-tests ``all_reduce_perf -b 8M -e 8G -f 2 -g <gpus>`` output peaking at the given busbw."""
    header = [
        "# nThread 1 nGpus 8 minBytes 8388608 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 "
        "agg iters: 1 validation: 1 graph: 0",
        "#",
        "# Using devices",
    ]
    header += [
        f"#  Rank {rank:2d} Group  0 Pid   4242 on  node-0 device {rank:2d} [0x{0x53 + rank:02x}] "
        "NVIDIA H100 80GB HBM3"
        for rank in range(gpus)
    ]
    header += [
        "#",
        "#                                                              out-of-place"
        "                       in-place          ",
        "#       size         count      type   redop    root     time   algbw   busbw #wrong"
        "     time   algbw   busbw #wrong",
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)       "
        "     (us)  (GB/s)  (GB/s)       ",
    ]
    factor = 2 * (gpus - 1) / gpus
    rows = []
    size = 8 * 1024 * 1024
    sizes = []
    while size <= 8 * 1024**3:
        sizes.append(size)
        size *= 2
    busbws = []
    for position, size in enumerate(sizes):
        # Bandwidth ramps up with message size and reaches the peak at the largest one.
        busbw = peak_busbw_gbytes * (0.55 + 0.45 * position / (len(sizes) - 1))
        busbws.append(busbw)
        algbw = busbw / factor
        time_us = size / (algbw * 1e3)
        row_wrong = wrong if size == sizes[-1] else 0
        rows.append(
            f"{size:>12d} {size // 4:>13d}     float     sum      -1 {time_us:8.1f} {algbw:7.2f} {busbw:7.2f}"
            f" {row_wrong:6d} {time_us:8.1f} {algbw:7.2f} {busbw:7.2f} {row_wrong:6d}"
        )
    footer = [
        f"# Out of bounds values : {wrong} {'FAILED' if wrong else 'OK'}",
        f"# Avg bus bandwidth    : {sum(busbws) / len(busbws):.4f} ",
        "#",
        "",
    ]
    return "\n".join(header + rows + footer)


# ---------------------------------------------------------------- stand-in executables


def _script(body: str) -> str:
    return "#!/bin/sh\n# clusterfab test stand-in; prints canned output in the real tool's format.\n" + body


def _unit(description: str, exec_start: str) -> str:
    return (
        f"[Unit]\nDescription={description} (clusterfab stand-in)\n\n"
        f"[Service]\nExecStart={exec_start}\n\n[Install]\nWantedBy=multi-user.target\n"
    )


NVIDIA_SMI = _script(
    f'case "$*" in\n  *--query-gpu=*) exec cat {CANNED}/nvidia-smi/query-gpu.csv ;;\n'
    f"  *) exec cat {CANNED}/nvidia-smi/summary.txt ;;\nesac\n"
)
DCGMI = _script(
    'if [ "$1" != diag ]; then echo "dcgmi stand-in: only diag is supported" >&2; exit 2; fi\n'
    f'echo "$*" > {CANNED}/dcgmi/last-args\n'
    f"cat {CANNED}/dcgmi/diag.txt\n"
    f'exit "$(cat {CANNED}/dcgmi/diag.rc)"\n'
)


# What the stand-in nccl-tests Makefile installs as every *_perf binary: it records its arguments in
# <binary>.out.args and prints <binary>.out, which a test writes first (see all_reduce_perf()).
NCCL_TESTS_PERF = _script('echo "$*" > "$0.out.args"\nexec cat "$0.out"\n')
NCCL_TESTS_BINARIES = (
    "all_reduce",
    "all_gather",
    "broadcast",
    "reduce_scatter",
    "reduce",
    "alltoall",
    "scatter",
    "gather",
    "sendrecv",
    "hypercube",
)


def nccl_tests_makefile(version: str) -> str:
    """A Makefile with nccl-tests' interface (MPI, CUDA_HOME, NCCL_HOME, build/ output) and no CUDA."""
    binaries = " ".join(NCCL_TESTS_BINARIES)
    return (
        f"# clusterfab test stand-in for nccl-tests {version}: the real build's variables and\n"
        "# build/ layout, stand-in scripts instead of CUDA binaries; it fails without nvcc, nccl.h or,\n"
        "# with MPI=1, mpi.h.\n"
        "CUDA_HOME ?= /usr/local/cuda\n"
        "NCCL_HOME ?= /usr\n"
        "MPI ?= 0\n"
        "MPI_HOME ?= /usr/lib/openmpi\n"
        "BUILDDIR ?= build\n"
        f"BINARIES := {binaries}\n"
        "\n"
        "build: $(BINARIES:%=$(BUILDDIR)/%_perf)\n"
        f'\techo "{version} MPI=$(MPI) CUDA_HOME=$(CUDA_HOME) NCCL_HOME=$(NCCL_HOME)'
        '$(if $(filter 1,$(MPI)), MPI_HOME=$(MPI_HOME))"'
        f" >> {NCCL_TESTS_BUILD_LOG}\n"
        "\n"
        "$(BUILDDIR)/%_perf: perf.sh\n"
        "\ttest -x $(CUDA_HOME)/bin/nvcc\n"
        "\ttest -f $(NCCL_HOME)/include/nccl.h\n"
        "\t$(if $(filter 1,$(MPI)),test -f $(MPI_HOME)/include/mpi.h,true)\n"
        "\tmkdir -p $(BUILDDIR)\n"
        "\tcp perf.sh $@\n"
        "\tchmod 755 $@\n"
    )


def _behaviour(kernel_release: str) -> dict[str, Mapping[str, str]]:
    """What each stand-in contains, by package name: small files in the real tools' places."""
    cuda_home = f"/usr/local/cuda-{'.'.join(STACK.cuda.split('.')[:2])}"
    nvidia_smi = {
        "/usr/bin/nvidia-smi": NVIDIA_SMI,
        f"{CANNED}/nvidia-smi/query-gpu.csv": nvidia_smi_query(DRIVER),
        f"{CANNED}/nvidia-smi/summary.txt": nvidia_smi_summary(DRIVER),
    }
    persistenced = {
        "/usr/bin/nvidia-persistenced": _script("exit 0\n"),
        "/lib/systemd/system/nvidia-persistenced.service": _unit(
            "NVIDIA Persistence Daemon",
            "/usr/bin/nvidia-persistenced --user nvidia-persistenced --no-persistence-mode",
        ),
    }
    fabricmanager = {
        "/usr/bin/nv-fabricmanager": _script("exit 0\n"),
        "/lib/systemd/system/nvidia-fabricmanager.service": _unit(
            "NVIDIA fabric manager service", "/usr/bin/nv-fabricmanager"
        ),
    }
    return {
        "nvidia-open": {**nvidia_smi, **persistenced},
        "cuda-drivers": {**nvidia_smi, **persistenced},
        "nvidia-fabricmanager": fabricmanager,
        "nvidia-fabricmanager-580": fabricmanager,
        "libnvidia-nscq": {"/usr/lib/x86_64-linux-gnu/libnvidia-nscq.so.2": "stand-in\n"},
        "libnvidia-nscq-580": {"/usr/lib/x86_64-linux-gnu/libnvidia-nscq.so.2": "stand-in\n"},
        "nvidia-imex": {
            "/usr/bin/nvidia-imex": _script("exit 0\n"),
            "/lib/systemd/system/nvidia-imex.service": _unit("NVIDIA IMEX service", "/usr/bin/nvidia-imex"),
        },
        "nvlsm": {"/opt/nvidia/nvlsm/sbin/nvlsm": _script("exit 0\n")},
        "nvidia-utils-580-server": nvidia_smi,
        "nvidia-compute-utils-580-server": persistenced,
        "cuda-toolkit-13-0": {
            f"{cuda_home}/bin/nvcc": _script('echo "Cuda compilation tools, release 13.0"\n'),
        },
        "libnccl2": {"/usr/lib/x86_64-linux-gnu/libnccl.so.2": "stand-in\n"},
        "libnccl-dev": {"/usr/include/nccl.h": "/* stand-in */\n"},
        "libopenmpi-dev": {
            "/usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h": "/* stand-in */\n",
            "/usr/lib/x86_64-linux-gnu/openmpi/lib/libmpi.so": "stand-in\n",
        },
        "libopenmpi3t64": {"/usr/lib/x86_64-linux-gnu/libmpi.so.40": "stand-in\n"},
        "libpmix2t64": {"/usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.so.2": "stand-in\n"},
        "datacenter-gpu-manager-4-core": {
            "/usr/bin/dcgmi": DCGMI,
            "/usr/bin/nv-hostengine": _script("exit 0\n"),
            "/lib/systemd/system/nvidia-dcgm.service": _unit(
                "NVIDIA DCGM service", "/usr/bin/nv-hostengine -n --service-account nvidia-dcgm"
            ),
            f"{CANNED}/dcgmi/diag.txt": dcgmi_diag(),
            f"{CANNED}/dcgmi/diag.rc": "0\n",
        },
        "datacenter-gpu-manager-4-cuda13": {"/usr/share/datacenter-gpu-manager-4/cuda13": "stand-in\n"},
        "datacenter-gpu-manager-exporter": {"/usr/bin/dcgm-exporter": _script('echo "dcgm-exporter"\n')},
        # The package's unit and defaults file, as its .deb ships them (S-UBUNTU-NODE-EXPORTER).
        "prometheus-node-exporter": {
            "/usr/bin/prometheus-node-exporter": _script('echo "node_exporter, version 1.7.0"\n'),
            "/usr/lib/systemd/system/prometheus-node-exporter.service": _unit(
                "Prometheus exporter for machine metrics", "/usr/bin/prometheus-node-exporter $ARGS"
            ),
            "/etc/default/prometheus-node-exporter": 'ARGS=""\n',
        },
        "nvidia-gds-13-0": {"/usr/share/doc/nvidia-gds-13-0/stand-in": "stand-in\n"},
        "nvidia-fs": {"/usr/src/nvidia-fs/dkms.conf": 'PACKAGE_NAME="nvidia-fs"\n'},
        "nccl-gib": {
            "/usr/local/gib/lib64/libnccl-net.so": "stand-in nccl-gib\n",
            "/usr/local/gib/scripts/set_nccl_env.sh": GIB_SET_NCCL_ENV,
        },
        "dmabuf-import-helper": {
            f"/usr/src/dmabuf-import-helper-{TCPXO_HELPER_UPSTREAM}/dkms.conf": (
                f'PACKAGE_NAME="dmabuf-import-helper"\nPACKAGE_VERSION="{TCPXO_HELPER_UPSTREAM}"\n'
                'BUILT_MODULE_NAME[0]="import-helper"\nAUTOINSTALL="yes"\n'
            ),
            f"/usr/src/dmabuf-import-helper-{TCPXO_HELPER_UPSTREAM}/import-helper.c": IMPORT_HELPER_C,
        },
        "docker-ce": {
            "/usr/bin/dockerd": _script("exit 0\n"),
            "/lib/systemd/system/docker.service": _unit(
                "Docker Application Container Engine", "/usr/bin/dockerd"
            ),
        },
        "docker-ce-cli": {"/usr/bin/docker": DOCKER},
        "containerd.io": {"/usr/bin/containerd": _script("exit 0\n")},
        "nvidia-container-toolkit": {"/usr/bin/nvidia-ctk": _script("exit 0\n")},
        "nvidia-container-toolkit-base": {"/usr/bin/nvidia-container-runtime": _script("exit 0\n")},
        "libnvidia-container-tools": {"/usr/bin/nvidia-container-cli": _script("exit 0\n")},
        "libnvidia-container1": {"/usr/lib/x86_64-linux-gnu/libnvidia-container.so.1": "stand-in\n"},
        "nvidia-kernel-common-580-server": {"/lib/firmware/nvidia/580/stand-in": "stand-in\n"},
        "libnvidia-compute-580-server": {"/usr/lib/x86_64-linux-gnu/libcuda.so.1": "stand-in\n"},
        f"lustre-client-modules-{kernel_release}": {
            f"/lib/modules/{kernel_release}/updates/fs/lustre/lustre.ko": "stand-in\n"
        },
    }


def _deb_arch(package: AptPackage) -> str:
    return "all" if package.architectures == ["all"] else "amd64"


def decoy(version: str) -> str:
    """A synthetic version newer than `version` that no pin of the catalog's matches: "580.95.05-1" ->
    "580.95.05+decoy-1", "1.1.0" -> "1.1.0+decoy"."""
    epoch, _, rest = version.rpartition(":")
    upstream, dash, revision = rest.partition("-")
    return f"{epoch + ':' if epoch else ''}{upstream}+decoy{dash}{revision}"


def later(version: str) -> str:
    """A synthetic release after `version`, published to a repository after the node fetched its lists:
    the last upstream component plus one ("2.28.9-1+cuda13.0" -> "2.28.10-1+cuda13.0")."""
    epoch, _, rest = version.rpartition(":")
    upstream, dash, revision = rest.partition("-")
    head, _, last = upstream.rpartition(".")
    return f"{epoch + ':' if epoch else ''}{head}.{int(last) + 1}{dash}{revision}"


def _as_deb(package: AptPackage, version: str, files: Mapping[str, str], relations: Mapping[str, str]) -> Deb:
    def relate(items: Sequence[str]) -> tuple[str, ...]:
        # Exact-version relations among recorded packages follow the stand-in's own version change.
        return tuple(relations.get(item, item) for item in items)

    executables = frozenset(path for path, text in files.items() if text.startswith("#!"))
    return Deb(
        package.name,
        version,
        arch=_deb_arch(package),
        depends=relate(package.depends),
        conflicts=relate(package.conflicts),
        provides=tuple(package.provides),
        files=files,
        executables=executables,
    )


def recorded_debs(
    repository: str, kernel_release: str, *, later_of: frozenset[str] = frozenset()
) -> list[Deb]:
    """The stand-ins of every package the catalog records in `repository`.

    Each pinned package also comes as a `decoy` version (unless a legitimate pin would take it, as
    with the CUDA minor-line metapackages). `later_of` adds the `later` release of those packages.
    """
    behaviour = _behaviour(kernel_release)
    debs: list[Deb] = []
    for package in CATALOG.apt_packages:
        if package.repository != repository or package.version is None:
            continue  # no version is known: such a package is only installed unpinned, never in tests
        files = behaviour.get(package.name, {})
        debs.append(_as_deb(package, package.version, files, {}))
        variants = [] if package.name in MINOR_LINE_PINNED else [decoy]
        if package.name in later_of:
            variants.append(later)
        for make in variants:
            relations = {
                f"{other.name} (= {other.version})": f"{other.name} (= {make(other.version)})"
                for other in CATALOG.apt_packages
                if other.version is not None and other.repository == repository
            }
            debs.append(_as_deb(package, make(package.version), files, relations))
    return debs


GIB_SET_NCCL_ENV = (
    "export NCCL_NET=gIB\n"
    "export NCCL_CROSS_NIC=0\n"
    "export NCCL_NET_GDR_LEVEL=PIX\n"
    "export NCCL_IB_ADAPTIVE_ROUTING=1\n"
    "export NCCL_IB_QPS_PER_CONNECTION=4\n"
    "export NCCL_IB_TC=52\n"
    "export NCCL_IB_FIFO_TC=84\n"
)
# The line the Cluster Toolkit patches for kernels >= 6.13, in the helper's module source.
IMPORT_HELPER_C = (
    "/* clusterfab stand-in for dmabuf-import-helper's import-helper.c */\n"
    "#include <linux/module.h>\n"
    "MODULE_IMPORT_NS(DMA_BUF);\n"
    'MODULE_LICENSE("GPL");\n'
)


def _doca_debs() -> list[Deb]:
    return [
        Deb(
            "doca-ofed",
            f"{DOCA_OFED}-1",
            depends=("libibverbs1",),
            files={"/usr/share/doc/doca-ofed/VERSION": f"{DOCA}\n"},
        )
    ]


def _azure_doca_debs(doca_host: str) -> list[Deb]:
    """DOCA-OFED as Azure's image carries it: doca-host and the doca-ofed it pulled in."""
    return [Deb("doca-host", doca_host), Deb("doca-ofed", AZURE_DOCA_OFED_DEB)]


def _lustre_debs(kernel_release: str) -> list[Deb]:
    return [
        Deb(
            f"lustre-client-modules-{kernel_release}",
            f"{LUSTRE}-1",
            files={f"/lib/modules/{kernel_release}/updates/fs/lustre/lustre.ko": "stand-in\n"},
        )
    ]


def _efa_debs() -> list[Deb]:
    files = {
        "libfabric1-aws": {
            "/opt/amazon/efa/lib/libfabric.so.1": "stand-in libfabric\n",
            "/etc/ld.so.conf.d/000_efa.conf": "/opt/amazon/efa/lib\n",
        },
        "efa-config": {"/etc/security/limits.d/01_efa.conf": "*    hard    memlock    unlimited\n"},
        "libnccl-ofi": {
            "/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu/libnccl-net.so": "stand-in aws-ofi-nccl\n"
        },
    }
    return [Deb(name, version, arch=arch, files=files[name]) for name, version, arch in EFA_DEBS]


def efa_installer_sh(version: str) -> str:
    return _EFA_INSTALLER_SH.replace("@VERSION@", version)


_EFA_INSTALLER_SH = """#!/bin/bash
# clusterfab test stand-in for AWS's efa_installer.sh: same layout, flags and record file.
set -euo pipefail
yes=0
for arg in "$@"; do
  case "$arg" in
    -y|--yes) yes=1 ;;
    --skip-kmod|--skip-limit-conf|--minimal|--no-verify) ;;
    *) echo "efa_installer.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done
if [ "$yes" != 1 ]; then echo "efa_installer.sh: refusing to run without -y" >&2; exit 1; fi
cd "$(dirname "$0")"
. /etc/os-release
dir="DEBS/$(echo "$ID$VERSION_ID" | tr 'a-z' 'A-Z' | tr -d .)/$(uname -m)"
if [ ! -d "$dir" ]; then echo "efa_installer.sh: no packages for $dir" >&2; exit 1; fi
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ./"$dir"/*.deb
mkdir -p /opt/amazon
{
  echo "# EFA installer version: @VERSION@"
  echo "# Debug packages installed: no"
  echo "# Packages installed:"
  for deb in "$dir"/*.deb; do basename "$deb" .deb; done
} > /opt/amazon/efa_installed_packages
echo "$*" >> /var/log/clusterfab-standin-efa-installer.log
echo "EFA installation complete."
"""


# ---------------------------------------------------------------- building


class SigningKey:
    """A throw-away OpenPGP key in its own GnuPG home, for signing the stand-in repositories."""

    def __init__(self, home: Path) -> None:
        self.home = home
        home.mkdir(parents=True, exist_ok=True)
        home.chmod(0o700)
        self._gpg(
            "--quick-gen-key",
            "clusterfab stand-in repositories <standin@clusterfab.invalid>",
            "ed25519",
            "sign",
            "never",
        )

    def armored_public_key(self) -> str:
        return self._gpg("--armor", "--export")

    def fingerprint(self) -> str:
        listing = self._gpg("--with-colons", "--list-keys")
        return next(line.split(":")[9] for line in listing.splitlines() if line.startswith("fpr:"))

    def detach_sign(self, source: Path, dest: Path) -> None:
        self._gpg("--digest-algo", "SHA256", "--detach-sign", "--output", str(dest), str(source))

    def clearsign(self, source: Path, dest: Path) -> None:
        self._gpg("--digest-algo", "SHA256", "--clearsign", "--output", str(dest), str(source))

    def close(self) -> None:
        subprocess.run(
            ["gpgconf", "--homedir", str(self.home), "--kill", "gpg-agent"],
            capture_output=True,
            check=False,
        )

    def _gpg(self, *args: str) -> str:
        argv = ["gpg", "--homedir", str(self.home), "--batch", "--yes", "--pinentry-mode", "loopback"]
        argv += ["--passphrase", "", *args]
        completed = subprocess.run(argv, capture_output=True, text=True, check=False)
        if completed.returncode != 0:
            raise RuntimeError(f"gpg {' '.join(args)} failed: {completed.stderr}")
        return completed.stdout


def build_deb(deb: Deb, out_dir: Path) -> Path:
    """Build ``deb`` into ``out_dir`` with dpkg-deb and return the .deb path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        tree = Path(scratch) / deb.name
        (tree / "DEBIAN").mkdir(parents=True)
        (tree / "DEBIAN/control").write_text(deb.control())
        for path, content in deb.files.items():
            target = tree / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content)
            target.chmod(0o755 if path in deb.executables else 0o644)
        out = out_dir / deb.filename
        completed = subprocess.run(
            ["dpkg-deb", "--root-owner-group", "-Zgzip", "-z1", "--build", str(tree), str(out)],
            capture_output=True,
            text=True,
            check=False,
        )
        if completed.returncode != 0:
            raise RuntimeError(f"dpkg-deb failed for {deb.name}: {completed.stderr}")
    return out


def _file_hashes(path: Path) -> tuple[int, str, str]:
    data = path.read_bytes()
    return len(data), hashlib.md5(data).hexdigest(), hashlib.sha256(data).hexdigest()


def _packages_index(debs: Sequence[tuple[Deb, Path]], base: Path) -> str:
    stanzas = []
    for deb, path in debs:
        size, md5, sha256 = _file_hashes(path)
        filename = path.relative_to(base).as_posix()
        stanzas.append(
            deb.control() + f"Filename: {filename}\nSize: {size}\nMD5sum: {md5}\nSHA256: {sha256}\n"
        )
    return "\n".join(stanzas)


def _release(fields: Mapping[str, str], indexes: Iterable[Path], base: Path) -> str:
    lines = [f"{key}: {value}" for key, value in fields.items()]
    lines.append(f"Date: {formatdate(usegmt=True)}")
    lines.append("SHA256:")
    for index in indexes:
        size, _, sha256 = _file_hashes(index)
        lines.append(f" {sha256} {size:>8d} {index.relative_to(base).as_posix()}")
    return "\n".join(lines) + "\n"


def write_apt_repo(
    dest: Path,
    debs: Sequence[Deb],
    key: SigningKey,
    *,
    suite: str | None,
    arch: str = "amd64",
    component: str = "main",
) -> None:
    """Write a signed apt repository: flat (``suite=None``) or with dists/<suite>/<component>."""
    dest.mkdir(parents=True)
    pool = dest if suite is None else dest / f"pool/{component}"
    pool.mkdir(parents=True, exist_ok=True)
    built = [(deb, build_deb(deb, pool)) for deb in debs]
    index_dir = dest if suite is None else dest / f"dists/{suite}/{component}/binary-{arch}"
    index_dir.mkdir(parents=True, exist_ok=True)
    text = _packages_index(built, dest)
    (index_dir / "Packages").write_text(text)
    (index_dir / "Packages.gz").write_bytes(gzip.compress(text.encode()))
    release_dir = dest if suite is None else dest / f"dists/{suite}"
    fields = {"Origin": "clusterfab-standin", "Label": "clusterfab-standin", "Architectures": arch}
    if suite is not None:
        fields.update({"Suite": suite, "Codename": suite, "Components": component})
    release = release_dir / "Release"
    release.write_text(_release(fields, [index_dir / "Packages", index_dir / "Packages.gz"], release_dir))
    key.clearsign(release, release_dir / "InRelease")


def _tarball(dest: Path, members: Mapping[str, tuple[bytes, int]]) -> str:
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(dest, "w:gz") as archive:
        for name, (data, mode) in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = mode
            archive.addfile(info, io.BytesIO(data))
    return hashlib.sha256(dest.read_bytes()).hexdigest()


def _efa_installer(dest: Path, installer_sh: str) -> str:
    with tempfile.TemporaryDirectory() as scratch:
        members: dict[str, tuple[bytes, int]] = {
            "aws-efa-installer/efa_installer.sh": (installer_sh.encode(), 0o755),
        }
        for deb in _efa_debs():
            path = build_deb(deb, Path(scratch))
            members[f"aws-efa-installer/DEBS/DEBIAN12/x86_64/{deb.filename}"] = (path.read_bytes(), 0o644)
        return _tarball(dest, members)


def _nccl_tests_tarball(dest: Path, version: str) -> str:
    top = f"nccl-tests-{version}"
    return _tarball(
        dest,
        {
            f"{top}/Makefile": (nccl_tests_makefile(version).encode(), 0o644),
            f"{top}/perf.sh": (NCCL_TESTS_PERF.encode(), 0o755),
        },
    )


# The LSB header of GDRCopy's packages/dkms/debian/gdrdrv.init (v2.5.1), which update-rc.d reads.
GDRDRV_INIT = """#!/bin/bash
# clusterfab test stand-in for GDRCopy's gdrdrv init script (its LSB header, no driver).
### BEGIN INIT INFO
# Provides:       gdrcopy
# Required-Start:
# Required-Stop:
# Default-Start: 2 3 4 5
# Default-Stop: 0 1 6
# Description: GDRcopy kernel-mode driver init script
### END INIT INFO
exit 0
"""


def gdrcopy_build_script(version: str) -> str:
    """GDRCopy's packages/build-deb-packages.sh, standing in: it needs nvcc under $CUDA as the real one
    does and writes the four packages, with GDRCopy's own names and relations, to the working directory."""
    lines = [
        "#!/bin/bash",
        "# clusterfab test stand-in for GDRCopy's packages/build-deb-packages.sh: the real packages' names,",
        "# version and relations (packages/*/control), stand-in contents; it fails without $CUDA/bin/nvcc.",
        "set -euo pipefail",
        'test -x "$CUDA/bin/nvcc"',
        'platform=$(. /etc/os-release && echo "${ID^}${VERSION_ID//./_}")',
        "work=$(mktemp -d)",
    ]
    for name, depends, conflicts in GDRCOPY_DEBS:
        control = [f"Package: {name}", f"Version: {version}", "Architecture: amd64"]
        control += ["Maintainer: clusterfab tests <standin@clusterfab.invalid>"]
        if depends:
            control.append(f"Depends: {', '.join(depends)}")
        if conflicts:
            control.append(f"Conflicts: {', '.join(conflicts)}")
        control.append(f"Description: clusterfab test stand-in for {name}")
        suffix = "+cuda13.0" if name == "gdrcopy-tests" else ""
        lines += [
            f'mkdir -p "$work/{name}/DEBIAN"',
            f"cat > \"$work/{name}/DEBIAN/control\" <<'CONTROL'",
            *control,
            "CONTROL",
        ]
        if name == "gdrdrv-dkms":
            lines += [
                f'mkdir -p "$work/{name}/etc/init.d"',
                f"cat > \"$work/{name}/etc/init.d/gdrdrv\" <<'INIT'",
                *GDRDRV_INIT.splitlines(),
                "INIT",
                f'chmod 755 "$work/{name}/etc/init.d/gdrdrv"',
            ]
        lines.append(
            f'dpkg-deb --root-owner-group -Zgzip --build "$work/{name}" '
            f'"{name}_{version}-1_amd64.$platform{suffix}.deb" >/dev/null'
        )
    lines += [f'echo "{version} CUDA=$CUDA" >> {GDRCOPY_BUILD_LOG}', 'rm -rf "$work"', ""]
    return "\n".join(lines)


def _gdrcopy_tarball(dest: Path, version: str) -> str:
    top = f"gdrcopy-{version}"
    return _tarball(
        dest,
        {
            f"{top}/packages/build-deb-packages.sh": (gdrcopy_build_script(version).encode(), 0o755),
            f"{top}/README.md": (b"GDRCopy (clusterfab stand-in)\n", 0o644),
        },
    )


# Stand-in repository directories per recorded repository id, and their suite (None: flat).
REPOSITORIES = {
    "cuda": ("cuda", None),
    "ubuntu": ("ubuntu", "noble-updates"),
    "ubuntu-universe": ("ubuntu-universe", "noble"),
    "ubuntu-updates-universe": ("ubuntu-updates-universe", "noble-updates"),
    "gpudirect-gib-apt": ("gib", "gpudirect-gib-apt"),
    "gpudirect-tcpxo-apt": ("tcpxo", "gpudirect-tcpxo-apt"),
    "docker": ("docker", "noble"),
    "nvidia-container-toolkit": ("nvidia-container-toolkit", None),
}


def _write_recorded_repo(
    dest: Path, repository: str, kernel_release: str, key: SigningKey, **kwargs: object
) -> None:
    directory, suite = REPOSITORIES[repository]
    debs = recorded_debs(repository, kernel_release, **kwargs)  # type: ignore[arg-type]
    arch = "all" if all(d.arch == "all" for d in debs) else "amd64"
    component = "stable" if repository == "docker" else "main"
    write_apt_repo(dest / directory, debs, key, suite=suite, arch=arch, component=component)


def build_standins(dest: Path, kernel_release: str) -> Standins:
    """Build every repository and tarball under ``dest`` (which must not exist)."""
    dest.mkdir(parents=True)
    key = SigningKey(Path(tempfile.mkdtemp(prefix="cfab-gpg-")))
    try:
        (dest / "keys").mkdir()
        (dest / "keys/standin.asc").write_text(key.armored_public_key())
        fingerprint = key.fingerprint()
        for repository in REPOSITORIES:
            _write_recorded_repo(dest, repository, kernel_release, key)
        for stage in range(1, len(LATER_RELEASES) + 1):
            published = frozenset(p for r in LATER_RELEASES[:stage] for p in LATER_PACKAGES[r])
            debs = recorded_debs("cuda", kernel_release, later_of=published)
            write_apt_repo(dest / f"cuda-later-{stage}", debs, key, suite=None)
        write_apt_repo(
            dest / "lustre", _lustre_debs(kernel_release), key, suite=CATALOG.lustre_clients["aws"].suite
        )
        write_apt_repo(dest / "doca", _doca_debs(), key, suite=None)

        # AWS signs the installer tarball (detached <tarball>.sig); the stand-in key plays AWS's.
        efa_sha: dict[str, str] = {}
        for version in (EFA_INSTALLER, EFA_INSTALLER_NEWER):
            efa = dest / f"efa/aws-efa-installer-{version}.tar.gz"
            efa_sha[version] = _efa_installer(efa, efa_installer_sh(version))
            key.detach_sign(efa, efa.with_name(efa.name + ".sig"))
        tampered = dest / EFA_TAMPERED_TARBALL
        _efa_installer(
            tampered,
            efa_installer_sh(EFA_INSTALLER_NEWER).replace(
                "set -euo pipefail\n", "set -euo pipefail\ntouch /tampered\n"
            ),
        )
        genuine = dest / f"efa/aws-efa-installer-{EFA_INSTALLER_NEWER}.tar.gz.sig"
        shutil.copy(genuine, tampered.with_name(tampered.name + ".sig"))
    finally:
        key.close()
        shutil.rmtree(key.home, ignore_errors=True)

    nccl_tests_sha = {
        version: _nccl_tests_tarball(dest / f"nccl-tests/v{version}.tar.gz", version)
        for version in (NCCL_TESTS, NCCL_TESTS_NEWER)
    }
    gdrcopy_sha = _gdrcopy_tarball(dest / f"gdrcopy/v{GDRCOPY}.tar.gz", GDRCOPY)
    _image_debs(dest / "image", kernel_release)
    return Standins(
        root=dest,
        efa_tarball_sha256=efa_sha[EFA_INSTALLER],
        nccl_tests_sha256=nccl_tests_sha,
        gdrcopy_sha256=gdrcopy_sha,
        key_fingerprint=fingerprint,
    )


def _image_debs(dest: Path, kernel_release: str) -> None:
    """What a node image carries before any role runs: the GCP accelerator image's driver packages
    (recorded in the catalog's `ubuntu` repository), a kernel package named after the running kernel
    as Ubuntu names them (a fixture for the kernel hold, not catalog data), and the DOCA-OFED of Azure's
    Ubuntu-HPC image (and of another release of it)."""
    dest.mkdir(parents=True)
    behaviour = _behaviour(kernel_release)
    for package in CATALOG.apt_packages:
        if package.name in IMAGE_DRIVER_PACKAGES and package.version is not None:
            build_deb(
                _as_deb(package, package.version, behaviour.get(package.name, {}), {}), dest / "gcp-driver"
            )
    build_deb(Deb(f"linux-image-{kernel_release}", "1.0-1"), dest / "kernel")
    azure = {"azure-doca": AZURE_DOCA_HOST_DEB, "azure-doca-other": AZURE_OTHER_DOCA_HOST_DEB}
    for name, doca_host in azure.items():
        for deb in _azure_doca_debs(doca_host):
            build_deb(deb, dest / name)


DOCKER = _script('echo "Docker version 28.5.2, build stand-in"\n')


def install_into(standins: Standins, rootfs: Path) -> None:
    """Copy the stand-ins to /srv/clusterfab-standins inside ``rootfs``."""
    shutil.copytree(standins.root, rootfs / MOUNT.lstrip("/"))


def preinstall(rootfs: Path, what: str) -> None:
    """Install the image's own packages into ``rootfs`` as the image would carry them: `gcp-driver`
    (Canonical's driver of the GCP accelerator image), `kernel` (the running kernel's package), `azure-doca`
    (the DOCA-OFED of Azure's Ubuntu-HPC image) or `azure-doca-other` (another DOCA release)."""
    debs = sorted((rootfs / MOUNT.lstrip("/") / "image" / what).glob("*.deb"))
    inside = [f"{MOUNT}/image/{what}/{deb.name}" for deb in debs]
    subprocess.run(["chroot", str(rootfs), "dpkg", "--install", *inside], check=True, capture_output=True)


def publish_later_release(rootfs: Path, release: str) -> None:
    """Make the CUDA repository in ``rootfs`` carry the later ``release`` (and the ones before it).

    The apt source keeps pointing at the same URI, like a real repository gaining a release after the
    node fetched its lists.
    """
    stage = LATER_RELEASES.index(release) + 1
    repo = rootfs / MOUNT.lstrip("/") / "cuda"
    shutil.rmtree(repo)
    shutil.copytree(rootfs / MOUNT.lstrip("/") / f"cuda-later-{stage}", repo)
