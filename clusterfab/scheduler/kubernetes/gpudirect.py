"""GPUDirect-TCPXO in a pod: what a pod on a GKE a3-megagpu-8g node needs so that NCCL runs over the
node's GPU networks and not over the pod's one network. One helper decorates a pod template for it; the
researcher's example (examples/kubernetes/research-pytorch-jobset.yaml) and the deep check's pair test
are both what it makes, so the two cannot drift.

What it adds follows Google's recipe at container-engine-accelerators commit 992db812 (2026-06-11),
gpudirect-tcpxo/nccl-test-latest.yaml and README.md (release of Jan 9, 2026: installer v1.0.15, RxDM
v1.0.21), and Cluster Toolkit's gpu-direct-workload/scripts/enable-tcpxo-in-workload.py (commit 10470803):
- GKE's multi-network annotations: `eth0` on the pod network, then one interface per GPU network (the
  Network objects `vpc1`...`vpcN` the cluster's program creates, gpu_network);
- the receive data path manager (RxDM) `tcpxo-daemon` as a native sidecar (best-practice.md, "Automatic
  Sidecar Termination"), whose GPU devices GKE's NRI device injector puts in by the
  `devices.gke.io/container.tcpxo-daemon` annotation;
- in each GPU container the host's driver directory at /usr/local/nvidia (where the installer put the
  FasTrak plugin, its NCCL and nccl-env-profile.sh), the LLCM aperture devices, and `NCCL_LIB_DIR`; the
  container's command must `source ${NCCL_LIB_DIR}/nccl-env-profile.sh` (PROFILE) before NCCL starts.

GKE's RDMA (gIB) in a pod, for the a3-ultragpu-8g, a4-highgpu-8g and a4x-highgpu-4g node groups, is a
second helper, rdma_pod, after Google's recipes: Cluster Toolkit's examples/gke-a3-ultragpu and
examples/gke-a4 nccl-jobset-example.yaml (commit 10470803) and container-engine-accelerators
gpudirect-rdma/nccl-test.yaml and nccl-test-imex-a4x.yaml (commit 992db812):
- the multi-network annotations: `eth0` on the pod network, then `eth2`... on the Network objects
  `rdma-0`... of the node's RDMA subnets (rdma_network; the cluster's program creates them);
- in each GPU container the host's driver directory at /usr/local/nvidia and the gIB directory the
  nccl-rdma-installer filled at /usr/local/gib; the container's command must run GIB_PROFILE (the plugin's
  libraries first on LD_LIBRARY_PATH, then `source /usr/local/gib/scripts/set_nccl_env.sh`) before NCCL
  starts. No receive daemon, no extra devices: GKE hands the RDMA NICs to the pod with its networks.

GPUDirect-TCPX in a pod, for the a3-highgpu-8g node groups, is a third helper, tcpx_pod, after Google's
recipe at container-engine-accelerators commit 992db812, gpudirect-tcpx/nccl-test-latest.yaml and
nccl-config.yaml, and Cluster Toolkit's gpu-direct-workload/scripts/enable-tcpx-in-workload.py (commit
10470803):
- the multi-network annotations as on TCPXO (`eth1`... on `vpc1`..., gpu_network);
- the receive daemon `tcpx-daemon` (tcpgpudmarxd) as a native sidecar, its GPU devices put in by the
  `devices.gke.io/container.tcpx-daemon` annotation; it serves the plugin over a unix socket in an
  emptyDir, at /run/tcpx in the daemon and at /tmp in the GPU containers, where the plugin looks for it
  by default (nccl-plugin-gpudirecttcpx scripts/unix_client_prefix_selection.sh, commit 91e86936);
- in each GPU container the host's driver libraries at NCCL_LIB_DIR (where the nccl-tcpx-installer put
  the plugin and its NCCL), and TCPX_NCCL_ENV. There is no profile to source: the recipe passes NCCL's
  settings in the environment.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

TCPXO = "gpudirect-tcpxo"
"""The fabric's name in the blueprint and the catalog."""
DAEMON = "tcpxo-daemon"
NCCL_LIB_DIR = "/usr/local/nvidia/lib64"
PROFILE = "source ${NCCL_LIB_DIR}/nccl-env-profile.sh"
"""The line a GPU container's shell runs before NCCL starts. The profile (nccl-plugin-gpudirect-tcpxo
tcpxo_scripts/nccl-env-profile.sh, commit 8f816be3) finds the pod's NICs, prepends NCCL_LIB_DIR to
LD_LIBRARY_PATH and exports the NCCL settings, `NCCL_DEBUG=WARN` among them."""
NET_NAME = "FasTrak"
"""The name NCCL gives the TCPXO network (`NCCL INFO Using network FasTrak`): NCCL prints its net plugin's
name (NVIDIA/nccl src/init.cc, `"Using network %s", comm->ncclNet->name`; a v7 plugin's name as it is,
src/plugin/net/net_v7.cc), and the TCPXO plugin's ncclNetPlugin_v7 is named "FasTrak"
(nccl-plugin-gpudirect-tcpxo tcpdirect_plugin/fastrak_offload/fastrak_plugin.cc, commit 0906f674)."""
DEVICES_ANNOTATION = f"devices.gke.io/container.{DAEMON}"
INTERFACES_ANNOTATION = "networking.gke.io/interfaces"
DEFAULT_INTERFACE_ANNOTATION = "networking.gke.io/default-interface"
DRIVER_VOLUME = "nvidia-install-dir-host"
APERTURE = "/dev/aperture_devices"
RXDM_SCRIPT = (
    "set -ex\nchmod 755 /fts/entrypoint_rxdm_container.sh\n/fts/entrypoint_rxdm_container.sh --num_hops=2\n"
)
"""RxDM's start as nccl-test-latest.yaml runs v1.0.21: `--num_nics` has no effect since v1.0.20 and
`--uid= --alsologtostderr` are obsolete since v1.0.18 (README.md, releases of Nov 19 and Aug 21, 2025)."""


