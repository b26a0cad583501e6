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
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from clusterfab.core.codes import code_info
from clusterfab.core.errors import UsageError
from clusterfab.core.findings import FieldPath, Finding, render_path

MAX_BLUEPRINT_BYTES = 1 << 20
"""A blueprint is a page or two of YAML; anything past 1 MiB is the wrong file."""

MAX_NODES = 50_000
"""Upper bound on values built from one file, which stops alias expansion bombs."""

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
            return None, [
                _finding(
                    "BP001",
                    shown,
                    f"file is {size / (1 << 20):.1f} MiB; a blueprint is at most "
                    f"{MAX_BLUEPRINT_BYTES >> 20} MiB",
                    hint="check that this is the blueprint you meant; split data out of it",
                )
            ]
        raw = path.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"no such file: {shown}") from None
    except PermissionError:
        raise UsageError(f"cannot read {shown}: permission denied") from None
    return parse_blueprint_bytes(raw, shown)


def parse_blueprint_bytes(raw: bytes, file: str) -> tuple[Document | None, list[Finding]]:
    """Parse blueprint bytes (already read) into a Document, or findings saying why not."""
    if len(raw) > MAX_BLUEPRINT_BYTES:
        return None, [_finding("BP001", file, f"file is larger than {MAX_BLUEPRINT_BYTES >> 20} MiB")]
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
    """Parse blueprint text into a Document, or findings saying why not."""
    lines = tuple(text.splitlines())
    yaml = YAML(typ="safe")
    try:
        nodes = list(yaml.compose_all(io.StringIO(text)))
    except MarkedYAMLError as exc:
        # "could not find expected ':'" is found on the line after a key that lacks its colon;
        # the context mark ("while scanning a simple key") is where the user has to look.
        simple_key = exc.context is not None and "simple key" in exc.context
        mark = (exc.context_mark if simple_key else None) or exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 0
        column = mark.column + 1 if mark is not None else 0
        problem = exc.problem or exc.context or "invalid YAML"
        return None, [
            _finding(
                "BP002",
                file,
                f"YAML syntax error: {problem}",
                line=line,
                column=column,
                end_column=column + 1,
                hint="this line needs `key: value` (a colon and a space after the key), or is mis-indented"
                if simple_key
                else _syntax_hint(problem),
            )
        ]
    except YAMLError as exc:  # errors without a position (e.g. reader errors)
        return None, [_finding("BP002", file, f"YAML syntax error: {exc}")]
    documents = [n for n in nodes if n is not None]
    if not documents:
        return None, [
            _finding("BP001", file, "file is empty", hint="start from one of blueprints/examples/*.yaml")
        ]
    if len(documents) > 1:
        second = documents[1]
        return None, [
            _finding(
                "BP004",
                file,
                "file holds several YAML documents; a blueprint is one",
                line=second.start_mark.line + 1,
                column=second.start_mark.column + 1,
                hint="remove the `---` separator and keep one document",
            )
        ]
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


def _syntax_hint(problem: str) -> str:
    if "mapping values are not allowed" in problem:
        return "a `key: value` is missing its space after the colon, or a value needs quotes"
    if "found character '\\t'" in problem or "\\t" in problem:
        return "YAML indentation uses spaces, not tabs"
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

    def _problem(self, code: str, node: Node, path: FieldPath, message: str, hint: str = "") -> None:
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

    def build(self, node: Node, path: FieldPath) -> Any:
        self._count += 1
        if self._count == MAX_NODES + 1:
            self._problem(
                "BP004",
                node,
                path,
                f"the document expands to more than {MAX_NODES:,} values (through aliases)",
                hint="blueprints do not need anchors that multiply; write the values out",
            )
        if self._count > MAX_NODES:
            return None
        self.value_spans.setdefault(path, _span(node))
        if id(node) in self._active:
            self._problem("BP004", node, path, "recursive YAML alias", hint="remove the self-reference")
            return None
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
            inherited = self._mapping(source, path)
            for key, value in inherited.items():
                result.setdefault(key, value)
        return result

    def _scalar(self, node: ScalarNode, path: FieldPath) -> Any:
        tag, value = node.tag, node.value
        try:
            if tag == _TAG + "str":
                return value
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
