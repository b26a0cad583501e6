"""A scheduler registered at run time, defined only here: validation, the spec, cost, monitoring and the
stack outputs reach it through its plugin, and the published schema still names the built-in kinds."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from clusterfab.blueprint.schema import blueprint_json_schema
from clusterfab.catalog import load_catalog
from clusterfab.core import plugins
from clusterfab.core.errors import UsageError
from clusterfab.cost import estimate_cost
from clusterfab.load import load_bytes
from clusterfab.monitoring import render_monitoring
from clusterfab.outputs import read_outputs
from clusterfab.scheduler import plugin
from clusterfab.spec import ClusterSpec
from tests.factories import TODAY, blueprint_yaml, validated
from tests.plugins import toy_scheduler
from tests.plugins.toy_scheduler import KIND, PLUGIN, ToySection


@pytest.fixture
def toy() -> Iterator[None]:
    plugins.register_scheduler(KIND, toy_scheduler.__name__)
    yield
    plugins.unregister(KIND)


def _spec(**fields: Any) -> ClusterSpec:
    groups = [{"name": "h100", "machine_type": "p5.48xlarge", "count": 2}]
    text = blueprint_yaml(node_groups=groups, scheduler={"kind": KIND}, **fields)
    return validated(text).spec


def test_a_registered_scheduler_resolves_its_own_section_and_is_priced(toy: None) -> None:
    spec = _spec()
    assert spec.scheduler == ToySection("c7i.4xlarge")
    assert plugin(KIND) is PLUGIN
    estimate = estimate_cost(spec, load_catalog(), today=TODAY)
    hosts = [(i.name, i.kind, i.sku, i.quantity) for i in estimate.items if i.kind == "controller"]
    assert hosts == [("toy-controller", "controller", "c7i.4xlarge", 1)]
    assert estimate.not_priced == ("the toy queue",)


def test_its_monitoring_scrapes_it_and_ships_its_rules_but_not_slurms(toy: None) -> None:
    spec = _spec(monitoring={"kind": "prometheus"})
    files = render_monitoring(spec, load_catalog(), stack="dev", project=None, today=TODAY)
    jobs = [job["job_name"] for job in yaml.safe_load(files["prometheus.yml"])["scrape_configs"]]
    assert jobs == ["dcgm", "node", KIND, "monitoring-host"]
    assert "rules/toy.yml" in files
    assert not {"rules/slurm.yml", "dashboards/slurm.json"} & set(files)


def test_a_bad_kind_offers_the_registered_ones_and_the_schema_only_the_built_in(toy: None) -> None:
    text = blueprint_yaml(scheduler={"kind": "toyy"})
    found = [(f.code, f.message, f.hint) for f in load_bytes(text.encode(), "b.yaml", today=TODAY).findings]
    assert (
        "BP007",
        "'toyy' (a string) is not one of: none, slurm, kubernetes, toy",
        "did you mean 'toy'?",
    ) in found
    kind = blueprint_json_schema()["$defs"]["SchedulerSpec"]["properties"]["kind"]
    assert kind["enum"] == ["none", "slurm", "kubernetes"]


def test_its_stack_outputs_are_checked_against_its_own_model(toy: None) -> None:
    head = {"kind": KIND, "controller": "i-1", "controller_address": "10.0.0.2", "login": []}
    outputs = {
        "blueprint": {
            "name": "c",
            "file": "c.yaml",
            "digest": "d",
            "bundle_sha256": "b",
            "environment": None,
            "catalog_version": "1",
            "cloud": "aws",
            "region": "us-east-1",
            "zone": "use1-az6",
        },
        "network": {},
        "bucket": "b",
        "node_selector": {},
    }
    assert read_outputs({**outputs, "scheduler": {**head, "queue_url": "q"}}).scheduler is not None
    with pytest.raises(UsageError, match=r"scheduler\.queue_url"):
        read_outputs({**outputs, "scheduler": head})
