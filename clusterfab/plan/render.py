"""Plans for people: a resource tree grouped by component, like `pulumi preview`, with counts."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from clusterfab.plan.engine import PlannedResource
from clusterfab.plan.project import Plan


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


def render_plan_text(plan: Plan) -> str:
    """The plan as a tree: one line per resource with its type and logical name."""
    env = plan.env or "none (base blueprint)"
    out = [f"Plan of {plan.blueprint} (environment: {env}, stack: {plan.stack})", ""]
    tree = _tree_lines(plan)
    width = max((len(branch) + len(r.type) for branch, r in tree if r), default=40) + 2
    out.append(f" +  {'pulumi:pulumi:Stack':<{width}}{plan.stack}")
    for branch, resource in tree:
        assert resource is not None
        label = f"{branch}{resource.type}"
        mark = "  [protected]" if resource.protect else ""
        out.append(f" +  {label:<{width}}{resource.name}{mark}")
    components = sum(1 for r in plan.resources if not r.custom)
    protected = sum(1 for r in plan.resources if r.protect)
    out += [
        "",
        f"Resources: + {len(plan.resources)} to create ({components} components, "
        f"{len(plan.resources) - components} cloud resources, {protected} protected)",
    ]
    warnings = [message for level, message in plan.logs if level in {"warning", "error"}]
    if warnings:
        out += ["", "Program messages:", *(f"  {m}" for m in warnings)]
    return "\n".join(out)


def render_plan_json(plan: Plan) -> str:
    payload: dict[str, Any] = plan.to_json()
    return json.dumps(payload, indent=2, sort_keys=False)
