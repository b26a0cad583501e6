"""A round of the queue agent against recorded API answers: the exact calls it makes, the ledger it
writes, the Events and patches of the budget, and the exact metrics it serves."""

from __future__ import annotations

import json
import threading

from clusterfab.scheduler.kubernetes.agent.kube import JSON, MERGE_PATCH, ApiError
from clusterfab.scheduler.kubernetes.agent.rounds import Agent
from clusterfab.scheduler.kubernetes.agent.server import Served, loop
from tests.unit.kueue_agent_fakes import (
    CLUSTER_QUEUES,
    CONFIG,
    FIXTURES,
    KUEUE_METRICS,
    LEDGER,
    LOCAL_QUEUES,
    WORKLOADS,
    FakeApi,
    at,
    cluster_queue,
)

READS = [
    ("GET", CLUSTER_QUEUES, None, JSON),
    ("GET", LOCAL_QUEUES, None, JSON),
    ("GET", WORKLOADS, None, JSON),
    ("GET", LEDGER, None, JSON),
]
KUEUE_TEXT = (FIXTURES / "metrics.txt").read_text()
RELAYED = "".join(
    line + "\n" for line in KUEUE_TEXT.splitlines()[:8]
)  # the two kueue_ families; controller_runtime_ and go_ are not relayed


def team_text(
    *,
    gpus: str = "24",
    hours: tuple[str, str] = ("0", "0"),
    held: str = '0{held_by="none"}',
    ages: tuple[str, str] = ("3600", "60"),
) -> str:
    """The team families; `held` is the research queue's value and held_by, ages those at 10:00."""
    value, by = held.split("{")
    held_by = by.rstrip("}").split("=")[1]
    return f"""\
# HELP clusterfab_kueue_team_gpus_in_use GPUs a team's ClusterQueue has admitted
# TYPE clusterfab_kueue_team_gpus_in_use gauge
clusterfab_kueue_team_gpus_in_use{{cluster_queue="research",team="research"}} {gpus}
clusterfab_kueue_team_gpus_in_use{{cluster_queue="infra",team="infra"}} 0
# HELP clusterfab_kueue_team_gpu_hours_used GPU-hours charged to a team this month (UTC)
# TYPE clusterfab_kueue_team_gpu_hours_used gauge
clusterfab_kueue_team_gpu_hours_used{{cluster_queue="research",team="research"}} {hours[0]}
clusterfab_kueue_team_gpu_hours_used{{cluster_queue="infra",team="infra"}} {hours[1]}
# HELP clusterfab_kueue_team_gpu_hours_limit A team's monthly GPU-hour budget
# TYPE clusterfab_kueue_team_gpu_hours_limit gauge
clusterfab_kueue_team_gpu_hours_limit{{cluster_queue="research",team="research"}} 100
# HELP clusterfab_kueue_cluster_queue_held Whether a ClusterQueue's stopPolicy holds admission, and by whom
# TYPE clusterfab_kueue_cluster_queue_held gauge
clusterfab_kueue_cluster_queue_held{{cluster_queue="research",held_by={held_by},team="research"}} {value}
clusterfab_kueue_cluster_queue_held{{cluster_queue="infra",held_by="none",team="infra"}} 0
# HELP clusterfab_kueue_pending_gpu_workloads GPU Workloads waiting for admission
# TYPE clusterfab_kueue_pending_gpu_workloads gauge
clusterfab_kueue_pending_gpu_workloads{{cluster_queue="research",team="research"}} 2
clusterfab_kueue_pending_gpu_workloads{{cluster_queue="infra",team="infra"}} 1
# HELP clusterfab_kueue_oldest_pending_gpu_workload_seconds Age of the oldest GPU Workload awaiting admission
# TYPE clusterfab_kueue_oldest_pending_gpu_workload_seconds gauge
clusterfab_kueue_oldest_pending_gpu_workload_seconds{{cluster_queue="research",team="research"}} {ages[0]}
clusterfab_kueue_oldest_pending_gpu_workload_seconds{{cluster_queue="infra",team="infra"}} {ages[1]}
"""


def samples(text: str, name: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(name + "{")]


