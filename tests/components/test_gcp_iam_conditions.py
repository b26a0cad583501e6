"""The IAM conditions of GCP plans, read and evaluated by a CEL implementation (cel-python), as IAM reads
them: every expression must parse, and what a condition grants is checked on the resources IAM would name
in its checks (resource.type, resource.name)."""

from __future__ import annotations

import functools
from typing import Any

import celpy
import pytest

from tests.components.harness import gcp_plan
from tests.components.test_gcp_slurm import ELASTIC
from tests.components.test_gcp_slurm_accounting import NAME, managed

INSTANCE = "sqladmin.googleapis.com/Instance"
VM = "compute.googleapis.com/Instance"


def conditions(plan: Any) -> dict[str, str]:
    """Every conditioned grant of the plan: its logical name and expression."""
    return {r.name: r.inputs["condition"]["expression"] for r in plan.resources if r.inputs.get("condition")}


@functools.cache
def _cel() -> celpy.Environment:
    return celpy.Environment()  # builds its parser: once


@functools.cache
def _program(expression: str) -> Any:
    return _cel().program(_cel().compile(expression))  # raises CELParseError on what IAM would refuse


def grants(expression: str, resource_type: str, name: str) -> bool:
    verdict = _program(expression).evaluate(
        {"resource": celpy.json_to_cel({"type": resource_type, "name": name})}
    )
    return bool(verdict)


@pytest.mark.parametrize(
    "plan",
    [managed, lambda: gcp_plan(ELASTIC, name="gse", env="prod")],
    ids=["accounting", "elastic"],
)
def test_every_condition_is_an_expression_iam_can_read(plan: Any) -> None:
    found = conditions(plan())
    assert len(found) >= 3
    for name, expression in found.items():
        assert isinstance(grants(expression, VM, "projects/x/zones/z/instances/nothing"), bool), name


def test_the_accounting_grant_reaches_this_instance_only() -> None:
    expression = conditions(managed())["gac-cluster-slurm-accounting-users"]
    assert grants(expression, INSTANCE, f"projects/test-project/instances/{NAME}")
    # Not another instance of the project, nor one of the same name in another project.
    assert not grants(expression, INSTANCE, "projects/test-project/instances/payroll")
    assert not grants(expression, INSTANCE, f"projects/other-project/instances/{NAME}")
    assert not grants(expression, INSTANCE, f"projects/test-project/instances/{NAME}-2")
    # A check that names something else (an operation of the users calls) is the role's to pass.
    assert grants(expression, "sqladmin.googleapis.com/Operation", "projects/test-project/operations/op-1")


def test_the_node_sync_may_name_only_the_clusters_node_vms() -> None:
    expression = conditions(gcp_plan(ELASTIC, name="gse", env="prod"))["gse-cluster-slurm-name"]
    base = "projects/test-project/zones/us-central1-b/instances/"
    assert grants(expression, VM, f"{base}gse-cluster-prod-h100-0001")
    assert not grants(expression, VM, f"{base}gse-cluster-prod-login-0")
    assert not grants(
        expression, VM, "projects/test-project/zones/us-central1-a/instances/gse-cluster-prod-h100-1"
    )
