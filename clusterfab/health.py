"""The health record of a stack: what `clusterfab configure` proved about its nodes, for `promote`.

A record is a JSON object in the stack's own cluster bucket, `health/<stack>.json`, written by the
identity that runs `configure` (the deploy identity: nodes may only read the bucket, and a record in
stack config or in git is never read). It binds the check to everything that made the cluster what
it was: the blueprint digest, the playbook bundle the nodes run, the catalog version and the git
commit of the checkout that ran the check; and it counts the hosts that passed per node group next
to each group's minimum, so a check of part of a fleet never passes.

The time of a record is the store's own (S3 `LastModified`, GCS `updated`): a writer can put any
`checked_at` in the body, but not move the server's clock. `promote` refuses a record older than the
source stack's last update or than its maximum age (`health_problems`).

A record is signed (HMAC-SHA256) with the stack's health signing key, random bytes that live only in
the stack's state (`components/health_signing.py`, exported as the secret output `health_signing_key`):
whoever can write the bucket but cannot read the stack's secrets (a node, a job, a person with bucket
rights; GCS has no per-prefix deny to keep them out of `health/`) cannot write a record `promote` takes.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from clusterfab.clouds.base import StoredObject

HEALTH_PREFIX = "health/"
DEFAULT_MAX_AGE = dt.timedelta(hours=72)
"""How old a passing check may be when `promote` reads it, unless --health-max-age says otherwise."""
CLOCK_SKEW = dt.timedelta(minutes=5)
"""How far a record's own `checked_at` may lie from the store's time before the record is refused."""

HealthStatus = Literal["passed", "failed"]
_STATUSES: tuple[HealthStatus, ...] = ("passed", "failed")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_COMMIT = re.compile(r"[0-9a-f]{40}(-dirty)?")
_KEY_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
SIGNATURE_FIELD = "signature"
_SIGNATURE_SCHEME = "hmac-sha256="


class HealthRecordError(ValueError):
    """The object is not a health record; the message says what is wrong with it."""


def health_key(stack: str) -> str:
    """The object key of a stack's record (`org/project/dev` and `dev` are both keyed by `dev`)."""
    return f"{HEALTH_PREFIX}{_KEY_UNSAFE.sub('-', stack.rsplit('/', 1)[-1])}.json"


@dataclass(frozen=True, slots=True)
class Provenance:
    """What a cluster was built and checked from; a record passes a gate only for the same values."""

    blueprint_digest: str
    """sha256 of the blueprint file (the stack's `blueprint.digest` output)."""
    bundle_sha256: str
    """sha256 of the playbook bundle the nodes run (the stack's `blueprint.bundle_sha256` output)."""
    catalog_version: str
    commit: str
    """The git commit of the checkout, with `-dirty` when it had uncommitted changes."""


@dataclass(frozen=True, slots=True)
class HealthRecord:
    status: HealthStatus
    stack: str
    provenance: Provenance
    checked_at: dt.datetime
    """When the check finished, as the writer says (timezone-aware)."""
    hosts: Mapping[str, int] = field(default_factory=dict)
    """Per node group: hosts whose health check passed."""
    required: Mapping[str, int] = field(default_factory=dict)
    """Per node group: the group's minimum size when it was checked."""
    reason: str = ""
    """Why a failed record failed."""

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def to_json(self, signing_key: str) -> str:
        """The record as the bucket keeps it, signed with the stack's health signing key."""
        data: dict[str, Any] = {
            "status": self.status,
            "stack": self.stack,
            "blueprint_digest": self.provenance.blueprint_digest,
            "bundle_sha256": self.provenance.bundle_sha256,
            "catalog_version": self.provenance.catalog_version,
            "commit": self.provenance.commit,
            "checked_at": self.checked_at.isoformat(),
            "hosts": dict(self.hosts),
            "required": dict(self.required),
            "reason": self.reason,
        }
        data[SIGNATURE_FIELD] = _signature(data, signing_key)
        return json.dumps(data, indent=2, sort_keys=True) + "\n"


def _signature(data: Mapping[str, Any], signing_key: str) -> str:
    # Over a canonical form of every other field: the same record signs the same however it is laid out.
    canonical = json.dumps(
        {k: v for k, v in data.items() if k != SIGNATURE_FIELD}, sort_keys=True, separators=(",", ":")
    )
    mac = hmac.new(signing_key.encode(), canonical.encode(), hashlib.sha256)
    return _SIGNATURE_SCHEME + mac.hexdigest()


def signature_problem(raw: bytes, signing_key: str) -> str | None:
    """Why the body is not a record signed with `signing_key` (None: it is)."""
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None  # parse_record says what is wrong with it
    if not isinstance(data, dict):
        return None
    given = data.get(SIGNATURE_FIELD)
    if not isinstance(given, str):
        return "it is not signed"
    if not hmac.compare_digest(given.encode(), _signature(data, signing_key).encode()):
        return "its signature is not the stack's health signing key's"
    return None


def fleet_shortfall(required: Mapping[str, int], hosts: Mapping[str, int]) -> list[str]:
    """The node groups with fewer passing hosts than their minimum, described."""
    return [
        f"{group}: {hosts.get(group, 0)} of at least {minimum} host(s) passed"
        for group, minimum in sorted(required.items())
        if hosts.get(group, 0) < minimum
    ]


