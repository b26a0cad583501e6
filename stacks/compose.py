"""ClusterSpec -> cloud: the cloud-neutral half of the program.

`compose()` builds the playbook bundle, hands the resolved cluster (`cluster.Cluster`) to its cloud's
realizer, the module the name table gives for the cloud (`clusterfab.core.plugins.realizer`: `stacks.aws`,
`stacks.gcp`, the only code that maps a ClusterSpec to component Args), and returns the stack outputs in
the shape `clusterfab.outputs.StackOutputs` reads back. The Pulumi program (`__main__.py`) and the offline
plan (`clusterfab plan`) both call it, so what the plan shows is what `pulumi up` creates. A realizer's
provider package is imported only for clusters on its cloud.
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any

import pulumi
from cluster import (
    BUNDLE_CACHE,
    Cluster,
    MonitoringExport,
    NodeGroupExport,
    Realizer,
    StorageExport,
    TpuSliceExport,
)

from clusterfab.core import plugins
from clusterfab.provision.bundle import build_bundle
from clusterfab.stackinput import StackInput
from components.health_signing import HealthSigningKey


def _realizer(cloud: str) -> Realizer:
    # Imported by name, here: each cloud's provider package takes seconds to import, and a cloud registered
    # at run time brings its own realizer.
    module = importlib.import_module(plugins.realizer(cloud))
    realize: Realizer = module.realize
    return realize


def _fields(export: NodeGroupExport | TpuSliceExport | StorageExport | MonitoringExport) -> dict[str, Any]:
    # Not dataclasses.asdict: it deep-copies values, and pulumi Outputs must stay as they are.
    return {f.name: getattr(export, f.name) for f in dataclasses.fields(export)}


def compose(stack_input: StackInput, *, stack: str) -> dict[str, Any]:
    """Create the cluster's components; return the stack outputs."""
    spec, root = stack_input.spec, stack_input.project_root
    cluster = Cluster(stack_input, stack, build_bundle(root / "playbooks", root / BUNDLE_CACHE))
    realized = _realizer(spec.cloud)(cluster)
    # Cloud-neutral: the key that signs the stack's health records (clusterfab.health).
    signing = HealthSigningKey("health-signing-key")
    return {
        "blueprint": {
            "name": spec.name,
            "file": stack_input.file,
            "digest": stack_input.digest,
            "bundle_sha256": cluster.bundle.sha256,
            "environment": stack_input.environment,
            "catalog_version": stack_input.catalog.version,
            "cloud": spec.cloud,
            "region": spec.region,
            "zone": spec.zone,
            "project": realized.project,
        },
        "network": dict(realized.network),
        "bucket": realized.bucket,
        "node_groups": {k: _fields(v) for k, v in realized.node_groups.items()},
        "tpu_slices": {k: _fields(v) for k, v in realized.tpu_slices.items()},
        "storage": {k: _fields(v) for k, v in realized.storage.items()},
        "node_selector": dict(realized.node_selector),
        "monitoring": _fields(realized.monitoring) if realized.monitoring is not None else None,
        "scheduler": dict(realized.scheduler) if realized.scheduler is not None else None,
        "health_signing_key": pulumi.Output.secret(signing.key),
    }
