"""The AWS budget counts one stack of one cluster: dev and prod in one account never count each other.

What a budget counts is evaluated here the way AWS Budgets evaluates it, from the API's documented
semantics (AWS Billing and Cost Management API Reference, budgets `Expression`: `And` "return results
that match both", `TagValues` with match option EQUALS; the legacy `CostFilters` map: the values of one
filter name are alternatives, `TagKeyValue` values are `user:<key>$<value>`), against the tags the plan
puts on every taggable resource of the other stack.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pytest

from clusterfab.plan.engine import PlanError, run_program
from clusterfab.plan.project import Plan
from components.aws.budget import AwsBudget, AwsBudgetArgs
from tests.components.harness import all_of, one, plan_configured, plan_file
from tests.conftest import REPO

BUDGET = "aws:budgets/budget:Budget"
COST_TAG = "aws:costexplorer/costAllocationTag:CostAllocationTag"
EXAMPLES = REPO / "blueprints" / "examples"

# The AWS examples with a budget and the blueprint name each one's resources are tagged with
# (blueprints/examples/*.yaml, `name:`).
BUDGETED = {
    "aws-p5-efa-fsx": "llm-pretrain",
    "aws-p5-monitored": "llm-monitored",
    "aws-p5-slurm": "llm-slurm",
    "aws-p6-b200-capacity-block": "b200-finetune",
}


def _expression(blueprint: str, stack: str) -> dict[str, Any]:
    return {
        "ands": [
            {"tags": {"key": "clusterfab-blueprint", "matchOptions": ["EQUALS"], "values": [blueprint]}},
            {"tags": {"key": "clusterfab-stack", "matchOptions": ["EQUALS"], "values": [stack]}},
        ]
    }


@pytest.mark.parametrize("example", sorted(BUDGETED))
@pytest.mark.parametrize("env", ["dev", "prod"])
def test_each_example_budget_filters_on_its_blueprint_and_its_stack(example: str, env: str) -> None:
    budget = one(plan_file(EXAMPLES / f"{example}.yaml", env), BUDGET).inputs
    assert budget["filterExpression"] == _expression(BUDGETED[example], env)
    assert budget["metrics"] == "UnblendedCost"
    # The legacy filter ORs the values of one name: it must not be there beside the expression (the API
    # takes either FilterExpression and Metrics or CostFilters and CostTypes).
    assert "costFilters" not in budget
    assert "costTypes" not in budget


def _matches(budget: dict[str, Any], tags: dict[str, str]) -> bool:
    """Whether a budget counts the cost of a resource with these tags."""
    if "filterExpression" in budget:
        return _expression_matches(budget["filterExpression"], tags)
    # The legacy CostFilters: each name's values are alternatives.
    for cost_filter in budget.get("costFilters", []):
        assert cost_filter["name"] == "TagKeyValue", cost_filter
        pairs = [value.removeprefix("user:").split("$", 1) for value in cost_filter["values"]]
        if not any(tags.get(key) == value for key, value in pairs):
            return False
    return True


def _expression_matches(expression: dict[str, Any], tags: dict[str, str]) -> bool:
    if "ands" in expression:
        return all(_expression_matches(operand, tags) for operand in expression["ands"])
    if "ors" in expression:
        return any(_expression_matches(operand, tags) for operand in expression["ors"])
    tag = expression["tags"]
    assert tag["matchOptions"] == ["EQUALS"], tag
    return tags.get(tag["key"]) in tag["values"]


def _tagged(plan: Plan) -> list[dict[str, str]]:
    """The tags each billed thing of a plan carries: a resource's own, an auto scaling group's (a list of
    key/value blocks), and what a launch template puts on the instances and volumes it launches."""
    found: list[dict[str, str]] = []
    for resource in plan.resources:
        inputs = resource.inputs
        tags = inputs.get("tags")
        if isinstance(tags, list):
            found.append({t["key"]: t["value"] for t in tags})
        elif tags:
            found.append(tags)
        found.extend(spec["tags"] for spec in inputs.get("tagSpecifications", []) if spec.get("tags"))
    return found


@pytest.mark.parametrize("example", sorted(BUDGETED))
def test_dev_and_prod_budgets_of_one_blueprint_never_count_each_other(example: str) -> None:
    # The attack (issue 36): dev's budget, filtered on the blueprint tag alone, counted prod's spend and
    # alerted on it; prod's counted dev's.
    plans = {env: plan_file(EXAMPLES / f"{example}.yaml", env) for env in ("dev", "prod")}
    budgets = {env: one(plan, BUDGET).inputs for env, plan in plans.items()}
    for env, other in (("dev", "prod"), ("prod", "dev")):
        own, theirs = _tagged(plans[env]), _tagged(plans[other])
        assert own
        assert theirs
        assert all(_matches(budgets[env], tags) for tags in own), f"{env}'s budget misses its own resources"
        counted = [tags for tags in theirs if _matches(budgets[env], tags)]
        assert counted == [], f"{env}'s budget counts {len(counted)} of {other}'s resources"


def test_without_the_setting_the_program_activates_no_cost_allocation_tag() -> None:
    # A first deployment in a fresh account must not fail: AWS refuses to activate a key it has not
    # listed yet (up to 24 hours after a resource first carries it).
    for env in ("dev", "prod"):
        assert all_of(plan_file(EXAMPLES / "aws-p5-efa-fsx.yaml", env), COST_TAG) == []


@pytest.mark.parametrize("example", sorted(BUDGETED))
def test_the_setting_activates_both_tag_keys_the_budget_counts_by(example: str) -> None:
    text = (EXAMPLES / f"{example}.yaml").read_text()
    plan = plan_configured(text, (("clusterfab:activateCostTags", "true"),), env="prod")
    name = BUDGETED[example]
    activations = {r.name: r for r in all_of(plan, COST_TAG)}
    assert {n: r.inputs for n, r in activations.items()} == {
        f"{name}-budget-cost-tag-clusterfab-blueprint": {
            "status": "Active",
            "tagKey": "clusterfab-blueprint",
        },
        f"{name}-budget-cost-tag-clusterfab-stack": {"status": "Active", "tagKey": "clusterfab-stack"},
    }
    # The activation is the account's: destroying one stack must leave it active for the others.
    assert all(r.retain_on_delete for r in activations.values())
    budget = one(plan, BUDGET)
    assert {r.parent for r in activations.values()} == {budget.parent}


def test_an_aws_budget_has_a_stack_to_count() -> None:
    def program() -> None:
        AwsBudget("b", AwsBudgetArgs(cluster="c", stack="", monthly_limit_usd=1))

    with pytest.raises((pulumi.InputPropertiesError, PlanError), match="stack: is empty: the budget would"):
        run_program(program, project="team-infra", stack="dev")
