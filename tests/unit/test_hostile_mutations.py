"""Property: however an example blueprint is mangled, the CLI ends with exit 0 or 1 (never 2 for a
readable file, never 3, never a traceback), prints one JSON document, and every error finding points at
a line of the file (BP001, a file that is not a blueprint at all, excepted).

The examples are mutated as text (lines deleted, duplicated, swapped, re-indented, cut; characters
inserted) and as data (keys deleted, renamed or retyped, values replaced by hostile ones: huge numbers,
inf and nan, nulls, anchors and merge keys, deep nesting), then run through `clusterfab validate` and,
when valid, `clusterfab cost`, in this process. Runs are derandomized and use no example database, so CI
sees the same inputs every time; about a minute on one core.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from clusterfab import cli
from tests.conftest import EXAMPLES, REPO

TEXTS = [path.read_text() for path in EXAMPLES]

HOSTILE_SCALARS = [
    "1e29",
    "-1",
    "0",
    "100000000000000000000000000000",
    ".inf",
    "-.inf",
    ".nan",
    "~",
    "''",
    "[]",
    "{}",
    "[[[[[[[[]]]]]]]]",
    "!!binary aGVsbG8=",
    "!Ref x",
    "*nowhere",
    "&a {<<: *a}",
    '"\\t"',
    "yes",
    "0x1F",
    "2026-11-22",
    "é",
    "' '",
    "- a",
    ": :",
    "{a: [b, {c: d}]}",
]
HOSTILE_VALUES: list[Any] = [
    None,
    True,
    0,
    -5,
    10**30,
    1e29,
    float("inf"),
    float("nan"),
    "",
    "AWS",
    "spot",
    "4x4x3",
    "13.99",
    [],
    {},
    [None],
    {"kind": "spto"},
    {"name": None},
    [[[[["deep"]]]]],
]
KEYS = [
    "version", "name", "cloud", "region", "zone", "project", "labels", "network", "node_groups", "tpu_slices",
    "storage", "software", "budget", "environments", "count", "capacity", "kind", "machine_type",
    "autoscaling", "min", "max", "topology", "generation", "capacity_gib", "reservation", "attach", "dev",
    "prod", "max_hourly_usd", "nodegroups", "machinetype", "<<",
]  # fmt: skip


def _mutate_text(data: st.DataObject, text: str) -> str:
    lines = text.splitlines()
    for _ in range(data.draw(st.integers(1, 4), label="text edits")):
        if not lines:
            break
        i = data.draw(st.integers(0, len(lines) - 1), label="line")
        action = data.draw(
            st.sampled_from(["delete", "duplicate", "swap", "indent", "dedent", "scalar", "insert", "cut"])
        )
        if action == "delete":
            del lines[i]
        elif action == "duplicate":
            lines.insert(i, lines[i])
        elif action == "swap":
            j = data.draw(st.integers(0, len(lines) - 1), label="other line")
            lines[i], lines[j] = lines[j], lines[i]
        elif action == "indent":
            lines[i] = data.draw(st.sampled_from(["  ", "\t", " "])) + lines[i]
        elif action == "dedent":
            lines[i] = lines[i].lstrip()
        elif action == "scalar" and ":" in lines[i]:
            head = lines[i].rsplit(":", 1)[0]
            lines[i] = f"{head}: {data.draw(st.sampled_from(HOSTILE_SCALARS))}"
        elif action == "insert":
            at = data.draw(st.integers(0, len(lines[i])))
            piece = data.draw(st.text(alphabet="{}[]:,-&*!|>'\"#%@` \t\x00xé", max_size=4))
            lines[i] = lines[i][:at] + piece + lines[i][at:]
        elif action == "cut":
            lines = lines[: i + 1]
            lines[-1] = lines[-1][: data.draw(st.integers(0, len(lines[-1])))]
    return "\n".join(lines) + "\n"


def _paths(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if len(path) > 12:
        return found  # a mutation may have made the data recursive (`&a {<<: *a}`)
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _paths(value, (*path, index))
    return found


def _mutate_data(data: st.DataObject, text: str) -> str:
    tree = YAML(typ="safe").load(text)
    for _ in range(data.draw(st.integers(1, 3), label="data edits")):
        paths = [p for p in _paths(tree) if p]
        if not paths:
            break
        path = data.draw(st.sampled_from(paths), label="path")
        parent: Any = tree
        for part in path[:-1]:
            parent = parent[part]
        last = path[-1]
        action = data.draw(st.sampled_from(["delete", "replace", "rename", "wrap", "add"]))
        if action == "delete":
            del parent[last]
        elif action == "replace":
            parent[last] = data.draw(st.sampled_from(HOSTILE_VALUES))
        elif action == "rename" and isinstance(parent, dict):
            parent[data.draw(st.sampled_from(KEYS))] = parent.pop(last)
        elif action == "wrap":
            parent[last] = [parent[last]] if data.draw(st.booleans()) else {"x": parent[last]}
        elif action == "add" and isinstance(parent, dict):
            parent[data.draw(st.sampled_from(KEYS))] = data.draw(st.sampled_from(HOSTILE_VALUES))
    stream = io.StringIO()
    YAML(typ="safe").dump(tree, stream)
    return stream.getvalue()


def _run(*args: str) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    with (
        pytest.MonkeyPatch.context() as patch,
        contextlib.redirect_stdout(stdout),
        contextlib.redirect_stderr(stderr),
    ):
        patch.setattr(sys, "argv", ["clusterfab", *args])
        try:
            cli.main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 0
    return code, stdout.getvalue(), stderr.getvalue()


@settings(
    max_examples=400,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_mangled_examples_give_located_findings_never_a_crash(
    data: st.DataObject, tmp_path_factory: pytest.TempPathFactory
) -> None:
    text = data.draw(st.sampled_from(TEXTS), label="example")
    mangled = (
        _mutate_data(data, text) if data.draw(st.booleans(), label="as data") else _mutate_text(data, text)
    )
    path = tmp_path_factory.mktemp("mutant") / "bp.yaml"
    path.write_bytes(mangled.encode("utf-8", "surrogatepass"))
    code, out, err = _run("validate", str(path), "--format", "json")
    assert code in {0, 1}, (code, err, mangled)
    assert "Traceback" not in err
    document = json.loads(out)
    for finding in document["findings"]:
        if finding["severity"] == "error" and finding["code"] != "BP001":
            assert finding["line"] > 0, (finding, mangled)
    assert document["ok"] == (code == 0)
    if code == 0:
        cost, out, err = _run("cost", str(path), "--format", "json", "--hours", "336")
        assert cost in {0, 1}, (err, mangled)
        assert json.loads(out)["schema_version"] == 1


def test_a_node_group_named_by_a_list_is_a_finding_in_every_environment(tmp_path: Path) -> None:
    # Found by the search above: the capacity-block rule read the raw document's names as dict keys.
    example = (REPO / "blueprints/examples/aws-p5-efa-fsx.yaml").read_text()
    path = tmp_path / "bp.yaml"
    path.write_text(example.replace("- name: trainers", "- name: []"))
    code, out, err = _run("validate", str(path), "--format", "json")
    assert (code, err) == (1, "")
    found = {(f["code"], f["field"], f["line"]) for f in json.loads(out)["findings"]}
    assert found == {
        ("BP008", "node_groups[0].name", 15),
        ("BP006", "environments.dev.node_groups[0].name", 40),
    }
