"""Promotion gates: may the blueprint that runs in one stack go to the next?

`clusterfab promote --from dev --to prod` moves one blueprint revision to another environment, in the
spirit of ParallelCluster's update policies: every check is made first and every failure is reported,
each with what to do about it. The gates are pure functions of plain inputs (stack outputs and
config values, the target's preview steps, a cost estimate), so each refusal is tested without the
Pulumi CLI:

- blueprint: both stacks name the same blueprint file, and the source was last updated from exactly
  the local file's content (same sha256 digest); a different catalog version is reported, not refused.
- health: the source's health record in its cluster bucket passed on the whole fleet, for that same
  blueprint, playbook bundle, catalog and git commit, after the source's last update and recently.
- replacements: the target's preview deletes or replaces no protected or stateful resource, unless
  `--allow-replace`.
- budget: the blueprint in the target's environment is within that environment's budget.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from clusterfab.clouds.base import StoredObject
from clusterfab.cost.estimate import CostEstimate
from clusterfab.cost.render import budget_verdict
from clusterfab.deploy.events import ResourceStep, destructive_steps
from clusterfab.health import (
    Provenance,
    deployed_catalog_version,
    deployed_digest,
    health_problems,
)
from clusterfab.stackinput import BLUEPRINT_KEY, CONFIG_NAMESPACE

BLUEPRINT_CONFIG_KEY = f"{CONFIG_NAMESPACE}:{BLUEPRINT_KEY}"


@dataclass(frozen=True, slots=True)
class GateResult:
    gate: str
    """blueprint, health, replacements or budget."""
    passed: bool
    reason: str
    """Refused: what is wrong and how to fix it. Passed: what was checked."""
    notes: tuple[str, ...] = ()
    """Things worth knowing that do not refuse (a different catalog version, an unpriced item)."""


def short(digest: str | None) -> str:
    return "none" if digest is None else digest[:12]


def blueprint_gate(
    *,
    source: str,
    target: str,
    source_blueprint: str | None,
    target_blueprint: str | None,
    local_digest: str,
    source_outputs: Mapping[str, Any],
    catalog_version: str,
) -> GateResult:
    """The source stack runs the same blueprint revision as the local file the target will get."""
    if source_blueprint is None:
        return GateResult(
            "blueprint",
            False,
            f"stack {source} has no {BLUEPRINT_CONFIG_KEY} config: set it to the blueprint both stacks "
            f"run (`pulumi config set {BLUEPRINT_CONFIG_KEY} blueprints/... --stack {source}`)",
        )
    if target_blueprint is None:
        return GateResult(
            "blueprint",
            False,
            f"stack {target} has no {BLUEPRINT_CONFIG_KEY} config: set it to {source_blueprint} "
            f"(`pulumi config set {BLUEPRINT_CONFIG_KEY} {source_blueprint} --stack {target}`)",
        )
    if target_blueprint != source_blueprint:
        return GateResult(
            "blueprint",
            False,
            f"{source} runs {source_blueprint} but {target} runs {target_blueprint}; promotion moves one "
            f"blueprint between environments: point both stacks' {BLUEPRINT_CONFIG_KEY} at the same file",
        )
    deployed = deployed_digest(source_outputs)
    if deployed is None:
        return GateResult(
            "blueprint",
            False,
            f"stack {source} has no blueprint.digest output (never updated by this program?): "
            f"run `clusterfab up --stack {source}` first",
        )
    if deployed != local_digest:
        return GateResult(
            "blueprint",
            False,
            f"{source} was last updated from another revision of {source_blueprint} (digest "
            f"{short(deployed)}, the local file is {short(local_digest)}): deploy this revision to "
            f"{source} first (`clusterfab up --stack {source}`), check its health, then promote",
        )
    notes: tuple[str, ...] = ()
    deployed_catalog = deployed_catalog_version(source_outputs)
    if deployed_catalog is not None and deployed_catalog != catalog_version:
        notes = (
            f"{source} was updated with catalog {deployed_catalog}, this clusterfab has catalog "
            f"{catalog_version}: machine facts and prices may differ from what {source} was built with",
        )
    return GateResult(
        "blueprint", True, f"{source} runs {source_blueprint} at digest {short(local_digest)}", notes
    )


def health_gate(
    *,
    source: str,
    stored: StoredObject | None,
    location: str,
    signing_key: str | None,
    expected: Provenance,
    last_update: dt.datetime | None,
    now: dt.datetime,
    max_age: dt.timedelta,
) -> GateResult:
    """The source's health record, written in its bucket by `configure` and signed with the source's
    health signing key, proves the revision being promoted healthy on the whole fleet, after the
    source's last update and recently enough."""
    fix = f"run the health check on {source} (`clusterfab configure --stack {source}`)"
    if stored is None:
        return GateResult("health", False, f"no health check is recorded for {source} ({location}): {fix}")
    problems = health_problems(
        stored,
        stack=source,
        signing_key=signing_key,
        expected=expected,
        last_update=last_update,
        now=now,
        max_age=max_age,
    )
    if problems:
        return GateResult(
            "health",
            False,
            f"the health record {stored.location} does not pass: {'; '.join(problems)}; {fix}",
        )
    when = stored.written_at.isoformat(timespec="seconds")
    return GateResult(
        "health",
        True,
        f"{source} passed its health check at {when} (commit {short(expected.commit)}, "
        f"bundle {short(expected.bundle_sha256)})",
    )


