"""The `clusterfab` command line.

One error boundary (`main`) turns expected failures into a one-line message and the exit codes of
architecture §4: 0 success, 1 findings at error level or a refused gate, 2 usage error, 3 internal
error. Commands import their machinery lazily: `validate`, `cost`, `catalog` and `schema` never load
Pulumi, and none of them pays for what another command needs.

Where output goes (the same for every command, docs/cli.md): the command's result and the blueprint's
findings on stdout, in the format asked for (text, JSON or Markdown), valid or not, so that CI can
post stdout as it is; on stderr only progress and the one-line error of a command that could not run
(usage error, exit 2; internal error, exit 3), which in JSON mode is instead a JSON error object on
stdout. Text is laid out for the terminal's width (COLUMNS, else 120 columns when not a terminal).
"""

from __future__ import annotations

import copy
import datetime as dt
import enum
import math
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from typer.models import CommandInfo

from clusterfab.core import dates
from clusterfab.core.errors import ClusterfabError, RefusedError, UsageError

if TYPE_CHECKING:
    from rich.console import Console

    from clusterfab.deploy.automation import DeployProject, DeployStack, EventHandler, OperationResult
    from clusterfab.deploy.progress import Operation
    from clusterfab.deploy.promote import PromotionCheck
    from clusterfab.load import Loaded
    from clusterfab.rules.context import StackView
    from clusterfab.stackinput import StackInput

HEALTH_MAX_AGE_HOURS = 72.0
"""promote's default --health-max-age: clusterfab.health.DEFAULT_MAX_AGE in hours (a test keeps the two
equal). Written out rather than imported so that every other command does not load clusterfab.health."""

app = typer.Typer(
    name="clusterfab",
    help="Typed, multi-cloud AI training clusters from a declarative blueprint.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


class TextOrJson(enum.StrEnum):
    text = "text"
    json = "json"


class Format(enum.StrEnum):
    text = "text"
    json = "json"
    markdown = "markdown"


class CloudChoice(enum.StrEnum):
    aws = "aws"
    gcp = "gcp"


BlueprintArg = Annotated[Path, typer.Argument(help="Blueprint YAML file.", show_default=False)]
EnvOption = Annotated[
    str | None,
    typer.Option(
        "--env",
        "-e",
        help=(
            "Environment overlay to apply (e.g. dev, prod). validate checks every environment when omitted."
        ),
    ),
]
FormatOption = Annotated[Format, typer.Option("--format", "-f", help="Output format.")]
TextOrJsonOption = Annotated[TextOrJson, typer.Option("--format", "-f", help="Output format.")]

# Pulumi's own rule for stack and project names (pulumi/pulumi pkg/backend, validateStackName:
# ^[A-Za-z0-9_.-]{1,100}$), with an optional org/ or org/project/ in front.
_STACK_PART = re.compile(r"[A-Za-z0-9_.-]{1,100}")


def _stack_name(value: str | None) -> str | None:
    if value is None:
        return None
    parts = value.split("/")
    if len(parts) > 3 or not all(_STACK_PART.fullmatch(part) for part in parts):
        raise typer.BadParameter(
            f"{value!r} is not a Pulumi stack name: up to 100 letters, digits, '-', '_' or '.', "
            "optionally as org/stack or org/project/stack"
        )
    return value


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        from clusterfab.catalog import load_catalog

        typer.echo(f"clusterfab {version('clusterfab')} (catalog {load_catalog().version})")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", "-V", help="Show the version and exit.", is_eager=True, callback=_version),
    ] = False,
) -> None:
    """Typed, multi-cloud AI training clusters from a declarative blueprint."""


def _color() -> bool:
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ


def _width() -> int:
    """Columns to lay text out for: COLUMNS if set, else the terminal's, else 120 (piped output)."""
    raw = os.environ.get("COLUMNS", "")
    if raw.isdigit() and int(raw) > 0:
        return max(int(raw), 40)
    if sys.stdout.isatty():
        return max(os.get_terminal_size(sys.stdout.fileno()).columns, 40)
    return 120


def _echo_json(payload: Any) -> None:
    import json

    typer.echo(json.dumps(payload, indent=2))


def _show_validation(result: Loaded, output: Format, env: str | None, *, command: str, verdict: str) -> None:
    """Print a validation result (all its findings) on stdout in the format asked for; `verdict` ends
    the text form's last line (`valid (...)`, `invalid (...); not costed`)."""
    from clusterfab.core import markdown as md
    from clusterfab.rules.render import render_markdown, render_text, validation_json

    if output is Format.json:
        _echo_json(validation_json(result, env))
        return
    if output is Format.markdown:
        state = "valid" if result.ok else "invalid"
        title = f"clusterfab {command}: {md.code(result.file)} is {state}"
        typer.echo(render_markdown(result.findings, result.lines, title=title))
        return
    if result.findings:
        typer.echo(render_text(result.findings, result.lines, color=_color(), width=_width()))
        typer.echo("")
    typer.echo(f"{result.file}: {verdict}")


def _invalid(result: Loaded, output: Format, env: str | None, command: str, tail: str) -> NoReturn:
    """A blueprint a command cannot act on: its findings, then exit 1."""
    from clusterfab.rules.render import summary_line

    verdict = f"invalid ({summary_line(result.findings)}); {tail}"
    _show_validation(result, output, env, command=command, verdict=verdict)
    raise typer.Exit(1)


