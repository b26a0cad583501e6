"""Slurm's alert and recording rules, on clusterfab's Slurm exporter (exporter.py) on the controller:
drained nodes, teams near their GPU-hour budget, and a node sync or resume program that stopped working."""

from __future__ import annotations

from clusterfab.monitoring.rules import Rule, RuleGroup

SCRAPE_JOB = "slurm"
"""The scrape job of the Slurm exporter (its `up` series carry this job)."""
LOGIN_JOB = "slurm-login"
"""The scrape job of the login nodes' node exporters (their `up` series carry it and `role="login"`)."""
LOGIN_ROLE = "login"


SYNC_STALE_S = 300
"""The node sync runs every 30 seconds (its systemd timer): ten missed rounds are no hiccup."""


def slurm_rules() -> list[Rule]:
    """From clusterfab's Slurm exporter on the controller (clusterfab/scheduler/slurm/exporter.py)."""
    return [
        *_scheduler_rules(),
        *_node_program_rules(),
        Rule("clusterfab:team_gpus_in_use", "sum by (account) (clusterfab_slurm_job_gpus)", record=True),
    ]


def _scheduler_rules() -> list[Rule]:
    """Drained nodes, teams near their budget, and the exporter itself."""
    return [
        Rule(
            "SlurmNodesDrained",
            "slurm_nodes_drain > 0",
            duration="10m",
            severity="warning",
            summary="{{ $value }} Slurm nodes are drained",
            description="Drained nodes take no jobs: `sinfo -R` lists why (a failed health check, an Xid).",
        ),
        Rule(
            "SlurmTeamGpuBudgetNearlySpent",
            "clusterfab_slurm_qos_gpu_minutes_used / clusterfab_slurm_qos_gpu_minutes_limit > 0.9",
            duration="15m",
            severity="warning",
            summary='team {{ $labels.qos }} has spent {{ $value | printf "%.2f" }} of its monthly GPU-hours',
            description="At its GrpTRESMins budget Slurm holds the team's jobs (QOSGrpGRESMinutes) until the "
            "month starts over: raise gpu_hours_per_month in the blueprint if the work must go on.",
        ),
        Rule(
            "SlurmExporterDown",
            f'up{{job="{SCRAPE_JOB}"}} == 0 or clusterfab_slurm_exporter_up == 0',
            duration="5m",
            severity="warning",
            summary="the Slurm exporter on the controller does not answer, or scontrol does not",
            description="Drained-node and team-budget alerts are blind: check clusterfab-slurm-exporter and "
            "slurmctld on the controller.",
        ),
    ]


def _node_program_rules() -> list[Rule]:
    """The node sync and the resume program on the controller, which create and name the elastic nodes."""
    return [
        Rule(
            "SlurmNodeSyncStale",
            "time() - clusterfab_slurm_node_program_last_run_timestamp_seconds"
            f'{{program="sync"}} > {SYNC_STALE_S}',
            duration="5m",
            severity="warning",
            summary="the Slurm node sync on the controller has not run for over 5 minutes",
            description="New instances get no node name or address, and lost instances and failed resumes "
            "are not cleaned up: check `systemctl status clusterfab-slurm-sync.timer` and `journalctl -u "
            "clusterfab-slurm-sync` on the controller.",
        ),
        Rule(
            "SlurmNodeSyncFailing",
            'increase(clusterfab_slurm_node_actions_total{program="sync",outcome="failed"}[15m]) > 0',
            severity="warning",
            summary="the Slurm node sync fails to {{ $labels.action }}",
            description="A failed round (action `round`) or a failed action is retried every 30 seconds; "
            "`journalctl -u clusterfab-slurm-sync` on the controller has the cloud's or scontrol's error.",
        ),
        Rule(
            "SlurmResumeFailing",
            'increase(clusterfab_slurm_node_actions_total{program="resume",outcome="failed"}[30m]) > 0',
            severity="warning",
            summary="elastic Slurm nodes could not be created: {{ $labels.action }}",
            description="The nodes went back to power saving with the cloud's error as their reason (`sinfo "
            "-R`) and their jobs wait in the queue; the node sync offers them again after its retry wait. "
            "Capacity errors that persist call for a reservation, another zone or another machine type.",
        ),
    ]


def login_rules() -> list[Rule]:
    """The login nodes, which the node exporter job of the GPU nodes does not see (they have no group)."""
    return [
        Rule(
            "NodeDown",
            f'up{{job="{LOGIN_JOB}"}} == 0',
            duration="5m",
            severity="critical",
            summary="login node {{ $labels.instance }} does not answer",
            description="The node exporter of a running login node has not answered for 5 minutes: users "
            "cannot log in or submit jobs there; the node hangs, is still booting, or its network is down.",
        ),
    ]


def rule_files(*, logins: bool) -> list[RuleGroup]:
    """slurm.yml; with `logins`, the login nodes' rules too."""
    return [RuleGroup("slurm.yml", "slurm", tuple(slurm_rules() + (login_rules() if logins else [])))]
