"""Variables handed to Ansible as data that is never templated, whatever it holds.

ansible-core renders Jinja2 in every string variable it uses, extra variables included: a string
`{{ lookup('pipe', CMD) }}` in node-vars.json would run CMD as root. Wrapped as
`{"__ansible_unsafe": ...}`, which ansible-core's JSON loader reads as an unsafe (never templated)
string, a value reaches its task exactly as written. The blueprint loader refuses template syntax
too; this is the layer that holds whatever a future field, the catalog or a stack output carries.
Dictionary keys stay plain: ansible-core does not template them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

UNSAFE_KEY = "__ansible_unsafe"


def inert(value: Any) -> Any:
    """`value` with every string in it (at any depth) marked unsafe for Ansible."""
    if isinstance(value, str):
        return {UNSAFE_KEY: value}
    if isinstance(value, Mapping):
        return {str(key): inert(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [inert(item) for item in value]
    return value


def plain(value: Any) -> Any:
    """The variables `inert` wrapped, as Ansible reads them (for tests and reports)."""
    if isinstance(value, Mapping):
        if set(value) == {UNSAFE_KEY}:
            return value[UNSAFE_KEY]
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


def inert_json(variables: Mapping[str, Any]) -> str:
    """A variables file of `inert` values: one variable a line, sorted, so that it stays readable and
    small (AWS user data holds 16 KB)."""
    lines = [
        f"  {json.dumps(str(key))}: {json.dumps(inert(variables[key]), sort_keys=True)}"
        for key in sorted(variables)
    ]
    return "{\n" + ",\n".join(lines) + "\n}" if lines else "{}"
