"""A Cloud TPU queued resource, as a Pulumi dynamic resource over the TPU v2 REST API.

Multislice capacity is requested as ONE queued resource with a node count: Google provisions all its
slices together (all or nothing) and repairs them together (cloud.google.com/tpu/docs/multislice-
introduction). pulumi-gcp's V2QueuedResource offers neither the node count nor the service account,
metadata, labels or capacity tier a node needs, so the request goes to the API itself
(tpu.googleapis.com/v2 queuedResources, the fields of its discovery document). The request body is
built by a pure function (tested against the discovery document); the provider is a thin client.

A queued resource is immutable: any change replaces it. `create` returns once Google has accepted
the request (state WAITING_FOR_RESOURCES or later), not when the capacity arrives, which can take
hours; `clusterfab` shows the state as an output.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, Resource, ResourceProvider

API = "https://tpu.googleapis.com/v2"
OPERATION_POLL_SECONDS = 5.0
OPERATION_TIMEOUT_SECONDS = 1800.0

Tier = Literal["on_demand", "spot", "reservation"]


@dataclass(frozen=True, kw_only=True)
class QueuedResourceRequest:
    """What to ask the TPU API for: `node_count` identical slices of one accelerator type."""

    project: str
    zone: str
    queued_resource_id: str
    node_prefix: str
    """Slices are named `<node_prefix>-<i>`, i = 0 .. node_count-1."""
    node_count: int
    accelerator_type: str
    runtime_version: str
    network: str
    subnetwork: str
    service_account: str
    scopes: Sequence[str]
    tier: Tier = "on_demand"
    reservation: str | None = None
    """With tier reservation: the reservation's name, or projects/P/locations/Z/reservations/R."""
    description: str = ""
    metadata: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)


def request_body(request: QueuedResourceRequest) -> dict[str, Any]:
    """The queuedResources.create body (TPU v2 `QueuedResource`)."""
    node: dict[str, Any] = {
        "acceleratorType": request.accelerator_type,
        "runtimeVersion": request.runtime_version,
        "networkConfig": {
            "network": request.network,
            "subnetwork": request.subnetwork,
            "enableExternalIps": False,
            "canIpForward": False,
        },
        "serviceAccount": {"email": request.service_account, "scope": list(request.scopes)},
        "metadata": dict(request.metadata),
        "labels": dict(request.labels),
    }
    if request.description:
        node["description"] = request.description
    if request.tier == "reservation":
        # The project's TPU reservation in the zone; the API takes no reservation name here.
        node["schedulingConfig"] = {"reserved": True}
    body: dict[str, Any] = {
        "tpu": {
            "nodeSpec": [
                {
                    "parent": f"projects/{request.project}/locations/{request.zone}",
                    "multisliceParams": {
                        "nodeCount": request.node_count,
                        "nodeIdPrefix": request.node_prefix,
                    },
                    "node": node,
                }
            ]
        }
    }
    if request.tier == "spot":
        body["spot"] = {}
    else:
        body["guaranteed"] = {}
    if request.tier == "reservation" and request.reservation:
        name = request.reservation
        if "/" not in name:
            name = f"projects/{request.project}/locations/{request.zone}/reservations/{name}"
        body["reservationName"] = name
    return body


def _session() -> Any:  # pragma: no cover - needs Google credentials
    from google.auth import default  # noqa: PLC0415 - only on a real `pulumi up`
    from google.auth.transport.requests import AuthorizedSession  # noqa: PLC0415

    credentials, _ = default(scopes=["https://www.googleapis.com/auth/cloud-platform"])
    return AuthorizedSession(credentials)  # type: ignore[no-untyped-call]


def _wait(session: Any, operation: dict[str, Any]) -> dict[str, Any]:  # pragma: no cover - needs Google
    deadline = time.monotonic() + OPERATION_TIMEOUT_SECONDS
    while not operation.get("done"):
        if time.monotonic() > deadline:
            raise TimeoutError(f"TPU operation {operation.get('name')} did not finish")
        time.sleep(OPERATION_POLL_SECONDS)
        response = session.get(f"{API}/{operation['name']}")
        response.raise_for_status()
        operation = response.json()
    if "error" in operation:
        raise RuntimeError(f"TPU operation failed: {operation['error']}")
    return operation


class QueuedResourceProvider(ResourceProvider):  # pragma: no cover - its API calls need Google
    """Creates, reads and deletes a queued resource; every change is a replacement."""

    def create(self, props: dict[str, Any]) -> CreateResult:
        session = _session()
        parent = f"projects/{props['project']}/locations/{props['zone']}"
        response = session.post(
            f"{API}/{parent}/queuedResources",
            params={"queuedResourceId": props["queued_resource_id"]},
            json=props["body"],
        )
        response.raise_for_status()
        _wait(session, response.json())
        name = f"{parent}/queuedResources/{props['queued_resource_id']}"
        return CreateResult(name, {**props, "state": self._state(session, name)})

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        return ReadResult(id_, {**props, "state": self._state(_session(), id_)})

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = [key for key in news if key != "state" and olds.get(key) != news.get(key)]
        return DiffResult(changes=bool(changed), replaces=changed, delete_before_replace=True)

    def delete(self, id_: str, _props: dict[str, Any]) -> None:
        session = _session()
        # force: delete the slices with it.
        response = session.delete(f"{API}/{id_}", params={"force": "true"})
        if response.status_code != 404:
            response.raise_for_status()
            _wait(session, response.json())

    @staticmethod
    def _state(session: Any, name: str) -> str:
        response = session.get(f"{API}/{name}")
        response.raise_for_status()
        return str(response.json().get("state", {}).get("state", "UNKNOWN"))


class TpuQueuedResource(Resource, module="gcp-tpu", name="QueuedResource"):
    """The queued resource; `state` is what Google reports (ACTIVE once every slice is up)."""

    state: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        request: QueuedResourceRequest,
        body: pulumi.Input[dict[str, Any]],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props = {
            "project": request.project,
            "zone": request.zone,
            "queued_resource_id": request.queued_resource_id,
            "body": body,
            "state": None,
        }
        super().__init__(QueuedResourceProvider(), name, props, opts)
