"""Check a plan's resource inputs, leaf by leaf, against the API model fields they are mapped to.

A plan input is flattened to leaves named by Pulumi property paths: `metadataOptions.httpTokens`,
`networkInterfaces[].interfaceType` (`[]`: every item of a list), `tags.Name` (a map's key as a
segment). The mapping table (`tests/apimodels/mapping.py`) names, per type token and path pattern
(`*` matches one segment: a map key), the API model field the leaf becomes, or why it has none.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import regex

from tests.apimodels.models import Field, UnknownFieldError, field


@dataclass(frozen=True)
class Api:
    """The API model field a Pulumi input becomes."""

    api: str
    path: str
    key: str | None = None
    """For a map entry (`tags.*`): the API path of the map's keys, checked too."""
    ref: bool = False
    """The value is another resource's id, name or link (a mock value in a plan): only the field is
    checked, not the value."""
    note: str = ""
    """How the provider's name or shape differs from the API's, when it does."""


@dataclass(frozen=True)
class Free:
    """An input with no API field of its own to check: why."""

    reason: str


Target = Api | Free


@dataclass(frozen=True)
class Documented:
    """A constraint the API states in its documentation rather than as model data.

    `quote` is the text it rests on. Without a `source` the quote is the field's own documentation in
    the API model, and a test checks it is still there (so a model update that changes the rule shows);
    with one, the quote is from the page named. `also` names a further source that widens the rule
    (e.g. a value the provider documents and the API accepts)."""

    quote: str
    enum: tuple[str, ...] | None = None
    minimum: float | None = None
    exclusive_minimum: float | None = None
    maximum: float | None = None
    pattern: str | None = None
    max_bytes: int | None = None
    source: str = ""
    also: str = ""


@dataclass(frozen=True)
class Leaf:
    path: str
    value: Any
    key: str | None = None
    """The last map key on the path, for map entries."""


def leaves(value: Any, path: str = "", key: str | None = None) -> Iterator[Leaf]:
    """Every scalar in a plan input, with its Pulumi property path (and the map key it sits under)."""
    if isinstance(value, Mapping):
        for name, inner in value.items():
            yield from leaves(inner, f"{path}.{name}" if path else str(name), str(name))
    elif isinstance(value, list):
        for item in value:
            yield from leaves(item, f"{path}[]")
    else:
        yield Leaf(path, value, key)


@dataclass(frozen=True)
class Table:
    """The mapping of one type token: exact paths first, then `*` patterns."""

    entries: Mapping[str, Target]

    def target(self, path: str) -> Target | None:
        if path in self.entries:
            return self.entries[path]
        for pattern, target in self.entries.items():
            if "*" in pattern and _pattern(pattern).fullmatch(path):
                return target
        return None


_PATTERNS: dict[str, re.Pattern[str]] = {}


def _pattern(pattern: str) -> re.Pattern[str]:
    if pattern not in _PATTERNS:
        _PATTERNS[pattern] = re.compile(re.escape(pattern).replace(r"\*", r"[^.\[\]]+"))
    return _PATTERNS[pattern]


_INTEGER = re.compile(r"-?\d+")
_NUMBER = re.compile(r"-?\d+(\.\d+)?")


def _number(value: Any, kind: str) -> float | None:
    """The value as a number if it is one of the kind (JSON carries 64-bit integers as strings)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return float(value)
    if isinstance(value, float):
        return value if kind == "number" or value.is_integer() else None
    if isinstance(value, str) and (_INTEGER if kind == "integer" else _NUMBER).fullmatch(value):
        return float(value)
    return None


def _kind_problem(spec: Field, value: Any) -> str | None:
    if spec.kind in ("list", "map", "structure"):
        return f"maps to a {spec.kind} ({spec.api} {spec.path}); map the scalar inside it"
    if spec.kind == "any":
        return None
    if spec.kind == "boolean":
        # The AWS provider sends some tri-state booleans as the strings "true" / "false".
        ok = isinstance(value, bool) or value in ("true", "false")
        return None if ok else f"{value!r} is not a boolean"
    if spec.kind in ("integer", "number"):
        return None if _number(value, spec.kind) is not None else f"{value!r} is not an {spec.kind}"
    return None if isinstance(value, str) else f"{value!r} is not a string"


_SUPPLEMENTARY = r"\uD800\uDC00-\uDBFF\uDFFF"
"""Java's UTF-16 spelling of the supplementary planes in a character class (botocore patterns)."""
_ANY = r"\p{all}"
r"""Java's class of every code point (botocore's dlm tag patterns: `[\p{all}]*`)."""


