"""The budget's decisions, pure: whom to warn, which ClusterQueues to hold and which to release.

- A team with a budget at `warn_fraction` of it or more is warned once a month.
- At its whole budget its ClusterQueue is held (stopPolicy Hold: admitted workloads run to completion,
  nothing new is admitted) and marked as held by the budget for this month.
- A queue the budget held is released when its mark names an earlier month, or when the team is no
  longer over its budget this month (the budget was raised or removed).
- A queue held by anyone else (stopped without the mark) is left alone: neither marked nor released,
  so an operator's hold never ends with the month. A team without a budget is never held.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from .config import Team
from .ledger import Ledger
from .queues import Queue

Kind = Literal["warn", "hold", "release"]


@dataclass(frozen=True)
class Action:
    kind: Kind
    team: Team
    hours: float


def decide(
    teams: Iterable[Team], ledger: Ledger, queues: Mapping[str, Queue], warn_fraction: float
) -> list[Action]:
    """The actions of one round after `ledger` was charged, team by team in the settings' order (a
    team's warning before its hold)."""
    actions: list[Action] = []
    month, hours, warned = ledger.month, ledger.hours, ledger.warned
    for team in teams:
        queue = queues.get(team.cluster_queue)
        if queue is None:
            continue  # no queue to hold nor to name in an Event: the render has not applied it yet
        used, limit = hours.get(team.team, 0.0), team.gpu_hours_per_month
        over = limit is not None and used >= limit
        if limit is not None and used >= warn_fraction * limit and team.team not in warned:
            actions.append(Action("warn", team, used))
        if over and not _held_this_month(queue, month) and not _foreign(queue):
            actions.append(Action("hold", team, used))
        elif not over and queue.ours:
            actions.append(Action("release", team, used))
    return actions


def _held_this_month(queue: Queue, month: str) -> bool:
    return queue.held and queue.ours and queue.held_month == month


def _foreign(queue: Queue) -> bool:
    """Stopped by someone else: the hold is theirs to lift, and marking it ours would lift it next month."""
    return queue.held and not queue.ours
