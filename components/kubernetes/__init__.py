"""Pulumi components inside a Kubernetes cluster (pulumi-kubernetes): they take a kubeconfig and plain
objects, never the blueprint or the catalog."""
