"""TPU VM hosts in Prometheus: their node exporter found by the monitoring host's TPU discovery program
(tpu_discovery/), which lists the cluster's TPU VMs through the Cloud TPU API and writes a file_sd file
that the `tpu-node` scrape job reads. gce_sd_configs cannot find them: TPU VMs are not Compute Engine
instances, and instances.list does not list them.
"""

from __future__ import annotations

import json
from typing import Any

from clusterfab.core.vocab import label_value
from clusterfab.spec import ClusterSpec

TPU_JOB = "tpu-node"
FILE_SD_DIR = "/var/lib/prometheus/file_sd"
"""Under Ubuntu's prometheus package's home (owned by the prometheus user, as which the program runs)."""
FILE_SD_PATH = f"{FILE_SD_DIR}/{TPU_JOB}.json"
REFRESH = "1m"
"""As often as the program's timer writes the file."""
LIB = "lib"
PACKAGE = "clusterfab_tpu_discovery"
SETTINGS = "tpu_discovery.json"
_MODULES = ("__init__.py", "__main__.py", "bearer.py", "gcp_http.py", "program.py")


def tpu_discovery_enabled(spec: ClusterSpec) -> bool:
    """Whether the monitoring host runs the TPU discovery: a monitored cluster with TPU slices (GCP's
    alone: the blueprint refuses them elsewhere)."""
    return spec.monitoring is not None and bool(spec.tpu_slices)


def tpu_scrape_job(file_sd_dir: str | None) -> dict[str, Any]:
    """The `tpu-node` job: the file the program writes (or `<file_sd_dir>/tpu-node.json` in tests)."""
    if file_sd_dir is not None:
        files, refresh = [f"{file_sd_dir}/{TPU_JOB}.json"], "5s"
    else:
        files, refresh = [FILE_SD_PATH], REFRESH
    return {"job_name": TPU_JOB, "file_sd_configs": [{"files": files, "refresh_interval": refresh}]}


def tpu_discovery_files(spec: ClusterSpec, *, stack: str, project: str | None, port: int) -> dict[str, str]:
    """The program (package `clusterfab_tpu_discovery` under `lib/`; its gcp_http.py and bearer.py are links
    to the GCP node programs' HTTP helper and token cache, shipped as those files' text) and its settings,
    by path relative to the monitoring host's files."""
    from importlib import resources  # noqa: PLC0415 - only the program's build needs it

    project = project or spec.project
    if project is None:
        raise ValueError("TPU discovery needs the project the TPU VMs live in")
    own = resources.files("clusterfab.monitoring.tpu_discovery")
    files = {f"{LIB}/{PACKAGE}/{module}": own.joinpath(module).read_text() for module in _MODULES}
    settings = {
        "project": project,
        "zone": spec.zone,
        "blueprint": spec.name,
        "stack": label_value(stack),
        "port": port,
        "output": FILE_SD_PATH,
    }
    files[SETTINGS] = json.dumps(settings, indent=2, sort_keys=True) + "\n"
    return files
