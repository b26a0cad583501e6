"""A recorded answer of the Cloud TPU API's v2 `projects.locations.nodes.list`, shaped as its discovery
document (googleapiclient's discovery_cache tpu.v2.json, revision 20261001: ListNodesResponse `nodes`,
`nextPageToken`; Node `name`, `acceleratorType`, `state`, `labels`, `networkEndpoints`; NetworkEndpoint
`ipAddress`, `port`): two pages, a two-host slice of this cluster and stack, a slice of this cluster that
is being created, a node of another stack and a node nobody labelled."""

from __future__ import annotations

from typing import Any

_OURS = {
    "clusterfab-blueprint": "trillium-spot",
    "clusterfab-stack": "dev",
    "clusterfab-component": "tpu-trillium",
    "clusterfab-node-group": "trillium",
    "clusterfab-slice-count": "1",
    "clusterfab-slice-index": "0",
    "team": "research",
}

PAGE_1: dict[str, Any] = {
    "nodes": [
        {
            "name": "projects/ml-platform-dev/locations/us-east1-d/nodes/trillium-spot-dev-trillium-0",
            "acceleratorType": "v6e-16",
            "state": "READY",
            "health": "HEALTHY",
            "runtimeVersion": "v2-alpha-tpuv6e",
            "labels": _OURS,
            "networkEndpoints": [
                {"ipAddress": "10.70.0.12", "port": 8470, "accessConfig": {}},
                {"ipAddress": "10.70.0.13", "port": 8470, "accessConfig": {}},
            ],
        },
        {
            "name": "projects/ml-platform-dev/locations/us-east1-d/nodes/trillium-spot-prod-trillium-0",
            "acceleratorType": "v6e-256",
            "state": "READY",
            "labels": {**_OURS, "clusterfab-stack": "prod"},
            "networkEndpoints": [{"ipAddress": "10.70.1.2", "port": 8470}],
        },
    ],
    "nextPageToken": "page-2",
}
PAGE_2: dict[str, Any] = {
    "nodes": [
        {
            "name": "projects/ml-platform-dev/locations/us-east1-d/nodes/trillium-spot-dev-trillium-1",
            "acceleratorType": "v6e-16",
            "state": "CREATING",
            "labels": _OURS,
        },
        {
            "name": "projects/ml-platform-dev/locations/us-east1-d/nodes/notebook",
            "acceleratorType": "v5litepod-8",
            "state": "READY",
            "networkEndpoints": [{"ipAddress": "10.70.9.9", "port": 8470}],
        },
    ]
}
