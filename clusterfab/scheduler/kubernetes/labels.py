"""The labels and taints the node pools carry, which the cluster's objects select nodes by: one place, so
the pools the realizers make and the DaemonSets, queues and flavors that select them agree."""

from __future__ import annotations

NODE_GROUP_LABEL = "clusterfab.dev/node-group"
"""Every node of a node pool (GKE) or managed node group (EKS): its blueprint node group's name."""
TPU_SLICE_LABEL = "clusterfab.dev/tpu-slice"
"""Every node of a TPU node pool: its TPU slice group's name."""
GPU_TAINT = "nvidia.com/gpu"
"""The NoSchedule taint of GPU nodes: only pods that tolerate it (device plugins, GPU jobs) land there."""
TPU_TAINT = "google.com/tpu"
"""The NoSchedule taint of TPU nodes (Cluster Toolkit's gke-node-pool taints)."""
MANAGED_BY = {"app.kubernetes.io/managed-by": "clusterfab"}
"""Every object clusterfab applies to a cluster carries it (Kubernetes' recommended label)."""
CLUSTER_LABEL = "clusterfab.dev/cluster"
TEAM_LABEL = "clusterfab.dev/team"
"""A team's namespace and its objects: the team's ClusterQueue admits workloads of namespaces with it."""
PRIORITY_LABEL = "clusterfab.dev/priority"
