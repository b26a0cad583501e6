"""The health record of a stack: stack config `clusterfab:health`, written after a health check.

`clusterfab configure` runs the health-check playbook against a stack's nodes and records the outcome
in the stack's own config, so that `clusterfab promote` can require a passing check of the very
blueprint revision it promotes. The value is JSON:

    {"status": "passed", "digest": "<sha256 of the blueprint file>", "at": "2026-11-22T10:00:00+00:00"}

`digest` is the `blueprint.digest` output of the stack when it was checked (`deployed_digest`).
Writers call `record_health(stack, passed=..., digest=...)`; the promotion gate reads it with
`read_health`. Pure apart from the two functions that take a stack.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from clusterfab.stackinput import CONFIG_NAMESPACE

HEALTH_KEY = "health"
HEALTH_CONFIG_KEY = f"{CONFIG_NAMESPACE}:{HEALTH_KEY}"
"""The stack config key holding the JSON health record."""

HealthStatus = Literal["passed", "failed"]
_STATUSES: tuple[HealthStatus, ...] = ("passed", "failed")
_DIGEST = re.compile(r"^[0-9a-f]{64}$")


class HealthRecordError(ValueError):
    """The config value is not a health record; the message says what is wrong with it."""


@dataclass(frozen=True, slots=True)
class HealthRecord:
    status: HealthStatus
    digest: str
    """sha256 of the blueprint file the checked cluster was deployed from."""
    at: dt.datetime
    """When the check finished (timezone-aware)."""

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def to_config(self) -> str:
        """The stack config value: compact JSON with sorted keys."""
        return json.dumps(
            {"at": self.at.isoformat(), "digest": self.digest, "status": self.status},
            sort_keys=True,
            separators=(",", ":"),
        )


def health_record(*, passed: bool, digest: str, at: dt.datetime | None = None) -> HealthRecord:
    """A record of a check that just finished (at now, UTC, unless given)."""
    if not _DIGEST.match(digest):
        raise HealthRecordError(f"digest {digest!r} is not a sha256 hex digest")
    when = at or dt.datetime.now(dt.UTC)
    if when.tzinfo is None:
        raise HealthRecordError("the time of a health check must be timezone-aware")
    return HealthRecord(status="passed" if passed else "failed", digest=digest, at=when)


def parse_health(raw: str) -> HealthRecord:
    """The record in a config value; HealthRecordError says what is wrong with a bad one."""
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise HealthRecordError(f"not JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise HealthRecordError("not a JSON object")
    status, digest, at = data.get("status"), data.get("digest"), data.get("at")
    if status not in _STATUSES:
        raise HealthRecordError(f"status {status!r} is not one of {', '.join(_STATUSES)}")
    if not isinstance(digest, str) or not _DIGEST.match(digest):
        raise HealthRecordError(f"digest {digest!r} is not a sha256 hex digest")
    if not isinstance(at, str):
        raise HealthRecordError(f"at {at!r} is not an ISO date-time")
    try:
        when = dt.datetime.fromisoformat(at)
    except ValueError:
        raise HealthRecordError(f"at {at!r} is not an ISO date-time") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return HealthRecord(status=status, digest=digest, at=when)


def deployed_digest(outputs: Mapping[str, Any]) -> str | None:
    """The blueprint digest a stack was last updated from (its `blueprint.digest` output)."""
    blueprint = outputs.get("blueprint")
    digest = blueprint.get("digest") if isinstance(blueprint, Mapping) else None
    return digest if isinstance(digest, str) else None


def deployed_catalog_version(outputs: Mapping[str, Any]) -> str | None:
    """The catalog version a stack was last updated with (its `blueprint.catalog_version` output)."""
    blueprint = outputs.get("blueprint")
    version = blueprint.get("catalog_version") if isinstance(blueprint, Mapping) else None
    return version if isinstance(version, str) else None


class ConfigStack(Protocol):
    """What the two helpers need of a stack (`clusterfab.deploy.automation.DeployStack` has it)."""

    def config(self) -> Mapping[str, str]: ...

    def set_config(self, key: str, value: str) -> None: ...


def record_health(
    stack: ConfigStack, *, passed: bool, digest: str, at: dt.datetime | None = None
) -> HealthRecord:
    """Write the outcome of a health check to the stack's config; returns what was written."""
    record = health_record(passed=passed, digest=digest, at=at)
    stack.set_config(HEALTH_CONFIG_KEY, record.to_config())
    return record


def read_health(stack: ConfigStack) -> str | None:
    """The raw health config value of a stack (None when none was recorded); see `parse_health`."""
    return stack.config().get(HEALTH_CONFIG_KEY)