def _stack_view(blueprint: Path, stack: str) -> tuple[StackView, str | None]:
    """A stack's settings as its file keeps them (stacks/Pulumi.<stack>.yaml of the blueprint's project),
    and the environment it deploys (its clusterfab:environment, else its name)."""
    from clusterfab.plan.project import find_project
    from clusterfab.stackinput import (
        CONFIG_NAMESPACE,
        ENVIRONMENT_KEY,
        read_stack_settings,
        resolve_environment,
        stack_config,
        stack_view,
    )

    root = find_project(Path.cwd(), blueprint.resolve().parent).root
    configured = stack_config(stack, root).get(f"{CONFIG_NAMESPACE}:{ENVIRONMENT_KEY}")
    environment = resolve_environment(None if configured is None else str(configured), stack)
    return stack_view(stack, read_stack_settings(stack, root)), environment


@app.command()
def validate(
    blueprint: BlueprintArg,
    env: EnvOption = None,
    stack: Annotated[
        str | None,
        typer.Option(
            "--stack",
            "-s",
            help=(
                "Check it as `pulumi up` of this stack would: the stack's environment (unless --env) and its "
                "settings in stacks/Pulumi.<stack>.yaml (the budget's billing account, cost allocation tags)."
            ),
            callback=_stack_name,
        ),
    ] = None,
    output: FormatOption = Format.text,
) -> None:
    """Check a blueprint offline: schema, semantics, catalog facts and budget."""
    from clusterfab.load import load
    from clusterfab.rules.context import StackView
    from clusterfab.rules.render import summary_line

    # Without a stack the rules about a deployment say what a stack needs (a GCP budget's billing account).
    view, strict, base_only = StackView(), True, False
    if stack is not None:
        view, deployed = _stack_view(blueprint, stack)
        if env is None:
            # As the program resolves it: a blueprint without environments serves the stack as it is.
            env, strict, base_only = deployed, False, deployed is None
    result = load(
        blueprint,
        display=str(blueprint),
        environment=env,
        today=dates.today(),
        stack=view,
        strict_environment=strict,
        base_only=base_only,
    )
    scope = ", ".join(e or "base" for e in result.checked if env is None or e == env) or "nothing"
    state = "valid" if result.ok else "invalid"
    verdict = f"{state} ({summary_line(result.findings)}; checked: {scope})"
    _show_validation(result, output, env, command="validate", verdict=verdict)
    raise typer.Exit(0 if result.ok else 1)


def _offline_checks() -> Sequence[Any]:
    """The rules a command that prices the blueprint runs: the budget verdict is part of its result
    (exit 1 after showing it), not a finding that stops it."""
    from clusterfab.rules.registry import CHECKS_BUT_BUDGET

    return CHECKS_BUT_BUDGET


@app.command()
def cost(
    blueprint: BlueprintArg,
    env: Annotated[
        str | None,
        typer.Option("--env", "-e", help="Environment overlay to cost (e.g. dev, prod); default: the base."),
    ] = None,
    hours: Annotated[
        float | None,
        typer.Option("--hours", help="Also price a run of this many hours (e.g. 336 for two weeks)."),
    ] = None,
    utilisation: Annotated[
        float | None,
        typer.Option(
            "--utilisation",
            "--utilization",
            help=(
                "Also price the autoscaled groups at this utilisation, 0 to 100: their min nodes all the "
                "time and the nodes above the min this percentage of it."
            ),
        ),
    ] = None,
    output: FormatOption = Format.text,
) -> None:
    """Estimate the cost per hour, per month (730 h) and per run from the catalog's prices.

    Autoscaled groups are priced at their max (the totals and the budget) and at their min, and with
    --utilisation in between. Exits 1 when the blueprint is invalid or the estimate is over the
    blueprint's budget.
    """
    from clusterfab.catalog import load_catalog
    from clusterfab.cost import MAX_RUN_HOURS, estimate_cost
    from clusterfab.cost.render import cost_json, render_markdown
    from clusterfab.cost.render import render_text as cost_text
    from clusterfab.load import load, rule_context
    from clusterfab.rules.budget import PRICE_CAVEATS, price_caveats
    from clusterfab.rules.render import summary_line

    if hours is not None and not (math.isfinite(hours) and 0 < hours <= MAX_RUN_HOURS):
        raise UsageError(f"--hours must be a positive number of hours up to {MAX_RUN_HOURS:,}, not {hours:g}")
    if utilisation is not None and not (math.isfinite(utilisation) and 0 <= utilisation <= 100):
        raise UsageError(f"--utilisation must be a percentage from 0 to 100, not {utilisation:g}")
    today = dates.today()
    result = load(
        blueprint,
        display=str(blueprint),
        environment=env,
        checks=_offline_checks(),
        today=today,
        base_only=env is None,
    )
    validated = result.blueprints.get(env)
    if not result.ok or validated is None:
        _invalid(result, output, env, "cost", "not costed")
    catalog = load_catalog()
    estimate = estimate_cost(
        validated.spec, catalog, hours=hours, utilisation_percent=utilisation, today=today
    )
    if output is Format.json:
        context = rule_context(validated, catalog, today)
        findings = sorted([*result.findings, *price_caveats(context, estimate)], key=lambda f: f.sort_key)
        _echo_json(cost_json(estimate, blueprint=str(blueprint), env=env, findings=findings))
        raise typer.Exit(0 if estimate.budget.ok else 1)
    # Price caveats are in the estimate's warnings; the blueprint's other findings follow it.
    others = [f for f in result.findings if f.code not in PRICE_CAVEATS]
    if output is Format.markdown:
        from clusterfab.rules.render import findings_markdown

        section = ["", f"**Findings** ({summary_line(others)})", "", *findings_markdown(others, result.lines)]
        typer.echo("\n".join([render_markdown(estimate, environment=env), *(section if others else [])]))
    else:
        typer.echo(cost_text(estimate, environment=env, width=_width()))
        if others:
            from clusterfab.rules.render import render_text

            typer.echo("")
            typer.echo(render_text(others, result.lines, color=_color(), width=_width()))
    raise typer.Exit(0 if estimate.budget.ok else 1)


