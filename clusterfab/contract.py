"""What every JSON document the CLI prints has in common (docs/json/): the schema version, which
blueprint, environment, cloud and region it is about, how money is written, and the error object.

The JSON shapes are contracts: fields may be added, never removed or changed in meaning. A change
that breaks a consumer raises SCHEMA_VERSION.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from typing import Any

SCHEMA_VERSION = 1
"""Version of the JSON documents' shapes (the same for all of them)."""

_CENT = Decimal("0.01")


def envelope(
    *, blueprint: str | None, env: str | None, cloud: str | None, region: str | None
) -> dict[str, Any]:
    """The fields every JSON document starts with."""
    return {
        "schema_version": SCHEMA_VERSION,
        "blueprint": blueprint,
        "env": env,
        "cloud": cloud,
        "region": region,
    }


def cents(value: Decimal | None) -> float | None:
    """A computed amount of money as a JSON number rounded half up to the cent (None stays null).

    Amounts clusterfab computes (item and total cost per hour, month and run, deltas) are rounded from
    their exact decimal sums, so a total may differ by a cent from the sum of its rounded items.
    Figures taken as written (catalog unit prices, budget limits) are not rounded: see `exact`.
    """
    if value is None:
        return None
    return float(value.quantize(_CENT, rounding=ROUND_HALF_UP))


def exact(value: Decimal | None) -> float | None:
    """A figure as written in the catalog or the blueprint (a unit price, a budget limit)."""
    return None if value is None else float(value)


def error_document(kind: str, message: str, exit_code: int) -> dict[str, Any]:
    """What a command in JSON mode prints instead of its document when it cannot run (docs/json/error.md).

    `kind` is "usage" (exit 2: the command line, a missing file, an unknown environment), "failed"
    (exit 1: a refused gate, a failed deployment) or "internal" (exit 3: a bug).
    """
    return {
        "schema_version": SCHEMA_VERSION,
        "ok": False,
        "error": {"kind": kind, "message": message, "exit_code": exit_code},
    }