RDMA = "rdma"
"""GKE's RDMA fabric's name in the blueprint and the catalog."""
GIB_DIR = "/usr/local/gib"
"""Where a pod sees the gIB directory (the installer's /var/lib/gib: lib64, scripts, configs)."""
GIB_PROFILE = (
    f"export LD_LIBRARY_PATH={GIB_DIR}/lib64:/usr/local/nvidia/lib64${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}\n"
    f"source {GIB_DIR}/scripts/set_nccl_env.sh"
)
"""The lines a GPU container's shell runs before NCCL starts on RDMA. Google's workload manifest puts
/usr/local/gib/lib64 and /usr/local/nvidia/lib64 on LD_LIBRARY_PATH, in that order ("Collect and
understand NCCL/gIB logs for troubleshooting", https://docs.cloud.google.com/ai-hypercomputer/docs/nccl/
collect-and-understand, "Check GKE workload manifest"; last updated 2026-04-06, read 2026-11-29); the
shell puts them before the image's own path rather than replacing it (NVIDIA's PyTorch image keeps its
own libraries there), as Cluster Toolkit's a3ultra-slurm-blueprint.yaml does. The sourced script sets the
plugin's NCCL settings ("Run NCCL on Compute Engine instances", https://docs.cloud.google.com/
ai-hypercomputer/docs/nccl/test-vms, "Enable NCCL/gIB", last updated 2026-04-06). NCCL_NET is not forced
to gIB: without the plugin NCCL falls back to another network ("libibverbs cannot load the provider
config" on the first page: "NCCL falls back to using TCP") and says which, and the check reports the
setup instead of failing nodes."""
GIB_NET_NAME = "gIB"
"""The name NCCL gives the gIB network (`NCCL INFO Using network gIB`): NCCL prints its net plugin's name
(NVIDIA/nccl src/init.cc, `"Using network %s", comm->ncclNet->name`), and Google's pages give the line
a loaded gIB plugin makes NCCL print, `NCCL INFO Using network gIB` ("Collect and understand NCCL/gIB
logs", "Network plugin (libnccl-net.so)"; "Run NCCL on Compute Engine instances", "Enable NCCL/gIB"),
against `Using network Socket` or `Using network IB` when it is not loaded. The recipes select it by
the same name (`export NCCL_NET=gIB`)."""
FIRST_RDMA_INTERFACE = 2
"""The pod's first RDMA interface is `eth2`: the recipes leave `eth1` (the node's second gVNIC) out."""


