"""What the agent reads from Kueue's objects, and the Event it writes when a team has no LocalQueue."""

from __future__ import annotations

from clusterfab.scheduler.kubernetes.agent.actions import calls, involved_object
from clusterfab.scheduler.kubernetes.agent.budget import Action
from clusterfab.scheduler.kubernetes.agent.config import Team
from clusterfab.scheduler.kubernetes.agent.queues import Pending, Queue, pending, queues
from clusterfab.scheduler.kubernetes.agent.relay import kueue_families
from tests.unit.kueue_agent_fakes import FIXTURES, at, fixture

CQS, LQS, WLS = (fixture(n)["items"] for n in ("clusterqueues.json", "localqueues.json", "workloads.json"))


def test_a_queues_gpus_are_its_usage_of_the_configured_resources_over_every_flavor() -> None:
    assert queues(CQS, ["nvidia.com/gpu"]) == {
        "infra": Queue("infra", "5b0d3c1e-2a7f-4c19-9e1d-7d2f0b6c4a11", "None", None, None, 0.0),
        "research": Queue("research", "c6a4e2f0-8d31-4b7a-a5c2-1f9e3d7b6a20", "None", None, None, 24.0),
        "sandbox": Queue("sandbox", "0e7f6d5c-4b3a-4291-8f0e-d1c2b3a4f5e6", "None", None, None, 0.0),
    }
    assert queues(CQS, ["nvidia.com/gpu", "cpu"])["research"].gpus == 648.0  # 16 + 8 GPUs, 416 + 208 CPUs


def test_pending_gpu_workloads_are_counted_by_their_local_queues_cluster_queue() -> None:
    # research: job-pretrain (09:00, QuotaReserved False) and job-eval (09:50, no conditions, limits
    # only); not the admitted, finished, CPU-only one, nor the one naming a LocalQueue that does not exist.
    assert pending(WLS, LQS, ["nvidia.com/gpu"], at("2026-11-20T10:00:00")) == {
        "research": Pending(2, 3600.0),
        "infra": Pending(1, 60.0),
    }
    assert pending(WLS, LQS, ["google.com/tpu"], at("2026-11-20T10:00:00")) == {}


def test_a_team_without_a_local_queue_is_told_through_its_cluster_queue_in_the_default_namespace() -> None:
    team = Team("research", "research", 100.0)
    queue = Queue("research", "c6a4e2f0-8d31-4b7a-a5c2-1f9e3d7b6a20", "None", None, None, 24.0)
    involved = involved_object(None, queue)
    assert involved == {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "name": "research",
        "uid": "c6a4e2f0-8d31-4b7a-a5c2-1f9e3d7b6a20",
    }
    [call] = calls(Action("warn", team, 80.0), "2026-11", involved, at("2026-11-20T10:00:00"))
    assert (call.method, call.path, call.body["metadata"], call.body["involvedObject"]) == (
        "POST",
        "/api/v1/namespaces/default/events",
        {"name": "research.gpubudgetnearlyspent.2026-11", "namespace": "default"},
        involved,
    )


def test_the_relay_keeps_kueues_families_only() -> None:
    text = (FIXTURES / "metrics.txt").read_text()
    assert kueue_families(text) == "".join(f"{line}\n" for line in text.splitlines()[:8])
    assert kueue_families("# HELP\n\nkueue_x 1\n# comment\nkueue:y 2\n") == "kueue_x 1\n"
