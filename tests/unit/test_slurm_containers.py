"""`scheduler.containers: pyxis`: what the stack hands the pyxis and container runtime roles, from the
catalog's pinned archives. The roles themselves build and run in tests/slurm/test_pyxis_lab.py."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import yaml

from clusterfab.catalog.query import load_catalog
from clusterfab.provision.extravars import gpu_node_vars
from clusterfab.scheduler.slurm.hostvars import client_vars, node_vars
from clusterfab.spec.model import LocalScratch
from tests.conftest import REPO
from tests.factories import example_spec

CATALOG = load_catalog()
PINS = CATALOG.slurm.containers
PYXIS_ROLE = REPO / "playbooks" / "roles" / "pyxis"


def _pyxis_keys(variables: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in variables.items() if k.startswith("pyxis_") or k == "clusterfab_pyxis_enabled"}


def test_a_pyxis_node_builds_the_catalogs_archives_and_keeps_containers_on_local_nvme() -> None:
    spec = example_spec("aws-p5-slurm", "prod")
    [group] = spec.node_groups
    assert group.local_scratch.enabled
    assert _pyxis_keys(node_vars(spec, CATALOG.slurm, group, stack="prod")) == {
        "clusterfab_pyxis_enabled": True,
        "pyxis_version": "0.24.0",
        "pyxis_url": "https://github.com/NVIDIA/pyxis/archive/refs/tags/v0.24.0.tar.gz",
        "pyxis_checksum": "sha256:9c4cdb79a67301d8ea05951aa4d2c205f40cf6145e338214b0191add8b36d6c4",
        "pyxis_slurm_version": "23.11.4-1.2ubuntu5",
        "pyxis_slurm_dev_package": "libslurm-dev",
        "pyxis_enroot": True,
        "pyxis_restart_slurmd": True,
        "pyxis_enroot_version": "4.1.2",
        "pyxis_enroot_url": "https://github.com/NVIDIA/enroot/archive/refs/tags/v4.1.2.tar.gz",
        "pyxis_enroot_checksum": "sha256:9f8c589bf2537cf5ac042358c49b3f203b5c8ed8dc646010719eb728d76da4ac",
        "pyxis_enroot_makeself_url": "https://github.com/megastep/makeself/archive/refs/tags/release-2.4.5.tar.gz",
        "pyxis_enroot_makeself_checksum": (
            "sha256:91deafdbfddf130abe67d7546f0c50be6af6711bb1c351b768043bd527bd6e45"
        ),
        "pyxis_enroot_kernel_headers_url": (
            "https://github.com/sabotage-linux/kernel-headers/archive/refs/tags/v4.19.88-1.tar.gz"
        ),
        "pyxis_enroot_kernel_headers_checksum": (
            "sha256:2806e2d689c6affb45ff8761a1011e6ab8a39369a617421fbff9c29f6dbefec6"
        ),
        "pyxis_enroot_data_dir": "/mnt/localssd/enroot/data",
        "pyxis_enroot_cache_dir": "/mnt/localssd/enroot/cache",
    }


def test_without_local_nvme_containers_stay_at_the_roles_default_place() -> None:
    spec = example_spec("aws-p5-slurm", "prod")
    group = replace(spec.node_groups[0], local_scratch=LocalScratch(enabled=False, mount_point="/mnt/x"))
    variables = node_vars(spec, CATALOG.slurm, group, stack="prod")
    assert "pyxis_enroot_data_dir" not in variables
    assert "pyxis_enroot_cache_dir" not in variables


def test_a_login_node_gets_the_plugin_only() -> None:
    variables = _pyxis_keys(client_vars(example_spec("aws-p5-slurm", "prod"), CATALOG.slurm, stack="prod"))
    assert variables == {
        "clusterfab_pyxis_enabled": True,
        "pyxis_version": PINS.pyxis.version,
        "pyxis_url": PINS.pyxis.url,
        "pyxis_checksum": PINS.pyxis.checksum,
        "pyxis_slurm_version": CATALOG.slurm.release.package_version,
        "pyxis_slurm_dev_package": "libslurm-dev",
        "pyxis_enroot": False,
        "pyxis_restart_slurmd": False,
    }


def test_without_containers_no_host_gets_pyxis() -> None:
    spec = example_spec("gcp-a3ultra-roce-lustre", "prod")
    assert spec.scheduler is not None
    assert spec.scheduler.containers == "none"
    assert _pyxis_keys(node_vars(spec, CATALOG.slurm, spec.node_groups[0], stack="prod")) == {}
    assert _pyxis_keys(client_vars(spec, CATALOG.slurm, stack="prod")) == {}


def test_pyxis_nodes_get_the_nvidia_container_cli_without_docker() -> None:
    spec = example_spec("aws-p5-slurm", "prod")
    variables = gpu_node_vars(spec, spec.node_groups[0], CATALOG, [])
    toolkit = CATALOG.apt_package("nvidia-container-toolkit")
    assert toolkit is not None
    runtime = {k: v for k, v in variables.items() if "container_runtime" in k}
    assert runtime == {
        "gpu_node_container_runtime": True,
        "container_runtime_docker": False,
        "container_runtime_nvidia_toolkit_version": toolkit.version,
    }


def test_container_fabrics_keep_docker_and_other_nodes_get_no_runtime() -> None:
    tcpxo = example_spec("gcp-a3mega-tcpxo-filestore")
    variables = gpu_node_vars(tcpxo, tcpxo.node_groups[0], CATALOG, [])
    assert variables["container_runtime_docker"] is True
    assert variables["container_runtime_docker_version"]
    efa = example_spec("aws-p5-efa-fsx")
    assert not any(
        k.startswith("container_runtime") for k in gpu_node_vars(efa, efa.node_groups[0], CATALOG, [])
    )
    assert gpu_node_vars(efa, efa.node_groups[0], CATALOG, [])["gpu_node_container_runtime"] is False


def test_the_roles_default_pyxis_url_is_the_catalogs() -> None:
    """The role's default URL (for a user running it without clusterfab) names the archive the catalog's
    checksum is of."""
    default = yaml.safe_load((PYXIS_ROLE / "defaults" / "main.yml").read_text())["pyxis_url"]
    assert default.replace("{{ pyxis_version }}", PINS.pyxis.version) == PINS.pyxis.url


def test_each_archive_url_names_its_version() -> None:
    for pin in (PINS.pyxis, PINS.enroot, PINS.enroot_makeself, PINS.enroot_kernel_headers):
        assert pin.url.endswith(f"{pin.version}.tar.gz"), pin.name