HOURS = "clusterfab_kueue_team_gpu_hours_used"
HELD = "clusterfab_kueue_cluster_queue_held"


def agent_text(success: int, last: str, relay: int) -> str:
    return f"""\
# HELP clusterfab_kueue_agent_round_success Whether the agent's last round succeeded
# TYPE clusterfab_kueue_agent_round_success gauge
clusterfab_kueue_agent_round_success {success}
# HELP clusterfab_kueue_agent_last_success_timestamp_seconds When a round last succeeded (seconds since epoch)
# TYPE clusterfab_kueue_agent_last_success_timestamp_seconds gauge
clusterfab_kueue_agent_last_success_timestamp_seconds {last}
# HELP clusterfab_kueue_relay_success Whether the last round read Kueue's metrics
# TYPE clusterfab_kueue_relay_success gauge
clusterfab_kueue_relay_success {relay}
"""


def ledger(month: str, moment: float, research: tuple[float, float], warned: list[str]) -> str:
    document = {
        "format": 1,
        "month": month,
        "at": moment,
        "warned": warned,
        "teams": {
            "infra": {"gpu_hours": 0.0, "gpus": 0.0},
            "research": {"gpu_hours": research[0], "gpus": research[1]},
        },
    }
    return json.dumps(document)


def test_a_first_round_starts_the_ledger_and_serves_every_metric() -> None:
    api = FakeApi(metrics=KUEUE_TEXT)
    text = Agent(CONFIG, api, clock=lambda: 1795168800.0).round()  # 2026-11-20T10:00:00Z
    assert text == team_text() + agent_text(1, "1795168800", 1) + RELAYED
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "clusterfab-gpu-hours",
            "namespace": "clusterfab-system",
            "labels": {"app.kubernetes.io/managed-by": "clusterfab"},
        },
        "data": {
            "ledger.json": '{"at": 1795168800.0, "format": 1, "month": "2026-11", "teams": {"infra": '
            '{"gpu_hours": 0.0, "gpus": 0.0}, "research": {"gpu_hours": 0.0, "gpus": 24.0}}, "warned": []}'
        },
    }
    assert api.calls == [
        *READS,
        ("POST", "/api/v1/namespaces/clusterfab-system/configmaps", configmap, JSON),
        ("SCRAPE", KUEUE_METRICS, None, ""),
    ]


def test_a_round_charges_the_interval_and_warns_at_80_percent_once() -> None:
    # 75 GPU-hours at 09:30 with 24 GPUs; by 10:00 another 24 x 0.5 = 12: 87 of 100.
    api = FakeApi(ledger=ledger("2026-11", at("2026-11-20T09:30:00"), (75.0, 24.0), []), metrics=KUEUE_TEXT)
    agent = Agent(CONFIG, api, clock=lambda: at("2026-11-20T10:00:00"))
    assert agent.round() == team_text(hours=("87", "0")) + agent_text(1, "1795168800", 1) + RELAYED
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "research.gpubudgetnearlyspent.2026-11", "namespace": "research"},
        "involvedObject": {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "name": "research",
            "namespace": "research",
            "uid": "3f2e1d0c-9b8a-4766-9544-332211009988",
        },
        "reason": "GpuBudgetNearlySpent",
        "message": "Team research has used 87 of its 100 GPU-hours for 2026-11 (87%); at 100% ClusterQueue "
        "research is held.",
        "type": "Warning",
        "source": {"component": "clusterfab-queue-agent"},
        "reportingComponent": "clusterfab-queue-agent",
        "firstTimestamp": "2026-11-20T10:00:00Z",
        "lastTimestamp": "2026-11-20T10:00:00Z",
        "count": 1,
    }
    assert api.writes == [
        ("POST", "/api/v1/namespaces/research/events", event, JSON),
        ("PATCH", LEDGER, {"data": {"ledger.json": api.answers[LEDGER]["data"]["ledger.json"]}}, MERGE_PATCH),
    ]
    assert api.stored_ledger() == {
        "format": 1,
        "month": "2026-11",
        "at": 1795168800.0,
        "warned": ["research"],
        "teams": {"infra": {"gpu_hours": 0.0, "gpus": 0.0}, "research": {"gpu_hours": 87.0, "gpus": 24.0}},
    }
    # Thirty seconds later: 24 x 30 s = 0.2 GPU-hours more, and no second warning.
    api.writes.clear()
    agent.clock = lambda: at("2026-11-20T10:00:30")
    assert agent.round().startswith(team_text(hours=("87.2", "0"), ages=("3630", "90")))
    assert [w[0:2] for w in api.writes] == [("PATCH", LEDGER)]


