"""No value can change the structure of a Markdown pull request comment.

A label key with a newline and `## Approved` used to print a forged heading into `clusterfab diff
--format markdown`. Every renderer (diff, cost, validate, the Mermaid sketch) now passes values through
clusterfab.core.markdown; these tests put one hostile string everywhere a value goes, on both sides of a
diff, and read the output back with a CommonMark parser (markdown-it, with GFM tables): the headings,
table rows, HTML and fences are exactly the renderer's own."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from clusterfab.core import markdown as md
from clusterfab.cost.diff import CostDiff, ItemDelta
from clusterfab.cost.estimate import CostItem, estimate_cost
from clusterfab.cost.render import render_markdown as cost_markdown
from clusterfab.plan.compare import compare
from clusterfab.plan.report import DiffReport, report_markdown
from clusterfab.rules.render import render_markdown as findings_markdown
from tests.conftest import REPO
from tests.factories import TODAY

EXAMPLE = REPO / "blueprints" / "examples" / "aws-p5-efa-fsx.yaml"
HOSTILE = (
    "x\n## Approved\r\n| forged | row | x | y | z |\n\n> [!NOTE]\n<img src=x onerror=alert(1)>"
    "\u2028- item\n```\n~~~\n`\\` [link](https://example.com) *a* _b_ &amp; @team\n"
    '"]\n  end\n  click n_x call alert()\n%%{init: {}}%%|#quot;'
)
"""Newlines of every kind, a heading, a table row, a quote, an alert, HTML, a list item, fences, a code
span, a backslash, a link, emphasis, an entity, a mention; for Mermaid: a closing quote and bracket, a
new statement, a directive, an edge label's pipe and an entity code."""
PARSER = MarkdownIt("commonmark").enable(["table", "strikethrough"])
ALLOWED_HTML = re.compile(
    r"<details><summary>(Resource changes|Cluster|Source lines|As text|Warnings \(\d+\))</summary>"
    r"|</details>|<sub>|</sub>"
)
"""The renderers' own HTML: folded sections and the small print."""


def _hostile(value: str) -> str:
    return f"{value}{HOSTILE}"


def _structure(text: str) -> dict[str, Any]:
    tokens = PARSER.parse(text)
    inline = [child for t in tokens if t.children for child in t.children]
    rows: list[list[int]] = []
    for token in tokens:
        if token.type == "table_open":
            rows.append([])
        elif token.type == "tr_open":
            rows[-1].append(0)
        elif token.type in ("th_open", "td_open"):
            rows[-1][-1] += 1
    return {
        "headings": [t.tag for t in tokens if t.type == "heading_open"],
        "html": {t.content.strip() for t in [*tokens, *inline] if t.type.startswith("html")},
        "tables": rows,
        "fences": [t for t in tokens if t.type == "fence"],
        "links": [t for t in inline if t.type in ("link_open", "image")],
        "quotes": sum(1 for t in tokens if t.type == "blockquote_open"),
        "lists": sum(1 for t in tokens if t.type in ("bullet_list_open", "ordered_list_open")),
    }


def _unfenced(text: str) -> list[str]:
    """The lines outside fenced blocks (a fence closes with its own marker, at least as long)."""
    out, marker = [], ""
    for line in text.splitlines():
        opening = re.match(r"(`{3,}|~{3,})", line)
        if marker:
            if line.strip() == marker[0] * len(line.strip()) and len(line.strip()) >= len(marker):
                marker = ""
        elif opening:
            marker = opening.group(1)
        else:
            out.append(line)
    return out


