"""The playbook variables of the Slurm hosts: the controller (playbooks/slurm_controller.yml), the login
nodes (playbooks/slurm_login.yml) and the GPU nodes (the slurm_node role in gpu_node.yml)."""

from __future__ import annotations

from typing import Any

from clusterfab.catalog.models import SlurmFacts
from clusterfab.scheduler.slurm.render import controller_address, controller_host
from clusterfab.spec import ClusterSpec, Slurm


def munge_secret_name(spec: ClusterSpec, stack: str) -> str:
    """The munge key's secret (AWS Secrets Manager / GCP Secret Manager): one per cluster and stack."""
    return f"clusterfab-{spec.name}-{stack}-munge-key"


def _slurm(spec: ClusterSpec) -> Slurm:
    if spec.scheduler is None:
        raise ValueError(f"{spec.name} has no Slurm scheduler")
    return spec.scheduler


def _munge(spec: ClusterSpec, stack: str, *, generate: bool) -> dict[str, Any]:
    return {
        "munge_key_source": spec.cloud,
        "munge_key_secret": munge_secret_name(spec, stack),
        "munge_key_region": spec.region,
        "munge_key_generate": generate,
    }


def controller_vars(spec: ClusterSpec, facts: SlurmFacts, *, stack: str, files_dir: str) -> dict[str, Any]:
    """Extravars of slurm_controller.yml: the rendered files, the state disk, accounting."""
    slurm = _slurm(spec)
    return {
        **_munge(spec, stack, generate=True),
        "slurm_controller_hostname": controller_host(spec),
        "slurm_controller_config_dir": files_dir,
        "slurm_controller_accounting": slurm.accounting,
        "slurm_controller_state_device_name": "/dev/sdf",
        "slurm_controller_packages": list(facts.release.packages.controller),
    }


def client_vars(spec: ClusterSpec, *, stack: str) -> dict[str, Any]:
    """Extravars of slurm_login.yml and of the slurm_node role: where the configuration comes from."""
    return {
        **_munge(spec, stack, generate=False),
        "clusterfab_slurm_enabled": True,
        "slurm_node_conf_server": f"{controller_address(spec)}:6817",
        "slurm_login_conf_server": f"{controller_address(spec)}:6817",
        "slurm_node_containers": _slurm(spec).containers,
    }