StackOption = Annotated[
    str,
    typer.Option(
        "--stack",
        "-s",
        help="Pulumi stack (e.g. dev, prod, or org/clusterfab/prod).",
        callback=_stack_name,
    ),
]


@app.command()
def plan(
    blueprint: BlueprintArg,
    env: Annotated[
        str | None,
        typer.Option("--env", "-e", help="Environment overlay to plan (e.g. dev, prod); default: the base."),
    ] = None,
    stack: Annotated[
        str | None,
        typer.Option(
            "--stack", "-s", help="Stack name for the URNs; default: the env.", callback=_stack_name
        ),
    ] = None,
    show_inputs: Annotated[
        bool, typer.Option("--show-inputs", help="Text: list every resource's inputs under it.")
    ] = False,
    output: TextOrJsonOption = TextOrJson.text,
) -> None:
    """Plan the resources offline: the project's Pulumi program under Pulumi's mock engine.

    No cloud account, credentials or Pulumi CLI needed. Exits 1 when the blueprint is invalid
    (including over budget).
    """
    from clusterfab.load import load
    from clusterfab.plan.project import find_project, plan_stack
    from clusterfab.stackinput import StackSettings, read_stack_settings, stack_deploys, stack_view

    # The stack's settings that decide what its budget is, from its file when it has one: the stack named
    # with --stack, or the environment's namesake when that stack deploys this blueprint (stacks/
    # Pulumi.dev.yaml of another blueprint says nothing of this one's budget).
    planned_stack = plan_stack(env, stack)
    root = find_project(Path.cwd(), blueprint.resolve().parent).root
    applies = stack is not None or stack_deploys(planned_stack, root, blueprint)
    settings = read_stack_settings(planned_stack, root) if applies else StackSettings()
    result = load(
        blueprint,
        display=str(blueprint),
        environment=env,
        today=dates.today(),
        base_only=env is None,
        stack=stack_view(planned_stack, settings),
    )
    validated = result.blueprints.get(env)
    if not result.ok or validated is None:
        _invalid(result, Format(output.value), env, "plan", "not planned")
    # Pulumi and the providers load only for a blueprint that can be planned.
    from clusterfab.plan.project import plan_blueprint
    from clusterfab.plan.render import render_plan_json, render_plan_text

    made = plan_blueprint(blueprint, env=env, stack=stack, display=str(blueprint), settings=settings)
    if output is TextOrJson.json:
        spec = validated.spec
        typer.echo(render_plan_json(made, cloud=spec.cloud, region=spec.region, findings=result.findings))
    else:
        typer.echo(
            render_plan_text(
                made, width=_width(), show_inputs=show_inputs, findings=result.findings, lines=result.lines
            )
        )


@app.command()
def policy(
    blueprint: BlueprintArg,
    env: Annotated[
        str | None,
        typer.Option("--env", "-e", help="Environment overlay to check (e.g. dev, prod); default: the base."),
    ] = None,
) -> None:
    """Run the policy pack's rules on the offline plan: no credentials, no stack (for pull requests).

    The same rules `preview`, `up` and `promote` enforce through CrossGuard (all but the budget): no
    public IPs, IMDSv2 with hop limit 1, encryption at rest, no public buckets, no SSH / RDP from the
    internet, no `*` IAM grants, stateful resources protected in a protected environment.
    Exits 1 on a violation or an invalid blueprint.
    """
    from clusterfab.catalog import load_catalog
    from clusterfab.load import load

    result = load(
        blueprint, display=str(blueprint), environment=env, today=dates.today(), base_only=env is None
    )
    validated = result.blueprints.get(env)
    if not result.ok or validated is None:
        _invalid(result, Format.text, env, "policy", "not checked")
    from clusterfab.plan.project import plan_blueprint
    from clusterfab.policy.offline import check_resources

    made = plan_blueprint(blueprint, env=env, display=str(blueprint), enforce_budget=False)
    found = check_resources(
        made.resources,
        protected=validated.spec.protected,
        stateful_types=load_catalog().stateful_types.keys(),
    )
    for violation in found:
        typer.echo(f"error[{violation.policy}] {violation.resource} ({violation.type}): {violation.message}")
    where = f"{blueprint} [{env or 'base'}]"
    verdict = "violates the policy pack" if found else "passes the policy pack"
    typer.echo(f"{where}: {verdict} ({len(found)} violations, {len(made.resources)} resources checked)")
    raise typer.Exit(1 if found else 0)


