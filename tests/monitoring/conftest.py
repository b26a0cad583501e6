from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from clusterfab.catalog import Catalog, load_catalog
from clusterfab.load import load
from clusterfab.monitoring import MonitoringFiles, render_monitoring, write_files
from clusterfab.spec import ClusterSpec
from tests.conftest import REPO
from tests.factories import TODAY

CLUSTER = REPO / "tests" / "fixtures" / "monitoring" / "cluster.yaml"
"""4 x p5.48xlarge, 4,800 GiB of FSx SCRATCH_2, a budget and monitoring with a mail relay (us-east-1)."""
STACK = "prod"


def spec_of(path: Path, environment: str | None = None) -> ClusterSpec:
    result = load(path, today=TODAY, environment=environment, base_only=environment is None)
    assert result.ok, result.findings
    return result.blueprints[environment].spec


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return load_catalog()


@pytest.fixture(scope="session")
def cluster_spec() -> ClusterSpec:
    return spec_of(CLUSTER)


@pytest.fixture(scope="session")
def cluster_files(cluster_spec: ClusterSpec, catalog: Catalog) -> MonitoringFiles:
    return render_monitoring(cluster_spec, catalog, stack=STACK, project=None, today=TODAY)


@pytest.fixture
def rendered(cluster_files: MonitoringFiles, tmp_path: Path) -> Path:
    write_files(cluster_files, tmp_path / "out")
    return tmp_path / "out"


def today() -> dt.date:
    return TODAY
