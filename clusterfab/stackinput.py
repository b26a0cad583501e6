"""What the Pulumi program reads: the stack's blueprint, checked exactly as `clusterfab validate` does.

`stacks/__main__.py` (under `pulumi up`) and the offline plan both start here, so an invalid blueprint
fails the program with the same findings the CLI prints. Pure: no Pulumi import.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from clusterfab.blueprint.loader import read_blueprint
from clusterfab.blueprint.models import Blueprint
from clusterfab.blueprint.overlay import environment_protected
from clusterfab.catalog import Catalog, load_catalog
from clusterfab.clouds import profile, profiles
from clusterfab.core.errors import ClusterfabError
from clusterfab.core.findings import Finding, Severity

# The setting names live with the rules that name them in hints; the program and the CLI read them here.
from clusterfab.core.vocab import ACTIVATE_COST_TAGS_KEY as ACTIVATE_COST_TAGS_KEY  # noqa: PLC0414
from clusterfab.core.vocab import BILLING_ACCOUNT_KEY as BILLING_ACCOUNT_KEY  # noqa: PLC0414
from clusterfab.core.vocab import CONFIG_NAMESPACE as CONFIG_NAMESPACE  # noqa: PLC0414
from clusterfab.load import load
from clusterfab.rules.context import StackView
from clusterfab.rules.registry import CHECKS, CHECKS_BUT_BUDGET
from clusterfab.rules.render import render_text, summary_line
from clusterfab.spec import ClusterSpec

BLUEPRINT_KEY = "blueprint"
ENVIRONMENT_KEY = "environment"
"""Stack config `clusterfab:environment`: the overlay to apply; default the stack name, "" for none."""
ENFORCE_BUDGET_KEY = "enforceBudget"
"""Stack config `clusterfab:enforceBudget` (default true): an over-budget blueprint fails the program.
The offline diff turns it off to show what an over-budget change would cost."""


@dataclass(frozen=True)
class StackSettings:
    """The stack config the program reads besides the blueprint (stacks/Pulumi.<stack>.yaml)."""

    gcp_project: str | None = None
    """`gcp:project`: the project when the blueprint names none."""
    billing_account: str | None = None
    """`clusterfab:billingAccount`: without it a GCP cluster gets no budget."""
    activate_cost_tags: bool = False
    """`clusterfab:activateCostTags`: AWS, activate the cost allocation tags the budget counts by."""
    provider_settings: Mapping[str, str] = field(default_factory=dict)
    """The settings of the clouds' providers that their programs and rules read (`CloudProfile.
    stack_settings`, e.g. Azure's `azure-native:subscriptionId`), those the stack sets."""
    provider_regions: Mapping[str, str] = field(default_factory=dict)
    """`aws:region` / `gcp:region` as the stack sets them: they must agree with the blueprint, whose
    region the program builds its providers from."""


class StackConfigError(ClusterfabError):
    """The stack config contradicts the blueprint."""

    exit_code = 2


class InvalidBlueprintError(ClusterfabError):
    """The stack's blueprint has errors; the message is the rendered findings."""

    exit_code = 1


@dataclass(frozen=True)
class StackInput:
    """A validated blueprint for one stack, with what the program records about it."""

    file: str
    digest: str
    """sha256 of the blueprint file: promotion checks that two stacks run the same revision."""
    environment: str | None
    blueprint: Blueprint
    spec: ClusterSpec
    """The blueprint resolved against the catalog: what the program builds."""
    catalog: Catalog
    warnings: tuple[Finding, ...]
    project_root: Path
    """The Pulumi project (its playbooks/ become the nodes' bundle)."""
    settings: StackSettings = StackSettings()

    @property
    def project(self) -> str | None:
        """GCP: the blueprint's project, else the stack's `gcp:project`."""
        return self.spec.project or self.settings.gcp_project


def resolve_environment(configured: str | None, stack: str) -> str | None:
    """The environment for a stack: the configured one ("" means the base), else the stack's name."""
    if configured is None:
        return stack
    return configured or None


def load_stack_input(
    blueprint: str,
    environment: str | None,
    project_root: Path,
    *,
    enforce_budget: bool = True,
    settings: StackSettings | None = None,
    stack: str | None = None,
) -> StackInput:
    """Read and validate the blueprint named by the stack config (a path relative to the project), for
    `stack` with its `settings` (the findings about the deployment, the cloud budget, are the stack's)."""
    path = Path(blueprint)
    if not path.is_absolute():
        path = project_root / path
    checks = CHECKS if enforce_budget else CHECKS_BUT_BUDGET
    settings = settings or StackSettings()
    # A stack's environment defaults to its name: a blueprint without environments serves it as it is.
    result = load(
        path,
        display=blueprint,
        environment=environment,
        checks=checks,
        base_only=environment is None,
        strict_environment=False,
        stack=stack_view(stack, settings) if stack is not None else None,
    )
    if not result.ok:
        lines = result.document.lines if result.document else ()
        raise InvalidBlueprintError(
            f"{blueprint} is not a valid blueprint ({summary_line(result.findings)}):\n\n"
            + render_text([f for f in result.findings if f.severity is Severity.ERROR], lines)
        )
    validated = (
        result.blueprints[environment] if environment in result.blueprints else result.blueprints[None]
    )
    _check_settings(validated.spec, settings, blueprint)
    return StackInput(
        file=blueprint,
        digest=hashlib.sha256(path.read_bytes()).hexdigest(),
        environment=validated.environment,
        blueprint=validated.blueprint,
        spec=validated.spec,
        catalog=load_catalog(),
        warnings=tuple(f for f in result.findings if f.severity is not Severity.ERROR),
        project_root=project_root,
        settings=settings,
    )


def _check_settings(spec: ClusterSpec, settings: StackSettings, file: str) -> None:
    """Refuse stack config that would build the cluster somewhere else than the blueprint says."""
    problems = [
        f"the stack config {key} is {value} but {file} says region {spec.region}"
        for key, value in sorted(settings.provider_regions.items())
        if key == profile(spec.cloud).provider_region_setting and value != spec.region
    ]
    if spec.project and settings.gcp_project and settings.gcp_project != spec.project:
        problems.append(
            f"the stack config gcp:project is {settings.gcp_project} but {file} says {spec.project}"
        )
    if problems:
        raise StackConfigError(
            "; ".join(problems) + ". The program builds its cloud provider from the blueprint: remove the "
            "stack setting (stacks/Pulumi.<stack>.yaml) or change the blueprint"
        )


def stack_view(stack: str, settings: StackSettings) -> StackView:
    """What the rules about a deployment see of a stack and its settings."""
    return StackView(
        name=stack,
        billing_account=settings.billing_account,
        activate_cost_tags=settings.activate_cost_tags,
        provider_settings=settings.provider_settings,
    )


def stack_config(stack: str, project_root: Path) -> Mapping[str, Any]:
    """The config of a stack as its file keeps it (stacks/Pulumi.<stack>.yaml, where `pulumi config set`
    writes; `org/project/stack` names the file by the stack's own name); empty without the file."""
    settings_file = project_root / "stacks" / f"Pulumi.{stack.rsplit('/', 1)[-1]}.yaml"
    if settings_file.is_file():
        loaded = YAML(typ="safe").load(settings_file.read_text())
        if isinstance(loaded, dict) and isinstance(loaded.get("config"), dict):
            return dict(loaded["config"])
    return {}


def stack_deploys(stack: str, project_root: Path, blueprint: Path) -> bool:
    """Whether the stack's file names `blueprint` as the one it deploys (its clusterfab:blueprint)."""
    named = stack_config(stack, project_root).get(f"{CONFIG_NAMESPACE}:{BLUEPRINT_KEY}")
    return isinstance(named, str) and (project_root / named).resolve() == blueprint.resolve()


def read_stack_settings(stack: str, project_root: Path) -> StackSettings:
    """The settings of a stack that decide what its budget is (the billing account, the cost allocation
    tags), from the stack's file: what `validate --stack` and `plan` know of a stack."""
    config = stack_config(stack, project_root)
    billing = config.get(f"{CONFIG_NAMESPACE}:{BILLING_ACCOUNT_KEY}")
    activate = config.get(f"{CONFIG_NAMESPACE}:{ACTIVATE_COST_TAGS_KEY}")
    keys = [key for cloud in profiles() for key in cloud.stack_settings]
    provider = {key: str(config[key]) for key in keys if config.get(key)}
    return StackSettings(
        billing_account=str(billing) if billing else None,
        # As Pulumi reads a boolean setting: YAML's true or the string "true".
        activate_cost_tags=activate is True or str(activate).lower() == "true",
        provider_settings=provider,
    )


def stack_protected(stack: str, project_root: Path) -> bool:
    """Whether a stack's environment protects its stateful resources, read from the stack's own files
    (stacks/Pulumi.<stack>.yaml names the blueprint and environment; the blueprint's
    `environments.<env>.protected` decides, default true for prod), as the program decides it."""
    config = stack_config(stack, project_root)
    environment = resolve_environment(config.get(f"{CONFIG_NAMESPACE}:{ENVIRONMENT_KEY}"), stack)
    environments: dict[str, Any] = {}
    blueprint = config.get(f"{CONFIG_NAMESPACE}:{BLUEPRINT_KEY}")
    if isinstance(blueprint, str):
        document, _ = read_blueprint(project_root / blueprint)
        data = document.data if document is not None else None
        if isinstance(data, dict) and isinstance(data.get("environments"), dict):
            environments = data["environments"]
    return environment_protected(environments, environment)