def check_record(
    *,
    stack: str,
    provenance: Provenance,
    hosts: Mapping[str, int],
    required: Mapping[str, int],
    checks_passed: bool,
    at: dt.datetime | None = None,
) -> HealthRecord:
    """The record of a health check that just finished: passed only when every check passed on at
    least each node group's minimum number of hosts."""
    when = at or dt.datetime.now(dt.UTC)
    if when.tzinfo is None:
        raise HealthRecordError("the time of a health check must be timezone-aware")
    short = fleet_shortfall(required, hosts)
    status: HealthStatus
    if not checks_passed:
        status, reason = "failed", "the health check failed on at least one host"
    elif short:
        status, reason = "failed", "partial fleet: " + "; ".join(short)
    else:
        status, reason = "passed", ""
    return HealthRecord(status, stack, provenance, when, dict(hosts), dict(required), reason)


def _text(data: Mapping[str, Any], key: str, pattern: re.Pattern[str] | None = None) -> str:
    value = data.get(key)
    if not isinstance(value, str) or (pattern is not None and not pattern.fullmatch(value)):
        raise HealthRecordError(f"{key} {value!r} is not valid")
    return value


def _counts(data: Mapping[str, Any], key: str) -> dict[str, int]:
    value = data.get(key, {})
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in value.items()
    ):
        raise HealthRecordError(f"{key} must map node groups to host counts")
    return value


def parse_record(raw: str | bytes) -> HealthRecord:
    """The record in an object's body; HealthRecordError says what is wrong with a bad one."""
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise HealthRecordError(f"not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise HealthRecordError("not a JSON object")
    status = data.get("status")
    if status not in _STATUSES:
        raise HealthRecordError(f"status {status!r} is not one of {', '.join(_STATUSES)}")
    provenance = Provenance(
        blueprint_digest=_text(data, "blueprint_digest", _SHA256),
        bundle_sha256=_text(data, "bundle_sha256", _SHA256),
        catalog_version=_text(data, "catalog_version"),
        commit=_text(data, "commit", _COMMIT),
    )
    try:
        checked_at = dt.datetime.fromisoformat(_text(data, "checked_at"))
    except ValueError:
        raise HealthRecordError(f"checked_at {data['checked_at']!r} is not an ISO date-time") from None
    if checked_at.tzinfo is None:
        raise HealthRecordError("checked_at has no time zone")
    return HealthRecord(
        status=status,
        stack=_text(data, "stack"),
        provenance=provenance,
        checked_at=checked_at,
        hosts=_counts(data, "hosts"),
        required=_counts(data, "required"),
        reason=str(data.get("reason", "")),
    )


def health_problems(
    stored: StoredObject,
    *,
    stack: str,
    signing_key: str | None,
    expected: Provenance,
    last_update: dt.datetime | None,
    now: dt.datetime,
    max_age: dt.timedelta,
) -> list[str]:
    """Why a stored record does not prove that stack `stack`, as built from `expected`, is healthy
    now (empty: it does). `signing_key`: the stack's `health_signing_key` output (None: it has none)."""
    try:
        record = parse_record(stored.body)
    except HealthRecordError as exc:
        return [f"{stored.location} is not a health record ({exc})"]
    if signing_key is None:
        return [
            f"{stack} has no health signing key (its stack predates signed records): "
            f"update it (`clusterfab up --stack {stack}`)"
        ]
    if (forged := signature_problem(stored.body, signing_key)) is not None:
        # Nothing else in an unsigned body is worth reporting: anyone may have written it.
        return [f"{forged}: it was not written by `clusterfab configure` for {stack}"]
    problems: list[str] = []
    if record.stack.rsplit("/", 1)[-1] != stack.rsplit("/", 1)[-1]:
        problems.append(f"it records stack {record.stack}, not {stack}")
    if not record.passed:
        problems.append(f"the last check failed ({record.reason or 'no reason recorded'})")
    elif short := fleet_shortfall(record.required, record.hosts):
        problems.append("it passed on a partial fleet (" + "; ".join(short) + ")")
    problems += _provenance_problems(record.provenance, expected)
    if abs(record.checked_at - stored.written_at) > CLOCK_SKEW:
        problems.append(
            f"its checked_at ({record.checked_at:%Y-%m-%d %H:%M} UTC) is not when it was written "
            f"({stored.written_at:%Y-%m-%d %H:%M} UTC)"
        )
    if last_update is not None and stored.written_at <= last_update:
        problems.append(
            f"it was written at {stored.written_at:%Y-%m-%d %H:%M} UTC, before {stack}'s last update "
            f"({last_update:%Y-%m-%d %H:%M} UTC)"
        )
    if now - stored.written_at > max_age:
        hours = (now - stored.written_at).total_seconds() / 3600
        problems.append(f"it is {hours:.0f} h old, more than {max_age.total_seconds() / 3600:.0f} h")
    return problems


def _provenance_problems(recorded: Provenance, expected: Provenance) -> list[str]:
    problems = []
    for name, what in (
        ("blueprint_digest", "blueprint digest"),
        ("bundle_sha256", "playbook bundle"),
        ("catalog_version", "catalog version"),
        ("commit", "git commit"),
    ):
        have, want = getattr(recorded, name), getattr(expected, name)
        if have != want:
            problems.append(f"it checked {what} {_short(have)}, this promotion is of {_short(want)}")
    if expected.commit.endswith("-dirty"):
        problems.append("this checkout has uncommitted changes: commit them, deploy and check again")
    return problems


def _short(value: str) -> str:
    return value[:12] if _SHA256.fullmatch(value) or _COMMIT.fullmatch(value) else value


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
