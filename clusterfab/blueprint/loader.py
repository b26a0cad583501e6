"""Read a blueprint file into plain data plus the position of every key and value.

The loader composes the YAML node graph with ruamel.yaml (YAML 1.2: `no` stays a string) and builds
the Python values itself, so that it can record the span of every node, report duplicate keys with
both positions, and refuse what a blueprint never needs (custom tags, several documents, alias bombs).
It never raises for bad input: every problem comes back as a finding.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import (
    Event,
    MappingEndEvent,
    MappingStartEvent,
    SequenceEndEvent,
    SequenceStartEvent,
)
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from clusterfab.core.codes import code_info
from clusterfab.core.errors import UsageError
from clusterfab.core.findings import FieldPath, Finding, render_path
from clusterfab.core.text import text_problem

MAX_BLUEPRINT_BYTES = 1 << 20
"""A blueprint is a page or two of YAML; anything past 1 MiB is the wrong file."""

MAX_NODES = 50_000
"""Upper bound on values built from one file, which stops alias and merge-key expansion bombs."""

MAX_DEPTH = 64
"""Deepest nesting of mappings and lists (through aliases and merge keys too). A blueprint needs about
six levels; refusing deeper files before they are composed keeps the recursive composers (ruamel's
C extension overflows the C stack at some 30,000 levels of `[[[...]]]`) and our own builder safe."""

MAX_EVENTS = 2 * MAX_NODES
"""Upper bound on parser events in one file (a value is one or two of them), checked before composing:
a 1 MiB file of one-character values would otherwise take seconds to compose."""

_TAG = "tag:yaml.org,2002:"


@dataclass(frozen=True, slots=True)
class Span:
    """A 1-based position range in the source; `end_column` is exclusive."""

    line: int
    column: int
    end_line: int
    end_column: int


@dataclass(frozen=True)
class Document:
    """A parsed blueprint file: its data and where each part of it is written."""

    file: str
    lines: tuple[str, ...]
    data: Any
    key_spans: Mapping[FieldPath, Span] = field(default_factory=dict)
    value_spans: Mapping[FieldPath, Span] = field(default_factory=dict)
    reported: frozenset[FieldPath] = frozenset()
    """Paths whose values the loader already reported (and replaced); later layers stay quiet there."""
    parsed: bool = True
    """False when the text could not be parsed (`data` is then None): only `lines` are of use, to show
    the source line of the syntax error."""

    def span(self, path: FieldPath, *, at_key: bool = False) -> Span | None:
        """The span of `path` (its key when `at_key`), falling back to the nearest written ancestor."""
        probe = path
        while True:
            spans = self.key_spans if at_key else self.value_spans
            found = spans.get(probe) or self.key_spans.get(probe) or self.value_spans.get(probe)
            if found is not None:
                return found
            if not probe:
                return None
            probe = probe[:-1]


def _finding(
    code: str,
    file: str,
    message: str,
    *,
    line: int = 0,
    column: int = 0,
    end_column: int = 0,
    field_path: FieldPath = (),
    hint: str = "",
) -> Finding:
    return Finding(
        code=code,
        severity=code_info(code).severity,
        message=message,
        field=render_path(field_path),
        file=file,
        line=line,
        column=column,
        hint=hint,
        end_column=end_column,
        path=field_path,
    )


def read_blueprint(path: Path, display: str | None = None) -> tuple[Document | None, list[Finding]]:
    """Read and parse a blueprint file.

    Raises UsageError when the path cannot be read at all (missing, a directory, no permission):
    that is a problem with the command line, not with a blueprint.
    """
    shown = display if display is not None else str(path)
    try:
        size = path.stat().st_size
        if path.is_dir():
            raise UsageError(f"{shown} is a directory, not a blueprint file")
        if size > MAX_BLUEPRINT_BYTES:
            return None, [_too_large(shown, f"file is {size / (1 << 20):.1f} MiB")]
        # Read at most one byte past the limit: devices and pipes (/dev/zero) report no size.
        with path.open("rb") as stream:
            raw = stream.read(MAX_BLUEPRINT_BYTES + 1)
    except FileNotFoundError:
        raise UsageError(f"no such file: {shown}") from None
    except PermissionError:
        raise UsageError(f"cannot read {shown}: permission denied") from None
    except OSError as exc:
        raise UsageError(f"cannot read {shown}: {exc.strerror or exc}") from None
    return parse_blueprint_bytes(raw, shown)


def _too_large(file: str, what: str) -> Finding:
    return _finding(
        "BP001",
        file,
        f"{what}; a blueprint is at most {MAX_BLUEPRINT_BYTES >> 20} MiB",
        hint="check that this is the blueprint you meant; split data out of it",
    )


def parse_blueprint_bytes(raw: bytes, file: str) -> tuple[Document | None, list[Finding]]:
    """Parse blueprint bytes (already read) into a Document, or findings saying why not."""
    if len(raw) > MAX_BLUEPRINT_BYTES:
        return None, [_too_large(file, f"file is larger than {MAX_BLUEPRINT_BYTES >> 20} MiB")]
    if b"\x00" in raw[:8192]:
        return None, [
            _finding(
                "BP001",
                file,
                "file is binary, not a YAML blueprint",
                hint="point clusterfab at the blueprint's .yaml file",
            )
        ]
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        return None, [
            _finding(
                "BP001",
                file,
                f"file is not UTF-8 text (byte 0x{raw[exc.start]:02x} cannot be decoded)",
                line=line,
                column=column,
                end_column=column + 1,
                hint="save the blueprint as UTF-8",
            )
        ]
    return parse_blueprint_text(text, file)


def parse_blueprint_text(text: str, file: str) -> tuple[Document | None, list[Finding]]:
    """Parse blueprint text into a Document, or findings saying why not.

    A file that cannot be parsed still gives a Document (`parsed` False, no data) so that its
    findings can show the offending source line.
    """
    lines = tuple(text.splitlines())

    def unparsed(*findings: Finding) -> tuple[Document, list[Finding]]:
        return Document(file=file, lines=lines, data=None, parsed=False), list(findings)

    yaml = YAML(typ="safe")
    try:
        too_big = _prescan(yaml, text, file)
        if too_big is not None:
            return unparsed(too_big)
        nodes = list(yaml.compose_all(io.StringIO(text)))
    except MarkedYAMLError as exc:
        return unparsed(_syntax_error(exc, file, lines))
    except YAMLError as exc:  # errors without a position (e.g. reader errors)
        return unparsed(_finding("BP002", file, f"YAML syntax error: {exc}", hint=_syntax_hint(str(exc))))
    documents = [n for n in nodes if n is not None]
    if not documents:
        return unparsed(
            _finding("BP001", file, "file is empty", hint="start from one of blueprints/examples/*.yaml")
        )
    if len(documents) > 1:
        second = documents[1]
        return unparsed(
            _finding(
                "BP004",
                file,
                "file holds several YAML documents; a blueprint is one",
                line=second.start_mark.line + 1,
                column=second.start_mark.column + 1,
                hint="remove the `---` separator and keep one document",
            )
        )
    builder = _Builder(file)
    data = builder.build(documents[0], ())
    document = Document(
        file=file,
        lines=lines,
        data=data,
        key_spans=builder.key_spans,
        value_spans=builder.value_spans,
        reported=frozenset(builder.reported),
    )
    return document, builder.findings


def _prescan(yaml: YAML, text: str, file: str) -> Finding | None:
    """Refuse, before composing, a file nested deeper than MAX_DEPTH or with more than MAX_EVENTS
    parser events. The event parser keeps its own stack (no recursion) and stops at the first
    problem, so this costs little; a syntax error is left for the composer to report."""
    depth = 0
    for events, event in enumerate(yaml.parse(io.StringIO(text)), start=1):
        if isinstance(event, MappingStartEvent | SequenceStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                return _refusal(event, file, f"the document nests more than {MAX_DEPTH} levels deep")
        elif isinstance(event, MappingEndEvent | SequenceEndEvent):
            depth -= 1
        if events > MAX_EVENTS:
            return _refusal(event, file, f"the document holds more than {MAX_NODES:,} values")
    return None


def _refusal(event: Event, file: str, message: str) -> Finding:
    mark = event.start_mark
    line, column = (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)
    return _finding(
        "BP004",
        file,
        message,
        line=line,
        column=column,
        end_column=column + 1 if line else 0,
        hint="a blueprint is a few levels of fields and lists; check that this is the blueprint you meant",
    )


def _syntax_error(exc: MarkedYAMLError, file: str, lines: tuple[str, ...]) -> Finding:
    # "could not find expected ':'" is found on the line after a key that lacks its colon;
    # the context mark ("while scanning a simple key") is where the user has to look.
    simple_key = exc.context is not None and "simple key" in exc.context
    mark = (exc.context_mark if simple_key else None) or exc.problem_mark or exc.context_mark
    line = mark.line + 1 if mark is not None else 0
    column = mark.column + 1 if mark is not None else 0
    problem = exc.problem or exc.context or "invalid YAML"
    tab = _tab_near(lines, line)
    if tab is not None:
        line, column = tab
        hint = f"line {line} indents with a tab; YAML indents with spaces only: replace the tab by spaces"
    elif simple_key:
        hint = "this line needs `key: value` (a colon and a space after the key), or is mis-indented"
    else:
        hint = _syntax_hint(problem)
    return _finding(
        "BP002",
        file,
        f"YAML syntax error: {problem}",
        line=line,
        column=column,
        end_column=column + 1 if line else 0,
        hint=hint,
    )


def _tab_near(lines: tuple[str, ...], line: int) -> tuple[int, int] | None:
    """(line, column) of a tab in the indentation of the error's line or the one before it: the
    parser's message (`found character '\\t'`, or a confused `mapping values are not allowed`) rarely
    says that a tab is the cause."""
    for number in (line, line - 1):
        if 0 < number <= len(lines):
            text = lines[number - 1]
            indent = text[: len(text) - len(text.lstrip(" \t"))]
            if "\t" in indent:
                return number, indent.index("\t") + 1
    return None


def _syntax_hint(problem: str) -> str:
    if "mapping values are not allowed" in problem:
        return "a `key: value` is missing its space after the colon, or a value needs quotes"
    if "'\\t'" in problem or "\t" in problem:
        return "YAML uses spaces, not tabs: replace the tab by spaces"
    if "could not find expected ':'" in problem:
        return "check the indentation of this block and the line before it"
    return "check the YAML around this position"


def _span(node: Node) -> Span:
    start, end = node.start_mark, node.end_mark
    return Span(start.line + 1, start.column + 1, end.line + 1, end.column + 1)


class _Builder:
    """Turns a composed node graph into Python values, recording positions and problems."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.key_spans: dict[FieldPath, Span] = {}
        self.value_spans: dict[FieldPath, Span] = {}
        self.findings: list[Finding] = []
        self.reported: set[FieldPath] = set()
        self._count = 0
        self._active: set[int] = set()

    def _problem(
        self, code: str, node: Node, path: FieldPath, message: str, hint: str = "", *, replaced: bool = True
    ) -> None:
        """Report a problem at `node`; `replaced`: the value at `path` is left out, so later layers stay
        quiet about it."""
        if replaced:
            self.reported.add(path)
        span = _span(node)
        end = span.end_column if span.end_line == span.line else 0
        self.findings.append(
            _finding(
                code,
                self.file,
                message,
                line=span.line,
                column=span.column,
                end_column=end,
                field_path=path,
                hint=hint,
            )
        )

    def _plain_text(self, node: Node, path: FieldPath, text: str, *, replaced: bool = True) -> bool:
        """Whether a string (key or value) is plain text; template syntax or a control character is
        reported here, for every field alike, and the value is left out (architecture §11.4)."""
        problem = text_problem(text)
        if problem is None:
            return True
        message, hint = problem
        self._problem("BP010", node, path, message, hint=hint, replaced=replaced)
        return False

    def _admit(self, node: Node, path: FieldPath, where: Node | None = None) -> bool:
        """Count one more value (an alias or merge expands to new ones) and refuse past the limits;
        a problem is reported at `where` (the merging mapping) or else at the node."""
        at = where or node
        self._count += 1
        if self._count == MAX_NODES + 1:
            self._problem(
                "BP004",
                at,
                path,
                f"the document expands to more than {MAX_NODES:,} values (through aliases or merge keys)",
                hint="blueprints do not need anchors that multiply; write the values out",
            )
        if self._count > MAX_NODES:
            return False
        if id(node) in self._active:
            self._problem(
                "BP004", at, path, "recursive YAML alias or merge key", hint="remove the self-reference"
            )
            return False
        if len(self._active) >= MAX_DEPTH:
            self._problem(
                "BP004",
                at,
                path,
                f"the document nests more than {MAX_DEPTH} levels deep (through aliases or merge keys)",
                hint="write the values out instead of chaining anchors",
            )
            return False
        return True

    def build(self, node: Node, path: FieldPath) -> Any:
        if not self._admit(node, path):
            return None
        self.value_spans.setdefault(path, _span(node))
        if isinstance(node, MappingNode):
            self._active.add(id(node))
            try:
                return self._mapping(node, path)
            finally:
                self._active.discard(id(node))
        if isinstance(node, SequenceNode):
            self._active.add(id(node))
            try:
                return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
            finally:
                self._active.discard(id(node))
        assert isinstance(node, ScalarNode)
        return self._scalar(node, path)

    def _mapping(self, node: MappingNode, path: FieldPath) -> dict[str, Any]:
        result: dict[str, Any] = {}
        first_seen: dict[str, Span] = {}
        merged_from: list[MappingNode] = []
        for key_node, value_node in node.value:
            if key_node.tag == _TAG + "merge":
                sources = value_node.value if isinstance(value_node, SequenceNode) else [value_node]
                for source in sources:
                    if isinstance(source, MappingNode):
                        merged_from.append(source)
                    else:
                        self._problem("BP004", source, path, "`<<` merges only mappings")
                continue
            if not isinstance(key_node, ScalarNode):
                self._problem("BP004", key_node, path, "mapping keys must be plain strings")
                continue
            key = str(key_node.value)
            key_span = _span(key_node)
            # A refused key is reported at its mapping: the field path a message names stays plain text.
            if not self._plain_text(key_node, path, key, replaced=False):
                continue
            if key in first_seen:
                first = first_seen[key]
                self._problem(
                    "BP003",
                    key_node,
                    (*path, key),
                    f"duplicate key '{key}' (first defined at line {first.line})",
                    hint="remove one of the two; YAML would silently keep only one",
                )
                continue
            first_seen[key] = key_span
            self.key_spans[(*path, key)] = key_span
            result[key] = self.build(value_node, (*path, key))
        for source in merged_from:
            # A merge expands the source mapping again: it counts toward the limits like an alias.
            if not self._admit(source, path, where=node):
                break
            self._active.add(id(source))
            try:
                inherited = self._mapping(source, path)
            finally:
                self._active.discard(id(source))
            for key, value in inherited.items():
                result.setdefault(key, value)
        return result

    def _scalar(self, node: ScalarNode, path: FieldPath) -> Any:
        tag, value = node.tag, node.value
        try:
            if tag == _TAG + "str":
                return value if self._plain_text(node, path, value) else None
            if tag == _TAG + "null":
                return None
            if tag == _TAG + "bool":
                return value.lower() == "true"
            if tag == _TAG + "int":
                return _int(value)
            if tag == _TAG + "float":
                return _float(value)
            if tag == _TAG + "timestamp":
                return value
        except ValueError:
            self._problem("BP009", node, path, f"cannot read '{value}' as a {str(tag).removeprefix(_TAG)}")
            return value
        self._problem(
            "BP004",
            node,
            path,
            f"YAML tag {tag} is not supported in blueprints",
            hint="remove the tag and write a plain value",
        )
        return None


def _int(text: str) -> int:
    body = text.lstrip("+-").lower()
    if body.startswith(("0x", "0o", "0b")):
        return int(text, 0)
    # YAML 1.2 reads 017 as decimal 17; Python's int(.., 0) would refuse the leading zero.
    return int(text, 10)


def _float(text: str) -> float:
    lowered = text.lower()
    if lowered in {".inf", "+.inf"}:
        return math.inf
    if lowered == "-.inf":
        return -math.inf
    if lowered == ".nan":
        return math.nan
    return float(text)
