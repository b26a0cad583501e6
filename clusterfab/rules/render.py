"""Findings as text for people (with the source line and a caret) and as Markdown for a pull request
comment (as JSON each is `Finding.to_json`; the CLI's validation document is `clusterfab.cli.output`'s)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

from clusterfab.core import markdown as md
from clusterfab.core.findings import Finding, Severity, count_by_severity

_COLORS = {Severity.ERROR: "31", Severity.WARNING: "33", Severity.INFO: "36"}
WIDE = 10_000
"""A width nothing is cut to (the default for callers that do not lay out for a terminal)."""


def _paint(text: str, code: str, color: bool) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if color else text


def _window(source: str, start: int, length: int, room: int) -> tuple[str, int, int]:
    """Cut a source line to `room` characters around the caret: (text, caret start, caret length)."""
    if len(source) <= room:
        return source, start, length
    length = max(1, min(length, room - 2))
    left = max(0, min(start - (room - length) // 2, len(source) - room))
    text = source[left : left + room]
    if left > 0:
        text = "…" + text[1:]
    if left + room < len(source):
        text = text[:-1] + "…"
    return text, start - left, length


def render_finding(finding: Finding, lines: Sequence[str], *, color: bool = False, width: int = WIDE) -> str:
    """One finding in the compiler-style form of architecture §4, laid out for `width` columns: the
    first line stays whole (editors and CI annotators parse it), a long source line is cut around the
    caret and the hint is wrapped."""
    where = f"{finding.file}:{finding.line}:{finding.column}" if finding.line else finding.file
    level = _paint(f"{finding.severity.value}[{finding.code}]", _COLORS[finding.severity], color)
    subject = f" {finding.field}:" if finding.field else ""
    out = [f"{_paint(where, '1', color)}: {level}{subject} {finding.message}"]
    if finding.line and 0 < finding.line <= len(lines):
        source = lines[finding.line - 1].replace("\t", " ").rstrip()
        gutter = max(len(str(finding.line)), 2) + 3
        start = max(finding.column - 1, 0)
        if finding.end_column > finding.column:
            length = finding.end_column - finding.column
        else:
            length = max(len(source) - start, 1)
        room = max(width - gutter - 3, 20)
        shown, start, length = _window(source, start, length, room)
        out.append(f"{finding.line:>{gutter}} | {shown}")
        out.append(f"{'':>{gutter}} | {' ' * start}{_paint('^' * length, _COLORS[finding.severity], color)}")
    if finding.hint:
        out.append(
            textwrap.fill(
                finding.hint,
                width=max(width, 40),
                initial_indent="   hint: ",
                subsequent_indent=" " * 9,
                break_long_words=False,
                break_on_hyphens=False,
            )
        )
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


def render_text(
    findings: Sequence[Finding], lines: Sequence[str], *, color: bool = False, width: int = WIDE
) -> str:
    """All findings, a blank line apart."""
    return "\n\n".join(render_finding(f, lines, color=color, width=width) for f in findings)


def render_markdown(findings: Sequence[Finding], lines: Sequence[str], *, title: str) -> str:
    """The findings as a pull request comment: a table (where, what, how to fix) and, folded, the text
    form with source lines and carets. `title` is Markdown: the caller escapes the values in it
    (clusterfab.core.markdown); every value of the findings is escaped here."""
    out = [f"### {title}", "", f"**{summary_line(findings)}**", ""]
    return "\n".join(out + findings_markdown(findings, lines))


def findings_markdown(findings: Sequence[Finding], lines: Sequence[str] = ()) -> list[str]:
    """The findings as a Markdown table (where, what, how to fix) and, folded, their text form (with the
    source lines and carets when `lines` has them); nothing for no findings."""
    if not findings:
        return []
    out = ["| Severity | Code | Where | Field | Problem | Hint |", "|---|---|---|---|---|---|"]
    for f in findings:
        where = md.code(f"{f.file}:{f.line}:{f.column}" if f.line else f.file, in_table=True)
        field = md.code(f.field, in_table=True) if f.field else ""
        problem, hint = md.text(f.message), md.text(f.hint)
        out.append(f"| {f.severity.value} | {f.code} | {where} | {field} | {problem} | {hint} |")
    summary = "Source lines" if lines else "As text"
    return [
        *out,
        "",
        f"<details><summary>{summary}</summary>",
        "",
        *md.fence(render_text(findings, lines), "text"),
        "",
        "</details>",
    ]
