"""The GCP budget counts one stack of one cluster: dev and prod in one project never count each other.

What a budget counts is evaluated the way Cloud Billing evaluates its filter (billingbudgets v1,
`GoogleCloudBillingBudgetsV1Filter`: usage of the listed projects, and of "only this set of labeled
resources" for the one label it names), against the labels the plan puts on every labelled resource.
"""

from __future__ import annotations

from typing import Any

from clusterfab.plan.project import Plan
from tests.apimodels.check import Api, leaf_problems, leaves
from tests.apimodels.documented import DOCUMENTED
from tests.apimodels.mapping_gcp import GCP
from tests.apimodels.models import field
from tests.components.harness import GCP_HEAD, GCP_PROJECT, one, plan_configured

BUDGET = "gcp:billing/budget:Budget"
BILLING = (("clusterfab:billingAccount", "000000-AAAAAA-BBBBBB"),)

# dev and prod of one blueprint in one project (the project's number in the plan's mocks: 123456789).
BLUEPRINT = (
    GCP_HEAD.format(name="bud-cluster", zone="us-central1-b")
    + GCP_PROJECT
    + "tpu_slices:\n  - name: s\n    generation: v6e\n    topology: 4x4\n"
    + "budget: {max_hourly_usd: 100, alert_emails: [a@example.com]}\n"
    + "environments:\n  dev:\n    budget: {max_hourly_usd: 50}\n  prod: {}\n"
)


def _plan(env: str) -> Plan:
    return plan_configured(BLUEPRINT, BILLING, env=env)


def _filter(env: str) -> Any:
    return one(_plan(env), BUDGET).inputs["budgetFilter"]


def test_dev_and_prod_budgets_filter_on_their_own_stack() -> None:
    assert _filter("dev") == {
        "projects": ["projects/123456789"],
        "labels": {"clusterfab-stack": "dev"},
        "calendarPeriod": "MONTH",
    }
    assert _filter("prod") == {
        "projects": ["projects/123456789"],
        "labels": {"clusterfab-stack": "prod"},
        "calendarPeriod": "MONTH",
    }


def test_the_filter_is_one_label_with_one_value_as_the_api_allows() -> None:
    labels = field("billingbudgets.v1", "GoogleCloudBillingBudgetsV1Budget.budgetFilter.labels")
    # The API's own rule (discovery document, billingbudgets v1): one label, one value.
    assert "A single label and value pair" in labels.documentation
    assert "multiple entries or multiple values per entry are not allowed" in labels.documentation
    for env in ("dev", "prod"):
        budget_filter = _filter(env)
        assert len(budget_filter["labels"]) == 1
        # Each input checked against the field the API-model mapping names for it.
        problems = [
            problem
            for leaf in leaves(budget_filter, "budgetFilter")
            for target in [_mapped(leaf.path)]
            for problem in leaf_problems(target, leaf, DOCUMENTED)
        ]
        assert problems == []


def _mapped(path: str) -> Api:
    mapping = GCP[BUDGET]
    target = mapping.get(path) or mapping[path.rsplit(".", 1)[0] + ".*"]
    assert isinstance(target, Api)
    return target


def _labelled(plan: Plan) -> list[dict[str, str]]:
    """The labels of each labelled resource of a plan (GCP's `labels`, `resourceLabels` and the like)."""
    found = []
    for resource in plan.resources:
        if resource.type == BUDGET:
            continue
        for key in ("labels", "resourceLabels", "userLabels"):
            value = resource.inputs.get(key)
            if isinstance(value, dict) and "clusterfab-blueprint" in value:
                found.append(value)
    return found


def _counts(budget_filter: dict[str, Any], labels: dict[str, str]) -> bool:
    return all(labels.get(key) in _values(value) for key, value in budget_filter["labels"].items())


def _values(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_each_budget_counts_its_own_stack_and_not_the_other() -> None:
    for own, other in (("dev", "prod"), ("prod", "dev")):
        budget_filter = _filter(own)
        own_labels = _labelled(_plan(own))
        other_labels = _labelled(_plan(other))
        assert own_labels
        assert other_labels
        assert [labels for labels in own_labels if not _counts(budget_filter, labels)] == []
        assert [labels for labels in other_labels if _counts(budget_filter, labels)] == []
