"""Load a blueprint in one pass: parse, environments, schema, the ClusterSpec, the rules.

Everything that needs a ClusterSpec starts here (the CLI, the stack program's input, promotion,
render), so a blueprint is read, merged with its environment, checked and resolved the same way
everywhere. All findings of all layers are collected, de-duplicated and sorted; nothing stops at the
first problem. Without an environment the base blueprint and every environment overlay are loaded, so
`clusterfab validate` covers what `pulumi up` will see on each stack. The rules themselves run in
`clusterfab.rules.engine`.
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
from clusterfab.rules.context import Check, RuleContext, StackView
from clusterfab.rules.engine import run_checks, run_salvaged_checks
from clusterfab.rules.registry import CHECKS
from clusterfab.rules.schema import check_schema, field_info
from clusterfab.spec import ClusterSpec, resolve


@dataclass(frozen=True)
class Resolved:
    """A blueprint that passed the schema for one environment (None: the base)."""

    environment: str | None
    blueprint: Blueprint
    source_map: SourceMap
    spec: ClusterSpec
    """The blueprint resolved against the catalog (complete when the blueprint has no errors)."""


@dataclass
class Loaded:
    file: str
    document: Document | None
    findings: list[Finding] = field(default_factory=list)
    blueprints: dict[str | None, Resolved] = field(default_factory=dict)
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


@dataclass(frozen=True)
class _Request:
    """What a load is asked for (see `load`)."""

    environment: str | None
    catalog: Catalog | None
    checks: Sequence[Check]
    today: dt.date
    stack: StackView | None = None
    base_only: bool = False
    strict_environment: bool = True


def load(
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
) -> Loaded:
    """Load the blueprint at `path` (UsageError if it cannot be read at all).

    Without `environment`, the base and every environment are loaded, unless `base_only` (commands
    that act on the base blueprint need not be blocked by a broken overlay). An environment the
    blueprint does not define is a UsageError, except that with `strict_environment` off a blueprint
    without `environments:` serves any environment as it is (a stack named after an environment).
    `today` (default: the system date) is the date the budget rules judge price staleness against.
    `stack`: the stack it is loaded for (its settings), for the rules about a deployment; None: a
    command that deploys nothing.
    """
    document, findings = read_blueprint(path, display)
    request = _Request(
        environment,
        catalog,
        CHECKS if checks is None else checks,
        today or dates.today(),
        stack,
        base_only,
        strict_environment,
    )
    return _load(document, findings, display or str(path), request)


def load_bytes(
    raw: bytes,
    file: str,
    *,
    environment: str | None = None,
    catalog: Catalog | None = None,
    checks: Sequence[Check] | None = None,
    today: dt.date | None = None,
    base_only: bool = False,
    strict_environment: bool = True,
) -> Loaded:
    """Load blueprint content that is already in memory (e.g. read from a git ref)."""
    document, findings = parse_blueprint_bytes(raw, file)
    request = _Request(
        environment,
        catalog,
        CHECKS if checks is None else checks,
        today or dates.today(),
        base_only=base_only,
        strict_environment=strict_environment,
    )
    return _load(document, findings, file, request)


def rule_context(resolved: Resolved, catalog: Catalog, today: dt.date) -> RuleContext:
    """What the rules saw of a loaded blueprint, for findings made after loading (price caveats of an
    estimate)."""
    return RuleContext(
        resolved.blueprint, resolved.spec, catalog, resolved.source_map, resolved.environment, today
    )


def _load(document: Document | None, findings: list[Finding], file: str, request: _Request) -> Loaded:
    result = Loaded(file=file, document=document, findings=list(findings))
    data = _mapping(document, result.findings)
    if document is None or data is None:
        result.findings = normalize(result.findings)
        return result
    catalog = request.catalog or load_catalog()
    defined, data = _overlays(data)
    environment = request.environment
    if environment is not None and environment not in defined and (defined or request.strict_environment):
        raise UsageError(_unknown_environment(environment, defined, file))

    base_keys: set[tuple[str, str, int, int]] = set()
    for target, rule_env in _targets(environment, defined, base_only=request.base_only):
        payload, source_map, found = _merged(document, data, target)
        found.extend(_check(payload, source_map, rule_env, catalog, request, result))
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


def _mapping(document: Document | None, findings: list[Finding]) -> dict[Any, Any] | None:
    """The blueprint's top-level mapping; None (with a finding when it is not a mapping) when there is
    nothing to check."""
    if document is None or not document.parsed:
        return None
    data = document.data
    if isinstance(data, dict):
        return data
    findings.append(
        SourceMap(document).finding(
            "BP008",
            (),
            "a blueprint is a mapping of fields (version, name, cloud, ...), "
            f"not {'a list' if isinstance(data, list) else 'a single value'}",
            hint="start from one of blueprints/examples/*.yaml",
        )
    )
    return None


def _overlays(data: dict[Any, Any]) -> tuple[list[str], dict[Any, Any]]:
    """The environments the blueprint defines, and its data with every overlay a mapping."""
    overlays = data.get("environments")
    defined = [str(e) for e in overlays] if isinstance(overlays, dict) else []
    if isinstance(overlays, dict) and any(v is None for v in overlays.values()):
        # `prod:` with nothing under it is an empty overlay, not a null one.
        data = {**data, "environments": {k: {} if v is None else v for k, v in overlays.items()}}
    return defined, data


def _merged(
    document: Document, data: dict[Any, Any], target: str | None
) -> tuple[Any, SourceMap, list[Finding]]:
    """The document to check (the base, or the base merged with `target`'s overlay), where its values
    are written, and what the merge found."""
    if target is None:
        return data, SourceMap(document), []
    merged = apply_environment(document, data, target)
    return merged.data, merged.source_map, list(merged.findings)


def _check(  # noqa: PLR0917 - one document of one load, positionally as `_load` walks them
    payload: Any,
    source_map: SourceMap,
    environment: str | None,
    catalog: Catalog,
    request: _Request,
    result: Loaded,
) -> list[Finding]:
    """Check one document against the schema, resolve it and run the rules; a document that passes
    the schema joins `result.blueprints`."""
    schema = check_schema(payload, source_map)
    found = list(schema.findings)
    today, stack = request.today, request.stack
    if schema.blueprint is not None:
        spec = resolve(schema.blueprint, catalog, environment)
        context = RuleContext(schema.blueprint, spec, catalog, source_map, environment, today, stack)
        found.extend(run_checks(request.checks, context))
        result.blueprints[environment] = Resolved(environment, schema.blueprint, source_map, spec)
    elif schema.salvaged is not None and schema.source_map is not None:
        spec = resolve(schema.salvaged, catalog, environment)
        context = RuleContext(schema.salvaged, spec, catalog, schema.source_map, environment, today, stack)
        found.extend(run_salvaged_checks(request.checks, context, schema))
    return found


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
