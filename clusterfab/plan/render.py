"""Plans for people: a resource tree grouped by component, like `pulumi preview`, with counts."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from clusterfab.contract import envelope
from clusterfab.core.findings import Finding
from clusterfab.plan.engine import PlannedResource
from clusterfab.plan.project import Plan
from clusterfab.plan.text import fit, short_type, type_column, wrap
from clusterfab.rules.render import render_text, summary_line


def _tree_lines(plan: Plan) -> list[tuple[str, PlannedResource | None]]:
    children: dict[str | None, list[PlannedResource]] = defaultdict(list)
    urns = {r.urn for r in plan.resources}
    for resource in plan.resources:
        parent = resource.parent if resource.parent in urns else None
        children[parent].append(resource)
    for siblings in children.values():
        siblings.sort(key=lambda r: (r.custom, r.type, r.name))
    lines: list[tuple[str, PlannedResource | None]] = []

    def walk(parent: str | None, prefix: str) -> None:
        siblings = children.get(parent, [])
        for position, resource in enumerate(siblings):
            last = position == len(siblings) - 1
            lines.append((f"{prefix}{'└─ ' if last else '├─ '}", resource))
            walk(resource.urn, prefix + ("   " if last else "│  "))

    walk(None, "")
    return lines


def render_plan_text(
    plan: Plan,
    *,
    width: int = 10_000,
    show_inputs: bool = False,
    findings: Sequence[Finding] = (),
    lines: Sequence[str] = (),
) -> str:
    """The plan as a tree, one line per resource with its (short) type and logical name, laid out for
    `width` columns; with `show_inputs` each resource's inputs follow it, one line per property."""
    env = plan.env or "none (base blueprint)"
    title = f"Plan of {plan.blueprint} (environment: {env}, stack: {plan.stack})"
    out = [*wrap(title, width), ""]
    tree = [(branch, r) for branch, r in _tree_lines(plan) if r is not None]
    labels = [f"{branch}{short_type(r.type)}" for branch, r in tree]
    names = [f"{r.name}{'  [protected]' if r.protect else ''}" for _, r in tree]
    column = type_column(labels, names, width, margin=6)
    out.append(f" +  {fit('pulumi:pulumi:Stack', column):<{column}}  {plan.stack}")
    for (branch, resource), label, name in zip(tree, labels, names, strict=True):
        out.append(f" +  {fit(label, column):<{column}}  {name}")
        if show_inputs:
            stem = branch.replace("├─ ", "│  ").replace("└─ ", "   ")
            for key, value in resource.inputs.items():
                shown = json.dumps(value, sort_keys=True, ensure_ascii=False)
                out.append(fit(f"    {stem}    {key}: {shown}", width))
    components = sum(1 for r in plan.resources if not r.custom)
    protected = sum(1 for r in plan.resources if r.protect)
    out += [
        "",
        f"Resources: + {len(plan.resources)} to create ({components} components, "
        f"{len(plan.resources) - components} cloud resources, {protected} protected)",
    ]
    if not show_inputs:
        out.append("(--show-inputs lists each resource's inputs; --format json has them all)")
    # The program logs the blueprint's warnings for `pulumi up`; here they are among the findings below.
    # The program names the file relative to the project, the CLI as it was given: compare what follows.
    logged = tuple(f.log_line.removeprefix(f.file) for f in findings)
    warnings = [
        m for level, m in plan.logs if level in {"warning", "error"} and not (logged and m.endswith(logged))
    ]
    if warnings:
        out += ["", "Program messages:", *(fit(f"  {m}", width) for m in warnings)]
    if findings:
        out += ["", f"Findings ({summary_line(findings)}):", "", render_text(findings, lines, width=width)]
    return "\n".join(out)


def render_plan_json(plan: Plan, *, cloud: str, region: str, findings: Sequence[Finding] = ()) -> str:
    """The `clusterfab plan --format json` document (architecture §5, docs/json/plan.md): the common
    envelope, the plan, the blueprint's findings and the program's messages."""
    resources = plan.to_json()
    payload: dict[str, Any] = {
        **envelope(blueprint=plan.blueprint, env=plan.env, cloud=cloud, region=region),
        "ok": True,
        "stack": plan.stack,
        "resources": resources["resources"],
        "summary": resources["summary"],
        "findings": [f.to_json() for f in findings],
        "messages": [{"level": level, "message": message} for level, message in plan.logs],
    }
    return json.dumps(payload, indent=2, sort_keys=False)
