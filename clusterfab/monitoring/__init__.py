"""Prometheus, Alertmanager and Grafana for a cluster, rendered from its ClusterSpec (architecture §10.3).

`render_monitoring` returns every file the monitoring host gets (prometheus.yml, rules/*.yml,
alertmanager.yml, dashboards/*.json, Grafana's provisioning, and the dcgm-exporter counters file the GPU
nodes run); `clusterfab render monitoring` writes them, and the stack uploads them for the monitoring
host's boot. Pure: nothing here talks to a cloud or imports Pulumi.
"""

from clusterfab.monitoring.render import MonitoringFiles, render_monitoring, write_files

__all__ = ["MonitoringFiles", "render_monitoring", "write_files"]
