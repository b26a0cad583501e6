"""List the cluster's TPU VM hosts through the Cloud TPU API (v2 `projects.locations.nodes.list`) and
write them as a Prometheus file_sd file: one target group per TPU worker, its node exporter at the
worker's internal address, labelled like the GPU nodes' discovery (`instance`, `machine_type`) plus the
slice (`tpu_slice`, the blueprint's TPU slice name).

Standard library only (the monitoring host's python3), with the GCP node programs' HTTP helper. The list
method takes no filter (tpu.v2 discovery document: parent, pageSize, pageToken), so the cluster's and
stack's nodes are selected here by the labels the stack puts on them (components/gcp/tpu.py).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .gcp_http import Http, MetadataTokenHttp

log = logging.getLogger("clusterfab-tpu-discovery")

TPU_API = "https://tpu.googleapis.com/v2"
BLUEPRINT_TAG = "clusterfab-blueprint"
STACK_TAG = "clusterfab-stack"
NODE_GROUP_TAG = "clusterfab-node-group"
"""clusterfab.core.vocab's label keys (this program imports nothing of clusterfab)."""
LIVE_STATES = frozenset({"READY"})
"""Node.state values whose workers are scraped: as gce_sd_configs selects `status = RUNNING` instances, a
node that is being created, stopped, preempted or deleted is no target (and raises no TpuHostDown)."""


@dataclass(frozen=True, slots=True)
class Settings:
    """The program's settings file (`tpu_discovery.json` of the monitoring host's files)."""

    project: str
    zone: str
    blueprint: str
    stack: str
    port: int
    output: str

    @classmethod
    def load(cls, path: str) -> Settings:
        with open(path, encoding="utf-8") as handle:
            raw = json.load(handle)
        return cls(**{key: raw[key] for key in cls.__slots__})


def target_groups(
    nodes: Sequence[Mapping[str, Any]], *, blueprint: str, stack: str, port: int
) -> list[dict[str, Any]]:
    """The file_sd target groups of `nodes` (Node resources of the TPU v2 API): one per worker of every
    READY node of this cluster and stack, in name order."""
    groups: list[dict[str, Any]] = []
    for node in sorted(nodes, key=lambda n: str(n.get("name", ""))):
        labels = node.get("labels") or {}
        if labels.get(BLUEPRINT_TAG) != blueprint or labels.get(STACK_TAG) != stack:
            continue
        if NODE_GROUP_TAG not in labels or node.get("state") not in LIVE_STATES:
            continue
        name = str(node["name"]).rsplit("/", 1)[-1]
        for index, endpoint in enumerate(node.get("networkEndpoints") or ()):
            address = endpoint.get("ipAddress")
            if not address:
                continue
            groups.append(
                {
                    "targets": [f"{address}:{port}"],
                    "labels": {
                        "tpu_slice": labels[NODE_GROUP_TAG],
                        "instance": f"{name}-w{index}",
                        "machine_type": str(node.get("acceleratorType", "")),
                    },
                }
            )
    return groups


def list_nodes(http: Http, project: str, zone: str) -> Iterator[Mapping[str, Any]]:
    """Every node of the zone, page by page."""
    url = f"{TPU_API}/projects/{project}/locations/{zone}/nodes"
    token = ""
    while True:
        query = f"?{urllib.parse.urlencode({'pageToken': token})}" if token else ""
        answer = http("GET", url + query)
        yield from answer.get("nodes") or ()
        token = answer.get("nextPageToken") or ""
        if not token:
            return


def write_atomically(path: str, groups: Sequence[Mapping[str, Any]]) -> None:
    """Write the file beside its final name and rename it: Prometheus never reads half a file."""
    directory = os.path.dirname(path) or "."
    fd, partial = tempfile.mkstemp(dir=directory, prefix=".tpu-discovery-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(list(groups), handle, indent=2, sort_keys=True)
            handle.write("\n")
        os.chmod(partial, 0o644)
        os.replace(partial, path)
    except BaseException:
        os.unlink(partial)
        raise


def discover(settings: Settings, http: Http) -> list[dict[str, Any]]:
    """One round: list the zone's nodes and write the cluster's workers to `settings.output`."""
    nodes = list(list_nodes(http, settings.project, settings.zone))
    groups = target_groups(nodes, blueprint=settings.blueprint, stack=settings.stack, port=settings.port)
    write_atomically(settings.output, groups)
    return groups


def main(argv: Sequence[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    if len(argv) != 1:
        log.error("usage: python3 -m clusterfab_tpu_discovery SETTINGS.json")
        return 2
    settings = Settings.load(argv[0])
    # A failed call keeps the last file: Prometheus goes on scraping the hosts it knew.
    groups = discover(settings, MetadataTokenHttp())
    log.info("%d TPU workers written to %s", len(groups), settings.output)
    return 0
