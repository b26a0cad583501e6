"""The GPU-hour ledger: each interval charged at its larger side, a new UTC month started over, never
negative, never less within a month."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clusterfab.scheduler.kubernetes.agent.ledger import Ledger, charge, dumps, loads, month_of, month_start
from tests.unit.kueue_agent_fakes import at

NOV_20 = at("2026-11-20T10:00:00")


def test_a_first_round_charges_nothing_and_remembers_the_gpus() -> None:
    assert charge(None, NOV_20, {"research": 24.0}) == Ledger(
        "2026-11", 1795168800.0, {"research": 0.0}, {"research": 24.0}
    )


def test_an_interval_is_charged_at_its_larger_side() -> None:
    before = Ledger("2026-11", NOV_20, {"research": 10.0, "infra": 1.0}, {"research": 8.0, "infra": 4.0})
    after = charge(before, at("2026-11-20T10:30:00"), {"research": 24.0, "infra": 0.0})
    # research: 24 (now) x 0.5 h = 12; infra: 4 (before) x 0.5 h = 2
    assert after == Ledger(
        "2026-11", 1795170600.0, {"infra": 3.0, "research": 22.0}, {"research": 24.0, "infra": 0.0}
    )


def test_a_new_month_starts_over_from_its_first_second() -> None:
    before = Ledger(
        "2026-11",
        at("2026-11-30T23:30:00"),
        {"research": 19990.0},
        {"research": 16.0},
        frozenset({"research"}),
    )
    after = charge(before, at("2026-12-01T00:30:00"), {"research": 8.0})
    # only the half hour after midnight counts, at the larger side: 16 x 0.5 = 8
    assert after == Ledger("2026-12", 1796085000.0, {"research": 8.0}, {"research": 8.0}, frozenset())


def test_a_clock_that_went_back_charges_nothing_twice() -> None:
    before = Ledger("2026-11", NOV_20, {"research": 5.0}, {"research": 8.0})
    after = charge(before, NOV_20 - 600, {"research": 8.0})
    assert after == Ledger("2026-11", NOV_20, {"research": 5.0}, {"research": 8.0})


def test_months_are_utc() -> None:
    assert (month_of(at("2026-11-30T23:59:59")), month_of(at("2026-12-01T00:00:00"))) == (
        "2026-11",
        "2026-12",
    )
    assert month_start(at("2026-12-17T08:00:00")) == at("2026-12-01T00:00:00") == 1796083200.0


def test_the_ledger_round_trips_through_its_configmap_text() -> None:
    ledger = Ledger("2026-11", 1795168800.5, {"research": 87.25}, {"research": 24.0}, frozenset({"research"}))
    text = dumps(ledger)
    assert text == (
        '{"at": 1795168800.5, "format": 1, "month": "2026-11", "teams": {"research": {"gpu_hours": 87.25, '
        '"gpus": 24.0}}, "warned": ["research"]}'
    )
    assert loads(text) == ledger


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"format": 2}', "not a format 1 GPU-hour ledger"),
        ('{"format": 1, "month": "2026-11", "at": 1}', "a GPU-hour ledger lacks a field: 'teams'"),
        (
            '{"format": 1, "month": "2026-11", "at": 1, "teams": {"r": {"gpus": 1}}}',
            "lacks a field: 'gpu_hours'",
        ),
    ],
)
def test_a_ledger_that_is_not_one_is_refused(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        loads(text)


START = at("2026-10-25T00:00:00")
TEAMS = st.sampled_from(["research", "infra", "vision"])
ROUND = st.tuples(
    st.floats(min_value=0, max_value=6 * 3600, allow_nan=False),  # seconds since the last round
    st.dictionaries(TEAMS, st.integers(min_value=0, max_value=4096).map(float)),  # GPUs now
)


@given(st.lists(ROUND, min_size=1, max_size=40))
def test_hours_never_fall_within_a_month_never_go_negative_and_restart_with_a_month(
    rounds: list[tuple[float, dict[str, float]]],
) -> None:
    moment = START
    ledger = charge(None, moment, {})
    for gap, gpus in rounds:
        moment += gap
        after = charge(ledger, moment, gpus)
        assert all(hours >= 0 for hours in after.hours.values())
        if after.month == ledger.month:
            assert all(after.hours.get(team, 0.0) >= hours for team, hours in ledger.hours.items())
            assert after.warned == ledger.warned
        else:
            # a new month holds at most the time since it began, at the most GPUs either round saw
            most = max([*ledger.gpus.values(), *gpus.values(), 0.0])
            since = (moment - month_start(moment)) / 3600
            assert all(hours <= most * since * (1 + 1e-9) for hours in after.hours.values())
            assert after.warned == frozenset()
        ledger = after
