"""Every input of every planned resource, checked against the cloud's own API model.

The offline plan runs the real Pulumi program under the SDK's mock engine, which accepts any value: a
typo'd enum or an impossible combination would pass every other test and fail at the first real
`pulumi up`. Here each input is mapped to the field the provider sends it as (botocore service models,
Google discovery documents, the Managed Lustre protobuf) and checked against that field's enum, range,
length and pattern, the constraints its documentation states, and the cross-field rules of
`rules.py`. An input with no mapping fails the coverage test: the table keeps up with the components.
"""

from __future__ import annotations

import copy
import dataclasses
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from clusterfab.load import load_bytes
from clusterfab.plan.project import Plan
from tests.apimodels.azure_resources import checked_here as azure_checked_here
from tests.apimodels.check import Api, Free, leaf_problems, leaves, resolve
from tests.apimodels.documented import DOCUMENTED
from tests.apimodels.kubernetes_objects import checked_here
from tests.apimodels.mapping import MAPPINGS, TABLES
from tests.apimodels.models import UnknownFieldError, field, plain
from tests.apimodels.plans import CASES, PlanCase
from tests.apimodels.rules import KNOWN_DEFECTS, RULES, Rule
from tests.factories import TODAY, blueprint_yaml


def input_problems(plan: Plan) -> tuple[list[str], list[str]]:
    """(what the API models reject, which inputs have no mapping), each once per resource type and path."""
    problems: Counter[str] = Counter()
    unmapped: set[str] = set()
    for resource in plan.resources:
        # Kubernetes objects are checked against Kubernetes' own schema (test_kubernetes_objects.py),
        # Azure resources against Azure's REST API specifications (test_azure_specs.py).
        if not resource.custom or checked_here(resource.type) or azure_checked_here(resource.type):
            continue
        table = TABLES.get(resource.type)
        for leaf in leaves(resource.inputs):
            target = table.target(leaf.path) if table else None
            if target is None:
                unmapped.add(f"{resource.type} {leaf.path} (e.g. {leaf.value!r:.60}): add a mapping")
            elif isinstance(target, Api):
                for problem in leaf_problems(target, leaf, DOCUMENTED):
                    problems[f"{resource.type} {leaf.path}: {problem}"] += 1
    return [f"{p} (x{n})" if n > 1 else p for p, n in sorted(problems.items())], sorted(unmapped)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_every_input_is_mapped_to_an_api_field(case: PlanCase) -> None:
    _, unmapped = input_problems(case.load())
    assert unmapped == [], "inputs with no API model mapping (tests/apimodels/mapping_*.py):\n" + "\n".join(
        unmapped
    )


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_every_input_is_valid_for_the_api_model(case: PlanCase) -> None:
    problems, _ = input_problems(case.load())
    assert problems == [], "inputs the cloud's API model rejects:\n" + "\n".join(problems)


def _rule_param(rule: Rule) -> Any:
    if rule.name in KNOWN_DEFECTS:
        return pytest.param(
            rule, id=rule.name, marks=pytest.mark.xfail(strict=True, reason=KNOWN_DEFECTS[rule.name])
        )
    return pytest.param(rule, id=rule.name)


@pytest.mark.parametrize("rule", [_rule_param(r) for r in RULES])
def test_cross_field_rule_holds_in_every_plan(rule: Rule) -> None:
    violations = [f"{case.id}: {v}" for case in CASES for v in rule.check(case.load())]
    assert violations == [], f"{rule.source}\n\n" + "\n".join(violations)


# --- the table and the rules rest on the models ------------------------------------------------------


def test_every_mapping_names_a_field_the_api_model_has() -> None:
    missing = []
    for token, entries in MAPPINGS.items():
        for path, target in entries.items():
            if not isinstance(target, Api):
                assert isinstance(target, Free), (token, path)
                assert target.reason, (token, path)
                continue
            try:
                resolve(target)
                if target.key is not None:
                    field(target.api, target.key)
            except UnknownFieldError as exc:
                missing.append(f"{token} {path}: {exc}")
    assert missing == []


