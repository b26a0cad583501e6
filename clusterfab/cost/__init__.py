"""Cost estimates from the catalog's prices: per item and in total, per hour, month and run.

Pure Python on the catalog alone: `clusterfab cost` and the budget rules never import Pulumi.
"""

from clusterfab.cost.estimate import (
    HOURS_PER_MONTH,
    MAX_RUN_HOURS,
    BudgetStatus,
    CostEstimate,
    CostItem,
    CostLine,
    CostWarning,
    cost_lines,
    estimate_cost,
    estimate_lines,
    monthly_budget_limit,
)

__all__ = [
    "HOURS_PER_MONTH",
    "MAX_RUN_HOURS",
    "BudgetStatus",
    "CostEstimate",
    "CostItem",
    "CostLine",
    "CostWarning",
    "cost_lines",
    "estimate_cost",
    "estimate_lines",
    "monthly_budget_limit",
]