def _hostile_report(tmp_path: Path) -> DiffReport:
    """A real diff (scale up, spot, bigger file system) whose every value is then made hostile, on the
    base side and the new side alike."""
    text = EXAMPLE.read_text()
    for old, new in (
        ("    count: 16", "    count: 24"),
        ("capacity: {kind: on_demand}", "capacity: {kind: spot}"),
    ):
        text = text.replace(old, new, 1)
    target = tmp_path / "new.yaml"
    target.write_text(text)
    report = compare(EXAMPLE, target, env="prod", today=TODAY)
    created = report.resources.update[0].after
    resources = dataclasses.replace(
        report.resources,
        create=(dataclasses.replace(created, type=_hostile("aws:x/y:Z"), name=_hostile("made")),),
        update=tuple(
            dataclasses.replace(
                u,
                after=dataclasses.replace(u.after, type=_hostile(u.after.type), name=_hostile(u.after.name)),
                changed=(*u.changed, _hostile("tags.team")),
                restarts=(_hostile("userData"),),
            )
            for u in report.resources.update
        ),
        delete=(dataclasses.replace(created, type=_hostile("aws:x/y:Z"), name=_hostile("gone")),),
    )
    items = tuple(
        ItemDelta(
            name=_hostile(i.name),
            kind=i.kind,
            before=i.before
            and dataclasses.replace(i.before, name=_hostile(i.name), sku=_hostile(i.before.sku)),
            after=i.after and dataclasses.replace(i.after, name=_hostile(i.name), sku=_hostile(i.after.sku)),
        )
        for i in report.cost.items
    )
    spec = report.spec
    groups = tuple(
        dataclasses.replace(
            g, name=_hostile(g.name), machine=g.machine.model_copy(update={"name": _hostile("m")})
        )
        for g in spec.node_groups
    )
    storage = tuple(
        dataclasses.replace(s, name=_hostile(s.name), mount_point=_hostile("/mnt")) for s in spec.storage
    )
    groups = tuple(dataclasses.replace(g, storage=tuple(s.name for s in storage)) for g in groups)
    return dataclasses.replace(
        report,
        base=_hostile("base.yaml"),
        target=_hostile("new.yaml"),
        env=_hostile("prod"),
        resources=resources,
        cost=CostDiff(before=report.cost.before, after=report.cost.after, items=items),
        spec=dataclasses.replace(spec, node_groups=groups, storage=storage),
        findings=tuple(
            dataclasses.replace(
                f,
                message=_hostile(f.message),
                field=_hostile(f.field),
                file=_hostile(f.file),
                hint=_hostile(f.hint),
            )
            for f in report.findings
        ),
    )


def _hostile_item(item: CostItem | None) -> CostItem | None:
    return item and dataclasses.replace(item, name=_hostile(item.name), sku=_hostile(item.sku))


def test_hostile_values_on_both_sides_of_a_diff_stay_values(tmp_path: Path) -> None:
    report = _hostile_report(tmp_path)
    text = report_markdown(report)
    found = _structure(text)
    assert found["headings"] == ["h3"]
    assert all(ALLOWED_HTML.fullmatch(html) for html in found["html"]), found["html"]
    changed = [i for i in report.cost.items if i.changed]
    resources = 1 + len(report.resources.update) + 1
    findings = [f for f in report.findings if f.code != "BP403"]
    assert findings
    assert found["tables"] == [[5] * (1 + len(changed)), [6] * (1 + len(findings)), [4] * (1 + resources)]
    assert found["links"] == []
    # The findings' text form, then the sketch: fenced, so nothing in them is Markdown.
    findings_text, sketch = found["fences"]
    assert (findings_text.info, sketch.info) == ("text", "mermaid")
    # The warnings are quotes of their own: one per replaced group, restart, ... and no forged one.
    alerts = [line for line in _unfenced(text) if line in ("> [!WARNING]", "> [!NOTE]")]
    assert found["quotes"] == len(alerts) == 2
    assert found["lists"] == 0
    _assert_mermaid(sketch.content, report)


def _assert_mermaid(content: str, report: DiffReport) -> None:
    """Every line of the sketch is one statement of the renderer's forms, each label one quoted string."""
    label = r'"[^"\n]*"'
    node = r"n_[A-Za-z0-9_]+"
    forms = [
        re.compile(r"graph LR"),
        re.compile(rf"  {node}\[{label}\]"),
        re.compile(rf"  {node}\[\({label}\)\]"),
        re.compile(rf"  {node} -->\|[^|\"\n]*\| {node}"),
    ]
    lines = content.rstrip("\n").split("\n")
    spec = report.spec
    mounts = sum(len(spec.storage_named(g.storage)) for g in spec.node_groups)
    assert len(lines) == 1 + len(spec.node_groups) + len(spec.storage) + mounts
    for line in lines:
        assert any(form.fullmatch(line) for form in forms), line
    assert "<" not in content.replace("<br/>", "")


def test_the_mermaid_ids_of_distinct_names_are_distinct() -> None:
    names = ["a-b", "a_b", "a_2d_b", "end", "graph", "a b", 'a"b']
    ids = [md.mermaid_id(n) for n in names]
    assert len(set(ids)) == len(names)
    assert all(re.fullmatch(r"n_[A-Za-z0-9_]+", i) for i in ids)


