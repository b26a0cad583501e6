"""The budget's decisions: warn once a month at 80 %, hold at 100 %, never hold twice nor a team without
a budget, release its own holds next month, never someone else's."""

from __future__ import annotations

from clusterfab.scheduler.kubernetes.agent.budget import Action, decide
from clusterfab.scheduler.kubernetes.agent.config import Team
from clusterfab.scheduler.kubernetes.agent.ledger import Ledger
from clusterfab.scheduler.kubernetes.agent.queues import Queue

RESEARCH = Team("research", "research", 20000.0)
INFRA = Team("infra", "infra", None)
TEAMS = (RESEARCH, INFRA)


def queue(name: str, stop: str = "None", by: str | None = None, month: str | None = None) -> Queue:
    return Queue(name, f"uid-{name}", stop, by, month, 8.0)


def open_queues(**held: Queue) -> dict[str, Queue]:
    return {"research": queue("research"), "infra": queue("infra"), **held}


def ledger(
    research: float, infra: float = 0.0, warned: frozenset[str] = frozenset(), month: str = "2026-11"
) -> Ledger:
    return Ledger(month, 0.0, {"research": research, "infra": infra}, {}, warned)


def test_below_80_percent_nothing_happens() -> None:
    assert decide(TEAMS, ledger(15999.0), open_queues(), 0.8) == []


def test_at_80_percent_a_team_is_warned_once_a_month() -> None:
    assert decide(TEAMS, ledger(16000.0), open_queues(), 0.8) == [Action("warn", RESEARCH, 16000.0)]
    assert decide(TEAMS, ledger(19000.0, warned=frozenset({"research"})), open_queues(), 0.8) == []


def test_at_the_whole_budget_the_queue_is_held_and_a_team_never_warned_is_warned_first() -> None:
    assert decide(TEAMS, ledger(20000.0), open_queues(), 0.8) == [
        Action("warn", RESEARCH, 20000.0),
        Action("hold", RESEARCH, 20000.0),
    ]
    assert decide(TEAMS, ledger(20000.0, warned=frozenset({"research"})), open_queues(), 0.8) == [
        Action("hold", RESEARCH, 20000.0)
    ]


def test_a_queue_held_by_the_budget_this_month_is_not_held_again() -> None:
    held = queue("research", "Hold", "gpu-budget", "2026-11")
    assert (
        decide(TEAMS, ledger(25000.0, warned=frozenset({"research"})), open_queues(research=held), 0.8) == []
    )


def test_next_month_the_budget_releases_its_own_hold() -> None:
    held = queue("research", "Hold", "gpu-budget", "2026-11")
    assert decide(TEAMS, ledger(3.0, month="2026-12"), open_queues(research=held), 0.8) == [
        Action("release", RESEARCH, 3.0)
    ]


def test_a_team_over_its_budget_again_in_the_new_month_is_held_for_that_month() -> None:
    held = queue("research", "Hold", "gpu-budget", "2026-11")
    team = Team("research", "research", 0.0)  # a budget of nothing: over it at once
    assert decide((team,), ledger(0.0, month="2026-12"), open_queues(research=held), 0.8) == [
        Action("warn", team, 0.0),
        Action("hold", team, 0.0),
    ]


def test_a_raised_or_removed_budget_releases_the_hold_within_the_month() -> None:
    held = queue("research", "Hold", "gpu-budget", "2026-11")
    raised = Team("research", "research", 40000.0)
    assert decide(
        (raised,), ledger(20500.0, warned=frozenset({"research"})), open_queues(research=held), 0.8
    ) == [Action("release", raised, 20500.0)]
    removed = Team("research", "research", None)
    assert decide((removed,), ledger(20500.0), open_queues(research=held), 0.8) == [
        Action("release", removed, 20500.0)
    ]


def test_someone_elses_hold_is_never_marked_nor_released() -> None:
    for stop in ("Hold", "HoldAndDrain"):
        foreign = queue("research", stop)
        assert (
            decide(TEAMS, ledger(25000.0, warned=frozenset({"research"})), open_queues(research=foreign), 0.8)
            == []
        )
        assert decide(TEAMS, ledger(3.0, month="2026-12"), open_queues(research=foreign), 0.8) == []


def test_a_team_without_a_budget_is_never_warned_nor_held() -> None:
    assert decide(TEAMS, ledger(0.0, infra=10**9), open_queues(), 0.8) == []


def test_a_team_whose_queue_does_not_exist_yet_is_left_alone() -> None:
    assert decide(TEAMS, ledger(25000.0), {"infra": queue("infra")}, 0.8) == []
