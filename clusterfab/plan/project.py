"""Plan a blueprint: run the project's own Pulumi program (stacks/) under the mock engine.

The plan is what `pulumi up` would register, because it is the same program: `stacks/__main__.py`
with the stack config a real stack would have. Only the engine differs.
"""

from __future__ import annotations

import runpy
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ruamel.yaml import YAML

from clusterfab.clouds import profiles
from clusterfab.core.errors import UsageError
from clusterfab.stackinput import (
    ACTIVATE_COST_TAGS_KEY,
    BILLING_ACCOUNT_KEY,
    BLUEPRINT_KEY,
    CONFIG_NAMESPACE,
    ENFORCE_BUDGET_KEY,
    ENVIRONMENT_KEY,
    StackSettings,
)

if TYPE_CHECKING:
    from clusterfab.plan.engine import PlannedResource

PROJECT_NAME = "clusterfab"
PLAN_STACK = "plan"
"""Stack name of a plan made without an environment."""


@dataclass(frozen=True)
class Project:
    root: Path
    name: str
    program_dir: Path


@dataclass(frozen=True)
class Plan:
    """The resources a blueprint turns into, for one environment and stack."""

    blueprint: str
    env: str | None
    stack: str
    resources: list[PlannedResource]
    outputs: dict[str, Any] = field(default_factory=dict)
    logs: list[tuple[str, str]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        by_type = Counter(r.type for r in self.resources)
        return {"total": len(self.resources), "by_type": dict(sorted(by_type.items()))}

    def to_json(self) -> dict[str, Any]:
        """The `clusterfab plan --format json` contract (architecture §5)."""
        return {
            "blueprint": self.blueprint,
            "env": self.env,
            "stack": self.stack,
            "resources": [r.to_json() for r in self.resources],
            "summary": self.summary(),
        }

    def by_urn(self) -> dict[str, PlannedResource]:
        return {r.urn: r for r in self.resources}


def find_project(*starts: Path) -> Project:
    """The clusterfab Pulumi project: the first Pulumi.yaml named clusterfab above any start path,
    else the checkout this package runs from."""
    candidates = [*starts, Path(__file__).resolve().parents[2]]
    for start in candidates:
        for directory in [start.resolve(), *start.resolve().parents]:
            settings_file = directory / "Pulumi.yaml"
            if settings_file.is_file():
                settings = YAML(typ="safe").load(settings_file.read_text())
                if isinstance(settings, dict) and settings.get("name") == PROJECT_NAME:
                    program = directory / str(settings.get("main") or ".")
                    return Project(root=directory, name=PROJECT_NAME, program_dir=program)
    raise UsageError(
        "no clusterfab Pulumi project (Pulumi.yaml with `name: clusterfab`) found; "
        "run clusterfab from the project directory"
    )


def plan_stack(env: str | None, stack: str | None) -> str:
    """The stack a plan is made for: the one named, else the environment's namesake, else `plan`."""
    return stack or env or PLAN_STACK


def plan_blueprint(
    blueprint: Path,
    *,
    env: str | None,
    stack: str | None = None,
    project: Project | None = None,
    display: str | None = None,
    enforce_budget: bool = True,
    settings: StackSettings | None = None,
) -> Plan:
    """Plan `blueprint` for environment `env` (None: the base blueprint) under the mock engine.

    The caller validates first; the program validates again and fails with the same findings
    (budget overruns too, unless `enforce_budget` is off, as for a what-if diff). `settings`: the stack's
    settings that decide what its budget is (`read_stack_settings`), passed on as the stack's config.
    """
    project = project or find_project(Path.cwd(), blueprint.resolve().parent)
    stack_name = plan_stack(env, stack)
    resolved = blueprint.resolve()
    # Stack config names the blueprint relative to the project root, as stacks/Pulumi.<stack>.yaml do.
    relative = resolved.relative_to(project.root) if resolved.is_relative_to(project.root) else resolved
    config = {
        f"{CONFIG_NAMESPACE}:{BLUEPRINT_KEY}": str(relative),
        f"{CONFIG_NAMESPACE}:{ENVIRONMENT_KEY}": env or "",
        f"{CONFIG_NAMESPACE}:{ENFORCE_BUDGET_KEY}": "true" if enforce_budget else "false",
    }
    if settings is not None and settings.billing_account:
        config[f"{CONFIG_NAMESPACE}:{BILLING_ACCOUNT_KEY}"] = settings.billing_account
    if settings is not None and settings.activate_cost_tags:
        config[f"{CONFIG_NAMESPACE}:{ACTIVATE_COST_TAGS_KEY}"] = "true"
    # The offline plan deploys where the mock providers answer they deploy (Azure: the mock engine's
    # subscription, which monitoring renders into Prometheus' discovery) unless the stack names a setting
    # of its own (rule BP252 says what a real stack lacks).
    for cloud in profiles():
        config.update(cloud.plan_mocks.settings)
    if settings is not None:
        config.update(settings.provider_settings)
    program_dir = project.program_dir
    # Pulumi loads only here: finding the project and reading a stack's settings (`validate --stack`)
    # must not pay for it.
    from clusterfab.plan.engine import run_program  # noqa: PLC0415

    def program() -> None:
        # A previous plan of another project may have left its `compose` module cached.
        cached = sys.modules.get("compose")
        if cached is not None and Path(getattr(cached, "__file__", "")).parent != program_dir:
            del sys.modules["compose"]
        runpy.run_path(str(program_dir), run_name="__main__")

    run = run_program(program, project=project.name, stack=stack_name, config=config)
    return Plan(
        blueprint=display or str(blueprint),
        env=env,
        stack=stack_name,
        resources=run.resources,
        outputs=run.outputs,
        logs=run.logs,
    )
