"""Findings as text for people (with the source line and a caret) and as JSON for tools."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from clusterfab.core.findings import Finding, Severity, count_by_severity

_COLORS = {Severity.ERROR: "31", Severity.WARNING: "33", Severity.INFO: "36"}


def _paint(text: str, code: str, color: bool) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if color else text


def render_finding(finding: Finding, lines: Sequence[str], *, color: bool = False) -> str:
    """One finding in the compiler-style form of architecture §4."""
    where = f"{finding.file}:{finding.line}:{finding.column}" if finding.line else finding.file
    level = _paint(f"{finding.severity.value}[{finding.code}]", _COLORS[finding.severity], color)
    subject = f" {finding.field}:" if finding.field else ""
    out = [f"{_paint(where, '1', color)}: {level}{subject} {finding.message}"]
    if finding.line and 0 < finding.line <= len(lines):
        source = lines[finding.line - 1].replace("\t", " ")
        width = len(str(finding.line))
        gutter = max(width, 2) + 3
        out.append(f"{finding.line:>{gutter}} | {source}")
        start = max(finding.column - 1, 0)
        if finding.end_column > finding.column:
            length = finding.end_column - finding.column
        else:
            length = max(len(source.rstrip()) - start, 1)
        out.append(f"{'':>{gutter}} | {' ' * start}{_paint('^' * length, _COLORS[finding.severity], color)}")
    if finding.hint:
        out.append(f"   hint: {finding.hint}")
    return "\n".join(out)


def summary_line(findings: Sequence[Finding]) -> str:
    counts = count_by_severity(findings)

    def plural(n: int, word: str) -> str:
        return f"{n} {word}{'' if n == 1 else 's'}"

    return ", ".join(
        [
            plural(counts[Severity.ERROR], "error"),
            plural(counts[Severity.WARNING], "warning"),
            plural(counts[Severity.INFO], "note"),
        ]
    )


def render_text(findings: Sequence[Finding], lines: Sequence[str], *, color: bool = False) -> str:
    """All findings, a blank line apart."""
    return "\n\n".join(render_finding(f, lines, color=color) for f in findings)


def render_json(ok: bool, findings: Sequence[Finding], extra: Mapping[str, Any] | None = None) -> str:
    """The validate JSON contract: {"ok": bool, "findings": [...]} (plus any `extra` keys)."""
    payload: dict[str, Any] = {"ok": ok, "findings": [f.to_json() for f in findings]}
    if extra:
        payload.update(extra)
    return json.dumps(payload, indent=2)