@app.command()
def diff(  # noqa: PLR0917 - Typer maps each parameter to an argument or option
    base: Annotated[
        Path, typer.Argument(help="Base blueprint (or the blueprint, with --base-ref).", show_default=False)
    ],
    new: Annotated[Path | None, typer.Argument(help="New blueprint.", show_default=False)] = None,
    env: Annotated[str | None, typer.Option("--env", "-e", help="Environment overlay on both sides.")] = None,
    base_ref: Annotated[
        str | None,
        typer.Option(
            "--base-ref", help=("Compare the blueprint with its version at this git ref (e.g. origin/main).")
        ),
    ] = None,
    output: FormatOption = Format.text,
    allow_replace: Annotated[
        bool,
        typer.Option(
            "--allow-replace",
            help="Do not fail when a stateful or protected resource is replaced or deleted.",
        ),
    ] = False,
) -> None:
    """What a change does: resources created / updated / replaced / deleted and the cost delta.

    `clusterfab diff BASE NEW` or `clusterfab diff BLUEPRINT --base-ref REF`. Replacements include those
    that follow from a dependency (a replaced subnet replaces what sits in it). Exits 1 when a blueprint
    is invalid, the new one is over budget, or a stateful or protected resource would be replaced or
    deleted (unless --allow-replace).
    """
    from clusterfab.plan.compare import InvalidSideError, compare
    from clusterfab.plan.report import report_json, report_markdown, report_text

    if (new is None) == (base_ref is None):
        raise UsageError("give BASE and NEW blueprints, or one blueprint with --base-ref")
    target = new if new is not None else base
    try:
        report = compare(
            None if new is None else base, target, env=env, today=dates.today(), base_ref=base_ref
        )
    except InvalidSideError as exc:
        _invalid(exc.result, output, env, "diff", f"the {exc.side} side cannot be diffed")
    if output is Format.json:
        _echo_json(report_json(report, allow_replace=allow_replace))
    elif output is Format.markdown:
        typer.echo(report_markdown(report))
    else:
        typer.echo(report_text(report, width=_width()))
    if report.refused(allow_replace):
        lost = ", ".join(
            f"{resource.name} ({why.split(' ', 1)[0]})" for resource, why in report.resources.destructive()
        )
        typer.echo(
            f"error: this change destroys data: {lost}; if that is intended, rerun with --allow-replace",
            err=True,
        )
    raise typer.Exit(0 if report.cost.after.budget.ok and not report.refused(allow_replace) else 1)


@app.command()
def catalog(
    cloud: Annotated[CloudChoice | None, typer.Option("--cloud", help="Only this cloud.")] = None,
    output: TextOrJsonOption = TextOrJson.text,
) -> None:
    """Show the catalog: machine types, TPU generations, storage tiers and prices, with sources."""
    from clusterfab.catalog import load_catalog
    from clusterfab.catalog.render import catalog_json, print_catalog

    data = load_catalog()
    selected = cloud.value if cloud is not None else None
    if output is TextOrJson.json:
        _echo_json(catalog_json(data, selected))
    else:
        print_catalog(data, selected, width=_width())


@app.command()
def schema() -> None:
    """Print the blueprint JSON Schema (for editor completion and CI checks)."""
    from clusterfab.blueprint.schema import blueprint_json_schema
    from clusterfab.catalog import load_catalog, schema_choices

    _echo_json(blueprint_json_schema(schema_choices(load_catalog())))


# --- real stacks (need the Pulumi CLI, logged in to a backend, and cloud credentials) ------------

YesOption = Annotated[
    bool,
    typer.Option("--yes", "-y", help="Do not ask for confirmation (required when stdin is not a terminal)."),
]


def _stdin_is_tty() -> bool:
    return sys.stdin.isatty()


def _require_confirmation_possible(yes: bool, action: str) -> None:
    """Refuse before doing anything when a confirmation would be needed but nobody can answer it."""
    if not yes and not _stdin_is_tty():
        raise UsageError(
            f"{action} asks for confirmation, but stdin is not a terminal: pass --yes to go ahead"
        )


def _confirm(question: str, yes: bool) -> None:
    if yes:
        return
    if not typer.confirm(question, default=False):
        raise RefusedError("cancelled; nothing was changed")


def _deploy_project() -> DeployProject:
    """The workspace of the clusterfab project around the current directory (exit 2 without the CLI)."""
    from clusterfab.deploy.automation import open_project

    return open_project(Path.cwd())


def _console() -> Console:
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True)


_OPERATION_NOUN: dict[str, str] = {
    "preview": "preview",
    "up": "update",
    "preview-destroy": "destroy preview",
    "destroy": "destroy",
}


def _run_live(
    console: Console,
    operation: Operation,
    stack: str,
    run: Callable[[EventHandler | None], OperationResult],
) -> None:
    """Run one engine operation under a live progress view; its summary follows, failure exits 1."""
    from clusterfab.deploy.automation import DeployError
    from clusterfab.deploy.progress import DeployProgress

    progress = DeployProgress(console, operation=operation, stack=stack)
    with progress:
        result = run(progress.handle)
    progress.print_summary()
    if not result.ok:
        raise DeployError(f"the {_OPERATION_NOUN[operation]} of {stack} failed: {result.error}")


STACK_ONLY = {"allow_extra_args": True}
"""A command that deploys a stack collects stray arguments (`ctx.args`) to explain them: the blueprint
file that plan and cost take is the stack config's here."""


def _no_blueprint_file(ctx: typer.Context) -> None:
    """The stack's config names the blueprint it deploys: a file on the command line is a mistake to
    explain, not an unexpected argument."""
    if ctx.args:
        command = ctx.info_name
        raise UsageError(
            f"{command} takes no blueprint file ({' '.join(ctx.args)}): the stack's config names the "
            "blueprint it deploys (clusterfab:blueprint in stacks/Pulumi.<stack>.yaml); run "
            f"`clusterfab {command} --stack STACK`"
        )


@app.command(context_settings=STACK_ONLY)
def preview(ctx: typer.Context, stack: StackOption) -> None:
    """Preview what `up` would change on a real stack, with live progress.

    Needs the Pulumi CLI (logged in to the stack's backend) and cloud credentials. Exits 1 when the
    preview fails.
    """
    _no_blueprint_file(ctx)
    target = _deploy_project().stack(stack)
    _run_live(_console(), "preview", stack, target.preview)


