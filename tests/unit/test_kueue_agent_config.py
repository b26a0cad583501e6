"""The agent's settings file: the one the cluster's program renders loads; a wrong one is refused with
the key it gets wrong."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clusterfab.scheduler.kubernetes.agent.config import Config, ConfigError, Team, load, parse

RENDERED = {
    "cluster": "a3mega",
    "namespace": "clusterfab-system",
    "ledger_configmap": "clusterfab-gpu-hours",
    "interval_seconds": 30,
    "warn_fraction": 0.8,
    "resources": ["nvidia.com/gpu"],
    "kueue_metrics_url": "https://kueue-controller-manager-metrics-service.kueue-system.svc:8443/metrics",
    "teams": [
        {"team": "research", "cluster_queue": "research", "gpu_hours_per_month": 20000},
        {"team": "infra", "cluster_queue": "infra", "gpu_hours_per_month": None},
    ],
}


def test_the_rendered_settings_load(tmp_path: Path) -> None:
    path = tmp_path / "agent.json"
    path.write_text(json.dumps(RENDERED))
    assert load(str(path)) == Config(
        cluster="a3mega",
        namespace="clusterfab-system",
        ledger_configmap="clusterfab-gpu-hours",
        teams=(Team("research", "research", 20000.0), Team("infra", "infra", None)),
        interval_seconds=30.0,
        warn_fraction=0.8,
        resources=("nvidia.com/gpu",),
        kueue_metrics_url="https://kueue-controller-manager-metrics-service.kueue-system.svc:8443/metrics",
    )


def test_the_optional_keys_have_their_defaults() -> None:
    minimal = {k: RENDERED[k] for k in ("cluster", "namespace", "ledger_configmap", "teams")}
    config = parse(minimal, "agent.json")
    assert (config.interval_seconds, config.warn_fraction, config.resources, config.kueue_metrics_url) == (
        30.0,
        0.8,
        ("nvidia.com/gpu",),
        None,
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"teams": []}, "agent.json: teams must be a non-empty list"),
        ({"cluster": ""}, "agent.json: cluster must be a non-empty string"),
        ({"interval": 30}, "agent.json: has unknown interval"),
        ({"warn_fraction": 80}, r"agent.json: interval_seconds must be > 0 and warn_fraction in \(0, 1\]"),
        ({"interval_seconds": "30"}, "agent.json: interval_seconds must be a number"),
        ({"resources": "nvidia.com/gpu"}, "agent.json: resources must be a non-empty list of resource names"),
        ({"kueue_metrics_url": "kueue:8443"}, "agent.json: kueue_metrics_url must be an http"),
        (
            {"teams": [{"team": "research", "cluster_queue": "research"}]},
            r"agent.json: teams\[0\]: lacks gpu_hours_per_month",
        ),
        (
            {"teams": [{"team": "research", "cluster_queue": "research", "gpu_hours_per_month": True}]},
            r"agent.json: teams\[0\].gpu_hours_per_month must be a number",
        ),
        (
            {"teams": [{"team": "research", "cluster_queue": "r", "gpu_hours_per_month": -1}]},
            r"agent.json: teams\[0\].gpu_hours_per_month must not be negative",
        ),
        ({"teams": [RENDERED["teams"][0], RENDERED["teams"][0]]}, "agent.json: teams name a team twice"),
    ],
)
def test_a_wrong_file_is_refused_with_the_key(change: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse({**RENDERED, **change}, "agent.json")


def test_a_file_that_is_not_json_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "agent.json"
    path.write_text("cluster: a3mega\n")
    with pytest.raises(ConfigError, match=r"agent.json: Expecting value: line 1 column 1"):
        load(str(path))
    with pytest.raises(ConfigError, match=r"agent.json: expected a JSON object"):
        parse([RENDERED], "agent.json")