def _pattern_problem(pattern: str, value: str) -> str | None:
    """Model patterns are Java regular expressions (Unicode classes like \\p{L}, UTF-16 surrogate
    ranges); the `regex` module reads them once the surrogate range is spelt as code points. The whole
    value must match, as the services check it: Smithy's text leaves a pattern unanchored, but AWS refuses
    `my role` as a role name ("Member must satisfy regular expression pattern: [\\w+=,.@-]+") although
    part of it matches, and Google's unanchored name patterns describe whole names."""
    java = pattern.replace(_SUPPLEMENTARY, r"\U00010000-\U0010FFFF").replace(_ANY, r"\x00-\U0010FFFF")
    compiled = regex.compile(java, regex.DOTALL)
    return None if compiled.fullmatch(value) else f"{value[:80]!r} does not match the pattern {pattern!r}"


def _canonical(value: Any, kind: str) -> str:
    """An enum value as text: integers by their digits (an enum of an integer field lists numbers)."""
    number = _number(value, kind) if kind in ("integer", "number") else None
    return str(int(number)) if number is not None and number.is_integer() else str(value)


def constraint_problems(spec: Field, value: Any, extra: Documented | None = None) -> Iterator[str]:
    """What is wrong with `value` for the field (and the documented constraints on it)."""
    kind = _kind_problem(spec, value)
    if kind is not None:
        yield kind
        return
    for allowed in (spec.enum, extra.enum if extra else None):
        if allowed is not None and _canonical(value, spec.kind) not in allowed:
            yield f"{value!r} is not one of {', '.join(allowed)}"
    number = _number(value, spec.kind) if spec.kind in ("integer", "number") else None
    if number is not None:
        yield from _range_problems(spec, number, extra)
    if isinstance(value, str):
        yield from _text_problems(spec, value, extra)


def _range_problems(spec: Field, number: float, extra: Documented | None) -> Iterator[str]:
    bounds = [(spec.minimum, spec.maximum)] + ([(extra.minimum, extra.maximum)] if extra else [])
    for low, high in bounds:
        if low is not None and number < low:
            yield f"{number:g} is below the minimum {low:g}"
        if high is not None and number > high:
            yield f"{number:g} is above the maximum {high:g}"
    if extra and extra.exclusive_minimum is not None and number <= extra.exclusive_minimum:
        yield f"{number:g} is not above {extra.exclusive_minimum:g}"


def _text_problems(spec: Field, value: str, extra: Documented | None) -> Iterator[str]:
    if spec.min_length is not None and len(value) < spec.min_length:
        yield f"{value!r} is shorter than {spec.min_length} characters"
    if spec.max_length is not None and len(value) > spec.max_length:
        yield f"{value[:60]!r}... is longer than {spec.max_length} characters"
    if extra and extra.max_bytes is not None and len(value.encode()) > extra.max_bytes:
        yield f"{value[:60]!r}... is {len(value.encode())} bytes, more than {extra.max_bytes}"
    for pattern in (spec.pattern if spec.kind == "string" else None, extra.pattern if extra else None):
        problem = _pattern_problem(pattern, value) if pattern else None
        if problem:
            yield problem


def resolve(target: Api) -> Field:
    """The API model field of a mapping (UnknownFieldError names what the model lacks)."""
    return field(target.api, target.path)


def leaf_problems(target: Api, leaf: Leaf, documented: Mapping[tuple[str, str], Documented]) -> Iterator[str]:
    """What the API model (and its documentation) says is wrong with one mapped leaf."""
    try:
        spec = resolve(target)
    except UnknownFieldError as exc:
        yield f"the mapping names a field the API model lacks: {exc}"
        return
    if target.ref:
        kind = _kind_problem(spec, leaf.value) if spec.kind in ("list", "map", "structure") else None
        if kind:
            yield kind
        return
    yield from constraint_problems(spec, leaf.value, documented.get((target.api, target.path)))
    if target.key is not None and leaf.key is not None:
        key_spec = field(target.api, target.key)
        for problem in constraint_problems(key_spec, leaf.key, documented.get((target.api, target.key))):
            yield f"key {problem}"
