"""The cluster's budget under the stack's billing account, counting the project's cost by the stack's
label."""

from __future__ import annotations

from clusterfab.cost import monthly_budget_limit
from components._naming import child
from components.gcp.budget import GcpBudget, GcpBudgetArgs

from .site import Site


def budget(site: Site) -> None:
    spec = site.spec
    monthly = monthly_budget_limit(spec.budget)
    if spec.budget is None or monthly is None:
        return
    billing_account = site.cluster.input.settings.billing_account
    if not billing_account:
        # A finding of the stack's blueprint says so (BP410), located at `budget`, with the setting.
        return
    GcpBudget(
        child(spec.name, "budget"),
        GcpBudgetArgs(
            cluster=spec.name,
            stack=site.cluster.stack,
            project=site.project,
            billing_account=billing_account,
            monthly_limit_usd=monthly,
            alert_emails=spec.budget.alert_emails,
            labels=site.cluster.tags("budget"),
        ),
        site.opts,
    )
