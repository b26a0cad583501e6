"""The extravars clusterfab generates against the playbooks' argument specs: the two sides of one contract.

For every example blueprint, environment and node group, every variable generated must be declared by
a role that runs for that node, with a compatible type and an allowed value, and every required input
of those roles must be generated. Which roles run is read from the playbook itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from clusterfab.bootstrap import Mount
from clusterfab.catalog import load_catalog
from clusterfab.provision.extravars import gpu_node_vars, healthcheck_vars, tpu_host_vars
from clusterfab.rules.engine import validate_file
from tests.conftest import EXAMPLES, REPO
from tests.factories import example_spec

PLAYBOOKS = REPO / "playbooks"
CATALOG = load_catalog()
# Set by gpu_node.yml itself from nvidia_driver_version, not generated.
SET_BY_PLAYBOOK = {"nvidia_fabricmanager_driver_version", "nccl_tests_cuda_home"}
_TYPES: dict[str, tuple[type, ...]] = {
    "str": (str,),
    "path": (str,),
    "raw": (object,),
    "bool": (bool,),
    "int": (int,),
    "float": (int, float),
    "list": (list,),
    "dict": (dict,),
}


def _spec(role: str) -> dict[str, Any]:
    path = PLAYBOOKS / "roles" / role / "meta" / "argument_specs.yml"
    return dict(yaml.safe_load(path.read_text())["argument_specs"]["main"]["options"])


def _playbook_spec() -> dict[str, Any]:
    specs = yaml.safe_load((PLAYBOOKS / "specs" / "gpu_node_argument_specs.yml").read_text())
    return dict(specs["gpu_node_argument_specs"])


def _roles(playbook: str, variables: dict[str, Any]) -> list[str]:
    """The roles `playbook` includes for a node with these variables (its `when:` conditions evaluated)."""
    play = yaml.safe_load((PLAYBOOKS / playbook).read_text())[0]
    roles = []
    for task in play["tasks"]:
        role = task["ansible.builtin.include_role"]["name"]
        condition = task.get("when")
        if condition is None:
            roles.append(role)
        elif condition == "gpu_node_nvswitch | bool":
            if variables["gpu_node_nvswitch"]:
                roles.append(role)
        elif condition.startswith("gpu_node_fabric == "):
            if variables["gpu_node_fabric"] == condition.split("==")[1].strip().strip("'\""):
                roles.append(role)
        else:
            pytest.fail(f"{playbook}: the contract test does not understand `when: {condition}`")
    return roles


def _check(value: Any, option: dict[str, Any], where: str) -> None:
    kind = option.get("type", "str")
    assert isinstance(value, _TYPES[kind]), f"{where}: {value!r} is not a {kind}"
    # bool is an int in Python, but not in the role's spec
    assert kind in {"bool", "raw"} or not isinstance(value, bool), (
        f"{where}: a boolean where a {kind} belongs"
    )
    if "choices" in option:
        assert value in option["choices"], f"{where}: {value!r} not in {option['choices']}"
    if kind == "list" and option.get("elements") == "dict" and "options" in option:
        for index, item in enumerate(value):
            _check_options(item, option["options"], f"{where}[{index}]")


def _check_options(values: dict[str, Any], options: dict[str, Any], where: str) -> None:
    unknown = set(values) - set(options)
    assert not unknown, f"{where}: undeclared {sorted(unknown)}"
    for name, option in options.items():
        if option.get("required") and name not in SET_BY_PLAYBOOK:
            assert name in values, f"{where}: required {name} is missing"
        if name in values:
            _check(values[name], option, f"{where}.{name}")


def _contract(playbook: str, variables: dict[str, Any], extra_options: dict[str, Any] | None = None) -> None:
    options: dict[str, Any] = dict(extra_options or {})
    for role in _roles(playbook, variables):
        options.update(_spec(role))
    _check_options(variables, options, playbook)


def _cases() -> list[tuple[Path, str | None, str]]:
    cases = []
    for path in EXAMPLES:
        result = validate_file(path)
        for env, validated in result.blueprints.items():
            items = [g.name for g in validated.spec.node_groups] + [t.name for t in validated.spec.tpu_slices]
            cases += [(path, env, item) for item in items]
    return cases


CASES = _cases()


@pytest.mark.parametrize(
    ("path", "env", "item"), CASES, ids=[f"{p.stem}-{e or 'base'}-{i}" for p, e, i in CASES]
)
def test_generated_vars_satisfy_the_roles_that_run(path: Path, env: str | None, item: str) -> None:
    spec = validate_file(path).blueprints[env].spec
    groups = {g.name: g for g in spec.node_groups}
    slices = {t.name: t for t in spec.tpu_slices}
    storage = spec.storage_named((groups[item] if item in groups else slices[item]).storage)
    mounts = [
        Mount(
            s.name, "lustre" if s.kind == "lustre" else "nfs", "10.0.0.2@tcp:/fs", s.mount_point, "defaults"
        )
        for s in storage
    ]
    if item in groups:
        variables = gpu_node_vars(spec, groups[item], CATALOG, mounts)
        _contract("gpu_node.yml", variables, _playbook_spec())
        _contract("healthcheck.yml", healthcheck_vars(spec, groups[item], CATALOG))
    else:
        _contract("tpu_host.yml", tpu_host_vars(spec, slices[item], CATALOG, mounts))


def test_every_fabric_maps_to_a_role_of_the_playbook() -> None:
    from clusterfab.provision.extravars import FABRIC_ROLES

    choices = _playbook_spec()["gpu_node_fabric"]["choices"]
    assert set(FABRIC_ROLES.values()) <= set(choices)
    roles = {
        task["ansible.builtin.include_role"]["name"]
        for task in yaml.safe_load((PLAYBOOKS / "gpu_node.yml").read_text())[0]["tasks"]
    }
    assert set(FABRIC_ROLES.values()) <= roles


def test_health_threshold_is_converted_to_gigabits() -> None:
    spec = example_spec("aws-p6-b200-capacity-block")
    variables = healthcheck_vars(spec, spec.node_groups[0], CATALOG)
    # B200: 650 GB/s in the catalog is 5200 Gbps for the role
    assert variables == {
        "gpu_healthcheck_expected_gpu_count": 8,
        "gpu_healthcheck_min_busbw_gbps": 5200,
        "gpu_healthcheck_expected_driver_version": "580.95.05",
    }
