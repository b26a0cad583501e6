"""What brings NVLink up, per GPU generation, for the nodes the two full variants do not cover: HGX
B200 (NVLink5: Fabric Manager with the NVLink subnet manager) and GB200 NVL72 (IMEX, no Fabric
Manager), each with the extravars clusterfab renders for the machine type, run by tags into its own
root file system, twice.
"""

from __future__ import annotations

import ipaddress
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import chroot_standins as standins
import chroot_variants as variants
import pytest
from chroot_runs import TIMINGS, run_in_chroot

from clusterfab.provision.runner import PlaybookResult

pytestmark = pytest.mark.ansible


@dataclass
class NvlinkNode:
    rootfs: Path
    extravars: dict[str, object]
    tags: list[str]
    first: PlaybookResult
    second: PlaybookResult

    def path(self, inside: str) -> Path:
        return self.rootfs / inside.lstrip("/")

    def output(self, *argv: str) -> str:
        return subprocess.run(
            ["chroot", str(self.rootfs), *argv], capture_output=True, text=True, check=True
        ).stdout

    def versions(self, *packages: str) -> dict[str, str]:
        listing = self.output("dpkg-query", "-W", "-f", "${Package} ${Version}\n", *packages)
        return dict(line.split(" ", 1) for line in listing.splitlines())


def _apply(name: str, rootfs: Path, extravars: dict[str, object], tags: list[str]) -> NvlinkNode:
    first = run_in_chroot("gpu_node.yml", rootfs, extravars, tags=tags)
    assert first.succeeded, first.failed_tasks
    second = run_in_chroot("gpu_node.yml", rootfs, extravars, tags=tags)
    TIMINGS[f"{name}_first_run_s"] = round(first.duration_s, 1)
    TIMINGS[f"{name}_second_run_s"] = round(second.duration_s, 1)
    return NvlinkNode(rootfs, extravars, tags, first, second)


@pytest.fixture(scope="module")
def b200_node(fresh_rootfs: Callable[[str], Path], built_standins: standins.Standins) -> NvlinkNode:
    extravars = variants.b200_p6(built_standins)
    return _apply("b200_p6", fresh_rootfs("b200"), extravars, ["nvidia_driver", "nvidia_fabricmanager"])


@pytest.fixture(scope="module")
def gb200_node(fresh_rootfs: Callable[[str], Path], built_standins: standins.Standins) -> NvlinkNode:
    extravars = variants.gb200_p6e(built_standins)
    return _apply(
        "gb200_p6e",
        fresh_rootfs("gb200"),
        extravars,
        ["nvidia_driver", "nvidia_fabricmanager", "nvidia_imex"],
    )


@pytest.mark.parametrize("fixture", ["b200_node", "gb200_node"])
def test_second_run_changes_nothing(fixture: str, request: pytest.FixtureRequest) -> None:
    node: NvlinkNode = request.getfixturevalue(fixture)
    assert node.first.hosts["node"].changed > 0
    assert node.second.succeeded, node.second.failed_tasks
    assert node.second.hosts["node"].changed == 0


def test_b200_runs_fabric_manager_with_the_nvlink_subnet_manager(b200_node: NvlinkNode) -> None:
    assert b200_node.extravars["gpu_node_nvlink_services"] == ["fabric_manager", "nvlsm"]
    assert b200_node.versions("nvidia-fabricmanager", "libnvidia-nscq", "nvlsm") == {
        "nvidia-fabricmanager": standins.DRIVER_DEB,
        "libnvidia-nscq": standins.DRIVER_DEB,
        "nvlsm": "2025.06.10-1",
    }
    # infiniband-diags is the distribution's own package.
    assert (
        b200_node.output("dpkg-query", "-W", "-f", "${Status}", "infiniband-diags") == "install ok installed"
    )
    assert {"nvidia-fabricmanager", "libnvidia-nscq", "nvlsm"} <= set(
        b200_node.output("apt-mark", "showhold").split()
    )
    assert b200_node.path("/etc/modules-load.d/clusterfab-nvlsm.conf").read_text() == "ib_umad\n"
    link = b200_node.path("/etc/systemd/system/multi-user.target.wants/nvidia-fabricmanager.service")
    assert str(link.readlink()) == "/lib/systemd/system/nvidia-fabricmanager.service"


def test_gb200_runs_imex_and_no_fabric_manager(gb200_node: NvlinkNode) -> None:
    assert gb200_node.extravars["gpu_node_nvlink_services"] == ["imex"]
    assert gb200_node.versions("nvidia-imex") == {"nvidia-imex": standins.DRIVER_DEB}
    assert "nvidia-imex" in gb200_node.output("apt-mark", "showhold").split()
    listing = gb200_node.output("dpkg-query", "-W", "-f", "${Package}\n")
    assert "nvidia-fabricmanager" not in listing.split()
    # No addresses known yet: the domain is this node alone.
    [address] = gb200_node.path("/etc/nvidia-imex/nodes_config.cfg").read_text().splitlines()
    assert ipaddress.ip_address(address)
    link = gb200_node.path("/etc/systemd/system/multi-user.target.wants/nvidia-imex.service")
    assert str(link.readlink()) == "/lib/systemd/system/nvidia-imex.service"


def test_imex_lists_the_domain_it_is_given(gb200_node: NvlinkNode) -> None:
    domain = ["10.0.1.10", "10.0.1.11", "10.0.1.12"]
    result = run_in_chroot(
        "gpu_node.yml",
        gb200_node.rootfs,
        {**gb200_node.extravars, "nvidia_imex_nodes": domain},
        tags=["nvidia_imex"],
    )
    assert result.succeeded, result.failed_tasks
    assert gb200_node.path("/etc/nvidia-imex/nodes_config.cfg").read_text() == "\n".join(domain) + "\n"
