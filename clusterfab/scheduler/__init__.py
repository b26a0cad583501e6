"""Workload schedulers for a cluster, rendered from its ClusterSpec (architecture §10.1): `slurm/`."""
