"""The date price staleness and dated facts are judged against."""

from __future__ import annotations

import datetime as dt
import os

from clusterfab.core.errors import UsageError

TODAY_VARIABLE = "CLUSTERFAB_TODAY"


def today() -> dt.date:
    """CLUSTERFAB_TODAY (an ISO date) if set, else the system date: one date for the CLI and the Pulumi
    program it runs, so that output in tests and golden files does not change with the calendar.
    UsageError when the variable is not a date."""
    raw = os.environ.get(TODAY_VARIABLE)
    if not raw:
        return dt.date.today()
    try:
        return dt.date.fromisoformat(raw)
    except ValueError:
        raise UsageError(f"{TODAY_VARIABLE}={raw!r} is not an ISO date (YYYY-MM-DD)") from None


def start_of(day: dt.date) -> dt.datetime:
    """The start of `day` in UTC: the moment a date-only clock (CLUSTERFAB_TODAY) stands for. Something
    that ends later that day (a capacity block) has not ended yet, and what is left of it is counted from
    then."""
    return dt.datetime.combine(day, dt.time(), dt.UTC)


UTC_ISO = "%Y-%m-%dT%H:%M:%SZ"


def utc_iso(when: dt.datetime) -> str:
    """`2026-12-15T11:30:00Z`: a UTC time as the blueprint writes it."""
    return when.astimezone(dt.UTC).strftime(UTC_ISO)


def parse_utc_iso(text: str) -> dt.datetime:
    """The UTC time `utc_iso` wrote; ValueError for any other text."""
    return dt.datetime.strptime(text, UTC_ISO).replace(tzinfo=dt.UTC)


def utc_stamp(when: dt.datetime) -> str:
    """`2026-12-15 11:30 UTC`: a time as findings and cost output show it."""
    return f"{when.astimezone(dt.UTC):%Y-%m-%d %H:%M} UTC"
