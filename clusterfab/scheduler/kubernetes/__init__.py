"""Kubernetes as a workload scheduler: GKE and EKS clusters (architecture §11.2)."""

from clusterfab.scheduler.kubernetes.plugin import PLUGIN

__all__ = ["PLUGIN"]
