"""What a person (or the gates) approved after a preview, so that `up` changes exactly that.

`up` without --yes and `promote` preview the stack with an update plan (Pulumi's `preview --save-plan`);
the update then runs with that plan (`up --plan`), and the engine fails on any operation the plan
does not contain. What the engine cannot see is checked here, right before the update: the blueprint
file (its sha256) and the stack's config must still be what was previewed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from clusterfab.core.errors import RefusedError


def file_digest(path: Path) -> str:
    """sha256 of a file, as the program records it in the `blueprint.digest` output."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass(frozen=True)
class Approval:
    stack: str
    plan: Path
    """The update plan the preview saved."""
    config: Mapping[str, str]
    """The stack's config when it was previewed."""
    blueprint: Path | None = None
    """The blueprint file the stack's program reads (None when the stack names none)."""
    digest: str | None = None
    """Its sha256 when it was previewed."""


def approve(stack: str, plan: Path, config: Mapping[str, str], blueprint: Path | None) -> Approval:
    """Record what was previewed, at preview time."""
    digest = file_digest(blueprint) if blueprint is not None and blueprint.is_file() else None
    return Approval(stack, plan, dict(config), blueprint, digest)


def drift(approval: Approval, config_now: Mapping[str, str]) -> list[str]:
    """What changed since the preview that the update plan cannot catch (empty: nothing)."""
    problems = []
    if approval.blueprint is not None and approval.digest is not None:
        now = file_digest(approval.blueprint) if approval.blueprint.is_file() else None
        if now != approval.digest:
            problems.append(
                f"the blueprint {approval.blueprint.name} changed since the preview "
                f"(sha256 {approval.digest[:12]} -> {now[:12] if now else 'deleted'})"
            )
    changed = sorted(
        key
        for key in set(approval.config) | set(config_now)
        if approval.config.get(key) != config_now.get(key)
    )
    if changed:
        problems.append(
            f"the config of stack {approval.stack} changed since the preview ({', '.join(changed)})"
        )
    return problems


def require_unchanged(approval: Approval, config_now: Mapping[str, str]) -> None:
    """Refuse (exit 1) to update from a preview that no longer describes what would run."""
    problems = drift(approval, config_now)
    if problems:
        raise RefusedError(
            f"not updating {approval.stack}: "
            + "; ".join(problems)
            + "; preview again and approve what is there now"
        )
