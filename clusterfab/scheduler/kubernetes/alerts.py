"""Kueue's alert and recording rules on a Kubernetes cluster, from the queue agent (manifests/queue_agent.py,
agent/): GPU workloads that wait too long, teams near or at their GPU-hour budget, a queue the budget
holds, and an agent or a Kueue that stops answering.

The agent serves its own `clusterfab_kueue_*` series and relays Kueue's `kueue_*` ones; it runs on one of
the system nodes, all of which the scrape job lists, so only one target of the job is up at a time.
"""

from __future__ import annotations

from clusterfab.monitoring.rules import Rule, RuleGroup
from clusterfab.scheduler.kubernetes.manifests.queue_agent import WARN_FRACTION

SCRAPE_JOB = "queue-agent"
"""The scrape job of the queue agent (its `up` series carry this job)."""
PENDING_TOO_LONG_S = 4 * 3600
"""A GPU workload that waits four hours for quota or nodes is stuck for a person, not in a queue: the
quota is lent out, a flavor's nodes cannot be had, or the workload asks for more than any queue has.
Flex-start capacity waits longer by design: the alert says which queue it is, so it can be silenced."""
BUDGET = "clusterfab_kueue_team_gpu_hours_used / clusterfab_kueue_team_gpu_hours_limit"


def kueue_rules() -> list[Rule]:
    return [
        Rule("clusterfab:team_gpus_in_use", "sum by (team) (clusterfab_kueue_team_gpus_in_use)", record=True),
        *_queue_rules(),
        *_budget_rules(),
        *_agent_rules(),
    ]


def _queue_rules() -> list[Rule]:
    return [
        Rule(
            "KueueGpuWorkloadPendingTooLong",
            f"clusterfab_kueue_oldest_pending_gpu_workload_seconds > {PENDING_TOO_LONG_S} "
            "unless on (cluster_queue) (clusterfab_kueue_cluster_queue_held == 1)",
            duration="10m",
            severity="warning",
            summary="a GPU workload of team {{ $labels.team }} has waited "
            "{{ $value | humanizeDuration }} in queue {{ $labels.cluster_queue }}",
            description="No quota or no nodes for it: `kubectl get workloads -n <team>` and "
            "`kubectl describe` the workload say why (another team borrows the quota, the flavor's nodes "
            "cannot be had, or it asks for more GPUs than the queue may use).",
        ),
    ]


def _budget_rules() -> list[Rule]:
    return [
        Rule(
            "KueueTeamGpuBudgetNearlySpent",
            f"{BUDGET} >= {WARN_FRACTION} "
            "unless on (cluster_queue) (clusterfab_kueue_cluster_queue_held == 1)",
            duration="15m",
            severity="warning",
            summary="team {{ $labels.team }} has spent {{ $value | humanizePercentage }} of its monthly "
            "GPU-hours",
            description="At its gpu_hours_per_month the queue agent holds the team's ClusterQueue "
            "(stopPolicy: Hold) until the month starts over: running workloads finish, no new one starts. "
            "Raise gpu_hours_per_month in the blueprint if the work must go on.",
        ),
        Rule(
            "KueueQueueHeldByBudget",
            'clusterfab_kueue_cluster_queue_held{held_by="gpu-budget"} == 1',
            duration="5m",
            severity="warning",
            summary="queue {{ $labels.cluster_queue }} of team {{ $labels.team }} is held: its monthly "
            "GPU-hours are spent",
            description="Kueue admits no new workload of the team until the month starts over (the agent "
            "releases the queue then). Raise gpu_hours_per_month and `clusterfab up` to release it sooner.",
        ),
    ]


def _agent_rules() -> list[Rule]:
    return [
        Rule(
            "KueueQueueAgentDown",
            f'absent(up{{job="{SCRAPE_JOB}"}} == 1) or max(clusterfab_kueue_agent_round_success) == 0',
            duration="10m",
            severity="warning",
            summary="the queue agent does not answer, or cannot read the queues",
            description="GPU-hour budgets are not kept and queue alerts are blind: "
            "`kubectl -n clusterfab-system logs deploy/clusterfab-queue-agent`.",
        ),
        Rule(
            "KueueMetricsUnavailable",
            "max(clusterfab_kueue_relay_success) == 0",
            duration="15m",
            severity="warning",
            summary="Kueue's controller does not serve its metrics to the queue agent",
            description="Kueue's controller-manager may be down (then nothing is admitted): "
            "`kubectl -n kueue-system get pods`.",
        ),
    ]


def rule_files() -> list[RuleGroup]:
    return [RuleGroup("kueue.yml", "kueue", tuple(kueue_rules()))]
