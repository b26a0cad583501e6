"""GPU-hours per team this month (UTC), charged round by round: the budget Kueue cannot keep.

Kept as JSON in a ConfigMap (`ledger.json`) so that a restarted agent goes on from where the last one
stopped, and so that an administrator can read (or correct) it with kubectl:

    {"format": 1, "month": "2026-11", "at": 1795168800.0, "warned": ["research"],
     "teams": {"research": {"gpu_hours": 12.5, "gpus": 8}}}

`at` is when the ledger was last charged (seconds since the epoch), `gpus` what each team held then,
`warned` the teams already warned this month.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from dataclasses import dataclass, field

FORMAT = 1
KEY = "ledger.json"
"""The ConfigMap's data key."""


@dataclass(frozen=True)
class Ledger:
    month: str
    """The UTC month charged, `YYYY-MM`."""
    at: float
    hours: Mapping[str, float] = field(default_factory=dict)
    gpus: Mapping[str, float] = field(default_factory=dict)
    warned: frozenset[str] = frozenset()


def month_of(at: float) -> str:
    return dt.datetime.fromtimestamp(at, dt.UTC).strftime("%Y-%m")


def month_start(at: float) -> float:
    moment = dt.datetime.fromtimestamp(at, dt.UTC)
    return moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0).timestamp()


def charge(ledger: Ledger | None, at: float, gpus: Mapping[str, float]) -> Ledger:
    """The ledger after a round at `at` that saw `gpus` per team.

    Between two rounds the agent cannot see when a team's use changed, so each interval is charged at
    the larger of the two ends: a budget should err towards holding a queue a little early rather than
    let a team run past it (the same holds for a gap while the agent was down). A round in a new month
    starts the month over and charges only the part of the interval after the month began. A clock that
    went back charges nothing and keeps the later time, so no interval is ever charged twice.
    """
    if ledger is None:
        return Ledger(month_of(at), at, dict.fromkeys(gpus, 0.0), dict(gpus))
    now = max(at, ledger.at)
    month = month_of(now)
    start, hours, warned = ledger.at, dict(ledger.hours), ledger.warned
    if month != ledger.month:
        start, hours, warned = max(start, month_start(now)), {}, frozenset()
    elapsed = (now - start) / 3600
    for team in sorted(set(ledger.gpus) | set(gpus) | set(hours)):
        rate = max(ledger.gpus.get(team, 0.0), gpus.get(team, 0.0))
        hours[team] = hours.get(team, 0.0) + rate * elapsed
    return Ledger(month, now, hours, dict(gpus), warned)


def dumps(ledger: Ledger) -> str:
    teams = {
        team: {"gpu_hours": ledger.hours.get(team, 0.0), "gpus": ledger.gpus.get(team, 0.0)}
        for team in sorted(set(ledger.hours) | set(ledger.gpus))
    }
    document = {
        "format": FORMAT,
        "month": ledger.month,
        "at": ledger.at,
        "warned": sorted(ledger.warned),
        "teams": teams,
    }
    return json.dumps(document, sort_keys=True)


def loads(text: str) -> Ledger:
    """The ledger a ConfigMap holds; ValueError when it is not one (the agent then stops charging rather
    than start the month over from zero)."""
    document = json.loads(text)
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ValueError(f"not a format {FORMAT} GPU-hour ledger")
    try:
        teams = document["teams"]
        return Ledger(
            month=str(document["month"]),
            at=float(document["at"]),
            hours={team: float(entry["gpu_hours"]) for team, entry in teams.items()},
            gpus={team: float(entry["gpus"]) for team, entry in teams.items()},
            warned=frozenset(str(team) for team in document.get("warned", [])),
        )
    except (KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"a GPU-hour ledger lacks a field: {error}") from error
