"""What a rule sees: the validated blueprint, the catalog, and how to point at a line."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TypeAlias

from clusterfab.blueprint.models import Blueprint
from clusterfab.blueprint.sourcemap import SourceMap
from clusterfab.catalog import Catalog
from clusterfab.clouds import CloudProfile, profile
from clusterfab.core.findings import FieldPath, Finding, Severity
from clusterfab.spec import ClusterSpec


@dataclass(frozen=True)
class StackView:
    """The stack a blueprint is validated for, as far as its settings (stacks/Pulumi.<stack>.yaml) change
    what a deployment builds."""

    name: str | None = None
    """The stack; None: a blueprint validated with no stack named (the rules say what a stack needs)."""
    billing_account: str | None = None
    """`clusterfab:billingAccount`: GCP, the billing account the budget is created under."""
    activate_cost_tags: bool = False
    """`clusterfab:activateCostTags`: AWS, the program activates the cost allocation tags of the budget."""
    provider_settings: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """The clouds' provider settings the stack sets (`CloudProfile.stack_settings`), e.g. Azure's
    `azure-native:subscriptionId`, the subscription whose nodes Prometheus discovers."""


@dataclass(frozen=True)
class RuleContext:
    """One blueprint (base or merged with an environment) under validation, and its resolved spec."""

    blueprint: Blueprint
    spec: ClusterSpec
    catalog: Catalog
    source_map: SourceMap
    environment: str | None
    today: dt.date
    """The date prices are judged stale against; fixed by the caller (clusterfab.core.dates.today) so
    results are reproducible."""
    stack: StackView | None = None
    """What is deployed, for the rules about a deployment (the cloud budget): None for a command that
    deploys nothing (`cost`, `diff`, `policy`), where those rules say nothing."""

    @property
    def cloud(self) -> CloudProfile:
        return profile(self.blueprint.cloud)

    def finding(
        self,
        code: str,
        path: FieldPath,
        message: str,
        *,
        hint: str = "",
        at_key: bool = False,
        anchor: FieldPath | None = None,
        severity: Severity | None = None,
    ) -> Finding:
        """A finding about the field `path` (positioned at `anchor` when the field is not written)."""
        made = self.source_map.finding(code, path, message, hint=hint, at_key=at_key, anchor=anchor)
        if severity is not None and severity is not made.severity:
            return dataclasses.replace(made, severity=severity)
        return made

    def from_overlay(self, path: FieldPath) -> bool:
        """Whether the environment's overlay, not the base, gives `path` its value."""
        return self.environment is not None and self.source_map.from_overlay(path, self.environment)

    def written(self, path: FieldPath) -> bool:
        """Whether the blueprint (or its environment overlay) sets `path` explicitly."""
        source = self.source_map.source_path(path)
        document = self.source_map.document
        return source in document.value_spans


Check: TypeAlias = Callable[[RuleContext], Iterator[Finding]]
"""A rule: looks at the context and yields findings."""