def test_documented_constraints_quote_the_model() -> None:
    """A constraint taken from a field's model documentation must still be stated there."""
    stale = [
        f"{api} {path}: {entry.quote!r}"
        for (api, path), entry in DOCUMENTED.items()
        if not entry.source and plain(entry.quote) not in field(api, path).documentation
    ]
    assert stale == []


def test_rule_quotes_are_in_the_models() -> None:
    stale = [
        f"{rule.name}: {q.api} {q.path}: {q.quote!r}"
        for rule in RULES
        for q in rule.quotes
        if plain(q.quote) not in field(q.api, q.path).documentation
    ]
    assert stale == []
    assert all(rule.source for rule in RULES)


# --- the checks can fail ------------------------------------------------------------------------------


def _case(case_id: str) -> Plan:
    return next(c for c in CASES if c.id == case_id).load()


def _mutated(case_id: str, type_: str, change: Callable[[dict[str, Any]], None]) -> Plan:
    """A copy of a plan with the first resource of a type changed."""
    plan = _case(case_id)
    resources = []
    done = False
    for resource in plan.resources:
        if resource.type == type_ and not done:
            inputs = copy.deepcopy(resource.inputs)
            change(inputs)
            resources.append(dataclasses.replace(resource, inputs=inputs))
            done = True
        else:
            resources.append(resource)
    assert done, f"no {type_} in {case_id}"
    return dataclasses.replace(plan, resources=resources)


