"""The metrics the agent serves on /metrics (text exposition format 0.0.4). Their names and labels are
the contract with the cluster's alert rules and dashboards; every one is a gauge.

Per team of the settings (labels `team`, `cluster_queue`):
- `clusterfab_kueue_team_gpus_in_use`: GPUs the team's ClusterQueue has admitted now (the sum of
  status.flavorsUsage totals of the configured resources; 0 while the queue does not exist);
- `clusterfab_kueue_team_gpu_hours_used`: GPU-hours charged to the team this UTC month (the ledger);
- `clusterfab_kueue_team_gpu_hours_limit`: the team's monthly budget (only teams with one);
- `clusterfab_kueue_cluster_queue_held{team,cluster_queue,held_by}`: 1 when the queue's spec.stopPolicy
  is Hold or HoldAndDrain, held_by `gpu-budget` when this agent's budget holds it, `other` when someone
  else does; 0 with held_by `none` when it admits (only queues that exist);
- `clusterfab_kueue_pending_gpu_workloads`: Workloads asking for a configured resource that are neither
  admitted nor finished (QuotaReserved, Admitted and Finished all not True), by their LocalQueue's
  ClusterQueue;
- `clusterfab_kueue_oldest_pending_gpu_workload_seconds`: the age of the oldest of them (0 with none).

The agent's own state:
- `clusterfab_kueue_agent_round_success`: 1 when the last round read, decided and wrote everything,
  0 when it failed (the per-team metrics are then the last good round's);
- `clusterfab_kueue_agent_last_success_timestamp_seconds`: when a round last succeeded (0: never);
- `clusterfab_kueue_relay_success`: 1 when the last round read Kueue's metrics endpoint (only with a
  kueue_metrics_url), followed by Kueue's own `kueue_*` families as it served them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .config import Config
from .ledger import Ledger
from .queues import BUDGET, Pending, Queue


@dataclass
class Exposition:
    """Samples by metric name, in the order their families were first added."""

    samples: dict[str, list[tuple[dict[str, str], float]]] = field(default_factory=dict)
    help: dict[str, str] = field(default_factory=dict)

    def add(self, name: str, value: float, help_text: str, **labels: str) -> None:
        self.help.setdefault(name, help_text)
        self.samples.setdefault(name, []).append((labels, value))

    def text(self) -> str:
        lines: list[str] = []
        for name, samples in self.samples.items():
            lines += [f"# HELP {name} {self.help[name]}", f"# TYPE {name} gauge"]
            for labels, value in samples:
                rendered = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(labels.items()))
                lines.append(
                    f"{name}{{{rendered}}} {_number(value)}" if rendered else f"{name} {_number(value)}"
                )
        return "".join(f"{line}\n" for line in lines)


def _number(value: float) -> str:
    """Every digit (`:g` keeps six: epoch seconds and GPU-hours in the thousands would lose theirs)."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def team_metrics(
    config: Config, queues: Mapping[str, Queue], ledger: Ledger, pending: Mapping[str, Pending]
) -> Exposition:
    metrics = Exposition()
    for team in config.teams:
        labels = {"team": team.team, "cluster_queue": team.cluster_queue}
        queue = queues.get(team.cluster_queue)
        metrics.add(
            "clusterfab_kueue_team_gpus_in_use",
            queue.gpus if queue else 0,
            "GPUs a team's ClusterQueue has admitted",
            **labels,
        )
        metrics.add(
            "clusterfab_kueue_team_gpu_hours_used",
            ledger.hours.get(team.team, 0.0),
            "GPU-hours charged to a team this month (UTC)",
            **labels,
        )
        if team.gpu_hours_per_month is not None:
            metrics.add(
                "clusterfab_kueue_team_gpu_hours_limit",
                team.gpu_hours_per_month,
                "A team's monthly GPU-hour budget",
                **labels,
            )
        if queue is not None:
            held_by = "none" if not queue.held else BUDGET if queue.ours else "other"
            metrics.add(
                "clusterfab_kueue_cluster_queue_held",
                int(queue.held),
                "Whether a ClusterQueue's stopPolicy holds admission, and by whom",
                held_by=held_by,
                **labels,
            )
        waiting = pending.get(team.cluster_queue, Pending(0, 0.0))
        metrics.add(
            "clusterfab_kueue_pending_gpu_workloads",
            waiting.count,
            "GPU Workloads waiting for admission",
            **labels,
        )
        metrics.add(
            "clusterfab_kueue_oldest_pending_gpu_workload_seconds",
            waiting.oldest_seconds,
            "Age of the oldest GPU Workload awaiting admission",
            **labels,
        )
    return metrics


def agent_metrics(success: bool, last_success: float, relay: bool | None) -> Exposition:
    metrics = Exposition()
    metrics.add(
        "clusterfab_kueue_agent_round_success", int(success), "Whether the agent's last round succeeded"
    )
    metrics.add(
        "clusterfab_kueue_agent_last_success_timestamp_seconds",
        last_success,
        "When a round last succeeded (seconds since epoch)",
    )
    if relay is not None:
        metrics.add(
            "clusterfab_kueue_relay_success", int(relay), "Whether the last round read Kueue's metrics"
        )
    return metrics
