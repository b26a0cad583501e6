"""An AWS Budget for the monthly cost of one stack of a cluster, with e-mail alerts.

The budget counts what carries both the blueprint tag and the stack tag (vocab.BLUEPRINT_TAG,
vocab.STACK_TAG), so dev and prod of one blueprint in one account never count each other's spend.
AWS Budgets' legacy `CostFilters` cannot say that: the values of one filter are OR-ed
(`TagKeyValue: [user:k$a, user:k$b]` counts either tag), so the budget uses the Budgets API's
`FilterExpression`, whose `And` needs every operand to match (AWS Billing and Cost Management API
Reference, budgets `Expression` and `TagValues`; CreateBudget: "Either FilterExpression and Metrics or
CostFilters and CostTypes"). Its tag keys are plain keys, as in Cost Explorer's expressions, not the
`user:` form of the legacy filter.

AWS attributes cost to a tag only once it is an active cost allocation tag of the account, and only
from its activation on (AWS Billing User Guide, "Using user-defined cost allocation tags"; earlier
months only by a backfill request). `activate_cost_tags` activates both keys from the program
(`aws.costexplorer.CostAllocationTag`), but AWS lists a new key for activation only up to 24 hours after
a resource first carries it, and until then the activation fails (terraform-provider-aws, which
pulumi-aws wraps, reads the tag back after UpdateCostAllocationTagsStatus and fails with "empty result":
hashicorp/terraform-provider-aws#29068); only an organization's management account or a standalone
account may activate tags. So it is off by default: a first deployment in a fresh account succeeds, and
the keys are activated once AWS lists them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

import pulumi
import pulumi_aws as aws

from clusterfab.core import vocab as tagging
from components._errors import check_inputs
from components._naming import child

TYPE = "clusterfab:billing:AwsBudget"
ACTUAL_ALERT_PERCENT = 80.0
FORECAST_ALERT_PERCENT = 100.0
METRIC = "UnblendedCost"
"""What the budget sums: the cost as billed, before amortization, credits and refunds included (what the
legacy CostTypes defaults counted); a filter expression needs a metric in place of CostTypes."""
COST_TAG_KEYS = (tagging.BLUEPRINT_TAG, tagging.STACK_TAG)
"""The tag keys the budget filters on: the cost allocation tags it needs active."""


@dataclass(frozen=True, kw_only=True)
class AwsBudgetArgs:
    cluster: str
    """The value of the resources' blueprint tag (vocab.BLUEPRINT_TAG)."""
    stack: str
    """The value of the resources' stack tag (vocab.STACK_TAG): the budget counts the costs of what
    carries both tags, one stack of the cluster."""
    monthly_limit_usd: Decimal | float
    alert_emails: Sequence[str] = ()
    """Who is told at 80 % of the limit (actual) and at 100 % (forecast); none: no alerts."""
    activate_cost_tags: bool = False
    """Activate the blueprint and stack tag keys as cost allocation tags of the account (they stay active
    when the budget is deleted: other stacks' budgets count by them too). Off by default: the activation
    fails until AWS lists the keys, up to 24 hours after a resource first carries them, and outside an
    organization's management account or a standalone account."""


def filter_expression(cluster: str, stack: str) -> aws.budgets.BudgetFilterExpressionArgs:
    """Costs tagged with both the blueprint and the stack: one stack of one cluster."""
    return aws.budgets.BudgetFilterExpressionArgs(
        ands=[
            aws.budgets.BudgetFilterExpressionAndArgs(
                tags=aws.budgets.BudgetFilterExpressionAndTagsArgs(
                    key=key, values=[value], match_options=["EQUALS"]
                )
            )
            for key, value in ((tagging.BLUEPRINT_TAG, cluster), (tagging.STACK_TAG, stack))
        ]
    )


class AwsBudget(pulumi.ComponentResource):
    """A monthly cost budget of the resources tagged with the cluster's blueprint and stack."""

    budget_name: pulumi.Output[str]
    """The budget's name."""

    def __init__(self, name: str, args: AwsBudgetArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        empty = [field for field in ("cluster", "stack") if not getattr(args, field)]
        check_inputs(TYPE, [(field, "is empty: the budget would count nothing") for field in empty])
        super().__init__(TYPE, name, None, opts)
        notifications = (
            [
                aws.budgets.BudgetNotificationArgs(
                    comparison_operator="GREATER_THAN",
                    notification_type=kind,
                    threshold=threshold,
                    threshold_type="PERCENTAGE",
                    subscriber_email_addresses=list(args.alert_emails),
                )
                for kind, threshold in (
                    ("ACTUAL", ACTUAL_ALERT_PERCENT),
                    ("FORECASTED", FORECAST_ALERT_PERCENT),
                )
            ]
            if args.alert_emails
            else None
        )
        budget = aws.budgets.Budget(
            # Not "budget", the name of the budgets filtered by the legacy CostFilters: such a budget
            # cannot be updated into this one (terraform-provider-aws keeps the computed cost_filter and
            # cost_types of its state and would send them beside the expression, which UpdateBudget
            # refuses), so a stack deployed before gets a new budget and its old one is deleted.
            child(name, "monthly"),
            budget_type="COST",
            limit_amount=f"{args.monthly_limit_usd:.2f}",
            limit_unit="USD",
            time_unit="MONTHLY",
            filter_expression=filter_expression(args.cluster, args.stack),
            metrics=METRIC,
            notifications=notifications,
            opts=pulumi.ResourceOptions(parent=self),
        )
        if args.activate_cost_tags:
            for key in COST_TAG_KEYS:
                aws.costexplorer.CostAllocationTag(
                    child(name, f"cost-tag-{key}"),
                    tag_key=key,
                    status="Active",
                    # The activation is the account's, shared by every stack that counts by the key:
                    # deleting this stack must not deactivate it under the others.
                    opts=pulumi.ResourceOptions(parent=self, retain_on_delete=True),
                )
        self.budget_name = budget.name
        self.register_outputs({"budget_name": budget.name})
