"""Validate a blueprint file in one pass: parse, schema, environments, rules.

All findings of all layers are collected, de-duplicated and sorted; nothing stops at the first
problem. Without an environment the base blueprint and every environment overlay are validated, so
`clusterfab validate` covers what `pulumi up` will see on each stack.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clusterfab.blueprint.loader import Document, parse_blueprint_bytes, read_blueprint
from clusterfab.blueprint.models import Blueprint
from clusterfab.blueprint.overlay import apply_environment
from clusterfab.blueprint.sourcemap import SourceMap
from clusterfab.catalog import Catalog, load_catalog
from clusterfab.core import dates
from clusterfab.core.errors import UsageError
from clusterfab.core.findings import Finding, has_errors, normalize, render_path
from clusterfab.core.hints import closest
from clusterfab.rules.budget import check_budget
from clusterfab.rules.context import Check, RuleContext, StackView
from clusterfab.rules.registry import CHECKS
from clusterfab.rules.schema import check_schema, field_info
from clusterfab.spec import ClusterSpec, resolve


@dataclass(frozen=True)
class Validated:
    """A blueprint that passed the schema for one environment (None: the base)."""

    environment: str | None
    blueprint: Blueprint
    source_map: SourceMap
    spec: ClusterSpec
    """The blueprint resolved against the catalog (complete when the blueprint has no errors)."""


@dataclass
class ValidationResult:
    file: str
    document: Document | None
    findings: list[Finding] = field(default_factory=list)
    blueprints: dict[str | None, Validated] = field(default_factory=dict)
    """The blueprints (base: None, or an environment) that passed the schema."""
    checked: list[str | None] = field(default_factory=list)
    """Every blueprint that was checked, valid or not (in order)."""

    @property
    def lines(self) -> tuple[str, ...]:
        """The source lines of the file (empty when it could not be read as text)."""
        return self.document.lines if self.document is not None else ()

    @property
    def ok(self) -> bool:
        return not has_errors(self.findings)

    @property
    def environments(self) -> list[str]:
        return [env for env in self.blueprints if env is not None]


def validate_file(
    path: Path,
    *,
    display: str | None = None,
    environment: str | None = None,
    catalog: Catalog | None = None,
    checks: Sequence[Check] | None = None,
    today: dt.date | None = None,
    base_only: bool = False,
    strict_environment: bool = True,
    stack: StackView | None = None,
) -> ValidationResult:
    """Validate the blueprint at `path` (UsageError if it cannot be read at all).

    Without `environment`, the base and every environment are checked, unless `base_only` (commands
    that act on the base blueprint need not be blocked by a broken overlay). An environment the
    blueprint does not define is a UsageError, except that with `strict_environment` off a blueprint
    without `environments:` serves any environment as it is (a stack named after an environment).
    `today` (default: the system date) is the date the budget rules judge price staleness against.
    `stack`: the stack it is validated for (its settings), for the rules about a deployment; None: a
    command that deploys nothing.
    """
    document, findings = read_blueprint(path, display)
    return _validate(
        document,
        findings,
        file=display or str(path),
        environment=environment,
        catalog=catalog,
        checks=checks,
        today=today or dates.today(),
        base_only=base_only,
        strict_environment=strict_environment,
        stack=stack,
    )


def validate_bytes(
    raw: bytes,
    file: str,
    *,
    environment: str | None = None,
    catalog: Catalog | None = None,
    checks: Sequence[Check] | None = None,
    today: dt.date | None = None,
    base_only: bool = False,
    strict_environment: bool = True,
) -> ValidationResult:
    """Validate blueprint content that is already in memory (e.g. read from a git ref)."""
    document, findings = parse_blueprint_bytes(raw, file)
    return _validate(
        document,
        findings,
        file=file,
        environment=environment,
        catalog=catalog,
        checks=checks,
        today=today or dates.today(),
        base_only=base_only,
        strict_environment=strict_environment,
    )


def _validate(
    document: Document | None,
    findings: list[Finding],
    *,
    file: str,
    environment: str | None,
    catalog: Catalog | None,
    checks: Sequence[Check] | None,
    today: dt.date,
    base_only: bool = False,
    strict_environment: bool = True,
    stack: StackView | None = None,
) -> ValidationResult:
    result = ValidationResult(file=file, document=document, findings=list(findings))
    if document is None or not document.parsed:
        result.findings = normalize(result.findings)
        return result
    catalog = catalog or load_catalog()
    checks = CHECKS if checks is None else checks
    base_map = SourceMap(document)
    data = document.data
    if not isinstance(data, dict):
        result.findings.append(
            base_map.finding(
                "BP008",
                (),
                "a blueprint is a mapping of fields (version, name, cloud, ...), "
                f"not {'a list' if isinstance(data, list) else 'a single value'}",
                hint="start from one of blueprints/examples/*.yaml",
            )
        )
        result.findings = normalize(result.findings)
        return result

    overlays = data.get("environments")
    defined = [str(e) for e in overlays] if isinstance(overlays, dict) else []
    if isinstance(overlays, dict) and any(v is None for v in overlays.values()):
        # `prod:` with nothing under it is an empty overlay, not a null one.
        data = {**data, "environments": {k: {} if v is None else v for k, v in overlays.items()}}
    if environment is not None and environment not in defined and (defined or strict_environment):
        raise UsageError(_unknown_environment(environment, defined, file))

    targets = _targets(environment, defined, base_only=base_only)

    base_keys: set[tuple[str, str, int, int]] = set()
    for target, rule_env in targets:
        found: list[Finding] = []
        if target is not None:
            merged = apply_environment(document, data, target)
            found.extend(merged.findings)
            payload, source_map = merged.data, merged.source_map
        else:
            payload, source_map = data, base_map
        schema = check_schema(payload, source_map)
        found.extend(schema.findings)
        if schema.blueprint is not None:
            spec = resolve(schema.blueprint, catalog, rule_env)
            context = RuleContext(schema.blueprint, spec, catalog, source_map, rule_env, today, stack)
            found.extend(_run(checks, context))
            result.blueprints[rule_env] = Validated(rule_env, schema.blueprint, source_map, spec)
        elif schema.salvaged is not None and schema.source_map is not None:
            # Report what the rules find in the valid rest, except what follows from the invalid part.
            salvaged_checks = [c for c in checks if c is not check_budget or not schema.prices_changed]
            spec = resolve(schema.salvaged, catalog, rule_env)
            context = RuleContext(schema.salvaged, spec, catalog, schema.source_map, rule_env, today, stack)
            ruled = _run(salvaged_checks, context)
            found.extend(f for f in ruled if not schema.is_cascade(f))
        result.checked.append(rule_env)
        if target is None:
            base_keys = {_key(f) for f in found}
            if environment in defined:
                continue  # checked only to classify the environment's findings
        else:
            # What the base has too is the base's problem (reported once, without an environment, when
            # the base is reported); what only this environment has is its own, labelled with it.
            base_reported = environment is None
            found = [
                f if _key(f) in base_keys else _in_environment(f, target, source_map, payload)
                for f in found
                if not (base_reported and _key(f) in base_keys)
            ]
        result.findings.extend(found)
    result.findings = normalize(result.findings)
    return result


def _targets(
    environment: str | None, defined: list[str], *, base_only: bool
) -> list[tuple[str | None, str | None]]:
    """Which documents to check, as (overlay to apply, environment the spec is resolved for)."""
    if environment is None:
        return [(None, None)] if base_only else [(None, None), *((e, e) for e in defined)]
    if environment not in defined:
        return [(None, environment)]  # a blueprint without environments serves every stack as it is
    # The base is checked too (its findings are not reported) to tell which problems the environment's
    # overlay causes.
    return [(None, None), (environment, environment)]


def rule_context(validated: Validated, catalog: Catalog, today: dt.date) -> RuleContext:
    """What the rules saw of a validated blueprint, for findings made after validation (price caveats
    of an estimate)."""
    return RuleContext(
        validated.blueprint, validated.spec, catalog, validated.source_map, validated.environment, today
    )


def _run(checks: Sequence[Check], context: RuleContext) -> list[Finding]:
    return [finding for check in checks for finding in check(context)]


def _unknown_environment(environment: str, defined: list[str], file: str) -> str:
    if not defined:
        return (
            f"environment '{environment}' is not defined in {file}: it has no `environments:`; "
            "leave out --env to use the blueprint as it is"
        )
    near = closest(environment, defined)
    guess = f"; did you mean '{near}'?" if near else ""
    return f"environment '{environment}' is not defined in {file} (defined: {', '.join(defined)}){guess}"


def _key(finding: Finding) -> tuple[str, str, int, int]:
    return (finding.code, finding.field, finding.line, finding.column)


def _in_environment(finding: Finding, environment: str, source_map: SourceMap, data: Any) -> Finding:
    """An environment's own finding: labelled with it, and when the value at fault is inherited from
    the base blueprint, pointed at the overlay that made it wrong, with a hint that edits the overlay
    (a hint that edits the base would break the base and every other environment)."""
    labelled = dataclasses.replace(
        finding, environment=environment, message=f"{finding.message} (environment '{environment}')"
    )
    path = finding.path
    if not path or source_map.from_overlay(path, environment):
        return labelled  # written in the overlay: already where the user has to look
    touched = [p for p in source_map.touched if p and path[: len(p)] == p]
    if not touched:
        return labelled
    deepest = max(touched, key=len)
    where = source_map.touched[deepest]
    span = source_map.document.span(where, at_key=True)
    if span is None:
        return labelled
    below = path[len(deepest) :]
    key = render_path(below) or str(path[-1])
    if source_map.source_path(path) not in source_map.document.value_spans:
        # Nothing sets the value (it is missing, not inherited): nulling it would change nothing.
        fix = finding.hint or f"set {key}"
        hint = f"{fix}: in {render_path(where)} for {environment} only, or in the base for every environment"
    else:
        info = field_info(path, data)
        edit = f"`{key}: null`" if info is not None and not info.is_required() else f"`{key}: ...`"
        hint = f"for {environment} only, write {edit} in {render_path(where)} (the value comes from the base)"
        if finding.hint:
            hint += f"; or, for every environment: {finding.hint}"
    return dataclasses.replace(
        labelled,
        line=span.line,
        column=span.column,
        end_column=span.end_column if span.end_line == span.line else 0,
        hint=hint,
    )