def test_a_hostile_cost_estimate_stays_values() -> None:
    from clusterfab.load import load

    validated = load(EXAMPLE, environment="dev", today=TODAY).blueprints["dev"]
    estimate = estimate_cost(validated.spec, _catalog(), today=TODAY)
    estimate = dataclasses.replace(
        estimate,
        name=_hostile("cluster"),
        region=_hostile("us-east-1"),
        items=tuple(
            dataclasses.replace(i, name=_hostile(i.name), sku=_hostile(i.sku)) for i in estimate.items
        ),
    )
    text = cost_markdown(estimate, environment=_hostile("dev"))
    found = _structure(text)
    assert found["headings"] == ["h3"]
    assert all(ALLOWED_HTML.fullmatch(html) for html in found["html"]), found["html"]
    assert found["tables"] == [[8] * (1 + len(estimate.items) + 1)]
    assert found["links"] == []
    assert found["fences"] == []


def _catalog() -> Any:
    from clusterfab.catalog import load_catalog

    return load_catalog()


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CLUSTERFAB_TODAY": "2026-11-22"}
    return subprocess.run(
        [sys.executable, "-m", "clusterfab", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )


def test_a_label_key_with_a_heading_cannot_approve_a_diff(tmp_path: Path) -> None:
    """The attack as reported: the new blueprint adds a label whose key holds a newline and a heading."""
    base = tmp_path / "base.yaml"
    base.write_text(EXAMPLE.read_text())
    new = tmp_path / "new.yaml"
    new.write_text(EXAMPLE.read_text().replace("labels:\n", 'labels:\n  "x\\n## Approved": y\n', 1))
    proc = _cli("diff", str(base), str(new), "--env", "prod", "--format", "markdown", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert not any(line.startswith("## ") for line in proc.stdout.splitlines()), proc.stdout
    found = _structure(proc.stdout)
    assert found["headings"] == ["h3"]
    assert all(ALLOWED_HTML.fullmatch(html) for html in found["html"]), found["html"]
    # The label is refused where it is written, as a finding in the comment's table (every row six cells).
    [rows] = found["tables"]
    assert rows == [6, 6]  # the header and the one finding
    # The key is reported at its mapping (a refused key never becomes a field path), shown escaped.
    assert "`labels`" in proc.stdout
    assert r"'x\n## Approved' contains U+000A (line feed)" in proc.stdout
    (source,) = found["fences"]
    assert source.info == "text"


def test_validate_markdown_keeps_source_lines_in_their_fence(tmp_path: Path) -> None:
    """A source line with a fence of its own (in a quoted value) cannot close the comment's fence."""
    path = tmp_path / "bp.yaml"
    text = EXAMPLE.read_text().replace("labels:\n", 'labels:\n  "````": "<b>x</b>"\n', 1)
    path.write_text(text)
    proc = _cli("validate", str(path), "--env", "prod", "--format", "markdown", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    found = _structure(proc.stdout)
    assert found["headings"] == ["h3"]
    assert all(ALLOWED_HTML.fullmatch(html) for html in found["html"]), found["html"]
    assert found["tables"] == [[6, 6, 6]]  # the key and the value: AWS takes neither
    (source,) = found["fences"]
    assert source.info == "text"
    assert '"````"' in source.content
    assert json.loads(_cli("validate", str(path), "-f", "json", cwd=tmp_path).stdout)["ok"] is False


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("x\n## Approved", "x ## Approved"),
        ("## Approved", "\\## Approved"),
        ("> quote", "\\> quote"),
        ("1. first", "1\\. first"),
        ("- item", "\\- item"),
        ("a | b", "a \\| b"),
        ("<img src=x>", "\\<img src=x>"),
        ("[a](b)", "\\[a\\](b)"),
        ("on_demand _x_", "on_demand \\_x\\_"),
        ("2026.11.26", "2026.11.26"),
        ("$648,087.20 -> $1", "$648,087.20 -> $1"),
    ],
)
def test_text_escapes_only_what_would_be_markdown(value: str, shown: str) -> None:
    assert md.text(value) == shown


def test_code_spans_and_fences_are_longer_than_what_they_hold() -> None:
    assert md.code("a`b") == "``a`b``"
    assert md.code("`x`") == "`` `x` ``"
    assert md.code("a|b", in_table=True) == "`a\\|b`"
    assert md.fence("```\nx", "text") == ["````text", "```\nx", "````"]
    assert findings_markdown([], [], title="t").splitlines()[0] == "### t"
