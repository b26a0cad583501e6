"""Names that are already taken: team users that are system accounts of the hosts (BP143), and node groups
and TPU slices named like the stack's own (BP144; the scheduler's plugin checks the names it keeps)."""

from __future__ import annotations

from collections.abc import Iterator

from clusterfab.core.accounts import ROLE_ACCOUNTS, system_account
from clusterfab.core.findings import Finding
from clusterfab.rules.context import RuleContext


def check_reserved_names(ctx: RuleContext) -> Iterator[Finding]:
    yield from _users(ctx)
    yield from _stack_names(ctx)


def _users(ctx: RuleContext) -> Iterator[Finding]:
    for index, team in enumerate(ctx.blueprint.teams):
        for position, user in enumerate(team.users):
            taken = system_account(user)
            if taken is None:
                continue
            over = "the team user would take it over"
            if taken != user:
                why = f"is named like the system's own accounts (names starting with {taken})"
            elif user in ROLE_ACCOUNTS:
                why = f"is the account the cluster's {user} service runs as: {over}"
            else:
                why = f"is an account or group the hosts' images already have: {over}"
            yield ctx.finding(
                "BP143",
                ("teams", index, "users", position),
                f"'{user}' {why}",
                hint="list the person's own login name (e.g. alice); system accounts are not team users",
            )


def _stack_names(ctx: RuleContext) -> Iterator[Finding]:
    taken = ctx.cloud.stack_names
    items = [("node_groups", "node group", i, g.name) for i, g in enumerate(ctx.blueprint.node_groups)]
    items += [("tpu_slices", "TPU slice", i, s.name) for i, s in enumerate(ctx.blueprint.tpu_slices)]
    for list_name, what, index, name in items:
        if name in taken:
            yield ctx.finding(
                "BP144",
                (list_name, index, "name"),
                f"{what} {name} would be named like {taken[name]} (<cluster>-<stack>-{name}), and share "
                "its service account, its VM names or the rights conditioned on them",
                hint=f"rename the {what}, e.g. {name}-nodes",
            )
