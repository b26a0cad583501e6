"""Kubernetes resource quantities (`8`, `0`, `1k`, `500m`, `1Gi`, `1e3`) as exact fractions.

The API server writes a quantity as a string in canonical form; the grammar (k8s.io/apimachinery
pkg/api/resource, https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/quantity/):

    <quantity>        ::= <signedNumber><suffix>
    <number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
    <suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI>
    <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei
    <decimalSI>       ::= n | u | m | "" | k | M | G | T | P | E
    <decimalExponent> ::= "e" <signedNumber> | "E" <signedNumber>

`1E` is one exa (a suffix), `1E3` a thousand (an exponent): the suffix is tried first.
"""

from __future__ import annotations

import re
from fractions import Fraction

_QUANTITY = re.compile(r"([+-]?(?:\d+(?:\.\d*)?|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?")
_SUFFIXES: dict[str, Fraction] = {
    "": Fraction(1),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}


def parse_quantity(value: object) -> Fraction:
    """A quantity's exact value. A JSON number is accepted too (the API takes one on input); anything
    else, or a string outside the grammar, is a ValueError."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"not a quantity: {value!r}")
    if not isinstance(value, str):
        return Fraction(value)
    match = _QUANTITY.fullmatch(value)
    if match is None:
        raise ValueError(f"not a quantity: {value!r}")
    number, suffix = match.group(1), match.group(2) or ""
    if suffix[:1] in ("e", "E") and suffix != "E":
        return Fraction(number) * Fraction(10) ** int(suffix[1:])
    return Fraction(number) * _SUFFIXES[suffix]
