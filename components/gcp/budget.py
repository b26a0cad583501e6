"""A Cloud Billing budget for one stack of a cluster, with e-mail alerts at 80 % and 100 %.

The budget counts the project's costs labelled with the stack (vocab.STACK_TAG), so dev and prod of one
blueprint in one project never count each other's spend. It cannot also filter on the blueprint label:
the Cloud Billing Budget API takes a single label with a single value (billingbudgets v1,
`GoogleCloudBillingBudgetsV1Filter.labels`: "Currently, multiple entries or multiple values per entry are
not allowed"). The stack is the one that tells the environments apart; a stack's name is unique among the
stacks of one clusterfab project (each `stacks/Pulumi.<stack>.yaml` deploys one blueprint), so within a
project the stack label also names the blueprint.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

import pulumi
import pulumi_gcp as gcp

from clusterfab.core import vocab as tagging
from components._errors import check_inputs
from components._naming import child

TYPE = "clusterfab:billing:GcpBudget"
ALERT_THRESHOLDS = (0.8, 1.0)
"""Fractions of the monthly amount at which the alert e-mails go out."""


@dataclass(frozen=True, kw_only=True)
class GcpBudgetArgs:
    cluster: str
    """The blueprint's name, shown in the budget's and the alert channels' names."""
    stack: str
    """The stack whose resources the budget counts: their stack label (vocab.STACK_TAG) is
    `label_value(stack)`."""
    project: str
    billing_account: str
    """The billing account id the budget is created under."""
    monthly_limit_usd: Decimal | float
    alert_emails: Sequence[str] = ()
    labels: Mapping[str, str] = field(default_factory=dict)


def budget_labels(stack: str) -> dict[str, str]:
    """The budget filter's one label: the stack's, as every resource of the stack carries it."""
    return {tagging.STACK_TAG: tagging.label_value(stack)}


class GcpBudget(pulumi.ComponentResource):
    """The budget, filtered to the project and the stack's label, and its e-mail channels.

    Costs are attributed by the stack label (vocab.STACK_TAG), which every labelable resource carries.
    """

    budget_name: pulumi.Output[str]
    """The budget's resource name."""

    def __init__(self, name: str, args: GcpBudgetArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        check_inputs(TYPE, [("stack", "is empty: the budget would count nothing")] if not args.stack else [])
        super().__init__(TYPE, name, None, opts)
        own = pulumi.ResourceOptions(parent=self)
        channels = [
            gcp.monitoring.NotificationChannel(
                child(name, f"email-{tagging.label_value(email)}"),
                project=args.project,
                type="email",
                display_name=f"clusterfab {args.cluster} budget: {email}",
                labels={"email_address": email},
                user_labels=dict(args.labels),
                opts=own,
            )
            for email in args.alert_emails
        ]
        project = gcp.organizations.get_project_output(
            project_id=args.project, opts=pulumi.InvokeOutputOptions(parent=self)
        )
        budget = gcp.billing.Budget(
            child(name, "budget"),
            billing_account=args.billing_account,
            display_name=f"clusterfab {args.cluster} ({args.stack})"[:60],
            amount=gcp.billing.BudgetAmountArgs(
                specified_amount=gcp.billing.BudgetAmountSpecifiedAmountArgs(
                    currency_code="USD", units=str(round(args.monthly_limit_usd))
                )
            ),
            budget_filter=gcp.billing.BudgetBudgetFilterArgs(
                projects=[project.number.apply(lambda number: f"projects/{number}")],
                labels=budget_labels(args.stack),
                calendar_period="MONTH",
            ),
            threshold_rules=[
                gcp.billing.BudgetThresholdRuleArgs(threshold_percent=t) for t in ALERT_THRESHOLDS
            ],
            all_updates_rule=(
                gcp.billing.BudgetAllUpdatesRuleArgs(
                    monitoring_notification_channels=[c.id for c in channels]
                )
                if channels
                else None
            ),
            opts=own,
        )
        self.budget_name = budget.name
        self.register_outputs({"budget_name": budget.name})