@app.command(context_settings=STACK_ONLY)
def up(ctx: typer.Context, stack: StackOption, yes: YesOption = False) -> None:
    """Create or update a real stack's cluster, with live progress.

    Without --yes, shows the preview first, asks, and then changes exactly what was previewed: the
    update runs with the preview's update plan, and is refused when the blueprint file or the stack
    config changed in between. Exits 1 when the update fails or is refused.
    """
    import tempfile

    from clusterfab.deploy.approval import approve, require_unchanged
    from clusterfab.stackinput import BLUEPRINT_KEY, CONFIG_NAMESPACE

    _no_blueprint_file(ctx)
    _require_confirmation_possible(yes, "up")
    project = _deploy_project()
    target = project.stack(stack)
    console = _console()
    if yes:
        _run_live(console, "up", stack, target.up)
        return
    with tempfile.TemporaryDirectory(prefix="clusterfab-plan-") as tmp:
        # What is approved is what runs: the update is held to the previewed plan, and refused when the
        # blueprint or the stack config changed while the question was open.
        plan = Path(tmp) / "plan.json"
        config = target.config()
        relative = config.get(f"{CONFIG_NAMESPACE}:{BLUEPRINT_KEY}")
        approval = approve(stack, plan, config, project.project.root / relative if relative else None)
        _run_live(console, "preview", stack, lambda handle: target.preview(handle, save_plan=plan))
        _confirm(f"Update stack {stack}?", yes)
        require_unchanged(approval, target.config())
        _run_live(console, "up", stack, lambda handle: target.up(handle, plan=plan))


@app.command(context_settings=STACK_ONLY)
def destroy(ctx: typer.Context, stack: StackOption, yes: YesOption = False) -> None:
    """Delete every resource of a real stack, and the instances Slurm created for it.

    Refuses (exit 1) while the stack has protected resources (prod's file systems and buckets):
    unprotect them deliberately first. Without --yes, shows what would be deleted and asks. Runs the
    stack's program (its blueprint must still load): a Slurm cluster's node groups delete the instances
    Slurm launched outside Pulumi before their own resources go.
    """
    from clusterfab.deploy.events import name_of

    _no_blueprint_file(ctx)
    _require_confirmation_possible(yes, "destroy")
    target = _deploy_project().stack(stack)
    protected = target.protected_resources()
    if protected:
        names = ", ".join(f"{name_of(urn)} ({kind})" for urn, kind in protected[:5])
        more = f" and {len(protected) - 5} more" if len(protected) > 5 else ""
        raise RefusedError(
            f"stack {stack} has {len(protected)} protected resource(s): {names}{more}; destroy does not "
            "delete protected resources (they hold data): unprotect them first (`protect: false` on the "
            f"storage in the blueprint, then `clusterfab up --stack {stack}`; or `pulumi state unprotect`)"
        )
    console = _console()
    if not yes:
        _run_live(console, "preview-destroy", stack, target.preview_destroy)
        _confirm(f"Delete every resource of stack {stack}?", yes)
    _run_live(console, "destroy", stack, target.destroy)


@app.command()
def promote(
    source: Annotated[
        str,
        typer.Option("--from", help="Stack that runs the tested revision (e.g. dev).", callback=_stack_name),
    ],
    target: Annotated[
        str, typer.Option("--to", help="Stack to promote it to (e.g. prod).", callback=_stack_name)
    ],
    yes: YesOption = False,
    allow_replace: Annotated[
        bool,
        typer.Option(
            "--allow-replace", help="Accept deleting or replacing protected / stateful resources (data loss)."
        ),
    ] = False,
    health_max_age: Annotated[
        float,
        typer.Option(
            "--health-max-age",
            min=0.1,
            help="Refuse a source health record older than this many hours.",
        ),
    ] = HEALTH_MAX_AGE_HOURS,
) -> None:
    """Promote the blueprint revision that runs in one stack to another, through gates.

    Gates: the source stack was updated from this exact blueprint file (sha256) and its health record
    (in its cluster bucket, written by `configure`) passed on the whole fleet for this blueprint,
    playbook bundle, catalog and commit, after its last update and within --health-max-age; the
    target's preview deletes or replaces no protected or stateful resource (unless --allow-replace);
    the target's cost is within its budget. Shows the target preview, the offline plan diff and the
    cost diff between the two environments, asks (unless --yes), then updates the target. Exits 1
    when a gate refuses or the update fails.
    """
    import tempfile

    from clusterfab.deploy.promote import check_promotion

    _require_confirmation_possible(yes, "promote")
    deploy = _deploy_project()
    console = _console()
    with tempfile.TemporaryDirectory(prefix="clusterfab-plan-") as tmp:
        check = check_promotion(
            deploy,
            source,
            target,
            allow_replace=allow_replace,
            today=dates.today(),
            console=console,
            plan=Path(tmp) / "plan.json",
            max_health_age=dt.timedelta(hours=health_max_age),
        )
        _promote_checked(check, source, target, yes=yes, console=console)


