"""The roles' contract: argument_specs, defaults, internal vars, templates and documentation agree.

The Python side renders extravars against meta/argument_specs.yml, so a variable that exists in
defaults but not in the spec (or with another default) is a contract bug even if Ansible runs fine.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from chroot_testbed import PLAYBOOKS_DIR

ROLES_DIR = PLAYBOOKS_DIR / "roles"
EXPECTED_ROLES = [
    "alertmanager",
    "container_runtime",
    "cuda_toolkit",
    "dcgm",
    "efa",
    "gdrcopy",
    "gpu_healthcheck",
    "gpudirect_storage",
    "gpudirect_tcpx",
    "gpudirect_tcpxo",
    "grafana",
    "infiniband",
    "local_scratch",
    "metadata_guard",
    "munge",
    "nccl",
    "nccl_tests",
    "node_tuning",
    "nvidia_driver",
    "nvidia_fabricmanager",
    "nvidia_imex",
    "prometheus",
    "pyxis",
    "rdma_gib",
    "slurm_controller",
    "slurm_login",
    "slurm_node",
    "slurm_users",
    "storage_mounts",
]
MANAGED_HEADERS = ("{{ ansible_managed | comment }}", "{{ ansible_managed | comment('c') }}")


def load(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def spec_options(role: str) -> dict[str, dict[str, Any]]:
    options: dict[str, dict[str, Any]] = load(ROLES_DIR / role / "meta/argument_specs.yml")["argument_specs"][
        "main"
    ]["options"]
    return options


def test_the_role_set_is_complete() -> None:
    assert sorted(path.name for path in ROLES_DIR.iterdir() if path.is_dir()) == EXPECTED_ROLES


@pytest.mark.parametrize("role", EXPECTED_ROLES)
def test_role_layout(role: str) -> None:
    for required in (
        "README.md",
        "meta/main.yml",
        "meta/argument_specs.yml",
        "defaults/main.yml",
        "vars/main.yml",
        "tasks/main.yml",
    ):
        assert (ROLES_DIR / role / required).is_file(), f"{role} lacks {required}"
    assert load(ROLES_DIR / role / "meta/main.yml")["dependencies"] == []


@pytest.mark.parametrize("role", EXPECTED_ROLES)
def test_argument_specs_match_defaults(role: str) -> None:
    options = spec_options(role)
    defaults = load(ROLES_DIR / role / "defaults/main.yml") or {}
    required = {name for name, spec in options.items() if spec.get("required")}
    assert set(defaults) == set(options) - required
    for name, spec in options.items():
        assert name.startswith(f"{role}_"), name
        assert spec.get("type"), f"{name} has no type"
        assert spec.get("description"), f"{name} has no description"
        if name in required:
            assert "default" not in spec, f"required {name} also has a default"
            continue
        assert spec["default"] == defaults[name], name
        if "choices" in spec:
            values = spec["default"] if spec["type"] == "list" else [spec["default"]]
            assert set(values) <= set(spec["choices"]), name


@pytest.mark.parametrize("role", EXPECTED_ROLES)
def test_defaults_comment_every_variable(role: str) -> None:
    lines = (ROLES_DIR / role / "defaults/main.yml").read_text().splitlines()
    for index, line in enumerate(lines):
        if re.match(r"^[a-z_]+:", line):
            assert lines[index - 1].startswith("# "), f"{line} has no comment line above it"
    # Required inputs have no default but are still listed, commented out.
    for name, spec in spec_options(role).items():
        if spec.get("required"):
            assert f"# {name}:" in lines


@pytest.mark.parametrize("role", EXPECTED_ROLES)
def test_internal_variables_are_double_underscored(role: str) -> None:
    for vars_file in sorted((ROLES_DIR / role / "vars").glob("*.yml")):
        for name in load(vars_file) or {}:
            assert name.startswith(f"__{role}_"), f"{vars_file.name}: {name}"


@pytest.mark.parametrize("role", EXPECTED_ROLES)
def test_tasks_start_by_loading_os_variables(role: str) -> None:
    first = load(ROLES_DIR / role / "tasks/main.yml")[0]
    assert first["name"] == "Load OS-specific variables"
    assert "ansible.builtin.first_found" in first["ansible.builtin.include_vars"]
    [lookup] = first["vars"].values()
    assert lookup["files"] == [
        "{{ ansible_facts['distribution'] }}_{{ ansible_facts['distribution_major_version'] }}.yml",
        "{{ ansible_facts['distribution'] }}.yml",
        "{{ ansible_facts['os_family'] }}.yml",
        "main.yml",
    ]


@pytest.mark.parametrize("role", EXPECTED_ROLES)
def test_templates_start_with_the_managed_header(role: str) -> None:
    for template in sorted((ROLES_DIR / role / "templates").glob("*.j2")):
        lines = template.read_text().splitlines()
        header = lines[1] if lines[0].startswith("#!") else lines[0]
        assert header in MANAGED_HEADERS, template.name


@pytest.mark.parametrize("role", EXPECTED_ROLES)
def test_role_readme_documents_every_option(role: str) -> None:
    readme = (ROLES_DIR / role / "README.md").read_text()
    missing = [name for name in spec_options(role) if f"`{name}`" not in readme]
    assert missing == []


def test_playbook_readme_documents_the_whole_contract() -> None:
    readme = (PLAYBOOKS_DIR / "README.md").read_text()
    playbook_vars = load(PLAYBOOKS_DIR / "specs/gpu_node_argument_specs.yml")["gpu_node_argument_specs"]
    names = list(playbook_vars) + [name for role in EXPECTED_ROLES for name in spec_options(role)]
    assert [name for name in names if f"`{name}`" not in readme] == []
    for spec in playbook_vars.values():
        assert spec["type"]
        assert spec["description"]
