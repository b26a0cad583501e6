"""Run the rules over one resolved blueprint (base or merged with an environment).

Loading the blueprint (parse, environments, schema, resolution) is `clusterfab.load`'s; this module
decides which rules run and which of their findings count.
"""

from __future__ import annotations

from collections.abc import Sequence

from clusterfab.core.findings import Finding
from clusterfab.rules.budget import check_budget
from clusterfab.rules.context import Check, RuleContext
from clusterfab.rules.schema import SchemaCheck


def run_checks(checks: Sequence[Check], context: RuleContext) -> list[Finding]:
    """Every finding of every check, in the order of the checks."""
    return [finding for check in checks for finding in check(context)]


def run_salvaged_checks(checks: Sequence[Check], context: RuleContext, schema: SchemaCheck) -> list[Finding]:
    """What the rules find in the valid rest of a blueprint that failed the schema (`context` holds the
    salvaged blueprint), except what follows from the invalid part."""
    salvaged_checks = [c for c in checks if c is not check_budget or not schema.prices_changed]
    return [f for f in run_checks(salvaged_checks, context) if not schema.is_cascade(f)]
