"""Kubernetes quantities as the API server writes them, parsed exactly (k8s.io/apimachinery's grammar)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from clusterfab.scheduler.kubernetes.agent.quantity import parse_quantity


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("8", Fraction(8)),
        ("0", Fraction(0)),
        ("1k", Fraction(1000)),
        ("500m", Fraction(1, 2)),
        ("1.5", Fraction(3, 2)),
        (".5", Fraction(1, 2)),
        ("2.", Fraction(2)),
        ("+4", Fraction(4)),
        ("-1", Fraction(-1)),
        ("1Ki", Fraction(1024)),
        ("1536Mi", Fraction(1536 * 2**20)),
        ("1800Gi", Fraction(1800 * 2**30)),
        ("1e3", Fraction(1000)),
        ("1E3", Fraction(1000)),
        ("25e-1", Fraction(5, 2)),
        ("1E", Fraction(10**18)),
        ("1M", Fraction(10**6)),
        ("3n", Fraction(3, 10**9)),
        ("7u", Fraction(7, 10**6)),
        (8, Fraction(8)),
        (0.5, Fraction(1, 2)),
    ],
)
def test_a_quantity_has_its_exact_value(text: str | int | float, value: Fraction) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize(
    "text", ["", "gpu", "1KB", "1e", "1.2.3", "1 Gi", "Gi", "--1", " 8", True, None, ["8"]]
)
def test_anything_else_is_refused(text: object) -> None:
    with pytest.raises(ValueError, match="not a quantity"):
        parse_quantity(text)
