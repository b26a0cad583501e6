"""The cluster's Azure budget: the cost of the stack's own resource group."""

from __future__ import annotations

from clusterfab.core import dates
from clusterfab.cost import monthly_budget_limit
from components._naming import child
from components.azure.budget import AzureBudget, AzureBudgetArgs

from .site import Site


def budget(site: Site) -> None:
    spec = site.spec
    monthly = monthly_budget_limit(spec.budget)
    if spec.budget is not None and monthly is not None:
        AzureBudget(
            child(spec.name, "budget"),
            AzureBudgetArgs(
                resource_group_id=site.resource_group_id,
                monthly_limit_usd=monthly,
                start=dates.today().replace(day=1),
                alert_emails=spec.budget.alert_emails,
            ),
            site.opts,
        )