def test_at_the_whole_budget_the_queue_is_held_and_the_metrics_say_so_at_once() -> None:
    # 95 GPU-hours at 09:45 with 16 GPUs, 24 now: charged at the larger side, 24 x 0.25 = 6 -> 101.
    api = FakeApi(ledger=ledger("2026-11", at("2026-11-20T09:45:00"), (95.0, 16.0), ["research"]))
    agent = Agent(CONFIG, api, clock=lambda: at("2026-11-20T10:00:00"))
    text = agent.round()
    assert text.startswith(team_text(hours=("101", "0"), held='1{held_by="gpu-budget"}'))
    hold = {
        "metadata": {
            "annotations": {"clusterfab.dev/held-by": "gpu-budget", "clusterfab.dev/held-month": "2026-11"}
        },
        "spec": {"stopPolicy": "Hold"},
    }
    assert api.writes[0] == (
        "PATCH",
        "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/research",
        hold,
        MERGE_PATCH,
    )
    method, path, event, _ = api.writes[1]
    assert (method, path, event["metadata"], event["reason"], event["message"]) == (
        "POST",
        "/api/v1/namespaces/research/events",
        {"name": "research.gpubudgetspent.2026-11", "namespace": "research"},
        "GpuBudgetSpent",
        "Team research has used 101 of its 100 GPU-hours for 2026-11 (101%): ClusterQueue research admits no "
        "new workloads until the month ends (admitted workloads run to completion).",
    )
    assert api.stored_ledger()["teams"]["research"] == {"gpu_hours": 101.0, "gpus": 24.0}
    assert len(api.writes) == 3


def test_a_queue_the_budget_holds_is_not_held_again_and_is_released_next_month() -> None:
    api = FakeApi(ledger=ledger("2026-11", at("2026-11-30T23:30:00"), (120.0, 24.0), ["research"]))
    queue = cluster_queue(api.answers, "research")
    queue["spec"]["stopPolicy"] = "Hold"
    queue["metadata"]["annotations"] = {
        "clusterfab.dev/held-by": "gpu-budget",
        "clusterfab.dev/held-month": "2026-11",
    }
    agent = Agent(CONFIG, api, clock=lambda: at("2026-11-30T23:45:00"))
    text = agent.round()
    assert samples(text, HOURS)[0] == f'{HOURS}{{cluster_queue="research",team="research"}} 126'
    assert (
        samples(text, HELD)[0] == f'{HELD}{{cluster_queue="research",held_by="gpu-budget",team="research"}} 1'
    )
    assert [w[0:2] for w in api.writes] == [("PATCH", LEDGER)]
    # 00:30 on December 1st: the month starts over, charged for the half hour since midnight at 24 GPUs.
    api.writes.clear()
    agent.clock = lambda: at("2026-12-01T00:30:00")
    text = agent.round()
    assert samples(text, HOURS)[0] == f'{HOURS}{{cluster_queue="research",team="research"}} 12'
    assert samples(text, HELD)[0] == f'{HELD}{{cluster_queue="research",held_by="none",team="research"}} 0'
    release = {
        "metadata": {"annotations": {"clusterfab.dev/held-by": None, "clusterfab.dev/held-month": None}},
        "spec": {"stopPolicy": "None"},
    }
    assert api.writes[0] == (
        "PATCH",
        "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/research",
        release,
        MERGE_PATCH,
    )
    assert api.stored_ledger() == {
        "format": 1,
        "month": "2026-12",
        "at": 1796085000.0,
        "warned": [],
        "teams": {"infra": {"gpu_hours": 0.0, "gpus": 0.0}, "research": {"gpu_hours": 12.0, "gpus": 24.0}},
    }