def _promote_checked(check: PromotionCheck, source: str, target: str, *, yes: bool, console: Console) -> None:
    """Show a promotion's checks; when every gate passed and it is approved, update the target with
    exactly the plan the gates saw."""
    from clusterfab.deploy.approval import require_unchanged
    from clusterfab.deploy.gates import short
    from clusterfab.plan.report import report_text

    check.progress.print_summary()
    if check.invalid is not None:
        from clusterfab.rules.render import summary_line

        verdict = f"invalid ({summary_line(check.invalid.findings)})"
        _show_validation(check.invalid, Format.text, None, command="promote", verdict=verdict)
    if check.report is not None:
        typer.echo("")
        typer.echo(report_text(check.report, width=_width()))
    typer.echo("")
    typer.echo(f"Gates ({source} -> {target}):")
    for gate in check.gates:
        typer.echo(f"  {'ok' if gate.passed else 'REFUSED':<7} {gate.gate}: {gate.reason}")
        for note in gate.notes:
            typer.echo(f"          note: {note}")
    refused = check.refusal
    if refused is not None:
        raise RefusedError(refused)
    _confirm(f"Promote {source} to {target} (update stack {target})?", yes)
    require_unchanged(check.approval, check.target_stack.config())
    plan = check.approval.plan
    _run_live(console, "up", target, lambda handle: check.target_stack.up(handle, plan=plan))
    typer.echo(
        f"promoted {check.source.blueprint or check.target.blueprint} (digest {short(check.digest)}) "
        f"from {source} to {target}"
    )


def _stack_input(target: DeployStack, stack: str) -> StackInput:
    """The validated blueprint a deployed stack was configured with (its stack config)."""
    from clusterfab.stackinput import (
        BLUEPRINT_KEY,
        CONFIG_NAMESPACE,
        ENVIRONMENT_KEY,
        load_stack_input,
        resolve_environment,
    )

    config = target.config()
    blueprint = config.get(f"{CONFIG_NAMESPACE}:{BLUEPRINT_KEY}")
    if not blueprint:
        raise UsageError(f"stack {stack} has no {CONFIG_NAMESPACE}:{BLUEPRINT_KEY} config")
    environment = resolve_environment(config.get(f"{CONFIG_NAMESPACE}:{ENVIRONMENT_KEY}"), stack)
    return load_stack_input(blueprint, environment, _deploy_project().project.root)


@app.command()
def inventory(
    stack: StackOption,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help=(
                "Write the inventory here (the name must end in .aws_ec2.yml or .gcp.yml); default: stdout."
            ),
        ),
    ] = None,
) -> None:
    """Print the dynamic inventory of a stack's nodes (aws_ec2 / gcp_compute plugin config).

    Nodes are selected by the cluster's tags or labels and grouped by node group
    (`node_group_<name>`); Ansible reaches them through SSM (AWS) or IAP (GCP).
    """
    from clusterfab.clouds import profile
    from clusterfab.outputs import read_outputs
    from clusterfab.provision.inventory import inventory_config, inventory_yaml

    outputs = read_outputs(_deploy_project().stack(stack).outputs())
    text = inventory_yaml(inventory_config(outputs))
    if output is None:
        typer.echo(text, nl=False)
        return
    suffix = profile(outputs.blueprint.cloud).inventory_suffix
    if not output.name.endswith(suffix):
        raise UsageError(f"the inventory plugin reads only files named *{suffix}; got {output}")
    output.write_text(text)
    typer.echo(f"wrote {output}")


@app.command()
def configure(
    stack: StackOption,
    node_group: Annotated[
        list[str] | None,
        typer.Option(
            "--node-group",
            help=("Only these node groups (repeatable); a partial run records only a failed health check."),
        ),
    ] = None,
    limit: Annotated[
        str | None,
        typer.Option(
            "--limit",
            help=(
                "Only the hosts matching this Ansible pattern (e.g. an instance id or 'i-0ab*'), within"
                " each node group; a partial run records only a failed health check."
            ),
        ),
    ] = None,
    tags: Annotated[
        list[str] | None,
        typer.Option(
            "--tags", help=("Only the tasks with these tags, e.g. nccl to upgrade NCCL alone (repeatable).")
        ),
    ] = None,
    skip_health: Annotated[bool, typer.Option("--skip-health", help="Do not run the health check.")] = False,
) -> None:
    """Configure a deployed stack's nodes now (push mode) and run the health check.

    Runs playbooks/gpu_node.yml on every node group through ansible-runner, then healthcheck.yml;
    the outcome is recorded in the stack's cluster bucket (health/<stack>.json), bound to the
    blueprint, playbook bundle, catalog and git commit; `promote` requires a recent pass there.
    Needs the Pulumi CLI, cloud credentials and the amazon.aws / google.cloud Ansible collection.
    Exits 1 when a playbook or the health check fails.
    """
    from rich.console import Console

    from clusterfab.clouds import profile
    from clusterfab.deploy.checkout import checkout_commit
    from clusterfab.outputs import read_outputs
    from clusterfab.provision.bundle import bundle_digest
    from clusterfab.provision.push import HealthTarget, require_collection
    from clusterfab.provision.push import configure as push
    from clusterfab.provision.runner import RunProgress, run_playbook, summary_table

    project = _deploy_project()
    target = project.stack(stack)
    stack_input = _stack_input(target, stack)
    require_collection(stack_input.blueprint.cloud)
    root = project.project.root
    health = None
    if not skip_health:
        outputs = read_outputs(target.outputs())
        if outputs.health_signing_key is None:
            raise UsageError(
                f"{stack} has no health signing key (it was last updated by an older clusterfab): "
                f"update it (`clusterfab up --stack {stack}`), then configure it"
            )
        health = HealthTarget(
            store=profile(outputs.blueprint.cloud).health_store(outputs),
            stack=stack,
            commit=checkout_commit(root),
            bundle_sha256=bundle_digest(root / "playbooks"),
            signing_key=outputs.health_signing_key,
        )
    console = Console()
    with RunProgress(console) as progress:
        result = push(
            target,
            stack_input,
            runner=run_playbook,
            playbooks=root / "playbooks",
            only=node_group,
            limit=limit,
            tags=tags,
            health=health,
            on_event=progress.handle,
        )
    for group, playbook, run in result.runs:
        console.print(f"{group}: {playbook} {'ok' if run.succeeded else 'FAILED'}")
        if not run.succeeded:
            console.print(summary_table(run))
    if result.health is not None:
        reason = f": {result.health.reason}" if result.health.reason else ""
        console.print(f"health of {stack}: {result.health.status}{reason} (recorded in {result.location})")
    elif health is not None and all(run.succeeded for _, _, run in result.runs):
        console.print(f"health of {stack}: not recorded (a pass on part of the fleet proves nothing)")
    raise typer.Exit(0 if result.succeeded else 1)


