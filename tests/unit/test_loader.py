"""The blueprint loader: positions, and a finding (never a traceback) for every kind of bad file."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterfab.blueprint.loader import MAX_BLUEPRINT_BYTES, parse_blueprint_bytes, read_blueprint
from clusterfab.core.errors import UsageError


def _codes(raw: bytes) -> list[tuple[str, int, int, str]]:
    _, findings = parse_blueprint_bytes(raw, "x.yaml")
    return [(f.code, f.line, f.column, f.message) for f in findings]


def test_positions_of_keys_and_values_are_recorded() -> None:
    doc, findings = parse_blueprint_bytes(b"name: a\nnode_groups:\n  - name: g\n    count: 16\n", "x.yaml")
    assert findings == []
    assert doc is not None
    span = doc.value_spans[("node_groups", 0, "count")]
    assert (span.line, span.column, span.end_column) == (4, 12, 14)
    key = doc.key_spans[("node_groups", 0, "count")]
    assert (key.line, key.column, key.end_column) == (4, 5, 10)
    assert doc.data == {"name": "a", "node_groups": [{"name": "g", "count": 16}]}


def test_yaml_1_2_keeps_no_and_on_as_strings() -> None:
    doc, _ = parse_blueprint_bytes(b"labels: {on: no, off: yes}\nversion: 017\nhex: 0x10\n", "x.yaml")
    assert doc is not None
    assert doc.data == {"labels": {"on": "no", "off": "yes"}, "version": 17, "hex": 16}


def test_duplicate_key_reports_both_lines() -> None:
    assert _codes(b"a: 1\nb: 2\na: 3\n") == [("BP003", 3, 1, "duplicate key 'a' (first defined at line 1)")]


def test_syntax_error_points_at_the_line_missing_its_colon() -> None:
    ((code, line, column, message),) = _codes(b"a:\n  b: 1\n  c 2\n  d: 3\n")
    assert (code, line, column) == ("BP002", 3, 3)
    assert "could not find expected ':'" in message


def test_binary_file_is_a_finding() -> None:
    assert _codes(b"version: 1\x00\x01\x02") == [("BP001", 0, 0, "file is binary, not a YAML blueprint")]


def test_non_utf8_file_points_at_the_bad_byte() -> None:
    assert _codes(b"name: caf\xe9\n") == [
        ("BP001", 1, 10, "file is not UTF-8 text (byte 0xe9 cannot be decoded)")
    ]


@pytest.mark.parametrize("raw", [b"", b"\n\n", b"# only a comment\n"], ids=["empty", "blank", "comment"])
def test_empty_file_is_a_finding(raw: bytes) -> None:
    assert _codes(raw) == [("BP001", 0, 0, "file is empty")]


def test_several_documents_are_refused() -> None:
    assert _codes(b"a: 1\n---\nb: 2\n") == [
        ("BP004", 3, 1, "file holds several YAML documents; a blueprint is one")
    ]


def test_alias_bomb_is_stopped() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 7):
        refs = ", ".join([f"*a{i - 1}"] * 10)
        lines.append(f"a{i}: &a{i} [{refs}]")
    codes = _codes("\n".join(lines).encode())
    assert [c[0] for c in codes] == ["BP004"]
    assert "more than 50,000 values" in codes[0][3]


def test_merge_keys_fill_missing_keys_only() -> None:
    doc, findings = parse_blueprint_bytes(b"base: &b {x: 1, y: 2}\nitem:\n  <<: *b\n  y: 3\n", "x.yaml")
    assert findings == []
    assert doc is not None
    assert doc.data["item"] == {"x": 1, "y": 3}


def test_ten_megabyte_file_is_a_finding_without_reading_it_all(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_bytes(b"a: " + b"x" * (10 * 1024 * 1024) + b"\n")
    doc, findings = read_blueprint(big, "big.yaml")
    assert doc is None
    assert [(f.code, f.message) for f in findings] == [
        ("BP001", "file is 10.0 MiB; a blueprint is at most 1 MiB")
    ]
    assert MAX_BLUEPRINT_BYTES == 1 << 20


def test_missing_file_and_directory_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such file"):
        read_blueprint(tmp_path / "nope.yaml")
    with pytest.raises(UsageError, match="is a directory"):
        read_blueprint(tmp_path)


@pytest.mark.parametrize(
    ("raw", "line", "column"),
    [
        (b"version: 1\nnode_groups:\n  - name: a\n\tcount: 2\n", 4, 1),
        (b"version: 1\nnode_groups:\n\t- name: a\n", 3, 1),
        (b"version: 1\nlabels:\n  a: x\n  \tb: y\n", 4, 3),
    ],
    ids=["tab-in-item", "tab-before-dash", "tab-after-spaces"],
)
def test_a_tab_in_the_indentation_is_named_as_the_cause(raw: bytes, line: int, column: int) -> None:
    doc, findings = parse_blueprint_bytes(raw, "x.yaml")
    ((code, at_line, at_column, _),) = [(f.code, f.line, f.column, f.message) for f in findings]
    assert (code, at_line, at_column) == ("BP002", line, column)
    assert findings[0].hint == (
        f"line {line} indents with a tab; YAML indents with spaces only: replace the tab by spaces"
    )
    # The file could not be parsed, but its lines are kept to show the source line of the error.
    assert doc is not None
    assert (doc.parsed, doc.data, len(doc.lines)) == (False, None, raw.count(b"\n"))


def test_merge_keys_count_toward_the_value_limit() -> None:
    lines = ["x0: &x0 {}"] + [f"x{i}: &x{i} {{<<: [{', '.join([f'*x{i - 1}'] * 8)}]}}" for i in range(1, 16)]
    codes = _codes("\n".join(lines).encode())
    assert [c[0] for c in codes] == ["BP004"]
    assert "more than 50,000 values (through aliases or merge keys)" in codes[0][3]


def test_a_recursive_merge_key_is_refused() -> None:
    assert _codes(b"labels: &a {<<: *a, b: c}\n") == [
        ("BP004", 1, 9, "recursive YAML alias or merge key"),
    ]


def test_deep_nesting_is_refused_before_composing() -> None:
    codes = _codes(b"a: " + b"[" * 30_000 + b"]" * 30_000 + b"\n")
    # The root mapping is level 1; the 64th `[` (column 67) opens level 65.
    assert codes == [("BP004", 1, 67, "the document nests more than 64 levels deep")]