def test_a_queue_someone_else_stopped_is_neither_held_nor_released() -> None:
    api = FakeApi(ledger=ledger("2026-11", at("2026-11-30T23:30:00"), (120.0, 24.0), ["research"]))
    cluster_queue(api.answers, "research")["spec"]["stopPolicy"] = "HoldAndDrain"
    agent = Agent(CONFIG, api, clock=lambda: at("2026-11-30T23:45:00"))
    held = f'{HELD}{{cluster_queue="research",held_by="other",team="research"}} 1'
    assert samples(agent.round(), HELD)[0] == held
    agent.clock = lambda: at("2026-12-01T00:30:00")
    assert samples(agent.round(), HELD)[0] == held
    assert [w[0:2] for w in api.writes] == [("PATCH", LEDGER), ("PATCH", LEDGER)]


def test_an_api_error_fails_the_round_keeps_the_last_good_metrics_and_writes_nothing() -> None:
    api = FakeApi(metrics=KUEUE_TEXT)
    agent = Agent(CONFIG, api, clock=lambda: 1795168800.0)
    agent.round()
    api.fail[("GET", WORKLOADS)] = ApiError(503, "the server is currently unable to handle the request")
    api.writes.clear()
    agent.clock = lambda: 1795168830.0
    assert agent.round() == team_text() + agent_text(0, "1795168800", 1) + RELAYED
    assert api.writes == []
    # The API answers again: the next round charges the whole minute since the ledger's last charge.
    del api.fail[("GET", WORKLOADS)]
    agent.clock = lambda: 1795168860.0
    assert (
        agent.round()
        == team_text(hours=("0.4", "0"), ages=("3660", "120")) + agent_text(1, "1795168860", 1) + RELAYED
    )


def test_a_ledger_that_cannot_be_read_is_never_overwritten() -> None:
    api = FakeApi(ledger="{not json", metrics=KUEUE_TEXT)
    assert Agent(CONFIG, api, clock=lambda: 1795168800.0).round() == agent_text(0, "0", 1) + RELAYED
    api.answers.pop(LEDGER)
    api.fail[("GET", LEDGER)] = ApiError(403, "configmaps is forbidden")
    assert Agent(CONFIG, api, clock=lambda: 1795168800.0).round() == agent_text(0, "0", 1) + RELAYED
    assert api.writes == []


def test_kueue_metrics_that_do_not_answer_are_dropped_not_served_stale() -> None:
    api = FakeApi(metrics=KUEUE_TEXT)
    agent = Agent(CONFIG, api, clock=lambda: 1795168800.0)
    agent.round()
    api.metrics = None
    assert agent.round() == team_text() + agent_text(1, "1795168800", 0)


def test_the_loop_survives_an_api_that_fails_and_serves_each_round() -> None:
    api = FakeApi(metrics=KUEUE_TEXT)
    api.fail[("GET", CLUSTER_QUEUES)] = ApiError(None, "timed out")
    served, stop = Served(stale_after=60), threading.Event()
    rounds = iter([1795168800.0, 1795168830.0, 1795168860.0])

    class Counting(Agent):
        def round(self) -> str:
            text = super().round()
            if len([c for c in api.calls if c[0] == "SCRAPE"]) == 1:
                del api.fail[("GET", CLUSTER_QUEUES)]
            elif "round_success 1" in text:
                stop.set()
            return text

    thread = threading.Thread(
        target=loop, args=(Counting(CONFIG, api, clock=lambda: next(rounds)), served, 0.01, stop)
    )
    thread.start()
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert served.text() == team_text(ages=("3630", "90")) + agent_text(1, "1795168830", 1) + RELAYED


def test_an_event_an_earlier_round_already_posted_counts_as_posted() -> None:
    # A round that posted its warning and failed before the ledger was written: the Event's name is the
    # same the next time, the API server refuses it as existing, and the team is warned once.
    api = FakeApi(ledger=ledger("2026-11", at("2026-11-20T09:30:00"), (75.0, 24.0), []))
    api.fail[("POST", "/api/v1/namespaces/research/events")] = ApiError(409, "events already exists")
    Agent(CONFIG, api, clock=lambda: at("2026-11-20T10:00:00")).round()
    assert api.stored_ledger()["warned"] == ["research"]