render_app = typer.Typer(
    help="Write the configuration files clusterfab generates for a cluster.", no_args_is_help=True
)
app.add_typer(render_app, name="render")


@render_app.command("monitoring")
def render_monitoring(
    blueprint: BlueprintArg,
    out: Annotated[Path, typer.Option("--out", "-o", help="Directory to write the files into.")],
    env: Annotated[
        str | None, typer.Option("--env", "-e", help="Environment overlay to render (e.g. dev, prod).")
    ] = None,
    stack: Annotated[
        str | None,
        typer.Option(
            "--stack", "-s", help="The stack whose nodes Prometheus discovers; default: the environment."
        ),
    ] = None,
    project: Annotated[
        str | None, typer.Option("--project", help="GCP: the nodes' project when the blueprint names none.")
    ] = None,
) -> None:
    """Write the monitoring host's files: prometheus.yml, rules/*.yml, alertmanager.yml, dashboards/*.json.

    Also Grafana's provisioning (grafana/) and the dcgm-exporter counters file the GPU nodes run.
    Exits 1 when the blueprint is invalid or has no monitoring.
    """
    from clusterfab.catalog import load_catalog
    from clusterfab.load import load
    from clusterfab.monitoring import render_monitoring as render
    from clusterfab.monitoring import write_files

    result = load(
        blueprint, display=str(blueprint), environment=env, today=dates.today(), base_only=env is None
    )
    validated = result.blueprints.get(env)
    if not result.ok or validated is None:
        _invalid(result, Format.text, env, "render monitoring", "nothing rendered")
    spec = validated.spec
    if spec.monitoring is None:
        typer.echo(f"{blueprint}: no monitoring (monitoring.kind is none); nothing to render", err=True)
        raise typer.Exit(1)
    target_stack = stack or env or spec.name
    gcp_project = spec.project or project
    if spec.cloud == "gcp" and gcp_project is None:
        raise UsageError("a GCP blueprint without `project:` needs --project for the nodes' discovery")
    files = render(spec, load_catalog(), stack=target_stack, project=gcp_project, today=dates.today())
    for path in write_files(files, out):
        typer.echo(str(path))


@render_app.command("slurm")
def render_slurm(
    blueprint: BlueprintArg,
    out: Annotated[Path, typer.Option("--out", "-o", help="Directory to write the files into.")],
    env: Annotated[
        str | None, typer.Option("--env", "-e", help="Environment overlay to render (e.g. dev, prod).")
    ] = None,
) -> None:
    """Write the controller's Slurm configuration: slurm.conf, gres.conf, cgroup.conf, topology.conf,
    slurmdbd.conf (secrets as placeholders), plugstack.conf (pyxis), accounts.cfg and qos.cfg.

    Exits 1 when the blueprint is invalid or has no Slurm scheduler.
    """
    from clusterfab.catalog import load_catalog
    from clusterfab.load import load
    from clusterfab.monitoring import write_files
    from clusterfab.scheduler.slurm import SlurmRenderError
    from clusterfab.scheduler.slurm import render_slurm as render

    result = load(
        blueprint, display=str(blueprint), environment=env, today=dates.today(), base_only=env is None
    )
    validated = result.blueprints.get(env)
    if not result.ok or validated is None:
        _invalid(result, Format.text, env, "render slurm", "nothing rendered")
    spec = validated.spec
    if spec.scheduler is None:
        typer.echo(f"{blueprint}: no Slurm scheduler (scheduler.kind is none); nothing to render", err=True)
        raise typer.Exit(1)
    try:
        files = render(spec, load_catalog().slurm)
    except SlurmRenderError as error:
        typer.echo(f"{blueprint}: {error}", err=True)
        raise typer.Exit(1) from None
    for path in write_files(files, out):
        typer.echo(str(path))


@app.command()
def dashboard(
    stack: StackOption,
    port: Annotated[int, typer.Option("--port", help="Local port to forward Grafana to.")] = 3000,
) -> None:
    """Open the tunnel to the stack's Grafana (SSM port forwarding / SSH over IAP) and print its URL.

    Needs the Pulumi CLI, cloud credentials and the AWS CLI with the session-manager-plugin (AWS) or
    gcloud (GCP). Runs until interrupted.
    """
    import subprocess

    from clusterfab.clouds import missing_host_tools
    from clusterfab.monitoring.tunnel import tunnel
    from clusterfab.outputs import read_outputs

    outputs = read_outputs(_deploy_project().stack(stack).outputs())
    forward = tunnel(outputs, local_port=port)
    missing = missing_host_tools(outputs.blueprint.cloud)
    if missing:
        raise UsageError(f"the tunnel needs {', '.join(missing)} on PATH")
    typer.echo(f"Grafana of {stack}: {forward.url} (Ctrl-C closes the tunnel)")
    completed = subprocess.run(forward.argv, check=False)
    raise typer.Exit(0 if completed.returncode in (0, 130) else 1)


