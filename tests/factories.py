"""Builders every test uses: blueprints as data or YAML, validated and resolved, at a fixed date.

One place, so that a change to the blueprint language or to resolution is made once here instead of
in every test module.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import importlib.util
import io
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from ruamel.yaml import YAML

from clusterfab.blueprint.models import Blueprint
from clusterfab.catalog import load_catalog
from clusterfab.cost.estimate import CostEstimate, estimate_cost
from clusterfab.load import Resolved, load, load_bytes
from clusterfab.spec import ClusterSpec, resolve
from tests.conftest import REPO

TODAY = dt.date(2026, 11, 22)
"""The date prices are judged stale against in tests (the catalog's own date)."""
EXAMPLES_DIR = REPO / "blueprints" / "examples"

AWS_BASE: dict[str, Any] = {
    "version": 1,
    "name": "test-cluster",
    "cloud": "aws",
    "region": "us-east-1",
    "zone": "use1-az6",
}
GCP_BASE: dict[str, Any] = {
    "version": 1,
    "name": "test-cluster",
    "cloud": "gcp",
    "region": "us-central1",
    "zone": "us-central1-b",
    "project": "test-project",
}
AZURE_BASE: dict[str, Any] = {
    "version": 1,
    "name": "test-cluster",
    "cloud": "azure",
    "region": "southcentralus",
    "zone": "1",
}
_BASES = {"aws": AWS_BASE, "gcp": GCP_BASE, "azure": AZURE_BASE}


def example(name: str) -> Path:
    """blueprints/examples/<name>.yaml."""
    return EXAMPLES_DIR / f"{name}.yaml"


def blueprint_data(cloud: str = "aws", **fields: Any) -> dict[str, Any]:
    """A blueprint as data: the cloud's minimal head plus `fields` (which override it)."""
    return {**_BASES[cloud], **fields}


def blueprint_yaml(cloud: str = "aws", **fields: Any) -> str:
    """The same as YAML text."""
    stream = io.StringIO()
    YAML(typ="safe").dump(blueprint_data(cloud, **fields), stream)
    return stream.getvalue()


def blueprint(cloud: str = "aws", **fields: Any) -> Blueprint:
    """A schema-valid Blueprint model (no rules run)."""
    return Blueprint.model_validate(blueprint_data(cloud, **fields))


def spec(cloud: str = "aws", env: str | None = None, **fields: Any) -> ClusterSpec:
    """The resolved spec of a blueprint built from `fields` (no rules run)."""
    return resolve(blueprint(cloud, **fields), load_catalog(), env)


def validated(source: Path | str, env: str | None = None, *, allow: frozenset[str] = frozenset()) -> Resolved:
    """A blueprint file or YAML text that must validate without errors (codes in `allow` excepted),
    for the base blueprint or environment `env`."""
    if isinstance(source, Path):
        result = load(source, today=TODAY)
    else:
        result = load_bytes(source.encode(), "test.yaml", environment=env, today=TODAY)
    errors = [f for f in result.findings if f.severity.value == "error" and f.code not in allow]
    assert errors == [], errors
    return result.blueprints[env]


def example_spec(name: str, env: str | None = None) -> ClusterSpec:
    """The resolved spec of an example blueprint (base, or environment `env`)."""
    return validated(example(name), env).spec


def estimate(name: str, env: str | None = None, hours: float | None = None) -> CostEstimate:
    """The cost estimate of an example blueprint."""
    return estimate_cost(example_spec(name, env), load_catalog(), hours=hours, today=TODAY)


def load_program(name: str, path: Any) -> ModuleType:
    """A standalone program shipped as a file (a role's `files/`) imported as module `name`, so its
    functions can be tested in-process."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


HEALTH_KEY = "5" * 64
"""A stack's health signing key (its `health_signing_key` output) in the deploy tests."""


def signed_record(record: dict[str, Any], key: str = HEALTH_KEY) -> dict[str, Any]:
    """A health record with the signature `configure` gives it, computed here from the scheme's
    definition, not by clusterfab.health: HMAC-SHA256 over the compact, key-sorted JSON of every other
    field, written `hmac-sha256=<hex>`."""
    canonical = json.dumps(record, sort_keys=True, separators=(",", ":")).encode()
    mac = hmac.new(key.encode(), canonical, hashlib.sha256).hexdigest()
    return {**record, "signature": f"hmac-sha256={mac}"}
