"""clusterfab's queue agent: the monthly GPU-hour budgets of a Kubernetes cluster's teams, which Kueue has
no field for, kept by a small program inside the cluster.

Every round (`interval_seconds`) it reads the teams' ClusterQueues, the LocalQueues and the Workloads
(kueue.x-k8s.io/v1beta2), charges each team's GPUs in use to a ledger of GPU-hours this month kept in a
ConfigMap (ledger.py), warns a team at `warn_fraction` of its budget with an Event, holds its
ClusterQueue (`spec.stopPolicy: Hold`) at the whole budget until the month ends (budget.py,
actions.py), and serves the numbers and Kueue's own metrics on /metrics (metrics.py, relay.py,
server.py). rounds.py is one round; kube.py the API; config.py the settings; quantity.py Kubernetes
quantities; queues.py what is read from Kueue's objects.

Shipped alone as the package `clusterfab_queue_agent` (every module of this folder, copied into a
ConfigMap) and run by a plain python image: the standard library and relative imports only.
"""