def replacement_gate(
    *,
    target: str,
    steps: Sequence[ResourceStep],
    stateful_types: Collection[str],
    allow_replace: bool,
    preview_error: str | None = None,
) -> GateResult:
    """The target's preview destroys no protected or stateful resource (unless allowed)."""
    if preview_error is not None:
        return GateResult(
            "replacements",
            False,
            f"the preview of {target} failed ({preview_error}): fix it first "
            f"(`clusterfab preview --stack {target}` shows the whole output)",
        )
    risky = [s for s in destructive_steps(list(steps)) if s.protect or s.type in stateful_types]
    if not risky:
        return GateResult(
            "replacements", True, f"the preview of {target} deletes or replaces no stateful resource"
        )
    described = "; ".join(_describe(step, stateful_types) for step in risky)
    if allow_replace:
        notes = [f"allowed by --allow-replace: {described}"]
        if any(step.protect for step in risky):
            notes.append(
                "Pulumi still refuses to delete protected resources: unprotect them first "
                "(`protect: false` on the storage in the blueprint, or `pulumi state unprotect`)"
            )
        return GateResult(
            "replacements",
            True,
            f"{len(risky)} destructive change(s) allowed by --allow-replace",
            tuple(notes),
        )
    return GateResult(
        "replacements",
        False,
        f"the preview of {target} would destroy data: {described}; change the blueprint so these are "
        "kept, or pass --allow-replace to accept the loss",
    )


def _describe(step: ResourceStep, stateful_types: Collection[str]) -> str:
    what = "delete" if step.op == "delete" else "replace"
    flags = [f for f, on in (("protected", step.protect), ("stateful", step.type in stateful_types)) if on]
    because = step.replace_keys or step.changed
    cause = f", because of {', '.join(because)}" if what == "replace" and because else ""
    return f"{what} {step.name} ({step.type}, {' and '.join(flags)}{cause})"


def budget_gate(
    *,
    target: str,
    environment: str | None,
    estimate: CostEstimate | None,
    invalid_reason: str | None = None,
) -> GateResult:
    """The blueprint in the target's environment is within that environment's budget."""
    scope = f"environment {environment}" if environment else "the base blueprint"
    if estimate is None:
        check = "clusterfab validate BLUEPRINT" + (f" --env {environment}" if environment else "")
        return GateResult(
            "budget",
            False,
            f"the blueprint cannot be costed for {target} ({scope}): {invalid_reason or 'it is invalid'}; "
            f"fix it (`{check}`)",
        )
    verdict = budget_verdict(estimate)
    notes = tuple(w.message for w in estimate.warnings if w.reason == "missing")
    if estimate.budget.ok:
        return GateResult("budget", True, f"{target} ({scope}): {verdict}", notes)
    return GateResult(
        "budget",
        False,
        f"{target} ({scope}) would be {verdict}: make the {environment or 'base'} blueprint smaller "
        "or raise its budget (budget.max_hourly_usd / budget.max_monthly_usd)",
        notes,
    )


def refusal(source: str, target: str, results: Sequence[GateResult]) -> str | None:
    """The message of a refused promotion listing every failed gate, or None when all passed."""
    failed = [r for r in results if not r.passed]
    if not failed:
        return None
    lines = [f"promotion of {source} to {target} refused ({len(failed)} of {len(results)} gates failed):"]
    lines += [f"  - {r.gate}: {r.reason}" for r in failed]
    return "\n".join(lines)