LT = "aws:ec2/launchTemplate:LaunchTemplate"
TEMPLATE = "gcp:compute/instanceTemplate:InstanceTemplate"


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(inputs: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node = inputs
        for name in parents:
            node = node.setdefault(name, {})
        node[last] = value

    return change


@pytest.mark.parametrize(
    ("case_id", "type_", "path", "value", "expected"),
    [
        ("aws-p5-efa-fsx.dev", LT, "metadataOptions.httpTokens", "Required", "'Required' is not one of optional, required"),
        ("aws-p5-efa-fsx.dev", LT, "metadataOptions.httpPutResponseHopLimit", 65, "65 is above the maximum 64"),
        ("aws-p5-efa-fsx.dev", LT, "instanceType", "p5.48xlarg", "'p5.48xlarg' is not one of"),
        ("aws-p5-efa-fsx.dev", "aws:fsx/lustreFileSystem:LustreFileSystem", "perUnitStorageThroughput", 1001, "1001 is above the maximum 1000"),
        ("aws-p5-efa-fsx.dev", "aws:fsx/lustreFileSystem:LustreFileSystem", "fileSystemTypeVersion", "2.16", "'2.16' is not one of 2.10, 2.12, 2.15"),
        ("gcp-a3ultra-roce-lustre.dev", TEMPLATE, "scheduling.provisioningModel", "Spot", "'Spot' is not one of"),
        ("gcp-a3ultra-roce-lustre.dev", "gcp:compute/network:Network", "mtu", 9000, "9000 is above the maximum 8896"),
        ("gcp-a3ultra-roce-lustre.dev", "gcp:lustre/instance:Instance", "perUnitStorageThroughput", "400", "'400' is not one of 125, 250, 500, 1000"),
        ("gcp-a3ultra-roce-lustre.dev", "gcp:lustre/instance:Instance", "filesystem", "lustre-fs", "does not match the pattern"),
        ("gcp-a3ultra-roce-lustre.dev", "gcp:serviceaccount/account:Account", "accountId", "Nodes", "does not match the pattern"),
        ("gcp-a3mega-tcpxo-filestore.dev", "gcp:filestore/instance:Instance", "tier", "ZONAL_SSD", "'ZONAL_SSD' is not one of"),
        ("gcp-a3mega-tcpxo-filestore.dev", TEMPLATE, "labels.team", "Research", "does not match the pattern"),
        ("gcp-tpu-v6e-spot.dev", "gcp:storage/bucket:Bucket", "publicAccessPrevention", "Enforced", "'Enforced' is not one of inherited, enforced"),
        ("gcp-a3mega-tcpxo-filestore.dev", TEMPLATE, "machineType", "zones/us-central1-a/machineTypes/a3-megagpu-8g", "does not match the pattern"),
        ("aws-p5-efa-fsx.dev", "aws:budgets/budget:Budget", "timeUnit", "MONTH", "'MONTH' is not one of"),
        ("aws-p5-efa-fsx.dev", "aws:budgets/budget:Budget", "metrics", "Unblended", "'Unblended' is not one of"),
        ("aws-cost-tags", "aws:costexplorer/costAllocationTag:CostAllocationTag", "status", "active", "'active' is not one of Active, Inactive"),
        # Part of it matches [0-9A-Za-z _-]+; the whole must (the colon).
        ("aws-p5-slurm.dev", "aws:dlm/lifecyclePolicy:LifecyclePolicy", "description", "state: daily", "does not match the pattern"),
    ],
)  # fmt: skip
def test_the_input_check_catches_a_wrong_value(
    case_id: str, type_: str, path: str, value: Any, expected: str
) -> None:
    problems, _ = input_problems(_mutated(case_id, type_, _set(path, value)))
    assert any(expected in p and path.split(".", maxsplit=1)[0] in p for p in problems), problems


def test_the_coverage_check_catches_an_unmapped_input() -> None:
    _, unmapped = input_problems(
        _mutated("aws-p5-efa-fsx.dev", LT, _set("metadataOptions.httpTokenz", "required"))
    )
    assert unmapped == [
        "aws:ec2/launchTemplate:LaunchTemplate metadataOptions.httpTokenz (e.g. 'required'): add a mapping"
    ]


def _nic_change(index: int, **values: Any) -> Callable[[dict[str, Any]], None]:
    def change(inputs: dict[str, Any]) -> None:
        inputs["networkInterfaces"][index].update(values)

    return change


def _drop(path: str) -> Callable[[dict[str, Any]], None]:
    def change(inputs: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node = inputs
        for name in parents:
            node = node[name]
        del node[last]

    return change


_RULE_BREAKERS: dict[str, tuple[str, str, Callable[[dict[str, Any]], None]]] = {
    "aws_no_public_ip_flag_with_several_interfaces": ("aws-p5-efa-fsx.dev", LT, _nic_change(0, associatePublicIpAddress="false")),
    "aws_primary_interface_has_an_address": ("aws-p5-efa-fsx.dev", LT, _nic_change(0, interfaceType="efa-only")),
    "aws_capacity_block_targets_its_reservation": ("aws-p6-b200-capacity-block.dev", LT, _drop("capacityReservationSpecification")),
    "aws_spot_options_fit_the_market": ("aws-spot", LT, _set("instanceMarketOptions.spotOptions.spotInstanceType", "persistent")),
    "aws_ebs_size_fits_the_volume_type": ("aws-p5-efa-fsx.dev", LT, lambda i: i["blockDeviceMappings"][0]["ebs"].update(volumeSize=70000)),
    "aws_user_data_within_16_kib": ("aws-p5-efa-fsx.dev", LT, _set("userData", "QUFB" * 5462)),
    "aws_desired_capacity_within_min_and_max": ("aws-p5-efa-fsx.dev", "aws:autoscaling/group:Group", _set("desiredCapacity", 99)),
    "aws_fsx_throughput_fits_deployment": ("aws-p5-efa-fsx.dev", "aws:fsx/lustreFileSystem:LustreFileSystem", _set("perUnitStorageThroughput", 200)),
    "aws_fsx_capacity_fits_deployment": ("aws-p5-efa-fsx.dev", "aws:fsx/lustreFileSystem:LustreFileSystem", _set("storageCapacity", 3600)),
    "aws_fsx_lustre_version_fits_deployment": ("aws-p5-efa-fsx.dev", "aws:fsx/lustreFileSystem:LustreFileSystem", _set("fileSystemTypeVersion", "2.12")),
    "aws_fsx_metadata_configuration": ("aws-p5-efa-fsx.dev", "aws:fsx/lustreFileSystem:LustreFileSystem", _set("metadataConfiguration.iops", 1500)),
    "aws_fsx_customer_key_only_on_persistent": ("aws-customer-keys", "aws:fsx/lustreFileSystem:LustreFileSystem", _set("deploymentType", "SCRATCH_2")),
    "aws_ports_for_tcp_udp_icmp": ("aws-p5-efa-fsx.dev", "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", _set("ipProtocol", "tcp")),
    "gcp_spot_and_preemptible_terminate_without_restart": ("gcp-spot", TEMPLATE, _set("scheduling.automaticRestart", True)),
    "gcp_gpu_machines_terminate_on_host_maintenance": ("gcp-a3mega-tcpxo-filestore.dev", TEMPLATE, _set("scheduling.onHostMaintenance", "MIGRATE")),
    "gcp_flex_start_runs_at_most_seven_days_on_supported_machines": ("gcp-flex-start", TEMPLATE, _set("scheduling.maxRunDuration.seconds", 8 * 86400)),
    "gcp_specific_reservation_is_named": ("gcp-a3ultra-roce-lustre.prod", TEMPLATE, _set("reservationAffinity.specificReservation.key", "reservation-name")),
    "gcp_roce_network_has_no_vpc_firewall_rule": ("gcp-a3ultra-roce-lustre.dev", "gcp:compute/firewall:Firewall", _set("network", "ultra-train-rdma-vpc-id")),
    "gcp_mrdma_nics_only_on_roce_networks": ("gcp-a3ultra-roce-lustre.dev", TEMPLATE, _nic_change(2, nicType="GVNIC")),
    "gcp_mig_update_policy_can_progress": ("gcp-a3mega-tcpxo-filestore.dev", "gcp:compute/instanceGroupManager:InstanceGroupManager", _set("updatePolicy.maxUnavailableFixed", 0)),
    "gcp_filestore_anonymous_ids_only_when_root_is_squashed": ("gcp-a3mega-tcpxo-filestore.dev", "gcp:filestore/instance:Instance", lambda i: i["fileShares"]["nfsExportOptions"][0].update(anonUid=65534)),
    "gcp_filestore_basic_share_name": ("gcp-tpu-v5p-multislice.dev", "gcp:filestore/instance:Instance", _set("fileShares.name", "checkpoints_and_more")),
}  # fmt: skip


@pytest.mark.parametrize("rule", [r for r in RULES if r.name not in KNOWN_DEFECTS], ids=lambda r: r.name)
def test_each_rule_catches_a_plan_that_breaks_it(rule: Rule) -> None:
    assert rule.name in _RULE_BREAKERS, f"give {rule.name} a plan that breaks it"
    case_id, type_, change = _RULE_BREAKERS[rule.name]
    assert list(rule.check(_case(case_id))) == []
    assert list(rule.check(_mutated(case_id, type_, change))) != []


def test_flex_start_on_a4x_is_refused_before_planning() -> None:
    """Google: flex-start VMs support "all accelerator-optimized machine types (except A4X and G4)"."""
    text = blueprint_yaml(
        "gcp",
        node_groups=[
            {
                "name": "g",
                "machine_type": "a4x-highgpu-4g",
                "count": 18,
                "capacity": {"kind": "flex_start", "max_run_duration_hours": 36},
            }
        ],
    )
    result = load_bytes(text.encode(), "a4x.yaml", today=TODAY)
    assert [(f.code, f.field) for f in result.findings if f.severity.value == "error"] == [
        ("BP206", "node_groups[0].capacity.kind")
    ]
