"""The monitoring host's inputs: the playbook variables of playbooks/monitoring.yml and the archive of
rendered files its boot fetches from the cluster bucket.

The archive is reproducible (fixed order, owners and times), named by its digest like the playbook
bundle, so a host always runs the files of the stack revision that launched it and a change to any
rendered file gives a new archive.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clusterfab.catalog import Catalog
from clusterfab.clouds import profile
from clusterfab.monitoring.render import MonitoringFiles
from clusterfab.monitoring.tpu_hosts import tpu_discovery_enabled
from clusterfab.spec import ClusterSpec

FILES_PREFIX = "monitoring/"


@dataclass(frozen=True)
class RenderedArchive:
    path: Path
    sha256: str
    prefix: str = FILES_PREFIX
    """The bucket folder: `monitoring/` for the monitoring host, `slurm/` for the Slurm controller."""

    @property
    def key(self) -> str:
        """The object key in the cluster bucket."""
        return f"{self.prefix}{self.sha256}.tar.gz"


def archive_bytes(files: MonitoringFiles) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, content in sorted(files.items()):
            data = content.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            tar.addfile(info, io.BytesIO(data))
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0, compresslevel=9) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


def build_archive(files: MonitoringFiles, cache_dir: Path, *, prefix: str = FILES_PREFIX) -> RenderedArchive:
    """Write the archive of `files` under `cache_dir` (once per content) and return it."""
    data = archive_bytes(files)
    digest = hashlib.sha256(data).hexdigest()
    cache_dir.mkdir(parents=True, exist_ok=True)
    path = cache_dir / f"{prefix.rstrip('/')}-{digest}.tar.gz"
    if not path.exists():
        partial = path.with_suffix(".partial")
        partial.write_bytes(data)
        partial.replace(path)
    return RenderedArchive(path, digest, prefix)


def _node_exporter_version(catalog: Catalog) -> str:
    record = catalog.apt_package("prometheus-node-exporter")
    if record is None or record.version is None:
        raise LookupError("packages.yaml records no version of prometheus-node-exporter")
    return record.version


def _alertmanager_location(spec: ClusterSpec, project: str | None) -> dict[str, str]:
    """Where Alertmanager's host finds the SMTP password's secret: the keys the cloud names it by, set; the
    others empty."""
    where = profile(spec.cloud).service_location(spec.region, project or spec.project)
    return {"alertmanager_region": "", "alertmanager_project": ""} | {
        f"alertmanager_{key}": value for key, value in where.items()
    }


PROMETHEUS_USER = "prometheus"
"""The user Ubuntu's prometheus package runs Prometheus (and Alertmanager) as."""


def monitoring_host_vars(
    spec: ClusterSpec, catalog: Catalog, *, files_dir: str, project: str | None = None
) -> dict[str, Any]:
    """Extravars of playbooks/monitoring.yml for the cluster's monitoring host (GCP: `project` is the
    project the nodes and the SMTP secret live in, the blueprint's or the stack config's)."""
    monitoring = spec.monitoring
    if monitoring is None:
        raise ValueError(f"{spec.name} has no monitoring")
    facts = catalog.monitoring
    repository = facts.grafana_repository
    secret = monitoring.smtp.password_secret if monitoring.smtp else None
    return {
        "monitoring_host_kind": monitoring.host,
        "prometheus_version": facts.package("prometheus").version,
        # One record for every host's node exporter: the GPU nodes install the same package (packages.yaml).
        "prometheus_node_exporter_version": _node_exporter_version(catalog),
        "prometheus_files_dir": files_dir,
        "prometheus_retention_days": monitoring.retention_days,
        "prometheus_tpu_discovery": tpu_discovery_enabled(spec),
        "alertmanager_version": facts.package("alertmanager").version,
        "alertmanager_files_dir": files_dir,
        "alertmanager_cloud": spec.cloud,
        **_alertmanager_location(spec, project),
        "alertmanager_smtp_password_secret": secret or "",
        "grafana_version": facts.package("grafana").version,
        "grafana_files_dir": files_dir,
        "grafana_repo_url": repository.url,
        "grafana_repo_suite": repository.suite,
        "grafana_repo_components": list(repository.components),
        "grafana_key_url": repository.key_url,
        "grafana_key_fingerprint": repository.key_fingerprint,
        # Prometheus finds the nodes through the cloud's API with the host's credentials; nothing else may.
        "metadata_guard_allowed_users": ["root", PROMETHEUS_USER],
    }
