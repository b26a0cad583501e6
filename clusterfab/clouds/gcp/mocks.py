"""What the offline plan engine's mocks answer for GCP resources and calls (`CloudProfile.plan_mocks`).

Deterministic placeholders, derived from the resource's name, for the computed attributes programs wire
between resources: plans and golden files stay stable.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from clusterfab.clouds.base import ComputedOutputs, PlanMocks

_MOCK_CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMOCK\n-----END CERTIFICATE-----\n").decode()
"""A GKE cluster's CA as the API returns it: base64 of a PEM certificate."""

OUTPUTS: dict[str, ComputedOutputs] = {
    "gcp:": lambda _t, name: {"selfLink": f"https://mock.googleapis.com/{name}"},
    "gcp:filestore/instance:": lambda _t, name: {
        "networks": [{"ipAddresses": ["10.255.0.2"], "network": "mock", "modes": ["MODE_IPV4"]}]
    },
    "gcp:lustre/instance:": lambda _t, name: {"mountPoint": "10.255.0.3@tcp:/mocklfs"},
    "gcp:sql/databaseInstance:": lambda _t, name: {
        "connectionName": f"mock-project:mock-region:{name}",
        "privateIpAddress": "10.255.0.4",
    },
    "gcp:compute/instanceTemplate:": lambda _t, name: {
        "selfLinkUnique": f"https://mock.googleapis.com/{name}?u"
    },
    "gcp:container/cluster:": lambda _t, name: {
        "endpoint": "10.255.0.5",
        "masterAuth": {"clusterCaCertificate": _MOCK_CA},
        "controlPlaneEndpointsConfig": {
            "dnsEndpointConfig": {"endpoint": f"gke-{name}-123456789.mock-region.gke.goog"}
        },
    },
    "gcp:serviceaccount/account:": lambda _t, name: {
        "email": f"{name}@mock-project.iam.gserviceaccount.com",
        "member": f"serviceAccount:{name}@mock-project.iam.gserviceaccount.com",
    },
}


def call(token: str, args: Mapping[str, Any]) -> dict[str, Any] | None:
    if token == "gcp:organizations/getProject:getProject":
        return {"projectId": args.get("projectId", "mock-project"), "number": "123456789"}
    return None


PLAN_MOCKS = PlanMocks(outputs=OUTPUTS, call=call)
