"""Findings: what validation reports about a blueprint.

A finding has a stable code, a severity, the blueprint field it is about, the position in the file
where that field is written, what is wrong and how to fix it. Findings are plain values: every layer
(parse, schema, semantic and catalog rules, cost policy) produces them and the renderers print them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

FieldPath = tuple[str | int, ...]
"""A path into the blueprint document: mapping keys and list indexes, e.g. ('node_groups', 0, 'count')."""


class Severity(StrEnum):
    """How bad a finding is; only errors make `validate` exit 1."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


_SEVERITY_ORDER = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}


def render_path(path: Sequence[str | int]) -> str:
    """Render a field path the way users write it: `node_groups[0].capacity.kind`. A key that is not a plain
    word (a label key with a dot, a space or a newline) is quoted as a JSON string in brackets,
    `labels["cost center"]`, so the path stays one line that reads back as the same path."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not _plain_key(part):
            out += f"[{json.dumps(part)}]"
        else:
            out += f".{part}" if out else part
    return out


def _plain_key(part: str) -> bool:
    return bool(part) and part.isprintable() and not any(c.isspace() or c in '.[]"\\' for c in part)


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem (or note) about a blueprint, anchored at a position in its file.

    `line` and `column` are 1-based; 0 means the position is unknown (the whole file).
    `end_column` is the exclusive end of the offending text on `line`, used to draw the caret (0:
    unknown). `environment` names the environment overlay whose merged blueprint has the problem; None
    when the base blueprint (and so every environment) has it. `path` is `field` as a path, for code.
    """

    code: str
    severity: Severity
    message: str
    field: str
    file: str
    line: int
    column: int
    hint: str = ""
    end_column: int = 0
    environment: str | None = None
    path: FieldPath = ()

    def to_json(self) -> dict[str, Any]:
        """The finding in the CLI's JSON contract (architecture §5, plus `end_column` and
        `environment`)."""
        return {
            "code": self.code,
            "severity": self.severity.value,
            "message": self.message,
            "field": self.field,
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "end_column": self.end_column,
            "environment": self.environment,
            "hint": self.hint,
        }

    @property
    def sort_key(self) -> tuple[str, int, int, int, str, str, str]:
        return (
            self.file,
            self.line,
            self.column,
            _SEVERITY_ORDER[self.severity],
            self.code,
            self.field,
            self.environment or "",
        )

    @property
    def log_line(self) -> str:
        """The finding as one log line, `file:line:col: CODE message`: how the Pulumi program reports the
        warnings of the blueprint it deploys."""
        return f"{self.file}:{self.line}:{self.column}: {self.code} {self.message}"

    @property
    def identity(self) -> tuple[str, str, str, int, int, str | None]:
        """What makes two findings the same problem: code, field, position and environment."""
        return (self.code, self.field, self.file, self.line, self.column, self.environment)


def normalize(findings: Iterable[Finding]) -> list[Finding]:
    """De-duplicate findings and sort them by position.

    Two findings are the same when code, field, position and environment agree; the validation engine
    drops an environment's finding that the base blueprint already reports.
    """
    seen: set[tuple[str, str, str, int, int, str | None]] = set()
    unique: list[Finding] = []
    for finding in findings:
        if finding.identity not in seen:
            seen.add(finding.identity)
            unique.append(finding)
    return sorted(unique, key=lambda f: f.sort_key)


def has_errors(findings: Iterable[Finding]) -> bool:
    return any(f.severity is Severity.ERROR for f in findings)


def count_by_severity(findings: Iterable[Finding]) -> dict[Severity, int]:
    counts = dict.fromkeys(Severity, 0)
    for finding in findings:
        counts[finding.severity] += 1
    return counts