TCPX = "gpudirect-tcpx"
"""GPUDirect-TCPX's name in the blueprint and the catalog."""
TCPX_DAEMON = "tcpx-daemon"
TCPX_SOCKET_VOLUME = "tcpx-socket"
TCPX_LIBRARIES_VOLUME = "libraries"
TCPX_NET_NAME = "GPUDirectTCPX_v7"
"""The name NCCL gives the TCPX network (`NCCL INFO Using network GPUDirectTCPX_v7`): NCCL prints its
net plugin's name (see NET_NAME), and the TCPX plugin's only table, ncclNetPlugin_v7, is named
"GPUDirectTCPX_v7" (nccl-plugin-gpudirecttcpx src/nccl_plugin.cc, commit 4b8ea7f2)."""
TCPX_DAEMON_COMMAND = (
    "/tcpgpudmarxd/build/app/tcpgpudmarxd", "--gpu_nic_preset", "a3vm", "--gpu_shmem_type", "fd",
    "--uds_path", "/run/tcpx", "--setup_param", '\\"--verbose 128 2 0 \\"',
)  # fmt: skip
"""The daemon's command as nccl-test-latest.yaml gives it, the last argument's backslashes and quotes
included (the manifest's plain YAML scalar keeps them)."""
TCPX_NCCL_ENV = (
    ("NCCL_SOCKET_IFNAME", "eth0"),
    ("NCCL_ALGO", "Ring,Tree"),
    ("NCCL_PROTO", "Simple"),
    ("NCCL_CROSS_NIC", "0"),
    ("NCCL_NET_GDR_LEVEL", "PIX"),
    ("NCCL_P2P_PXN_LEVEL", "0"),
    ("NCCL_GPUDIRECTTCPX_SOCKET_IFNAME", "eth1,eth2,eth3,eth4"),
    ("NCCL_GPUDIRECTTCPX_CTRL_DEV", "eth0"),
    ("NCCL_DYNAMIC_CHUNK_SIZE", "524288"),
    ("NCCL_P2P_NET_CHUNKSIZE", "524288"),
    ("NCCL_P2P_PCI_CHUNKSIZE", "524288"),
    ("NCCL_P2P_NVL_CHUNKSIZE", "1048576"),
    ("NCCL_BUFFSIZE", "4194304"),
    ("NCCL_NSOCKS_PERTHREAD", "4"),
    ("NCCL_SOCKET_NTHREADS", "1"),
    ("NCCL_GPUDIRECTTCPX_TX_BINDINGS",
     "eth1:8-21,112-125;eth2:8-21,112-125;eth3:60-73,164-177;eth4:60-73,164-177"),
    ("NCCL_GPUDIRECTTCPX_RX_BINDINGS",
     "eth1:22-35,126-139;eth2:22-35,126-139;eth3:74-87,178-191;eth4:74-87,178-191"),
    ("NCCL_GPUDIRECTTCPX_PROGRAM_FLOW_STEERING_WAIT_MICROS", "500000"),
)  # fmt: skip
"""NCCL's settings for TCPX on an a3-highgpu-8g node, those container-engine-accelerators
gpudirect-tcpx/nccl-config.yaml (run-nccl.sh) passes its test, in its order: the control traffic on
eth0, the data on the 4 GPU NICs eth1-eth4, and the plugin's threads bound to the cores of each NIC's
NUMA node (the machine's; TCPX runs on no other machine type). The recipe's LD_LIBRARY_PATH is set by
tcpx_pod, its NCCL_DEBUG by the check."""


def gpu_network(index: int) -> str:
    """The Network object of a node's GPU NIC `index` (from 0): `vpc1`, `vpc2`..., the names GKE's and
    Cluster Toolkit's recipes give them; the cluster's program creates them under these names."""
    return f"vpc{index + 1}"


def rdma_network(index: int) -> str:
    """The Network object of a node's RDMA subnet `index` (from 0): `rdma-0`, `rdma-1`..., the names
    GKE's and Cluster Toolkit's recipes give them; the cluster's program creates them under these names."""
    return f"rdma-{index}"


@dataclass(frozen=True)
class Tcpxo:
    """What a TCPXO pod of a node group needs from the cluster."""

    networks: tuple[str, ...]
    """The Network objects of the node's GPU NICs, in NIC order (eth1, eth2...)."""
    daemon_image: str
    """RxDM's image (software.yaml: nccl-tcpxo-installer, image `rxdm`)."""
    host_driver: str
    """The host's NVIDIA directory, which the installer filled (GKE: /home/kubernetes/bin/nvidia)."""


