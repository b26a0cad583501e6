"""An AWS Budget for the cluster's monthly cost, with e-mail alerts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

import pulumi
import pulumi_aws as aws

from clusterfab.core import vocab as tagging
from components._naming import child

TYPE = "clusterfab:billing:AwsBudget"
ACTUAL_ALERT_PERCENT = 80.0
FORECAST_ALERT_PERCENT = 100.0


@dataclass(frozen=True, kw_only=True)
class AwsBudgetArgs:
    cluster: str
    """The value of the resources' blueprint tag (vocab.BLUEPRINT_TAG): the budget counts their costs."""
    monthly_limit_usd: Decimal | float
    alert_emails: Sequence[str] = ()
    """Who is told at 80 % of the limit (actual) and at 100 % (forecast); none: no alerts."""


class AwsBudget(pulumi.ComponentResource):
    """A monthly cost budget filtered to the cluster's resources by their blueprint tag.

    The filter uses the blueprint tag (vocab.BLUEPRINT_TAG), which must be activated as a cost
    allocation tag in the billing console once per account before AWS can attribute costs to it.
    """

    budget_name: pulumi.Output[str]
    """The budget's name."""

    def __init__(self, name: str, args: AwsBudgetArgs, opts: pulumi.ResourceOptions | None = None) -> None:
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
            child(name, "budget"),
            budget_type="COST",
            limit_amount=f"{args.monthly_limit_usd:.2f}",
            limit_unit="USD",
            time_unit="MONTHLY",
            cost_filters=[
                aws.budgets.BudgetCostFilterArgs(
                    name="TagKeyValue", values=[f"user:{tagging.BLUEPRINT_TAG}${args.cluster}"]
                )
            ],
            notifications=notifications,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.budget_name = budget.name
        self.register_outputs({"budget_name": budget.name})
