"""`clusterfab policy`: the policy pack's rules on the offline plan."""

from __future__ import annotations

from typing import Annotated

import typer

from clusterfab.cli.loading import load_or_exit
from clusterfab.cli.options import BlueprintArg, Format


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

    _, resolved = load_or_exit(blueprint, env, Format.text, "policy", "not checked")
    from clusterfab.plan.project import plan_blueprint
    from clusterfab.policy.offline import check_resources

    made = plan_blueprint(blueprint, env=env, display=str(blueprint), enforce_budget=False)
    found = check_resources(
        made.resources,
        protected=resolved.spec.protected,
        stateful_types=load_catalog().stateful_types.keys(),
    )
    for violation in found:
        typer.echo(f"error[{violation.policy}] {violation.resource} ({violation.type}): {violation.message}")
    where = f"{blueprint} [{env or 'base'}]"
    verdict = "violates the policy pack" if found else "passes the policy pack"
    typer.echo(f"{where}: {verdict} ({len(found)} violations, {len(made.resources)} resources checked)")
    raise typer.Exit(1 if found else 0)