def tcpxo_pod(
    template: Mapping[str, Any], tcpxo: Tcpxo, gpus: int, containers: Sequence[str]
) -> dict[str, Any]:
    """`template` (a pod template: metadata and spec) with TCPXO for a node of `gpus` GPUs: the networks'
    and devices' annotations, RxDM as the first init container (a sidecar), its volumes after the pod's
    own, and in each of `containers` (the GPU containers, by name) NCCL's environment and mounts after
    the container's own."""
    pod = copy.deepcopy(dict(template))
    metadata = pod.setdefault("metadata", {})
    metadata["annotations"] = {**metadata.get("annotations", {}), **_annotations(tcpxo.networks, gpus)}
    spec = pod["spec"]
    spec["initContainers"] = [_daemon(tcpxo.daemon_image), *spec.get("initContainers", [])]
    spec["volumes"] = [
        *spec.get("volumes", []),
        {"name": DRIVER_VOLUME, "hostPath": {"path": tcpxo.host_driver}},
        {"name": "sys", "hostPath": {"path": "/sys"}},
        {"name": "proc-sys", "hostPath": {"path": "/proc/sys"}},
        {"name": "aperture-devices", "hostPath": {"path": APERTURE}},
    ]
    for container in _containers(spec, containers):
        container["env"] = [
            *container.get("env", []),
            {"name": "NCCL_LIB_DIR", "value": NCCL_LIB_DIR},
            {"name": "LD_LIBRARY_PATH", "value": NCCL_LIB_DIR},
            {"name": "NCCL_FASTRAK_LLCM_DEVICE_DIRECTORY", "value": APERTURE},
        ]
        container["volumeMounts"] = [
            *container.get("volumeMounts", []),
            {"name": DRIVER_VOLUME, "mountPath": "/usr/local/nvidia"},
            {"name": "aperture-devices", "mountPath": APERTURE},
        ]
    return pod


def _annotations(networks: Sequence[str], gpus: int) -> dict[str, str]:
    devices = [f"/dev/nvidia{i}" for i in range(gpus)]
    devices += ["/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/dmabuf_import_helper"]
    return {DEVICES_ANNOTATION: "".join(f"- path: {d}\n" for d in devices), **_interfaces(networks, 1)}


def _interfaces(networks: Sequence[str], first: int) -> dict[str, str]:
    """GKE's multi-network annotations: `eth0` on the pod network, `eth<first>`... on `networks`."""
    interfaces = [{"interfaceName": "eth0", "network": "default"}] + [
        {"interfaceName": f"eth{i}", "network": name} for i, name in enumerate(networks, start=first)
    ]
    lines = ",\n".join("  " + json.dumps(i, separators=(",", ":")) for i in interfaces)
    return {DEFAULT_INTERFACE_ANNOTATION: "eth0", INTERFACES_ANNOTATION: f"[\n{lines}\n]\n"}


@dataclass(frozen=True)
class Tcpx:
    """What a TCPX pod of a node group needs from the cluster."""

    networks: tuple[str, ...]
    """The Network objects of the node's GPU NICs, in NIC order (eth1, eth2...)."""
    daemon_image: str
    """The receive daemon's image (software.yaml: nccl-tcpx-installer, image `rxdm`)."""
    host_driver: str
    """The host's NVIDIA directory, whose lib64 the installer filled (GKE: /home/kubernetes/bin/nvidia)."""


def tcpx_pod(template: Mapping[str, Any], tcpx: Tcpx, gpus: int, containers: Sequence[str]) -> dict[str, Any]:
    """`template` (a pod template: metadata and spec) with TCPX for a node of `gpus` GPUs: the networks'
    and devices' annotations, the receive daemon as the first init container (a sidecar), its volumes
    after the pod's own, and in each of `containers` (the GPU containers, by name) NCCL's environment
    and mounts after the container's own."""
    pod = copy.deepcopy(dict(template))
    metadata = pod.setdefault("metadata", {})
    devices = [f"/dev/nvidia{i}" for i in range(gpus)] + ["/dev/nvidiactl", "/dev/nvidia-uvm"]
    annotations = {
        f"devices.gke.io/container.{TCPX_DAEMON}": "".join(f"- path: {d}\n" for d in devices),
        **_interfaces(tcpx.networks, 1),
    }
    metadata["annotations"] = {**metadata.get("annotations", {}), **annotations}
    spec = pod["spec"]
    spec["initContainers"] = [_tcpx_daemon(tcpx.daemon_image), *spec.get("initContainers", [])]
    spec["volumes"] = [
        *spec.get("volumes", []),
        {"name": TCPX_LIBRARIES_VOLUME, "hostPath": {"path": f"{tcpx.host_driver}/lib64"}},
        # The socket is the pod's own: Cluster Toolkit's script gives it an emptyDir, not a host directory.
        {"name": TCPX_SOCKET_VOLUME, "emptyDir": {}},
        {"name": "sys", "hostPath": {"path": "/sys"}},
        {"name": "proc-sys", "hostPath": {"path": "/proc/sys"}},
    ]
    for container in _containers(spec, containers):
        container["env"] = [
            *container.get("env", []),
            {"name": "LD_LIBRARY_PATH", "value": NCCL_LIB_DIR},
            *({"name": name, "value": value} for name, value in TCPX_NCCL_ENV),
        ]
        container["volumeMounts"] = [
            *container.get("volumeMounts", []),
            {"name": TCPX_SOCKET_VOLUME, "mountPath": "/tmp"},
            {"name": TCPX_LIBRARIES_VOLUME, "mountPath": NCCL_LIB_DIR},
        ]
    return pod


