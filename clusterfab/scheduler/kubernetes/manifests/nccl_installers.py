"""GKE's NCCL network plugin installers: one DaemonSet per fabric whose init containers copy the plugin
(and, for TCPX and TCPXO, its NCCL) into /home/kubernetes/bin on the node, where GKE's GPU containers
find it under /usr/local/nvidia/lib64; a pause container keeps the pod running afterwards.

Each follows container-engine-accelerators' manifest at the pinned commit (the same recipes Cluster
Toolkit's kubectl-apply module applies): gpudirect-tcpxo/nccl-tcpxo-installer.yaml,
gpudirect-tcpx/nccl-tcpx-installer.yaml, gpudirect-rdma/nccl-rdma-installer.yaml (x86) and
nccl-rdma-installer-a4x.yaml (Arm), selecting the node groups on the fabric.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from clusterfab.scheduler.kubernetes.manifests.common import (
    KUBE_SYSTEM,
    host_path,
    metadata,
    node_groups_affinity,
    tolerate_all,
)

TCPXO = "nccl-tcpxo-installer"
TCPX = "nccl-tcpx-installer"
RDMA = "nccl-rdma-installer"
RDMA_ARM64 = "nccl-rdma-installer-arm64"
"""The Arm recipe's DaemonSet is also named nccl-rdma-installer upstream; a cluster may have both."""
GIB_HOST_DIR = "/home/kubernetes/bin/gib"
"""Where the RDMA installers put the gIB plugin's directory on the node (GPU pods mount it)."""

# The TCPXO recipe's pre-installation step, verbatim: it runs in the host's namespaces (nsenter -at 1),
# opens TCP, loads the import-helper module and bind-mounts the NICs' aperture devices for the plugin.
TCPXO_PRE_INSTALLATION = """\
/sbin/iptables -I INPUT -p tcp -m tcp -j ACCEPT && modprobe import-helper
sudo mkdir -p /dev/aperture_devices
while IFS= read -r line; do
  BDF=$( echo "$line" | awk '{print $1}' );
  target_aperture_path="/dev/aperture_devices/$BDF"
  host_aperture_device=$(readlink -f "/sys/bus/pci/devices/$BDF");
  sudo mkdir -p $target_aperture_path;
  sudo umount -R $target_aperture_path;
  sudo mount --bind $host_aperture_device $target_aperture_path;
done < <(lspci -nn -D | grep '1ae0:0084')
if [ -d /dev/aperture_devices ]; then
    chmod -R a+r /dev/aperture_devices/
    chmod a+rw /dev/aperture_devices/*/resource*
fi
"""

TCPXO_INSTALL = """\
set -ex
chmod 755 /scripts/container_entry.sh
/scripts/container_entry.sh install --install-nccl
mkdir -p /usr/local/nvidia/lib64
cp -r /var/lib/tcpxo/lib64/. /usr/local/nvidia/lib64
echo "installation finishes"
"""

TCPX_INSTALL = """\
set -ex
/scripts/container_entry.sh install --install-nccl
mkdir -p /usr/local/nvidia/lib64
cp -r /var/lib/tcpx/lib64/. /usr/local/nvidia/lib64
echo "installation finishes"
"""

RDMA_INSTALL = """\
set -ex
/scripts/container_entry.sh install
cp -r /var/lib/gib/lib64/. /usr/local/home/kubernetes/bin/nvidia/lib64
cp -r /var/lib/gib/. /usr/local/home/kubernetes/bin/gib
echo "installation finishes"
"""


def _installer(name: str, groups: Sequence[str], pod: dict[str, Any]) -> dict[str, Any]:
    """The DaemonSet shape the three recipes share, around their volumes and containers."""
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": metadata(name, KUBE_SYSTEM, {"k8s-app": name}),
        "spec": {
            "selector": {"matchLabels": {"k8s-app": name}},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {
                "metadata": {"labels": {"name": name, "k8s-app": name}},
                "spec": {
                    "priorityClassName": "system-node-critical",
                    "affinity": node_groups_affinity(groups),
                    "tolerations": [tolerate_all()],
                    "hostNetwork": True,
                    "hostPID": True,
                    **pod,
                },
            },
        },
    }


def _pause(image: str) -> list[dict[str, Any]]:
    return [{"image": image, "name": "pause"}]


def _install_container(name: str, image: str, mounts: list[dict[str, Any]], script: str) -> dict[str, Any]:
    return {
        "name": name,
        "image": image,
        "resources": {"requests": {"cpu": "150m"}},
        "securityContext": {"privileged": True},
        "volumeMounts": mounts,
        "command": ["/bin/sh", "-c"],
        "args": [script],
    }


def nccl_tcpxo_installer(
    installer: str, pre_installation: str, pause: str, groups: Sequence[str]
) -> dict[str, Any]:
    pre = {
        "image": pre_installation,
        "name": "pre-installation",
        "securityContext": {"privileged": True},
        "command": ["nsenter", "-at", "1", "--", "sh", "-c", TCPXO_PRE_INSTALLATION],
    }
    mounts = [
        {"name": "var-lib", "mountPath": "/var/lib"},
        {"name": "library-dir-host", "mountPath": "/usr/local"},
    ]
    pod = {
        "volumes": [
            host_path("var-lib", "/var/lib"),
            host_path("tcpxo", "/var/lib/tcpxo"),
            host_path("library-dir-host", "/home/kubernetes/bin"),
        ],
        "initContainers": [pre, _install_container(TCPXO, installer, mounts, TCPXO_INSTALL)],
        "containers": _pause(pause),
    }
    return _installer(TCPXO, groups, pod)


def nccl_tcpx_installer(installer: str, pause: str, groups: Sequence[str]) -> dict[str, Any]:
    mounts = [
        {"name": "var-lib", "mountPath": "/var/lib"},
        {"name": "library-dir-host", "mountPath": "/usr/local"},
    ]
    pod = {
        "volumes": [
            host_path("var-lib", "/var/lib"),
            host_path("tcpx", "/var/lib/tcpx"),
            host_path("library-dir-host", "/home/kubernetes/bin"),
        ],
        "initContainers": [_install_container(TCPX, installer, mounts, TCPX_INSTALL)],
        "containers": _pause(pause),
    }
    return _installer(TCPX, groups, pod)


def nccl_rdma_installer(name: str, installer: str, pause: str, groups: Sequence[str]) -> dict[str, Any]:
    """The gIB plugin installer, named RDMA (x86 recipe) or RDMA_ARM64 (the a4x recipe, whose unused
    `nvidia-dir` volume is left out)."""
    mounts = [
        {"name": "library-dir-host", "mountPath": "/usr/local/home/kubernetes/bin/nvidia/lib64"},
        {"name": "gib", "mountPath": "/usr/local/home/kubernetes/bin/gib"},
    ]
    pod = {
        "volumes": [
            host_path("library-dir-host", "/home/kubernetes/bin/nvidia/lib64", "DirectoryOrCreate"),
            host_path("gib", GIB_HOST_DIR),
        ],
        "initContainers": [_install_container(RDMA, installer, mounts, RDMA_INSTALL)],
        "containers": _pause(pause),
    }
    return _installer(name, groups, pod)
