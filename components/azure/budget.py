"""An Azure consumption budget for the monthly cost of one stack of a cluster, with e-mail alerts.

The budget's scope is the stack's own resource group, which holds every resource of that stack and
nothing else, so dev and prod of one blueprint in one subscription never count each other's spend and no
tag filter is needed (Cost Management budgets count the costs of their scope: the Consumption REST API's
Budgets - Create Or Update, `scope`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

import pulumi
from pulumi_azure_native import consumption

from components._errors import check_inputs
from components._naming import child

TYPE = "clusterfab:billing:AzureBudget"
ACTUAL_ALERT_PERCENT = 80.0
FORECAST_ALERT_PERCENT = 100.0


@dataclass(frozen=True, kw_only=True)
class AzureBudgetArgs:
    resource_group_id: pulumi.Input[str]
    """The stack's resource group: what the budget counts."""
    monthly_limit_usd: Decimal | float
    start: dt.date
    """The first day of the month the budget starts counting (the API wants a month's first day, at most
    twelve months ahead and within the current month when past)."""
    alert_emails: Sequence[str] = ()
    """Who is told at 80 % of the limit (actual) and at 100 % (forecast); none: no alerts (a resource group
    budget's notifications need a contact e-mail or action group)."""


class AzureBudget(pulumi.ComponentResource):
    """A monthly cost budget of the resources of the stack's resource group."""

    budget_name: pulumi.Output[str]

    def __init__(self, name: str, args: AzureBudgetArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        problems = [] if args.start.day == 1 else [("start", "is not the first day of a month")]
        check_inputs(TYPE, problems)
        super().__init__(TYPE, name, None, opts)
        notifications = {
            key: consumption.NotificationArgs(
                contact_emails=list(args.alert_emails),
                enabled=True,
                operator="GreaterThanOrEqualTo",
                threshold=threshold,
                threshold_type=kind,
            )
            for key, kind, threshold in (
                ("actual", "Actual", ACTUAL_ALERT_PERCENT),
                ("forecast", "Forecasted", FORECAST_ALERT_PERCENT),
            )
            if args.alert_emails
        }
        budget = consumption.Budget(
            child(name, "monthly"),
            scope=args.resource_group_id,
            amount=float(args.monthly_limit_usd),
            category="Cost",
            time_grain="Monthly",
            time_period=consumption.BudgetTimePeriodArgs(start_date=f"{args.start.isoformat()}T00:00:00Z"),
            notifications=notifications or None,
            # The start is the month of the first deployment; a later month's deployment must not move it.
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=["timePeriod"]),
        )
        self.budget_name = budget.name
        self.register_outputs({"budget_name": budget.name})
