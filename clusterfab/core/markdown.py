"""Values in Markdown: every renderer of a pull request comment (diff, cost, validate) puts blueprint and
plan values (names, label keys, file names, messages) into Markdown through these functions, so that no
value can start a heading, a quote or a list, end a table cell, open a link or an HTML tag, close a code
span or a fence, or break out of a Mermaid label (GitHub Flavored Markdown, CommonMark 0.31 and the GFM
table extension; Mermaid's entity codes).

The text around the values is the renderer's own Markdown; only what comes from data goes through here.
"""

from __future__ import annotations

import re

_LINE_BREAKS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")
"""Newlines and other control characters (C0, DEL, C1) and the Unicode line and paragraph separators: a
value is one line of text, so each run becomes one space."""
_INLINE = re.compile(r"[\\`*~\[\]<&|]|(?<![^\W_])_|_(?![^\W_])")
"""Characters that start inline Markdown or HTML anywhere in a line: escapes, code spans, emphasis and
strike-through, links and images, HTML tags, autolinks and entities, and table cell ends. Each gets a
backslash (CommonMark: any ASCII punctuation may be escaped), which GFM tables also honour for `|`. An
underscore between two letters or digits (on_demand) can neither open nor close emphasis, so it stays."""
_BLOCK_START = re.compile(r"^(\s*)([#>+=-]|\d{1,9}[.)](?=\s|$))")
"""What starts a block at the beginning of a line (a heading, a quote, a list item, a setext underline):
a value may be the first thing in a line or a list item of the renderer, so its first marker is escaped."""
_MERMAID = re.compile(r'[#"<>&`|;\\{}\[\]()]')
"""Characters with a meaning in a Mermaid label or next to one (entity codes start with #; quotes end the
label; angle brackets make HTML; a pipe ends an edge label; brackets and braces end a node shape)."""


def one_line(value: object) -> str:
    """The value as one line: line breaks and control characters become a space."""
    return _LINE_BREAKS.sub(" ", str(value))


def text(value: object) -> str:
    """A value as inline text, in a paragraph, a heading, a list item, a quote or a table cell: shown as
    written, and nothing else."""
    escaped = _INLINE.sub(lambda m: "\\" + m.group(), one_line(value))
    return _BLOCK_START.sub(lambda m: f"{m[1]}\\{m[2]}" if m[2][0] in "#>+=-" else _number(m), escaped, 1)


def _number(match: re.Match[str]) -> str:
    """`1.` or `1)` at the start would begin an ordered list: escape its punctuation."""
    marker = match[2]
    return f"{match[1]}{marker[:-1]}\\{marker[-1]}"


def code(value: object, *, in_table: bool = False) -> str:
    """A value as a code span: a fence of more backticks than any run in it (CommonMark 6.1), padded when it
    begins or ends with one. `in_table`: the span is in a table cell, where GFM splits cells at every `|`
    not escaped, code spans included, and unescapes `\\|` inside them."""
    body = one_line(value)
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * (longest + 1)
    if body.startswith("`") or body.endswith("`") or not body.strip(" "):
        body = f" {body} "
    if in_table:
        body = body.replace("|", "\\|")
    return f"{fence}{body}{fence}"


def fence(content: str, info: str = "") -> list[str]:
    """A fenced code block holding `content` as written: its fence is longer than any backtick run at the
    start of a line of it, so no line closes it early (CommonMark 4.5)."""
    runs = re.findall(r"^[ ]{0,3}(`{3,}|~{3,})", content, flags=re.MULTILINE)
    length = max([3, *(len(run) + 1 for run in runs if run.startswith("`"))])
    marker = "`" * length
    return [f"{marker}{info}", content, marker]


def mermaid_label(value: object) -> str:
    """A value inside a quoted Mermaid label ("..."): special characters as Mermaid entity codes (#35; for
    #), line breaks as spaces."""
    return _MERMAID.sub(lambda m: f"#{ord(m.group())};", one_line(value))


def mermaid_id(name: str) -> str:
    """A Mermaid node id for a name: letters, digits and underscores only, distinct for distinct names, and
    never a Mermaid keyword (`end`, `graph`)."""
    return "n_" + "".join(c if c.isascii() and c.isalnum() else f"_{ord(c):x}_" for c in name)