def _tcpx_daemon(image: str) -> dict[str, Any]:
    return {
        "name": TCPX_DAEMON,
        "image": image,
        # A sidecar (the recipe's is a plain container): it starts before the GPU containers and ends when
        # they have, so the Job completes.
        "restartPolicy": "Always",
        "command": list(TCPX_DAEMON_COMMAND),
        "securityContext": {"capabilities": {"add": ["NET_ADMIN"]}},
        "env": [{"name": "LD_LIBRARY_PATH", "value": NCCL_LIB_DIR}],
        "volumeMounts": [
            {"name": TCPX_LIBRARIES_VOLUME, "mountPath": NCCL_LIB_DIR},
            {"name": TCPX_SOCKET_VOLUME, "mountPath": "/run/tcpx"},
            {"name": "sys", "mountPath": "/hostsysfs"},
            {"name": "proc-sys", "mountPath": "/hostprocsysfs"},
        ],
    }


@dataclass(frozen=True)
class Rdma:
    """What an RDMA (gIB) pod of a node group needs from the cluster."""

    networks: tuple[str, ...]
    """The Network objects of the node's RDMA subnets, in NIC order."""
    host_driver: str
    """The host's NVIDIA directory (GKE: /home/kubernetes/bin/nvidia)."""
    host_gib: str
    """The host's gIB directory, which the nccl-rdma-installer filled (GKE: /home/kubernetes/bin/gib)."""


def rdma_pod(template: Mapping[str, Any], rdma: Rdma, containers: Sequence[str]) -> dict[str, Any]:
    """`template` (a pod template: metadata and spec) with GKE's RDMA: the networks' annotations, the
    driver's and gIB's host directories after the pod's own volumes, and in each of `containers` (the GPU
    containers, by name) their mounts after the container's own. The containers' commands must run
    GIB_PROFILE before NCCL starts."""
    pod = copy.deepcopy(dict(template))
    metadata = pod.setdefault("metadata", {})
    annotations = _interfaces(rdma.networks, FIRST_RDMA_INTERFACE)
    metadata["annotations"] = {**metadata.get("annotations", {}), **annotations}
    spec = pod["spec"]
    spec["volumes"] = [
        *spec.get("volumes", []),
        {"name": "nvidia", "hostPath": {"path": rdma.host_driver}},
        {"name": "gib", "hostPath": {"path": rdma.host_gib}},
    ]
    for container in _containers(spec, containers):
        container["volumeMounts"] = [
            *container.get("volumeMounts", []),
            # Read-only: the pod only loads the driver's and the plugin's libraries and reads their settings.
            {"name": "nvidia", "mountPath": "/usr/local/nvidia", "readOnly": True},
            {"name": "gib", "mountPath": GIB_DIR, "readOnly": True},
        ]
    return pod


def _containers(spec: Mapping[str, Any], names: Sequence[str]) -> list[dict[str, Any]]:
    """The pod's containers named `names`; ValueError when one is missing."""
    missing = set(names) - {c["name"] for c in spec["containers"]}
    if missing:
        raise ValueError(f"the pod has no container {', '.join(sorted(missing))}")
    return [c for c in spec["containers"] if c["name"] in names]


def _daemon(image: str) -> dict[str, Any]:
    return {
        "name": DAEMON,
        "image": image,
        # A sidecar: it starts before the GPU containers and ends when they have, so the Job completes.
        "restartPolicy": "Always",
        "command": ["/bin/sh", "-c"],
        "args": [RXDM_SCRIPT],
        "securityContext": {"capabilities": {"add": ["NET_ADMIN", "NET_BIND_SERVICE"]}},
        "env": [{"name": "LD_LIBRARY_PATH", "value": NCCL_LIB_DIR}],
        "volumeMounts": [
            {"name": DRIVER_VOLUME, "mountPath": "/usr/local/nvidia"},
            {"name": "sys", "mountPath": "/hostsysfs"},
            {"name": "proc-sys", "mountPath": "/hostprocsysfs"},
        ],
    }
