"""Blueprint text is data (architecture §11.4): template syntax and control characters are refused in
every string of a blueprint, mount points are the roles' own path pattern, and every variable handed to
Ansible is marked so that it is never templated."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from ruamel.yaml import YAML

from clusterfab.blueprint.models import MOUNT_POINT_PATTERN
from clusterfab.bootstrap.inert import inert, inert_json, plain
from clusterfab.core.text import TEMPLATE_MARKERS, shown, text_problem
from clusterfab.load import load_bytes
from tests.conftest import EXAMPLES, REPO
from tests.factories import TODAY

ROLES = REPO / "playbooks" / "roles"
BASE = """\
version: 1
name: text-is-data
cloud: aws
region: us-east-1
zone: use1-az6
labels: {team: ml}
node_groups:
  - {name: trainers, machine_type: p5.48xlarge, count: 2}
"""


PRINTABLE = st.characters(exclude_categories=["Cc", "Cs", "Co", "Cn", "Zl", "Zp"])
"""What YAML lets a double-quoted scalar hold as it is (control characters are written as escapes)."""


def _findings(text: str) -> list[tuple[str, str, int, int]]:
    result = load_bytes(text.encode(), "x.yaml", today=TODAY)
    return [(f.code, f.field, f.line, f.column) for f in result.findings if f.severity.value == "error"]


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("{{ lookup('pipe', 'id') }}", "'{{ lookup('pipe', 'id') }}' contains '{{'"),
        ("a{%raw%}", "'a{%raw%}' contains '{%'"),
        ("{# c #}", "'{# c #}' contains '{#'"),
        ("a\nb", "'a\\nb' contains U+000A (line feed)"),
        ("a\x1b[2J", "'a\\x1b[2J' contains U+001B (escape)"),
        ("abc\u202edcb", "'abc\\u202edcb' contains U+202E (right-to-left override)"),
        ("a\u2028b", "'a\\u2028b' contains U+2028 (line separator)"),
        ("zero\u200bwidth", "'zero\\u200bwidth' contains U+200B (zero width space)"),
    ],
)
def test_text_problem_names_what_is_wrong(value: str, problem: str) -> None:
    found = text_problem(value)
    assert found is not None
    assert found[0].startswith(problem)


@pytest.mark.parametrize("value", ["ml-platform", "/lustre", "a{b}c", "{ {", "café", "$(id)", "a;b", "ёлка"])
def test_plain_text_passes(value: str) -> None:
    assert text_problem(value) is None


def test_shown_escapes_and_cuts() -> None:
    assert shown("a\tb\x00") == "'a\\tb\\x00'"
    assert shown("x" * 100) == "'" + "x" * 59 + "…'"


@given(
    prefix=st.text(alphabet=PRINTABLE, max_size=20),
    marker=st.sampled_from(TEMPLATE_MARKERS),
    suffix=st.text(alphabet=PRINTABLE, max_size=20),
)
def test_any_label_with_template_syntax_is_refused_where_it_is_written(
    prefix: str, marker: str, suffix: str
) -> None:
    value = prefix + marker + suffix
    text = BASE.replace("labels: {team: ml}", f"labels:\n  team: {json.dumps(value, ensure_ascii=False)}")
    assert ("BP010", "labels.team", 7, 9) in _findings(text)


@pytest.mark.parametrize(
    ("where", "yaml_text", "field", "line", "column"),
    [
        ("a key", 'labels: {"{{x}}": y}', "labels", 6, 10),
        ("a list item", "network: {ssh_ingress_cidrs: ['{{x}}']}", "network.ssh_ingress_cidrs[0]", 6, 31),
        (
            "an overlay",
            "environments: {dev: {labels: {team: '{%x%}'}}}",
            "environments.dev.labels.team",
            6,
            37,
        ),
    ],
)
def test_template_syntax_is_refused_anywhere(
    where: str, yaml_text: str, field: str, line: int, column: int
) -> None:
    text = BASE.replace("labels: {team: ml}", yaml_text)
    assert _findings(text) == [("BP010", field, line, column)], where


def test_every_example_is_plain_text() -> None:
    yaml = YAML(typ="safe")

    def strings(value: object) -> list[str]:
        if isinstance(value, str):
            return [value]
        if isinstance(value, dict):
            return [s for k, v in value.items() for s in (*strings(k), *strings(v))]
        if isinstance(value, list):
            return [s for v in value for s in strings(v)]
        return []

    for path in EXAMPLES:
        assert [s for s in strings(yaml.load(path.read_text())) if text_problem(s)] == [], path.name


def _role_regex(role: str) -> str:
    variables = YAML(typ="safe").load((ROLES / role / "vars" / "main.yml").read_text())
    return str(variables[f"__{role}_mount_point_regex"])


@pytest.mark.parametrize("role", ["storage_mounts", "local_scratch"])
def test_mount_points_are_the_roles_own_pattern(role: str) -> None:
    # Anchored at the end with \Z: `$` would let a trailing line feed through.
    assert _role_regex(role) == f"^{MOUNT_POINT_PATTERN}\\Z"


@pytest.mark.parametrize(
    ("mount_point", "column"),
    [("/lustre;id", 18), ("/lustre$(id)", 18), ("/x/../etc", 18), ("/-x", 18), ("/a b", 18), ("lustre", 18)],
)
def test_a_mount_point_outside_the_pattern_is_refused(mount_point: str, column: int) -> None:
    text = BASE + (
        "storage:\n  - name: data\n    kind: lustre\n    capacity_gib: 4800\n"
        "    throughput_mbps_per_tib: 125\n    deployment: persistent\n"
        f"    mount_point: {json.dumps(mount_point)}\n"
    )
    assert ("BP009", "storage[0].mount_point", 15, column) in _findings(text)
    assert re.match(_role_regex("storage_mounts"), mount_point) is None


def test_inert_marks_every_string_at_any_depth() -> None:
    variables = {"a": "x", "n": 3, "b": True, "none": None, "l": ["y", {"k": "z"}], "d": {"e": ["w", 1.5]}}
    marked = inert(variables)
    assert marked == {
        "a": {"__ansible_unsafe": "x"},
        "n": 3,
        "b": True,
        "none": None,
        "l": [{"__ansible_unsafe": "y"}, {"k": {"__ansible_unsafe": "z"}}],
        "d": {"e": [{"__ansible_unsafe": "w"}, 1.5]},
    }
    assert plain(marked) == variables


def test_inert_json_is_one_variable_a_line() -> None:
    assert inert_json({"b": ["x"], "a": "{{ y }}"}) == (
        '{\n  "a": {"__ansible_unsafe": "{{ y }}"},\n  "b": [{"__ansible_unsafe": "x"}]\n}'
    )
    assert json.loads(inert_json({})) == {}


def test_no_role_matches_with_a_dollar_anchor() -> None:
    # Ansible's `match` test is re.match: `$` also matches before a final line feed.
    offenders = [
        f"{path.relative_to(REPO)}:{number}"
        for path in sorted(ROLES.glob("*/*/*.yml"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"is match\('[^']*\$'\)|_regex: '[^']*\$'", line)
    ]
    assert offenders == []


def test_the_catalog_holds_no_template() -> None:
    """The catalog's strings reach the hosts' variables too (package names, URLs), marked unsafe: a template
    there would arrive as its text. A placeholder the role fills in is written {name}, as {kernel}."""
    data = REPO / "clusterfab" / "catalog" / "data"
    found = [
        f"{path.name}:{number}"
        for path in sorted(data.glob("*.yaml"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if any(marker in line.split("#", 1)[0] for marker in TEMPLATE_MARKERS)
    ]
    assert found == []
