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

from clusterfab.blueprint.loader import Document, parse_blueprint_bytes, read_blueprint
from clusterfab.blueprint.models import Blueprint
from clusterfab.blueprint.overlay import apply_environment
from clusterfab.blueprint.sourcemap import SourceMap
from clusterfab.catalog import Catalog, load_catalog
from clusterfab.core.errors import UsageError
from clusterfab.core.findings import Finding, has_errors, normalize
from clusterfab.rules.context import Check, RuleContext
from clusterfab.rules.registry import CHECKS
from clusterfab.rules.schema import validate_blueprint
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
) -> ValidationResult:
    """Validate the blueprint at `path` (UsageError if it cannot be read at all).

    Without `environment`, the base and every environment are checked, unless `base_only` (commands
    that act on the base blueprint need not be blocked by a broken overlay). `today` (default: the
    system date) is the date the budget rules judge price staleness against.
    """
    document, findings = read_blueprint(path, display)
    return _validate(
        document,
        findings,
        file=display or str(path),
        environment=environment,
        catalog=catalog,
        checks=checks,
        today=today or dt.date.today(),
        base_only=base_only,
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
        today=today or dt.date.today(),
        base_only=base_only,
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
) -> ValidationResult:
    result = ValidationResult(file=file, document=document, findings=list(findings))
    if document is None:
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
    defined = list(overlays) if isinstance(overlays, dict) else []
    if environment is not None and defined and environment not in defined:
        raise UsageError(
            f"environment '{environment}' is not defined in {file} (defined: {', '.join(defined)})"
        )

    targets = _targets(environment, defined, base_only)

    base_keys: set[tuple[str, str, int, int]] = set()
    for target in targets:
        found: list[Finding] = []
        if target is not None and target in defined:
            merged = apply_environment(document, data, target)
            found.extend(merged.findings)
            payload, source_map = merged.data, merged.source_map
        else:
            payload, source_map = data, base_map
        blueprint, schema_findings = validate_blueprint(payload, source_map)
        found.extend(schema_findings)
        rule_env = target if target is not None else environment
        if blueprint is not None:
            spec = resolve(blueprint, catalog, rule_env)
            context = RuleContext(
                blueprint=blueprint,
                spec=spec,
                catalog=catalog,
                source_map=source_map,
                environment=rule_env,
                today=today,
            )
            for check in checks:
                found.extend(check(context))
            result.blueprints[rule_env] = Validated(rule_env, blueprint, source_map, spec)
        if target is None:
            base_keys = {_key(f) for f in found}
        elif environment is None:
            # Checking every environment: what the base already reports is said once, and what only
            # an environment causes says which environment.
            found = [_in_environment(f, target) for f in found if _key(f) not in base_keys]
        result.findings.extend(found)
    result.findings = normalize(result.findings)
    return result


def _targets(environment: str | None, defined: list[str], base_only: bool) -> list[str | None]:
    """Which documents to check: the base and every environment, or the one asked for."""
    if environment is None:
        return [None] if base_only else [None, *defined]
    if environment in defined:
        return [environment]
    return [None]  # a blueprint without environments serves every stack as it is


def _key(finding: Finding) -> tuple[str, str, int, int]:
    return (finding.code, finding.field, finding.line, finding.column)


def _in_environment(finding: Finding, environment: str) -> Finding:
    return dataclasses.replace(finding, message=f"{finding.message} (environment '{environment}')")
