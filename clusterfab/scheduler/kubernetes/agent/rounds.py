"""One round of the agent: read Kueue's queues and workloads and the ledger, charge the ledger, carry out
the budget's decisions, write the ledger back, and make the metrics text. A round that fails anywhere
is logged and leaves the last good round's team metrics in place; the next round starts afresh from
what the cluster holds (the ledger charges the whole gap then, at its larger side)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from . import actions, ledger, queues
from .budget import Action, decide
from .config import Config
from .kube import MERGE_PATCH, Api, ApiError, list_items
from .metrics import Exposition, agent_metrics, team_metrics
from .relay import kueue_families

LOG = logging.getLogger("clusterfab_queue_agent")
MANAGED_BY = {"app.kubernetes.io/managed-by": "clusterfab"}


@dataclass(frozen=True)
class Seen:
    """What a round read from the cluster."""

    queues: dict[str, queues.Queue]
    local_queues: list[dict[str, Any]]
    workloads: list[dict[str, Any]]
    stored: ledger.Ledger | None
    ledger_exists: bool


class Agent:
    def __init__(self, config: Config, api: Api, clock: Callable[[], float] = time.time) -> None:
        self.config = config
        self.api = api
        self.clock = clock
        self.teams_text = ""
        self.last_success = 0.0

    def round(self) -> str:
        """This round's metrics text; never raises (a failed round is logged and reported as such)."""
        now = self.clock()
        try:
            self.teams_text = self._round(now).text()
            self.last_success, success = now, True
        except Exception:  # any error of one round (API, data Kueue or someone wrote): the next may work
            LOG.exception("round failed; serving the last good round's metrics")
            success = False
        relayed, relay = self._relay()
        return self.teams_text + agent_metrics(success, self.last_success, relay).text() + relayed

    def _round(self, now: float) -> Exposition:
        seen = self._read()
        charged = ledger.charge(seen.stored, now, self._gpus(seen.queues))
        decided = decide(self.config.teams, charged, seen.queues, self.config.warn_fraction)
        current = dict(seen.queues)
        for action in decided:
            current, charged = self._act(action, current, charged, seen, now)
        self._write(charged, seen.ledger_exists)
        waiting = queues.pending(seen.workloads, seen.local_queues, self.config.resources, now)
        return team_metrics(self.config, current, charged, waiting)

    def _read(self) -> Seen:
        found = queues.queues(list_items(self.api, queues.CLUSTER_QUEUES), self.config.resources)
        local = list_items(self.api, queues.LOCAL_QUEUES)
        workloads = list_items(self.api, queues.WORKLOADS)
        stored, exists = self._read_ledger()
        return Seen(found, local, workloads, stored, exists)

    def _gpus(self, found: Mapping[str, queues.Queue]) -> dict[str, float]:
        return {
            t.team: found[t.cluster_queue].gpus if t.cluster_queue in found else 0.0
            for t in self.config.teams
        }

    def _act(
        self, action: Action, current: dict[str, queues.Queue], charged: ledger.Ledger, seen: Seen, now: float
    ) -> tuple[dict[str, queues.Queue], ledger.Ledger]:
        team = action.team
        queue = current[team.cluster_queue]
        local = queues.local_queue(seen.local_queues, team.namespace, team.cluster_queue)
        involved = actions.involved_object(local, queue)
        for call in actions.calls(action, charged.month, involved, now):
            self._send(call)
        LOG.info("%s team %s (%.1f GPU-hours)", action.kind, team.team, action.hours)
        current[team.cluster_queue] = actions.after(queue, action, charged.month)
        if action.kind == "warn":
            charged = ledger.Ledger(
                charged.month, charged.at, charged.hours, charged.gpus, charged.warned | {team.team}
            )
        return current, charged

    def _send(self, call: actions.Call) -> None:
        try:
            self.api.request(call.method, call.path, call.body, call.content_type)
        except ApiError as error:
            if not (call.done_if_exists and error.status == 409):
                raise

    def _configmap(self) -> str:
        return f"/api/v1/namespaces/{self.config.namespace}/configmaps/{self.config.ledger_configmap}"

    def _read_ledger(self) -> tuple[ledger.Ledger | None, bool]:
        """The stored ledger and whether its ConfigMap exists; no ConfigMap (or no key) is a first start.
        Any other failure fails the round: starting the month over would forgive what teams spent."""
        try:
            answer = self.api.request("GET", self._configmap())
        except ApiError as error:
            if error.status == 404:
                return None, False
            raise
        text = (answer.get("data") or {}).get(ledger.KEY)
        return (ledger.loads(text) if text else None), True

    def _write(self, charged: ledger.Ledger, exists: bool) -> None:
        data = {ledger.KEY: ledger.dumps(charged)}
        if exists:
            self.api.request("PATCH", self._configmap(), {"data": data}, MERGE_PATCH)
            return
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": self.config.ledger_configmap,
                "namespace": self.config.namespace,
                "labels": MANAGED_BY,
            },
            "data": data,
        }
        self.api.request("POST", f"/api/v1/namespaces/{self.config.namespace}/configmaps", body)

    def _relay(self) -> tuple[str, bool | None]:
        url = self.config.kueue_metrics_url
        if url is None:
            return "", None
        try:
            return kueue_families(self.api.scrape(url)), True
        except ApiError as error:
            # Kueue's metrics are dropped rather than served stale: an absent series is what says so.
            LOG.warning("Kueue's metrics at %s did not answer: %s", url, error)
            return "", False
