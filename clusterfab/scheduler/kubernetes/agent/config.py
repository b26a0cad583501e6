"""The agent's settings: one JSON file the cluster's program renders into a ConfigMap.

    {"cluster": "a3mega", "namespace": "clusterfab-system", "ledger_configmap": "clusterfab-gpu-hours",
     "interval_seconds": 30, "warn_fraction": 0.8, "resources": ["nvidia.com/gpu"],
     "kueue_metrics_url": "https://kueue-controller-manager-metrics-service.kueue-system.svc:8443/metrics",
     "teams": [{"team": "research", "cluster_queue": "research", "gpu_hours_per_month": 20000},
               {"team": "infra", "cluster_queue": "infra", "gpu_hours_per_month": null}]}

cluster, namespace (where the ledger ConfigMap lives), ledger_configmap and teams are required; the rest
have the defaults above (no kueue_metrics_url: no relay). A wrong file stops the agent at start with a
message naming the key, rather than a round failing every 30 seconds.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

REQUIRED = ("cluster", "namespace", "ledger_configmap", "teams")
OPTIONAL = ("interval_seconds", "warn_fraction", "resources", "kueue_metrics_url")
TEAM_KEYS = ("team", "cluster_queue", "gpu_hours_per_month")


class ConfigError(ValueError):
    """The settings file is not one this agent can run with."""


@dataclass(frozen=True)
class Team:
    team: str
    cluster_queue: str
    gpu_hours_per_month: float | None
    """None: no budget (the team is measured, never warned or held)."""

    @property
    def namespace(self) -> str:
        """The team's namespace has the team's name (the render makes it so)."""
        return self.team


@dataclass(frozen=True)
class Config:
    cluster: str
    namespace: str
    ledger_configmap: str
    teams: tuple[Team, ...]
    interval_seconds: float = 30.0
    warn_fraction: float = 0.8
    resources: tuple[str, ...] = ("nvidia.com/gpu",)
    kueue_metrics_url: str | None = None


def load(path: str) -> Config:
    try:
        with open(path, encoding="utf-8") as handle:
            raw = json.load(handle)
    except (OSError, ValueError) as error:
        raise ConfigError(f"{path}: {error}") from error
    return parse(raw, path)


def parse(raw: object, where: str) -> Config:
    settings = _object(raw, where, REQUIRED, OPTIONAL)
    teams = settings["teams"]
    if not isinstance(teams, list) or not teams:
        raise ConfigError(f"{where}: teams must be a non-empty list")
    parsed = tuple(_team(item, f"{where}: teams[{i}]") for i, item in enumerate(teams))
    names = [t.team for t in parsed]
    if len(set(names)) != len(names):
        raise ConfigError(f"{where}: teams name a team twice")
    interval = _number(settings.get("interval_seconds", 30.0), f"{where}: interval_seconds")
    fraction = _number(settings.get("warn_fraction", 0.8), f"{where}: warn_fraction")
    if interval <= 0 or not 0 < fraction <= 1:
        raise ConfigError(f"{where}: interval_seconds must be > 0 and warn_fraction in (0, 1]")
    resources = settings.get("resources", ["nvidia.com/gpu"])
    if not isinstance(resources, list) or not resources or not all(isinstance(r, str) for r in resources):
        raise ConfigError(f"{where}: resources must be a non-empty list of resource names")
    url = settings.get("kueue_metrics_url")
    if url is not None and not (isinstance(url, str) and url.startswith(("http://", "https://"))):
        raise ConfigError(f"{where}: kueue_metrics_url must be an http(s) URL or null")
    return Config(
        cluster=_string(settings, "cluster", where),
        namespace=_string(settings, "namespace", where),
        ledger_configmap=_string(settings, "ledger_configmap", where),
        teams=parsed,
        interval_seconds=interval,
        warn_fraction=fraction,
        resources=tuple(resources),
        kueue_metrics_url=url,
    )


def _team(raw: object, where: str) -> Team:
    team = _object(raw, where, TEAM_KEYS, ())
    budget = team["gpu_hours_per_month"]
    hours = None if budget is None else _number(budget, f"{where}.gpu_hours_per_month")
    if hours is not None and hours < 0:
        raise ConfigError(f"{where}.gpu_hours_per_month must not be negative")
    return Team(_string(team, "team", where), _string(team, "cluster_queue", where), hours)


def _object(
    raw: object, where: str, required: tuple[str, ...], optional: tuple[str, ...]
) -> Mapping[str, object]:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a JSON object")
    missing = [k for k in required if k not in raw]
    unknown = sorted(set(raw) - set(required) - set(optional))
    if missing or unknown:
        parts = [
            f"lacks {', '.join(missing)}" if missing else "",
            f"has unknown {', '.join(unknown)}" if unknown else "",
        ]
        raise ConfigError(f"{where}: " + "; ".join(p for p in parts if p))
    return raw


def _string(raw: Mapping[str, object], key: str, where: str) -> str:
    value = raw[key]
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where}: {key} must be a non-empty string")
    return value


def _number(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{where} must be a number")
    return float(value)
