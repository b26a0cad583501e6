"""The cluster's AWS budget, counting the cost of the resources tagged with the cluster and stack."""

from __future__ import annotations

import pulumi
from cluster import Cluster

from clusterfab.core.vocab import BLUEPRINT_TAG, STACK_TAG
from clusterfab.cost import monthly_budget_limit
from components._naming import child
from components.aws.budget import AwsBudget, AwsBudgetArgs


def budget(cluster: Cluster, opts: pulumi.ResourceOptions) -> None:
    spec = cluster.spec
    monthly = monthly_budget_limit(spec.budget)
    if spec.budget is not None and monthly is not None:
        # The filter names the tag values the stack's resources carry, exactly as they carry them.
        tags = cluster.tags("budget")
        AwsBudget(
            child(spec.name, "budget"),
            AwsBudgetArgs(
                cluster=tags[BLUEPRINT_TAG],
                stack=tags[STACK_TAG],
                monthly_limit_usd=monthly,
                alert_emails=spec.budget.alert_emails,
                activate_cost_tags=cluster.input.settings.activate_cost_tags,
            ),
            opts,
        )
