"""Blueprint text is data: what no string of a blueprint may hold, and how to show one in a message.

Strings of a blueprint reach Ansible (extra variables, which ansible-core renders as templates),
Jinja2, shell scripts, Slurm's configuration files (one setting a line), Markdown comments and
terminals. Every sink quotes or marks what it writes, and the loader refuses, in any string of the
file, the two things no field ever needs and every one of those sinks could be tricked by: template
syntax and control characters.
"""

from __future__ import annotations

import unicodedata

TEMPLATE_MARKERS = ("{{", "{%", "{#")
"""What opens a Jinja2 expression, statement or comment (Ansible's templating is Jinja2)."""

_INVISIBLE_FORMATS = frozenset(
    "\u061c\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2060\u2066\u2067\u2068\u2069\ufeff"
)
"""Format characters that change how text reads without showing: bidirectional overrides and isolates
(the 'Trojan Source' class), zero-width spaces and joiners, the byte-order mark."""

_CONTROL_NAMES = {"\n": "line feed", "\r": "carriage return", "\t": "tab", "\x1b": "escape", "\x00": "null"}
"""Names of the C0 controls people meet; Unicode's database names no control character."""

MAX_SHOWN = 60
"""How much of a value a message quotes; the position points at the rest."""


def _is_control(char: str) -> bool:
    """C0 and C1 controls (line breaks, tabs, escape), line and paragraph separators, invisible formats."""
    return unicodedata.category(char) in {"Cc", "Zl", "Zp"} or char in _INVISIBLE_FORMATS


def text_problem(value: str) -> tuple[str, str] | None:
    """What is wrong with a blueprint string, as (problem, hint); None when it is plain text."""
    marker = next((m for m in TEMPLATE_MARKERS if m in value), None)
    if marker is not None:
        return (
            f"{shown(value)} contains {marker!r}: blueprint text is data, and the hosts' configuration "
            "would run it as a template",
            f"remove {marker!r}; no blueprint field takes template syntax ({', '.join(TEMPLATE_MARKERS)})",
        )
    control = next((c for c in value if _is_control(c)), None)
    if control is not None:
        name = _CONTROL_NAMES.get(control) or unicodedata.name(control, "control character").lower()
        return (
            f"{shown(value)} contains U+{ord(control):04X} ({name}), which no blueprint field takes",
            "write the value on one line, without control or invisible formatting characters",
        )
    return None


_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(char: str) -> str:
    if char in _ESCAPES:
        return _ESCAPES[char]
    return f"\\u{ord(char):04x}" if ord(char) > 0xFF else f"\\x{ord(char):02x}"


def shown(value: str, limit: int = MAX_SHOWN) -> str:
    """A value quoted for a message: control and invisible characters escaped, long values cut."""
    escaped = "".join(_escaped(c) if _is_control(c) else c for c in value)
    if len(escaped) > limit:
        escaped = escaped[: limit - 1] + "…"
    return f"'{escaped}'"