@app.command()
def health(
    stack: StackOption,
    level: Annotated[
        int, typer.Option("--level", min=1, max=3, help="DCGM diagnostic level: 1 quick, 2 medium, 3 long.")
    ] = 3,
    nodes: Annotated[
        str | None,
        typer.Option("--nodes", help="Slurm hostlist to check, e.g. trainers-[0-3] (default: idle nodes)."),
    ] = None,
    output: TextOrJsonOption = TextOrJson.text,
) -> None:
    """Run the deep GPU health check on the stack's Slurm nodes and report per node (docs/health.md).

    On the controller, in a maintenance reservation of the idle nodes: per node `dcgmi diag -r LEVEL`,
    nccl-tests across node pairs against the catalog's bandwidth floor; failing nodes are drained. Needs
    the Pulumi CLI, cloud credentials and the AWS CLI with the session-manager-plugin (AWS) or gcloud
    (GCP). Exit 1 when a node failed, 2 when the check could not run or complete.
    """
    from clusterfab.clouds import missing_host_tools
    from clusterfab.outputs import read_outputs
    from clusterfab.scheduler.slurm.healthrun import expand_hostlist, find_report, health_argv, health_table

    wanted = expand_hostlist(nodes) if nodes is not None else []
    outputs = read_outputs(_deploy_project().stack(stack).outputs())
    argv = health_argv(outputs, level, wanted)
    missing = missing_host_tools(outputs.blueprint.cloud)
    if missing:
        raise UsageError(f"clusterfab health needs {', '.join(missing)} on PATH")
    report = find_report(_remote_lines(argv))
    if output is TextOrJson.json:
        _echo_json(report.document)
    else:
        from rich.console import Console

        Console(width=_width(), highlight=False, no_color=not _color()).print(health_table(report, stack))
    raise typer.Exit(report.exit_code)


def _remote_lines(argv: Sequence[str]) -> list[str]:
    """Run a command that reaches a host, passing what it says to stderr as progress; its stdout lines."""
    import subprocess

    lines = []
    with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, errors="replace") as proc:
        for line in proc.stdout or ():
            lines.append(line)
            if not line.lstrip().startswith("{"):
                typer.echo(line.rstrip("\r\n"), err=True)
    return lines


def _json_mode(argv: Sequence[str]) -> bool:
    """Whether the command line asks for JSON output (then errors are JSON objects on stdout too)."""
    for i, arg in enumerate(argv):
        if arg in {"--format=json", "-fjson"}:
            return True
        if arg in {"--format", "-f"} and i + 1 < len(argv) and argv[i + 1] == "json":
            return True
    return False


_KINDS = {2: "usage", 3: "internal"}
"""The `kind` of a JSON error object by exit code; anything else (exit 1: a refused gate, a failed
deployment) is "failed"."""


def _fail(kind: str, message: str, exit_code: int, json_mode: bool) -> NoReturn:
    if json_mode:
        from clusterfab.contract import error_document

        _echo_json(error_document(kind, message, exit_code))
    else:
        typer.echo(message if kind == "internal" else f"error: {message}", err=True)
    sys.exit(exit_code)


def _app_for(argv: Sequence[str]) -> typer.Typer:
    """The app with only the command that `argv` starts with, when it starts with a command's name.

    Typer inspects the signature of every registered command on each run (about as long as validating
    a blueprint), and a run uses one. The root options (--version) and the command's own parsing, help
    and errors are the same; any other command line (options first, no command, a command group, a
    misspelt name, for which Click suggests the others) gets the whole app.
    """
    if not argv:
        return app
    chosen = [info for info in app.registered_commands if _command_name(info) == argv[0]]
    if len(chosen) != 1:
        return app
    narrowed = copy.copy(app)
    narrowed.registered_commands = chosen
    narrowed.registered_groups = []
    return narrowed


def _command_name(info: CommandInfo) -> str | None:
    """The name Typer gives a registered command (its own, else its function's, dashed)."""
    if info.name:
        return info.name
    callback = info.callback
    return callback.__name__.lower().replace("_", "-") if callback is not None else None


def main() -> None:
    """Entry point of the `clusterfab` console script: the one error boundary.

    Usage errors (bad flags, a missing file, an unknown environment) exit 2 and internal errors exit 3,
    each as one line on stderr, or in JSON mode as a JSON error object on stdout; never a traceback.
    """
    # pydantic looks for plugins in every installed distribution's entry points when it builds the
    # first model (tens of ms); this process has none to offer. Set the variable to opt back in.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    json_mode = _json_mode(sys.argv[1:])
    try:
        code = _app_for(sys.argv[1:])(standalone_mode=False)
    except typer.TyperException as exc:  # the command line itself: bad flags, missing arguments
        show = getattr(exc, "show", None)
        if json_mode or show is None:
            _fail("usage", exc.format_message(), exc.exit_code, json_mode)
        show()
        sys.exit(exc.exit_code)
    except typer.Abort:
        _fail("failed", "aborted", 1, json_mode)
    except ClusterfabError as exc:
        _fail(_KINDS.get(exc.exit_code, "failed"), str(exc), exc.exit_code, json_mode)
    except Exception as exc:
        if os.environ.get("CLUSTERFAB_DEBUG"):
            raise
        _fail(
            "internal",
            f"internal error: {type(exc).__name__}: {exc}\n"
            "this is a bug in clusterfab; run again with CLUSTERFAB_DEBUG=1 for the traceback",
            3,
            json_mode,
        )
    sys.exit(code if isinstance(code, int) else 0)
